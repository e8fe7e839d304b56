// The table `tessera run --bench` prints (and writes as JSON): each kernel's timing on the target
// joined with the work its Kernel IR says it does (KernelCost), giving achieved GB/s and GFLOP/s.
// `tessera bench` sums the same rows per suite entry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/target/kernel_cost.h"
#include "tessera/target/target.h"

namespace tessera::cli {

// "(32, 1, 1)".
std::string int_tuple(const std::vector<int64_t>& v);

// One row of the --bench table: a kernel's timing with the work the Kernel IR says it does.
struct BenchRow {
  const KernelTiming* t;
  KernelCost cost;
  double share = 0;  // of the sum of the kernels' medians
  double gbps() const { return t->median_us > 0 ? static_cast<double>(cost.bytes) / (t->median_us * 1e3) : 0; }
  double gflops() const { return t->median_us > 0 ? cost.flops / (t->median_us * 1e3) : 0; }
};

// The rows of `r` (which must outlive them), in launch order; kernels missing from `kernel_ir`
// cost 0.
std::vector<BenchRow> bench_rows(const BenchReport& r, const Graph& kernel_ir);
std::string bench_table(const BenchReport& r, const std::vector<BenchRow>& rows);
std::string bench_json(const BenchReport& r, const std::vector<BenchRow>& rows);

}  // namespace tessera::cli

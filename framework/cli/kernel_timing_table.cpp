// The per-kernel timing table of `tessera run --bench` (see kernel_timing_table.h).
#include "kernel_timing_table.h"

#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tessera::cli {

namespace {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::string int_tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

std::vector<BenchRow> bench_rows(const BenchReport& r, const Graph& kernel_ir) {
  double total = 0;
  for (const KernelTiming& t : r.kernels) total += t.median_us;
  std::vector<BenchRow> rows;
  for (const KernelTiming& t : r.kernels) {
    BenchRow row{&t, {}, total > 0 ? t.median_us / total : 0};
    if (const Node* n = kernel_ir.find(t.node)) row.cost = KernelCost::of(kernel_ir, *n);
    rows.push_back(row);
  }
  return rows;
}

std::string bench_table(const BenchReport& r, const std::vector<BenchRow>& rows) {
  std::ostringstream out;
  out << "bench: " << r.device << "  (median of CUDA-event timings after warm-up"
      << (r.flushed_l2 ? ", L2 flushed before every run" : "") << ")\n";
  out << "  kernel                              us(med)    min      max   share  grid            block           smem   regs    GB/s  GFLOP/s\n";
  for (const BenchRow& row : rows) {
    const KernelTiming& t = *row.t;
    char line[512];
    std::snprintf(line, sizeof line, "  %-32s %9.2f %8.2f %8.2f %6.1f%%  %-15s %-15s %6lld %5d %8.1f %8.1f\n",
                  t.kernel.c_str(), t.median_us, t.min_us, t.max_us, row.share * 100, int_tuple(t.grid).c_str(),
                  int_tuple(t.block).c_str(), static_cast<long long>(t.static_smem + t.dynamic_smem), t.registers,
                  row.gbps(), row.gflops());
    out << line;
  }
  out << "  program" << (r.used_graphs ? " (CUDA graph)" : " (kernels back to back)") << ": " << fixed(r.program_median_us, 2)
      << " us median, " << fixed(r.program_min_us, 2) << " min, " << fixed(r.program_max_us, 2) << " max\n";
  if (!r.graphs_unavailable.empty())
    out << "  note: no CUDA graph (" << r.graphs_unavailable << "); the program was timed as plain launches\n";
  return out.str();
}

std::string bench_json(const BenchReport& r, const std::vector<BenchRow>& rows) {
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const BenchRow& row : rows) {
    const KernelTiming& t = *row.t;
    kernels.push_back({{"kernel", t.kernel}, {"node", t.node}, {"median_us", t.median_us}, {"min_us", t.min_us},
                       {"max_us", t.max_us}, {"share", row.share}, {"grid", t.grid}, {"block", t.block},
                       {"static_smem", t.static_smem}, {"dynamic_smem", t.dynamic_smem},
                       {"registers", t.registers}, {"bytes", row.cost.bytes}, {"flops", row.cost.flops},
                       {"gb_per_s", row.gbps()}, {"gflop_per_s", row.gflops()}, {"warmup_runs", t.warmup_runs}});
  }
  nlohmann::ordered_json doc = {
      {"device", r.device},
      {"cuda_graph", r.used_graphs},
      {"cuda_graph_unavailable", r.graphs_unavailable.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.graphs_unavailable)},
      {"l2_flush", r.flushed_l2},
      {"program_us", {{"median", r.program_median_us}, {"min", r.program_min_us}, {"max", r.program_max_us}}},
      {"kernels", std::move(kernels)}};
  return doc.dump(2) + "\n";
}

}  // namespace tessera::cli

// KernelCost: the work one Kernel IR kernel does, for `tessera run --bench` (achieved GB/s and
// GFLOP/s). An estimate from the IR, not a measurement.
#pragma once

#include <cstdint>

#include "tessera/ir/graph.h"

namespace tessera {

struct KernelCost {
  // Every Assign and Accum counts one operation per execution: per thread (grid x block), times
  // the trip counts of the loops around it (a loop whose begin is not a constant, e.g. a thread's
  // first element of a strided loop, counts from 0). Both branches of a Cond count (upper bound).
  double flops = 0;
  // Tensor-core FLOPs: each MmaSync counts 2 M N K per warp, counted the same way (a thread's
  // share, 2 M N K / 32, per execution).
  double tensor_flops = 0;
  // The sizes of the kernel's input buffers plus its output buffer.
  int64_t bytes = 0;

  // One number for "how much work": the operations plus the 4-byte words moved. The simulator's
  // progress and `run --sim-work-limit` count it.
  double work() const { return flops + tensor_flops + static_cast<double>(bytes) / 4.0; }

  // `n` is a KernelOp node of `g`; any other node costs 0 flops (bytes still counted).
  static KernelCost of(const Graph& g, const Node& n);

  // The work of every KernelOp node of `g`, summed.
  static double program_work(const Graph& g);
};

}  // namespace tessera

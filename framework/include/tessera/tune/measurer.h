// Measurer: how a tuning trial's compiled kernels get a latency — timed on the GPU, or scored by
// the analytic cost model (target/cost_model.h) where there is none. One interface, so the tuner
// and the tuning database do not care which.
#pragma once

#include <string>
#include <string_view>

#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"

namespace tessera {

struct Measurement {
  bool ok = false;
  double latency_us = 0;  // every kernel of the graph run once, in graph order
  std::string error;      // why not ok: a failed compile, a fault, a timeout, a wrong result
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  // Recorded in the tuning database beside each latency: "cost-model", "gpu".
  virtual std::string_view name() const = 0;
  // The stage the trial's compile must reach for measure(): Kernel IR for the cost model, CUDA
  // for the GPU.
  virtual Dialect needs_stage() const = 0;
  // The latency of `compiled` (a task's graph compiled through needs_stage()). Thread-safe.
  virtual Measurement measure(const Graph& compiled) = 0;
};

}  // namespace tessera

// CostModelMeasurer: the measurer of tuning without a GPU. A trial's latency is the analytic cost
// model's estimate (target/cost_model.h) summed over every kernel of the compiled graph, in graph
// order; registers are estimated from the IR (Kernel IR has no compiler count).
#pragma once

#include "tessera/target/cost_model.h"
#include "tessera/target/device.h"
#include "tessera/tune/measurer.h"

namespace tessera {

class CostModelMeasurer final : public Measurer {
 public:
  CostModelMeasurer(CostModel model, DeviceDesc device) : model_(std::move(model)), device_(std::move(device)) {}
  std::string_view name() const override { return "cost-model"; }
  Dialect needs_stage() const override { return Dialect::Kernel; }
  // Not ok, naming the node, when a kernel cannot be estimated (it does not fit on an SM). Only
  // reads the model and the device: safe from many threads at once.
  Measurement measure(const Graph& compiled) override;

 private:
  const CostModel model_;
  const DeviceDesc device_;
};

}  // namespace tessera

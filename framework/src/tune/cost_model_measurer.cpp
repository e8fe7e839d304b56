// CostModelMeasurer (see cost_model_measurer.h): sums CostModel::estimate over the KernelOp nodes.
// Tests: tests/unit/cost_model_test.cpp (CostModelMeasurerTest).
#include "tessera/tune/cost_model_measurer.h"

#include "tessera/ir/op.h"

namespace tessera {

Measurement CostModelMeasurer::measure(const Graph& compiled) {
  Measurement m;
  for (const Node* n : compiled.nodes()) {
    if (n->op_as<KernelOp>() == nullptr) {
      // A kernel still in Loop or Tile IR: the trial was not compiled far enough to be scored.
      if (n->op_as<KernelLikeOp>() != nullptr) {
        m.error = "cost model: node '" + n->id() + "' is not a Kernel IR kernel (compile through the kernel stage)";
        return m;
      }
      continue;
    }
    Expected<KernelEstimate> e = model_.estimate(compiled, *n, device_);
    if (!e) {
      m.error = e.error().message;
      return m;
    }
    m.latency_us += e->latency_us;
  }
  m.ok = true;
  return m;
}

}  // namespace tessera

// BufferPlan: one device allocation per node buffer, reused by liveness so that a long chain of
// kernels needs a few buffers rather than one per node. Pure (no driver): tested without a GPU in
// tests/unit/cuda_runtime_test.cpp.
#include "buffer_plan.h"

#include <algorithm>
#include <limits>

#include "tessera/ir/op.h"

namespace tessera {

std::vector<BufferUse> BufferPlan::uses_of(const Graph& g) {
  std::vector<BufferUse> uses;
  const auto& outs = g.outputs();
  for (const Node* n : g.nodes()) {
    BufferUse u;
    u.id = n->id();
    u.bytes = num_elements(n->type.shape) * dtype_bytes(n->type.dtype);
    u.kernel = n->op_as<CudaOp>() != nullptr;
    if (u.kernel) u.inputs = n->inputs;
    u.output = std::find(outs.begin(), outs.end(), n->id()) != outs.end();
    uses.push_back(std::move(u));
  }
  return uses;
}

Expected<BufferPlan> BufferPlan::plan(const std::vector<BufferUse>& uses, bool keep_uploaded) {
  // The step after which each buffer is dead: its last consumer's position (-1: consumed by none).
  std::map<std::string, size_t> position;
  std::map<std::string, long> last_use;
  for (size_t i = 0; i < uses.size(); ++i) {
    const BufferUse& u = uses[i];
    if (!position.emplace(u.id, i).second) return make_error("buffer plan: node '" + u.id + "' appears twice");
    last_use[u.id] = -1;
    for (const std::string& in : u.inputs) {
      auto p = position.find(in);
      if (p == position.end() || p->first == u.id)
        return make_error("buffer plan: node '" + u.id + "' reads '" + in + "' before it is produced");
      last_use[in] = static_cast<long>(i);
    }
  }
  BufferPlan plan;
  std::vector<int> free_slots;
  auto take = [&](const BufferUse& u) {
    int best = -1;
    for (int s : free_slots)
      if (plan.slot_bytes_[s] >= u.bytes && (best < 0 || plan.slot_bytes_[s] < plan.slot_bytes_[best] ||
                                             (plan.slot_bytes_[s] == plan.slot_bytes_[best] && s < best)))
        best = s;
    if (best >= 0) {
      free_slots.erase(std::find(free_slots.begin(), free_slots.end(), best));
    } else {
      best = static_cast<int>(plan.slot_bytes_.size());
      plan.slot_bytes_.push_back(u.bytes);
    }
    plan.slot_of_[u.id] = best;
  };
  auto release_dead_after = [&](long step) {
    for (const BufferUse& u : uses) {
      if (u.output || (keep_uploaded && !u.kernel) || last_use[u.id] != step || !plan.slot_of_.count(u.id)) continue;
      free_slots.push_back(plan.slot_of_[u.id]);
    }
  };
  for (const BufferUse& u : uses)
    if (!u.kernel) take(u);
  for (size_t i = 0; i < uses.size(); ++i) {
    if (!uses[i].kernel) continue;
    take(uses[i]);
    release_dead_after(static_cast<long>(i));
  }
  return plan;
}

}  // namespace tessera

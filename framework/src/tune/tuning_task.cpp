// Extracting tuning tasks from a program at the tile stage's entry (see tuning_task.h).
#include "tuning_task.h"

#include <map>
#include <memory>
#include <set>

#include "tessera/ir/op.h"
#include "tessera/pass/kernel_identity.h"

namespace tessera {

namespace {

bool is_kernel(const Node& n) { return n.op_as<KernelLikeOp>() != nullptr; }

// The kernel alone: each input once, a program input unless the program had it as a constant
// (a constant's data is deterministic, and the kernel's hash counts only its inputs' types).
Graph kernel_alone(const Graph& g, const Node& kernel) {
  Graph out;
  std::set<std::string> added;
  for (const std::string& in : kernel.inputs) {
    if (!added.insert(in).second) continue;
    const Node* producer = g.find(in);
    std::unique_ptr<Op> op;
    if (producer->op_as<ConstantOp>() || producer->op_as<InputOp>()) op = producer->op->clone();
    else op = std::make_unique<InputOp>();
    Node& added_node = out.add(in, std::move(op), {}, producer->type);
    added_node.loc = producer->loc;
  }
  Node& k = out.add(kernel.id(), kernel.op->clone(), kernel.inputs.ids(), kernel.type);
  k.loc = kernel.loc;
  k.choices = kernel.choices;
  out.outputs().push_back(kernel.id());
  return out;
}

}  // namespace

Expected<std::vector<std::pair<std::string, uint64_t>>> kernel_task_hashes(const Graph& g) {
  std::vector<std::pair<std::string, uint64_t>> hashes;
  for (const Node* n : g.nodes()) {
    if (!is_kernel(*n)) continue;
    std::optional<uint64_t> h = kernel_structural_hash(g, *n);
    if (!h) {
      Diagnostic d = make_error("cannot identify kernel '" + n->id() + "' for tuning: it reads a buffer the graph lacks");
      d.at_node(n->id());
      return d;
    }
    hashes.emplace_back(n->id(), *h);
  }
  return hashes;
}

Expected<std::vector<TuningTaskGraph>> extract_tuning_tasks(const Graph& g) {
  TESSERA_ASSIGN_OR_RETURN(auto hashes, kernel_task_hashes(g));
  std::vector<TuningTaskGraph> tasks;
  std::map<uint64_t, size_t> index;
  for (const auto& [id, h] : hashes) {
    auto [it, fresh] = index.emplace(h, tasks.size());
    if (!fresh) {
      TuningTaskGraph& t = tasks[it->second];
      ++t.task.weight;
      t.members.push_back(id);
      continue;
    }
    const Node& kernel = *g.find(id);
    TuningTaskGraph t{TuneTask{h, id, 1}, kernel_alone(g, kernel), {id}};
    tasks.push_back(std::move(t));
  }
  return tasks;
}

}  // namespace tessera

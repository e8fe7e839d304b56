// canonicalize: the clean-up pass that may run at any stage (torch, tensor, loop, tile, kernel,
// cuda).
//
// Rewrites:
//   1. Dead nodes: every compute node and constant whose value cannot reach a program output is
//      removed. Program inputs are always kept: they are the program's signature.
//   2. Kernel bodies: the bound names of every Loop/Tile/Kernel op body are renamed canonically
//      (axes a0.., loads in0.., values v0.., accumulators acc0..; see canonicalize_names), so
//      kernels that differ only in naming print and hash identically.
// Accepts: any graph that verifies, at any stage, including a mix of dialects.
// Guarantees: the result still verifies; outputs, inputs, node ids, types and recorded knob
//   choices are unchanged; running it twice is the same as running it once. It has no knobs.
// Tests: tests/golden/canonicalize/ (printed IR) and tests/plugins/plugin_host_test.cpp (loads
//   this plugin through PluginHost and runs it on a hand-built graph).
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

class CanonicalizePass final : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  std::string_view summary() const override {
    return "remove nodes that do not reach an output; canonically rename kernel-local names";
  }
  std::vector<Dialect> stages() const override {
    return {Dialect::Torch, Dialect::Tensor, Dialect::Loop,
            Dialect::Tile,  Dialect::Kernel, Dialect::Cuda};
  }

  Status run(Graph& g, PassContext&) override {
    TESSERA_TRY(remove_dead_nodes(g));
    canonicalize_kernel_names(g);
    return Status::ok();
  }

 private:
  static Status remove_dead_nodes(Graph& g) {
    std::set<std::string> live(g.outputs().begin(), g.outputs().end());
    std::vector<Node*> nodes = g.nodes();
    // Nodes are in topological order, so one backward sweep sees every user before its inputs.
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (!live.count((*it)->id())) continue;
      live.insert((*it)->inputs.begin(), (*it)->inputs.end());
    }
    std::vector<std::string> dead;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Node& n = **it;
      if (!live.count(n.id()) && n.op_as<InputOp>() == nullptr) dead.push_back(n.id());
    }
    // Users before producers (reverse topological order), so no erased node is still referenced.
    for (const std::string& id : dead) TESSERA_TRY(g.erase(id));
    return Status::ok();
  }

  static void canonicalize_kernel_names(Graph& g) {
    for (Node* n : g.nodes()) {
      const auto* kernel = n->op_as<KernelLikeOp>();
      if (kernel == nullptr) continue;
      // Ops are immutable values: build the renamed op and swap it in.
      std::unique_ptr<Op> renamed = kernel->clone();
      auto* renamed_kernel = static_cast<KernelLikeOp*>(renamed.get());
      renamed_kernel->body = canonicalize_names(kernel->body);
      n->op = std::move(renamed);
    }
  }
};

void register_canonicalize(Registry& r) {
  r.add_pass("canonicalize", [] { return std::make_unique<CanonicalizePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("canonicalize", "1.0.0", ::tessera::register_canonicalize)

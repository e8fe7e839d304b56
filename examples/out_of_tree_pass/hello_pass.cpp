// hello_pass: an example Tessera plugin built out of tree (see README.md). It registers one pass,
// `strip_knob_choices`, which clears the schedule decisions recorded on every node
// (Node::choices), e.g. to compare the printouts of two differently tuned compilations of the same
// program. Accepts any stage; changes nothing but the recorded choices; has no knobs.
#include <memory>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace hello {

class StripKnobChoicesPass final : public tessera::Pass {
 public:
  std::string_view name() const override { return "strip_knob_choices"; }
  std::string_view summary() const override {
    return "clear the knob choices recorded on every node (example out-of-tree pass)";
  }
  std::vector<tessera::Dialect> stages() const override {
    using tessera::Dialect;
    return {Dialect::Torch, Dialect::Tensor, Dialect::Loop,
            Dialect::Tile,  Dialect::Kernel, Dialect::Cuda};
  }
  tessera::Status run(tessera::Graph& g, tessera::PassContext&) override {
    for (tessera::Node* n : g.nodes()) n->choices.clear();
    return tessera::Status::ok();
  }
};

void register_hello(tessera::Registry& r) {
  r.add_pass("strip_knob_choices", [] { return std::make_unique<StripKnobChoicesPass>(); });
}

}  // namespace hello

TESSERA_PLUGIN("hello_pass", "0.1.0", hello::register_hello)

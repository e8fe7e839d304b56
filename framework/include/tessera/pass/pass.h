// Pass: the unit of transformation. One pass = one plugin = one folder under plugins/passes/.
//
//   class CanonicalizePass final : public Pass {
//     std::string_view name() const override { return "canonicalize"; }
//     std::vector<Dialect> stages() const override { return {Dialect::Torch, ...}; }
//     Status run(Graph& g, PassContext& ctx) override { ... }
//   };
//
// A pass rewrites nodes in place (replacing their ops) or splices new nodes. It reads configuration
// only from its PassContext (pinned knobs, target description) — never from the environment.
// It reports declined matches with ctx.skip(node, reason) so `-vv` can show them; the runner diffs
// each node's printout before/after the pass to show what changed.
#pragma once

#include <string_view>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/knob.h"
#include "tessera/support/status.h"

namespace tessera {

class PassContext;

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // One line for `tessera passes`.
  virtual std::string_view summary() const = 0;
  // The pipeline stages this pass may be listed under (and so the IR it reads and writes).
  virtual std::vector<Dialect> stages() const = 0;
  virtual std::vector<KnobSpec> knobs() const { return {}; }
  virtual Status run(Graph& g, PassContext& ctx) = 0;
};

}  // namespace tessera

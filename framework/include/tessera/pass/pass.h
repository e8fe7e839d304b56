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
//
// Most passes rewrite one kernel at a time: those derive from KernelPass and implement run_on; the
// tile passes, which read Tile IR kernels, derive from TilePass and implement run_on_tile.
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

// A pass that rewrites each kernel on its own:
//
//   class TileifyPass final : public KernelPass {
//     Dialect input_dialect() const override { return Dialect::Loop; }
//     Status run_on(Node& node, PassContext& ctx) override { ... node.op = ...; }
//   };
//
// run_on is applied to every node the pass applies_to (by default: the nodes in input_dialect()),
// each time on a copy of the node; ctx.graph() is the graph as it was before the pass, so no
// application sees another's result. Once every application succeeded the copies replace the
// nodes, in graph order; when one fails, the first failure in graph order is the pass's error and
// the graph is left as it was. So the applications may run on several threads (pipeline setting
// `threads:`) and the result is the same bytes for any thread count: run_on must keep its state
// local (it may run concurrently on one pass object) and must not add or remove nodes.
// Afterwards each node it was applied to must be in one of the pass's stages(): a node the pass
// could not lower is an error naming it.
class KernelPass : public Pass {
 public:
  // The dialect of the kernels this pass reads (Loop for tileify, Tile for materialize, ...).
  virtual Dialect input_dialect() const = 0;
  virtual bool applies_to(const Node& node) const { return node.op && node.dialect() == input_dialect(); }
  // Rewrites one kernel: may change its op, type, inputs and recorded choices.
  virtual Status run_on(Node& node, PassContext& ctx) = 0;
  // Applies run_on to every node, one at a time (the runner's `threads: 1`).
  Status run(Graph& g, PassContext& ctx) final;
};

// A kernel pass over Tile IR: every TileOp node, whose body the Tile IR verifier requires to be
// exactly one Tile statement (docs/ir.md). run_on_tile is given the node, its TileOp and that Tile;
// nodes of other ops are left alone, and a TileOp of another shape is an error naming the node and
// the pass, the one reaction every tile pass shares; a tensor-core schedule is skipped unless the
// pass handles_tensor_cores().
//
//   class ChunkReducePass final : public TilePass {
//     Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override;
//   };
//
// `kernel` and `tile` belong to node.op: a pass that replaces node.op copies what it still reads.
class TilePass : public KernelPass {
 public:
  Dialect input_dialect() const final { return Dialect::Tile; }
  Status run_on(Node& node, PassContext& ctx) final;
  virtual Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) = 0;
  // Whether the pass knows tensor-core schedules (kernels holding Fragment, LdMatrix or MmaSync,
  // contains_tensor_core_statements). A pass that does not is not run on them: the kernel is
  // skipped with that reason, so a pass never rewrites loads of a slab it does not know that
  // ldmatrix also reads. A pass that does overrides this to return true.
  virtual bool handles_tensor_cores() const { return false; }
};

}  // namespace tessera

// tileify: turns every Loop IR kernel into a Tile IR kernel whose outer loops are parallel axes.
//
// Rewrites: each LoopOp node becomes a TileOp node with the same id, inputs and type, named
// `k_<node id>` (`k_<node id>_reduce` when the body holds a `# reduce` loop). The outer perfect
// nest of `# free` loops — while the body is exactly one free loop starting at 0 with a constant
// end — becomes the axes of one `Tile` statement, outermost first, each bound `PARALLEL`; the
// Tile's body is the innermost peeled loop's body:
//     for a0 in 0..1:  # free              Tile(axes=(a1:32=PARALLEL)):
//       for a1 in 0..32:  # free       ->    acc0 = init(0.0)
//         acc0 = init(0.0) ...                ... load x[0, a1, a2] ...
// Axes of extent 1 are dropped: their variable becomes 0 and every expression is re-simplified
// with the ranges of the axes and enclosing loops. A kernel with no free outer loop gets
// `Tile(axes=())` around its whole body.
// Accepts: any graph; only LoopOp nodes are rewritten (inputs and constants are left alone).
// Guarantees: every LoopOp becomes a TileOp whose body is exactly one Tile statement; the body is
//   canonically named; the kernel computes the same values. No knobs.
// Tests: tests/golden/tileify/ and tests/unit/tile_passes_test.cpp.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

bool has_reduce_loop(const Body& body) {
  struct Finder final : StmtVisitor {
    bool found = false;
    void visit_Loop(const Loop& s) override {
      found = found || s.role == LoopRole::Reduce;
      StmtVisitor::visit_Loop(s);
    }
  } finder;
  finder.visit(body);
  return finder.found;
}

// The Tile statement for one Loop IR kernel body.
Stmt tile_of(const Body& loop_body) {
  std::vector<TileAxis> axes;
  std::map<std::string, Expr> dropped;  // extent-1 axes -> 0
  RangeMap ranges;
  const Body* body = &loop_body;
  while (body->size() == 1 && (*body)[0].is<Loop>()) {
    const Loop& loop = *(*body)[0].as<Loop>();
    if (loop.role != LoopRole::Free) break;
    // Bounds may mention outer axes (only dropped ones can be folded away here).
    Expr begin = simplify(substitute(loop.begin, dropped), ranges);
    Expr end = simplify(substitute(loop.end, dropped), ranges);
    if (!begin.is(ExprKind::Int) || begin.int_value() != 0 || !end.is(ExprKind::Int)) break;
    const int64_t extent = end.int_value();
    if (extent <= 0) break;  // an empty loop is not a parallel axis; keep it as written
    if (extent == 1) {
      dropped[loop.var] = Expr::int_(0);
    } else {
      axes.push_back(TileAxis{loop.var, extent, AxisBinding::Parallel});
      ranges[loop.var] = Interval{0, extent - 1};
    }
    body = &loop.body;
  }
  // The dropped axes become 0; every expression is simplified with the ranges at its position.
  return Tile{std::move(axes), substitute_and_simplify(*body, dropped, std::move(ranges))};
}

class TileifyPass final : public KernelPass {
 public:
  std::string_view name() const override { return "tileify"; }
  std::string_view summary() const override {
    return "make a Tile IR kernel of every Loop IR kernel; its outer free loops become parallel axes";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  Dialect input_dialect() const override { return Dialect::Loop; }

  Status run_on(Node& node, PassContext&) override {
    Node* n = &node;
    const auto* loop = n->op_as<LoopOp>();
    if (loop == nullptr) return Status::ok();
    auto op = std::make_unique<TileOp>();
    op->name = "k_" + n->id() + (has_reduce_loop(loop->body) ? "_reduce" : "");
    op->body = canonicalize_names(Body{tile_of(loop->body)});
    n->op = std::move(op);
    return Status::ok();
  }
};

void register_tileify(Registry& r) {
  r.add_pass("tileify", [] { return std::make_unique<TileifyPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("tileify", "1.0.0", ::tessera::register_tileify)

// coarsen_elementwise: gives each point of the innermost parallel axis of an elementwise Tile
// several consecutive elements, as a serial loop that vectorize_loads later widens.
//
// Rewrites: a Tile whose axes are all PARALLEL and whose body is straight-line elementwise code
// (Load, Assign, Select, Write only: no reduction, no control flow), with knob ELEMS = K > 1, turns
// its innermost axis `i` of extent E (K divides E) into `i:E/K` and wraps the body in
// `for e in 0..K:  # free`, with `i` replaced by `i * K + e` everywhere:
//     Tile(axes=(a0:32=PARALLEL, a1:5632=PARALLEL)):      Tile(axes=(a0:32=PARALLEL, a1:704=PARALLEL)):
//       bf16 in0 = load g[0, a0, a1]                 ->      for a2 in 0..8:  # free
//       ..                                                     bf16 in0 = load g[0, a0, a1 * 8 + a2]
//       mul[0, a0, a1] = v2                                    ..
// launch_geometry then binds the shorter axis to threads, so each thread runs the K-loop over K
// adjacent elements; vectorize_loads turns its `[.., c + e]` accesses into one K-wide access.
// Why a pass of its own, before launch_geometry: it needs no thread or block binding, only the
// parallel iteration space, and launch_geometry's sizing and tail guard then apply unchanged to
// the coarsened axis (the guard stays outside the K-loop, which keeps that loop straight-line).
// Knob ELEMS (1, 2, 4, 8, those dividing E; asked only for such Tiles when some candidate > 1
//   divides E). Heuristic: K = 16 bytes / the widest element among the global buffers accessed at
//   `[.., c + i]` (so every such access can become one 16-byte access: 4 x f32, 8 x bf16/f16),
//   halved until it divides E; 1 when no access has that form or some is wider than 16 bytes / 2.
// Accepts: Tile IR; a TileOp body must be exactly one Tile statement. Tiles with bound axes or
//   with any other statement in their body are skipped (ctx.skip, with the reason).
// Guarantees: every point of the old iteration space is computed exactly once, by the same
//   statements; the body is canonically named.
// Tests: tests/golden/coarsen_elementwise/, tests/unit/vectorize_loads_test.cpp (bf16 SwiGLU).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

bool is_elementwise_stmt(const Stmt& s) {
  return s.is<Load>() || s.is<Assign>() || s.is<Select>() || s.is<Write>();
}

// Whether `index` is exactly `c + axis` (or `axis`, `axis + c`) with c free of the axis.
bool last_index_follows(const Expr& index, const std::string& axis) {
  auto mentions = [&](const Expr& e) {
    for (const std::string& v : free_vars(e))
      if (v == axis) return true;
    return false;
  };
  if (index.is(ExprKind::Var)) return index.name() == axis;
  if (!index.is(ExprKind::Add)) return false;
  const Expr& a = index.operand(0);
  const Expr& b = index.operand(1);
  return (b.is(ExprKind::Var) && b.name() == axis && !mentions(a)) ||
         (a.is(ExprKind::Var) && a.name() == axis && !mentions(b));
}

// The widest element (bytes) of the global buffers accessed at `[.., c + axis]`; 0 when none is.
int64_t widest_contiguous_element(const Graph& g, const Body& body, const std::string& axis) {
  int64_t widest = 0;
  auto consider = [&](const std::string& buffer, const ExprList& index) {
    const Node* node = g.find(buffer);
    if (node == nullptr || index.empty() || !last_index_follows(index.back(), axis)) return;
    widest = std::max<int64_t>(widest, dtype_bytes(node->type.dtype));
  };
  for (const Stmt& s : body) {
    if (const auto* load = s.as<Load>()) consider(load->buffer, load->index);
    if (const auto* write = s.as<Write>()) consider(write->buffer, write->index);
  }
  return widest;
}

class CoarsenElementwisePass final : public TilePass {
 public:
  std::string_view name() const override { return "coarsen_elementwise"; }
  std::string_view summary() const override {
    return "give each point of an elementwise Tile's innermost axis K consecutive elements";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"ELEMS", KnobType::Int, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}, std::nullopt,
                     "consecutive innermost elements per thread of an elementwise kernel"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile& tile, PassContext& ctx) override {
    Node* n = &node;
    const TileOp* kernel = &tile_op;
    if (tile.axes.empty() ||
        !std::all_of(tile.axes.begin(), tile.axes.end(), [](const TileAxis& a) { return a.binding == AxisBinding::Parallel; })) {
      ctx.skip(*n, "not every axis is PARALLEL");
      return Status::ok();
    }
    if (tile.body.empty() || !std::all_of(tile.body.begin(), tile.body.end(), is_elementwise_stmt)) {
      ctx.skip(*n, "the body is not straight-line elementwise code");
      return Status::ok();
    }
    const TileAxis& inner = tile.axes.back();
    std::vector<int64_t> candidates;
    for (int64_t k : {1, 2, 4, 8})
      if (inner.extent % k == 0) candidates.push_back(k);
    if (candidates.size() < 2) {
      ctx.skip(*n, "innermost extent " + std::to_string(inner.extent) + " is odd");
      return Status::ok();
    }

    int64_t heuristic = 1;
    const int64_t widest = widest_contiguous_element(ctx.graph(), tile.body, inner.name);
    if (widest > 0 && widest <= 8) {
      heuristic = 16 / widest;
      while (inner.extent % heuristic != 0) heuristic /= 2;
    }
    Expected<int64_t> elems = ctx.choose_int("ELEMS", *n, candidates, heuristic);
    if (!elems) return std::move(elems).error();
    if (*elems == 1) return Status::ok();

    const int64_t k = *elems;
    std::set<std::string> taken = bound_names(Body{Stmt(tile)});
    std::string lane = inner.name + "_e";
    for (int i = 1; taken.count(lane); ++i) lane = inner.name + "_e" + std::to_string(i);

    Tile out = tile;
    out.axes.back().extent = inner.extent / k;
    RangeMap ranges;
    for (const TileAxis& a : out.axes) ranges[a.name] = Interval{0, a.extent - 1};
    ranges[lane] = Interval{0, k - 1};
    std::map<std::string, Expr> substitution{{inner.name, Expr::var(inner.name) * k + Expr::var(lane)}};
    Body lanes = substitute_and_simplify(tile.body, substitution, ranges);
    out.body = Body{Loop{lane, Expr::int_(0), Expr::int_(k), LoopRole::Free, 0, std::move(lanes)}};

    auto op = std::make_unique<TileOp>(*kernel);
    op->body = canonicalize_names(Body{Stmt(std::move(out))});
    n->op = std::move(op);
    return Status::ok();
  }
};

void register_coarsen_elementwise(Registry& r) {
  r.add_pass("coarsen_elementwise", [] { return std::make_unique<CoarsenElementwisePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("coarsen_elementwise", "1.0.0", ::tessera::register_coarsen_elementwise)

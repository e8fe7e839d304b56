// compose_index_maps: folds chains of IndexMaps into one IndexMap.
//
// Rewrites: an IndexMap `outer` that reads an IndexMap `inner` whose only consumer is `outer` (and
//   which is not a program output) reads inner's sources directly: inner's coordinates are replaced
//   by outer's index expressions, and the composed expressions are simplified with the ranges of
//   outer's coordinates (so reshape chains such as `(i * 64 + j) / 64` fold back to `i`). Then
//   `inner` is removed. Repeated until no chain is left, so a chain of any length becomes one map.
//   Two shapes of chain compose: an inner map with one unconditional source (outer keeps its own
//   predicates), or an outer map with one unconditional source (it takes over inner's sources and
//   predicates).
// Accepts: any graph; only Tensor IR IndexMaps are touched.
// Guarantees: same values at every program output; node ids of the outer maps (and so outputs and
//   users) are unchanged; the result verifies. Deterministic (graph order). No knobs.
// Tests: tests/golden/compose_index_maps/ and tests/unit/decompose_test.cpp.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

bool unconditional_single_source(const IndexMapOp& op) {
  return op.sources.size() == 1 && !op.sources[0].predicate.defined();
}

Expr substitute_defined(const Expr& e, const std::map<std::string, Expr>& map, const RangeMap& ranges) {
  return e.defined() ? simplify(substitute(e, map), ranges) : e;
}

// `inner`'s source re-expressed over `outer`'s coordinates, given outer's index into inner.
IndexMapSource compose_source(const IndexMapSource& inner_src, const IndexMapOp& inner, const ExprList& index_into_inner,
                              const RangeMap& ranges) {
  std::map<std::string, Expr> map;
  for (size_t d = 0; d < inner.coords.size() && d < index_into_inner.size(); ++d)
    map[inner.coords[d]] = index_into_inner[d];
  IndexMapSource out;
  out.buffer = inner_src.buffer;
  for (const Expr& e : inner_src.index) out.index.push_back(substitute_defined(e, map, ranges));
  out.value = substitute_defined(inner_src.value, map, ranges);
  out.predicate = substitute_defined(inner_src.predicate, map, ranges);
  return out;
}

Expr conjunction(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return Expr::binary(ExprKind::And, a, b);
}

class ComposeIndexMapsPass final : public Pass {
 public:
  std::string_view name() const override { return "compose_index_maps"; }
  std::string_view summary() const override {
    return "fold chains of single-consumer IndexMaps into one IndexMap with simplified coordinates";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tensor}; }

  // One sweep in graph order folds every chain: folding an inner map into `outer` can only make
  // `outer` itself foldable again (its new inputs), never a node before it, so each node folds
  // until it cannot before the sweep moves on.
  Status run(Graph& g, PassContext&) override {
    for (Node* outer : g.nodes()) {  // a fold erases only nodes before `outer`
      while (true) {
        Expected<bool> folded = fold_into(g, outer);
        if (!folded) return std::move(folded).error();
        if (!*folded) break;
      }
    }
    return remove_identities(g);
  }

 private:
  static RangeMap ranges_of(const IndexMapOp& op, const TensorType& t) {
    RangeMap ranges;
    for (size_t d = 0; d < op.coords.size() && d < t.shape.size(); ++d)
      ranges[op.coords[d]] = Interval{0, t.shape[d].value() - 1};
    return ranges;
  }

  // The inner IndexMap `outer` may absorb, or nullptr.
  static const Node* foldable_inner(const Graph& g, const Node& outer) {
    const auto* outer_op = outer.op_as<IndexMapOp>();
    for (const std::string& in : outer.inputs) {
      const Node* inner = g.find(in);
      const auto* inner_op = inner ? inner->op_as<IndexMapOp>() : nullptr;
      if (inner_op == nullptr) continue;
      if (std::find(g.outputs().begin(), g.outputs().end(), in) != g.outputs().end()) continue;
      std::vector<std::string> users = g.users(in);
      if (users.size() != 1 || users[0] != outer.id()) continue;
      if (unconditional_single_source(*inner_op) || unconditional_single_source(*outer_op)) return inner;
    }
    return nullptr;
  }

  static bool is_identity(const Graph& g, const Node& n) {
    const auto* op = n.op_as<IndexMapOp>();
    if (op == nullptr || !unconditional_single_source(*op) || op->sources[0].buffer.empty()) return false;
    const Node* src = g.find(op->sources[0].buffer);
    if (src == nullptr || !(src->type == n.type) || op->sources[0].index.size() != op->coords.size()) return false;
    for (size_t d = 0; d < op->coords.size(); ++d) {
      const Expr& e = op->sources[0].index[d];
      // A size-1 dim may be indexed by the literal 0 (the simplifier folds its coordinate to 0).
      bool same = (e.is(ExprKind::Var) && e.name() == op->coords[d]) ||
                  (e.is(ExprKind::Int) && e.int_value() == 0 && n.type.dim(static_cast<int64_t>(d)) == 1);
      if (!same) return false;
    }
    return true;
  }

  static Status remove_identities(Graph& g) {
    std::vector<std::string> identities;
    for (const Node* n : g.nodes())
      if (is_identity(g, *n) && std::find(g.outputs().begin(), g.outputs().end(), n->id()) == g.outputs().end())
        identities.push_back(n->id());
    for (const std::string& id : identities) {
      std::string src = g.find(id)->op_as<IndexMapOp>()->sources[0].buffer;
      std::vector<std::string> users = g.users(id);
      g.replace_uses(id, src);  // renames the reads inside the users' ops too
      for (const std::string& user_id : users) dedupe_inputs(*g.find(user_id));
      TESSERA_TRY(g.erase(id));
    }
    return Status::ok();
  }

  // After a rename a user may list the same input twice (mul(x, y) with y -> x); Elementwise and
  // IndexMap ops name operands by buffer, so the duplicate can go.
  static void dedupe_inputs(Node& user) {
    if (user.op_as<ElementwiseOp>() == nullptr && user.op_as<IndexMapOp>() == nullptr) return;
    std::vector<std::string> unique;
    for (const std::string& in : user.inputs)
      if (std::find(unique.begin(), unique.end(), in) == unique.end()) unique.push_back(in);
    user.inputs = std::move(unique);
  }

  // Folds one inner IndexMap into `outer`; false when there is none to fold.
  static Expected<bool> fold_into(Graph& g, Node* outer) {
    const auto* outer_op = outer->op_as<IndexMapOp>();
    if (outer_op == nullptr) return false;
    const Node* inner = foldable_inner(g, *outer);
    if (inner == nullptr) return false;
    const auto& inner_op = *inner->op_as<IndexMapOp>();
    RangeMap ranges = ranges_of(*outer_op, outer->type);

    auto composed = std::make_unique<IndexMapOp>();
    composed->coords = outer_op->coords;
    for (const IndexMapSource& src : outer_op->sources) {
      if (src.buffer != inner->id()) {
        composed->sources.push_back(src);
        continue;
      }
      for (const IndexMapSource& inner_src : inner_op.sources) {
        IndexMapSource s = compose_source(inner_src, inner_op, src.index, ranges);
        s.predicate = conjunction(src.predicate, s.predicate);
        if (s.predicate.defined()) s.predicate = simplify(s.predicate, ranges);
        composed->sources.push_back(std::move(s));
      }
    }
    std::vector<std::string> inputs;
    for (const IndexMapSource& s : composed->sources)
      if (!s.buffer.empty() && std::find(inputs.begin(), inputs.end(), s.buffer) == inputs.end())
        inputs.push_back(s.buffer);
    std::string inner_id = inner->id();
    outer->op = std::move(composed);
    outer->inputs = std::move(inputs);
    TESSERA_TRY(g.erase(inner_id));
    return true;
  }
};

void register_compose_index_maps(Registry& r) {
  r.add_pass("compose_index_maps", [] { return std::make_unique<ComposeIndexMapsPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("compose_index_maps", "1.0.0", ::tessera::register_compose_index_maps)

// See contraction.h.
#include "tessera/ir/contraction.h"

#include <algorithm>
#include <set>

#include "tessera/support/internal_check.h"

namespace tessera {
namespace {

bool uses(const ExprList& index, const std::vector<std::string>& vars) {
  for (const Expr& e : index)
    for (const std::string& v : free_vars(e))
      if (std::find(vars.begin(), vars.end(), v) != vars.end()) return true;
  return false;
}
bool uses(const ExprList& index, const std::string& var) { return uses(index, std::vector<std::string>{var}); }

// The step loop of a slab loop (see contraction.h), or nullptr.
const Loop* step_loop(const Loop& slab) {
  if (slab.body.size() != 1) return nullptr;
  const auto* step = slab.body[0].as<Loop>();
  if (step == nullptr || step->role != LoopRole::Reduce || !step->begin.is(ExprKind::Int) ||
      step->begin.int_value() != 0)
    return nullptr;
  return step;
}

// The contraction whose K loop is `body[i]`, or nullopt. `tile_axes` in Tile order.
std::optional<Contraction> contraction_at(const Body& body, size_t i, const std::vector<std::string>& tile_axes) {
  const auto* loop = body[i].as<Loop>();
  if (loop == nullptr || loop->role != LoopRole::Reduce || !loop->begin.is(ExprKind::Int) ||
      !loop->end.is(ExprKind::Int) || loop->end.int_value() <= loop->begin.int_value())
    return std::nullopt;
  std::set<std::string> declared;  // accumulators Init'ed before the loop in this body
  for (size_t j = 0; j < i; ++j)
    if (const auto* init = body[j].as<Init>()) declared.insert(init->acc);

  Contraction c;
  c.index = i;
  c.k = loop->var;
  c.k_begin = loop->begin.int_value();
  c.k_end = loop->end.int_value();
  std::vector<std::string> k_vars = {c.k};
  const Body* step = &loop->body;
  if (const Loop* inner = step_loop(*loop)) {
    RangeMap ranges{{c.k, Interval{c.k_begin, c.k_end - 1}}};
    std::optional<Interval> depth = bound_of(inner->end, ranges);
    if (!depth || depth->hi < 1) return std::nullopt;
    c.k_step = inner->var;
    c.slab_depth = depth->hi;
    c.k_end = (c.k_end - c.k_begin) * c.slab_depth;
    c.k_begin = 0;
    k_vars.push_back(c.k_step);
    step = &inner->body;
  }
  for (const Stmt& s : *step) {
    if (stmt_kind_traits(s.kind()).has_body || stmt_kind_traits(s.kind()).collective) return std::nullopt;
    if (const auto* acc = s.as<Accum>()) {
      if (!declared.count(acc->acc)) return std::nullopt;
      if (std::find(c.accumulators.begin(), c.accumulators.end(), acc->acc) == c.accumulators.end())
        c.accumulators.push_back(acc->acc);
    }
    const auto* load = s.as<Load>();
    if (load == nullptr || !uses(load->index, k_vars)) continue;
    if (std::any_of(c.operands.begin(), c.operands.end(), [&](const auto& o) { return o.buffer == load->buffer; }))
      continue;
    ContractionOperand op;
    op.buffer = load->buffer;
    op.rank = load->index.size();
    for (size_t d = 0; d < load->index.size(); ++d)
      if (uses(ExprList{load->index[d]}, k_vars)) op.k_dims.push_back(d);
    for (const std::string& axis : tile_axes)
      if (uses(load->index, axis)) op.axes.push_back(axis);
    c.operands.push_back(std::move(op));
  }
  if (c.accumulators.empty() || c.operands.size() < 2) return std::nullopt;

  c.a_index = 0;
  c.b_index = 1;
  for (size_t j = 1; j < c.operands.size(); ++j)
    if (c.operands[j].axes != c.operands[0].axes) {
      c.b_index = j;
      break;
    }
  const auto& a = c.operands[c.a_index].axes;
  const auto& b = c.operands[c.b_index].axes;
  auto in = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (const std::string& axis : tile_axes) {
    if (in(a, axis) && in(b, axis)) c.batch_axes.push_back(axis);
    else if (in(a, axis)) c.m_axes.push_back(axis);
    else if (in(b, axis)) c.n_axes.push_back(axis);
  }
  return c;
}

}  // namespace

bool streams_rows_of_b(const Contraction& c) {
  const ContractionOperand& b = c.b();
  return c.m_axes.empty() && !c.chunked() && c.k_extent() >= kRowStreamMinK && b.rank > 0 &&
         b.k_dims == std::vector<size_t>{b.rank - 1};
}

namespace {

void find_in(const Body& body, std::vector<size_t>& guards, const std::vector<std::string>& tile_axes,
             std::vector<Contraction>& out) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (std::optional<Contraction> c = contraction_at(body, i, tile_axes)) {
      c->guards = guards;
      out.push_back(std::move(*c));
    } else if (const auto* cond = body[i].as<Cond>(); cond != nullptr && cond->else_body.empty()) {
      guards.push_back(i);
      find_in(cond->then_body, guards, tile_axes, out);
      guards.pop_back();
    }
  }
}

Body replace_in(const Body& body, const std::vector<size_t>& guards, size_t depth, size_t index,
                const Body& replacement) {
  Body out;
  if (depth == guards.size()) {
    TESSERA_INTERNAL_CHECK(index < body.size() && body[index].is<Loop>(), "a contraction names a K loop of its body");
    out.insert(out.end(), body.begin(), body.begin() + static_cast<std::ptrdiff_t>(index));
    out.insert(out.end(), replacement.begin(), replacement.end());
    out.insert(out.end(), body.begin() + static_cast<std::ptrdiff_t>(index) + 1, body.end());
    return out;
  }
  const size_t g = guards[depth];
  TESSERA_INTERNAL_CHECK(g < body.size() && body[g].is<Cond>(), "a contraction's guard path names Conds");
  out = body;
  Cond cond = *body[g].as<Cond>();
  cond.then_body = replace_in(cond.then_body, guards, depth + 1, index, replacement);
  out[g] = std::move(cond);
  return out;
}

}  // namespace

std::vector<Contraction> find_contractions(const Tile& tile) {
  std::vector<std::string> axes;
  for (const TileAxis& a : tile.axes) axes.push_back(a.name);
  std::vector<Contraction> out;
  std::vector<size_t> guards;
  find_in(tile.body, guards, axes, out);
  return out;
}

const Body& contraction_body(const Tile& tile, const Contraction& c) {
  const Body* body = &tile.body;
  for (size_t g : c.guards) {
    TESSERA_INTERNAL_CHECK(g < body->size() && (*body)[g].is<Cond>(), "a contraction's guard path names Conds");
    body = &(*body)[g].as<Cond>()->then_body;
  }
  return *body;
}

const Loop& contraction_loop(const Tile& tile, const Contraction& c) {
  const Body& body = contraction_body(tile, c);
  TESSERA_INTERNAL_CHECK(c.index < body.size() && body[c.index].is<Loop>(), "a contraction names a K loop of its body");
  return *body[c.index].as<Loop>();
}

Tile replace_contraction_loop(const Tile& tile, const Contraction& c, const Body& replacement) {
  Tile out = tile;
  out.body = replace_in(tile.body, c.guards, 0, c.index, replacement);
  return out;
}

std::optional<LoopContraction> loop_contraction_reading(const Body& body, const std::string& buffer) {
  struct Finder final : StmtVisitor {
    const std::string* buffer = nullptr;
    std::vector<std::pair<std::string, int64_t>> enclosing;  // loop variable, extent (0: not literal)
    std::optional<LoopContraction> found;
    static std::optional<int64_t> extent(const Loop& l) {
      if (!l.begin.is(ExprKind::Int) || !l.end.is(ExprKind::Int)) return std::nullopt;
      return l.end.int_value() - l.begin.int_value();
    }
    static bool indexes(const Load& ld, const std::string& var) {
      return std::any_of(ld.index.begin(), ld.index.end(), [&](const Expr& e) { return mentions_var(e, var); });
    }
    void visit_Loop(const Loop& l) override {
      const std::optional<int64_t> n = extent(l);
      if (l.role == LoopRole::Reduce && n && !found) {
        struct Loads final : StmtVisitor {
          const std::string* var = nullptr;
          const std::string* buffer = nullptr;
          const Load* of_buffer = nullptr;
          std::vector<const Load*> others;
          void visit_Load(const Load& ld) override {
            if (!dtype_is_float(ld.type.dtype) || !indexes(ld, *var)) return;
            if (ld.buffer == *buffer) of_buffer = &ld;
            else others.push_back(&ld);
          }
        } loads;
        loads.var = &l.var;
        loads.buffer = buffer;
        loads.visit(l.body);
        const Load* mine = loads.of_buffer;
        auto other = std::find_if(loads.others.begin(), loads.others.end(),
                                  [&](const Load* ld) { return mine != nullptr && ld->type.dtype == mine->type.dtype; });
        if (other != loads.others.end()) {
          LoopContraction c{*n, 1, mine->type.dtype};
          for (const auto& [v, e] : enclosing)
            if (indexes(*mine, v) && !indexes(**other, v)) c.rows *= e;
          found = c;
        }
      }
      enclosing.emplace_back(l.var, n.value_or(0));
      StmtVisitor::visit_Loop(l);
      enclosing.pop_back();
    }
  } finder;
  finder.buffer = &buffer;
  finder.visit(body);
  return finder.found;
}

}  // namespace tessera

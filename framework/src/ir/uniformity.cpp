// The uniformity rules of ir/uniformity.h, and the walk that finds a collective some thread of
// the block may not reach.
#include "tessera/ir/uniformity.h"

namespace tessera {

UniformityScope UniformityScope::kernel_top() {
  UniformityScope scope;
  scope.uniform_.insert("blockIdx.x");
  return scope;
}

bool UniformityScope::is_uniform(const ExprList& exprs) const {
  for (const Expr& e : exprs)
    for (const std::string& v : free_vars(e))
      if (!uniform_.count(v)) return false;
  return true;
}

void UniformityScope::enter_tile(const Tile& tile) {
  for (const TileAxis& a : tile.axes) {
    switch (a.binding) {
      case AxisBinding::Block:
      case AxisBinding::Cluster:
      case AxisBinding::Serial:
      case AxisBinding::Parallel: uniform_.insert(a.name); break;
      case AxisBinding::Thread:
      case AxisBinding::Warp: break;
    }
  }
}

UniformityScope UniformityScope::nested(const ExprList& control, const std::string& var) const {
  UniformityScope inner = *this;
  const bool uniform = is_uniform(control);
  if (!uniform) inner.thread_dependent_ = true;
  if (!var.empty()) {
    if (uniform) inner.uniform_.insert(var);
    else inner.uniform_.erase(var);  // a shadowing per-thread loop variable
  }
  return inner;
}

void UniformityScope::define(const Stmt& leaf) {
  if (thread_dependent_) return;
  if (const auto* st = leaf.as<Assign>(); st && is_uniform(st->args)) uniform_.insert(st->dst);
  if (const auto* st = leaf.as<Load>(); st && is_uniform(st->index)) uniform_.insert(st->dst);
  if (const auto* st = leaf.as<Select>(); st && is_uniform({st->cond, st->then_value, st->else_value}))
    uniform_.insert(st->dst);
  // A block (or cluster) Combine leaves every thread holding the total.
  if (const auto* st = leaf.as<Combine>(); st && st->scope != CombineScope::Warp) uniform_.insert(st->acc);
}

namespace {

std::optional<Stmt> divergent_in(const Body& body, UniformityScope scope) {
  for (const Stmt& s : body) {
    if (stmt_kind_traits(s.kind()).collective && scope.thread_dependent()) return s;
    if (const auto* st = s.as<Tile>()) {
      UniformityScope inner = scope;
      inner.enter_tile(*st);
      if (std::optional<Stmt> found = divergent_in(st->body, inner)) return found;
    } else if (const auto* st = s.as<Loop>()) {
      if (std::optional<Stmt> found = divergent_in(st->body, scope.nested({st->begin, st->end}, st->var)))
        return found;
    } else if (const auto* st = s.as<StridedLoop>()) {
      if (std::optional<Stmt> found =
              divergent_in(st->body, scope.nested({st->begin, st->end, st->step}, st->var)))
        return found;
    } else if (const auto* st = s.as<SlabMap>()) {
      // The block's threads share the slab's elements: the body runs per thread.
      if (std::optional<Stmt> found = divergent_in(st->body, scope.nested({Expr::var("threadIdx.x")}, st->var)))
        return found;
    } else if (const auto* st = s.as<Cond>()) {
      for (const Body* b : {&st->then_body, &st->else_body})
        if (std::optional<Stmt> found = divergent_in(*b, scope.nested({st->cond}))) return found;
    } else {
      scope.define(s);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Stmt> first_divergent_collective(const Body& tile_kernel_body) {
  return divergent_in(tile_kernel_body, UniformityScope::kernel_top());
}

}  // namespace tessera

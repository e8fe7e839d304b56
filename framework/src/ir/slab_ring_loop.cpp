// slab_ring_loop (see tessera/ir/slab_ring_loop.h).
#include "tessera/ir/slab_ring_loop.h"

#include <algorithm>

namespace tessera {
namespace {

// Whether `body` holds a Stage, Combine or AsyncWait at any depth: the step of a slab loop may hold
// a SlabMap (fuse_stage_epilogue's cone over the slot being read), which reads the slab in place.
bool holds_copy_or_wait(const Body& body) {
  struct Finder final : StmtVisitor {
    bool found = false;
    void visit_Stage(const Stage&) override { found = true; }
    void visit_Combine(const Combine&) override { found = true; }
    void visit_AsyncWait(const AsyncWait&) override { found = true; }
  } f;
  f.visit(body);
  return f.found;
}

}  // namespace

std::optional<SlabRingLoop> slab_ring_loop(const Loop& s) {
  if (s.role != LoopRole::Reduce || !s.begin.is(ExprKind::Int) || !s.end.is(ExprKind::Int)) return std::nullopt;
  SlabRingLoop shape;
  shape.trips = s.end.int_value() - s.begin.int_value();
  if (shape.trips < 2) return std::nullopt;
  shape.all_tma = true;
  size_t i = 0;
  for (; i < s.body.size(); ++i) {
    const auto* st = s.body[i].as<Stage>();
    if (st == nullptr) break;
    if ((st->transport != StageTransport::Async && st->transport != StageTransport::Tma) || st->slots < 2)
      return std::nullopt;
    const Expr ring_slot = simplify((Expr::var(s.var) - s.begin) % Expr::int_(st->slots));
    if (simplify(st->slot).str() != ring_slot.str()) return std::nullopt;
    shape.slots = shape.slots == 0 ? st->slots : std::min(shape.slots, st->slots);
    shape.all_tma = shape.all_tma && st->transport == StageTransport::Tma;
  }
  if (i == 0 || i >= s.body.size()) return std::nullopt;
  const auto* wait = s.body[i].as<AsyncWait>();
  if (wait == nullptr || wait->keep != 0) return std::nullopt;
  if (holds_copy_or_wait(Body(s.body.begin() + static_cast<std::ptrdiff_t>(i) + 1, s.body.end()))) return std::nullopt;
  shape.stages = i;
  return shape;
}

}  // namespace tessera

// mark_unroll: asks for full unrolling of short loops with constant bounds.
//
// Rewrites: every `Loop` whose begin and end are integer literals, whose trip count is at least 1
// and at most knob MAX_UNROLL, and whose body holds no collective statement (Stage, Combine,
// AsyncWait: unrolling must not multiply block-wide operations) gets `unroll = trip count`:
//     for a3 in 0..5:  # reduce   ->   for a3 in 0..5:  # reduce, unroll 5
// Nested loops are marked independently (the innermost ones included). StridedLoops (their trip
// count depends on the thread) and loops already carrying an unroll request are left alone.
// Knob MAX_UNROLL (0, 2, 4, 8, 16, 32; heuristic 8; 0 disables): the longest loop to unroll. Asked
//   only for kernels that have a loop it could apply to.
// Accepts: Tile IR (TileOp nodes; other nodes are left alone).
// Guarantees: only unroll fields change; the kernel computes the same values; the body is
//   canonically named.
// Tests: tests/golden/mark_unroll/ and tests/unit/tile_passes_test.cpp.
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

// The trip count of a loop mark_unroll may unroll, or nullopt.
std::optional<int64_t> unrollable_trip(const Loop& loop) {
  if (loop.unroll != 0 || !loop.begin.is(ExprKind::Int) || !loop.end.is(ExprKind::Int)) return std::nullopt;
  const int64_t trip = loop.end.int_value() - loop.begin.int_value();
  if (trip < 1 || contains_collective(loop.body)) return std::nullopt;
  return trip;
}

class UnrollMarker final : public StmtMutator {
 public:
  explicit UnrollMarker(int64_t max_unroll) : max_unroll_(max_unroll) {}

  Stmt mutate_Loop(const Loop& s, const Stmt& self) override {
    Stmt inner = StmtMutator::mutate_Loop(s, self);  // inner loops first
    std::optional<int64_t> trip = unrollable_trip(s);
    if (!trip || *trip > max_unroll_) return inner;
    Loop marked = *inner.as<Loop>();
    marked.unroll = *trip;
    return marked;
  }

 private:
  int64_t max_unroll_;
};

bool has_unrollable_loop(const Body& body) {
  struct Finder final : StmtVisitor {
    bool found = false;
    void visit_Loop(const Loop& s) override {
      found = found || unrollable_trip(s).has_value();
      StmtVisitor::visit_Loop(s);
    }
  } finder;
  finder.visit(body);
  return finder.found;
}

class MarkUnrollPass final : public TilePass {
 public:
  std::string_view name() const override { return "mark_unroll"; }
  std::string_view summary() const override { return "request full unrolling of short constant-trip loops"; }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  bool handles_tensor_cores() const override { return true; }  // fragments lower (or unroll) as they are
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"MAX_UNROLL", KnobType::Int,
                     {int64_t{0}, int64_t{2}, int64_t{4}, int64_t{8}, int64_t{16}, int64_t{32}},
                     std::nullopt, "longest constant trip count to unroll fully; 0 disables"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile&, PassContext& ctx) override {
    Node* n = &node;
    const TileOp* kernel = &tile_op;
    if (!has_unrollable_loop(kernel->body)) return Status::ok();
    Expected<int64_t> max_unroll = ctx.choose_int("MAX_UNROLL", *n, {0, 2, 4, 8, 16, 32}, 8);
    if (!max_unroll) return std::move(max_unroll).error();
    UnrollMarker marker(*max_unroll);
    auto op = std::make_unique<TileOp>(*kernel);
    op->body = canonicalize_names(marker.mutate_body(kernel->body));
    n->op = std::move(op);
    return Status::ok();
  }
};

void register_mark_unroll(Registry& r) {
  r.add_pass("mark_unroll", [] { return std::make_unique<MarkUnrollPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("mark_unroll", "1.0.0", ::tessera::register_mark_unroll)

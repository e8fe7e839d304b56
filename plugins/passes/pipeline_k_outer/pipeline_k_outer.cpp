// pipeline_k_outer: software-pipelines a K slab loop whose slabs are staged into a ring with cp.async
// or TMA.
//
// Rewrites: a slab loop `for k in b..e:  # reduce` over rings of B >= 2 slabs (tessera/ir/
// slab_ring_loop.h: its async or tma Stages filling slot (k - b) % B, AsyncWait(keep=0), the step
// that reads the slot), so that S = STAGES slabs are in flight:
//     prologue   for k in b..b+S-1:         the Stages of slab k: S-1 cp.async groups
//     loop       for k in b..e:  # reduce
//                  the Stages of slab k+S-1 into slot (k+S-1-b) % B, the slot slab k-1 was read
//                  from (materialize puts a barrier before every Stage in a loop, so its readers
//                  are done)
//                  AsyncWait(keep=S-1)      slab k has landed; S-1 younger slabs may be in flight
//                  <step of slab k>
// The epilogue is the loop's last S-1 trips: their slabs k+S-1 lie past K, so every copy of them
// is skipped by the copy's bounds guard and the group is empty (a commit with no copies, as CUDA
// allows), and the waits drain the real slabs one by one with the same keep. A tma Stage of such a
// slab is not issued at all (materialize issues a ring's fills only up to its loop's trip count),
// and the wait names slab k all the same (the fill count k+S-1 minus keep). Tail slabs (K not a
// multiple of BK) keep their guarded bounds: the step is copied unchanged, and materialize guards
// the copies of a slab that leaves the source.
// Accepts: Tile IR; kernels without such a loop, or whose Tile has a producer warpgroup
//   (specialize_warps), are left alone (nothing asked).
// Knob STAGES (int; candidates 1..min(B, n, 4), 1 = off). Heuristic: min(B, n), the deepest
//   pipeline the ring holds (a slot is refilled only after the slab in it was read).
// Guarantees: same values, the same products accumulated in the same order; each slab is read only
//   after the wait that covers its group and a barrier; names canonical.
// Tests: tests/golden/pipeline_k_outer/, tests/unit/sim_target_test.cpp (a pipelined ring and the
//   ways it breaks, on the simulator), tests/golden/e2e/matmul_pipelined_*.txt, and the matmul corpus
//   under random knobs on the simulator (tests/e2e/random_knobs_test.cpp).
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/slab_ring_loop.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

constexpr int64_t kMaxStages = 4;

// The largest pipeline depth any slab loop of `body` allows (0: none has the shape).
class ShapeFinder final : public StmtVisitor {
 public:
  void visit_Loop(const Loop& s) override {
    if (std::optional<SlabRingLoop> shape = slab_ring_loop(s)) {
      const int64_t depth = std::min({shape->slots, shape->trips, kMaxStages});
      max_depth = min_depth_set ? std::min(max_depth, depth) : depth;
      min_depth_set = true;
      return;
    }
    StmtVisitor::visit_Loop(s);
  }
  int64_t max_depth = 0;  // over every pipelined loop: the depth all of them allow
  bool min_depth_set = false;
};

class Pipeliner final : public StmtMutator {
 public:
  explicit Pipeliner(int64_t depth) : depth_(depth) {}

  Body mutate_body(const Body& b) override {
    Body out;
    for (const Stmt& s : b) {
      const auto* loop = s.as<Loop>();
      std::optional<SlabRingLoop> shape = loop ? slab_ring_loop(*loop) : std::nullopt;
      if (!shape) {
        out.push_back(mutate(s));
        continue;
      }
      pipeline(*loop, *shape, out);
    }
    return out;
  }

 private:
  void pipeline(const Loop& loop, const SlabRingLoop& shape, Body& out) const {
    const int64_t begin = loop.begin.int_value(), end = loop.end.int_value();
    const int64_t ahead = depth_ - 1;
    const Expr k = Expr::var(loop.var);
    Body stages(loop.body.begin(), loop.body.begin() + static_cast<std::ptrdiff_t>(shape.stages));
    Body step(loop.body.begin() + static_cast<std::ptrdiff_t>(shape.stages) + 1, loop.body.end());
    // Prologue: slabs begin .. begin+ahead-1, in a loop of their own (a Stage declares its buffer
    // for the statements after it in its scope, once per scope).
    out.push_back(Loop{loop.var, loop.begin, Expr::int_(begin + ahead), LoopRole::None, 0, stages});
    // Steady state and drain: issue slab k+ahead (past the last slab its copies are all skipped and
    // the group is empty), wait until slab k has landed, compute it.
    RangeMap ranges;
    ranges[loop.var] = Interval{begin, end - 1};
    Body body = substitute_and_simplify(stages, {{loop.var, k + Expr::int_(ahead)}}, ranges);
    body.push_back(AsyncWait{ahead});
    body.insert(body.end(), step.begin(), step.end());
    out.push_back(Loop{loop.var, loop.begin, loop.end, loop.role, loop.unroll, std::move(body)});
  }

  int64_t depth_;
};

class PipelineKOuterPass final : public TilePass {
 public:
  std::string_view name() const override { return "pipeline_k_outer"; }
  std::string_view summary() const override {
    return "software-pipeline a ring-buffered K slab loop: S-1 slabs in flight while one is computed";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  bool handles_tensor_cores() const override { return true; }  // moves Stages and waits only: the step is copied
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"STAGES", KnobType::Int, {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}}, std::nullopt,
                     "slabs of the K slab loop in flight (prologue S-1, wait keep=S-1; 1 = off)"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile& tile, PassContext& ctx) override {
    // A producer warpgroup already runs its copies ahead of the consumers (specialize_warps).
    if (tile.producer != TileProducer::None) return Status::ok();
    ShapeFinder finder;
    finder.visit(tile_op.body);
    if (!finder.min_depth_set) return Status::ok();
    std::vector<int64_t> candidates;
    for (int64_t s = 1; s <= finder.max_depth; ++s) candidates.push_back(s);
    TESSERA_ASSIGN_OR_RETURN(int64_t depth, ctx.choose_int("STAGES", node, candidates, finder.max_depth));
    if (depth <= 1) return Status::ok();
    Pipeliner pipeliner(depth);
    auto op = std::make_unique<TileOp>(tile_op);
    op->body = canonicalize_names(pipeliner.mutate_body(tile_op.body));
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_pipeline_k_outer(Registry& r) {
  r.add_pass("pipeline_k_outer", [] { return std::make_unique<PipelineKOuterPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("pipeline_k_outer", "1.0.0", ::tessera::register_pipeline_k_outer)

// cooperative_reduce: lets the threads of a block share the loops of a Tile that has no threads.
//
// Rewrites: a Tile with no THREAD axis (every output point is one block: launch_geometry's BN = 1)
// gets a THREAD axis `t:THREADS`, listed first. Each top-level loop (directly in the Tile body, or
// in top-level `if`s, which are uniform across the block because no THREAD axis exists) is strided
// over the threads:
//     acc0 = init(0.0)                              acc0 = init(0.0)
//     for a2 in 0..2048:  # reduce            ->    StridedLoop(a2 = a0; < 2048; += 256):  # reduce
//       ... acc0 <- add(acc0, v0)                     ... acc0 <- add(acc0, v0)
//                                                   Combine(acc0, op=add)
// A `# reduce` loop is followed by one `Combine(acc, op=OP)` per accumulator it accumulates into
// that is initialized outside it (OP = the Accum op), so every thread then holds the full result
// (none where cluster_reduce put a cluster Combine of it there: that one combines the threads too);
// a `# free` loop just splits its iterations (no Combine); a free loop of one iteration is not a
// loop to share: its body is treated as top level. Loops nested inside stay serial per thread. Top-level writes (outside any loop) are wrapped in `if t == 0:` so one thread writes.
// Knob THREADS (32, 64, .., 1024; those <= device.max_threads_per_block): threads per block.
//   Heuristic: the next power of two >= (longest top-level loop trip count / 8), clamped to
//   [device.warp_size, device.max_threads_per_block / 4] (RMSNorm over 2048 gets 256).
// Accepts: Tile IR; a TileOp body must be exactly one Tile statement. Skips (with a reason) Tiles
//   that already have a THREAD axis, that have no top-level loop, or whose body reads its own
//   output (another thread may have written the element).
// Guarantees: the kernel computes the same values; collectives (Combine) sit only where control
//   flow is uniform; the body is canonically named.
// Tests: tests/golden/cooperative_reduce/ and tests/unit/tile_passes_test.cpp.
#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/row_loop.h"
#include "tessera/ir/stmt_effects.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

bool reads(const Body& body, const std::string& buffer) {
  const std::vector<std::string> read = read_buffers(body);
  return std::find(read.begin(), read.end(), buffer) != read.end();
}

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// The loops the threads will share: directly in `body` or inside its (uniform) ifs.
void top_level_loops(const Body& body, std::vector<const Loop*>& out) {
  for (const Stmt& s : body) {
    if (const auto* loop = s.as<Loop>()) out.push_back(loop);
    if (const auto* cond = s.as<Cond>()) {
      top_level_loops(cond->then_body, out);
      top_level_loops(cond->else_body, out);
    }
  }
}

// Whether a cluster Combine of `acc` stands among the Combines that start at body[from]
// (cluster_reduce's, after a reduce loop): it combines the block's threads too.
bool combined_across_cluster(const Body& body, size_t from, const std::string& acc) {
  for (size_t i = from; i < body.size() && body[i].is<Combine>(); ++i)
    if (body[i].as<Combine>()->acc == acc && body[i].as<Combine>()->scope == CombineScope::Cluster) return true;
  return false;
}

class Striding {
 public:
  Striding(std::string thread, int64_t threads) : thread_(std::move(thread)), threads_(threads) {}

  // Rewrites a body whose control flow is uniform across the block.
  Body rewrite(const Body& body) const {
    Body out;
    Body writes;  // consecutive top-level writes share one `if t == 0:`
    auto flush_writes = [&] {
      if (writes.empty()) return;
      out.push_back(Cond{Expr::binary(ExprKind::Eq, Expr::var(thread_), Expr::int_(0)), std::move(writes), {}});
      writes.clear();
    };
    for (size_t i = 0; i < body.size(); ++i) {
      const Stmt& s = body[i];
      if (s.is<Write>()) {
        writes.push_back(s);
        continue;
      }
      flush_writes();
      if (const auto* loop = s.as<Loop>()) {
        // A free loop of one iteration (a size-1 output axis) is no loop to share: its body is
        // the top level (striding it would give the whole epilogue to thread 0; found on a GPU as
        // decode RMSNorm over 4096 taking 35 us).
        if (loop->role == LoopRole::Free && loop->begin.is(ExprKind::Int) && loop->end.is(ExprKind::Int) &&
            loop->end.int_value() - loop->begin.int_value() == 1) {
          for (Stmt& inner : rewrite(substitute_and_simplify(loop->body, {{loop->var, loop->begin}}, {})))
            out.push_back(std::move(inner));
          continue;
        }
        Expr begin = simplify(loop->begin + Expr::var(thread_));
        out.push_back(StridedLoop{loop->var, begin, loop->end, Expr::int_(threads_), loop->role, 0, loop->body});
        if (loop->role == LoopRole::Reduce)
          for (const OuterAccumulator& a : outer_accumulators(*loop))
            if (!combined_across_cluster(body, i + 1, a.acc)) out.push_back(Combine{a.acc, a.op, CombineScope::Block});
      } else if (const auto* cond = s.as<Cond>()) {
        out.push_back(Cond{cond->cond, rewrite(cond->then_body), rewrite(cond->else_body)});
      } else {
        out.push_back(s);
      }
    }
    flush_writes();
    return out;
  }

 private:
  std::string thread_;
  int64_t threads_;
};

class CooperativeReducePass final : public TilePass {
 public:
  std::string_view name() const override { return "cooperative_reduce"; }
  std::string_view summary() const override {
    return "share a block's top-level loops among its threads; combine the partial accumulators";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"THREADS", KnobType::Int,
                     {int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256}, int64_t{512}, int64_t{1024}},
                     std::nullopt, "threads per block sharing the top-level loops"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile& tile, PassContext& ctx) override {
    Node* n = &node;
    const TileOp* kernel = &tile_op;
    if (std::any_of(tile.axes.begin(), tile.axes.end(), [](const TileAxis& a) { return a.binding == AxisBinding::Thread; })) {
      ctx.skip(*n, "the Tile already has THREAD axes");
      return Status::ok();
    }
    std::vector<const Loop*> loops;
    top_level_loops(tile.body, loops);
    if (loops.empty()) {
      ctx.skip(*n, "no top-level loop to share among threads");
      return Status::ok();
    }
    if (reads(tile.body, n->id())) {
      ctx.skip(*n, "the kernel reads its own output, which other threads may write");
      return Status::ok();
    }

    const DeviceDesc& device = ctx.device();
    RangeMap ranges;
    for (const TileAxis& a : tile.axes) ranges[a.name] = Interval{0, a.extent - 1};
    int64_t longest = 0;
    for (const Loop* loop : loops) {
      std::optional<Interval> trip = bound_of(simplify(loop->end - loop->begin, ranges), ranges);
      if (trip) longest = std::max(longest, trip->hi);
    }
    std::vector<int64_t> candidates;
    for (int64_t c : {32, 64, 128, 256, 512, 1024})
      if (c <= device.max_threads_per_block) candidates.push_back(c);
    const int64_t lo = device.warp_size;
    const int64_t hi = std::max<int64_t>(lo, device.max_threads_per_block / 4);
    const int64_t heuristic = std::clamp(next_pow2(longest / 8), lo, hi);
    Expected<int64_t> threads = ctx.choose_int("THREADS", *n, candidates, heuristic);
    if (!threads) return std::move(threads).error();

    std::set<std::string> taken = bound_names(kernel->body);
    std::string thread = "t";
    for (int i = 1; taken.count(thread); ++i) thread = "t_" + std::to_string(i);
    Tile out;
    out.axes.push_back(TileAxis{thread, *threads, AxisBinding::Thread});
    out.axes.insert(out.axes.end(), tile.axes.begin(), tile.axes.end());
    out.body = Striding(thread, *threads).rewrite(tile.body);
    auto op = std::make_unique<TileOp>(*kernel);
    op->body = canonicalize_names(Body{Stmt(std::move(out))});
    n->op = std::move(op);
    return Status::ok();
  }
};

void register_cooperative_reduce(Registry& r) {
  r.add_pass("cooperative_reduce", [] { return std::make_unique<CooperativeReducePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("cooperative_reduce", "1.0.0", ::tessera::register_cooperative_reduce)

// tma_copy: moves staged slabs with the Tensor Memory Accelerator on devices that have it (sm_90+).
//
// Rewrites: in every body of a Tile kernel, each synchronous Stage whose slab TMA box copies can
// move (stage_tma_boxes, ir/stmt.h: slab dims in the source's dim order, no pad, box dims up to 256
// but the first slab dim, which may take several equal boxes, inner rows a multiple of 16 bytes,
// source rows 16-byte aligned, rank up to 5) switches to the
// `tma` transport, and one `AsyncWait(keep=0)` follows each run of Stages that holds one (unless an
// AsyncWait already follows it), so the data is visible exactly where it was before, as async_copy
// does for cp.async. materialize lowers a tma Stage to one thread announcing the slab's bytes on
// the Stage's mbarrier and starting the box copy, and the AsyncWait to every thread waiting for the
// barrier phase of the slab it covers (docs/ir.md, "TMA and mbarriers"):
//     x_smem = Stage(x, origin=(a2, 0), slab=(a3:256@1))   ->   x_smem = Stage(..., slab=(a3:256@1)) tma
//     acc0 = init(0.0)                                         AsyncWait(keep=0)
//                                                              acc0 = init(0.0)
// It runs before async_copy, which then leaves the tma Stages alone; double_buffer rings them and
// pipeline_k_outer pipelines them like cp.async Stages; pad_smem never pads them (a box lands
// unpadded).
// Accepts: Tile IR; nodes without such Stages are left alone. A Stage under a condition, or inside
//   a loop without a constant trip count, stays synchronous (materialize counts a Stage's fills to
//   know its barrier's phase).
// Knob TMA (bool). Heuristic: false. TMA copies a slab with one thread and no registers, but the
//   default schedules were measured with cp.async (bench/results/) and TMA ones have not run on a
//   GPU yet; the tuner may choose TMA. Below sm_90 the pass skips every node with a reason and
//   asks nothing.
// Guarantees: same values; names canonical.
// Tests: tests/golden/tma_copy/, tests/unit/tma_copy_test.cpp (TMA schedules simulated against the
//   reference, and their CUDA compiled with NVRTC for sm_90).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/stage_transport.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

// The Stages of a body that may switch: synchronous ones box copies can move, outside
// conditions, inside loops materialize can count (constant trip counts: their bounds literal).
class TmaCandidates final : public StageTransportSwitch {
 public:
  TmaCandidates(const Graph& g, bool rewrite) : StageTransportSwitch(StageTransport::Tma, rewrite), graph_(g) {}

  Stmt mutate_Loop(const Loop& s, const Stmt& self) override {
    const bool constant = s.begin.is(ExprKind::Int) && s.end.is(ExprKind::Int);
    return nested(constant, [&] { return StmtMutator::mutate_Loop(s, self); });
  }
  Stmt mutate_StridedLoop(const StridedLoop& s, const Stmt& self) override {
    return nested(false, [&] { return StmtMutator::mutate_StridedLoop(s, self); });
  }
  Stmt mutate_Cond(const Cond& s, const Stmt& self) override {
    return nested(false, [&] { return StmtMutator::mutate_Cond(s, self); });
  }

 protected:
  bool accept(const Stage& s) const override {
    if (!countable_ || s.transport != StageTransport::Sync) return false;
    const Node* source = graph_.find(s.buffer);
    return source != nullptr && static_cast<bool>(stage_tma_boxes(s, source->type));
  }

 private:
  template <class F> Stmt nested(bool countable, F&& f) {
    const bool outer = countable_;
    countable_ = outer && countable;
    Stmt out = f();
    countable_ = outer;
    return out;
  }

  const Graph& graph_;
  bool countable_ = true;
};

class TmaCopyPass final : public TilePass {
 public:
  std::string_view name() const override { return "tma_copy"; }
  std::string_view summary() const override { return "copy staged slabs with the Tensor Memory Accelerator on sm_90 and newer"; }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"TMA", KnobType::Bool, {}, std::nullopt, "copy sync Stages with TMA box copies completing on mbarriers"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile&, PassContext& ctx) override {
    const Graph& g = ctx.graph();
    TmaCandidates finder(g, /*rewrite=*/false);
    finder.mutate_body(tile_op.body);
    if (finder.switched == 0) return Status::ok();
    const std::string& arch = ctx.device().arch;
    if (!ctx.device().features.tma) {
      ctx.skip(node, "device arch '" + arch + "' has no Tensor Memory Accelerator (needs sm_90 or newer)");
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(bool tma, ctx.choose_bool("TMA", node, false));
    if (!tma) return Status::ok();
    TmaCandidates rewriter(g, /*rewrite=*/true);
    auto op = std::make_unique<TileOp>(tile_op);
    op->body = canonicalize_names(rewriter.mutate_body(tile_op.body));
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_tma_copy(Registry& r) {
  r.add_pass("tma_copy", [] { return std::make_unique<TmaCopyPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("tma_copy", "1.0.0", ::tessera::register_tma_copy)

// pad_smem: pads the rows of 2-D (and higher) staged slabs to avoid shared-memory bank conflicts.
//
// Rewrites: sets `pad=P` on every Stage of a Tile kernel whose slab has two or more dims, so each
// row (last slab dim) of the shared buffer gets P unused elements and a column walk spreads over
// the banks:
//     x_smem = Stage(x, origin=(..), slab=(a0:32@0, a1:32@1))   ->   ... slab=(a0:32@0, a1:32@1)) pad=1
// The choice comes from the staged-slab bank model of one warp (target/staged_access.h): the loads
// of each staged buffer, the lanes decoded into the THREAD axes, the padded layout's addresses in
// 32 banks of 4 bytes, each load at the width vectorize_loads will give it under that pad (a
// register tile's 4 adjacent f32 replicas are one 16-byte read while the padded row stays a
// multiple of 4: PAD=4 can beat PAD=1).
// Accepts: Tile IR; kernels whose Stages are all 1-D are skipped with a reason. tma Stages are never
//   padded (a TMA box lands unpadded) and their loads are not scored.
// Knob PAD (int; candidates 0, 1, 2, 4, 8 whose padded Stages still fit together in
//   device.smem_per_block, each counted with the alignment padding it may need,
//   smem_footprint_bytes). Heuristic: the smallest pad with the fewest conflicts (summed
//   over the padded Stages' worst loads). One pad per kernel.
// Guarantees: same values (padding is never read); names canonical.
// Tests: tests/golden/pad_smem/, tests/unit/smem_passes_test.cpp.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/staged_access.h"

namespace tessera {
namespace {

const std::vector<int64_t> kPadCandidates = {0, 1, 2, 4, 8};

// Whether pad_smem pads `s`: a slab of two or more dims that is not a TMA box.
bool paddable(const Stage& s) { return s.slab.size() >= 2 && s.transport != StageTransport::Tma; }

// The worst conflict degree over the loads of `a` with rows padded by `pad`, each load read as
// vectorize_loads will read it: a register tile's adjacent replicas as one access of K elements
// when the padded row keeps them aligned (a pad that breaks that leaves K scalar reads).
int64_t worst_conflict(const StagedLoads& a, int64_t pad, const std::vector<TileAxis>& threads, int64_t warp) {
  const SlabLayout layout = padded_slab_layout(*a.stage, a.elem_bytes, pad);
  const int64_t row = a.stage->slab.back().extent + pad;
  int64_t worst = 1;
  for (const StagedLoad& load : a.loads) {
    const int64_t k = staged_vector_width(load, a.elem_bytes, row);
    worst = std::max(worst, staged_load_conflicts(StagedLoads{a.stage, a.elem_bytes, {load}}, layout, threads, warp,
                                                  k * a.elem_bytes));
  }
  return worst;
}

int64_t stage_bytes(const StagedLoads& a, int64_t pad) {
  int64_t elems = 1;
  for (size_t d = 0; d < a.stage->slab.size(); ++d)
    elems *= a.stage->slab[d].extent + (d + 1 == a.stage->slab.size() ? pad : 0);
  return a.stage->slots * elems * a.elem_bytes;
}

class PadRows final : public StmtMutator {
 public:
  explicit PadRows(int64_t pad) : pad_(pad) {}
  Stmt mutate_Stage(const Stage& s, const Stmt& self) override {
    if (!paddable(s)) return self;
    Stage padded = s;
    padded.pad = pad_;
    return padded;
  }

 private:
  int64_t pad_;
};

class PadSmemPass final : public TilePass {
 public:
  std::string_view name() const override { return "pad_smem"; }
  std::string_view summary() const override { return "pad rows of 2-D staged slabs to avoid bank conflicts"; }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    std::vector<AttrValue> candidates(kPadCandidates.begin(), kPadCandidates.end());
    return {KnobSpec{"PAD", KnobType::Int, candidates, std::nullopt,
                     "elements added to each row of a 2-D staged slab"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile&, PassContext& ctx) override {
    return pad_node(ctx.graph(), node, kernel, ctx);
  }

 private:
  Status pad_node(const Graph& g, Node& n, const TileOp& kernel, PassContext& ctx) {
    const Tile& tile = *kernel.tile();
    const std::vector<StagedLoads> accesses = collect_staged_loads(g, kernel.body);
    std::vector<const StagedLoads*> padded;
    bool copied_by_threads = false;  // a Stage pad_smem could pad but for its rank
    for (const StagedLoads& a : accesses) {
      copied_by_threads |= a.stage->transport != StageTransport::Tma;
      if (paddable(*a.stage)) padded.push_back(&a);
    }
    if (!copied_by_threads) return Status::ok();
    if (padded.empty()) {
      ctx.skip(n, "every staged slab is 1-D (a row has no column walk to spread)");
      return Status::ok();
    }
    std::vector<TileAxis> threads;
    for (const TileAxis& axis : tile.axes)
      if (axis.binding == AxisBinding::Thread) threads.push_back(axis);

    std::vector<int64_t> candidates;
    int64_t heuristic = -1, best_cost = 0;
    for (int64_t pad : kPadCandidates) {
      // Stages that share a name share one buffer: count each name once, at its largest, with
      // the alignment padding its layout may need.
      std::map<std::string, int64_t> bytes_by_name;
      for (const StagedLoads& a : accesses) {
        int64_t& b = bytes_by_name[a.stage->dst];
        const int64_t bytes = stage_bytes(a, paddable(*a.stage) ? pad : a.stage->pad);
        b = std::max(b, smem_footprint_bytes(bytes, a.stage->align));
      }
      int64_t total = 0;
      for (const auto& [name, b] : bytes_by_name) total += b;
      if (total > ctx.device().smem_per_block) continue;
      candidates.push_back(pad);
      int64_t cost = 0;
      for (const StagedLoads* a : padded) cost += worst_conflict(*a, pad, threads, ctx.device().warp_size);
      if (heuristic < 0 || cost < best_cost) {
        heuristic = pad;
        best_cost = cost;
      }
    }
    if (candidates.empty()) {
      ctx.skip(n, "the staged slabs do not fit in shared memory even unpadded");
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(int64_t pad, ctx.choose_int("PAD", n, candidates, heuristic));
    if (pad == 0) return Status::ok();
    PadRows rows(pad);
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(rows.mutate_body(kernel.body));
    n.op = std::move(op);
    return Status::ok();
  }
};

void register_pad_smem(Registry& r) {
  r.add_pass("pad_smem", [] { return std::make_unique<PadSmemPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("pad_smem", "1.0.0", ::tessera::register_pad_smem)

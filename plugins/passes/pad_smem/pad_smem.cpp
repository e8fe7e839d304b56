// pad_smem: pads the rows of 2-D (and higher) staged slabs to avoid shared-memory bank conflicts.
//
// Rewrites: sets `pad=P` on every Stage of a Tile kernel whose slab has two or more dims, so each
// row (last slab dim) of the shared buffer gets P unused elements and a column walk spreads over
// the banks:
//     x_smem = Stage(x, origin=(..), slab=(a0:32@0, a1:32@1))   ->   ... slab=(a0:32@0, a1:32@1)) pad=1
// The choice comes from a model of one warp: for each load of a staged buffer (after its Stage,
// in its scope), the lanes 0..warp_size-1 are decoded into the THREAD axes (the first-listed axis
// fastest), loop variables take their first value, every other variable is 0, and the addresses
// land in 32 banks of 4 bytes; a bank's conflict degree is the number of distinct words it serves.
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

namespace tessera {
namespace {

const std::vector<int64_t> kPadCandidates = {0, 1, 2, 4, 8};
// Shared memory is 32 banks of 4-byte words on every CUDA architecture Tessera targets.
constexpr int64_t kBanks = 32;
constexpr int64_t kBankBytes = 4;

// A 2-D+ Stage and the indices of the loads of its buffer, loop variables already replaced by
// their first values.
struct StagedAccess {
  const Stage* stage = nullptr;
  int64_t elem_bytes = 4;
  std::vector<ExprList> loads;
};

// Every Stage of a kernel with the loads of its buffer that read what it staged: the loads after it
// in textual order, up to the next Stage into the same buffer (a refill). Loop variables in the
// load indices are replaced by their loops' first values.
class StagedAccessCollector final : public StmtVisitor {
 public:
  explicit StagedAccessCollector(const Graph& g) : g_(g) {}
  std::vector<StagedAccess> accesses;

  void visit_Stage(const Stage& s) override {
    if (s.transport == StageTransport::Tma) {  // the box lands unpadded (a swizzle spreads its banks)
      latest_.erase(s.dst);
      return;
    }
    StagedAccess a;
    a.stage = &s;
    if (const Node* src = g_.find(s.buffer)) a.elem_bytes = dtype_bytes(src->type.dtype);
    latest_[s.dst] = accesses.size();
    accesses.push_back(std::move(a));
  }
  void visit_Load(const Load& s) override {
    auto it = latest_.find(s.buffer);
    if (it == latest_.end()) return;
    ExprList index;
    // A ring's slot (the first index) moves whole slabs; the banks depend on the slab coordinates.
    const size_t first = accesses[it->second].stage->slots > 1 ? 1 : 0;
    for (size_t d = first; d < s.index.size(); ++d) index.push_back(substitute(s.index[d], first_values_));
    accesses[it->second].loads.push_back(std::move(index));
  }
  void visit_Loop(const Loop& s) override { in_loop(s.var, s.begin, [&] { StmtVisitor::visit_Loop(s); }); }
  void visit_StridedLoop(const StridedLoop& s) override {
    in_loop(s.var, s.begin, [&] { StmtVisitor::visit_StridedLoop(s); });
  }

 private:
  template <class F>
  void in_loop(const std::string& var, const Expr& begin, F&& visit_body) {
    std::map<std::string, Expr> saved = first_values_;
    first_values_[var] = substitute(begin, first_values_);
    visit_body();
    first_values_ = std::move(saved);
  }

  const Graph& g_;
  std::map<std::string, size_t> latest_;  // buffer -> its latest Stage in `accesses`
  std::map<std::string, Expr> first_values_;
};

// The worst bank conflict degree of one warp over the loads of `a` with rows padded by `pad`.
int64_t worst_conflict(const StagedAccess& a, int64_t pad, const std::vector<TileAxis>& threads, int64_t warp) {
  const auto& slab = a.stage->slab;
  std::vector<int64_t> strides(slab.size(), 1);
  for (size_t d = slab.size() - 1; d > 0; --d)
    strides[d - 1] = strides[d] * (slab[d].extent + (d == slab.size() - 1 ? pad : 0));
  int64_t block_threads = 1;
  for (const TileAxis& t : threads) block_threads *= t.extent;
  int64_t worst = 1;
  for (const ExprList& index : a.loads) {
    std::map<int64_t, std::set<int64_t>> words_per_bank;
    for (int64_t lane = 0; lane < std::min(warp, block_threads); ++lane) {
      std::map<std::string, Expr> values;
      int64_t rest = lane;
      for (const TileAxis& t : threads) {
        values[t.name] = Expr::int_(rest % t.extent);
        rest /= t.extent;
      }
      int64_t element = 0;
      bool known = true;
      for (size_t d = 0; d < index.size() && d < strides.size(); ++d) {
        Expr e = substitute(index[d], values);
        std::map<std::string, Expr> zeros;
        for (const std::string& v : free_vars(e)) zeros[v] = Expr::int_(0);
        e = simplify(substitute(e, zeros));
        if (!e.is(ExprKind::Int)) {
          known = false;
          break;
        }
        element += e.int_value() * strides[d];
      }
      if (!known) break;
      const int64_t word = element * a.elem_bytes / kBankBytes;
      words_per_bank[word % kBanks].insert(word);
    }
    for (const auto& [bank, words] : words_per_bank) worst = std::max<int64_t>(worst, words.size());
  }
  return worst;
}

int64_t stage_bytes(const StagedAccess& a, int64_t pad) {
  int64_t elems = 1;
  for (size_t d = 0; d < a.stage->slab.size(); ++d)
    elems *= a.stage->slab[d].extent + (d + 1 == a.stage->slab.size() ? pad : 0);
  return a.stage->slots * elems * a.elem_bytes;
}

class PadRows final : public StmtMutator {
 public:
  explicit PadRows(int64_t pad) : pad_(pad) {}
  Stmt mutate_Stage(const Stage& s, const Stmt& self) override {
    if (s.slab.size() < 2 || s.transport == StageTransport::Tma) return self;
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
    StagedAccessCollector collector(g);
    collector.visit(kernel.body);
    const std::vector<StagedAccess>& accesses = collector.accesses;
    if (accesses.empty()) return Status::ok();
    std::vector<const StagedAccess*> padded;
    for (const StagedAccess& a : accesses)
      if (a.stage->slab.size() >= 2) padded.push_back(&a);
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
      for (const StagedAccess& a : accesses) {
        int64_t& b = bytes_by_name[a.stage->dst];
        const int64_t bytes = stage_bytes(a, a.stage->slab.size() >= 2 ? pad : a.stage->pad);
        b = std::max(b, smem_footprint_bytes(bytes, a.stage->align));
      }
      int64_t total = 0;
      for (const auto& [name, b] : bytes_by_name) total += b;
      if (total > ctx.device().smem_per_block) continue;
      candidates.push_back(pad);
      int64_t cost = 0;
      for (const StagedAccess* a : padded) cost += worst_conflict(*a, pad, threads, ctx.device().warp_size);
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

// split_inner_for_swizzle: lays TMA-staged slabs out in a 32/64/128-byte swizzle so a warp's reads
// of them are free of bank conflicts without padding (a TMA box lands unpadded, so pad_smem cannot
// help them).
//
// Rewrites: every tma Stage of a Tile kernel with two or more slab dims whose layout the chosen
// swizzle fits gets `swizzle=S align=8S` (S the swizzle's span in bytes). Its inner slab dim is
// split into blocks one span wide when it is wider (the first slab dim becomes the block, stride
// the block's columns, and materialize copies one TMA box per block), and every load of the
// staged buffer is rewritten to the swizzled address: the block index, the row, and the column
// with its 16-byte chunk XORed with the row's line index, as the TMA unit writes the box:
//     w_smem = Stage(w, origin=(o, n), slab=(a4:32@0, a0:64@1)) tma
//     in1 = load w_smem[a4, a0 + a7 * 16]
//  -> w_smem = Stage(w, origin=(o, n), slab=(a0:2@1*32, a4:32@0, a0:32@1)) tma align=1024 swizzle=128B
//     in1 = load w_smem[(a0 + a7 * 16) / 32, a4, (a0 + a7 * 16) % 32 ^ (a4 & 7) << 2]
// (for 4-byte elements and the 128-byte swizzle: a row is one 128-byte line, its 8 chunks of 4
// elements XORed with the row modulo 8; a 64-byte swizzle XORs 2 chunk bits with (row / 2) % 4, a
// 32-byte one 1 bit with (row / 4) % 2: swizzle_byte_offset, ir/stmt_enums.h).
// The choice comes from the staged-slab bank model of one warp (target/staged_access.h), the same
// pad_smem scores pads with: each candidate's swizzled addresses in 32 banks of 4 bytes, each load
// at the width vectorize_loads will give it.
// Accepts: Tile IR after tma_copy, register_tile and double_buffer (ring slots are the loads'
//   first index); nodes without a 2-D+ tma Stage are left alone. A Stage takes the swizzle when its
//   inner dim is the source's innermost, a whole number of spans wide, its second-innermost dim a
//   multiple of 8 rows (the pattern repeats every 8 spans), and the laid-out slab is still TMA box
//   copies (stage_tma_boxes, ir/stmt.h); every Stage filling the buffer has the same slab.
// Knob SWIZZLE (string; candidates none and the swizzles some Stage fits, whose aligned slabs still
//   fit together in device.smem_per_block). One per kernel: each Stage it fits takes it, the others
//   stay unswizzled. Heuristic: the fewest conflicts summed over the tma Stages' worst loads; on a
//   tie the fewest TMA boxes per fill (none first: a swizzle never adds conflicts, but a span
//   narrower than the slab's rows cuts them into more boxes), then the narrower swizzle.
// Guarantees: same values (a load reads the element the box copy wrote there); names canonical.
// Tests: tests/golden/split_inner_for_swizzle/, tests/e2e/random_knobs_test.cpp (TmaScheduleTest:
//   swizzled TMA schedules simulated against the reference and compiled with NVRTC for sm_90).
#include <algorithm>
#include <bit>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
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

constexpr SmemSwizzle kSwizzles[] = {SmemSwizzle::None, SmemSwizzle::B32, SmemSwizzle::B64, SmemSwizzle::B128};
// A swizzle permutes 16-byte chunks; its pattern repeats every 8 of its spans.
constexpr int64_t kChunkBytes = 16;
constexpr int64_t kPatternRows = 8;

// The buffer one or more tma Stages fill, and the loads that read it.
struct SwizzleSite {
  const Stage* stage = nullptr;  // the first Stage filling it
  int64_t elem_bytes = 4;
  std::vector<StagedLoad> loads;  // slab coordinates, ring slot left out
  bool uniform = true;          // every Stage filling it has the first one's slab and ring
};

// The slab `st` laid out for swizzle `sw`: its inner dim cut into blocks one span wide (the blocks
// first), the swizzle and its alignment set. nullopt when the swizzle does not fit the slab.
std::optional<Stage> laid_out(const Stage& st, int64_t elem, SmemSwizzle sw, const TensorType& source) {
  const int64_t span = swizzle_span_bytes(sw);
  const size_t n = st.slab.size();
  if (span == 0 || n < 2 || elem > kChunkBytes) return std::nullopt;
  const SlabDim inner = st.slab.back();
  if (inner.source_dim != source.rank() - 1 || inner.extent * elem % span != 0 || st.slab[n - 2].extent % kPatternRows != 0)
    return std::nullopt;
  for (const SlabDim& d : st.slab)
    if (d.stride != 1) return std::nullopt;
  const int64_t columns = span / elem;
  Stage out = st;
  out.swizzle = sw;
  out.align = std::max(st.align, kPatternRows * span);
  if (const int64_t blocks = inner.extent / columns; blocks > 1) {
    out.slab.back().extent = columns;
    out.slab.insert(out.slab.begin(), SlabDim{inner.axis, blocks, inner.source_dim, columns});
  }
  if (!stage_tma_boxes(out, source)) return std::nullopt;
  return out;
}

// Whether `e` is a multiple of `k` under `ranges`.
bool multiple_of(const Expr& e, int64_t k, const RangeMap& ranges) {
  const Expr rem = simplify(e % Expr::int_(k), ranges);
  return rem.is(ExprKind::Int) && rem.int_value() == 0;
}

// `column` as (a multiple of `chunk`, an offset in [0, chunk)): its terms split by whether they are
// multiples, when the others' sum provably stays within the chunk. nullopt otherwise.
std::optional<std::pair<Expr, Expr>> chunk_and_offset(const Expr& column, int64_t chunk, const RangeMap& ranges) {
  std::vector<Expr> terms, pending = {simplify(column, ranges)};
  while (!pending.empty()) {
    Expr t = pending.back();
    pending.pop_back();
    if (t.is(ExprKind::Add)) {
      pending.push_back(t.operand(0));
      pending.push_back(t.operand(1));
    } else {
      terms.push_back(t);
    }
  }
  Expr base = Expr::int_(0), offset = Expr::int_(0);
  for (const Expr& t : terms) (multiple_of(t, chunk, ranges) ? base : offset) = (multiple_of(t, chunk, ranges) ? base : offset) + t;
  offset = simplify(offset, ranges);
  const std::optional<Interval> b = bound_of(offset, ranges);
  if (!b || b->lo < 0 || b->hi >= chunk) return std::nullopt;
  return std::pair{simplify(base, ranges), offset};
}

// The swizzled address of slab coordinates `c` (one per original slab dim) as load indices. The
// XOR moves whole 16-byte chunks, so a column written as a chunk start plus an offset within the
// chunk keeps the offset outside the XOR, `(c ^ x) + r`: the replicas of a register tile stay
// consecutive for vectorize_loads.
ExprList swizzled_index(const ExprList& c, int64_t elem, SmemSwizzle sw, int64_t blocks, const RangeMap& ranges) {
  const int64_t span = swizzle_span_bytes(sw);
  const int64_t columns = span / elem;
  const int64_t chunk = kChunkBytes / elem;
  const Expr& row = c[c.size() - 2];
  Expr column = c.back(), offset = Expr::int_(0);
  if (auto split = chunk_and_offset(column, chunk, ranges)) std::tie(column, offset) = *split;
  ExprList out;
  if (blocks > 1) {
    out.push_back(simplify(column / Expr::int_(columns), ranges));
    column = column % Expr::int_(columns);
  }
  out.insert(out.end(), c.begin(), c.end() - 1);
  // The row's 128-byte line (a row is span bytes) modulo the pattern's chunk count, moved onto the
  // chunk bits of the column.
  const int64_t rows_per_line = 128 / span;
  const int64_t chunk_mask = span / kChunkBytes - 1;
  const Expr line = rows_per_line > 1 ? Expr::binary(ExprKind::Shr, row, Expr::int_(std::countr_zero(uint64_t(rows_per_line)))) : row;
  const Expr chunk_bits = Expr::binary(ExprKind::BitAnd, line, Expr::int_(chunk_mask));
  const Expr shifted = Expr::binary(ExprKind::Shl, chunk_bits, Expr::int_(std::countr_zero(uint64_t(chunk))));
  out.push_back(simplify(Expr::binary(ExprKind::Xor, column, shifted) + offset, ranges));
  for (Expr& e : out) e = simplify(e, ranges);
  return out;
}

// The layout the bank model scores: the laid-out slab's row-major byte offsets, swizzled.
SlabLayout swizzled_layout(const Stage& original, const Stage& laid, int64_t elem) {
  const SmemSwizzle sw = laid.swizzle;
  const int64_t blocks = laid.slab.size() > original.slab.size() ? laid.slab.front().extent : 1;
  std::vector<int64_t> strides(laid.slab.size(), 1);
  for (size_t d = laid.slab.size(); d-- > 1;) strides[d - 1] = strides[d] * laid.slab[d].extent;
  const int64_t columns = laid.slab.back().extent;
  return [=](const std::vector<int64_t>& c) {
    std::vector<int64_t> at;
    if (blocks > 1) at.push_back(c.back() / columns);
    at.insert(at.end(), c.begin(), c.end() - 1);
    at.push_back(blocks > 1 ? c.back() % columns : c.back());
    int64_t element = 0;
    for (size_t d = 0; d < at.size(); ++d) element += at[d] * strides[d];
    return swizzle_byte_offset(sw, element * elem);
  };
}

// Lays out the Stages of the chosen buffers and rewrites their loads.
class SwizzleRewriter final : public StmtMutator {
 public:
  struct Choice {
    Stage laid;
    int64_t elem_bytes = 4;
    int64_t blocks = 1;
  };
  SwizzleRewriter(std::map<std::string, Choice> chosen, RangeMap ranges)
      : chosen_(std::move(chosen)), ranges_(std::move(ranges)) {}

  // A loop with literal bounds bounds its variable in the loads it holds.
  Stmt mutate_Loop(const Loop& s, const Stmt& self) override {
    if (!s.begin.is(ExprKind::Int) || !s.end.is(ExprKind::Int) || s.end.int_value() <= s.begin.int_value())
      return StmtMutator::mutate_Loop(s, self);
    const std::optional<Interval> outer = ranges_.count(s.var) ? std::optional(ranges_[s.var]) : std::nullopt;
    ranges_[s.var] = Interval{s.begin.int_value(), s.end.int_value() - 1};
    Stmt out = StmtMutator::mutate_Loop(s, self);
    if (outer) ranges_[s.var] = *outer; else ranges_.erase(s.var);
    return out;
  }

  Stmt mutate_Stage(const Stage& s, const Stmt& self) override {
    auto it = chosen_.find(s.dst);
    if (it == chosen_.end()) return self;
    Stage out = it->second.laid;  // the slab, swizzle and alignment; this Stage's origin and slot
    out.origin = s.origin;
    out.slot = s.slot;
    return out;
  }
  Stmt mutate_Load(const Load& s, const Stmt& self) override {
    auto it = chosen_.find(s.buffer);
    if (it == chosen_.end()) return self;
    const Choice& c = it->second;
    const size_t first = c.laid.slots > 1 ? 1 : 0;
    Load out = s;
    out.index.assign(s.index.begin(), s.index.begin() + static_cast<std::ptrdiff_t>(first));
    const ExprList coords(s.index.begin() + static_cast<std::ptrdiff_t>(first), s.index.end());
    for (const Expr& e : swizzled_index(coords, c.elem_bytes, c.laid.swizzle, c.blocks, ranges_)) out.index.push_back(e);
    return out;
  }

 private:
  std::map<std::string, Choice> chosen_;
  RangeMap ranges_;  // the Tile's axes and the enclosing loops
};

class SplitInnerForSwizzlePass final : public TilePass {
 public:
  std::string_view name() const override { return "split_inner_for_swizzle"; }
  std::string_view summary() const override {
    return "lay TMA-staged slabs out in a 32/64/128-byte swizzle so warps read them without bank conflicts";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    std::vector<AttrValue> candidates;
    for (SmemSwizzle sw : kSwizzles) candidates.emplace_back(std::string(spelling(sw)));
    return {KnobSpec{"SWIZZLE", KnobType::String, candidates, std::nullopt,
                     "the shared-memory swizzle of the kernel's TMA-staged slabs (none, 32B, 64B, 128B)"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override {
    const Graph& g = ctx.graph();
    const std::vector<StagedLoads> staged = collect_staged_loads(g, kernel.body);
    std::map<std::string, SwizzleSite> sites;
    std::vector<std::string> order;
    for (const StagedLoads& s : staged) {
      if (s.stage->transport != StageTransport::Tma || s.stage->slab.size() < 2) continue;
      auto [it, fresh] = sites.try_emplace(s.stage->dst);
      SwizzleSite& site = it->second;
      if (fresh) {
        site.stage = s.stage;
        site.elem_bytes = s.elem_bytes;
        order.push_back(s.stage->dst);
      } else {
        site.uniform &= s.stage->slab.size() == site.stage->slab.size() && s.stage->slots == site.stage->slots &&
                        s.stage->swizzle == site.stage->swizzle;
        for (size_t d = 0; site.uniform && d < s.stage->slab.size(); ++d)
          site.uniform = s.stage->slab[d].extent == site.stage->slab[d].extent &&
                         s.stage->slab[d].source_dim == site.stage->slab[d].source_dim &&
                         s.stage->slab[d].stride == site.stage->slab[d].stride;
      }
      site.loads.insert(site.loads.end(), s.loads.begin(), s.loads.end());
    }
    if (sites.empty()) return Status::ok();
    for (const std::string& dst : order)
      if (sites[dst].stage->swizzle != SmemSwizzle::None) {
        ctx.skip(node, "the tma Stage of " + dst + " is already swizzled");
        return Status::ok();
      }

    std::vector<TileAxis> threads;
    for (const TileAxis& axis : tile.axes)
      if (axis.binding == AxisBinding::Thread) threads.push_back(axis);
    // Every staged buffer's bytes as laid out, counted once per name with its alignment padding.
    std::map<std::string, int64_t> other_bytes;
    for (const StagedLoads& s : staged)
      if (!sites.count(s.stage->dst)) {
        int64_t elems = s.stage->slots;
        for (size_t d = 0; d < s.stage->slab.size(); ++d) elems *= s.stage->slab[d].extent + (d + 1 == s.stage->slab.size() ? s.stage->pad : 0);
        int64_t& b = other_bytes[s.stage->dst];
        b = std::max(b, smem_footprint_bytes(elems * s.elem_bytes, s.stage->align));
      }

    std::vector<AttrValue> candidates;
    std::string heuristic;
    std::pair<int64_t, int64_t> best_cost;  // (conflicts, TMA boxes per fill)
    std::map<SmemSwizzle, std::map<std::string, SwizzleRewriter::Choice>> plans;
    for (SmemSwizzle sw : kSwizzles) {
      std::map<std::string, SwizzleRewriter::Choice>& plan = plans[sw];
      int64_t conflicts = 0, boxes = 0, bytes = 0;
      for (const auto& [name, b] : other_bytes) bytes += b;
      for (const std::string& dst : order) {
        const SwizzleSite& site = sites[dst];
        const Node* source = g.find(site.stage->buffer);
        std::optional<Stage> laid;
        if (sw != SmemSwizzle::None && site.uniform && source != nullptr)
          laid = laid_out(*site.stage, site.elem_bytes, sw, source->type);
        const Stage& layout = laid ? *laid : *site.stage;
        // Each load at the width vectorize_loads gives it (a swizzle keeps 16-byte chunks whole,
        // so adjacent replicas stay one vector read): the worst degree over the buffer's loads.
        const SlabLayout slab_layout = laid ? swizzled_layout(*site.stage, *laid, site.elem_bytes)
                                            : padded_slab_layout(*site.stage, site.elem_bytes, 0);
        int64_t worst = 1;
        for (const StagedLoad& load : site.loads) {
          const int64_t k = staged_vector_width(load, site.elem_bytes, site.stage->slab.back().extent);
          worst = std::max(worst, staged_load_conflicts(StagedLoads{site.stage, site.elem_bytes, {load}}, slab_layout,
                                                        threads, ctx.device().warp_size, k * site.elem_bytes));
        }
        conflicts += worst;
        if (Expected<TmaBoxes> b = stage_tma_boxes(layout, source ? source->type : TensorType{})) boxes += b->copies;
        int64_t elems = layout.slots;
        for (const SlabDim& d : layout.slab) elems *= d.extent;
        bytes += smem_footprint_bytes(elems * site.elem_bytes, std::max<int64_t>(layout.align, 128));
        if (laid) {
          const int64_t blocks = laid->slab.size() > site.stage->slab.size() ? laid->slab.front().extent : 1;
          plan[dst] = SwizzleRewriter::Choice{*laid, site.elem_bytes, blocks};
        }
      }
      if (sw != SmemSwizzle::None && (plan.empty() || bytes > ctx.device().smem_per_block)) continue;
      candidates.emplace_back(std::string(spelling(sw)));
      const std::pair<int64_t, int64_t> cost{conflicts, boxes};
      if (heuristic.empty() || cost < best_cost) {
        heuristic = std::string(spelling(sw));
        best_cost = cost;
      }
    }
    if (candidates.size() == 1) {
      ctx.skip(node, "no swizzle fits a tma-staged slab (an inner row a whole number of 32/64/128-byte spans "
                     "along the source's innermost dim, rows a multiple of 8)");
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(AttrValue chosen, ctx.choose("SWIZZLE", node, candidates, AttrValue(heuristic)));
    const std::string& text = std::get<std::string>(chosen);
    SmemSwizzle sw = SmemSwizzle::None;
    for (SmemSwizzle s : kSwizzles)
      if (spelling(s) == text) sw = s;
    if (sw == SmemSwizzle::None) return Status::ok();

    RangeMap ranges;
    for (const TileAxis& a : tile.axes) ranges[a.name] = Interval{0, a.extent - 1};
    SwizzleRewriter rewriter(plans[sw], std::move(ranges));
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(rewriter.mutate_body(kernel.body));
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_split_inner_for_swizzle(Registry& r) {
  r.add_pass("split_inner_for_swizzle", [] { return std::make_unique<SplitInnerForSwizzlePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("split_inner_for_swizzle", "1.0.0", ::tessera::register_split_inner_for_swizzle)

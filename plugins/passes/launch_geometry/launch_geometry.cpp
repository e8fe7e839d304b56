// launch_geometry: binds every PARALLEL axis of a Tile to THREAD or BLOCK.
//
// Rewrites: with knob BN > 1 the innermost parallel axis `i` of extent E is split into a THREAD
// axis `t:BN` and a BLOCK axis `b:ceil(E/BN)` (dropped when 1); `i` becomes `b * BN + t`
// everywhere, and when BN does not divide E the whole Tile body is wrapped in the tail guard
// `if b * BN + t < E:`. Knob BM does the same for the second innermost axis (both guards join
// into one `&&` condition). A slab loop of chunk_matmul_k takes the guard inside its body instead,
// and accumulator declarations stay outside it, so that its slabs can still be staged (a Stage
// must be reached by every thread); the other statements are guarded in runs. Every other axis becomes BLOCK. Axis order: THREAD axes first
// (innermost output axis first, so it is the coalesced one), then BLOCK axes, innermost first.
//     Tile(axes=(a0:33=PARALLEL, a1:77=PARALLEL))       BN=128, BM=2
//  -> Tile(axes=(a0:128=THREAD, a1:2=THREAD, a2:17=BLOCK)):
//       if a0 < 77 && a2 * 2 + a1 < 33: ...
// With BN = 1 ("one output row per block") every axis becomes BLOCK and the block's threads are
// left to cooperative_reduce.
// Knobs:
//   BN (1, 32, 64, .., 1024; those <= device.max_threads_per_block): threads along the innermost
//     axis. Heuristic: device.warp_size for a contraction (tessera/ir/contraction.h) whose
//     innermost axis is an N axis and second innermost an M axis: with BM's rule below that makes
//     a 2-D block tile of warp_size columns by (max_threads_per_block / 4) / warp_size rows, whose
//     rows share every staged slab of B and whose columns share every slab of A (global traffic
//     per multiply-add: 1/BN + 1/BM elements instead of about one); 1 (cooperative) when the Tile
//     body has a top-level `# reduce` loop of at least device.warp_size iterations whose every
//     load depends on every parallel axis (a row-wise reduction; not a matmul-like one whose
//     operands are reused across outputs), or a top-level `# free` loop whose trips times the
//     innermost iterations of its body reach warp_size * warp_size, or of warp_size trips after
//     a top-level reduction of warp_size iterations (a reduction's epilogue over the row, or
//     split_reduce's share of it, long enough to busy a block), or for a GEMV that streams rows
//     of B (streams_rows_of_b in tessera/ir/contraction.h: nn.Linear at M=1, whose weight rows
//     the block's threads then read with wide coalesced loads instead of each thread walking
//     one row); otherwise the next power of two >= E, clamped to
//     [warp_size, T], T = max_threads_per_block / 4, halved (not below warp_size) while a kernel
//     whose work is 1 MB or more (outputs times the innermost iterations of the body, 4 bytes
//     each) would get fewer blocks than device.sm_count; not for a contraction tiled in rows,
//     whose operands the block reuses (its work is not its bytes).
//     A contraction with rows whose grid of large block tiles (4 * warp_size columns by
//     8 * (max_threads_per_block / 4) / warp_size rows: 128 x 64 on an H100), counting every other
//     axis, still has device.sm_count blocks gets 4 * warp_size instead: the large tile, which
//     register_tile divides among max_threads_per_block / 4 threads of 4 x 8 outputs each.
//   BM (1, 2, 4, .., 32 with BN * BM <= max_threads_per_block; for a contraction with rows also 64
//     and 128, with BN * BM <= 8 * max_threads_per_block: a block tile with more outputs than a
//     block may have threads, which register_tile must divide or report): threads (outputs)
//     along the second innermost axis. Asked only where it applies (BN > 1 and two or more
//     parallel axes); elsewhere it is 1. Heuristic: the large tile's rows with the large tile's
//     BN, else min(next power of two >= its extent, T / BN).
//   GROUP_M (1, 2, 4, 8, 16; below and dividing the M block count): asked for a contraction with
//     blocks along both N and M. G > 1 makes one BLOCK axis `b` walking G M-blocks before moving
//     along N (n_block = b % (G * NB) / G, m_block = b / (G * NB) * G + b % G), so blocks resident
//     together share slabs in L2. Heuristic: 8 (or the largest candidate below) when the A and B
//     operands exceed half of device.l2_bytes, else 1.
// Accepts: Tile IR; a TileOp body must be exactly one Tile statement. Tiles without PARALLEL axes
//   are skipped; a Tile mixing PARALLEL and bound axes is skipped too (it was bound already).
// Guarantees: no PARALLEL axis remains on a rewritten Tile; every point of the old iteration space
//   is run by exactly one thread; the body is canonically named. A guard is never put around a
//   collective statement (an error instead).
// Tests: tests/golden/launch_geometry/ and tests/unit/tile_passes_test.cpp.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/contraction.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/kernel_report.h"

namespace tessera {
namespace {


int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

// Which parallel axes each bound name depends on (through indices and computed values).
class AxisDependences final : public StmtVisitor {
 public:
  explicit AxisDependences(const std::set<std::string>& axes) : axes_(axes) {}

  std::set<std::string> of(const Expr& e) const {
    std::set<std::string> out;
    if (!e.defined()) return out;
    for (const std::string& v : free_vars(e)) {
      if (axes_.count(v)) out.insert(v);
      if (auto it = deps_.find(v); it != deps_.end()) out.insert(it->second.begin(), it->second.end());
    }
    return out;
  }
  std::set<std::string> of(const ExprList& list) const {
    std::set<std::string> out;
    for (const Expr& e : list) {
      std::set<std::string> d = of(e);
      out.insert(d.begin(), d.end());
    }
    return out;
  }

  void visit_Load(const Load& s) override { deps_[s.dst] = of(s.index); }
  void visit_Assign(const Assign& s) override { deps_[s.dst] = of(s.args); }
  void visit_Select(const Select& s) override {
    deps_[s.dst] = of(ExprList{s.cond, s.then_value, s.else_value});
  }
  void visit_Loop(const Loop& s) override {
    deps_[s.var] = of(ExprList{s.begin, s.end});
    StmtVisitor::visit_Loop(s);
  }

 private:
  const std::set<std::string>& axes_;
  std::map<std::string, std::set<std::string>> deps_;
};

// True when every load inside `loop` reads an element that depends on every parallel axis.
bool loads_depend_on_every_axis(const Loop& loop, const AxisDependences& deps, const std::set<std::string>& axes) {
  struct Checker final : StmtVisitor {
    const AxisDependences* deps;
    const std::set<std::string>* axes;
    bool ok = true;
    void visit_Load(const Load& s) override {
      std::set<std::string> d = deps->of(s.index);
      for (const std::string& a : *axes) ok = ok && d.count(a) > 0;
    }
  } checker;
  checker.deps = &deps;
  checker.axes = &axes;
  checker.visit(loop.body);
  return checker.ok;
}

// The cooperative rule of the BN heuristic (see the header comment).
bool is_row_reduction(const Tile& tile, const DeviceDesc& device) {
  std::set<std::string> axes;
  RangeMap ranges;
  for (const TileAxis& a : tile.axes) {
    axes.insert(a.name);
    ranges[a.name] = Interval{0, a.extent - 1};
  }
  AxisDependences deps(axes);
  deps.visit(tile.body);
  bool long_reduction = false;  // a top-level reduction of warp_size iterations or more
  for (const Stmt& s : tile.body)
    if (const auto* loop = s.as<Loop>(); loop != nullptr && loop->role == LoopRole::Reduce)
      if (auto trip = bound_of(simplify(loop->end - loop->begin, ranges), ranges); trip && trip->hi >= device.warp_size)
        long_reduction = true;
  for (const Stmt& s : tile.body) {
    const auto* loop = s.as<Loop>();
    if (loop == nullptr || (loop->role != LoopRole::Reduce && loop->role != LoopRole::Free)) continue;
    std::optional<Interval> trip = bound_of(simplify(loop->end - loop->begin, ranges), ranges);
    if (!trip) continue;
    // A `# free` loop left in the body (tileify made every other one an axis) is a reduction's
    // epilogue over the row, or split_reduce's share of one: the block's threads share it when
    // it holds warp_size iterations for each lane of a warp (its trips times the work of each, a
    // K loop for instance), or warp_size trips after a reduction of warp_size; a short row keeps
    // one thread per row.
    if (loop->role == LoopRole::Free) {
      const int64_t work = trip->hi * std::max<int64_t>(1, innermost_iterations(loop->body));
      if (work >= device.warp_size * device.warp_size || (trip->hi >= device.warp_size && long_reduction)) return true;
      continue;
    }
    if (trip->hi < device.warp_size) continue;
    if (loads_depend_on_every_axis(*loop, deps, axes)) return true;
  }
  return false;
}

// A slab loop (chunk_matmul_k's): a serial loop with literal bounds whose body is one loop.
bool is_slab_loop(const Stmt& s) {
  const auto* loop = s.as<Loop>();
  return loop != nullptr && loop->begin.is(ExprKind::Int) && loop->end.is(ExprKind::Int) && loop->body.size() == 1 &&
         loop->body[0].is<Loop>();
}

// `body` under the tail guard. When the body holds a slab loop, accumulator declarations stay
// outside the guard and each slab loop takes the guard inside its body, so every thread runs the
// slab loop and a later pass may stage a slab at the top of its body (a Stage must be reached by
// every thread); the other statements are guarded in runs. That is only done when no guarded run
// defines a name used outside it; otherwise, and without a slab loop, the whole body is guarded.
Body guarded(const Body& body, const Expr& guard) {
  Body whole = {Cond{guard, body, {}}};
  if (std::none_of(body.begin(), body.end(), is_slab_loop)) return whole;
  Body out, run;
  std::vector<Body> runs;  // every guarded statement list, for the scope check
  auto flush = [&] {
    if (run.empty()) return;
    runs.push_back(run);
    out.push_back(Cond{guard, std::move(run), {}});
    run.clear();
  };
  for (const Stmt& s : body) {
    if (s.is<Init>()) {
      flush();
      out.push_back(s);
    } else if (is_slab_loop(s)) {
      flush();
      Loop slab = *s.as<Loop>();
      runs.push_back(slab.body);
      slab.body = {Cond{guard, std::move(slab.body), {}}};
      out.push_back(std::move(slab));
    } else {
      run.push_back(s);
    }
  }
  flush();
  // A name a guarded run defines is visible only inside it: no other run, and no Init left
  // outside the guard, may use it (slab loops have literal bounds).
  std::set<std::string> defined_in_runs;
  for (const Body& r : runs)
    for (const std::string& name : bound_names(r)) defined_in_runs.insert(name);
  for (const Body& r : runs) {
    const std::set<std::string> bound = bound_names(r);
    for (const std::string& name : used_names(r))
      if (defined_in_runs.count(name) && !bound.count(name)) return whole;
  }
  for (const Stmt& s : out)
    if (s.is<Init>())
      for (const std::string& name : own_used_names(s))
        if (defined_in_runs.count(name)) return whole;
  return out;
}

// Whether the Tile is a contraction whose second innermost axis is one of its M axes (rows of
// A): the BN rule then makes a 2-D block tile, so that the rows share each staged slab of B.
bool tiles_rows_of_a_contraction(const Tile& tile, const std::vector<Contraction>& contractions) {
  if (tile.axes.size() < 2) return false;
  const std::string& second = tile.axes[tile.axes.size() - 2].name;
  for (const Contraction& c : contractions)
    if (std::find(c.m_axes.begin(), c.m_axes.end(), second) != c.m_axes.end() &&
        std::find(c.n_axes.begin(), c.n_axes.end(), tile.axes.back().name) != c.n_axes.end())
      return true;
  return false;
}

// The large block tile of a contraction with rows: a comfortable block (max_threads_per_block / 4
// threads, warp_size columns by the rest in rows) whose threads register_tile gives 4 columns x 8
// rows of outputs each (128 x 64 on an H100). A block tile may hold at most kMaxOutputsPerThread
// outputs per thread of a block, which register_tile must divide.
constexpr int64_t kLargeTileColumnsPerWarp = 4;
constexpr int64_t kLargeTileRowsPerThread = 8;
constexpr int64_t kMaxOutputsPerThread = 8;

// Whether the large block tile still gives every SM a block: its blocks along N and M (each at
// least one full tile), times the other axes, reach device.sm_count.
bool fills_device_with_large_tiles(const Tile& tile, const DeviceDesc& device) {
  const int64_t columns = kLargeTileColumnsPerWarp * device.warp_size;
  const int64_t rows = kLargeTileRowsPerThread * (std::max(device.warp_size, device.max_threads_per_block / 4) /
                                                  device.warp_size);
  const int64_t n = tile.axes.back().extent, m = tile.axes[tile.axes.size() - 2].extent;
  if (n < columns || m < rows) return false;
  int64_t blocks = ((n + columns - 1) / columns) * ((m + rows - 1) / rows);
  for (size_t i = 0; i + 2 < tile.axes.size(); ++i) blocks *= tile.axes[i].extent;
  return blocks >= device.sm_count;
}

// One parallel axis split into threads (and blocks when the threads do not cover it).
struct SplitAxis {
  TileAxis thread;
  std::optional<TileAxis> block;
  Expr index;  // what the old axis variable becomes
  Expr guard;  // undefined when the threads cover the extent exactly
};

SplitAxis split(const TileAxis& axis, int64_t threads, std::set<std::string>& taken) {
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
    taken.insert(name);
    return name;
  };
  SplitAxis s;
  s.thread = TileAxis{fresh(axis.name + "_t"), threads, AxisBinding::Thread};
  const int64_t blocks = (axis.extent + threads - 1) / threads;
  s.index = Expr::var(s.thread.name);
  if (blocks > 1) {
    s.block = TileAxis{fresh(axis.name + "_b"), blocks, AxisBinding::Block};
    s.index = Expr::var(s.block->name) * threads + s.index;
  }
  if (axis.extent % threads != 0) s.guard = s.index < Expr::int_(axis.extent);
  return s;
}

// The bytes of the A and B operands of `contractions` (graph buffers only).
int64_t operand_bytes(const std::vector<Contraction>& contractions, const Graph& g) {
  int64_t bytes = 0;
  std::set<std::string> seen;
  for (const Contraction& c : contractions)
    for (const ContractionOperand* op : {&c.a(), &c.b()})
      if (const Node* n = g.find(op->buffer); n != nullptr && seen.insert(op->buffer).second)
        bytes += num_elements(n->type.shape) * dtype_bytes(n->type.dtype);
  return bytes;
}

// Knob GROUP_M: for a contraction tiled in both dimensions, one BLOCK axis whose consecutive blocks
// walk GROUP_M blocks down M before moving along N, so the blocks resident together share their
// slabs of B (and of A, GROUP_M at a time) in L2. Rewrites `n_split` and `m_split`'s indices and
// guards to decode the grouped axis; nullopt when not grouped.
// `contractions` are the Tile's; `tiles_rows` whether they make it a 2-D block tile.
Expected<std::optional<TileAxis>> group_blocks(const std::vector<Contraction>& contractions, bool tiles_rows,
                                               SplitAxis& n_split, std::optional<SplitAxis>& m_split,
                                               std::set<std::string>& taken, Node& node, PassContext& ctx) {
  if (!n_split.block || !m_split || !m_split->block || !tiles_rows) return std::optional<TileAxis>();
  const int64_t nb = n_split.block->extent, mb = m_split->block->extent;
  std::vector<int64_t> candidates = {1};
  for (int64_t g : {2, 4, 8, 16})
    if (g < mb && mb % g == 0) candidates.push_back(g);
  if (candidates.size() == 1) return std::optional<TileAxis>();
  // Grouping pays when the operands do not stay in L2 anyway.
  int64_t heuristic = 1;
  if (2 * operand_bytes(contractions, ctx.graph()) > ctx.device().l2_bytes)
    for (int64_t g : candidates)
      if (g <= 8) heuristic = g;
  TESSERA_ASSIGN_OR_RETURN(int64_t group, ctx.choose_int("GROUP_M", node, candidates, heuristic));
  if (group == 1) return std::optional<TileAxis>();
  std::string name = "grouped_block";
  for (int i = 1; taken.count(name); ++i) name = "grouped_block_" + std::to_string(i);
  taken.insert(name);
  const Expr b = Expr::var(name);
  const Expr n_block = (b % (group * nb)) / group;
  const Expr m_block = (b / (group * nb)) * group + b % group;
  const std::map<std::string, Expr> decode = {{n_split.block->name, n_block}, {m_split->block->name, m_block}};
  for (SplitAxis* s : {&n_split, &*m_split}) {
    s->index = substitute(s->index, decode);
    if (s->guard.defined()) s->guard = substitute(s->guard, decode);
  }
  return std::optional<TileAxis>(TileAxis{name, nb * mb, AxisBinding::Block});
}

class LaunchGeometryPass final : public TilePass {
 public:
  std::string_view name() const override { return "launch_geometry"; }
  std::string_view summary() const override {
    return "bind every parallel axis to threads or blocks; guard the tails";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {
        KnobSpec{"BN", KnobType::Int, {int64_t{1}, int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256},
                                       int64_t{512}, int64_t{1024}},
                 std::nullopt,
                 "threads along the innermost parallel axis; 1 = one output row per block"},
        KnobSpec{"BM", KnobType::Int,
                 {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}, int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}},
                 std::nullopt, "threads along the second innermost parallel axis (2-D outputs)"},
        KnobSpec{"GROUP_M", KnobType::Int, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}, int64_t{16}},
                 std::nullopt, "blocks walked down M before moving along N (L2 reuse of a contraction's slabs; 1 = off)"},
    };
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile& tile, PassContext& ctx) override {
    Node* n = &node;
    const TileOp* kernel = &tile_op;
    size_t parallel = 0;
    for (const TileAxis& a : tile.axes) parallel += a.binding == AxisBinding::Parallel;
    if (parallel == 0) {
      ctx.skip(*n, "no parallel axis to bind");
      return Status::ok();
    }
    if (parallel != tile.axes.size()) {
      ctx.skip(*n, "some axes are bound already");
      return Status::ok();
    }
    Expected<Tile> bound = bind(tile, *n, ctx);
    if (!bound) return std::move(bound).error();
    auto op = std::make_unique<TileOp>(*kernel);
    op->body = canonicalize_names(Body{Stmt(std::move(*bound))});
    n->op = std::move(op);
    return Status::ok();
  }

 private:
  static Expected<Tile> bind(const Tile& tile, Node& node, PassContext& ctx) {
    const DeviceDesc& device = ctx.device();
    const int64_t max_threads = device.max_threads_per_block;
    const int64_t warp = device.warp_size;
    const TileAxis& inner = tile.axes.back();
    // One contraction analysis serves the BN rule and GROUP_M.
    const std::vector<Contraction> contractions = find_contractions(tile);
    const bool tiles_rows = tiles_rows_of_a_contraction(tile, contractions);
    // Threads per block we aim for; fewer, down to a warp, when large work (1 MB or more read
    // once: outputs times the innermost iterations of the body) would otherwise leave SMs without
    // a block. Not for a contraction tiled in rows: its operands are reused across the block, so
    // its work is not its bytes, and a smaller tile would give up that reuse.
    int64_t comfortable = std::max(warp, max_threads / 4);
    int64_t outputs = 1;
    for (const TileAxis& a : tile.axes) outputs *= a.extent;
    const int64_t work_bytes = outputs * std::max<int64_t>(1, innermost_iterations(tile.body)) * 4;
    if (!tiles_rows && work_bytes >= kLargeKernelBytes)
      while (comfortable > warp && outputs / comfortable < device.sm_count) comfortable /= 2;

    std::vector<int64_t> bn_candidates;
    for (int64_t c : {1, 32, 64, 128, 256, 512, 1024})
      if (c <= max_threads) bn_candidates.push_back(c);
    int64_t bn_heuristic = 1;
    const bool large_tile = tiles_rows && fills_device_with_large_tiles(tile, device);
    if (large_tile)
      bn_heuristic = kLargeTileColumnsPerWarp * warp;  // register_tile divides it to warp_size columns
    else if (tiles_rows)
      bn_heuristic = warp;  // a 2-D block tile: BM = comfortable / warp rows share each B slab
    else if (!is_row_reduction(tile, device) &&
             std::none_of(contractions.begin(), contractions.end(), [](const Contraction& c) { return streams_rows_of_b(c); }))
      bn_heuristic = std::min(std::max(next_pow2(inner.extent), warp), comfortable);
    Expected<int64_t> bn = ctx.choose_int("BN", node, bn_candidates, bn_heuristic);
    if (!bn) return std::move(bn).error();

    std::vector<TileAxis> thread_axes, block_axes;
    std::map<std::string, Expr> substitution;
    ExprList guards;
    std::set<std::string> taken = bound_names(Body{Stmt(tile)});
    size_t unsplit = tile.axes.size();  // axes [0, unsplit) just become BLOCK
    if (*bn > 1) {
      SplitAxis n_split = split(inner, *bn, taken);
      std::optional<SplitAxis> m_split;
      if (tile.axes.size() >= 2) {
        const TileAxis& second = tile.axes[tile.axes.size() - 2];
        // A contraction's block tile may hold more outputs than a block has threads: register_tile
        // gives each thread several of them.
        const int64_t max_outputs = tiles_rows ? max_threads * kMaxOutputsPerThread : max_threads;
        std::vector<int64_t> bm_candidates;
        for (int64_t c : {1, 2, 4, 8, 16, 32, 64, 128})
          if (*bn * c <= max_outputs && (c <= 32 || tiles_rows)) bm_candidates.push_back(c);
        int64_t bm_heuristic = 1;
        const int64_t bm_wanted = large_tile && *bn == kLargeTileColumnsPerWarp * warp
                                      ? kLargeTileRowsPerThread * (comfortable / warp)
                                      : std::min(next_pow2(second.extent), comfortable / *bn);
        for (int64_t c : bm_candidates)
          if (c <= bm_wanted) bm_heuristic = c;
        Expected<int64_t> bm = ctx.choose_int("BM", node, bm_candidates, bm_heuristic);
        if (!bm) return std::move(bm).error();
        if (*bm > 1) m_split = split(second, *bm, taken);
      }
      unsplit = tile.axes.size() - (m_split ? 2 : 1);
      thread_axes.push_back(n_split.thread);
      if (m_split) thread_axes.push_back(m_split->thread);
      TESSERA_ASSIGN_OR_RETURN(std::optional<TileAxis> grouped, group_blocks(contractions, tiles_rows, n_split, m_split, taken, node, ctx));
      if (grouped) {
        block_axes.push_back(*grouped);
      } else {
        if (n_split.block) block_axes.push_back(*n_split.block);
        if (m_split && m_split->block) block_axes.push_back(*m_split->block);
      }
      substitution[inner.name] = n_split.index;
      if (n_split.guard.defined()) guards.push_back(n_split.guard);
      if (m_split) {
        substitution[tile.axes[unsplit].name] = m_split->index;
        if (m_split->guard.defined()) guards.push_back(m_split->guard);
      }
    }
    for (size_t i = unsplit; i-- > 0;) {
      TileAxis a = tile.axes[i];
      a.binding = AxisBinding::Block;
      block_axes.push_back(a);
    }

    Tile out;
    out.axes = thread_axes;
    out.axes.insert(out.axes.end(), block_axes.begin(), block_axes.end());
    RangeMap ranges;
    for (const TileAxis& a : out.axes) ranges[a.name] = Interval{0, a.extent - 1};
    out.body = substitute_and_simplify(tile.body, substitution, ranges);
    if (!guards.empty()) {
      if (contains_collective(out.body))
        return ctx.error_at(node, "the tail guard would enclose a collective statement; bind the axes first");
      Expr guard = guards[0];
      for (size_t i = 1; i < guards.size(); ++i) guard = Expr::binary(ExprKind::And, guard, guards[i]);
      out.body = guarded(out.body, simplify(guard, ranges));
    }
    return out;
  }
};

void register_launch_geometry(Registry& r) {
  r.add_pass("launch_geometry", [] { return std::make_unique<LaunchGeometryPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("launch_geometry", "1.0.0", ::tessera::register_launch_geometry)

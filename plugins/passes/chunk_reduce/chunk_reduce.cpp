// chunk_reduce: splits long cooperative row loops into chunks whose slabs fit in shared memory.
//
// Rewrites: a StridedLoop directly in the Tile body (so its control flow is uniform), made by
// cooperative_reduce over one row, `StridedLoop(v = t; < N; += T):  # reduce|free` with t a THREAD
// axis and N, T constants, into a uniform serial chunk loop around a shorter StridedLoop:
//     for c in 0..ceil(N/C):  # reduce|free
//       StridedLoop(v = c * C + t; < min(N, c * C + C); += T):  # reduce|free
// The body is unchanged, so a later Stage or Combine placed in the chunk loop stays legal.
// Accepts: Tile IR (TileOp nodes whose body is one Tile); other nodes are left alone.
// Knob CHUNK (int; 0 = off, else C among 256..8192, a multiple of T and below the longest N).
//   Heuristic: off when every such loop's row slab (N times the bytes of one element of every
//   buffer loaded in the loop with an index that follows v) fits in device.smem_per_block;
//   otherwise the largest C whose chunk slab fits. Loops with N <= C are left whole.
// Guarantees: same values computed (the chunks partition [0, N) and each thread visits the same
//   elements in the same order); names canonical.
// Tests: tests/golden/chunk_reduce/, tests/unit/smem_passes_test.cpp.
#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

const std::vector<int64_t> kChunkCandidates = {0, 256, 512, 1024, 2048, 4096, 8192};

// Sums the element bytes of the distinct input buffers a loop loads with an index that uses `var`.
class RowBytesPerElement final : public StmtVisitor {
 public:
  RowBytesPerElement(const Graph& g, const Node& node, std::string var) : graph_(g), node_(node), var_(std::move(var)) {}
  void visit_Load(const Load& s) override {
    if (s.buffer == node_.id() || seen_.count(s.buffer)) return;
    if (std::find(node_.inputs.begin(), node_.inputs.end(), s.buffer) == node_.inputs.end()) return;
    bool follows = false;
    for (const Expr& e : s.index)
      for (const std::string& v : free_vars(e)) follows |= v == var_;
    if (!follows) return;
    const Node* input = graph_.find(s.buffer);
    if (input == nullptr) return;
    seen_.insert(s.buffer);
    bytes += dtype_bytes(input->type.dtype);
  }
  int64_t bytes = 0;

 private:
  const Graph& graph_;
  const Node& node_;
  std::string var_;
  std::set<std::string> seen_;
};

struct RowLoop {
  size_t position = 0;  // index in the Tile body
  int64_t extent = 0;   // N
  int64_t step = 0;     // T
  int64_t bytes_per_element = 0;
};

class ChunkReducePass final : public TilePass {
 public:
  std::string_view name() const override { return "chunk_reduce"; }
  std::string_view summary() const override {
    return "split long cooperative row loops into chunks whose slabs fit in shared memory";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    std::vector<AttrValue> candidates(kChunkCandidates.begin(), kChunkCandidates.end());
    return {KnobSpec{"CHUNK", KnobType::Int, candidates, std::nullopt,
                     "elements per chunk of a long row loop (0 = do not chunk)"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile&, PassContext& ctx) override {
    return chunk_node(ctx.graph(), node, kernel, ctx);
  }

 private:
  static std::vector<RowLoop> find_row_loops(const Graph& g, const Node& n, const Tile& tile) {
    std::map<std::string, int64_t> thread_axes;
    for (const TileAxis& a : tile.axes)
      if (a.binding == AxisBinding::Thread) thread_axes[a.name] = a.extent;
    std::vector<RowLoop> loops;
    for (size_t i = 0; i < tile.body.size(); ++i) {
      const auto* sl = tile.body[i].as<StridedLoop>();
      if (sl == nullptr || (sl->role != LoopRole::Reduce && sl->role != LoopRole::Free)) continue;
      if (!sl->begin.is(ExprKind::Var) || !thread_axes.count(sl->begin.name())) continue;
      if (!sl->end.is(ExprKind::Int) || !sl->step.is(ExprKind::Int) || sl->step.int_value() <= 0) continue;
      RowBytesPerElement row(g, n, sl->var);
      row.visit(sl->body);
      loops.push_back(RowLoop{i, sl->end.int_value(), sl->step.int_value(), row.bytes});
    }
    return loops;
  }

  Status chunk_node(const Graph& g, Node& n, const TileOp& kernel, PassContext& ctx) {
    const Tile& tile = *kernel.tile();
    std::vector<RowLoop> loops = find_row_loops(g, n, tile);
    if (loops.empty()) {
      ctx.skip(n, "no StridedLoop over a row at the top of the Tile");
      return Status::ok();
    }
    const int64_t budget = ctx.device().smem_per_block;
    int64_t longest = 0, widest = 0, step = loops[0].step;
    bool fits = true;
    for (const RowLoop& l : loops) {
      longest = std::max(longest, l.extent);
      widest = std::max(widest, l.bytes_per_element);
      fits &= l.extent * l.bytes_per_element <= budget;
      // Every chunk must hold whole strides of every loop.
      step = std::lcm(step, l.step);
    }
    std::vector<int64_t> candidates = {0};
    for (int64_t c : kChunkCandidates)
      if (c > 0 && c % step == 0 && c < longest) candidates.push_back(c);
    int64_t heuristic = 0;
    if (!fits)
      for (int64_t c : candidates)
        if (c * widest <= budget) heuristic = c;  // candidates ascend: the last fit is the largest
    TESSERA_ASSIGN_OR_RETURN(int64_t chunk, ctx.choose_int("CHUNK", n, candidates, heuristic));
    if (chunk == 0) {
      if (fits) ctx.skip(n, "every row slab fits in shared memory");
      return Status::ok();
    }

    Tile rewritten = tile;
    for (const RowLoop& l : loops) {
      if (l.extent <= chunk) continue;
      const auto& sl = *tile.body[l.position].as<StridedLoop>();
      const int64_t chunks = (l.extent + chunk - 1) / chunk;
      const std::string c = sl.var + "_chunk";  // canonicalize_names gives it its a<N> name
      const Expr start = Expr::var(c) * chunk;
      RangeMap ranges{{c, Interval{0, chunks - 1}}};
      StridedLoop inner = sl;
      inner.begin = simplify(start + sl.begin, ranges);
      inner.end = simplify(Expr::min(Expr::int_(l.extent), start + chunk), ranges);
      rewritten.body[l.position] = Loop{c, Expr::int_(0), Expr::int_(chunks), sl.role, 0, {Stmt(inner)}};
    }
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(Body{Stmt(rewritten)});
    n.op = std::move(op);
    return Status::ok();
  }
};

void register_chunk_reduce(Registry& r) {
  r.add_pass("chunk_reduce", [] { return std::make_unique<ChunkReducePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("chunk_reduce", "1.0.0", ::tessera::register_chunk_reduce)

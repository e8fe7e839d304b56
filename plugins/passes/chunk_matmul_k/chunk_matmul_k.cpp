// chunk_matmul_k: splits the K loop of every contraction into K slabs.
//
// Rewrites: each contraction of a Tile kernel (tessera/ir/contraction.h: a `# reduce` Loop with
// literal bounds b..e, accumulating products of operands loaded along k) into a slab loop around
// a BK-deep step loop:
//     for k in b..e:  # reduce             for ko in 0..ceil((e-b)/BK):  # reduce
//       <step(k)>                    ->      for ki in 0..BK:  # reduce         (BK divides e-b)
//                                              <step(b + ko * BK + ki)>
// When BK does not divide e-b the step loop of the last slab is shorter: its end is
// `min(BK, e - b - ko * BK)`, a block-uniform bound (no guard inside the step).
// Why: every pass after it that works per slab needs this shape. stage_inputs finds the slab loop
// (a uniform loop over chunks) and stages one BK-deep slab of each operand in it instead of the
// whole of K (or nothing, when all of K does not fit); double buffering and software pipelining
// overlap the copy of slab ko+1 with the step loop of slab ko.
// Accepts: Tile IR (TileOp nodes); other nodes are left alone. Runs before launch_geometry binds
//   axes, or after it: the K loop may sit in the Tile body or under tail guards.
// Knob BK (0 = off, else 8..256 with 2 * BK <= e-b, one value for every contraction of the
//   kernel). Asked only for kernels with a contraction long enough to chunk. Heuristic: the depth
//   whose slab row is one 128-byte line of the widest operand dtype (32 f32 elements, 64 bf16/f16),
//   the unit in which global memory is read and cp.async/TMA copy best, when some contraction has
//   M axes (rows of A: launch_geometry then makes a 2-D block tile whose rows share each staged
//   slab of B, which all of K would not fit) or when stage_inputs could not stage all of K (two
//   output rows' worth of whole-K operand rows, K times the element bytes of every operand,
//   twice, exceed device.smem_per_block); otherwise off (a GEMV-shaped kernel stages its one row
//   of A whole).
// Guarantees: every output accumulates the same products in the same order (k ascends through
//   the slabs), so results are bit-identical; names canonical.
// Tests: tests/golden/chunk_matmul_k/, tests/unit/contraction_test.cpp, and the matmul corpus under
//   random knobs (tests/e2e/random_knobs_test.cpp).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tessera/ir/contraction.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

const std::vector<int64_t> kSlabDepths = {8, 16, 32, 64, 128, 256};
constexpr int64_t kLineBytes = 128;  // a global memory transaction; a slab row of this many bytes

// The element bytes of an operand (4 when it is not a graph buffer, such as a shared-memory stage:
// f32 is the widest stage element).
int64_t operand_bytes(const Graph& g, const ContractionOperand& op) {
  const Node* src = g.find(op.buffer);
  return src ? dtype_bytes(src->type.dtype) : 4;
}

// The K loop of `c` cut into slabs of `bk`.
Stmt chunked(const Loop& k_loop, int64_t bk) {
  const int64_t extent = k_loop.end.int_value() - k_loop.begin.int_value();
  const int64_t slabs = (extent + bk - 1) / bk;
  // Fresh names; canonicalize_names gives them their a<N> names.
  const std::string ko = k_loop.var + "_slab", ki = k_loop.var + "_step";
  const RangeMap ranges{{ko, Interval{0, slabs - 1}}, {ki, Interval{0, bk - 1}}};
  const Expr slab_start = Expr::var(ko) * bk;
  Expr step_end = Expr::int_(bk);
  if (extent % bk != 0) step_end = simplify(Expr::min(Expr::int_(bk), Expr::int_(extent) - slab_start), ranges);
  const Expr k = simplify(k_loop.begin + slab_start + Expr::var(ki), ranges);
  Body step = substitute_and_simplify(k_loop.body, {{k_loop.var, k}}, ranges);
  Loop inner{ki, Expr::int_(0), step_end, LoopRole::Reduce, 0, std::move(step)};
  return Loop{ko, Expr::int_(0), Expr::int_(slabs), LoopRole::Reduce, 0, {Stmt(std::move(inner))}};
}

class ChunkMatmulKPass final : public TilePass {
 public:
  std::string_view name() const override { return "chunk_matmul_k"; }
  std::string_view summary() const override { return "split each contraction's K loop into BK-deep slabs"; }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    std::vector<AttrValue> candidates = {int64_t{0}};
    for (int64_t bk : kSlabDepths) candidates.push_back(bk);
    return {KnobSpec{"BK", KnobType::Int, candidates, std::nullopt,
                     "depth of a K slab of a contraction (0 = do not chunk)"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override {
    std::vector<Contraction> contractions = find_contractions(tile);
    if (contractions.empty()) return Status::ok();  // not a matmul: nothing to say
    contractions.erase(std::remove_if(contractions.begin(), contractions.end(),
                                      [](const Contraction& c) { return c.chunked(); }),
                       contractions.end());
    if (contractions.empty()) {
      ctx.skip(node, "K is cut into slabs already");
      return Status::ok();
    }
    int64_t shortest = contractions[0].k_extent(), widest = 0, whole_k_bytes = 0;
    bool has_rows = false;
    for (const Contraction& c : contractions) {
      has_rows |= !c.m_axes.empty();
      shortest = std::min(shortest, c.k_extent());
      int64_t row_bytes = 0;  // one whole-K row of every operand
      for (const ContractionOperand& op : c.operands) {
        widest = std::max(widest, operand_bytes(ctx.graph(), op));
        row_bytes += operand_bytes(ctx.graph(), op);
      }
      whole_k_bytes = std::max(whole_k_bytes, c.k_extent() * row_bytes);
    }
    std::vector<int64_t> candidates = {0};
    for (int64_t bk : kSlabDepths)
      if (2 * bk <= shortest) candidates.push_back(bk);
    if (candidates.size() == 1) {
      ctx.skip(node, "K (" + std::to_string(shortest) + ") is shorter than two slabs of " +
                         std::to_string(kSlabDepths.front()));
      return Status::ok();
    }
    const int64_t line_depth = kLineBytes / std::max<int64_t>(widest, 1);
    const bool whole_k_fits = 2 * whole_k_bytes <= ctx.device().smem_per_block;
    const bool line_depth_fits = std::find(candidates.begin(), candidates.end(), line_depth) != candidates.end();
    const int64_t heuristic = (has_rows || !whole_k_fits) && line_depth_fits ? line_depth : 0;
    TESSERA_ASSIGN_OR_RETURN(int64_t bk, ctx.choose_int("BK", node, candidates, heuristic));
    if (bk == 0) {
      if (heuristic == 0)
        ctx.skip(node, whole_k_fits && !has_rows ? "one row of A and all of K (" + std::to_string(shortest) + ") can be staged: " +
                                          std::to_string(2 * whole_k_bytes) + " bytes for two output rows fit in " +
                                          std::to_string(ctx.device().smem_per_block)
                                    : "K (" + std::to_string(shortest) + ") is shorter than two " +
                                          std::to_string(line_depth) + "-deep slabs of one 128-byte line");
      return Status::ok();
    }
    // Last first: replacing one loop by one loop keeps the earlier contractions' positions.
    Tile rewritten = tile;
    for (auto it = contractions.rbegin(); it != contractions.rend(); ++it)
      rewritten = replace_contraction_loop(rewritten, *it, {chunked(contraction_loop(rewritten, *it), bk)});
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(Body{Stmt(std::move(rewritten))});
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_chunk_matmul_k(Registry& r) {
  r.add_pass("chunk_matmul_k", [] { return std::make_unique<ChunkMatmulKPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("chunk_matmul_k", "1.0.0", ::tessera::register_chunk_matmul_k)

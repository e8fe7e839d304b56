// cluster_reduce: splits each row of a row-wise reduction kernel across the blocks of a
// thread-block cluster (sm_90+), which combine their partial results through distributed shared
// memory. The kernel stays one kernel that reads its input once: each block keeps its share of
// the row for the epilogue (stage_inputs stages it when it fits), where split_reduce's partial and
// combine kernels read the row twice.
//
// Rewrites: a Tile kernel (axes still PARALLEL: it runs right after tileify and split_matmul_k,
// before split_reduce) whose top level holds only values (Init, Load, Assign, Select), writes, and
// loops over 0..W (the row: every top-level Loop has that extent), at least one of them a
// `# reduce` loop. With knob CLUSTER = C > 1 and S = ceil(W / C):
//     Tile(axes=(a0:R=PARALLEL)):                 Tile(axes=(a0:R=BLOCK, c:C=CLUSTER)):
//       acc0 = init(0.0)                            acc0 = init(0.0)
//       for a1 in 0..W:  # reduce            ->     for a1 in 0..S:  # reduce
//         ... x[a0, a1] ...                           ... x[a0, c * S + a1] ...
//         acc0 <- add(acc0, v)                        acc0 <- add(acc0, v)
//                                                   Combine(acc0, op=add, scope=cluster)
//       for a2 in 0..W:  # free                     for a2 in 0..S:  # free
//         y[a0, a2] = ...                             y[a0, c * S + a2] = ...
//       z[a0] = acc0                                if c == 0:
//                                                     z[a0] = acc0
// Every PARALLEL axis becomes a BLOCK axis (one row per cluster, listed innermost first, as
// launch_geometry lists them with BN = 1), and each cluster's C blocks share the row: every
// top-level loop runs the block's share [c*S, c*S + S) of it (guarded by `if c * S + i < W:` when
// C does not divide W), each accumulator a `# reduce` loop accumulates into (initialized outside
// it) is combined across the cluster right after it with its Accum op, and top-level writes are
// done by the cluster's block 0. cooperative_reduce then strides the loops over each block's
// threads (the cluster Combine includes the block's own: it adds no block Combine before one);
// materialize lowers the cluster Combine to the block's combine, one ClusterSync and a fold of the
// C blocks' totals in rank order read with DsmemLoad, so every block holds the same value.
// Knob CLUSTER (1 = off, 2, 4, 8: the portable cluster sizes, each leaving a block at least
// device.warp_size elements of the row). Asked only on devices with clusters (arch sm_90 and
// newer) for kernels of that shape whose R rows are fewer than device.sm_count (rows that give
// every SM a block gain nothing from sharing them: a split-K combine). Heuristic: with R rows below
// device.sm_count and R times the body's innermost iterations (4 bytes each) reaching 1 MB, the
// smallest C dividing W with R * C >= sm_count; when none does but 8 blocks a row busy half of the
// SMs (R * 8 >= sm_count / 2: the row read once on those, against twice on every SM by
// split_reduce's two kernels), 8; otherwise (a few rows: `x.sum()`, softmax over 4 rows) 1, and
// split_reduce spreads the work over more blocks instead.
// Accepts: Tile IR (TileOp nodes whose body is one Tile with only PARALLEL axes); skips, with the
//   reason, kernels of another shape, contractions with M or N axes (split_matmul_k's work), and
//   kernels that read their own output.
// Guarantees: every output element is written once, by the block that computed it; each
//   accumulator holds the whole row's value after its cluster Combine (sums combined in C groups,
//   so they may differ by rounding; max and min exactly); names canonical.
// Tests: tests/golden/cluster_reduce/, tests/golden/materialize/cluster_combine.txt,
//   ClusterReduceTest in tests/e2e/random_knobs_test.cpp, tests/unit/sim_cluster_test.cpp.
#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/contraction.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/row_loop.h"
#include "tessera/ir/stmt_effects.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

bool reads(const Body& body, const std::string& buffer) {
  const std::vector<std::string> read = read_buffers(body);
  return std::find(read.begin(), read.end(), buffer) != read.end();
}

constexpr int64_t kLargeKernelBytes = int64_t{1} << 20;  // the kernel report's "large work"

// Whether every accumulator of `accs` is accumulated with one op (a cluster Combine needs it).
bool one_op_each(const std::vector<OuterAccumulator>& accs) {
  return std::all_of(accs.begin(), accs.end(), [](const OuterAccumulator& a) { return a.one_op; });
}

// The row length W of a body of the accepted shape, or the reason it is not one.
struct RowShape {
  int64_t extent = 0;
  std::string why_not;
};

RowShape row_shape(const Body& body) {
  RowShape shape;
  bool reduces = false;
  for (const Stmt& s : body) {
    if (s.is<Init>() || s.is<Load>() || s.is<Assign>() || s.is<Select>() || s.is<Write>()) continue;
    const auto* loop = s.as<Loop>();
    if (loop == nullptr) {
      shape.why_not = "a top-level " + std::string(stmt_kind_name(s.kind())) + " (only values, writes and row loops are split)";
      return shape;
    }
    if (!loop->begin.is(ExprKind::Int) || loop->begin.int_value() != 0 || !loop->end.is(ExprKind::Int)) {
      shape.why_not = "a top-level loop without constant bounds from 0";
      return shape;
    }
    if (shape.extent != 0 && loop->end.int_value() != shape.extent) {
      shape.why_not = "top-level loops over different extents";
      return shape;
    }
    shape.extent = loop->end.int_value();
    reduces = reduces || loop->role == LoopRole::Reduce;
    const std::vector<OuterAccumulator> accs = outer_accumulators(*loop);
    if (loop->role != LoopRole::Reduce) {
      if (!accs.empty()) {
        shape.why_not = "a loop that is not a # reduce loop accumulates into an accumulator declared outside it";
        return shape;
      }
    } else if (!one_op_each(accs)) {
      shape.why_not = "an accumulator is accumulated with two different ops";
      return shape;
    }
  }
  if (!reduces) shape.why_not = "no top-level reduction";
  return shape;
}

// The body with each top-level loop over the block's share of the row and the cluster Combines.
Body split_rows(const Body& body, const std::string& rank, int64_t clusters, int64_t extent) {
  const int64_t share = (extent + clusters - 1) / clusters;
  Body out;
  for (const Stmt& s : body) {
    if (s.is<Write>()) {
      out.push_back(Cond{Expr::binary(ExprKind::Eq, Expr::var(rank), Expr::int_(0)), {s}, {}});
      continue;
    }
    const auto* loop = s.as<Loop>();
    if (loop == nullptr) {
      out.push_back(s);
      continue;
    }
    const Expr element = Expr::var(rank) * share + Expr::var(loop->var);
    Body inner = substitute_and_simplify(loop->body, {{loop->var, element}}, {});
    if (share * clusters != extent) inner = {Cond{element < Expr::int_(extent), std::move(inner), {}}};
    out.push_back(Loop{loop->var, Expr::int_(0), Expr::int_(share), loop->role, loop->unroll, std::move(inner)});
    if (loop->role == LoopRole::Reduce) {
      for (const OuterAccumulator& a : outer_accumulators(*loop)) out.push_back(Combine{a.acc, a.op, CombineScope::Cluster});
    }
  }
  return out;
}

class ClusterReducePass final : public TilePass {
 public:
  std::string_view name() const override { return "cluster_reduce"; }
  std::string_view summary() const override {
    return "split each row of a reduction across the blocks of a thread-block cluster (sm_90+), combined through "
           "distributed shared memory";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"CLUSTER", KnobType::Int, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}, std::nullopt,
                     "blocks of a thread-block cluster sharing each row (1 = one block per row)"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override {
    const DeviceDesc& device = ctx.device();
    if (!device.features.clusters) return Status::ok();  // no clusters (before sm_90): nothing to say
    if (!std::all_of(tile.axes.begin(), tile.axes.end(), [](const TileAxis& a) { return a.binding == AxisBinding::Parallel; }))
      return Status::ok();  // bound already (another pass's schedule)
    for (const Contraction& c : find_contractions(tile))
      if (!c.m_axes.empty() || !c.n_axes.empty()) return Status::ok();  // split_matmul_k's work
    const RowShape shape = row_shape(tile.body);
    if (shape.why_not == "no top-level reduction") return Status::ok();
    if (!shape.why_not.empty()) {
      ctx.skip(node, shape.why_not);
      return Status::ok();
    }
    if (reads(tile.body, node.id())) {
      ctx.skip(node, "the kernel reads its own output, which another block of the cluster may write");
      return Status::ok();
    }

    int64_t rows = 1;
    for (const TileAxis& a : tile.axes) rows *= a.extent;
    if (rows >= device.sm_count) {  // the rows give every SM a block: splitting them only adds exchanges
      ctx.skip(node, "its " + std::to_string(rows) + " rows fill the " + std::to_string(device.sm_count) + " SMs");
      return Status::ok();
    }
    std::vector<int64_t> candidates;
    for (int64_t c : {1, 2, 4, 8})
      if (c == 1 || shape.extent / c >= device.warp_size) candidates.push_back(c);  // a warp's elements a block
    if (candidates.size() == 1) {
      ctx.skip(node, "its rows of " + std::to_string(shape.extent) + " elements are too short to share");
      return Status::ok();
    }
    int64_t heuristic = 1;
    const bool large = rows < device.sm_count && rows * innermost_iterations(tile.body) * 4 >= kLargeKernelBytes;
    for (int64_t c : candidates)
      if (large && heuristic == 1 && c > 1 && shape.extent % c == 0 && rows * c >= device.sm_count) heuristic = c;
    // Too few rows to fill the device even with 8 blocks a row, but enough for half of it: one
    // read of the row on 8 blocks a row, rather than two (split_reduce's partial and combine
    // kernels) on every SM.
    if (large && heuristic == 1 && candidates.back() == 8 && shape.extent % 8 == 0 && 2 * rows * 8 >= device.sm_count)
      heuristic = 8;
    TESSERA_ASSIGN_OR_RETURN(int64_t clusters, ctx.choose_int("CLUSTER", node, candidates, heuristic));
    if (clusters == 1) {
      ctx.skip(node, "no cluster of up to 8 blocks a row busies half the SMs, or the work is small (under 1 MB)");
      return Status::ok();
    }

    std::set<std::string> taken = bound_names(kernel.body);
    for (const TileAxis& a : tile.axes) taken.insert(a.name);
    const std::string rank = fresh_name("c", taken);
    Tile out;
    for (auto it = tile.axes.rbegin(); it != tile.axes.rend(); ++it)
      out.axes.push_back(TileAxis{it->name, it->extent, AxisBinding::Block});
    out.axes.push_back(TileAxis{rank, clusters, AxisBinding::Cluster});
    out.body = split_rows(tile.body, rank, clusters, shape.extent);
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(Body{Stmt(std::move(out))});
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_cluster_reduce(Registry& r) {
  r.add_pass("cluster_reduce", [] { return std::make_unique<ClusterReducePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("cluster_reduce", "1.0.0", ::tessera::register_cluster_reduce)

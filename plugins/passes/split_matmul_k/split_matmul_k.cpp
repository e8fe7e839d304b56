// split_matmul_k: splits a contraction's K across blocks when its outputs alone leave SMs idle.
//
// Rewrites: a Tile kernel `y` (axes still PARALLEL: it runs before launch_geometry) whose body is
//     <prologue>  for k in b..e:  # reduce  <step(k)>  <epilogue>
// with one contraction (tessera/ir/contraction.h) whose accumulators acc_0..acc_{A-1} start at 0
// and sum, into two kernels (the pass adds a node, so it is a graph pass, not a kernel pass):
//   - `y_splitk`, the partial sums, a new node before `y` of shape (A, S, extents of y's axes):
//         Tile(axes=(s:S, <y's axes>)):
//           <prologue>
//           for k in 0..(e-b)/S:  # reduce      <step(b + s * (e-b)/S + k)>
//           y_splitk[i, s, <axes>] = acc_i      (for each accumulator)
//   - `y` itself, now the combine and the epilogue:
//         Tile(axes=(<y's axes>)):
//           acc_i = init(0.0);  for s in 0..S:  # reduce   acc_i <- add(acc_i, load y_splitk[i, s, <axes>])
//           <epilogue>
// The epilogue (bias, activation, residual, the cast to y's dtype) runs once, after the full sum:
// it need not distribute over the sum. Partial sums keep the accumulator's dtype. Prologue loads,
// assignments and selects the epilogue reads (a residual loaded before the K loop) are computed
// again in the combine kernel, before the epilogue.
// Why: a decode step's projection (M = 1) has only N outputs; one block per few hundred outputs
// leaves most of a 132-SM GPU idle while the weights, which dominate its time, stream through a
// few SMs. Split S ways, S times as many blocks share the stream.
// Accepts: Tile IR. Applies to TileOp kernels whose Tile axes are all PARALLEL and whose Tile body
//   holds one contraction at its top level; skips (with the reason) a contraction whose
//   accumulators do not start at 0 or do not sum, whose epilogue reads a prologue value computed
//   by a loop or a condition (the combine kernel could not compute it again cheaply), or whose
//   accumulators are read before the epilogue.
// Knob SPLITK (1 = off, else 2..128, powers of two dividing e-b and leaving at least 16 steps per
//   split). Asked only for kernels with a contraction. Heuristic: estimate the blocks the outputs
//   alone give (one block per 256 outputs, launch_geometry's largest block; one per output for a
//   GEMV that streams rows of B, streams_rows_of_b in tessera/ir/contraction.h); when that is below
//   device.sm_count, K is at least 512 and the operands hold 1 MB or more, the smallest S that
//   gives every SM a block while each split keeps at least 16 steps of K (the partial sums,
//   2 * S * 4 bytes per output written and read back, stay at most half the K * 2 bytes of bf16
//   weights per output); else 1.
// Guarantees: every output sums the same products, in S groups in k order added in s order (so
//   results may differ from the unsplit kernel by rounding); kernel names: the partial kernel
//   keeps y's kernel name, the combine kernel is named <name>_combine. Names canonical.
// Tests: tests/golden/split_matmul_k/, and the matmul corpus under random knobs
//   (tests/e2e/random_knobs_test.cpp).
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/contraction.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/split_kernel.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/kernel_report.h"

namespace tessera {
namespace {

const std::vector<int64_t> kSplits = {2, 4, 8, 16, 32, 64, 128};
constexpr int64_t kOutputsPerBlock = 256;    // launch_geometry's largest block (BN * BM)
constexpr int64_t kMinStepsPerSplit = 16;    // below this a split is all overhead
constexpr int64_t kHeuristicMinK = 512;      // shorter K: the partial sums cost too much
constexpr int64_t kHeuristicMinSplitK = 16;

bool is_zero(const Expr& e) {
  return (e.is(ExprKind::Float) && e.float_value() == 0.0) || (e.is(ExprKind::Int) && e.int_value() == 0);
}

// What the rewrite needs, or why it does not apply.
struct SplitPlan {
  Contraction c;
  Body recomputed;  // prologue statements the epilogue reads, computed again by the combine kernel
  DType acc_dtype = DType::F32;
  std::string why_not;
};

SplitPlan plan_split(const Tile& tile) {
  SplitPlan p;
  for (const TileAxis& a : tile.axes)
    if (a.binding != AxisBinding::Parallel) {
      p.why_not = "its axes are bound already (split_matmul_k runs before launch_geometry)";
      return p;
    }
  std::vector<Contraction> cs = find_contractions(tile);
  if (cs.size() != 1 || !cs[0].guards.empty()) {
    p.why_not = cs.empty() ? "no contraction" : "not one contraction at the top of the Tile";
    return p;
  }
  p.c = cs[0];
  if (p.c.chunked()) {
    p.why_not = "K is cut into slabs already (split_matmul_k runs before chunk_matmul_k)";
    return p;
  }
  const Body& body = tile.body;
  const Loop& k_loop = *body[p.c.index].as<Loop>();
  std::set<std::string> accs(p.c.accumulators.begin(), p.c.accumulators.end());
  bool first = true;
  for (size_t i = 0; i < p.c.index; ++i) {
    const auto* init = body[i].as<Init>();
    if (init == nullptr || !accs.count(init->acc)) {
      for (const std::string& used : own_used_names(body[i]))
        if (accs.count(used)) p.why_not = "an accumulator is read before the K loop ends";
      continue;
    }
    if (!is_zero(init->value) || !init->type.is_scalar()) {
      p.why_not = init->acc + " does not start at 0";
      return p;
    }
    if (!first && init->type.dtype != p.acc_dtype) {
      p.why_not = "the accumulators differ in dtype";
      return p;
    }
    p.acc_dtype = init->type.dtype;
    first = false;
  }
  if (!p.why_not.empty()) return p;
  for (const Stmt& s : k_loop.body) {
    if (const auto* acc = s.as<Accum>()) {
      if (acc->op != CombineFn::Add) {
        p.why_not = acc->acc + " is combined with " + std::string(name_of(acc->op)) + ", not summed";
        return p;
      }
      continue;
    }
    for (const std::string& used : own_used_names(s))
      if (accs.count(used)) {
        p.why_not = "an accumulator is read inside the K loop";
        return p;
      }
  }
  // The epilogue may read the accumulators, the axes, what it computes itself, and prologue values
  // the combine kernel can compute again: loads, assignments and selects (a residual, a scale),
  // with what they read in turn.
  Body epilogue(body.begin() + static_cast<std::ptrdiff_t>(p.c.index) + 1, body.end());
  std::set<std::string> needed = used_names(epilogue);
  for (const std::string& d : bound_names(epilogue)) needed.erase(d);
  for (size_t i = p.c.index; i-- > 0;) {
    const Stmt& st = body[i];
    if (st.as<Init>() != nullptr) continue;
    bool defines_needed = false;
    for (const std::string& d : own_bound_names(st)) defines_needed = defines_needed || needed.count(d) > 0;
    if (!defines_needed) continue;
    if (st.as<Load>() == nullptr && st.as<Assign>() == nullptr && st.as<Select>() == nullptr) {
      p.why_not = "the epilogue reads a value the prologue computes with " + std::string(stmt_kind_name(st.kind()));
      return p;
    }
    p.recomputed.insert(p.recomputed.begin(), st);
    for (const std::string& used : own_used_names(st)) needed.insert(used);
  }
  for (const std::string& a : accs) needed.erase(a);
  for (const TileAxis& a : tile.axes) needed.erase(a.name);
  for (const Stmt& st : p.recomputed)
    for (const std::string& d : own_bound_names(st)) needed.erase(d);
  if (!needed.empty()) p.why_not = "the epilogue reads " + *needed.begin() + ", computed before the K loop";
  return p;
}

ExprList partial_index(const Tile& tile, size_t acc, const Expr& split) {
  ExprList index = {Expr::int_(static_cast<int64_t>(acc)), split};
  for (const TileAxis& a : tile.axes) index.push_back(Expr::var(a.name));
  return index;
}

// The partial-sum kernel: the prologue and this split's share of K, writing every accumulator.
Tile partial_tile(const Tile& tile, const SplitPlan& p, int64_t splits, const std::string& partial) {
  const Contraction& c = p.c;
  const Loop& k_loop = *tile.body[c.index].as<Loop>();
  const int64_t per_split = c.k_extent() / splits;
  const std::string s = "split", k = k_loop.var + "_part";  // canonicalize_names renames them
  Tile out;
  out.axes.push_back(TileAxis{s, splits, AxisBinding::Parallel});
  out.axes.insert(out.axes.end(), tile.axes.begin(), tile.axes.end());
  out.body.assign(tile.body.begin(), tile.body.begin() + static_cast<std::ptrdiff_t>(c.index));
  RangeMap ranges{{s, Interval{0, splits - 1}}, {k, Interval{0, per_split - 1}}};
  const Expr kk = simplify(Expr::int_(c.k_begin) + Expr::var(s) * per_split + Expr::var(k), ranges);
  Loop part{k, Expr::int_(0), Expr::int_(per_split), LoopRole::Reduce, 0,
            substitute_and_simplify(k_loop.body, {{k_loop.var, kk}}, ranges)};
  out.body.push_back(std::move(part));
  for (size_t i = 0; i < c.accumulators.size(); ++i)
    out.body.push_back(Write{partial, partial_index(tile, i, Expr::var(s)), Expr::value(c.accumulators[i])});
  return out;
}

// The combine kernel: sums the splits, then runs the epilogue.
Tile combine_tile(const Tile& tile, const SplitPlan& p, int64_t splits, const std::string& partial) {
  const Contraction& c = p.c;
  Tile out;
  out.axes = tile.axes;
  const std::string s = "split";
  Body sum;
  for (size_t i = 0; i < c.accumulators.size(); ++i) {
    out.body.push_back(Init{c.accumulators[i], Expr::float_(0.0), ValueType::scalar(p.acc_dtype)});
    const std::string v = "partial_" + std::to_string(i);
    sum.push_back(Load{v, partial, partial_index(tile, i, Expr::var(s)), ValueType::scalar(p.acc_dtype)});
    sum.push_back(Accum{c.accumulators[i], CombineFn::Add, Expr::value(v)});
  }
  out.body.push_back(Loop{s, Expr::int_(0), Expr::int_(splits), LoopRole::Reduce, 0, std::move(sum)});
  out.body.insert(out.body.end(), p.recomputed.begin(), p.recomputed.end());
  out.body.insert(out.body.end(), tile.body.begin() + static_cast<std::ptrdiff_t>(c.index) + 1, tile.body.end());
  return out;
}

class SplitMatmulKPass final : public Pass {
 public:
  std::string_view name() const override { return "split_matmul_k"; }
  std::string_view summary() const override {
    return "split a contraction's K across blocks when its outputs leave SMs idle (adds a combine kernel)";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    std::vector<AttrValue> candidates = {int64_t{1}};
    for (int64_t s : kSplits) candidates.push_back(s);
    return {KnobSpec{"SPLITK", KnobType::Int, candidates, std::nullopt,
                     "blocks that share one output's K (1 = do not split)"}};
  }

  Status run(Graph& g, PassContext& ctx) override {
    std::vector<std::string> ids;
    for (const Node* n : g.nodes())
      if (n->op_as<TileOp>() != nullptr) ids.push_back(n->id());
    for (const std::string& id : ids) TESSERA_TRY(split_node(g, *g.find(id), ctx));
    return Status::ok();
  }

 private:
  static Status split_node(Graph& g, Node& n, PassContext& ctx) {
    const auto& kernel = *n.op_as<TileOp>();
    const Tile* tile = kernel.tile();
    if (tile == nullptr) return ctx.error_at(n, "a Tile IR kernel body must be exactly one Tile statement");
    if (find_contractions(*tile).empty()) return Status::ok();  // not a matmul: nothing to say
    SplitPlan p = plan_split(*tile);
    if (!p.why_not.empty()) {
      ctx.skip(n, p.why_not);
      return Status::ok();
    }
    const int64_t k = p.c.k_extent();
    std::vector<int64_t> candidates = {1};
    for (int64_t s : kSplits)
      if (k % s == 0 && k / s >= kMinStepsPerSplit) candidates.push_back(s);
    if (candidates.size() == 1) {
      ctx.skip(n, "K (" + std::to_string(k) + ") has no split into parts of " + std::to_string(kMinStepsPerSplit) +
                      " steps or more");
      return Status::ok();
    }
    int64_t outputs = 1;
    for (const TileAxis& a : tile->axes) outputs *= a.extent;
    // A GEMV streaming rows of B gets a block per output (launch_geometry's BN = 1).
    const int64_t blocks = streams_rows_of_b(p.c) ? outputs : (outputs + kOutputsPerBlock - 1) / kOutputsPerBlock;
    const int64_t sms = ctx.device().sm_count;
    // The operands' bytes, each read once: a kernel that moves less than 1 MB is over before a
    // second kernel's launch would pay off.
    int64_t operand_bytes = 0;
    for (const ContractionOperand& o : p.c.operands)
      if (const Node* buffer = g.find(o.buffer))
        operand_bytes += num_elements(buffer->type.shape) * dtype_bytes(buffer->type.dtype);
    int64_t heuristic = 1;
    if (blocks < sms && k >= kHeuristicMinK && operand_bytes >= kLargeKernelBytes)
      for (int64_t s : candidates) {
        if (s == 1 || k / s < kHeuristicMinSplitK) continue;
        heuristic = s;
        if (blocks * s >= sms) break;  // ascending: the first that fills the SMs
      }
    TESSERA_ASSIGN_OR_RETURN(int64_t splits, ctx.choose_int("SPLITK", n, candidates, heuristic));
    if (splits == 1) {
      if (heuristic == 1)
        ctx.skip(n, blocks >= sms ? "its " + std::to_string(outputs) + " outputs fill the " + std::to_string(sms) +
                                        " SMs without a split"
                                  : "K (" + std::to_string(k) + ") is too short, or the operands too small, to split profitably");
      return Status::ok();
    }

    const std::string partial = g.unique_id(n.id() + "_splitk");
    Tile part = partial_tile(*tile, p, splits, partial);
    Tile combine = combine_tile(*tile, p, splits, partial);

    std::vector<int64_t> partial_shape = {static_cast<int64_t>(p.c.accumulators.size()), splits};
    for (const TileAxis& a : tile->axes) partial_shape.push_back(a.extent);
    return split_tile_kernel(g, n, partial, std::move(part),
                             TensorType{Shape(partial_shape.begin(), partial_shape.end()), p.acc_dtype}, std::move(combine));
  }
};

void register_split_matmul_k(Registry& r) {
  r.add_pass("split_matmul_k", [] { return std::make_unique<SplitMatmulKPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("split_matmul_k", "1.0.0", ::tessera::register_split_matmul_k)

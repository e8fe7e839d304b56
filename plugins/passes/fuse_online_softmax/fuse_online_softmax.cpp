// fuse_online_softmax: merges a row's max pass and its sum-of-exp pass into one pass (the online
// softmax normalizer), so a row that is not kept on chip is read from memory once less.
//
// Rewrites: in the body of a Tile (and of the `if`s in it), four consecutive statements
//     R1 over the row:  ... y = f(loads);  m <- max(m, y)
//     Combine(m, op=max)
//     R2 over the row:  ... y' = f(loads); d = sub(y', m); e = exp(d); s <- add(s, e)
//     Combine(s, op=add)
// where R1 and R2 are the same row loop (a `# reduce` StridedLoop, or chunk_reduce's `# reduce`
// chunk Loop holding exactly one such StridedLoop; tessera/ir/row_loop.h) with the same
// statements before the accumulation (equal once canonically named), `m = init(-inf)` and
// `s = init(0.0)` stand earlier in the same body with nothing between reading them, and every load
// of the loop reads a graph input of the kernel. They become one loop in which each thread keeps its
// running max and its sum relative to it, then the block combines the maxima and rescales each
// thread's sum to the block's:
//     R1 over the row:  ... y = f(loads)
//       mn = maximum(m, y)
//       kept = eq(m, mn);  r = where(kept, 1.0, exp(sub(m, mn)));  s <- mul(s, r)
//       masked = eq(y, -inf);  t = where(masked, 0.0, exp(sub(y, mn)));  s <- add(s, t)
//       m <- max(m, y)
//     mt = identity(m)                      # the thread's own max, before the block's
//     Combine(m, op=max)
//     s <- mul(s, exp(sub(mt, m)))
//     Combine(s, op=add)
// A thread that runs a whole row alone (launch_geometry's thread-per-row kernels: two serial
// `# reduce` Loops, no Combine) gets the same merged loop and nothing after it.
// Accumulators are read inside the loop that updates them (the running max), and `mt` is a value
// copy of one: the verifier, materialize, the simulator and the CUDA emitter treat an accumulator
// as a per-thread variable, and hoist_loop_invariants and eliminate_common_subexpressions treat
// an Accum or Combine as a change of it, so neither moves these reads.
// Infinities: in the loop the guards keep -inf inputs from making NaN (a row whose first elements
// are masked: -inf - -inf); after it the rescale is left unguarded on purpose: exp(mt - m) is NaN
// only when the block's max m is infinite and equal to mt, which is exactly when the two-pass kernel's
// sum holds exp(-inf - -inf) or exp(inf - inf) = NaN (a fully masked row, a row holding +inf); a
// thread whose max is -inf while the block's is finite (no element of the row, or only masked
// ones) has s = 0 and rescales it by exp(-inf) = 0. So s and m end as the two-pass kernel's, for
// every input, up to the rounding of a different summation order.
// Where it pays: the loads must read a graph buffer, not a shared-memory slab. The default pipeline
//   runs this pass right after stage_inputs, which stages a row that fits in shared memory (then
//   the second read is cheap and the kernel is left alone, with a skip saying so) and leaves long,
//   chunked or unstaged rows reading global memory (then the max pass and the sum pass each read
//   the row: merging them saves one of the three reads of softmax and log_softmax). It must also
//   run after chunk_reduce, whose chunk loops it accepts. The passes after it see ordinary loops.
//   split_reduce's partial kernels (the same two passes over a split of the row) match as well; its
//   combine kernels (which rescale loaded partial sums) do not, and neither does logsumexp, whose
//   max is a kernel of its own.
// Knob ONLINE (bool). Heuristic: true. Asked only for kernels holding such a pair.
// Accepts: Tile IR (TileOp nodes whose body is one Tile); other nodes are left alone.
// Guarantees: every statement after the pair reads the same m and s (up to rounding); the row is
//   loaded once where it was loaded twice; only existing statement kinds are used; names canonical.
// Tests: tests/golden/fuse_online_softmax/, OnlineSoftmaxTest in tests/e2e/random_knobs_test.cpp.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/row_loop.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

bool names(const Expr& e, const std::string& name) { return e.is_name() && e.name() == name; }

// One max pass + sum-of-exp pass starting at `position` of a body.
struct SoftmaxPair {
  size_t position = 0;
  size_t length = 0;  // 4 statements for shared loops (each with its Combine), 2 for serial ones
  bool shared = false;
  std::string max_acc, sum_acc;
  Expr row_value;  // y: what the max pass accumulates
  ValueType type;  // the accumulators' type
};

class PairFinder {
 public:
  explicit PairFinder(const Node& node) : node_(node) {}

  // The pair starting at `body[i]`, or nullopt. Notes in staged() a pair that matches but whose
  // loads read something other than a graph input (a shared-memory slab).
  std::optional<SoftmaxPair> at(const Body& body, size_t i) {
    const std::optional<RowLoop> max_loop = row_loop(body[i]);
    if (!max_loop) return std::nullopt;
    const size_t length = max_loop->shared ? 4 : 2;
    const size_t sum_at = length / 2;
    if (i + length > body.size()) return std::nullopt;
    const std::optional<RowLoop> sum_loop = row_loop(body[i + sum_at]);
    if (!sum_loop || sum_loop->shared != max_loop->shared) return std::nullopt;

    // The max pass: prefix, then `m <- max(m, y)`.
    const Body& mb = *max_loop->body;
    if (mb.empty()) return std::nullopt;
    const auto* max_accum = mb.back().as<Accum>();
    if (max_accum == nullptr || max_accum->op != CombineFn::Max || !max_accum->index.empty() ||
        !max_accum->value.is(ExprKind::Value))
      return std::nullopt;
    const std::string& m = max_accum->acc;

    // The sum pass: prefix', then `d = sub(y', m); e = exp(d); s <- add(s, e)`.
    const Body& sb = *sum_loop->body;
    if (sb.size() < 3) return std::nullopt;
    const auto* sub = sb[sb.size() - 3].as<Assign>();
    const auto* exp = sb[sb.size() - 2].as<Assign>();
    const auto* sum_accum = sb.back().as<Accum>();
    if (sub == nullptr || exp == nullptr || sum_accum == nullptr) return std::nullopt;
    if (sub->op != ElementwiseFn::Sub || sub->args.size() != 2 || !names(sub->args[1], m)) return std::nullopt;
    if (exp->op != ElementwiseFn::Exp || exp->args.size() != 1 || !names(exp->args[0], sub->dst)) return std::nullopt;
    const std::string& s = sum_accum->acc;
    if (s == m || sum_accum->op != CombineFn::Add || !sum_accum->index.empty() || !names(sum_accum->value, exp->dst))
      return std::nullopt;

    // Shared loops: each pass's Combine follows it.
    if (max_loop->shared) {
      const auto* max_combine = body[i + 1].as<Combine>();
      const auto* sum_combine = body[i + 3].as<Combine>();
      if (max_combine == nullptr || sum_combine == nullptr || max_combine->acc != m || sum_combine->acc != s ||
          max_combine->op != CombineFn::Max || sum_combine->op != CombineFn::Add ||
          max_combine->scope != CombineScope::Block || sum_combine->scope != CombineScope::Block)
        return std::nullopt;
    }

    const Body prefix(mb.begin(), mb.end() - 1);
    if (!computes_values_only(prefix) || reads_any(prefix, {m, s})) return std::nullopt;
    // The same row loop with the same values before the accumulation: the sum pass with its tail
    // replaced by the max pass's accumulation must be the max pass, up to names.
    Body sum_as_max(sb.begin(), sb.end() - 3);
    sum_as_max.push_back(Accum{m, CombineFn::Max, sub->args[0], {}});
    if (!structurally_equal(canonicalize_names(Body{body[i]}),
                            canonicalize_names(Body{with_row_body(body[i + sum_at], std::move(sum_as_max))})))
      return std::nullopt;

    // Both accumulators start at the identities and nothing reads them before the pair.
    std::optional<ValueType> m_type, s_type;
    for (size_t j = 0; j < i; ++j) {
      if (const auto* init = body[j].as<Init>(); init != nullptr && (init->acc == m || init->acc == s)) {
        const bool is_max = init->acc == m;
        const double want = is_max ? -INFINITY : 0.0;
        if (!init->value.is(ExprKind::Float) || init->value.float_value() != want || !init->type.is_scalar())
          return std::nullopt;
        (is_max ? m_type : s_type) = init->type;
        continue;
      }
      if (reads_any(Body{body[j]}, {m, s})) return std::nullopt;
    }
    if (!m_type || !s_type || !(*m_type == *s_type) || !is_float(m_type->dtype)) return std::nullopt;

    if (!loads_only_from(prefix, node_.inputs)) {
      staged_ = true;
      return std::nullopt;
    }
    return SoftmaxPair{i, length, max_loop->shared, m, s, max_accum->value, *m_type};
  }

  bool staged() const { return staged_; }

 private:
  static bool is_float(DType t) {
    switch (t) {
      case DType::F32: case DType::F16: case DType::BF16: case DType::F64: return true;
      case DType::I32: case DType::I64: case DType::Bool: return false;
    }
    return false;
  }
  const Node& node_;
  bool staged_ = false;
};

// The statements replacing the pair (see the header comment).
Body online_statements(const SoftmaxPair& p, const Stmt& max_loop, std::set<std::string>& taken) {
  const ValueType t = p.type;
  const ValueType flag = ValueType::scalar(DType::Bool);
  const Expr m = Expr::value(p.max_acc);
  const Expr& y = p.row_value;
  auto assign = [&](const std::string& base, ElementwiseFn fn, ExprList args, ValueType type, Body& out) {
    const std::string dst = fresh_name(base, taken);
    out.push_back(Assign{dst, fn, std::move(args), type});
    return Expr::value(dst);
  };

  const Body& per_element = *row_loop(max_loop)->body;
  Body loop_body(per_element.begin(), per_element.end() - 1);  // the row's values, without `m <- max(m, y)`
  const Expr mn = assign("online_max", ElementwiseFn::Maximum, {m, y}, t, loop_body);
  const Expr kept = assign("online_kept", ElementwiseFn::Eq, {m, mn}, flag, loop_body);
  const Expr drop = assign("online_drop", ElementwiseFn::Sub, {m, mn}, t, loop_body);
  const Expr drop_exp = assign("online_drop_exp", ElementwiseFn::Exp, {drop}, t, loop_body);
  const Expr rescale = assign("online_rescale", ElementwiseFn::Where, {kept, Expr::float_(1.0), drop_exp}, t, loop_body);
  loop_body.push_back(Accum{p.sum_acc, CombineFn::Mul, rescale, {}});
  const Expr shifted = assign("online_shifted", ElementwiseFn::Sub, {y, mn}, t, loop_body);
  const Expr term_exp = assign("online_term_exp", ElementwiseFn::Exp, {shifted}, t, loop_body);
  const Expr masked = assign("online_masked", ElementwiseFn::Eq, {y, Expr::float_(-INFINITY)}, flag, loop_body);
  const Expr term = assign("online_term", ElementwiseFn::Where, {masked, Expr::float_(0.0), term_exp}, t, loop_body);
  loop_body.push_back(Accum{p.sum_acc, CombineFn::Add, term, {}});
  loop_body.push_back(Accum{p.max_acc, CombineFn::Max, y, {}});

  Body out;
  out.push_back(with_row_body(max_loop, std::move(loop_body)));
  if (!p.shared) return out;  // one thread ran the whole row: its m and s are the row's
  const Expr thread_max = assign("online_thread_max", ElementwiseFn::Identity, {m}, t, out);
  out.push_back(Combine{p.max_acc, CombineFn::Max, CombineScope::Block});
  const Expr to_block = assign("online_to_block", ElementwiseFn::Sub, {thread_max, m}, t, out);
  const Expr to_block_exp = assign("online_to_block_exp", ElementwiseFn::Exp, {to_block}, t, out);
  out.push_back(Accum{p.sum_acc, CombineFn::Mul, to_block_exp, {}});
  out.push_back(Combine{p.sum_acc, CombineFn::Add, CombineScope::Block});
  return out;
}

// The pairs of `body` (and of the `if`s in it), rewritten when `taken` is given (inventing names
// outside it), else left as they are; counted in `found`.
Body rewrite_pairs(const Body& body, PairFinder& finder, std::set<std::string>* taken, int& found) {
  return rewrite_statement_runs(body, [&](const Body& b, size_t i) -> std::optional<StatementRun> {
    std::optional<SoftmaxPair> p = finder.at(b, i);
    if (!p) return std::nullopt;
    ++found;
    if (taken != nullptr) return StatementRun{p->length, online_statements(*p, b[i], *taken)};
    return StatementRun{p->length, Body(b.begin() + static_cast<std::ptrdiff_t>(i),
                                        b.begin() + static_cast<std::ptrdiff_t>(i + p->length))};
  });
}

class FuseOnlineSoftmaxPass final : public TilePass {
 public:
  std::string_view name() const override { return "fuse_online_softmax"; }
  std::string_view summary() const override {
    return "merge a row's max pass and sum-of-exp pass into one online pass when the row is read from memory";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"ONLINE", KnobType::Bool, {}, std::nullopt,
                     "merge the max pass and the sum-of-exp pass of a row read from memory"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override {
    PairFinder finder(node);
    int found = 0;
    rewrite_pairs(tile.body, finder, nullptr, found);
    if (found == 0) {
      ctx.skip(node, finder.staged() ? "the row is staged in shared memory: its second read is cheap"
                                     : "no max pass followed by a sum-of-exp pass over the same row");
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(bool online, ctx.choose_bool("ONLINE", node, true));
    if (!online) return Status::ok();

    std::set<std::string> taken = bound_names(kernel.body);
    Tile rewritten = tile;
    rewritten.body = rewrite_pairs(tile.body, finder, &taken, found);
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(Body{Stmt(std::move(rewritten))});
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_fuse_online_softmax(Registry& r) {
  r.add_pass("fuse_online_softmax", [] { return std::make_unique<FuseOnlineSoftmaxPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("fuse_online_softmax", "1.0.0", ::tessera::register_fuse_online_softmax)

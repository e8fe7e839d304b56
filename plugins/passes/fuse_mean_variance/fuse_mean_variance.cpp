// fuse_mean_variance: merges a row's sum pass and its squared-deviation pass (the mean and the
// variance of LayerNorm, torch.var, torch.std) into one Welford pass, so a row that is not kept on
// chip is read from memory once less.
//
// Rewrites: in the body of a Tile (and of the `if`s in it), the statements
//     R1 over the row:  ... y = f(loads);  s <- add(s, y)
//     Combine(s, op=add)
//     V                                   # plain values (the mean m = mul(s, 1/n), ...)
//     R2 over the row:  ... y' = f(loads); d = sub(y', m); q2 = mul(d, d); q <- add(q, q2)
//                       (or q2 = pow(d, 2.0), as `(x - m)**2` traces)
//     Combine(q, op=add)
// where R1 and R2 are the same row loop (tessera/ir/row_loop.h) with the same statements before
// the accumulation (equal once canonically named), m is loop-invariant and does not read q,
// `s = init(0.0)` and `q = init(0.0)` stand earlier in the same body with nothing between reading
// them, and every load of the loop reads a graph input of the kernel. They become one pass that
// keeps the sum as it was and adds Welford's update of the squared deviations, over y shifted by
// the thread's first value c, with k the thread's count and mu its running mean of y - c:
//     k = init(0.0);  c = init(0.0);  mu = init(0.0)
//     R1 over the row:  ... y = f(loads);  s <- add(s, y)
//       k <- add(k, 1.0);  c <- add(c, where(eq(k, 1.0), y, 0.0))
//       e = sub(y, c);  d = sub(e, mu);  mu <- add(mu, div(d, k));  q <- add(q, mul(d, sub(e, mu)))
//     Combine(s, op=add)                                 # the row's sum, as before
//     V                                                  # m from it, as before
//     dm = add(mu, sub(c, m));  q <- add(q, mul(k, mul(dm, dm)))
//     Combine(q, op=add)                                 # the row's sum((y - m)^2), as before
// since a thread's sum((y - m)^2) = sum((e - mu)^2) + k (mu + c - m)^2 for any m (Chan's
// combination of partial variances), and that is linear in the threads' partials, so each thread
// adds its own before the Combine (materialize lowers no accumulation after an accumulator's
// Combine). Every term added to q is non-negative, so nothing cancels, and a constant row's
// variance is exactly 0. Welford's q is insensitive to small errors of its running mean (they
// enter squared), and the shift keeps that mean small against the row's spread where the row's
// mean is large (a row of 1000 + noise keeps its precision, where sum(y^2) - k m^2 is useless in
// float); the row's mean itself still comes from the plain sum s, as precise as before. The count
// k is accumulated, not derived from loop bounds, so guarded and split rows count exactly the
// elements each thread visits; a thread that visits none adds 0.
// A thread that runs a whole row alone (serial `# reduce` Loops, no Combine) gets the same loop and
// fix-ups. In bf16 and f16 programs whose deviations and squares are rounded to the storage type
// (casts between the operations, as eager rounds them: torch.var) nothing matches, and the kernel
// keeps its two passes; LayerNorm computes its statistics in f32 (as PyTorch's kernel does) and
// merges in every dtype.
// Where it pays: the loads must read a graph buffer, not a shared-memory slab (the default
//   pipeline runs this pass after stage_inputs, which stages a row that fits; then the second read
//   is cheap and the kernel is left alone, with a skip saying so). It must also run after
//   chunk_reduce, whose chunk loops it accepts.
// Knob ONE_PASS (bool). Heuristic: true. Asked only for kernels holding such a pair.
// Accepts: Tile IR (TileOp nodes whose body is one Tile) with f32 or f64 accumulators; other nodes
//   and accumulator types are left alone.
// Guarantees: every statement after the pair reads the same s (the same operations in the same
//   order) and the same q up to rounding; the row is loaded once where it was loaded twice; only existing statement
//   kinds are used; names canonical.
// Tests: tests/golden/fuse_mean_variance/, MeanVarianceTest in tests/e2e/random_knobs_test.cpp.
#include <algorithm>
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

// One sum pass + squared-deviation pass starting at `position` of a body.
struct VariancePair {
  size_t position = 0;
  size_t length = 0;         // statements replaced, from the sum loop to the last Combine
  size_t between_first = 0;  // the plain values between the two passes: [between_first, between_end)
  size_t between_end = 0;
  bool shared = false;
  std::string sum_acc, square_acc;
  Expr row_value;  // y: what the sum pass accumulates
  Expr center;     // m: what the second pass subtracts
  ValueType type;  // the accumulators' type
};

class PairFinder {
 public:
  explicit PairFinder(const Node& node) : node_(node) {}

  // The pair starting at `body[i]`, or nullopt. Notes in staged() a pair that matches but whose
  // loads read something other than a graph input (a shared-memory slab), and in wrong_type() one
  // whose accumulators are not f32 or f64.
  std::optional<VariancePair> at(const Body& body, size_t i) {
    const std::optional<RowLoop> sum_loop = row_loop(body[i]);
    if (!sum_loop) return std::nullopt;
    const Body& sb = *sum_loop->body;
    if (sb.empty()) return std::nullopt;
    const auto* sum_accum = sb.back().as<Accum>();
    if (sum_accum == nullptr || sum_accum->op != CombineFn::Add || !sum_accum->index.empty() ||
        !sum_accum->value.is(ExprKind::Value))
      return std::nullopt;
    const std::string& s = sum_accum->acc;

    size_t j = i + 1;
    if (sum_loop->shared) {
      if (j >= body.size() || !is_block_sum(body[j], s)) return std::nullopt;
      ++j;
    }
    const size_t between_first = j;
    while (j < body.size() && (body[j].is<Assign>() || body[j].is<Select>())) ++j;
    const size_t between_end = j;
    if (j >= body.size()) return std::nullopt;
    const std::optional<RowLoop> square_loop = row_loop(body[j]);
    if (!square_loop || square_loop->shared != sum_loop->shared) return std::nullopt;
    const size_t length = j - i + (sum_loop->shared ? 2 : 1);
    if (i + length > body.size()) return std::nullopt;

    // The second pass: prefix', then `d = sub(y', m); q2 = mul(d, d) | pow(d, 2.0); q <- add(q, q2)`.
    const Body& qb = *square_loop->body;
    if (qb.size() < 3) return std::nullopt;
    const auto* sub = qb[qb.size() - 3].as<Assign>();
    const auto* square = qb[qb.size() - 2].as<Assign>();
    const auto* square_accum = qb.back().as<Accum>();
    if (sub == nullptr || square == nullptr || square_accum == nullptr) return std::nullopt;
    if (sub->op != ElementwiseFn::Sub || sub->args.size() != 2) return std::nullopt;
    const bool is_square =
        square->args.size() == 2 && names(square->args[0], sub->dst) &&
        ((square->op == ElementwiseFn::Mul && names(square->args[1], sub->dst)) ||
         (square->op == ElementwiseFn::Pow && square->args[1].is(ExprKind::Float) && square->args[1].float_value() == 2.0));
    if (!is_square) return std::nullopt;
    const std::string& q = square_accum->acc;
    if (q == s || square_accum->op != CombineFn::Add || !square_accum->index.empty() ||
        !names(square_accum->value, square->dst))
      return std::nullopt;
    if (sum_loop->shared && !is_block_sum(body[j + 1], q)) return std::nullopt;

    // The center is computed outside the second pass and does not read q.
    const Expr& m = sub->args[1];
    const std::set<std::string> loop_bound = bound_names(Body{body[j]});
    for (const std::string& name : free_vars(m))
      if (loop_bound.count(name) || name == q) return std::nullopt;

    const Body prefix(sb.begin(), sb.end() - 1);
    if (!computes_values_only(prefix) || reads_any(prefix, {s, q})) return std::nullopt;
    const Body between(body.begin() + static_cast<std::ptrdiff_t>(between_first),
                       body.begin() + static_cast<std::ptrdiff_t>(between_end));
    if (!computes_values_only(between) || reads_any(between, {q})) return std::nullopt;
    // The same row loop with the same values before the accumulation: the second pass with its tail
    // replaced by the sum pass's accumulation must be the sum pass, up to names.
    Body square_as_sum(qb.begin(), qb.end() - 3);
    square_as_sum.push_back(Accum{s, CombineFn::Add, sub->args[0], {}});
    if (!structurally_equal(canonicalize_names(Body{body[i]}),
                            canonicalize_names(Body{with_row_body(body[j], std::move(square_as_sum))})))
      return std::nullopt;

    // Both accumulators start at 0 and nothing reads them before the pair.
    std::optional<ValueType> s_type, q_type;
    for (size_t k = 0; k < i; ++k) {
      if (const auto* init = body[k].as<Init>(); init != nullptr && (init->acc == s || init->acc == q)) {
        if (!init->value.is(ExprKind::Float) || init->value.float_value() != 0.0 || !init->type.is_scalar())
          return std::nullopt;
        (init->acc == s ? s_type : q_type) = init->type;
        continue;
      }
      if (reads_any(Body{body[k]}, {s, q})) return std::nullopt;
    }
    if (!s_type || !q_type || !(*s_type == *q_type)) return std::nullopt;
    if (s_type->dtype != DType::F32 && s_type->dtype != DType::F64) {
      wrong_type_ = true;
      return std::nullopt;
    }
    if (!loads_only_from(prefix, node_.inputs)) {
      staged_ = true;
      return std::nullopt;
    }
    return VariancePair{i, length, between_first, between_end, sum_loop->shared, s, q, sum_accum->value, m, *s_type};
  }

  bool staged() const { return staged_; }
  bool wrong_type() const { return wrong_type_; }

 private:
  static bool is_block_sum(const Stmt& st, const std::string& acc) {
    const auto* c = st.as<Combine>();
    return c != nullptr && c->acc == acc && c->op == CombineFn::Add && c->scope == CombineScope::Block;
  }
  const Node& node_;
  bool staged_ = false;
  bool wrong_type_ = false;
};

// The statements replacing the pair (see the header comment).
Body welford_statements(const VariancePair& p, const Body& body, std::set<std::string>& taken) {
  const ValueType t = p.type;
  auto assign = [&](const std::string& base, ElementwiseFn fn, ExprList args, Body& out, ValueType type) {
    const std::string dst = fresh_name(base, taken);
    out.push_back(Assign{dst, fn, std::move(args), type});
    return Expr::value(dst);
  };
  auto value = [&](const std::string& base, ElementwiseFn fn, ExprList args, Body& out) {
    return assign(base, fn, std::move(args), out, t);
  };
  const Stmt& sum_loop = body[p.position];
  const Body& per_element = *row_loop(sum_loop)->body;
  const Expr& y = p.row_value;
  Body out;
  auto accumulator = [&](const std::string& base) {
    const std::string name = fresh_name(base, taken);
    out.push_back(Init{name, Expr::float_(0.0), t});
    return name;
  };
  const std::string k = accumulator("count");
  const std::string c = accumulator("shift");
  const std::string mu = accumulator("shifted_mean");
  const Expr count = Expr::value(k), shift = Expr::value(c), mean = Expr::value(mu);

  Body loop_body = per_element;  // the row's values and `s <- add(s, y)`, then Welford's update
  loop_body.push_back(Accum{k, CombineFn::Add, Expr::float_(1.0), {}});
  const Expr first = assign("first", ElementwiseFn::Eq, {count, Expr::float_(1.0)}, loop_body, ValueType::scalar(DType::Bool));
  const Expr take = value("first_value", ElementwiseFn::Where, {first, y, Expr::float_(0.0)}, loop_body);
  loop_body.push_back(Accum{c, CombineFn::Add, take, {}});
  const Expr e = value("shifted", ElementwiseFn::Sub, {y, shift}, loop_body);
  const Expr d = value("deviation", ElementwiseFn::Sub, {e, mean}, loop_body);
  const Expr step = value("mean_step", ElementwiseFn::Div, {d, count}, loop_body);
  loop_body.push_back(Accum{mu, CombineFn::Add, step, {}});
  const Expr d2 = value("new_deviation", ElementwiseFn::Sub, {e, mean}, loop_body);
  const Expr w = value("square_step", ElementwiseFn::Mul, {d, d2}, loop_body);
  loop_body.push_back(Accum{p.square_acc, CombineFn::Add, w, {}});
  out.push_back(with_row_body(sum_loop, std::move(loop_body)));

  // The sum pass's Combine and the values between the passes, as they were.
  out.insert(out.end(), body.begin() + static_cast<std::ptrdiff_t>(p.position + 1),
             body.begin() + static_cast<std::ptrdiff_t>(p.between_end));
  // (mu + c - m) as mu + (c - m): both small where the mean is large against the spread.
  const Expr cm = value("shift_offset", ElementwiseFn::Sub, {shift, p.center}, out);
  const Expr dm = value("mean_offset", ElementwiseFn::Add, {mean, cm}, out);
  const Expr dm2 = value("mean_offset_square", ElementwiseFn::Mul, {dm, dm}, out);
  const Expr share = value("mean_offset_share", ElementwiseFn::Mul, {count, dm2}, out);
  out.push_back(Accum{p.square_acc, CombineFn::Add, share, {}});
  if (p.shared) out.push_back(Combine{p.square_acc, CombineFn::Add, CombineScope::Block});
  return out;
}

// The pairs of `body` (and of the `if`s in it), rewritten when `taken` is given (inventing names
// outside it), else left as they are; counted in `found`.
Body rewrite_pairs(const Body& body, PairFinder& finder, std::set<std::string>* taken, int& found) {
  return rewrite_statement_runs(body, [&](const Body& b, size_t i) -> std::optional<StatementRun> {
    std::optional<VariancePair> p = finder.at(b, i);
    if (!p) return std::nullopt;
    ++found;
    if (taken != nullptr) return StatementRun{p->length, welford_statements(*p, b, *taken)};
    return StatementRun{p->length, Body(b.begin() + static_cast<std::ptrdiff_t>(i),
                                        b.begin() + static_cast<std::ptrdiff_t>(i + p->length))};
  });
}

class FuseMeanVariancePass final : public TilePass {
 public:
  std::string_view name() const override { return "fuse_mean_variance"; }
  std::string_view summary() const override {
    return "merge a row's sum pass and squared-deviation pass into one Welford pass when the row is read from memory";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"ONE_PASS", KnobType::Bool, {}, std::nullopt,
                     "compute a row's mean and variance in one pass over a row read from memory"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override {
    PairFinder finder(node);
    int found = 0;
    rewrite_pairs(tile.body, finder, nullptr, found);
    if (found == 0) {
      ctx.skip(node, finder.staged()       ? "the row is staged in shared memory: its second read is cheap"
                     : finder.wrong_type() ? "the accumulators are not f32 or f64"
                                           : "no sum pass followed by a squared-deviation pass over the same row");
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(bool one_pass, ctx.choose_bool("ONE_PASS", node, true));
    if (!one_pass) return Status::ok();

    std::set<std::string> taken = bound_names(kernel.body);
    Tile rewritten = tile;
    rewritten.body = rewrite_pairs(tile.body, finder, &taken, found);
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(Body{Stmt(std::move(rewritten))});
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_fuse_mean_variance(Registry& r) {
  r.add_pass("fuse_mean_variance", [] { return std::make_unique<FuseMeanVariancePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("fuse_mean_variance", "1.0.0", ::tessera::register_fuse_mean_variance)

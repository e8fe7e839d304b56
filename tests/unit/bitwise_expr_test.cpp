// The bitwise index expressions (Xor `^`, BitAnd `&`, BitOr `|`, Shl `<<`, Shr `>>`; expr.h):
// printing and parsing (C spellings apart from the logical && and ||, parentheses wherever a
// bitwise operator meets another one), JSON, the simplifier's folds and identities (with a
// randomized value-preservation check), bounds, the verifier's integer-only and shift-amount
// rules, and one XOR-swizzled transpose run by the Loop IR interpreter and the SIMT simulator
// and emitted as CUDA that NVRTC compiles (and, on a machine with a GPU, runs).
#include <gtest/gtest.h>

#include "tessera/target/kernel_report.h"

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/built_plugins.h"
#include "support/hand_built_program.h"
#include "support/nvrtc_check.h"
#include "support/sanitizer_build.h"
#include "tessera/eval/loop_interpreter.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

Expr V(const char* n) { return Expr::var(n); }
Expr I(int64_t v) { return Expr::int_(v); }
Expr F(double v) { return Expr::float_(v); }
Expr B(ExprKind k, Expr a, Expr b) { return Expr::binary(k, std::move(a), std::move(b)); }
Expr Xor(Expr a, Expr b) { return B(ExprKind::Xor, std::move(a), std::move(b)); }
Expr And(Expr a, Expr b) { return B(ExprKind::BitAnd, std::move(a), std::move(b)); }
Expr Or(Expr a, Expr b) { return B(ExprKind::BitOr, std::move(a), std::move(b)); }
Expr Shl(Expr a, Expr b) { return B(ExprKind::Shl, std::move(a), std::move(b)); }
Expr Shr(Expr a, Expr b) { return B(ExprKind::Shr, std::move(a), std::move(b)); }
Expr Eq(Expr a, Expr b) { return B(ExprKind::Eq, std::move(a), std::move(b)); }
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- printing and parsing -------------------------------------------------------------------

TEST(BitwiseExprTest, PrintsCSpellingsAndParenthesizesEveryMix) {
  Expr a = V("a"), b = V("b"), c = V("c");
  EXPECT_EQ(Xor(a, b).str(), "a ^ b");
  EXPECT_EQ(And(a, b).str(), "a & b");
  EXPECT_EQ(Or(a, b).str(), "a | b");
  EXPECT_EQ(Shl(a, I(3)).str(), "a << 3");
  EXPECT_EQ(Shr(a, I(3)).str(), "a >> 3");
  // The same operator chains to the left without parentheses, like + does.
  EXPECT_EQ(Xor(Xor(a, b), c).str(), "a ^ b ^ c");
  EXPECT_EQ(Xor(a, Xor(b, c)).str(), "a ^ (b ^ c)");
  // A bitwise operator never meets another operator unparenthesized: C and Python rank them
  // differently, so the printout spells the grouping out.
  EXPECT_EQ(Xor(a, And(b, I(7))).str(), "a ^ (b & 7)");
  EXPECT_EQ(Or(Shl(a, I(3)), Xor(b, And(a, I(7)))).str(), "(a << 3) | (b ^ (a & 7))");
  EXPECT_EQ((Shl(a, I(3)) + b).str(), "(a << 3) + b");
  EXPECT_EQ(Shl(a + b, I(1)).str(), "(a + b) << 1");
  EXPECT_EQ((And(a, I(7)) < I(4)).str(), "(a & 7) < 4");
  EXPECT_EQ(Shr(Shl(a, I(1)), I(2)).str(), "(a << 1) >> 2");
  EXPECT_EQ(Expr::not_(And(a, b)).str(), "!(a & b)");
  EXPECT_EQ(Xor(a, I(-1)).str(), "a ^ (-1)");
  // The logical operators keep their doubled spellings.
  EXPECT_EQ(B(ExprKind::And, a < b, Eq(And(a, c), I(0))).str(), "a < b && (a & c) == 0");
  EXPECT_EQ(B(ExprKind::Or, Expr::not_(a), Or(b, c)).str(), "!a || (b | c)");
}

TEST(BitwiseExprTest, ParsesBackToTheSameTreeAndTellsBitwiseFromLogical) {
  Expr a = V("a0"), b = V("a1");
  const std::vector<Expr> exprs = {
      Xor(a, b),
      Xor(Xor(a, b), I(3)),
      Xor(a, Xor(b, I(3))),
      Or(Shl(b, I(3)), Xor(a, And(b, I(7)))),
      Shr(Shl(a, I(1)), I(2)),
      Shl(a, Shr(b, I(1))),
      And(a + I(1), b * I(2)),
      Or(a, I(-1)),
      B(ExprKind::And, Eq(And(a, I(1)), I(0)), Or(a, b) < I(5)),
      B(ExprKind::Or, Expr::not_(Xor(a, b)), a <= Shr(b, I(2))),
      Expr::select(Eq(And(a, I(1)), I(1)), Shl(b, I(2)), b),
      Expr::min(Xor(a, b), I(7)),
  };
  for (const Expr& e : exprs) {
    Expected<Expr> parsed = parse_expr(e.str(), "expr");
    ASSERT_TRUE(parsed) << e.str() << ": " << parsed.error().render();
    EXPECT_EQ(parsed->str(), e.str());
    EXPECT_TRUE(structurally_equal(*parsed, e)) << e.str();
  }
  // Hand-written text follows the documented precedence: comparisons < | < ^ < & < shifts < + -.
  auto parsed_str = [](const char* text) {
    Expected<Expr> e = parse_expr(text, "expr");
    return e ? e->str() : e.error().message;
  };
  EXPECT_EQ(parsed_str("a ^ b & 7"), "a ^ (b & 7)");
  EXPECT_EQ(parsed_str("a | b ^ c"), "a | (b ^ c)");
  EXPECT_EQ(parsed_str("a << 3 | b"), "(a << 3) | b");
  EXPECT_EQ(parsed_str("a << 1 + b"), "a << (1 + b)");
  EXPECT_EQ(parsed_str("a & 7 == 0"), "(a & 7) == 0");
  EXPECT_EQ(parsed_str("a && b & c"), "a && (b & c)");
  EXPECT_EQ(parsed_str("a || b | c"), "a || (b | c)");
  Expected<Expr> logical = parse_expr("a && b || c", "expr");
  ASSERT_TRUE(logical);
  EXPECT_TRUE(logical->is(ExprKind::Or));
  EXPECT_TRUE(logical->operand(0).is(ExprKind::And));
}

TEST(BitwiseExprTest, JsonRoundTripsAndNamesTheKinds) {
  Expr e = Or(Shl(V("a1"), I(3)), Xor(V("a0"), And(V("a1"), I(7))));
  nlohmann::json j = expr_to_json(e);
  EXPECT_EQ(j[0], "BitOr");
  EXPECT_EQ(j[1][0], "Shl");
  EXPECT_EQ(j[2][0], "Xor");
  Expected<Expr> back = expr_from_json(j);
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(*back, e));
  EXPECT_EQ(structural_hash(*back), structural_hash(e));
  for (ExprKind k : {ExprKind::Xor, ExprKind::BitAnd, ExprKind::BitOr, ExprKind::Shl, ExprKind::Shr}) {
    EXPECT_EQ(parse_expr_kind(expr_kind_name(k)), k);
    EXPECT_TRUE(is_bitwise_kind(k));
    EXPECT_FALSE(structurally_equal(B(k, V("a"), V("b")), V("a") + V("b")));
    EXPECT_NE(structural_hash(B(k, V("a"), V("b"))), structural_hash(V("a") + V("b")));
  }
  EXPECT_FALSE(is_bitwise_kind(ExprKind::And));
  EXPECT_FALSE(is_bitwise_kind(ExprKind::Or));
  Expected<Expr> bad = expr_from_json(nlohmann::json::array({"Shl", "a"}));
  ASSERT_FALSE(bad);
  EXPECT_TRUE(contains(bad.error().message, "Shl takes 2 operand(s), got 1")) << bad.error().message;
}

// ---- semantics, simplifier and bounds ----------------------------------------------------------

TEST(BitwiseExprTest, EvalBitwiseIsTwosComplementAndArithmeticShift) {
  EXPECT_EQ(eval_bitwise(ExprKind::Xor, 6, 3), 5);
  EXPECT_EQ(eval_bitwise(ExprKind::BitAnd, -8, 13), 8);   // ...11111000 & 00001101
  EXPECT_EQ(eval_bitwise(ExprKind::BitOr, -8, 3), -5);
  EXPECT_EQ(eval_bitwise(ExprKind::Shl, -3, 2), -12);     // a * 2^b
  EXPECT_EQ(eval_bitwise(ExprKind::Shr, -7, 1), -4);      // floor(-7 / 2), not C's -3 of division
  EXPECT_EQ(eval_bitwise(ExprKind::Shr, 7, 31), 0);
  EXPECT_EQ(eval_bitwise(ExprKind::Shl, 1, 31), int64_t{1} << 31);
  EXPECT_EQ(eval_bitwise(ExprKind::Shl, 1, 32), std::nullopt);  // amount outside [0, 32)
  EXPECT_EQ(eval_bitwise(ExprKind::Shr, 1, -1), std::nullopt);
}

std::string S(const Expr& e, const RangeMap& r = {}) { return simplify(e, r).str(); }

TEST(BitwiseExprTest, SimplifierFoldsConstantsAndAppliesOnlyExactIdentities) {
  Expr x = V("x"), y = V("y");
  EXPECT_EQ(S(Xor(I(6), I(3))), "5");
  EXPECT_EQ(S(And(I(-8), I(13))), "8");
  EXPECT_EQ(S(Or(I(4), I(1))), "5");
  EXPECT_EQ(S(Shl(I(3), I(4))), "48");
  EXPECT_EQ(S(Shr(I(-7), I(1))), "-4");
  // Out-of-range amounts never fold: the verifier reports them.
  EXPECT_EQ(S(Shl(I(1), I(32))), "1 << 32");
  EXPECT_EQ(S(Shr(I(1), I(-1))), "1 >> (-1)");
  // Identities that hold for every integer.
  EXPECT_EQ(S(Xor(x, I(0))), "x");
  EXPECT_EQ(S(Xor(I(0), x)), "x");
  EXPECT_EQ(S(Xor(x + y, x + y)), "0");
  EXPECT_EQ(S(And(x, I(0))), "0");
  EXPECT_EQ(S(And(I(0), x)), "0");
  EXPECT_EQ(S(And(x, I(-1))), "x");
  EXPECT_EQ(S(And(x, x)), "x");
  EXPECT_EQ(S(Or(x, I(0))), "x");
  EXPECT_EQ(S(Or(x, I(-1))), "-1");
  EXPECT_EQ(S(Or(y, y)), "y");
  EXPECT_EQ(S(Shl(x, I(0))), "x");
  EXPECT_EQ(S(Shr(x, I(0))), "x");
  // Constants move to the right of the commutative kinds; operands are simplified.
  EXPECT_EQ(S(Xor(I(7), x)), "x ^ 7");
  EXPECT_EQ(S(Xor(x + I(0), And(y, I(7) - I(0)))), "x ^ (y & 7)");
  // A mask that covers the operand's whole range is a no-op, and only then.
  const RangeMap r = {{"x", {0, 7}}, {"y", {0, 8}}, {"z", {-1, 3}}};
  EXPECT_EQ(S(And(x, I(7)), r), "x");
  EXPECT_EQ(S(And(y, I(7)), r), "y & 7");
  EXPECT_EQ(S(And(V("z"), I(7)), r), "z & 7");
  EXPECT_EQ(S(And(x, I(6)), r), "x & 6");  // not of the form 2^k - 1
  // What must not happen: no rule reads `0 << x` as 0 (x may be out of range), and shifts are
  // not rewritten into multiplications (the printout keeps what the schedule wrote).
  EXPECT_EQ(S(Shl(I(0), x)), "0 << x");
  EXPECT_EQ(S(Shl(x, I(3))), "x << 3");
  // A bound that pins the value folds it: (x & 7) >> 3 is 0 for x in [0, 7].
  EXPECT_EQ(S(Shr(And(x, I(7)), I(3)), r), "0");
  // A float operand is left for the verifier.
  EXPECT_EQ(S(Xor(F(1.5), I(0))), "1.5 ^ 0");
}

TEST(BitwiseExprTest, BoundsFollowTwosComplementFacts) {
  const RangeMap r = {{"x", {0, 5}}, {"y", {2, 9}}, {"n", {-4, 3}}, {"s", {1, 3}}};
  EXPECT_EQ(bound_of(And(V("x"), V("y")), r), (Interval{0, 5}));
  EXPECT_EQ(bound_of(And(V("n"), I(12)), r), (Interval{0, 12}));  // a non-negative mask bounds it
  EXPECT_EQ(bound_of(And(V("n"), V("n")), r), std::nullopt);
  EXPECT_EQ(bound_of(Or(V("x"), V("y")), r), (Interval{2, 15}));
  EXPECT_EQ(bound_of(Xor(V("x"), V("y")), r), (Interval{0, 15}));
  EXPECT_EQ(bound_of(Xor(V("n"), V("y")), r), std::nullopt);
  EXPECT_EQ(bound_of(Shl(V("x"), V("s")), r), (Interval{0, 40}));
  EXPECT_EQ(bound_of(Shl(V("n"), V("s")), r), (Interval{-32, 24}));
  EXPECT_EQ(bound_of(Shr(V("y"), V("s")), r), (Interval{0, 4}));
  EXPECT_EQ(bound_of(Shr(V("n"), I(1)), r), (Interval{-2, 1}));
  EXPECT_EQ(bound_of(Shl(V("x"), V("n")), r), std::nullopt);  // the amount may be negative
  EXPECT_EQ(bound_of(Shl(V("x"), I(32)), r), std::nullopt);
}

// A test-local evaluator over int64 with the documented meaning; nullopt where undefined (an
// out-of-range shift, or an overflow of int64).
std::optional<int64_t> eval(const Expr& e, const std::map<std::string, int64_t>& env) {
  if (e.is(ExprKind::Int)) return e.int_value();
  if (e.is(ExprKind::Var)) return env.at(e.name());
  auto a = eval(e.operand(0), env);
  auto b = eval(e.operand(1), env);
  if (!a || !b) return std::nullopt;
  int64_t r = 0;
  switch (e.kind()) {
    case ExprKind::Add: if (__builtin_add_overflow(*a, *b, &r)) return std::nullopt; return r;
    case ExprKind::Sub: if (__builtin_sub_overflow(*a, *b, &r)) return std::nullopt; return r;
    case ExprKind::Mul: if (__builtin_mul_overflow(*a, *b, &r)) return std::nullopt; return r;
    case ExprKind::Xor: return *a ^ *b;
    case ExprKind::BitAnd: return *a & *b;
    case ExprKind::BitOr: return *a | *b;
    case ExprKind::Shl:
      if (*b < 0 || *b >= 32 || __builtin_mul_overflow(*a, int64_t{1} << *b, &r)) return std::nullopt;
      return r;
    case ExprKind::Shr: {
      if (*b < 0 || *b >= 32) return std::nullopt;
      const int64_t d = int64_t{1} << *b;
      return *a >= 0 ? *a / d : -((-*a + d - 1) / d);
    }
    case ExprKind::Lt: return *a < *b ? 1 : 0;
    case ExprKind::Eq: return *a == *b ? 1 : 0;
    default: ADD_FAILURE() << "unexpected kind in " << e.str(); return std::nullopt;
  }
}

class BitwiseGenerator {
 public:
  explicit BitwiseGenerator(uint64_t seed) : rng_(seed) {}
  Expr gen(int depth) {
    if (depth == 0 || pick(4) == 0) return leaf();
    static constexpr ExprKind kKinds[] = {ExprKind::Xor, ExprKind::BitAnd, ExprKind::BitOr, ExprKind::Shl,
                                          ExprKind::Shr, ExprKind::Add,    ExprKind::Sub,   ExprKind::Mul,
                                          ExprKind::Lt,  ExprKind::Eq};
    const ExprKind k = kKinds[pick(10)];
    if (k == ExprKind::Shl || k == ExprKind::Shr) {
      // Constant amounts, computed ones kept small (so products stay far from overflow), and c,
      // which is negative at some points: undefined there.
      const uint64_t choice = pick(4);
      Expr amount = choice == 0   ? Expr::binary(ExprKind::BitAnd, gen(depth - 1), Expr::int_(7))
                    : choice == 1 ? Expr::var("c")
                                  : Expr::int_(static_cast<int64_t>(pick(5)));
      return Expr::binary(k, gen(depth - 1), amount);
    }
    return Expr::binary(k, gen(depth - 1), gen(depth - 1));
  }

 private:
  uint64_t pick(uint64_t n) { return rng_() % n; }
  Expr leaf() {
    static const char* kVars[] = {"a", "b", "c"};
    static constexpr int64_t kConsts[] = {0, 1, 3, 7, 8, -1, -8, 15};
    if (pick(3) == 0) return Expr::int_(kConsts[pick(8)]);
    return Expr::var(kVars[pick(3)]);
  }
  std::mt19937_64 rng_;
};

TEST(BitwiseExprTest, RandomExpressionsKeepTheirValueAndStayInTheirBounds) {
  const RangeMap ranges = {{"a", {0, 7}}, {"b", {0, 15}}, {"c", {-4, 3}}};
  BitwiseGenerator gen(20261127);
  int checked = 0, changed = 0;
  const int iterations = test::sanitizer_count(1000);
  for (int iter = 0; iter < iterations; ++iter) {
    Expr e = gen.gen(4);
    RangeMap use = iter % 2 == 0 ? ranges : RangeMap{};
    Expr s = simplify(e, use);
    if (!structurally_equal(s, e)) ++changed;
    std::optional<Interval> bound = bound_of(e, ranges);
    for (int64_t a = 0; a <= 7; ++a)
      for (int64_t b = 0; b <= 15; ++b)
        for (int64_t c = -4; c <= 3; ++c) {
          std::map<std::string, int64_t> env = {{"a", a}, {"b", b}, {"c", c}};
          auto expected = eval(e, env);
          if (!expected) continue;  // an out-of-range shift: undefined here
          auto got = eval(s, env);
          ASSERT_TRUE(got.has_value()) << e.str() << "  ->  " << s.str();
          ASSERT_EQ(*got, *expected) << e.str() << "  ->  " << s.str() << " at a=" << a << " b=" << b << " c=" << c;
          if (bound) ASSERT_TRUE(bound->contains(*expected)) << "bound_of(" << e.str() << ") misses " << *expected;
          ++checked;
        }
  }
  EXPECT_GT(checked, iterations * 100);
  EXPECT_GT(changed, iterations / 2);
}

// ---- verifier ----------------------------------------------------------------------------------

std::string loop_verifier_error(Body inner, DType x_dtype = DType::F32) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{64}, x_dtype});
  auto op = std::make_unique<LoopOp>();
  op->name = "k_y";
  op->body = {Loop{"a0", I(0), I(64), LoopRole::Free, 0, std::move(inner)}};
  g.add("y", std::move(op), {"x"}, TensorType{{64}, DType::F32});
  g.outputs() = {"y"};
  Status s = verify_graph(g, Dialect::Loop);
  return s ? std::string() : s.message();
}

TEST(BitwiseExprTest, VerifierRefusesFloatOperandsAndConstantShiftsOutOfRange) {
  auto load_at = [](Expr index) {
    return Body{Load{"in0", "x", {std::move(index)}}, Write{"y", {V("a0")}, Expr::value("in0")}};
  };
  EXPECT_EQ(loop_verifier_error(load_at(Xor(V("a0"), I(1)))), "");
  EXPECT_EQ(loop_verifier_error(load_at(Shr(Shl(V("a0"), I(31)), I(31)))), "");
  std::string msg = loop_verifier_error(load_at(Xor(V("a0"), F(1.0))));
  EXPECT_TRUE(contains(msg, "loop IR statement `in0 = load x[a0 ^ 1.0]`: `a0 ^ 1.0` applies a bitwise operator to "
                            "the float `1.0`; bitwise operators take integers"))
      << msg;
  EXPECT_TRUE(contains(msg, "y")) << "the message names the node: " << msg;
  msg = loop_verifier_error(load_at(And(Expr::cast(DType::F32, V("a0")) + I(1), I(7))));
  EXPECT_TRUE(contains(msg, "applies a bitwise operator to the float `f32(a0)`")) << msg;
  msg = loop_verifier_error(load_at(Shl(V("a0"), I(32))));
  EXPECT_TRUE(contains(msg, "`a0 << 32` shifts by 32, outside [0, 32)")) << msg;
  msg = loop_verifier_error(load_at(Shr(V("a0"), I(-1))));
  EXPECT_TRUE(contains(msg, "`a0 >> (-1)` shifts by -1, outside [0, 32)")) << msg;
  // A float SSA value under a bitwise operator (the type verifier knows the value's type).
  msg = loop_verifier_error({Load{"in0", "x", {V("a0")}},
                             Assign{"v0", ElementwiseFn::Mul, {Xor(Expr::value("in0"), I(1)), F(2.0)}},
                             Write{"y", {V("a0")}, Expr::value("v0")}});
  EXPECT_TRUE(contains(msg, "`in0 ^ 1` applies a bitwise operator to the float `in0`")) << msg;
}

// ---- evaluator vs simulator vs CUDA on an XOR-swizzled transpose -----------------------------

// y = x^T for an 8 x 8 f32 x, two ways that both address through `col ^ (row & 7)`:
//   Loop IR: y[a1, a0] = x[f >> 3, (f & 7) ^ (a0 & 7)] with f = (a0 << 3) | (a1 ^ (a0 & 7));
//   Kernel IR: 64 threads store x[row, col] into a 64-element Smem at (row << 3) | (col ^ (row & 7)),
//   sync, and read back the transposed element at (col << 3) | (row ^ (col & 7)).
std::vector<double> x_data() {
  std::vector<double> v;
  for (int i = 0; i < 64; ++i) v.push_back(static_cast<double>(i * 3 % 17) - 5.0 + 0.25 * i);
  return v;
}

test::HandBuiltProgram transpose(bool kernel_ir) {
  test::HandBuiltProgram p;
  p.input("x", {8, 8}, x_data());
  std::unique_ptr<KernelLikeOp> op;
  if (kernel_ir) {
    auto k = std::make_unique<KernelOp>();
    k->grid = {1, 1, 1};
    k->block = {64, 1, 1};
    Expr col = V("a0"), row = V("a1");
    k->body = {Smem{"t_smem", DType::F32, {64}},
               Let{"a0", And(V("threadIdx.x"), I(7))},
               Let{"a1", Shr(V("threadIdx.x"), I(3))},
               Load{"in0", "x", {row, col}},
               Write{"t_smem", {Or(Shl(row, I(3)), Xor(col, And(row, I(7))))}, Expr::value("in0")},
               Sync{},
               Load{"in1", "t_smem", {Or(Shl(col, I(3)), Xor(row, And(col, I(7))))}},
               Write{"y", {row, col}, Expr::value("in1")}};
    op = std::move(k);
  } else {
    Expr f = Or(Shl(V("a0"), I(3)), Xor(V("a1"), And(V("a0"), I(7))));
    auto l = std::make_unique<LoopOp>();
    l->body = {Loop{"a0", I(0), I(8), LoopRole::Free, 0,
                    {Loop{"a1", I(0), I(8), LoopRole::Free, 0,
                          {Load{"in0", "x", {Shr(f, I(3)), Xor(And(f, I(7)), And(V("a0"), I(7)))}},
                           Write{"y", {V("a1"), V("a0")}, Expr::value("in0")}}}}}};
    op = std::move(l);
  }
  op->name = "k_transpose";
  p.g.add("y", std::move(op), {"x"}, test::f32({8, 8}));
  p.g.outputs() = {"y"};
  return p;
}

void expect_transposed(const ValueMap& out, const std::string& who) {
  const std::vector<double> x = x_data();
  const std::vector<double>& y = out.at("y").data;
  ASSERT_EQ(y.size(), 64u) << who;
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) ASSERT_EQ(y[static_cast<size_t>(r * 8 + c)], x[static_cast<size_t>(c * 8 + r)]) << who << " y[" << r << ", " << c << "]";
}

class BitwiseTargetsTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override { ASSERT_TRUE(load_error_.empty()) << load_error_; }

  Status emit(Graph& g) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass("emit_cuda");
    if (!pass) return make_error("no emit_cuda pass");
    DiagnosticEngine diags;
    PassContext ctx("emit_cuda", "c:001_emit_cuda", pass->knobs(), {}, {}, h100(), &diags);
    return pass->run(g, ctx);
  }
};

TEST_F(BitwiseTargetsTest, InterpreterSimulatorAndCudaAgreeOnTheSwizzledTranspose) {
  test::HandBuiltProgram loop = transpose(false);
  ASSERT_TRUE(verify_graph(loop.g, Dialect::Loop)) << verify_graph(loop.g, Dialect::Loop).message();
  Expected<ValueMap> interpreted = evaluate_loop_ir(loop.g, loop.inputs);
  ASSERT_TRUE(interpreted) << interpreted.error().render();
  expect_transposed(*interpreted, "Loop IR interpreter");

  test::HandBuiltProgram kernel = transpose(true);
  ASSERT_TRUE(verify_graph(kernel.g, Dialect::Kernel)) << verify_graph(kernel.g, Dialect::Kernel).message();
  const std::string printed = print_graph(kernel.g);
  EXPECT_TRUE(contains(printed, "t_smem[(a1 << 3) | (a0 ^ (a1 & 7))] = in0")) << printed;
  Expected<Graph> reparsed = parse_graph(printed, "transpose.tir");
  ASSERT_TRUE(reparsed) << reparsed.error().render();
  EXPECT_TRUE(structurally_equal(*reparsed, kernel.g)) << printed;

  std::unique_ptr<Target> sim = host_->registry().make_target("sim");
  ASSERT_NE(sim, nullptr);
  Expected<TargetRun> simulated = sim->execute(kernel.g, kernel.inputs, TargetOptions{});
  ASSERT_TRUE(simulated) << simulated.error().render();
  expect_transposed(simulated->outputs, "simulator");
  EXPECT_EQ(simulated->outputs.at("y").data, interpreted->at("y").data);

  Graph emitted = kernel.g;
  Status s = emit(emitted);
  ASSERT_TRUE(s) << s.message();
  const auto* cuda = emitted.find("y")->op_as<CudaOp>();
  ASSERT_NE(cuda, nullptr);
  EXPECT_TRUE(contains(cuda->source, "int a0 = (int)threadIdx.x & 7;")) << cuda->source;
  EXPECT_TRUE(contains(cuda->source, "int a1 = (int)threadIdx.x >> 3;")) << cuda->source;
  // The emitter simplifies with the Lets' ranges: a1 & 7 is a1 for a1 in [0, 7].
  EXPECT_TRUE(contains(cuda->source, "t_smem[(a1 << 3) | (a0 ^ a1)] = in0;")) << cuda->source;
  EXPECT_TRUE(contains(cuda->source, "float in1 = t_smem[(a0 << 3) | (a1 ^ a0)];")) << cuda->source;
#ifdef TESSERA_HAVE_CUDA
  EXPECT_EQ(test::nvrtc_compile(*cuda, "sm_90"), "");
#endif

  // The static kernel report evaluates the swizzled indices too: x read once, y written once.
  Expected<KernelReport> report = KernelReport::of(kernel.g, *kernel.g.find("y"));
  ASSERT_TRUE(report) << report.error().render();
  EXPECT_EQ(report->bytes, 2 * 64 * 4);
}

// On a GPU (skipped with the driver's reason without one): the emitted kernel computes it too.
TEST_F(BitwiseTargetsTest, GpuRunsTheSwizzledTranspose) {
  std::unique_ptr<Target> gpu = host_->registry().make_target("cuda");
  ASSERT_NE(gpu, nullptr);
  std::string why;
  if (!gpu->available(&why)) GTEST_SKIP() << why;
  test::HandBuiltProgram kernel = transpose(true);
  Status s = emit(kernel.g);
  ASSERT_TRUE(s) << s.message();
  Expected<TargetRun> ran = gpu->execute(kernel.g, kernel.inputs, TargetOptions{});
  ASSERT_TRUE(ran) << ran.error().render();
  expect_transposed(ran->outputs, "GPU");
}

TEST_F(BitwiseTargetsTest, AShiftAmountOutOfRangeAtRunTimeIsAnErrorInBothEvaluators) {
  // The amount is an axis, so only running finds that it reaches 32.
  test::HandBuiltProgram loop;
  loop.input("x", {4}, {1.0, 2.0, 3.0, 4.0});
  auto l = std::make_unique<LoopOp>();
  l->name = "k_y";
  l->body = {Loop{"a0", I(0), I(40), LoopRole::Free, 0,
                  {Load{"in0", "x", {And(Shl(I(1), V("a0")), I(3))}}, Write{"y", {V("a0")}, Expr::value("in0")}}}};
  loop.g.add("y", std::move(l), {"x"}, test::f32({40}));
  loop.g.outputs() = {"y"};
  ASSERT_TRUE(verify_graph(loop.g, Dialect::Loop)) << verify_graph(loop.g, Dialect::Loop).message();
  Expected<ValueMap> interpreted = evaluate_loop_ir(loop.g, loop.inputs);
  ASSERT_FALSE(interpreted);
  EXPECT_TRUE(contains(interpreted.error().message, "a shift amount outside [0, 32)")) << interpreted.error().render();

  test::HandBuiltProgram kernel;
  kernel.input("x", {4}, {1.0, 2.0, 3.0, 4.0});
  auto k = std::make_unique<KernelOp>();
  k->name = "k_y";
  k->block = {40, 1, 1};
  k->body = {Let{"a0", V("threadIdx.x")}, Load{"in0", "x", {And(Shl(I(1), V("a0")), I(3))}},
             Write{"y", {V("a0")}, Expr::value("in0")}};
  kernel.g.add("y", std::move(k), {"x"}, test::f32({40}));
  kernel.g.outputs() = {"y"};
  ASSERT_TRUE(verify_graph(kernel.g, Dialect::Kernel)) << verify_graph(kernel.g, Dialect::Kernel).message();
  std::unique_ptr<Target> sim = host_->registry().make_target("sim");
  ASSERT_NE(sim, nullptr);
  Expected<TargetRun> simulated = sim->execute(kernel.g, kernel.inputs, TargetOptions{});
  ASSERT_FALSE(simulated);
  EXPECT_TRUE(contains(simulated.error().message, "a shift amount outside [0, 32)")) << simulated.error().render();
}

}  // namespace
}  // namespace tessera

// Unit tests for bound_of and simplify: each rewrite rule where it applies and where it must not,
// plus a randomized property test that checks value preservation against a small evaluator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>

#include "support/sanitizer_build.h"
#include "tessera/ir/expr.h"

namespace tessera {
namespace {

Expr V(const char* n) { return Expr::var(n); }
Expr I(int64_t v) { return Expr::int_(v); }
Expr F(double v) { return Expr::float_(v); }
Expr B(ExprKind k, Expr a, Expr b) { return Expr::binary(k, std::move(a), std::move(b)); }

std::string S(const Expr& e, const RangeMap& r = {}) { return simplify(e, r).str(); }

const RangeMap kReshape = {{"a0", {0, 15}}, {"a1", {0, 2047}}};

// ---- bound_of -----------------------------------------------------------------------------------

TEST(BoundOfTest, LeavesAndArithmetic) {
  RangeMap r = {{"x", {0, 7}}, {"y", {-2, 3}}};
  EXPECT_EQ(bound_of(I(5), r), (Interval{5, 5}));
  EXPECT_EQ(bound_of(V("x"), r), (Interval{0, 7}));
  EXPECT_EQ(bound_of(V("z"), r), std::nullopt);
  EXPECT_EQ(bound_of(F(1.0), r), std::nullopt);
  EXPECT_EQ(bound_of(V("x") + V("y"), r), (Interval{-2, 10}));
  EXPECT_EQ(bound_of(V("x") - V("y"), r), (Interval{-3, 9}));
  EXPECT_EQ(bound_of(V("x") * V("y"), r), (Interval{-14, 21}));
  EXPECT_EQ(bound_of(V("y") * I(-3), r), (Interval{-9, 6}));
  EXPECT_EQ(bound_of(V("x") + V("z"), r), std::nullopt);
  EXPECT_EQ(bound_of(V("x") + F(1.0), r), std::nullopt);
}

TEST(BoundOfTest, FloorDivisionAndModulo) {
  RangeMap r = {{"x", {0, 7}}, {"y", {-5, 3}}, {"d", {2, 4}}};
  EXPECT_EQ(bound_of(V("x") / I(2), r), (Interval{0, 3}));
  EXPECT_EQ(bound_of(V("y") / I(2), r), (Interval{-3, 1}));  // floor(-5/2) = -3
  EXPECT_EQ(bound_of(V("y") / I(-2), r), (Interval{-2, 2}));
  EXPECT_EQ(bound_of(V("x") / V("d"), r), (Interval{0, 3}));
  EXPECT_EQ(bound_of(V("x") / V("y"), r), std::nullopt);  // divisor range contains 0
  EXPECT_EQ(bound_of(V("x") % I(4), r), (Interval{0, 3}));
  EXPECT_EQ(bound_of(V("x") % I(16), r), (Interval{0, 7}));   // already below the modulus
  EXPECT_EQ(bound_of((V("x") + I(8)) % I(16), r), (Interval{8, 15}));
  EXPECT_EQ(bound_of(V("y") % I(4), r), (Interval{0, 3}));
  EXPECT_EQ(bound_of(V("unbounded") % I(4), r), (Interval{0, 3}));
  EXPECT_EQ(bound_of(V("x") % I(-4), r), (Interval{-3, 0}));
  EXPECT_EQ(bound_of(V("x") % V("d"), r), (Interval{0, 3}));
  EXPECT_EQ(bound_of(V("x") % V("y"), r), std::nullopt);
}

TEST(BoundOfTest, MinMaxSelectComparisonsCasts) {
  RangeMap r = {{"x", {0, 7}}, {"y", {3, 10}}};
  EXPECT_EQ(bound_of(Expr::min(V("x"), V("y")), r), (Interval{0, 7}));
  EXPECT_EQ(bound_of(Expr::max(V("x"), V("y")), r), (Interval{3, 10}));
  EXPECT_EQ(bound_of(Expr::min(V("x"), V("z")), r), std::nullopt);
  EXPECT_EQ(bound_of(Expr::select(V("c"), V("x"), I(20)), r), (Interval{0, 20}));
  EXPECT_EQ(bound_of(Expr::select(V("c"), V("x"), V("z")), r), std::nullopt);
  EXPECT_EQ(bound_of(V("x") < V("y"), r), (Interval{0, 1}));
  EXPECT_EQ(bound_of(Expr::not_(V("z")), r), (Interval{0, 1}));
  EXPECT_EQ(bound_of(B(ExprKind::And, V("z"), V("w")), r), (Interval{0, 1}));
  EXPECT_EQ(bound_of(Expr::cast(DType::I64, V("x")), r), (Interval{0, 7}));
  EXPECT_EQ(bound_of(Expr::cast(DType::F32, V("x")), r), std::nullopt);
  EXPECT_EQ(bound_of(Expr::cast(DType::Bool, V("z")), r), (Interval{0, 1}));
}

TEST(BoundOfTest, OverflowGivesNoBound) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  RangeMap r = {{"x", {0, big}}};
  EXPECT_EQ(bound_of(V("x") + I(1), r), std::nullopt);
  EXPECT_EQ(bound_of(V("x") * I(2), r), std::nullopt);
  EXPECT_EQ(bound_of(V("x") - I(1), r), (Interval{-1, big - 1}));
}

// ---- constant folding -------------------------------------------------------------------------

TEST(SimplifyTest, FoldsIntegerConstantsWithFloorSemantics) {
  EXPECT_EQ(S(I(2) + I(3)), "5");
  EXPECT_EQ(S(I(2) - I(7)), "-5");
  EXPECT_EQ(S(I(6) * I(7)), "42");
  EXPECT_EQ(S(I(7) / I(2)), "3");
  EXPECT_EQ(S(I(-7) / I(2)), "-4");
  EXPECT_EQ(S(I(7) / I(-2)), "-4");
  EXPECT_EQ(S(I(-7) % I(3)), "2");
  EXPECT_EQ(S(I(7) % I(-3)), "-2");
  EXPECT_EQ(S(Expr::min(I(3), I(-1))), "-1");
  EXPECT_EQ(S(Expr::max(I(3), I(-1))), "3");
  EXPECT_EQ(S(I(3) < I(4)), "1");
  EXPECT_EQ(S(I(4) <= I(3)), "0");
  EXPECT_EQ(S(B(ExprKind::Eq, I(4), I(4))), "1");
  EXPECT_EQ(S(B(ExprKind::Ne, I(4), I(4))), "0");
  EXPECT_EQ(S(B(ExprKind::And, I(1), I(0))), "0");
  EXPECT_EQ(S(B(ExprKind::Or, I(0), I(5))), "1");
  EXPECT_EQ(S(Expr::not_(I(0))), "1");
  EXPECT_EQ(S(Expr::select(I(1), V("x"), V("y"))), "x");
  EXPECT_EQ(S(Expr::select(I(0), V("x"), V("y"))), "y");
}

TEST(SimplifyTest, DivisionByZeroStaysUnfolded) {
  EXPECT_EQ(S(I(7) / I(0)), "7 / 0");
  EXPECT_EQ(S(I(7) % I(0)), "7 % 0");
  EXPECT_EQ(S(V("x") / I(0)), "x / 0");
  EXPECT_EQ(S(F(1.0) / F(0.0)), "1.0 / 0.0");
  const int64_t min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(S(I(min) / I(-1)), "(-9223372036854775808) / (-1)");  // overflows: left alone
}

TEST(SimplifyTest, FoldsFloatConstants) {
  EXPECT_EQ(S(F(1.5) + F(2.0)), "3.5");
  EXPECT_EQ(S(F(1.0) / F(4.0)), "0.25");
  EXPECT_EQ(S(F(2048.0) * I(2)), "4096.0");
  EXPECT_EQ(S(F(-7.5) % F(2.0)), "0.5");
  EXPECT_EQ(S(Expr::min(F(1.0), F(-2.0))), "-2.0");
  EXPECT_EQ(S(F(1.0) < F(2.0)), "1");
  EXPECT_EQ(S(F(std::nan("")) < F(2.0)), "0");
  EXPECT_EQ(S(B(ExprKind::Ne, F(std::nan("")), F(std::nan("")))), "1");
  EXPECT_EQ(S(Expr::min(F(std::nan("")), F(1.0))), "min(nan, 1.0)");
}

TEST(SimplifyTest, FoldsCastsOfConstantsOnlyWhenExact) {
  EXPECT_EQ(S(Expr::cast(DType::F32, I(2048))), "2048.0");
  EXPECT_EQ(S(Expr::cast(DType::BF16, I(257))), "bf16(257)");  // not representable
  EXPECT_EQ(S(Expr::cast(DType::F16, I(100000))), "f16(100000)");
  EXPECT_EQ(S(Expr::cast(DType::F32, F(0.1))), "f32(0.1)");
  EXPECT_EQ(S(Expr::cast(DType::F32, F(0.5))), "0.5");
  EXPECT_EQ(S(Expr::cast(DType::I32, F(-2.7))), "-2");
  EXPECT_EQ(S(Expr::cast(DType::I32, I(int64_t{1} << 40))), "i32(1099511627776)");
  EXPECT_EQ(S(Expr::cast(DType::I64, I(int64_t{1} << 40))), "1099511627776");
  EXPECT_EQ(S(Expr::cast(DType::Bool, I(7))), "1");
  EXPECT_EQ(S(Expr::cast(DType::F32, Expr::cast(DType::F32, V("x")))), "f32(x)");
  EXPECT_EQ(S(Expr::cast(DType::F32, V("x"))), "f32(x)");
}

// ---- identities and reassociation -------------------------------------------------------------

TEST(SimplifyTest, Identities) {
  Expr x = V("x");
  EXPECT_EQ(S(x + I(0)), "x");
  EXPECT_EQ(S(I(0) + x), "x");
  EXPECT_EQ(S(x - I(0)), "x");
  EXPECT_EQ(S(x * I(1)), "x");
  EXPECT_EQ(S(I(1) * x), "x");
  EXPECT_EQ(S(x * I(0)), "0");
  EXPECT_EQ(S(I(0) * (x / V("y"))), "0");
  EXPECT_EQ(S(x / I(1)), "x");
  EXPECT_EQ(S(x % I(1)), "0");
  EXPECT_EQ(S(x - x), "0");
  EXPECT_EQ(S((x + V("y")) - x), "y");
  EXPECT_EQ(S(x * V("y") - x * V("y")), "0");
  EXPECT_EQ(S(x / I(-1)), "x * (-1)");
}

TEST(SimplifyTest, ConstantsMoveRightAndMerge) {
  Expr x = V("x");
  EXPECT_EQ(S((x + I(2)) + I(3)), "x + 5");
  EXPECT_EQ(S((x * I(2)) * I(3)), "x * 6");
  EXPECT_EQ(S(I(3) + x), "x + 3");
  EXPECT_EQ(S(I(3) * x), "x * 3");
  EXPECT_EQ(S((I(2) + x) - I(5)), "x - 3");
  EXPECT_EQ(S(x + I(-1)), "x - 1");  // never `x + (-1)`
  EXPECT_EQ(S(x - I(-4)), "x + 4");
  EXPECT_EQ(S(x * I(2) + x * I(3)), "x * 5");
  EXPECT_EQ(S((x * I(2)) * (V("y") * I(3))), "x * y * 6");
  EXPECT_EQ(S(I(4) - x), "x * (-1) + 4");
  EXPECT_EQ(S(V("y") * I(-1) + x), "x - y");  // a positive term leads
  // A constant multiple of a sum stays factored outside div/mod.
  EXPECT_EQ(S((x + I(2)) * I(3)), "(x + 2) * 3");
  EXPECT_EQ(S((x + I(2)) * I(3) - (x + I(2)) * I(3)), "0");
  // Float expressions keep their constants where they are: no reassociation.
  EXPECT_EQ(S((x + F(2.0)) + F(3.0)), "x + 2.0 + 3.0");
  EXPECT_EQ(S(F(2.0) * x), "x * 2.0");
  EXPECT_EQ(S(Expr::cast(DType::F32, x) * I(0)), "f32(x) * 0");
  EXPECT_EQ(S(Expr::cast(DType::F32, x) * I(1)), "f32(x)");
  EXPECT_EQ(S(Expr::cast(DType::F32, x) + F(0.0)), "f32(x)");
}

// ---- division and modulo ------------------------------------------------------------------------

TEST(SimplifyTest, ReshapeIndexMathFolds) {
  Expr a0 = V("a0"), a1 = V("a1");
  EXPECT_EQ(S((a0 * I(2048) + a1) / I(2048), kReshape), "a0");
  EXPECT_EQ(S((a0 * I(2048) + a1) % I(2048), kReshape), "a1");
  EXPECT_EQ(S((a1 + a0 * I(2048)) / I(2048), kReshape), "a0");
  EXPECT_EQ(S((I(2048) * a0 + a1) % I(2048), kReshape), "a1");
  // Through a nested factored sum (needs distribution).
  EXPECT_EQ(S(((a0 + I(1)) * I(2048) + a1) / I(2048), kReshape), "a0 + 1");
  EXPECT_EQ(S(((a0 * I(2) + I(1)) * I(1024) + a1 % I(1024)) / I(2048), kReshape), "a0");
  // Three-level flatten/unflatten.
  RangeMap r = {{"i", {0, 3}}, {"j", {0, 31}}, {"k", {0, 63}}};
  Expr flat = (V("i") * I(32) + V("j")) * I(64) + V("k");
  EXPECT_EQ(S(flat / I(2048), r), "i");
  EXPECT_EQ(S(flat / I(64) % I(32), r), "j");
  EXPECT_EQ(S(flat % I(64), r), "k");
  EXPECT_EQ(S(flat % I(2048) / I(64), r), "j");
}

TEST(SimplifyTest, ReshapeIndexMathStaysWhenRemainderMayReachN) {
  Expr a0 = V("a0"), a1 = V("a1");
  // a1's range unknown.
  EXPECT_EQ(S((a0 * I(2048) + a1) / I(2048), {{"a0", {0, 15}}}), "(a0 * 2048 + a1) / 2048");
  EXPECT_EQ(S((a0 * I(2048) + a1) / I(2048)), "(a0 * 2048 + a1) / 2048");
  // a1 can reach 2048.
  RangeMap wide = {{"a0", {0, 15}}, {"a1", {0, 2048}}};
  EXPECT_EQ(S((a0 * I(2048) + a1) / I(2048), wide), "(a0 * 2048 + a1) / 2048");
  EXPECT_EQ(S((a0 * I(2048) + a1) % I(2048), wide), "a1 % 2048");
  // a1 may be negative.
  RangeMap negative = {{"a0", {0, 15}}, {"a1", {-1, 100}}};
  EXPECT_EQ(S((a0 * I(2048) + a1) / I(2048), negative), "(a0 * 2048 + a1) / 2048");
  // The stride is not a multiple of the divisor.
  EXPECT_EQ(S((a0 * I(2047) + a1) / I(2048), kReshape), "(a0 * 2047 + a1) / 2048");
}

TEST(SimplifyTest, ModDropsMultiplesOfN) {
  Expr x = V("x"), y = V("y");
  EXPECT_EQ(S((x * I(8) + y) % I(8)), "y % 8");
  EXPECT_EQ(S((x * I(16) + y + I(9)) % I(8)), "(y + 1) % 8");
  EXPECT_EQ(S((x * I(8)) % I(8)), "0");
  EXPECT_EQ(S((x * I(8) + I(3)) % I(4)), "3");
  EXPECT_EQ(S((x * I(6) + y) % I(4)), "(x * 6 + y) % 4");
}

TEST(SimplifyTest, DivModWithinOneMultiple) {
  RangeMap r = {{"x", {0, 7}}, {"y", {8, 15}}};
  EXPECT_EQ(S(V("x") / I(8), r), "0");
  EXPECT_EQ(S(V("x") % I(8), r), "x");
  EXPECT_EQ(S(V("y") / I(8), r), "1");
  EXPECT_EQ(S(V("y") % I(8), r), "y - 8");
  EXPECT_EQ(S((V("x") + I(9)) % I(8), {{"x", {0, 6}}}), "x + 1");
  // Must not apply when x may reach N.
  EXPECT_EQ(S(V("x") % I(7), r), "x % 7");
  EXPECT_EQ(S(V("x") / I(7), r), "x / 7");
  EXPECT_EQ(S(V("z") % I(8), r), "z % 8");
  EXPECT_EQ(S(V("z") / I(8), r), "z / 8");
}

TEST(SimplifyTest, NestedDivisionAndModulo) {
  Expr x = V("x");
  EXPECT_EQ(S(x / I(4) / I(8)), "x / 32");
  EXPECT_EQ(S(x % I(32) % I(8)), "x % 8");
  EXPECT_EQ(S(x % I(8) % I(32)), "x % 8");  // via bounds: x % 8 is already below 32
  EXPECT_EQ(S(x % I(8) % I(3)), "x % 8 % 3");
  EXPECT_EQ(S(x / I(4) / I(-2)), "x / 4 / (-2)");
  EXPECT_EQ(S((x % I(8)) / I(8)), "0");
  // Common factors cancel: (g*X) / (g*m) == X / m.
  EXPECT_EQ(S((x * I(4) + V("y") * I(2)) / I(8)), "(x * 2 + y) / 4");
  EXPECT_EQ(S((x * I(6)) / I(3)), "x * 2");
}

TEST(SimplifyTest, RejoinsSplitIndices) {
  Expr t = V("t"), x = V("x");
  EXPECT_EQ(S(t / I(32) * I(32) + t % I(32)), "t");
  EXPECT_EQ(S(t % I(32) + t / I(32) * I(32)), "t");
  EXPECT_EQ(S((t / I(32) * I(32) + t % I(32)) * I(3)), "t * 3");
  EXPECT_EQ(S(t / I(32) * I(64) + t % I(32) * I(2)), "t * 2");
  EXPECT_EQ(S((x + t) / I(8) * I(8) + (x + t) % I(8) + I(1)), "x + t + 1");
  EXPECT_EQ(S(t - t / I(32) * I(32)), "t % 32");
  // Must not apply: different divisors, coefficients or operands.
  EXPECT_EQ(S(t / I(32) * I(32) + t % I(16)), "t / 32 * 32 + t % 16");
  EXPECT_EQ(S(t / I(32) * I(31) + t % I(32)), "t / 32 * 31 + t % 32");
  EXPECT_EQ(S(t / I(32) * I(32) + x % I(32)), "t / 32 * 32 + x % 32");
  EXPECT_EQ(S(t - t / I(32) * I(16)), "t - t / 32 * 16");
}

TEST(SimplifyTest, DistributesOnlyWhenItShrinks) {
  Expr x = V("x");
  EXPECT_EQ(S((x + I(1)) * I(4) - x * I(4)), "4");
  EXPECT_EQ(S(I(2) * (x - I(1)) + I(2)), "x * 2");
  EXPECT_EQ(S((x + I(2)) * I(3)), "(x + 2) * 3");
  EXPECT_EQ(S((x + V("y")) * I(3) + I(1)), "(x + y) * 3 + 1");
}

// ---- min / max / comparisons / logic / select --------------------------------------------------

TEST(SimplifyTest, MinMaxDecidedByBounds) {
  RangeMap r = {{"x", {0, 7}}, {"y", {7, 9}}};
  Expr x = V("x"), y = V("y");
  EXPECT_EQ(S(Expr::min(x, y), r), "x");
  EXPECT_EQ(S(Expr::max(x, y), r), "y");
  EXPECT_EQ(S(Expr::min(y, x), r), "x");
  EXPECT_EQ(S(Expr::min(x, I(100)), r), "x");
  EXPECT_EQ(S(Expr::max(x, I(0)), r), "x");
  EXPECT_EQ(S(Expr::min(x + I(1), x + I(3))), "x + 1");  // decided by the difference
  EXPECT_EQ(S(Expr::max(x, x)), "x");
  // Undecided: kept, constant on the right.
  EXPECT_EQ(S(Expr::min(x, I(5)), r), "min(x, 5)");
  EXPECT_EQ(S(Expr::min(I(5), x), r), "min(x, 5)");
  EXPECT_EQ(S(Expr::min(x, V("z")), r), "min(x, z)");
  EXPECT_EQ(S(Expr::min(Expr::min(V("z"), I(5)), I(3))), "min(z, 3)");
  EXPECT_EQ(S(Expr::max(Expr::max(V("z"), I(5)), I(3))), "max(z, 5)");
}

TEST(SimplifyTest, ComparisonsDecidedByBounds) {
  RangeMap r = {{"x", {0, 7}}};
  Expr x = V("x");
  EXPECT_EQ(S(x < I(8), r), "1");
  EXPECT_EQ(S(x < I(7), r), "x < 7");
  EXPECT_EQ(S(x <= I(7), r), "1");
  EXPECT_EQ(S(I(8) <= x, r), "0");
  EXPECT_EQ(S(x < I(0), r), "0");
  EXPECT_EQ(S(B(ExprKind::Eq, x, I(9)), r), "0");
  EXPECT_EQ(S(B(ExprKind::Ne, x, I(-1)), r), "1");
  EXPECT_EQ(S(B(ExprKind::Eq, x, I(3)), r), "x == 3");
  EXPECT_EQ(S(V("z") < V("z") + I(1)), "1");
  EXPECT_EQ(S(B(ExprKind::Eq, V("z") * I(2), V("z") + V("z"))), "1");
  EXPECT_EQ(S(V("z") < I(4)), "z < 4");
  EXPECT_EQ(S(V("z") < V("z")), "0");
  // Float comparisons are not decided by algebra (NaN).
  EXPECT_EQ(S(Expr::cast(DType::F32, x) < Expr::cast(DType::F32, x)), "f32(x) < f32(x)");
}

TEST(SimplifyTest, LogicWithConstants) {
  RangeMap r = {{"x", {0, 7}}};
  Expr c = V("z") < I(4);
  EXPECT_EQ(S(B(ExprKind::And, I(1), c)), "z < 4");
  EXPECT_EQ(S(B(ExprKind::And, c, I(0))), "0");
  EXPECT_EQ(S(B(ExprKind::Or, c, I(0))), "z < 4");
  EXPECT_EQ(S(B(ExprKind::Or, I(2), c)), "1");
  EXPECT_EQ(S(B(ExprKind::And, V("x") < I(8), c), r), "z < 4");
  EXPECT_EQ(S(B(ExprKind::And, c, c)), "z < 4");
  // A non-boolean operand keeps its conversion to bool.
  EXPECT_EQ(S(B(ExprKind::And, I(1), V("z"))), "1 && z");
  EXPECT_EQ(S(Expr::not_(Expr::not_(c))), "z < 4");
  EXPECT_EQ(S(Expr::not_(Expr::not_(V("z")))), "!!z");
  EXPECT_EQ(S(Expr::not_(c)), "4 <= z");
  EXPECT_EQ(S(Expr::not_(B(ExprKind::Eq, V("z"), I(1)))), "z != 1");
  EXPECT_EQ(S(Expr::not_(V("x") < I(8)), r), "0");
}

TEST(SimplifyTest, SelectWithDecidedCondition) {
  RangeMap r = {{"x", {0, 7}}};
  Expr x = V("x");
  EXPECT_EQ(S(Expr::select(x < I(8), x, I(0)), r), "x");
  EXPECT_EQ(S(Expr::select(x < I(0), x, I(0)), r), "0");
  EXPECT_EQ(S(Expr::select(x < I(4), x, I(0)), r), "select(x < 4, x, 0)");
  EXPECT_EQ(S(Expr::select(V("c"), V("y") + I(0), V("y"))), "y");
  EXPECT_EQ(S(Expr::select(x < I(4), I(1), I(0)), r), "x < 4");
  EXPECT_EQ(S(Expr::select(x < I(4), I(0), I(1)), r), "4 <= x");
}

TEST(SimplifyTest, AxisOfExtentOneBecomesZero) {
  EXPECT_EQ(S(V("a0") * I(64) + V("a1"), {{"a0", {0, 0}}, {"a1", {0, 63}}}), "a1");
}

TEST(SimplifyTest, CanonicalAndIdempotent) {
  Expr e = Expr::select(V("a0") < I(4), (V("a0") * I(2048) + V("a1") + I(3)) % I(2048),
                        Expr::min(I(9), V("a2") / I(2) / I(4)));
  Expr s1 = simplify(e, kReshape);
  Expr s2 = simplify(e, kReshape);
  EXPECT_TRUE(structurally_equal(s1, s2));
  EXPECT_EQ(structural_hash(s1), structural_hash(s2));
  EXPECT_TRUE(structurally_equal(simplify(s1, kReshape), s1));
  EXPECT_EQ(s1.str(), "select(a0 < 4, (a1 + 3) % 2048, min(a2 / 8, 9))");
  EXPECT_FALSE(simplify(Expr()).defined());
}

// ---- randomized property test -----------------------------------------------------------------

// A test-local evaluator: integers only, floor division/modulo; nullopt where undefined.
std::optional<int64_t> eval(const Expr& e, const std::map<std::string, int64_t>& env) {
  auto fd = [](int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  };
  switch (e.kind()) {
    case ExprKind::Int: return e.int_value();
    case ExprKind::Var: return env.at(e.name());
    case ExprKind::Not: {
      auto a = eval(e.operand(0), env);
      if (!a) return std::nullopt;
      return *a == 0 ? 1 : 0;
    }
    case ExprKind::Select: {
      auto c = eval(e.operand(0), env);
      if (!c) return std::nullopt;
      return eval(e.operand(*c != 0 ? 1 : 2), env);
    }
    default: break;
  }
  auto a = eval(e.operand(0), env);
  auto b = eval(e.operand(1), env);
  if (!a || !b) return std::nullopt;
  switch (e.kind()) {
    case ExprKind::Add: return *a + *b;
    case ExprKind::Sub: return *a - *b;
    case ExprKind::Mul: return *a * *b;
    case ExprKind::Div: if (*b == 0) return std::nullopt; return fd(*a, *b);
    case ExprKind::Mod: if (*b == 0) return std::nullopt; return *a - fd(*a, *b) * *b;
    case ExprKind::Min: return std::min(*a, *b);
    case ExprKind::Max: return std::max(*a, *b);
    case ExprKind::Lt: return *a < *b ? 1 : 0;
    case ExprKind::Le: return *a <= *b ? 1 : 0;
    case ExprKind::Eq: return *a == *b ? 1 : 0;
    case ExprKind::Ne: return *a != *b ? 1 : 0;
    case ExprKind::And: return (*a != 0 && *b != 0) ? 1 : 0;
    case ExprKind::Or: return (*a != 0 || *b != 0) ? 1 : 0;
    default: return std::nullopt;
  }
}

// True when some `x + c` or `x - c` has a negative literal c (simplify writes x - 1, not x + (-1)).
bool adds_negative_constant(const Expr& e) {
  if ((e.is(ExprKind::Add) || e.is(ExprKind::Sub)) && e.operand(1).is(ExprKind::Int) &&
      e.operand(1).int_value() < 0) {
    return true;
  }
  for (const Expr& op : e.operands()) {
    if (adds_negative_constant(op)) return true;
  }
  return false;
}

// Random small integer expressions; std::mt19937_64's sequence is fixed by the standard and
// the distributions below are hand-rolled, so the corpus is the same on every platform.
class ExprGenerator {
 public:
  explicit ExprGenerator(uint64_t seed) : rng_(seed) {}

  Expr gen(int depth) {
    if (depth == 0 || pick(5) == 0) return leaf();
    switch (pick(16)) {
      case 0: case 1: return gen(depth - 1) + gen(depth - 1);
      case 2: return gen(depth - 1) - gen(depth - 1);
      case 3: return gen(depth - 1) * small_const();
      case 4: return gen(depth - 1) * gen(depth - 1);
      case 5: case 6: return gen(depth - 1) / divisor();
      case 7: case 8: return gen(depth - 1) % divisor();
      case 9: {  // the reshape shape: (x * N + y) / N or % N
        int64_t n = 1 + static_cast<int64_t>(pick(8));
        Expr s = gen(depth - 1) * Expr::int_(n) + gen(depth - 1);
        return pick(2) ? s / Expr::int_(n) : s % Expr::int_(n);
      }
      case 10: return Expr::binary(pick(2) ? ExprKind::Min : ExprKind::Max, gen(depth - 1),
                                   gen(depth - 1));
      case 11: {
        static constexpr ExprKind kCmp[] = {ExprKind::Lt, ExprKind::Le, ExprKind::Eq, ExprKind::Ne};
        return Expr::binary(kCmp[pick(4)], gen(depth - 1), gen(depth - 1));
      }
      case 12: return Expr::binary(pick(2) ? ExprKind::And : ExprKind::Or, gen(depth - 1),
                                   gen(depth - 1));
      case 13: return Expr::not_(gen(depth - 1));
      case 14: return Expr::select(gen(depth - 1), gen(depth - 1), gen(depth - 1));
      default: return gen(depth - 1) / gen(depth - 1);  // divisor may be zero: undefined points
    }
  }

 private:
  uint64_t pick(uint64_t n) { return rng_() % n; }
  Expr leaf() {
    static const char* kVars[] = {"a", "b", "c", "d"};
    if (pick(3) == 0) return Expr::int_(static_cast<int64_t>(pick(11)) - 4);
    return Expr::var(kVars[pick(4)]);
  }
  Expr small_const() { return Expr::int_(static_cast<int64_t>(pick(9)) - 3); }
  Expr divisor() {
    static constexpr int64_t kDivisors[] = {1, 2, 3, 4, 8, -2, -3};
    return Expr::int_(kDivisors[pick(7)]);
  }
  std::mt19937_64 rng_;
};

TEST(SimplifyTest, RandomExpressionsKeepTheirValue) {
  const RangeMap ranges = {{"a", {0, 3}}, {"b", {0, 7}}, {"c", {-3, 2}}, {"d", {1, 4}}};
  ExprGenerator gen(20240611);
  int checked_points = 0, changed = 0;
  const int iterations = test::sanitizer_count(3000);
  for (int iter = 0; iter < iterations; ++iter) {
    Expr e = gen.gen(4);
    // Half the cases without range knowledge: the rules that need none must still be exact.
    RangeMap use = iter % 2 == 0 ? ranges : RangeMap{};
    Expr s = simplify(e, use);
    if (!structurally_equal(s, e)) ++changed;
    ASSERT_TRUE(structurally_equal(simplify(s, use), s)) << e.str() << "  ->  " << s.str();
    EXPECT_FALSE(adds_negative_constant(s)) << s.str();
    auto b = bound_of(e, ranges);
    for (int64_t a = 0; a <= 3; ++a) {
      for (int64_t bb = 0; bb <= 7; ++bb) {
        for (int64_t c = -3; c <= 2; ++c) {
          for (int64_t d = 1; d <= 4; ++d) {
            std::map<std::string, int64_t> env = {{"a", a}, {"b", bb}, {"c", c}, {"d", d}};
            auto expected = eval(e, env);
            if (!expected) continue;  // undefined at this point (division by zero)
            auto got = eval(s, env);
            ASSERT_TRUE(got.has_value()) << e.str() << "  ->  " << s.str();
            ASSERT_EQ(*got, *expected) << e.str() << "  ->  " << s.str() << " at a=" << a
                                       << " b=" << bb << " c=" << c << " d=" << d;
            if (b) {
              ASSERT_TRUE(b->contains(*expected)) << "bound_of(" << e.str() << ") = [" << b->lo
                                                  << ", " << b->hi << "] misses " << *expected;
            }
            ++checked_points;
          }
        }
      }
    }
  }
  EXPECT_GT(checked_points, iterations * 166);
  EXPECT_GT(changed, iterations / 2);  // the corpus exercises the rewrites, not just no-ops
}

}  // namespace
}  // namespace tessera

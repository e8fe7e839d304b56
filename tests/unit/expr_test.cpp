// Unit tests for Expr: construction, printing with minimal parentheses, structural equality and
// hashing, substitution and free variables.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "tessera/ir/expr.h"

namespace tessera {
namespace {

Expr V(const char* n) { return Expr::var(n); }
Expr I(int64_t v) { return Expr::int_(v); }
Expr B(ExprKind k, Expr a, Expr b) { return Expr::binary(k, std::move(a), std::move(b)); }

TEST(ExprTest, KindNamesRoundTrip) {
  EXPECT_EQ(expr_kind_name(ExprKind::Var), "Var");
  EXPECT_EQ(expr_kind_name(ExprKind::Select), "Select");
  EXPECT_EQ(expr_kind_name(ExprKind::Cast), "Cast");
  for (int k = 0; k <= static_cast<int>(ExprKind::Cast); ++k) {
    auto kind = static_cast<ExprKind>(k);
    EXPECT_EQ(parse_expr_kind(expr_kind_name(kind)), kind) << expr_kind_name(kind);
  }
  EXPECT_EQ(parse_expr_kind("add"), std::nullopt);
  EXPECT_EQ(parse_expr_kind(""), std::nullopt);
  EXPECT_EQ(parse_expr_kind("Bogus"), std::nullopt);
}

TEST(ExprTest, Accessors) {
  Expr undefined;
  EXPECT_FALSE(undefined.defined());
  EXPECT_FALSE(undefined.is(ExprKind::Var));
  Expr a = V("a0");
  EXPECT_TRUE(a.is(ExprKind::Var));
  EXPECT_EQ(a.name(), "a0");
  EXPECT_FALSE(a.is_const());
  EXPECT_TRUE(I(3).is_const());
  EXPECT_EQ(I(-3).int_value(), -3);
  EXPECT_TRUE(Expr::float_(0.5).is_const());
  EXPECT_EQ(Expr::float_(0.5).float_value(), 0.5);
  Expr c = Expr::cast(DType::F16, a);
  EXPECT_EQ(c.cast_type(), DType::F16);
  ASSERT_EQ(c.operands().size(), 1u);
  EXPECT_TRUE(c.operand(0).same_node(a));
  Expr s = Expr::select(a < I(4), a, I(0));
  EXPECT_EQ(s.kind(), ExprKind::Select);
  EXPECT_EQ(s.operands().size(), 3u);
  EXPECT_TRUE(a.operands().empty());
}

TEST(ExprTest, PrintsEveryKind) {
  Expr a = V("a"), b = V("b");
  EXPECT_EQ(V("threadIdx.x").str(), "threadIdx.x");
  EXPECT_EQ(I(42).str(), "42");
  EXPECT_EQ(I(-7).str(), "-7");
  EXPECT_EQ(Expr::float_(2048.0).str(), "2048.0");
  EXPECT_EQ(Expr::float_(0.0).str(), "0.0");
  EXPECT_EQ(Expr::float_(1e-6).str(), "1e-06");
  EXPECT_EQ(Expr::float_(0.5).str(), "0.5");
  EXPECT_EQ(Expr::float_(std::numeric_limits<double>::infinity()).str(), "inf");
  EXPECT_EQ(Expr::float_(-std::numeric_limits<double>::infinity()).str(), "-inf");
  EXPECT_EQ(Expr::float_(std::nan("")).str(), "nan");
  EXPECT_EQ((a + b).str(), "a + b");
  EXPECT_EQ((a - b).str(), "a - b");
  EXPECT_EQ((a * b).str(), "a * b");
  EXPECT_EQ((a / b).str(), "a / b");
  EXPECT_EQ((a % b).str(), "a % b");
  EXPECT_EQ(Expr::min(a, b).str(), "min(a, b)");
  EXPECT_EQ(Expr::max(a, I(7)).str(), "max(a, 7)");
  EXPECT_EQ((a < b).str(), "a < b");
  EXPECT_EQ((a <= b).str(), "a <= b");
  EXPECT_EQ(B(ExprKind::Eq, a, b).str(), "a == b");
  EXPECT_EQ(B(ExprKind::Ne, a, b).str(), "a != b");
  EXPECT_EQ(B(ExprKind::And, a, b).str(), "a && b");
  EXPECT_EQ(B(ExprKind::Or, a, b).str(), "a || b");
  EXPECT_EQ(Expr::not_(a).str(), "!a");
  EXPECT_EQ(Expr::select(a < I(4), a, I(0)).str(), "select(a < 4, a, 0)");
  EXPECT_EQ(Expr::cast(DType::F32, a).str(), "f32(a)");
  EXPECT_EQ(Expr::cast(DType::BF16, a + b).str(), "bf16(a + b)");
  EXPECT_EQ(Expr().str(), "<undef>");
}

TEST(ExprTest, PrintsMinimalParentheses) {
  Expr a = V("a"), b = V("b"), c = V("c");
  EXPECT_EQ((a * I(2048) + b).str(), "a * 2048 + b");
  EXPECT_EQ(((a + b) * c).str(), "(a + b) * c");
  EXPECT_EQ((a + b * c).str(), "a + b * c");
  EXPECT_EQ((a * (b + c)).str(), "a * (b + c)");
  // Left associativity: the left chain needs no parentheses, a right nested one does.
  EXPECT_EQ((a - b - c).str(), "a - b - c");
  EXPECT_EQ((a - (b - c)).str(), "a - (b - c)");
  EXPECT_EQ((a + (b + c)).str(), "a + (b + c)");
  EXPECT_EQ((a - (b + c)).str(), "a - (b + c)");
  EXPECT_EQ((a / b / c).str(), "a / b / c");
  EXPECT_EQ((a / (b / c)).str(), "a / (b / c)");
  EXPECT_EQ((a * (b / c)).str(), "a * (b / c)");
  EXPECT_EQ((a / b * c).str(), "a / b * c");
  EXPECT_EQ(((a * I(2048) + b) / I(2048)).str(), "(a * 2048 + b) / 2048");
  EXPECT_EQ(((a * I(2048) + b) % I(2048)).str(), "(a * 2048 + b) % 2048");
  // Comparisons sit below arithmetic, logic below comparisons; && binds tighter than ||.
  EXPECT_EQ((a + b < c * I(2)).str(), "a + b < c * 2");
  EXPECT_EQ(B(ExprKind::And, a < b, b <= c).str(), "a < b && b <= c");
  EXPECT_EQ(B(ExprKind::Or, B(ExprKind::And, a, b), c).str(), "a && b || c");
  EXPECT_EQ(B(ExprKind::And, B(ExprKind::Or, a, b), c).str(), "(a || b) && c");
  EXPECT_EQ(B(ExprKind::Eq, a < b, c).str(), "(a < b) == c");
  EXPECT_EQ(((a < b) + c).str(), "(a < b) + c");
  EXPECT_EQ(Expr::not_(a < b).str(), "!(a < b)");
  EXPECT_EQ(Expr::not_(Expr::not_(a)).str(), "!!a");
  EXPECT_EQ((Expr::not_(a) + b).str(), "!a + b");
  // Calls never need parentheses around their arguments or themselves.
  EXPECT_EQ((Expr::min(a + b, c) * I(2)).str(), "min(a + b, c) * 2");
  EXPECT_EQ(Expr::select(B(ExprKind::And, a < b, b < c), a + b, c - I(1)).str(),
            "select(a < b && b < c, a + b, c - 1)");
}

TEST(ExprTest, NegativeLiteralOperandsAreParenthesized) {
  Expr a = V("a");
  EXPECT_EQ((a + I(-1)).str(), "a + (-1)");
  EXPECT_EQ((a - I(-1)).str(), "a - (-1)");
  EXPECT_EQ((I(-2) * a).str(), "(-2) * a");
  EXPECT_EQ((a * Expr::float_(-0.5)).str(), "a * (-0.5)");
  EXPECT_EQ(Expr::min(a, I(-1)).str(), "min(a, -1)");
  EXPECT_EQ(Expr::cast(DType::F32, I(-3)).str(), "f32(-3)");
}

TEST(ExprTest, StructuralEqualityAndHash) {
  Expr e1 = (V("a0") * I(2048) + V("a1")) / I(2048);
  Expr e2 = (V("a0") * I(2048) + V("a1")) / I(2048);
  EXPECT_FALSE(e1.same_node(e2));
  EXPECT_TRUE(structurally_equal(e1, e2));
  EXPECT_EQ(structural_hash(e1), structural_hash(e2));

  std::vector<Expr> different = {
      (V("a0") * I(2048) + V("a1")) % I(2048),   // kind
      (V("a0") * I(2047) + V("a1")) / I(2048),   // int value
      (V("a0") * I(2048) + V("a2")) / I(2048),   // var name
      (V("a1") * I(2048) + V("a0")) / I(2048),   // operand order
      (V("a0") * I(2048) + V("a1")),             // depth
  };
  for (const Expr& d : different) {
    EXPECT_FALSE(structurally_equal(e1, d)) << d.str();
    EXPECT_NE(structural_hash(e1), structural_hash(d)) << d.str();
  }
  EXPECT_FALSE(structurally_equal(I(1), Expr::float_(1.0)));
  EXPECT_NE(structural_hash(I(1)), structural_hash(Expr::float_(1.0)));
  EXPECT_FALSE(structurally_equal(Expr::cast(DType::F32, V("x")), Expr::cast(DType::F16, V("x"))));
  EXPECT_NE(structural_hash(Expr::cast(DType::F32, V("x"))),
            structural_hash(Expr::cast(DType::F16, V("x"))));
  EXPECT_TRUE(structurally_equal(Expr::float_(std::nan("")), Expr::float_(std::nan(""))));
  EXPECT_FALSE(structurally_equal(Expr(), V("x")));
  EXPECT_TRUE(structurally_equal(Expr(), Expr()));
  // Variable names are hashed with their length, so concatenations do not collide.
  EXPECT_NE(structural_hash(V("ab") + V("c")), structural_hash(V("a") + V("bc")));
}

TEST(ExprTest, HashIsStableAcrossRunsAndPlatforms) {
  // Pinned values: the hash is the tuning-cache key, so it must never depend on pointers,
  // std::hash or the platform. Changing the hash function invalidates every tuning database.
  EXPECT_EQ(structural_hash(V("a0")), structural_hash(Expr::var(std::string("a") + "0")));
  const uint64_t h = structural_hash((V("a0") * I(2048) + V("a1")) / I(2048));
  EXPECT_EQ(h, structural_hash((V("a0") * I(2048) + V("a1")) / I(2048)));
  EXPECT_EQ(h, 9629325483628402563ull);
}

TEST(ExprTest, HashesSpreadOverManySmallTrees) {
  std::set<uint64_t> hashes;
  int count = 0;
  for (int i = -20; i < 20; ++i) {
    for (const char* v : {"a0", "a1", "v0"}) {
      for (ExprKind k : {ExprKind::Add, ExprKind::Sub, ExprKind::Mul, ExprKind::Lt}) {
        hashes.insert(structural_hash(B(k, V(v), I(i))));
        hashes.insert(structural_hash(B(k, I(i), V(v))));
        count += 2;
      }
    }
  }
  EXPECT_EQ(hashes.size(), static_cast<size_t>(count));
}

TEST(ExprTest, SubstituteReplacesVarsAndKeepsUntouchedSubtrees) {
  Expr a0 = V("a0"), a1 = V("a1");
  Expr untouched = V("v0") * I(3);
  Expr e = Expr::select(a0 < I(4), a0 * I(2048) + a1, untouched);
  Expr r = substitute(e, {{"a0", V("b0") + I(1)}, {"zz", I(9)}});
  EXPECT_EQ(r.str(), "select(b0 + 1 < 4, (b0 + 1) * 2048 + a1, v0 * 3)");
  EXPECT_TRUE(r.operand(2).same_node(untouched));
  EXPECT_EQ(e.str(), "select(a0 < 4, a0 * 2048 + a1, v0 * 3)");  // the input is immutable
  EXPECT_TRUE(substitute(e, {}).same_node(e));
  EXPECT_TRUE(substitute(e, {{"nothing", I(0)}}).same_node(e));
  EXPECT_EQ(substitute(Expr::not_(Expr::cast(DType::I32, a0)), {{"a0", I(5)}}).str(), "!i32(5)");
  // Substitution is simultaneous, not sequential.
  EXPECT_EQ(substitute(a0 + a1, {{"a0", a1}, {"a1", a0}}).str(), "a1 + a0");
}

TEST(ExprTest, FreeVarsInFirstOccurrenceOrder) {
  Expr e = Expr::select(V("c") < V("a"), V("b") + V("c"), Expr::min(V("a"), V("d")));
  EXPECT_EQ(free_vars(e), (std::vector<std::string>{"c", "a", "b", "d"}));
  EXPECT_TRUE(free_vars(I(3) + I(4)).empty());
  EXPECT_TRUE(free_vars(Expr()).empty());
}

TEST(ExprTest, OperatorOverloadsBuildTheExpectedKinds) {
  Expr a = V("a");
  EXPECT_EQ((a + 1).kind(), ExprKind::Add);
  EXPECT_EQ((a - 1).kind(), ExprKind::Sub);
  EXPECT_EQ((a * 1).kind(), ExprKind::Mul);
  EXPECT_EQ((a / 1).kind(), ExprKind::Div);
  EXPECT_EQ((a % 1).kind(), ExprKind::Mod);
  EXPECT_EQ((a < a).kind(), ExprKind::Lt);
  EXPECT_EQ((a <= a).kind(), ExprKind::Le);
  EXPECT_EQ((a % 3).operand(1).int_value(), 3);
}

}  // namespace
}  // namespace tessera

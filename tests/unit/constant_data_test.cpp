// Unit tests for the deterministic data generators: the splitmix64 stream against its published
// values, distribution sanity, ConstantOp data (values / full / zeros / ones / randn * scale) and
// InputOp data (per-node streams, randint, dtype rounding).
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/eval/constant_data.h"
#include "support/hand_built_program.h"

namespace tessera {
namespace {

using test::f32;

TEST(ConstantDataTest, SplitMixMatchesPublishedSequence) {
  // Reference values of splitmix64 seeded with 0 (Vigna's reference implementation).
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(rng.next(), 0x06C45D188009454FULL);
}

TEST(ConstantDataTest, UniformAndNormalHaveTheRightMoments) {
  SplitMix64 rng(42);
  const int n = 200000;
  double sum_u = 0, sum_n = 0, sum_n2 = 0;
  for (int i = 0; i < n; ++i) {
    double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum_u += u;
  }
  for (int i = 0; i < n; ++i) {
    double z = rng.normal();
    ASSERT_TRUE(std::isfinite(z));
    sum_n += z;
    sum_n2 += z * z;
  }
  EXPECT_NEAR(sum_u / n, 0.5, 0.005);
  EXPECT_NEAR(sum_n / n, 0.0, 0.01);
  EXPECT_NEAR(sum_n2 / n, 1.0, 0.02);
}

TEST(ConstantDataTest, LiteralValuesAreUsedAsGiven) {
  ConstantOp op;
  op.values = {1.5, -2.0, 3.0, 4.25};
  Expected<TensorValue> v = constant_data(op, f32({2, 2}));
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->data, (std::vector<double>{1.5, -2.0, 3.0, 4.25}));
  EXPECT_EQ(v->type, f32({2, 2}));

  op.values = {7.0};
  v = constant_data(op, f32({3}));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->data, (std::vector<double>{7.0, 7.0, 7.0}));
}

TEST(ConstantDataTest, WrongNumberOfValuesIsAnErrorNamingTheConstant) {
  ConstantOp op;
  op.path = "up.weight";
  op.values = {1.0, 2.0};
  Expected<TensorValue> v = constant_data(op, f32({3}));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("up.weight"), std::string::npos) << v.error().message;
  EXPECT_NE(v.error().message.find("needs 3"), std::string::npos) << v.error().message;
}

TEST(ConstantDataTest, FullZerosOnesAndScaledRandn) {
  ConstantOp full;
  full.init = "full";
  full.scale = 0.25;
  EXPECT_EQ(constant_data(full, f32({2}))->data, (std::vector<double>{0.25, 0.25}));
  ConstantOp zeros;
  zeros.init = "zeros";
  EXPECT_EQ(constant_data(zeros, f32({2}))->data, (std::vector<double>{0.0, 0.0}));
  ConstantOp ones;
  ones.init = "ones";
  ones.scale = 5.0;  // scale does not apply to ones
  EXPECT_EQ(constant_data(ones, f32({2}))->data, (std::vector<double>{1.0, 1.0}));

  ConstantOp randn;
  randn.seed = 7;
  randn.scale = 0.5;
  Expected<TensorValue> a = constant_data(randn, f32({4, 8}));
  ASSERT_TRUE(a);
  SplitMix64 rng(7);
  // f32 constants hold what an f32 buffer stores.
  for (double v : a->data) EXPECT_EQ(v, static_cast<double>(static_cast<float>(rng.normal() * 0.5)));
  randn.seed = 8;
  EXPECT_NE(constant_data(randn, f32({4, 8}))->data, a->data);
}

TEST(ConstantDataTest, UnknownInitIsAnError) {
  ConstantOp op;
  op.init = "xavier";
  Expected<TensorValue> v = constant_data(op, f32({2}));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("'xavier'"), std::string::npos);
}

Graph two_input_graph() {
  Graph g;
  auto a = std::make_unique<InputOp>();
  g.add("a", std::move(a), {}, f32({3, 5}));
  auto b = std::make_unique<InputOp>();
  g.add("b", std::move(b), {}, f32({3, 5}));
  auto ids = std::make_unique<InputOp>();
  ids->init = "randint";
  ids->fill = 10;
  g.add("ids", std::move(ids), {}, TensorType{Shape{1000}, DType::I64});
  auto full = std::make_unique<InputOp>();
  full->init = "full";
  full->fill = 2.5;
  g.add("f", std::move(full), {}, f32({2}));
  auto w = std::make_unique<ConstantOp>();
  g.add("w", std::move(w), {}, f32({2}));
  return g;
}

TEST(ConstantDataTest, InputsAreDeterministicPerNodeAndSeed) {
  Graph g = two_input_graph();
  ValueMap v1 = make_inputs(g, 1);
  ValueMap v2 = make_inputs(g, 1);
  ValueMap v3 = make_inputs(g, 2);
  ASSERT_EQ(v1.size(), 4u);  // constants are not inputs
  EXPECT_FALSE(v1.count("w"));
  EXPECT_EQ(v1.at("a").data, v2.at("a").data);
  EXPECT_NE(v1.at("a").data, v1.at("b").data);  // same shape, different node: different stream
  EXPECT_NE(v1.at("a").data, v3.at("a").data);
  EXPECT_EQ(v1.at("f").data, (std::vector<double>{2.5, 2.5}));
  EXPECT_EQ(v1.at("a").type, f32({3, 5}));
}

TEST(ConstantDataTest, RandintIsIntegralAndInRange) {
  ValueMap v = make_inputs(two_input_graph(), 3);
  std::vector<int> seen(10, 0);
  for (double x : v.at("ids").data) {
    ASSERT_EQ(x, std::floor(x));
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 10.0);
    seen[static_cast<size_t>(x)]++;
  }
  for (int count : seen) EXPECT_GT(count, 50);  // 1000 draws over 10 values
}

TEST(ConstantDataTest, IntegerInputsAreRoundedToTheirDtype) {
  InputOp op;
  op.init = "full";
  op.fill = -2.75;
  Expected<TensorValue> v = input_data(op, TensorType{Shape{2}, DType::I32}, "x", 0);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->data, (std::vector<double>{-2.0, -2.0}));
  v = input_data(op, TensorType{Shape{1}, DType::Bool}, "x", 0);
  EXPECT_EQ(v->data, (std::vector<double>{1.0}));
}

}  // namespace
}  // namespace tessera

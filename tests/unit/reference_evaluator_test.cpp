// Unit tests for evaluate_reference: each Torch IR target of docs/torch-ops.md against small cases
// computed by hand (broadcasting corners, scalar operand positions, 1-D matmul, keepdim, GQA and
// causal attention, odd sizes), the located errors, and compare_values.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/printer.h"
#include "support/built_plugins.h"
#include "tessera/plugin/plugin_host.h"
#include "support/hand_built_program.h"

namespace tessera {
namespace {

using test::f32;

// A Torch IR graph under construction plus the input values the test gives it.
struct TorchProgram : test::HandBuiltProgram {
  void op(const std::string& id, const std::string& target, std::vector<std::string> ins, TensorType t,
          Attrs attrs = {}, std::vector<std::pair<int64_t, double>> scalars = {}) {
    auto o = std::make_unique<TorchOp>();
    o->target = target;
    o->attrs = std::move(attrs);
    o->scalar_args = std::move(scalars);
    g.add(id, std::move(o), std::move(ins), std::move(t));
  }
  Expected<ValueMap> run() const { return evaluate_reference(g, inputs); }
  std::vector<double> value(const std::string& id) const {
    Expected<ValueMap> v = run();
    EXPECT_TRUE(v) << v.error().render();
    return v ? v->at(id).data : std::vector<double>{};
  }
};

Attrs attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  Attrs a;
  for (const auto& [k, v] : items) a.set(k, v);
  return a;
}

void expect_near(const std::vector<double>& actual, const std::vector<double>& expected, double tol = 1e-12) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
}

// ---- elementwise -------------------------------------------------------------------------------

TEST(ReferenceEvaluatorTest, AddBroadcastsBothWays) {
  TorchProgram p;
  p.input("col", {2, 1}, {10, 20});
  p.input("row", {3}, {1, 2, 3});
  p.op("sum", "add", {"col", "row"}, f32({2, 3}));
  EXPECT_EQ(p.value("sum"), (std::vector<double>{11, 12, 13, 21, 22, 23}));
}

TEST(ReferenceEvaluatorTest, BroadcastingAcrossRanksAndSizeOneDims) {
  TorchProgram p;
  p.input("a", {2, 1, 3}, {1, 2, 3, 4, 5, 6});
  p.input("b", {2, 1}, {10, 100});
  p.op("m", "mul", {"a", "b"}, f32({2, 2, 3}));
  EXPECT_EQ(p.value("m"), (std::vector<double>{10, 20, 30, 100, 200, 300, 40, 50, 60, 400, 500, 600}));
}

TEST(ReferenceEvaluatorTest, ScalarOperandsSitAtTheirPositions) {
  TorchProgram p;
  p.input("x", {3}, {1, 2, 4});
  p.op("one_minus", "sub", {"x"}, f32({3}), {}, {{0, 1.0}});  // 1 - x
  p.op("minus_one", "sub", {"x"}, f32({3}), {}, {{1, 1.0}});  // x - 1
  p.op("sq", "pow", {"x"}, f32({3}), {}, {{1, 2.0}});         // x ** 2
  p.op("two_to", "pow", {"x"}, f32({3}), {}, {{0, 2.0}});     // 2 ** x
  p.op("inv", "div", {"x"}, f32({3}), {}, {{0, 1.0}});        // 1 / x
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("one_minus").data, (std::vector<double>{0, -1, -3}));
  EXPECT_EQ(v->at("minus_one").data, (std::vector<double>{0, 1, 3}));
  EXPECT_EQ(v->at("sq").data, (std::vector<double>{1, 4, 16}));
  EXPECT_EQ(v->at("two_to").data, (std::vector<double>{2, 4, 16}));
  EXPECT_EQ(v->at("inv").data, (std::vector<double>{1, 0.5, 0.25}));
}

TEST(ReferenceEvaluatorTest, IntegerDivisionIsTrueDivision) {
  TorchProgram p;
  p.input("a", {2}, {7, -7}, DType::I64);
  p.input("b", {2}, {2, 2}, DType::I64);
  p.op("q", "div", {"a", "b"}, f32({2}));
  p.op("s", "add", {"a", "b"}, TensorType{Shape{2}, DType::I64});
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("q").data, (std::vector<double>{3.5, -3.5}));
  EXPECT_EQ(v->at("s").data, (std::vector<double>{9, -5}));
}

TEST(ReferenceEvaluatorTest, ComparisonsAndWhereWithScalars) {
  TorchProgram p;
  const TensorType b3{Shape{3}, DType::Bool};
  p.input("x", {3}, {-1, 0, 2});
  p.input("y", {3}, {0, 0, 0});
  p.op("lt", "lt", {"x", "y"}, b3);
  p.op("le", "le", {"x"}, b3, {}, {{1, 0.0}});
  p.op("gt", "gt", {"x"}, b3, {}, {{0, 0.0}});  // 0 > x
  p.op("ge", "ge", {"x", "y"}, b3);
  p.op("eq", "eq", {"x", "y"}, b3);
  p.op("ne", "ne", {"x", "y"}, b3);
  p.op("w", "where", {"lt", "x"}, f32({3}), {}, {{2, 9.0}});        // where(x < y, x, 9)
  p.op("w2", "where", {"lt"}, f32({3}), {}, {{1, 1.0}, {2, -1.0}});  // where(c, 1, -1)
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("lt").data, (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(v->at("le").data, (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(v->at("gt").data, (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(v->at("ge").data, (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(v->at("eq").data, (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(v->at("ne").data, (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(v->at("w").data, (std::vector<double>{-1, 9, 9}));
  EXPECT_EQ(v->at("w2").data, (std::vector<double>{1, -1, -1}));
}

TEST(ReferenceEvaluatorTest, WhereBroadcastsAllThreeOperands) {
  TorchProgram p;
  p.input("c", {2, 1}, {1, 0}, DType::Bool);
  p.input("a", {3}, {1, 2, 3});
  p.input("b", {1}, {-5});
  p.op("w", "where", {"c", "a", "b"}, f32({2, 3}));
  EXPECT_EQ(p.value("w"), (std::vector<double>{1, 2, 3, -5, -5, -5}));
}

TEST(ReferenceEvaluatorTest, UnaryMath) {
  TorchProgram p;
  p.input("x", {2}, {1.0, -2.0});
  p.input("pos", {2}, {4.0, 0.25});
  const TensorType t = f32({2});
  for (const char* fn : {"neg", "abs", "relu", "exp", "tanh", "sigmoid", "silu"}) p.op(fn, fn, {"x"}, t);
  for (const char* fn : {"log", "sqrt", "rsqrt", "reciprocal"}) p.op(fn, fn, {"pos"}, t);
  p.op("maximum", "maximum", {"x", "pos"}, t);
  p.op("minimum", "minimum", {"x", "pos"}, t);
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  const double e = std::numbers::e;
  expect_near(v->at("neg").data, {-1, 2});
  expect_near(v->at("abs").data, {1, 2});
  expect_near(v->at("relu").data, {1, 0});
  expect_near(v->at("exp").data, {e, 1 / (e * e)});
  expect_near(v->at("tanh").data, {0.7615941559557649, -0.9640275800758169});
  expect_near(v->at("sigmoid").data, {0.7310585786300049, 0.11920292202211755});
  expect_near(v->at("silu").data, {0.7310585786300049, -0.2384058440442351});
  expect_near(v->at("log").data, {std::log(4.0), std::log(0.25)});
  expect_near(v->at("sqrt").data, {2, 0.5});
  expect_near(v->at("rsqrt").data, {0.5, 2});
  expect_near(v->at("reciprocal").data, {0.25, 4});
  expect_near(v->at("maximum").data, {4, 0.25});
  expect_near(v->at("minimum").data, {1, -2});
}

TEST(ReferenceEvaluatorTest, GeluBothForms) {
  TorchProgram p;
  p.input("x", {3}, {1.0, -1.0, 0.0});
  p.op("exact", "gelu", {"x"}, f32({3}), attrs({{"approximate", std::string("none")}}));
  p.op("tanh", "gelu", {"x"}, f32({3}), attrs({{"approximate", std::string("tanh")}}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  // PyTorch: F.gelu(tensor([1., -1.])) = [0.8413, -0.1587]; approximate='tanh' = [0.8412, -0.1588].
  expect_near(v->at("exact").data, {0.8413447460685429, -0.15865525393145707, 0.0});
  expect_near(v->at("tanh").data, {0.8411919906082768, -0.15880800939172324, 0.0});
}

TEST(ReferenceEvaluatorTest, CastTruncatesAndMakesBooleans) {
  TorchProgram p;
  p.input("x", {4}, {1.7, -1.7, 0.0, 2.0});
  p.op("i", "cast", {"x"}, TensorType{Shape{4}, DType::I32}, attrs({{"dtype", std::string("int32")}}));
  p.op("b", "cast", {"x"}, TensorType{Shape{4}, DType::Bool}, attrs({{"dtype", std::string("bool")}}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("i").data, (std::vector<double>{1, -1, 0, 2}));
  EXPECT_EQ(v->at("b").data, (std::vector<double>{1, 1, 0, 1}));
}

// ---- matmul family -----------------------------------------------------------------------------

TEST(ReferenceEvaluatorTest, MatmulMatrixAndVectorCases) {
  TorchProgram p;
  p.input("A", {2, 2}, {1, 2, 3, 4});
  p.input("B", {2, 2}, {5, 6, 7, 8});
  p.input("v", {2}, {1, 2});
  p.input("W", {2, 3}, {1, 2, 3, 4, 5, 6});
  p.op("mm", "matmul", {"A", "B"}, f32({2, 2}));
  p.op("vm", "matmul", {"v", "W"}, f32({3}));   // (2,) @ (2, 3)
  p.op("mv", "matmul", {"A", "v"}, f32({2}));   // (2, 2) @ (2,)
  p.op("vv", "matmul", {"v", "v"}, f32({}));    // dot product
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("mm").data, (std::vector<double>{19, 22, 43, 50}));
  EXPECT_EQ(v->at("vm").data, (std::vector<double>{9, 12, 15}));
  EXPECT_EQ(v->at("mv").data, (std::vector<double>{5, 11}));
  EXPECT_EQ(v->at("vv").data, (std::vector<double>{5}));
}

TEST(ReferenceEvaluatorTest, MatmulBroadcastsBatchDims) {
  TorchProgram p;
  // (2, 1, 1, 2) @ (3, 2, 1): batch (2, 1) with (3,) -> (2, 3); each product is (1, 1).
  p.input("a", {2, 1, 1, 2}, {1, 2, 3, 4});
  p.input("b", {3, 2, 1}, {1, 0, 0, 1, 1, 1});
  p.op("m", "matmul", {"a", "b"}, f32({2, 3, 1, 1}));
  // a rows: [1,2], [3,4]; b columns: [1,0], [0,1], [1,1].
  EXPECT_EQ(p.value("m"), (std::vector<double>{1, 2, 3, 3, 4, 7}));
}

TEST(ReferenceEvaluatorTest, MatmulBatchedWithVector) {
  TorchProgram p;
  p.input("a", {2, 2, 3}, {1, 0, 0, 0, 1, 0, 1, 1, 1, 2, 0, 1});
  p.input("v", {3}, {1, 2, 3});
  p.op("m", "matmul", {"a", "v"}, f32({2, 2}));
  EXPECT_EQ(p.value("m"), (std::vector<double>{1, 2, 6, 5}));
}

TEST(ReferenceEvaluatorTest, LinearWithAndWithoutBias) {
  TorchProgram p;
  p.input("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  p.input("w", {2, 3}, {1, 0, -1, 0, 1, 0});
  p.input("b", {2}, {0.5, -0.5});
  p.op("y", "linear", {"x", "w", "b"}, f32({2, 2}));
  p.op("z", "linear", {"x", "w"}, f32({2, 2}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("y").data, (std::vector<double>{-1.5, 1.5, -1.5, 4.5}));
  EXPECT_EQ(v->at("z").data, (std::vector<double>{-2, 2, -2, 5}));
}

// ---- reductions --------------------------------------------------------------------------------

TEST(ReferenceEvaluatorTest, ReductionsWithDimsAndKeepdim) {
  TorchProgram p;
  p.input("x", {2, 3}, {1, 5, 3, 4, 2, 6});
  p.op("sum_all", "sum", {"x"}, f32({}), attrs({{"dim", std::vector<int64_t>{0, 1}}, {"keepdim", false}}));
  p.op("sum_keep", "sum", {"x"}, f32({2, 1}), attrs({{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}}));
  p.op("mean0", "mean", {"x"}, f32({3}), attrs({{"dim", std::vector<int64_t>{0}}, {"keepdim", false}}));
  p.op("amax", "amax", {"x"}, f32({2}), attrs({{"dim", std::vector<int64_t>{1}}, {"keepdim", false}}));
  p.op("amin", "amin", {"x"}, f32({1, 1}), attrs({{"dim", std::vector<int64_t>{-2, -1}}, {"keepdim", true}}));
  p.op("argmax", "argmax", {"x"}, TensorType{Shape{2}, DType::I64}, attrs({{"dim", int64_t{1}}, {"keepdim", false}}));
  p.op("argmin", "argmin", {"x"}, TensorType{Shape{1, 3}, DType::I64},
       attrs({{"dim", int64_t{0}}, {"keepdim", true}}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("sum_all").data, (std::vector<double>{21}));
  EXPECT_EQ(v->at("sum_keep").data, (std::vector<double>{9, 12}));
  EXPECT_EQ(v->at("mean0").data, (std::vector<double>{2.5, 3.5, 4.5}));
  EXPECT_EQ(v->at("amax").data, (std::vector<double>{5, 6}));
  EXPECT_EQ(v->at("amin").data, (std::vector<double>{1}));
  EXPECT_EQ(v->at("argmax").data, (std::vector<double>{1, 2}));
  EXPECT_EQ(v->at("argmin").data, (std::vector<double>{0, 1, 0}));
}

TEST(ReferenceEvaluatorTest, ArgmaxTakesTheFirstMaximum) {
  TorchProgram p;
  p.input("x", {5}, {3, 7, 1, 7, 7});
  p.op("a", "argmax", {"x"}, TensorType{Shape{}, DType::I64}, attrs({{"dim", int64_t{0}}, {"keepdim", false}}));
  EXPECT_EQ(p.value("a"), (std::vector<double>{1}));
}

TEST(ReferenceEvaluatorTest, MiddleDimReductionOnOddSizes) {
  TorchProgram p;
  std::vector<double> x;
  for (int i = 0; i < 3 * 5 * 7; ++i) x.push_back(i);
  p.input("x", {3, 5, 7}, x);
  p.op("s", "sum", {"x"}, f32({3, 7}), attrs({{"dim", std::vector<int64_t>{1}}, {"keepdim", false}}));
  std::vector<double> s = p.value("s");
  ASSERT_EQ(s.size(), 21u);
  // sum over j of (35 i + 7 j + k) = 175 i + 70 + 5 k
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 7; ++k) EXPECT_EQ(s[static_cast<size_t>(i * 7 + k)], 175 * i + 70 + 5 * k);
}

TEST(ReferenceEvaluatorTest, SoftmaxAlongAnyDim) {
  TorchProgram p;
  p.input("x", {2, 3}, {1, 2, 3, 1000, 1000, 1000});
  p.op("last", "softmax", {"x"}, f32({2, 3}), attrs({{"dim", int64_t{-1}}}));
  p.op("first", "softmax", {"x"}, f32({2, 3}), attrs({{"dim", int64_t{0}}}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  const double e = std::numbers::e, z = 1 + e + e * e;
  expect_near(v->at("last").data, {1 / z, e / z, e * e / z, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  // Column j: [x0j, 1000] -> the second wins completely (exp(-997) is ~1e-433, below double range).
  expect_near(v->at("first").data, {0, 0, 0, 1, 1, 1});
}

// ---- normalization -----------------------------------------------------------------------------

TEST(ReferenceEvaluatorTest, RmsNorm) {
  TorchProgram p;
  p.input("x", {2, 2}, {3, 4, 1, 1});
  p.input("w", {2}, {1, 2});
  p.op("n", "rms_norm", {"x", "w"}, f32({2, 2}), attrs({{"normalized_shape", std::vector<int64_t>{2}}, {"eps", 0.0}}));
  p.op("e", "rms_norm", {"x"}, f32({2, 2}), attrs({{"normalized_shape", std::vector<int64_t>{2}}, {"eps", 1.0}}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  const double r = std::sqrt(12.5);
  expect_near(v->at("n").data, {3 / r, 8 / r, 1, 2});
  expect_near(v->at("e").data, {3 / std::sqrt(13.5), 4 / std::sqrt(13.5), 1 / std::sqrt(2.0), 1 / std::sqrt(2.0)});
}

TEST(ReferenceEvaluatorTest, LayerNormOverTwoDims) {
  TorchProgram p;
  p.input("x", {1, 2, 2}, {1, 2, 3, 4});
  p.input("w", {2, 2}, {1, 1, 2, 2});
  p.input("b", {2, 2}, {0, 0, 0, 10});
  p.op("n", "layer_norm", {"x", "w", "b"}, f32({1, 2, 2}),
       attrs({{"normalized_shape", std::vector<int64_t>{2, 2}}, {"eps", 0.0}}));
  // mean 2.5, biased var 1.25
  const double s = std::sqrt(1.25);
  expect_near(p.value("n"), {-1.5 / s, -0.5 / s, 2 * 0.5 / s, 2 * 1.5 / s + 10});
}

// ---- attention and embedding -------------------------------------------------------------------

Attrs sdpa_attrs(bool causal, bool gqa, std::optional<double> scale = std::nullopt) {
  Attrs a;
  a.set("is_causal", causal);
  if (scale) a.set("scale", *scale);
  a.set("enable_gqa", gqa);
  return a;
}

TEST(ReferenceEvaluatorTest, SdpaUniformAndCausal) {
  TorchProgram p;
  // Identical keys: every query attends uniformly (or, causally, to the prefix).
  p.input("q", {3, 1}, {1, 2, 3});
  p.input("k", {3, 1}, {0, 0, 0});
  p.input("v", {3, 2}, {1, 10, 2, 20, 6, 60});
  p.op("full", "scaled_dot_product_attention", {"q", "k", "v"}, f32({3, 2}), sdpa_attrs(false, false));
  p.op("causal", "scaled_dot_product_attention", {"q", "k", "v"}, f32({3, 2}), sdpa_attrs(true, false));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  expect_near(v->at("full").data, {3, 30, 3, 30, 3, 30});
  expect_near(v->at("causal").data, {1, 10, 1.5, 15, 3, 30});
}

TEST(ReferenceEvaluatorTest, SdpaScaleAndCausalWithFewerQueriesThanKeys) {
  TorchProgram p;
  // L = 1, S = 2: top-left aligned causal mask lets query 0 see key 0 only.
  p.input("q", {1, 1}, {1});
  p.input("k", {2, 1}, {1, 2});
  p.input("v", {2, 1}, {10, 20});
  p.op("c", "scaled_dot_product_attention", {"q", "k", "v"}, f32({1, 1}), sdpa_attrs(true, false));
  p.op("s", "scaled_dot_product_attention", {"q", "k", "v"}, f32({1, 1}), sdpa_attrs(false, false, std::log(3.0)));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  expect_near(v->at("c").data, {10});
  // scores ln3 * [1, 2] -> weights [3, 9] / 12
  expect_near(v->at("s").data, {(3 * 10 + 9 * 20) / 12.0});
}

TEST(ReferenceEvaluatorTest, SdpaGroupedQueryHeads) {
  TorchProgram p;
  // 4 query heads over 2 kv heads: heads 0, 1 use kv 0; heads 2, 3 use kv 1. S = 2, E = 1.
  p.input("q", {1, 4, 1, 1}, {0, 0, 0, 0});
  p.input("k", {1, 2, 2, 1}, {0, 0, 0, 0});
  p.input("v", {1, 2, 2, 1}, {1, 3, 10, 30});
  p.op("o", "scaled_dot_product_attention", {"q", "k", "v"}, f32({1, 4, 1, 1}), sdpa_attrs(false, true));
  expect_near(p.value("o"), {2, 2, 20, 20});
}

TEST(ReferenceEvaluatorTest, EmbeddingAndItsRangeError) {
  TorchProgram p;
  p.input("ids", {2, 2}, {2, 0, 1, 2}, DType::I64);
  p.input("w", {3, 2}, {1, 2, 3, 4, 5, 6});
  p.op("e", "embedding", {"ids", "w"}, f32({2, 2, 2}));
  EXPECT_EQ(p.value("e"), (std::vector<double>{5, 6, 1, 2, 3, 4, 5, 6}));
  p.inputs["ids"].data[3] = 3;
  Expected<ValueMap> v = p.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "e");
  EXPECT_NE(v.error().message.find("index 3 at position 3"), std::string::npos) << v.error().message;
}

// ---- layout ------------------------------------------------------------------------------------

TEST(ReferenceEvaluatorTest, ReshapeUnsqueezeTransposePermute) {
  TorchProgram p;
  p.input("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  p.op("r", "reshape", {"x"}, f32({3, 2}), attrs({{"shape", std::vector<int64_t>{3, 2}}}));
  p.op("u", "unsqueeze", {"x"}, f32({2, 3, 1}), attrs({{"dim", int64_t{-1}}}));
  p.op("t", "transpose", {"x"}, f32({3, 2}), attrs({{"dim0", int64_t{-1}}, {"dim1", int64_t{0}}}));
  p.op("x3", "reshape", {"x"}, f32({1, 2, 3}), attrs({{"shape", std::vector<int64_t>{1, 2, 3}}}));
  p.op("p", "permute", {"x3"}, f32({3, 1, 2}), attrs({{"dims", std::vector<int64_t>{2, 0, 1}}}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("r").data, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(v->at("u").data, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(v->at("t").data, (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(v->at("p").data, (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(ReferenceEvaluatorTest, PermuteOfRankThree) {
  TorchProgram p;
  std::vector<double> x;
  for (int i = 0; i < 24; ++i) x.push_back(i);
  p.input("x", {2, 3, 4}, x);
  p.op("p", "permute", {"x"}, f32({4, 2, 3}), attrs({{"dims", std::vector<int64_t>{2, 0, 1}}}));
  std::vector<double> out = p.value("p");
  ASSERT_EQ(out.size(), 24u);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(out[static_cast<size_t>((a * 2 + b) * 3 + c)], b * 12 + c * 4 + a);
}

TEST(ReferenceEvaluatorTest, ExpandSliceCat) {
  TorchProgram p;
  p.input("row", {3}, {1, 2, 3});
  p.input("col", {2, 1}, {7, 8});
  p.input("x", {2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  p.op("e1", "expand", {"row"}, f32({2, 3}), attrs({{"shape", std::vector<int64_t>{2, 3}}}));
  p.op("e2", "expand", {"col"}, f32({2, 2}), attrs({{"shape", std::vector<int64_t>{2, 2}}}));
  p.op("s", "slice", {"x"}, f32({2, 2}),
       attrs({{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{5}}, {"step", int64_t{2}}}));
  p.op("s3", "slice", {"x"}, f32({2, 2}),
       attrs({{"dim", int64_t{1}}, {"start", int64_t{2}}, {"end", int64_t{5}}, {"step", int64_t{2}}}));
  p.op("c", "cat", {"e2", "col", "s"}, f32({2, 5}), attrs({{"dim", int64_t{1}}}));
  p.op("c0", "cat", {"e1", "e1"}, f32({4, 3}), attrs({{"dim", int64_t{0}}}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("e1").data, (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(v->at("e2").data, (std::vector<double>{7, 7, 8, 8}));
  EXPECT_EQ(v->at("s").data, (std::vector<double>{1, 3, 6, 8}));
  EXPECT_EQ(v->at("s3").data, (std::vector<double>{2, 4, 7, 9}));
  EXPECT_EQ(v->at("c").data, (std::vector<double>{7, 7, 7, 1, 3, 8, 8, 8, 6, 8}));
  EXPECT_EQ(v->at("c0").data, (std::vector<double>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
}

// ---- errors ------------------------------------------------------------------------------------

TEST(ReferenceEvaluatorTest, UnknownTargetNamesTheNode) {
  TorchProgram p;
  p.input("x", {1}, {1});
  p.op("weird", "frobnicate", {"x"}, f32({1}));
  Expected<ValueMap> v = p.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "weird");
  EXPECT_NE(v.error().message.find("unknown torch target 'frobnicate'"), std::string::npos);
}

TEST(ReferenceEvaluatorTest, MissingAttrShapeMismatchAndMissingInputAreErrors) {
  TorchProgram p;
  p.input("x", {2}, {1, 2});
  p.op("s", "softmax", {"x"}, f32({2}));  // no dim
  Expected<ValueMap> v = p.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "s");
  EXPECT_NE(v.error().message.find("'dim'"), std::string::npos) << v.error().message;

  TorchProgram q;
  q.input("a", {2}, {1, 2});
  q.input("b", {3}, {1, 2, 3});
  q.op("bad", "add", {"a", "b"}, f32({3}));
  v = q.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "bad");
  EXPECT_NE(v.error().message.find("do not broadcast"), std::string::npos) << v.error().message;

  TorchProgram r;
  r.input("a", {2, 3}, {1, 2, 3, 4, 5, 6});
  r.op("m", "matmul", {"a", "a"}, f32({2, 2}));
  v = r.run();
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("inner dimensions"), std::string::npos) << v.error().message;

  TorchProgram t;
  t.input("a", {2}, {1, 2});
  t.op("n", "neg", {"a"}, f32({3}));  // node type disagrees with the math
  v = t.run();
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("node's type is (3,) float32"), std::string::npos) << v.error().message;

  TorchProgram u;
  u.input("a", {2}, {1, 2});
  u.op("n", "neg", {"a"}, f32({2}));
  u.inputs.clear();
  v = u.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "a");
}

// ---- programs from the torch_expr frontend -------------------------------------------------------

// Programs traced by the real frontend: the evaluator must agree with the frontend's conventions
// (operand order, attrs, recorded types) for every target they produce.
class ReferenceEvaluatorFrontendTest : public test::BuiltPluginsTest {
 protected:
  // Traces `text` and evaluates it with seeded inputs; nullopt (with a test failure) on any error.
  std::optional<std::pair<Graph, ValueMap>> evaluate(const std::string& text) {
    EXPECT_TRUE(load_error_.empty()) << load_error_;
    std::unique_ptr<Frontend> frontend = host_->registry().make_frontend("torch_expr");
    if (!frontend) {
      ADD_FAILURE() << "no torch_expr frontend";
      return std::nullopt;
    }
    Expected<Graph> g = frontend->import(FrontendInput{text, "<-c>"}, FrontendOptions{});
    if (!g) {
      ADD_FAILURE() << "program failed to trace:\n" << text << "\n" << g.error().render();
      return std::nullopt;
    }
    Expected<ValueMap> v = evaluate_reference(*g, make_inputs(*g, 1));
    if (!v) {
      ADD_FAILURE() << "program failed to evaluate:\n" << print_graph(*g) << v.error().render();
      return std::nullopt;
    }
    return std::make_pair(std::move(*g), std::move(*v));
  }
  const TensorValue& output(const std::pair<Graph, ValueMap>& r) { return r.second.at(r.first.outputs().back()); }

};


TEST_F(ReferenceEvaluatorFrontendTest, SoftmaxOfOnesIsUniform) {
  auto r = evaluate("torch.softmax(torch.ones(2, 3), dim=-1)");
  ASSERT_TRUE(r);
  expect_near(output(*r).data, std::vector<double>(6, 1.0 / 3));
}

TEST_F(ReferenceEvaluatorFrontendTest, RmsNormOfAConstantRowIsTheWeight) {
  auto r = evaluate("F.rms_norm(torch.full((2, 4), 3.0), [4], eps=0.0)");
  ASSERT_TRUE(r);
  expect_near(output(*r).data, std::vector<double>(8, 1.0));
}

TEST_F(ReferenceEvaluatorFrontendTest, ScalarArithmeticFollowsOperandOrder) {
  auto r = evaluate("x = torch.full((3,), 2.0)\n(1 - x) * 3 + x ** 2 / 4");
  ASSERT_TRUE(r);
  expect_near(output(*r).data, std::vector<double>(3, -2.0));
}

TEST_F(ReferenceEvaluatorFrontendTest, ModulesAndLayoutEvaluate) {
  for (const char* program : {
           "nn.RMSNorm(16)(torch.randn(2, 3, 16))",
           "nn.LayerNorm(8)(torch.randn(5, 8))",
           "nn.Linear(8, 4)(torch.randn(3, 8))",
           "F.gelu(torch.randn(7), approximate='tanh') + F.silu(torch.randn(7))",
           "torch.randn(2, 3, 4).transpose(0, 2).reshape(4, 6).sum(dim=1, keepdim=True)",
           "torch.matmul(torch.randn(2, 1, 3, 5), torch.randn(4, 5, 2)).amax(dim=-1)",
           "torch.randn(3, 4).unsqueeze(0).mean()",
           "F.scaled_dot_product_attention(torch.randn(1, 4, 3, 8), torch.randn(1, 2, 5, 8), "
           "torch.randn(1, 2, 5, 6), is_causal=True, enable_gqa=True)",
           "F.embedding(torch.randint(0, 10, (2, 3)), torch.randn(10, 4))",
           "torch.cat([torch.randn(2, 3), torch.randn(1, 3)], dim=0)[1:3:2].permute(1, 0).expand(2, 3, 1)",
           "torch.where(torch.randn(3, 4) > 0, torch.randn(4), 0.5)",
           "torch.maximum(torch.randn(3), torch.randn(2, 1)).max(dim=0)[0]",
           "torch.randn(3, 4).to(torch.int32)",
       }) {
    SCOPED_TRACE(program);
    auto r = evaluate(program);
    ASSERT_TRUE(r);
    for (double v : output(*r).data) EXPECT_TRUE(std::isfinite(v));
  }
}

// ---- compare_values ----------------------------------------------------------------------------

TEST(CompareValuesTest, ReportsMaxAbsAndRelErrorAndTheWorstElement) {
  ValueMap e, a;
  e["x"] = TensorValue(f32({3}), {1.0, 100.0, -2.0});
  a["x"] = TensorValue(f32({3}), {1.0, 101.0, -2.5});
  e["y"] = TensorValue(f32({1}), {0.0});
  a["y"] = TensorValue(f32({1}), {0.0});
  Expected<ValueComparison> c = compare_values(e, a);
  ASSERT_TRUE(c) << c.error().render();
  EXPECT_DOUBLE_EQ(c->max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(c->max_rel_error, 0.25);
  EXPECT_EQ(c->worst_node, "x");
  EXPECT_EQ(c->worst_flat_index, 2);
  EXPECT_EQ(c->elements, 4);
  EXPECT_FALSE(c->within(0.1));
  EXPECT_TRUE(c->within(0.3));
}

TEST(CompareValuesTest, NaNAndInfinityHandling) {
  ValueMap e, a;
  e["x"] = TensorValue(f32({3}), {NAN, INFINITY, 1.0});
  a["x"] = TensorValue(f32({3}), {NAN, INFINITY, 1.0});
  EXPECT_EQ(compare_values(e, a)->max_abs_error, 0.0);
  a["x"].data[2] = NAN;
  EXPECT_TRUE(std::isinf(compare_values(e, a)->max_rel_error));
}

TEST(CompareValuesTest, MissingNamesAndShapeMismatchAreErrors) {
  ValueMap e, a;
  e["x"] = TensorValue(f32({2}), {1, 2});
  a["x"] = TensorValue(f32({2, 1}), {1, 2});
  Expected<ValueComparison> c = compare_values(e, a);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().node, "x");
  c = compare_values(e, a, {"nope"});
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("'nope'"), std::string::npos);
  ValueMap other;
  other["z"] = TensorValue(f32({1}), {1});
  EXPECT_FALSE(compare_values(e, other));
}

}  // namespace
}  // namespace tessera

// Unit tests for evaluate_tensor_ir on hand-built Tensor IR graphs: every elementwise fn, reduce,
// single- and multi-source IndexMaps (transpose, broadcast, reshape by div/mod, cat with
// predicates, masks with literal values), gather, and the located errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/eval/reference_evaluator.h"
#include "support/hand_built_program.h"

namespace tessera {
namespace {

Expr var(const std::string& n) { return Expr::var(n); }
Expr lit(int64_t v) { return Expr::int_(v); }

using test::f32;

// A Tensor IR graph under construction plus the input values the test gives it.
struct TensorProgram : test::HandBuiltProgram {
  void elementwise(const std::string& id, ElementwiseFn fn, ExprList args, std::vector<std::string> ins,
                   TensorType t) {
    auto op = std::make_unique<ElementwiseOp>();
    op->fn = fn;
    op->args = std::move(args);
    g.add(id, std::move(op), std::move(ins), std::move(t));
  }
  void reduce(const std::string& id, CombineFn fn, const std::string& in, int64_t axis, bool keepdim,
              TensorType t) {
    auto op = std::make_unique<ReduceOp>();
    op->fn = fn;
    op->axis = axis;
    op->keepdim = keepdim;
    g.add(id, std::move(op), {in}, std::move(t));
  }
  void index_map(const std::string& id, std::vector<std::string> coords, std::vector<IndexMapSource> sources,
                 TensorType t) {
    auto op = std::make_unique<IndexMapOp>();
    op->coords = std::move(coords);
    std::vector<std::string> ins;
    for (const IndexMapSource& s : sources)
      if (!s.buffer.empty() && std::find(ins.begin(), ins.end(), s.buffer) == ins.end()) ins.push_back(s.buffer);
    op->sources = std::move(sources);
    g.add(id, std::move(op), std::move(ins), std::move(t));
  }
  Expected<ValueMap> run() const { return evaluate_tensor_ir(g, inputs); }
  std::vector<double> value(const std::string& id) const {
    Expected<ValueMap> v = run();
    EXPECT_TRUE(v) << v.error().render();
    return v ? v->at(id).data : std::vector<double>{};
  }
};

IndexMapSource read(const std::string& buffer, ExprList index, Expr predicate = Expr()) {
  return IndexMapSource{buffer, std::move(index), Expr(), std::move(predicate)};
}

TEST(TensorInterpreterTest, EveryUnaryFunction) {
  struct Case {
    const char* fn;
    double x, expected;
  };
  const Case cases[] = {
      {"neg", 2.0, -2.0},       {"exp", 1.0, 2.718281828459045}, {"log", 1.0, 0.0},
      {"sqrt", 9.0, 3.0},       {"rsqrt", 4.0, 0.5},             {"tanh", 0.5, 0.46211715726000974},
      {"sigmoid", 0.0, 0.5},    {"abs", -3.5, 3.5},              {"reciprocal", 4.0, 0.25},
      {"erf", 1.0, 0.8427007929497149}, {"relu", -1.0, 0.0},     {"relu", 2.0, 2.0},
      {"silu", 1.0, 0.7310585786300049}, {"square", -3.0, 9.0},  {"identity", 1.25, 1.25},
  };
  for (const Case& c : cases) {
    TensorProgram p;
    p.input("x", {1}, {c.x});
    p.elementwise("y", *parse_elementwise_fn(c.fn), {var("x")}, {"x"}, f32({1}));
    std::vector<double> y = p.value("y");
    ASSERT_EQ(y.size(), 1u) << c.fn;
    EXPECT_NEAR(y[0], c.expected, 1e-14) << c.fn;
  }
}

TEST(TensorInterpreterTest, EveryBinaryAndTernaryFunction) {
  struct Case {
    const char* fn;
    double a, b, expected;
  };
  const Case cases[] = {
      {"add", 2, 3, 5},     {"sub", 2, 3, -1},      {"mul", 2, 3, 6},     {"div", 3, 2, 1.5},
      {"pow", 2, 10, 1024}, {"maximum", 2, 3, 3},   {"minimum", 2, 3, 2}, {"lt", 2, 3, 1},
      {"lt", 3, 3, 0},      {"le", 3, 3, 1},        {"eq", 3, 3, 1},      {"ne", 3, 3, 0},
      {"gt", 3, 2, 1},      {"ge", 2, 3, 0},
  };
  for (const Case& c : cases) {
    TensorProgram p;
    p.input("a", {1}, {c.a});
    p.input("b", {1}, {c.b});
    p.elementwise("y", *parse_elementwise_fn(c.fn), {var("a"), var("b")}, {"a", "b"}, f32({1}));
    std::vector<double> y = p.value("y");
    ASSERT_EQ(y.size(), 1u) << c.fn;
    EXPECT_EQ(y[0], c.expected) << c.fn;
  }
  TensorProgram p;
  p.input("c", {3}, {1, 0, 1}, DType::Bool);
  p.input("a", {3}, {10, 20, 30});
  p.input("b", {3}, {-1, -2, -3});
  p.elementwise("y", ElementwiseFn::Where, {var("c"), var("a"), var("b")}, {"c", "a", "b"}, f32({3}));
  EXPECT_EQ(p.value("y"), (std::vector<double>{10, -2, 30}));
}

TEST(TensorInterpreterTest, MaximumPropagatesNaN) {
  TensorProgram p;
  p.input("a", {2}, {NAN, 1.0});
  p.input("b", {2}, {0.0, NAN});
  p.elementwise("y", ElementwiseFn::Maximum, {var("a"), var("b")}, {"a", "b"}, f32({2}));
  std::vector<double> y = p.value("y");
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
}

TEST(TensorInterpreterTest, ElementwiseTakesLiteralScalarsAndConvertsToTheNodeDtype) {
  TensorProgram p;
  p.input("x", {3}, {1.0, 2.0, 3.0});
  p.elementwise("half", ElementwiseFn::Mul, {var("x"), Expr::float_(0.5)}, {"x"}, f32({3}));
  p.elementwise("lt2", ElementwiseFn::Lt, {var("x"), Expr::float_(2.0)}, {"x"}, TensorType{Shape{3}, DType::Bool});
  p.elementwise("trunc", ElementwiseFn::Mul, {var("x"), Expr::float_(-0.75)}, {"x"}, TensorType{Shape{3}, DType::I32});
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("half").data, (std::vector<double>{0.5, 1.0, 1.5}));
  EXPECT_EQ(v->at("lt2").data, (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(v->at("trunc").data, (std::vector<double>{0, -1, -2}));  // -0.75, -1.5, -2.25 truncated
}

TEST(TensorInterpreterTest, ElementwiseOperandsMustHaveTheOutputShape) {
  TensorProgram p;
  p.input("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  p.input("b", {3}, {1, 2, 3});
  p.elementwise("y", ElementwiseFn::Add, {var("x"), var("b")}, {"x", "b"}, f32({2, 3}));
  Expected<ValueMap> v = p.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "y");
  EXPECT_NE(v.error().message.find("'b' has shape (3,)"), std::string::npos) << v.error().message;
}

// (An unknown function name cannot reach the interpreter: ElementwiseOp::fn is an ElementwiseFn,
// and the IR parser refuses unknown names; ir_parser_test checks that.)
TEST(TensorInterpreterTest, WrongArityIsAnErrorNamingTheNode) {
  TensorProgram q;
  q.input("x", {1}, {1});
  q.elementwise("y", ElementwiseFn::Add, {var("x")}, {"x"}, f32({1}));
  Expected<ValueMap> v = q.run();
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("takes 2"), std::string::npos) << v.error().message;
}

TEST(TensorInterpreterTest, ReduceEveryFunctionAndAxis) {
  TensorProgram p;
  p.input("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  p.reduce("sum_last", CombineFn::Add, "x", -1, true, f32({2, 1}));
  p.reduce("sum_first", CombineFn::Add, "x", 0, false, f32({3}));
  p.reduce("max", CombineFn::Max, "x", 1, false, f32({2}));
  p.reduce("min", CombineFn::Min, "x", -2, true, f32({1, 3}));
  p.reduce("prod", CombineFn::Mul, "x", 1, false, f32({2}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("sum_last").data, (std::vector<double>{6, 15}));
  EXPECT_EQ(v->at("sum_first").data, (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(v->at("max").data, (std::vector<double>{3, 6}));
  EXPECT_EQ(v->at("min").data, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(v->at("prod").data, (std::vector<double>{6, 120}));
}

TEST(TensorInterpreterTest, ReduceChecksTheNodeShape) {
  TensorProgram p;
  p.input("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  p.reduce("r", CombineFn::Add, "x", -1, true, f32({2}));  // keepdim would give (2, 1)
  Expected<ValueMap> v = p.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "r");
  EXPECT_NE(v.error().message.find("(2, 1)"), std::string::npos) << v.error().message;
}

TEST(TensorInterpreterTest, IndexMapTransposeAndBroadcast) {
  TensorProgram p;
  p.input("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  p.input("bias", {3}, {10, 20, 30});
  p.index_map("xt", {"i", "j"}, {read("x", {var("j"), var("i")})}, f32({3, 2}));
  p.index_map("bias_bc", {"i", "j"}, {read("bias", {var("j")})}, f32({2, 3}));
  // The seed's `red[i, na, j]`: a size-1 dim read at 0.
  p.index_map("row", {"i", "j"}, {read("x", {var("i"), lit(1)})}, f32({2, 1}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("xt").data, (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(v->at("bias_bc").data, (std::vector<double>{10, 20, 30, 10, 20, 30}));
  EXPECT_EQ(v->at("row").data, (std::vector<double>{2, 5}));
}

TEST(TensorInterpreterTest, IndexMapReshapeWithFloorDivAndMod) {
  TensorProgram p;
  p.input("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  p.index_map("flat", {"i"}, {read("x", {var("i") / 3, var("i") % 3})}, f32({6}));
  p.index_map("back", {"i", "j"}, {read("flat", {var("i") * 3 + var("j")})}, f32({2, 3}));
  // Reversed rows: index 1 - i.
  p.index_map("flip", {"i", "j"}, {read("x", {lit(1) - var("i"), var("j")})}, f32({2, 3}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("flat").data, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(v->at("back").data, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(v->at("flip").data, (std::vector<double>{4, 5, 6, 1, 2, 3}));
}

TEST(TensorInterpreterTest, IndexMapCatWithPredicates) {
  // cat([a (2, 2), b (1, 2), c (2, 2)], dim=0) as one three-source map.
  TensorProgram p;
  p.input("a", {2, 2}, {1, 2, 3, 4});
  p.input("b", {1, 2}, {5, 6});
  p.input("c", {2, 2}, {7, 8, 9, 10});
  p.index_map("cat", {"i", "j"},
              {read("a", {var("i"), var("j")}, var("i") < lit(2)),
               read("b", {var("i") - 2, var("j")}, var("i") < lit(3)),
               read("c", {var("i") - 3, var("j")})},
              f32({5, 2}));
  EXPECT_EQ(p.value("cat"), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST(TensorInterpreterTest, IndexMapLiteralSourceMasks) {
  // A causal mask: x where j <= i, else -inf.
  TensorProgram p;
  p.input("x", {2, 2}, {1, 2, 3, 4});
  p.index_map("masked", {"i", "j"},
              {read("x", {var("i"), var("j")}, var("j") <= var("i")),
               IndexMapSource{"", {}, Expr::float_(-INFINITY), Expr()}},
              f32({2, 2}));
  // A literal that depends on the coordinates: an iota.
  p.index_map("iota", {"i"}, {IndexMapSource{"", {}, var("i") * 10, Expr()}}, f32({3}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("masked").data, (std::vector<double>{1, -INFINITY, 3, 4}));
  EXPECT_EQ(v->at("iota").data, (std::vector<double>{0, 10, 20}));
}

TEST(TensorInterpreterTest, IndexMapErrorsNameTheNodeAndCoordinate) {
  TensorProgram p;
  p.input("x", {3}, {1, 2, 3});
  p.index_map("oob", {"i"}, {read("x", {var("i") + 1})}, f32({3}));
  Expected<ValueMap> v = p.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "oob");
  EXPECT_NE(v.error().message.find("output [2] reads out of bounds"), std::string::npos) << v.error().message;

  TensorProgram q;
  q.input("x", {3}, {1, 2, 3});
  q.index_map("gap", {"i"}, {read("x", {var("i")}, var("i") < lit(2))}, f32({3}));
  v = q.run();
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("no index map source applies at output [2]"), std::string::npos);

  TensorProgram r;
  r.input("x", {3, 1}, {1, 2, 3});
  r.index_map("rank", {"i"}, {read("x", {var("i")})}, f32({3}));
  v = r.run();
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("rank 2"), std::string::npos) << v.error().message;
}

TEST(TensorInterpreterTest, GatherRowsAndInnerAxis) {
  TensorProgram p;
  p.input("table", {3, 2}, {1, 2, 3, 4, 5, 6});
  p.input("ids", {2, 2}, {2, 0, 1, 1}, DType::I64);
  p.input("cols", {3}, {1, 1, 0}, DType::I64);
  auto g0 = std::make_unique<GatherOp>();
  p.g.add("emb", std::move(g0), {"table", "ids"}, f32({2, 2, 2}));
  auto g1 = std::make_unique<GatherOp>();
  g1->axis = -1;
  p.g.add("pick", std::move(g1), {"table", "cols"}, f32({3, 3}));
  Expected<ValueMap> v = p.run();
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(v->at("emb").data, (std::vector<double>{5, 6, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(v->at("pick").data, (std::vector<double>{2, 2, 1, 4, 4, 3, 6, 6, 5}));
}

TEST(TensorInterpreterTest, GatherIdOutOfRangeIsAnError) {
  TensorProgram p;
  p.input("table", {3, 2}, {1, 2, 3, 4, 5, 6});
  p.input("ids", {1}, {3}, DType::I64);
  p.g.add("emb", std::make_unique<GatherOp>(), {"table", "ids"}, f32({1, 2}));
  Expected<ValueMap> v = p.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "emb");
  EXPECT_NE(v.error().message.find("id 3"), std::string::npos) << v.error().message;
}

TEST(TensorInterpreterTest, MissingInputAndTorchNodesAreErrors) {
  TensorProgram p;
  p.input("x", {1}, {1});
  p.inputs.clear();
  Expected<ValueMap> v = p.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "x");
  EXPECT_NE(v.error().message.find("no value given for input 'x'"), std::string::npos);

  TensorProgram q;
  q.input("x", {1}, {1});
  auto t = std::make_unique<TorchOp>();
  t->target = "relu";
  q.g.add("r", std::move(t), {"x"}, f32({1}));
  v = q.run();
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().node, "r");
  EXPECT_NE(v.error().message.find("torch"), std::string::npos);
}

TEST(TensorInterpreterTest, ConstantsComeFromConstantData) {
  TensorProgram p;
  auto c = std::make_unique<ConstantOp>();
  c->values = {1, 2, 3};
  p.g.add("w", std::move(c), {}, f32({3}));
  p.elementwise("y", ElementwiseFn::Mul, {var("w"), var("w")}, {"w"}, f32({3}));
  EXPECT_EQ(p.value("y"), (std::vector<double>{1, 4, 9}));
}

// The seed's relu(matmul(x + bias, w)) written in Tensor IR by hand, checked against the Torch IR
// reference on the same inputs.
TEST(TensorInterpreterTest, SeedMatmulProgramMatchesTheReference) {
  TensorProgram p;
  std::vector<double> x, bias, w;
  for (int i = 0; i < 4 * 6; ++i) x.push_back(std::sin(i * 0.7));
  for (int i = 0; i < 6; ++i) bias.push_back(0.1 * i - 0.3);
  for (int i = 0; i < 6 * 5; ++i) w.push_back(std::cos(i * 1.3));
  p.input("x", {4, 6}, x);
  p.input("bias", {6}, bias);
  p.input("w", {6, 5}, w);
  p.index_map("bias_bc", {"i", "j"}, {read("bias", {var("j")})}, f32({4, 6}));
  p.elementwise("add", ElementwiseFn::Add, {var("x"), var("bias_bc")}, {"x", "bias_bc"}, f32({4, 6}));
  p.index_map("add_bc", {"i", "j", "k"}, {read("add", {var("i"), var("j")})}, f32({4, 6, 5}));
  p.index_map("w_bc", {"i", "j", "k"}, {read("w", {var("j"), var("k")})}, f32({4, 6, 5}));
  p.elementwise("prod", ElementwiseFn::Mul, {var("add_bc"), var("w_bc")}, {"add_bc", "w_bc"}, f32({4, 6, 5}));
  p.reduce("red", CombineFn::Add, "prod", -2, true, f32({4, 1, 5}));
  p.index_map("matmul", {"i", "j"}, {read("red", {var("i"), lit(0), var("j")})}, f32({4, 5}));
  p.elementwise("relu", ElementwiseFn::Relu, {var("matmul")}, {"matmul"}, f32({4, 5}));
  p.g.outputs() = {"relu"};
  Expected<ValueMap> tensor = p.run();
  ASSERT_TRUE(tensor) << tensor.error().render();

  Graph torch;
  for (const auto& [id, shape] : {std::pair<std::string, Shape>{"x", {4, 6}}, {"bias", {6}}, {"w", {6, 5}}})
    torch.add(id, std::make_unique<InputOp>(), {}, f32(shape));
  for (const auto& [id, target, ins, shape] :
       {std::tuple<std::string, std::string, std::vector<std::string>, Shape>{"add", "add", {"x", "bias"}, {4, 6}},
        {"matmul", "matmul", {"add", "w"}, {4, 5}},
        {"relu", "relu", {"matmul"}, {4, 5}}}) {
    auto op = std::make_unique<TorchOp>();
    op->target = target;
    torch.add(id, std::move(op), ins, f32(shape));
  }
  Expected<ValueMap> ref = evaluate_reference(torch, p.inputs);
  ASSERT_TRUE(ref) << ref.error().render();
  Expected<ValueComparison> cmp = compare_values(*ref, *tensor, {"add", "matmul", "relu"});
  ASSERT_TRUE(cmp) << cmp.error().render();
  EXPECT_LT(cmp->max_abs_error, 1e-12) << cmp->str();
  EXPECT_EQ(cmp->elements, 4 * 6 + 4 * 5 * 2);
}

}  // namespace
}  // namespace tessera

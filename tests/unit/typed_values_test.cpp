// Typed values and register arrays (docs/ir.md "Value types" and "Register arrays"): the printed
// and parsed ValueType forms, the value namespace of Expr (opaque to the simplifier), typed
// printing and JSON, the verifier's type and array-index rules, and one hand-built register-array
// kernel (an `f32[4][8]` accumulator indexed by unrolled loop axes) run by the Loop IR
// interpreter, the `sim` target and emitted by emit_cuda (compiled with NVRTC where available).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/built_plugins.h"
#include "support/hand_built_program.h"
#include "tessera/eval/loop_interpreter.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"


namespace tessera {
namespace {

Expr A(const std::string& name) { return Expr::var(name); }      // an index variable
Expr Val(const std::string& name) { return Expr::value(name); }  // an SSA value
Expr I(int64_t v) { return Expr::int_(v); }
Expr F(double v) { return Expr::float_(v); }
ValueType T(DType t) { return ValueType::scalar(t); }
ValueType Array(DType t, std::vector<int64_t> dims) { return ValueType{t, 1, std::move(dims)}; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ValueTypeTest, PrintsAndParsesEveryForm) {
  for (const char* text : {"f32", "f16", "bf16", "i32", "i64", "bool", "f64", "f16x2", "bf16x2", "f32[4][8]", "bf16x2[2]",
                           "i32[3]", "f64[2]"}) {
    std::optional<ValueType> t = parse_value_type(text);
    ASSERT_TRUE(t) << text;
    EXPECT_EQ(t->str(), text);
  }
  EXPECT_EQ(Array(DType::F32, {4, 8}).array_elements(), 32);
  EXPECT_EQ(Array(DType::F32, {4, 8}).element(), T(DType::F32));
  EXPECT_TRUE(parse_value_type("bf16x2")->is_packed());
  // Packed pairs exist for 16-bit floats only; dimensions are positive integers.
  for (const char* bad : {"f32x2", "i32x2", "f32[0]", "f32[", "f32[4", "f32[4]x", "f32[-1]", "f64x2", "f8", "", "[4]"})
    EXPECT_FALSE(parse_value_type(bad)) << bad;
}

TEST(ValueExprTest, ValuesAreOpaqueToTheSimplifier) {
  const RangeMap ranges{{"a0", Interval{0, 7}}};
  // The same expression over an index variable folds; over a value it must not (a value may be a
  // float: (v * 4) / 4 is not v under floor division of integers, and v has no range).
  EXPECT_EQ(simplify((A("a0") * 4) / 4, ranges).str(), "a0");
  Expr over_value = (Val("v0") * 4) / 4;
  EXPECT_NE(simplify(over_value, ranges).str(), "v0");
  EXPECT_FALSE(bound_of(Val("a0"), ranges)) << "a Value never takes an index variable's range";
  EXPECT_FALSE(structurally_equal(Val("v0"), A("v0")));
  EXPECT_EQ(Val("v0").str(), "v0");
  // Renaming with a Var map keeps a Value a Value.
  Expr renamed = substitute(Val("x") + F(1.0), {{"x", A("in3")}});
  EXPECT_TRUE(renamed.operand(0).is(ExprKind::Value));
  EXPECT_EQ(renamed.str(), "in3 + 1.0");
  // Array elements: printed with their indices, which are simplified as indices.
  Expr e = Expr::element("acc0", {I(1), A("a0") + I(0)});
  EXPECT_EQ(e.str(), "acc0[1, a0 + 0]");
  EXPECT_EQ(simplify(e, ranges).str(), "acc0[1, a0]");
  EXPECT_FALSE(bound_of(e, ranges));
  EXPECT_EQ(free_vars(e), (std::vector<std::string>{"acc0", "a0"}));
}

TEST(TypedPrintingTest, TypesArePrintedUnlessF32) {
  Body body{Load{"in0", "x", {A("a0")}, T(DType::BF16)},
            Assign{"v0", ElementwiseFn::Cast, {Val("in0")}, T(DType::F32)},
            Assign{"v1", ElementwiseFn::Lt, {Val("v0"), F(0.0)}, T(DType::Bool)},
            Init{"acc0", F(0.0), Array(DType::F32, {4, 8})},
            Accum{"acc0", CombineFn::Add, Val("v0"), {I(1), A("a0")}},
            Init{"acc1", I(0), T(DType::I64)}};
  EXPECT_EQ(print_body(body),
            "bf16 in0 = load x[a0]\n"
            "v0 = cast(in0)\n"
            "bool v1 = lt(v0, 0.0)\n"
            "f32[4][8] acc0 = init(0.0)\n"
            "acc0[1, a0] <- add(acc0[1, a0], v0)\n"
            "i64 acc1 = init(0)\n");
}

// ---- the register-array kernel ---------------------------------------------------------------

// y = 2 * x + 1 over x: (8, 8), four rows per outer iteration, accumulated in an f32[4][8]
// register array whose indices are the axes of unrolled loops. a0 is a Loop in Loop IR and a Let
// of blockIdx.x in Kernel IR (two blocks).
Body array_body(bool kernel_ir) {
  Body tile{Init{"acc0", F(1.0), Array(DType::F32, {4, 8})},
            Loop{"a1", I(0), I(4), LoopRole::Free, 4,
                 {Loop{"a2", I(0), I(8), LoopRole::Free, 8,
                       {Load{"in0", "x", {A("a0") * 4 + A("a1"), A("a2")}, T(DType::F32)},
                        Assign{"v0", ElementwiseFn::Mul, {Val("in0"), F(2.0)}, T(DType::F32)},
                        Accum{"acc0", CombineFn::Add, Val("v0"), {A("a1"), A("a2")}}}}}},
            Loop{"a3", I(0), I(4), LoopRole::Free, 4,
                 {Loop{"a4", I(0), I(8), LoopRole::Free, 8,
                       {Write{"y", {A("a0") * 4 + A("a3"), A("a4")}, Expr::element("acc0", {A("a3"), A("a4")})}}}}}};
  if (kernel_ir) {
    Body body{Let{"a0", A("blockIdx.x")}};
    body.insert(body.end(), tile.begin(), tile.end());
    return body;
  }
  return Body{Loop{"a0", I(0), I(2), LoopRole::Free, 0, std::move(tile)}};
}

std::vector<double> x_data() {
  std::vector<double> v;
  for (int i = 0; i < 64; ++i) v.push_back(std::sin(0.37 * i));
  return v;
}

test::HandBuiltProgram array_program(bool kernel_ir) {
  test::HandBuiltProgram p;
  p.input("x", {8, 8}, x_data());
  std::unique_ptr<KernelLikeOp> op;
  if (kernel_ir) {
    auto k = std::make_unique<KernelOp>();
    k->grid = {2, 1, 1};
    k->block = {1, 1, 1};
    k->body = array_body(true);
    op = std::move(k);
  } else {
    op = std::make_unique<LoopOp>();
    op->body = array_body(false);
  }
  op->name = "k_y";
  p.g.add("y", std::move(op), {"x"}, test::f32({8, 8}));
  p.g.outputs() = {"y"};
  return p;
}

void expect_two_x_plus_one(const ValueMap& out) {
  auto it = out.find("y");
  ASSERT_NE(it, out.end());
  std::vector<double> x = x_data();
  ASSERT_EQ(it->second.data.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(it->second.data[i], 2 * x[i] + 1, 1e-6) << "element " << i;
}

TEST(RegisterArrayTest, PrintsVerifiesAndRoundTripsThroughJson) {
  test::HandBuiltProgram p = array_program(true);
  ASSERT_TRUE(verify_graph(p.g, Dialect::Kernel)) << verify_graph(p.g, Dialect::Kernel).message();
  std::string printed = print_graph(p.g);
  EXPECT_TRUE(contains(printed, "f32[4][8] acc0 = init(1.0)")) << printed;
  EXPECT_TRUE(contains(printed, "acc0[a1, a2] <- add(acc0[a1, a2], v0)")) << printed;
  EXPECT_TRUE(contains(printed, "y[a0 * 4 + a3, a4] = acc0[a3, a4]")) << printed;

  nlohmann::json j = graph_to_json(p.g);
  Expected<Graph> back = graph_from_json(j);
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_EQ(print_graph(*back), printed);
  const auto* a = p.g.find("y")->op_as<KernelOp>();
  const auto* b = back->find("y")->op_as<KernelOp>();
  EXPECT_TRUE(structurally_equal(a->body, b->body));
  EXPECT_EQ(structural_hash(a->body), structural_hash(b->body));
  // The type is part of the structure: the same body with an f16 array is a different kernel.
  Body other = a->body;
  other[1] = Init{"acc0", F(1.0), Array(DType::F16, {4, 8})};
  EXPECT_FALSE(structurally_equal(a->body, other));
  EXPECT_NE(structural_hash(a->body), structural_hash(other));
}

// The verifier message for `body` as the kernel of array_program.
std::string verifier_error(Body body) {
  auto k = std::make_unique<KernelOp>();
  k->name = "k_y";
  k->grid = {2, 1, 1};
  k->body = std::move(body);
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, test::f32({8, 8}));
  g.add("y", std::move(k), {"x"}, test::f32({8, 8}));
  g.outputs() = {"y"};
  Status s = verify_graph(g, Dialect::Kernel);
  return s ? std::string() : s.message();
}

TEST(RegisterArrayTest, VerifierRejectsOutOfBoundsAndNonUnrolledIndices) {
  const Stmt let = Let{"a0", A("blockIdx.x")};
  const Stmt init = Init{"acc0", F(0.0), Array(DType::F32, {4, 8})};
  auto write_all = [] {
    return Loop{"a3", I(0), I(4), LoopRole::Free, 4,
                {Loop{"a4", I(0), I(8), LoopRole::Free, 8, {Write{"y", {A("a0") * 4 + A("a3"), A("a4")}, Expr::element("acc0", {A("a3"), A("a4")})}}}}};
  };
  // A constant index past the end.
  std::string msg = verifier_error({let, init, Accum{"acc0", CombineFn::Add, F(1.0), {I(4), I(0)}}, write_all()});
  EXPECT_TRUE(contains(msg, "index 4 of dimension 0 of acc0 (f32[4][8]) is out of bounds")) << msg;
  // An index by the axis of a loop that is not unrolled (its element would need a dynamic register).
  msg = verifier_error({let, init, Loop{"a1", I(0), I(4), LoopRole::Free, 0, {Accum{"acc0", CombineFn::Add, F(1.0), {A("a1"), I(0)}}}},
                        write_all()});
  EXPECT_TRUE(contains(msg, "index 'a1' of acc0 is neither a constant nor an expression of unrolled loops' axes")) << msg;
  // Reads are checked too.
  msg = verifier_error({let, init,
                        Loop{"a3", I(0), I(4), LoopRole::Free, 4, {Loop{"a4", I(0), I(8), LoopRole::Free, 0, {Write{"y", {A("a0") * 4 + A("a3"), A("a4")}, Expr::element("acc0", {A("a3"), A("a4")})}}}}}});
  EXPECT_TRUE(contains(msg, "index 'a4' of acc0 is neither a constant nor an expression of unrolled loops' axes")) << msg;
  // The wrong rank, and a whole array used as a scalar.
  msg = verifier_error({let, init, Accum{"acc0", CombineFn::Add, F(1.0), {I(0)}}, write_all()});
  EXPECT_TRUE(contains(msg, "accumulates into acc0 (f32[4][8]) with 1 index expression(s)")) << msg;
  msg = verifier_error({let, init, write_all(), Write{"y", {I(0), I(0)}, Val("acc0")}});
  EXPECT_TRUE(contains(msg, "uses the register array acc0 (f32[4][8]) without an element index")) << msg;
}

TEST(TypedVerifierTest, LoadsWritesAndOperandsFollowTheTypingRules) {
  auto graph_with = [](Body body, DType x_dtype, DType y_dtype) {
    Graph g;
    g.add("x", std::make_unique<InputOp>(), {}, TensorType{{4}, x_dtype});
    auto op = std::make_unique<LoopOp>();
    op->name = "k_y";
    op->body = {Loop{"a0", I(0), I(4), LoopRole::Free, 0, std::move(body)}};
    g.add("y", std::move(op), {"x"}, TensorType{{4}, y_dtype});
    g.outputs() = {"y"};
    Status s = verify_graph(g, Dialect::Loop);
    return s ? std::string() : s.message();
  };
  // The well-typed bf16 kernel: load bf16, compute in f32, cast back.
  EXPECT_EQ(graph_with({Load{"in0", "x", {A("a0")}, T(DType::BF16)}, Assign{"v0", ElementwiseFn::Cast, {Val("in0")}, T(DType::F32)},
                        Assign{"v1", ElementwiseFn::Mul, {Val("v0"), F(2.0)}, T(DType::F32)},
                        Assign{"v2", ElementwiseFn::Cast, {Val("v1")}, T(DType::BF16)}, Write{"y", {A("a0")}, Val("v2")}},
                       DType::BF16, DType::BF16),
            "");
  std::string msg = graph_with({Load{"in0", "x", {A("a0")}, T(DType::F32)}, Write{"y", {A("a0")}, Val("in0")}},
                               DType::BF16, DType::F32);
  EXPECT_TRUE(contains(msg, "loads f32 from 'x', whose elements are bf16")) << msg;
  msg = graph_with({Load{"in0", "x", {A("a0")}, T(DType::BF16)}, Write{"y", {A("a0")}, Val("in0")}}, DType::BF16,
                   DType::F32);
  EXPECT_TRUE(contains(msg, "the value written to y has type bf16, expected f32 (cast it)")) << msg;
  msg = graph_with({Load{"in0", "x", {A("a0")}, T(DType::BF16)}, Assign{"v0", ElementwiseFn::Mul, {Val("in0"), F(2.0)}, T(DType::F32)},
                    Write{"y", {A("a0")}, Val("v0")}},
                   DType::BF16, DType::F32);
  EXPECT_TRUE(contains(msg, "operand 0 of mul has type bf16, expected f32 (cast it)")) << msg;
  msg = graph_with({Load{"in0", "x", {A("a0")}, T(DType::F32)}, Assign{"v0", ElementwiseFn::Lt, {Val("in0"), F(0.0)}, T(DType::F32)},
                    Write{"y", {A("a0")}, Val("v0")}},
                   DType::F32, DType::F32);
  EXPECT_TRUE(contains(msg, "a comparison or logical op produces bool, not f32")) << msg;
  msg = graph_with({Load{"in0", "x", {A("a0")}, T(DType::F32)}, Write{"y", {A("a0")}, Val("a0")}}, DType::F32,
                   DType::F32);
  EXPECT_TRUE(contains(msg, "'a0' is an index variable, not a value")) << msg;
}

class RegisterArrayTargetsTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override { ASSERT_TRUE(load_error_.empty()) << load_error_; }
};

TEST_F(RegisterArrayTargetsTest, LoopInterpreterAndSimulatorComputeTheArrayKernel) {
  test::HandBuiltProgram loop = array_program(false);
  ASSERT_TRUE(verify_graph(loop.g, Dialect::Loop)) << verify_graph(loop.g, Dialect::Loop).message();
  Expected<ValueMap> interpreted = evaluate_loop_ir(loop.g, loop.inputs);
  ASSERT_TRUE(interpreted) << interpreted.error().render();
  expect_two_x_plus_one(*interpreted);

  test::HandBuiltProgram kernel = array_program(true);
  std::unique_ptr<Target> sim = host_->registry().make_target("sim");
  ASSERT_NE(sim, nullptr);
  Expected<TargetRun> ran = sim->execute(kernel.g, kernel.inputs, TargetOptions{});
  ASSERT_TRUE(ran) << ran.error().render();
  expect_two_x_plus_one(ran->outputs);
}

TEST_F(RegisterArrayTargetsTest, EmitterDeclaresACArrayThatNvrtcCompiles) {
  test::HandBuiltProgram p = array_program(true);
  std::unique_ptr<Pass> pass = host_->registry().make_pass("emit_cuda");
  ASSERT_NE(pass, nullptr);
  DiagnosticEngine diags;
  PassContext ctx("emit_cuda", "c:001_emit_cuda", pass->knobs(), {}, {}, h100(), &diags);
  Status s = pass->run(p.g, ctx);
  ASSERT_TRUE(s) << s.message();
  const auto* op = p.g.find("y")->op_as<CudaOp>();
  ASSERT_NE(op, nullptr);
  EXPECT_TRUE(contains(op->source, "float acc0[4][8];")) << op->source;
  EXPECT_TRUE(contains(op->source, "acc0[a1][a2] += v0;")) << op->source;
  EXPECT_TRUE(contains(op->source, "= acc0[a3][a4];")) << op->source;
#ifdef TESSERA_HAVE_CUDA
  std::unique_ptr<Target> cuda = host_->registry().make_target("cuda");
  ASSERT_NE(cuda, nullptr);
  const std::string cache = ::testing::TempDir() + "/tessera_register_array_cache";
  std::filesystem::remove_all(cache);
  auto built = cuda->build(p.g, TargetOptions{.arch = "sm_90", .device = h100(), .cache_dir = cache});
  std::filesystem::remove_all(cache);
  EXPECT_TRUE(built) << (built ? "" : built.error().render()) << "\n" << op->source;
#endif
}

}  // namespace
}  // namespace tessera

// Verifiers: the fixture graphs verify at their own stage, and every rule has a failing case whose
// message (node, dialect, offending statement) is checked.
#include "tessera/ir/verifier.h"

#include <gtest/gtest.h>

#include <functional>

#include "unit/ir_fixtures.h"

namespace tessera {
namespace {

using namespace ir_fixtures;

::testing::AssertionResult Contains(const std::string& haystack, const std::string& needle) {
  if (haystack.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << needle << "' not found in:\n" << haystack;
}

// Expects `s` to fail with a message containing `needle`; returns the rendered diagnostic.
std::string expect_error(const Status& s, const std::string& needle) {
  EXPECT_FALSE(s) << "expected an error containing: " << needle;
  if (s) return "";
  EXPECT_TRUE(Contains(s.error().message, needle));
  return s.error().render();
}

Status verify_loop(const Body& body) { return verify_body(body, Dialect::Loop, "k"); }
Status verify_kernel(const Body& body) { return verify_body(body, Dialect::Kernel, "k"); }

// ---- whole graphs ----

TEST(VerifyGraph, FixturesVerifyAtTheirStage) {
  EXPECT_TRUE(verify_graph(torch_graph(), Dialect::Torch))
      << verify_graph(torch_graph(), Dialect::Torch).message();
  EXPECT_TRUE(verify_graph(tensor_graph(), Dialect::Tensor))
      << verify_graph(tensor_graph(), Dialect::Tensor).message();
  EXPECT_TRUE(verify_graph(loop_graph(), Dialect::Loop))
      << verify_graph(loop_graph(), Dialect::Loop).message();
  EXPECT_TRUE(verify_graph(tile_graph(), Dialect::Tile))
      << verify_graph(tile_graph(), Dialect::Tile).message();
  EXPECT_TRUE(verify_graph(kernel_graph(), Dialect::Kernel))
      << verify_graph(kernel_graph(), Dialect::Kernel).message();
  EXPECT_TRUE(verify_graph(cuda_graph(), Dialect::Cuda))
      << verify_graph(cuda_graph(), Dialect::Cuda).message();
  EXPECT_TRUE(verify_graph(Graph(), Dialect::Loop));
}

TEST(VerifyGraph, NodesMustBeInTheExpectedDialect) {
  Status s = verify_graph(tensor_graph(), Dialect::Loop);
  std::string text = expect_error(s, "node is in tensor IR, expected loop IR");
  EXPECT_EQ(s.error().node, "bias_bc");
  EXPECT_TRUE(Contains(text, "at node 'bias_bc'"));
}

// Tile IR's shape: a TileOp body is exactly one Tile statement (what every TilePass relies on).
TEST(VerifyGraph, ATileIrBodyIsExactlyOneTile) {
  for (int variant = 0; variant < 2; ++variant) {
    Graph g = tile_graph();
    auto* op = g.find("rms_norm")->op_as<TileOp>();
    if (variant == 0) op->body.insert(op->body.begin(), Assign{"v9", ElementwiseFn::Reciprocal, {lit(2)}});
    else op->body = op->body[0].as<Tile>()->body;  // no Tile at all
    Status s = verify_graph(g, Dialect::Tile);
    expect_error(s, "a Tile IR kernel body must be exactly one Tile statement");
    EXPECT_EQ(s.error().node, "rms_norm");
  }
}

// A duplicate id cannot be made through the graph's API (Graph::add checks it, and a node in a
// graph has no id setter), so that invariant is a death test; an empty id can be added.
TEST(VerifyGraph, IdsAreNotEmpty) {
  Graph g = torch_graph();
  g.add("", std::make_unique<InputOp>(), {}, g.find("x")->type);
  expect_error(verify_graph(g, Dialect::Torch), "a node has an empty id");
}

// The id index and the use lists agree with the nodes after every kind of edit.
TEST(VerifyGraph, IndexAndUseListsFollowEveryEdit) {
  Graph g = torch_graph();
  ASSERT_TRUE(verify_graph_index(g)) << verify_graph_index(g).message();
  const Node& bias = *g.find("bias");
  ASSERT_TRUE(g.insert_before("bias", "bias2", bias.op->clone(), bias.inputs.ids(), bias.type));
  g.replace_uses("bias", "bias2");
  ASSERT_TRUE(g.erase("bias"));
  g.find("add")->inputs.push_back("x");
  Graph copy = g;
  for (const Graph* h : {&g, &copy}) EXPECT_TRUE(verify_graph_index(*h)) << verify_graph_index(*h).message();
}

// Internal invariants stay checked in release builds: a violation aborts naming the invariant.
TEST(GraphInvariantsDeathTest, CheckedInEveryBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Graph g = torch_graph();
        g.find("bias")->set_id("x");
      },
      "internal error: a node in a graph keeps its id");
  EXPECT_DEATH(
      {
        Graph g = torch_graph();
        g.add("bias", std::make_unique<InputOp>(), {}, g.find("x")->type);
      },
      "internal error: Graph::add is given an id new to the graph");
  EXPECT_DEATH(
      {
        Graph g = torch_graph();
        g.add("y", std::make_unique<InputOp>(), {"missing"}, g.find("x")->type);
      },
      "internal error: Graph::add is given inputs that are nodes of the graph already");
  EXPECT_DEATH((void)Expr::int_(3).name(), "internal error: Expr::name is read from a Var, Value or Element");
  EXPECT_DEATH((void)Expr::var("a").int_value(), "internal error: Expr::int_value is read from an Int");
}

TEST(VerifyGraph, InputsExistAndComeFirst) {
  Graph g = torch_graph();
  g.find("add")->inputs = {"x", "relu"};  // relu comes later
  expect_error(verify_graph(g, Dialect::Torch), "input 'relu' is not a node defined before 'add'");
  g.find("add")->inputs = {"x", "missing"};
  expect_error(verify_graph(g, Dialect::Torch),
               "input 'missing' is not a node defined before 'add'");
  g.find("add")->inputs = {"add"};
  expect_error(verify_graph(g, Dialect::Torch), "input 'add' is not a node defined before 'add'");
}

TEST(VerifyGraph, OutputsExist) {
  Graph g = torch_graph();
  g.outputs() = {"softmax", "nothing"};
  expect_error(verify_graph(g, Dialect::Torch), "graph output 'nothing' is not a node");
}

TEST(VerifyGraph, DimensionsAreNotNegative) {
  Graph g = torch_graph();
  g.find("relu")->type.shape = {16, -1};
  expect_error(verify_graph(g, Dialect::Torch), "type (16, -1) float32 has a negative dimension");
}

// IR read from JSON or text meets the frontend's size limits, so no pass overflows on a 2^62 dim:
// 2^40 elements for stored tensors (inputs, parameters, outputs), 2^44 for computed intermediates
// (a contraction's iteration space, never stored once fused).
TEST(VerifyGraph, TensorsAreWithinTheSizeAndRankLimits) {
  Graph g = torch_graph();
  g.find("relu")->type.shape = {int64_t{1} << 62};
  expect_error(verify_graph(g, Dialect::Torch), "type (4611686018427387904,) float32 is too large (more than 2^44 elements)");
  g.find("relu")->type.shape = {1 << 20, 1 << 20, 2};  // 2^41: fine for an intermediate
  EXPECT_TRUE(verify_graph(g, Dialect::Torch).ok());
  g.find("relu")->type.shape = {1 << 20, 1 << 20, 32};
  expect_error(verify_graph(g, Dialect::Torch), "is too large (more than 2^44 elements)");
  g.find("relu")->type.shape = {16, 16};
  g.find("x")->type.shape = {1 << 20, 1 << 20, 2};
  expect_error(verify_graph(g, Dialect::Torch), "is too large (more than 2^40 elements for a stored tensor)");
  g.find("x")->type.shape = {16, 64};
  g.find("relu")->type.shape = Shape(65, Dim(1));
  expect_error(verify_graph(g, Dialect::Torch), "type has rank 65; the limit is 64");
}

TEST(VerifyGraph, EveryNodeHasAnOp) {
  Graph g = torch_graph();
  g.find("relu")->op.reset();
  Status s = verify_graph(g, Dialect::Torch);
  expect_error(s, "node has no op");
  EXPECT_EQ(s.error().node, "relu");
}

TEST(VerifyGraph, CheckpointConstantsNameATensorOfAnAbsoluteFile) {
  auto with = [](const std::function<void(ConstantOp&, Node&)>& edit) {
    Graph g = torch_graph();
    auto c = std::make_unique<ConstantOp>();
    c->path = "model.norm.weight";
    c->checkpoint = CheckpointRef{"/m/model.safetensors", 1024, 5};
    Node& n = g.add("p_norm", std::move(c), {}, TensorType{Shape{64}, DType::F32});
    edit(*n.op_as<ConstantOp>(), n);
    return verify_graph(g, Dialect::Torch);
  };
  EXPECT_TRUE(with([](ConstantOp&, Node&) {}));
  EXPECT_TRUE(with([](ConstantOp&, Node& n) { n.type.dtype = DType::BF16; }));
  Status s = with([](ConstantOp& c, Node&) { c.checkpoint->file = "model.safetensors"; });
  expect_error(s, "checkpoint file 'model.safetensors' of tensor 'model.norm.weight' is not an absolute path");
  EXPECT_EQ(s.error().node, "p_norm");
  expect_error(with([](ConstantOp& c, Node&) { c.path.clear(); }), "checkpoint constant names no tensor");
  expect_error(with([](ConstantOp& c, Node&) { c.values = {1.0}; }),
               "constant 'model.norm.weight' has both literal values and a checkpoint tensor");
  expect_error(with([](ConstantOp&, Node& n) { n.type.dtype = DType::I64; }),
               "checkpoint tensors convert to float32, float16 or bfloat16 only");
  expect_error(with([](ConstantOp& c, Node&) { c.checkpoint->file_bytes = -1; }), "a negative size");
}

TEST(VerifyGraph, ElementwiseArgumentsNameInputs) {
  Graph g = tensor_graph();
  g.find("add")->op_as<ElementwiseOp>()->args[1] = var("w");
  expect_error(verify_graph(g, Dialect::Tensor),
               "elementwise argument 'w' names 'w', which is not an input of the node");
}

TEST(VerifyGraph, ReduceAndGatherArity) {
  Graph g = tensor_graph();
  g.find("red")->inputs = {"prod", "add"};
  expect_error(verify_graph(g, Dialect::Tensor), "reduce takes exactly one input");
  Graph h = tensor_graph();
  h.find("emb")->inputs = {"table"};
  expect_error(verify_graph(h, Dialect::Tensor), "gather takes exactly two inputs");
}

TEST(VerifyGraph, IndexMapsReadInputsThroughOutputCoordinates) {
  Graph g = tensor_graph();
  g.find("bias_bc")->op_as<IndexMapOp>()->sources[0].buffer = "x";
  expect_error(verify_graph(g, Dialect::Tensor),
               "index map reads 'x', which is not an input of the node");
  Graph h = tensor_graph();
  h.find("bias_bc")->op_as<IndexMapOp>()->sources[0].index = {var("k")};
  expect_error(verify_graph(h, Dialect::Tensor),
               "index map expression 'k' uses 'k', which is not an output coordinate");
  Graph e = tensor_graph();
  e.find("bias_bc")->op_as<IndexMapOp>()->sources.clear();
  expect_error(verify_graph(e, Dialect::Tensor), "index map has no sources");
}

TEST(VerifyGraph, LaunchGeometryIsThreePositiveSizes) {
  Graph g = kernel_graph();
  g.find("rms_norm")->op_as<KernelOp>()->block = {0, 1, 1};
  expect_error(verify_graph(g, Dialect::Kernel),
               "kernel launch geometry must be three positive sizes");
  Graph c = cuda_graph();
  c.find("rms_norm")->op_as<CudaOp>()->grid = {32, 1};
  expect_error(verify_graph(c, Dialect::Cuda),
               "kernel launch geometry must be three positive sizes");
}

TEST(VerifyGraph, KernelBodiesReadOnlyTheirInputs) {
  Graph g = loop_graph();
  g.find("relu")->inputs = {"bias", "x"};  // w is still loaded
  Status s = verify_graph(g, Dialect::Loop);
  std::string text = expect_error(
      s,
      "loop IR statement `in2 = load w[a2, a1]`: buffer 'w' is neither an input of node 'relu', "
      "its output, nor declared in the body");
  EXPECT_TRUE(Contains(text, "at node 'relu'"));
}

TEST(VerifyGraph, KernelBodiesWriteOnlyTheirOutput) {
  Graph g = loop_graph();
  auto& body = g.find("relu")->op_as<LoopOp>()->body;
  body.push_back(Write{"x", {lit(0), lit(0)}, flt(1.0)});
  expect_error(verify_graph(g, Dialect::Loop),
               "loop IR statement `x[0, 0] = 1.0`: writes 'x', but node 'relu' may only write its "
               "own output");
}

// ---- bodies: statement kinds per dialect ----

TEST(VerifyBody, LoopIrAllowsOnlyLoopStatements) {
  std::string text =
      expect_error(verify_loop({Smem{"s", DType::F32, {4}}}),
                   "loop IR statement `Smem s: f32[4]`: Smem is not allowed in loop IR");
  EXPECT_TRUE(Contains(text, "at node 'k'"));
  expect_error(verify_loop({Tile{{TileAxis{"a0", 4, AxisBinding::Thread}}, {}}}),
               "Tile is not allowed in loop IR");
}

TEST(VerifyBody, TileIrAddsScheduleStatements) {
  Body body = {Tile{{TileAxis{"a0", 4, AxisBinding::Thread}}, {AsyncWait{0}}}};
  EXPECT_TRUE(verify_body(body, Dialect::Tile, "k"));
  expect_error(verify_body({Sync{}}, Dialect::Tile, "k"), "Sync is not allowed in tile IR");
}

TEST(VerifyBody, KernelIrHasNoTileStatementsLeft) {
  expect_error(verify_kernel({Combine{"acc0", CombineFn::Add, CombineScope::Block}}),
               "Combine is not allowed in kernel IR");
  expect_error(verify_kernel({Stage{"s", "x", {}, {}, StageTransport::Sync, 0}}),
               "Stage is not allowed in kernel IR");
  EXPECT_TRUE(verify_kernel({Sync{}, CpAsyncCommit{}, CpAsyncWait{0}}));
}

TEST(VerifyBody, OnlyKernelDialectsHaveBodies) {
  expect_error(verify_body({}, Dialect::Tensor, "k"), "tensor IR has no statement bodies");
}

TEST(VerifyBody, EveryKindIsAllowedSomewhere) {
  // The fixture uses each kind once; verifying it as tile and as kernel IR must only ever
  // complain about kinds, names and buffers, never crash.
  EXPECT_FALSE(verify_body(every_stmt_kind_body(), Dialect::Tile, "k"));
  EXPECT_FALSE(verify_body(every_stmt_kind_body(), Dialect::Kernel, "k"));
}

// ---- bodies: names ----

TEST(VerifyBody, NamesAreDefinedBeforeUse) {
  expect_error(
      verify_loop({Assign{"v1", ElementwiseFn::Add, {var("v0"), lit(1)}}, Assign{"v0", ElementwiseFn::Exp, {lit(1)}}}),
      "loop IR statement `v1 = add(v0, 1)`: 'v0' is used before it is defined");
}

TEST(VerifyBody, ExpressionCastsConvertIndicesAndWidenButNeverNarrowAValue) {
  // i64 index arithmetic and a widening to f32 are expression casts...
  Body ok = {Loop{"a0", lit(0), lit(2), LoopRole::Free, 0,
                  {Assign{"v0", ElementwiseFn::Add, {Expr::cast(DType::F32, var("a0")), lit(1)}},
                   Write{"y", {Expr::cast(DType::I64, var("a0"))}, Expr::value("v0")}}}};
  Status s = verify_loop(ok);
  EXPECT_TRUE(s) << s.message();
  // ...narrowing to f16 / bf16 is not: it rounds, and only a `cast` Assign does that.
  for (DType narrow : {DType::F16, DType::BF16}) {
    Body bad = {Assign{"v0", ElementwiseFn::Exp, {lit(1)}},
                Write{"y", {lit(0)}, Expr::cast(narrow, Expr::value("v0"))}};
    expect_error(verify_loop(bad), "narrows to " + std::string(dtype_short_name(narrow)) +
                                       " inside an expression, which does not round; convert the value with a "
                                       "`cast` Assign");
  }
}

TEST(VerifyBody, AccumulatorsNeedAnInit) {
  expect_error(verify_loop({Accum{"acc0", CombineFn::Add, lit(1)}}),
               "loop IR statement `acc0 <- add(acc0, 1)`: accumulator 'acc0' has no Init in scope");
  expect_error(verify_loop({Assign{"v0", ElementwiseFn::Exp, {lit(1)}}, Accum{"v0", CombineFn::Add, lit(1)}}),
               "'v0' is not an accumulator (no Init defines it)");
  expect_error(verify_body({Combine{"acc9", CombineFn::Add, CombineScope::Block}}, Dialect::Tile, "k"),
               "accumulator 'acc9' has no Init in scope");
}

TEST(VerifyBody, NoNameIsDefinedTwiceInOneScope) {
  expect_error(verify_loop({Assign{"v0", ElementwiseFn::Exp, {lit(1)}}, Load{"v0", "x", {}}}),
               "loop IR statement `v0 = load x[]`: 'v0' is defined twice in one scope");
  expect_error(verify_kernel({VectorLoad{{"in0", "in0"}, "x", {lit(0)}}}),
               "'in0' is defined twice in one scope");
  // A loop variable belongs to the loop's body: redefining it there is a duplicate too.
  expect_error(
      verify_loop({Loop{"a0", lit(0), lit(2), LoopRole::Free, 0, {Assign{"a0", ElementwiseFn::Exp, {lit(1)}}}}}),
      "'a0' is defined twice in one scope");
}

TEST(VerifyBody, InnerScopesMayShadowAndSiblingLoopsMayReuseAxes) {
  Body body = {Assign{"v0", ElementwiseFn::Exp, {lit(1)}},
               Loop{"a0", lit(0), lit(2), LoopRole::Free, 0, {Assign{"v0", ElementwiseFn::Exp, {var("a0")}}}},
               Loop{"a0", lit(0), lit(2), LoopRole::Free, 0, {Assign{"v1", ElementwiseFn::Exp, {var("a0")}}}}};
  Status s = verify_loop(body);
  EXPECT_TRUE(s) << s.message();
}

TEST(VerifyBody, NamesDoNotLeakOutOfTheirBody) {
  Body loop_var = {Loop{"a0", lit(0), lit(2), LoopRole::Free, 0, {}}, Assign{"v0", ElementwiseFn::Exp, {var("a0")}}};
  expect_error(verify_loop(loop_var),
               "loop IR statement `v0 = exp(a0)`: 'a0' is used before it is defined");
  Body inner_value = {Loop{"a0", lit(0), lit(2), LoopRole::Free, 0, {Assign{"v0", ElementwiseFn::Exp, {var("a0")}}}},
                      Write{"y", {lit(0)}, var("v0")}};
  expect_error(verify_loop(inner_value),
               "loop IR statement `y[0] = v0`: 'v0' is used before it is defined");
  Body cond_branch = {
      Cond{lit(1) < lit(2), {Assign{"v0", ElementwiseFn::Exp, {lit(1)}}}, {Write{"y", {}, var("v0")}}}};
  expect_error(verify_loop(cond_branch), "'v0' is used before it is defined");
}

TEST(VerifyBody, DefinitionsReachNestedBodies) {
  Body body = {Init{"acc0", flt(0.0)},
               Loop{"a0",
                    lit(0),
                    lit(4),
                    LoopRole::Reduce,
                    0,
                    {Cond{var("a0") < lit(2), {Accum{"acc0", CombineFn::Add, var("a0")}}, {}}}},
               Write{"y", {}, var("acc0")}};
  Status s = verify_loop(body);
  EXPECT_TRUE(s) << s.message();
}

TEST(VerifyBody, HardwareIndicesAreKnownButOtherFreeNamesAreNot) {
  EXPECT_TRUE(
      verify_kernel({Let{"a0", var("threadIdx.x") + var("blockIdx.y") * var("blockDim.x")}}));
  expect_error(verify_kernel({Let{"a0", var("laneIdx")}}),
               "kernel IR statement `a0 = laneIdx`: 'laneIdx' is used before it is defined");
}

TEST(VerifyBody, BuffersAndValuesAreNotInterchangeable) {
  expect_error(verify_loop({Assign{"v0", ElementwiseFn::Exp, {lit(1)}}, Load{"in0", "v0", {}}}),
               "loop IR statement `in0 = load v0[]`: 'v0' is a local value, not a buffer");
  expect_error(verify_kernel({Smem{"s", DType::F32, {4}}, Let{"a0", var("s")}}),
               "kernel IR statement `a0 = s`: buffer 's' is used as a value");
  EXPECT_TRUE(verify_kernel({Smem{"s", DType::F32, {4}}, Write{"s", {lit(0)}, flt(1.0)}}));
}

TEST(VerifyBody, MissingPiecesAreErrors) {
  expect_error(verify_loop({Stmt()}), "loop IR body holds an undefined statement");
  expect_error(verify_loop({Write{"y", {}, Expr()}}),
               "loop IR statement `y[] = <undef>`: field 'value' has no expression");
  expect_error(verify_loop({Assign{"", ElementwiseFn::Exp, {lit(1)}}}), "defines an empty name");
  expect_error(verify_loop({Load{"in0", "", {}}}), "empty buffer name");
}

TEST(VerifyBody, DiagnosticsNameTheInnermostStatement) {
  Body body = {
      Loop{"a0",
           lit(0),
           lit(4),
           LoopRole::Free,
           0,
           {Loop{"a1", lit(0), lit(4), LoopRole::Free, 0, {Assign{"v0", ElementwiseFn::Add, {var("a1"), var("a7")}}}}}}};
  expect_error(verify_loop(body),
               "loop IR statement `v0 = add(a1, a7)`: 'a7' is used before it is defined");
}

}  // namespace
}  // namespace tessera

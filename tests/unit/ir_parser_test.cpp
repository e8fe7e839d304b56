// The IR text parser (tessera/ir/parser.h): printed statements, expressions and graphs parse back
// to structurally equal IR that prints identically, and bad text fails with a located message.
// Typed values, register arrays and the Kernel IR header (launch, cluster, dynamic shared memory,
// scalar and tensor-map parameters) come back exactly: the JSON of the parsed graph, which spells
// every field and the Var/Value kind of every name, equals the original's. Graphs the real
// pipeline produces are checked the same way. tests/golden/ir_round_trip_test.cpp checks the
// text identity on every golden printout.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/built_plugins.h"
#include "support/cli_runner.h"
#include "support/golden_sections.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/stmt.h"
#include "unit/ir_fixtures.h"

namespace tessera {
namespace {

using namespace ir_fixtures;

// print -> parse -> print is the identity on `g`, and the parsed graph's JSON is `g`'s.
void expect_exact_round_trip(const Graph& g, const std::string& what) {
  const std::string printed = print_graph(g);
  auto parsed = parse_graph(printed, what);
  ASSERT_TRUE(parsed) << what << ":\n" << parsed.error().render() << "\n" << printed;
  EXPECT_EQ(print_graph(*parsed), printed) << what;
  EXPECT_EQ(graph_to_json_text(*parsed), graph_to_json_text(g)) << what << ":\n" << printed;
  EXPECT_TRUE(structurally_equal(*parsed, g)) << what << ":\n" << printed;
}

TEST(IrParser, EveryStatementKindPrintsParsesAndPrintsAgain) {
  const Body body = every_stmt_kind_body();
  const std::string printed = print_body(body);
  auto parsed = parse_body(printed, "every_kind.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_body(*parsed), printed);
  EXPECT_TRUE(structurally_equal(*parsed, body));
}

TEST(IrParser, FieldsLeftOutOfThePrintoutComeBackAsTheirDefaults) {
  auto parsed = parse_body(
      "x_smem = Stage(x, origin=(0, a1), slab=(a2:64@1))\n"
      "Combine(acc0, op=max)\n"
      "MbarrierArrive(bar0)\n"
      "for a0 in 0..4:\n"
      "  Sync()\n",
      "defaults.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  ASSERT_EQ(parsed->size(), 4u);
  EXPECT_EQ((*parsed)[0].as<Stage>()->transport, StageTransport::Sync);
  EXPECT_EQ((*parsed)[0].as<Stage>()->pad, 0);
  EXPECT_EQ((*parsed)[1].as<Combine>()->scope, CombineScope::Block);
  EXPECT_EQ((*parsed)[2].as<MbarrierArrive>()->tx_bytes, 0);
  EXPECT_EQ((*parsed)[3].as<Loop>()->role, LoopRole::None);
  EXPECT_EQ((*parsed)[3].as<Loop>()->unroll, 0);
}

TEST(IrParser, LetAssignAndSelectAreToldApartByTheirRightHandSide) {
  auto parsed = parse_body(
      "a0 = min(threadIdx.x, 7)\n"
      "v0 = maximum(in0, in1)\n"
      "v1 = select(a0 < 4, in0, 0.0)\n"
      "a1 = f32(a0)\n",
      "rhs.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_TRUE((*parsed)[0].is<Let>());
  EXPECT_TRUE((*parsed)[1].is<Assign>());
  EXPECT_TRUE((*parsed)[2].is<Select>());
  EXPECT_TRUE((*parsed)[3].is<Let>());
}

TEST(IrParser, ExpressionsRoundTrip) {
  const Expr a0 = var("a0"), a1 = var("a1");
  const std::vector<Expr> exprs = {
      a1 * 2048 + a0,
      (a0 + a1) * 4,
      a0 - (a1 - lit(1)),
      a0 - a1 - lit(1),
      a0 / 32 % 8,
      a0 + lit(-1),
      lit(-5),
      flt(-std::numeric_limits<double>::infinity()),
      flt(1e-06),
      flt(2048.0),
      flt(1.1920928955078125e-07),
      Expr::min(a0, lit(7)),
      Expr::max(a0 * 2, a1),
      Expr::select(a0 < lit(4), var("in0"), flt(0.5)),
      Expr::cast(DType::BF16, var("v0")),
      Expr::not_(a0 < a1),
      Expr::binary(ExprKind::And, a0 < lit(4), Expr::binary(ExprKind::Ne, a1, lit(0))),
      Expr::binary(ExprKind::Or, Expr::binary(ExprKind::Eq, a0, lit(0)), a1 <= lit(3)),
      Expr::binary(ExprKind::Lt, a0 < a1, lit(1)),
      var("threadIdx.x") % 32,
  };
  for (const Expr& e : exprs) {
    auto parsed = parse_expr(e.str(), "expr");
    ASSERT_TRUE(parsed) << e.str() << ": " << parsed.error().render();
    EXPECT_EQ(parsed->str(), e.str());
    EXPECT_TRUE(structurally_equal(*parsed, e)) << e.str();
  }
}

TEST(IrParser, GraphsOfEveryKernelStageRoundTrip) {
  expect_exact_round_trip(loop_graph(), "loop_graph");
  expect_exact_round_trip(tile_graph(), "tile_graph");
  expect_exact_round_trip(kernel_graph(), "kernel_graph");
}

// ---- typed values, register arrays, the kernel ABI ---------------------------------------------

TensorType tensor(Shape shape, DType dtype) { return TensorType{std::move(shape), dtype}; }

Graph one_input(const std::string& id, Shape shape, DType dtype) {
  Graph g;
  g.add(id, std::make_unique<InputOp>(), {}, tensor(std::move(shape), dtype));
  return g;
}

ValueType typed(DType t, int64_t lanes = 1, std::vector<int64_t> array = {}) {
  return ValueType{t, lanes, std::move(array)};
}

// y = bf16(float(x) * 2 + x[ids]) in PyTorch's opmath form: loads of the storage dtype, casts to
// f32 and back, comparisons producing bool, packed pairs and casts inside expressions.
Graph bf16_kernel_graph() {
  Graph g = one_input("x", {16, 64}, DType::BF16);
  g.add("ids", std::make_unique<InputOp>(), {}, tensor({16}, DType::I64));
  auto op = std::make_unique<LoopOp>();
  op->name = "k_bf16";
  Body inner = {
      Load{"in0", "x", {var("a0"), var("a1")}, typed(DType::BF16)},
      Load{"in1", "ids", {var("a0")}, typed(DType::I64)},
      Load{"in2", "x", {Expr::cast(DType::I64, val("in1")) % 16, var("a1")}, typed(DType::BF16)},
      Assign{"v0", ElementwiseFn::Cast, {val("in0")}},
      Assign{"v1", ElementwiseFn::Cast, {val("in2")}},
      Assign{"v2", ElementwiseFn::Mul, {val("v0"), flt(2.0)}},
      Assign{"v3", ElementwiseFn::Add, {val("v2"), val("v1")}},
      Assign{"v4", ElementwiseFn::Lt, {val("v3"), flt(0.0)}, typed(DType::Bool)},
      Select{"v5", val("v4"), flt(0.0), val("v3")},
      Assign{"v6", ElementwiseFn::Maximum, {val("in0"), val("in2")}, typed(DType::BF16, 2)},
      Assign{"v7", ElementwiseFn::Identity, {val("v6")}, typed(DType::BF16)},
      Assign{"v8", ElementwiseFn::Cast, {Expr::cast(DType::I32, val("v5"))}, typed(DType::BF16)},
      Select{"v9", val("v4"), val("v8"), val("v7"), typed(DType::BF16)},
      VectorLoad{{"in3", "in4"}, "x", {var("a0"), var("a1") / 2 * 2}, typed(DType::BF16)},
      WarpShuffle{"v10", val("in3"), ShuffleMode::Xor, 1, 32, typed(DType::BF16)},
      Write{"y", {var("a0"), var("a1")}, val("v9")}};
  op->body = {Loop{"a0", lit(0), lit(16), LoopRole::Free, 0, {Loop{"a1", lit(0), lit(64), LoopRole::Free, 0, inner}}}};
  g.add("y", std::move(op), {"x", "ids"}, tensor({16, 64}, DType::BF16));
  g.outputs() = {"y"};
  return g;
}

TEST(IrParser, Bf16KernelWithCastsRoundTripsExactly) {
  const Graph g = bf16_kernel_graph();
  const std::string printed = print_graph(g);
  EXPECT_NE(printed.find("    bf16 in0 = load x[a0, a1]\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("    bf16x2 v6 = maximum(in0, in2)\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("    v0 = cast(in0)\n"), std::string::npos) << printed;  // f32: no prefix
  EXPECT_NE(printed.find("    bf16 (in3, in4) = load2 x[a0, a1 / 2 * 2]\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("    bf16 v10 = WarpShuffle(in3, xor, 1, width=32)\n"), std::string::npos) << printed;
  expect_exact_round_trip(g, "bf16_kernel");
}

// A 4x8 register tile accumulated by unrolled loops, read back element by element.
Graph register_array_graph() {
  Graph g = one_input("x", {4, 8, 64}, DType::F32);
  auto op = std::make_unique<KernelOp>();
  op->name = "k_tile_sum";
  op->grid = {1, 1, 1};
  op->block = {32, 1, 1};
  Body accumulate = {Load{"in0", "x", {var("a1"), var("a2"), var("a3")}},
                     Accum{"acc0", CombineFn::Add, val("in0"), {var("a1"), var("a2")}}};
  Body drain = {Assign{"v0", ElementwiseFn::Add, {Expr::element("acc0", {var("a4"), lit(0)}),
                                     Expr::element("acc0", {var("a4"), lit(7)})}},
                Accum{"acc1", CombineFn::Max, Expr::element("acc0", {var("a4"), lit(3)}), {}},
                Write{"y", {var("a4"), var("a0")}, val("v0")}};
  op->body = {
      Let{"a0", var("threadIdx.x")},
      Init{"acc0", flt(0.0), typed(DType::F32, 1, {4, 8})},
      Init{"acc1", flt(-std::numeric_limits<double>::infinity())},
      StridedLoop{"a3", var("a0"), lit(64), lit(32), LoopRole::Reduce, 0,
                  {Loop{"a1", lit(0), lit(4), LoopRole::None, 4, {Loop{"a2", lit(0), lit(8), LoopRole::None, 8, accumulate}}}}},
      Loop{"a4", lit(0), lit(4), LoopRole::Free, 4, drain},
      Write{"y", {lit(0), var("a0")}, val("acc1")}};
  g.add("y", std::move(op), {"x"}, tensor({4, 32}, DType::F32));
  g.outputs() = {"y"};
  return g;
}

TEST(IrParser, RegisterArrayAccumulatorRoundTripsExactly) {
  const Graph g = register_array_graph();
  const std::string printed = print_graph(g);
  EXPECT_NE(printed.find("  f32[4][8] acc0 = init(0.0)\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("acc0[a1, a2] <- add(acc0[a1, a2], in0)\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("v0 = add(acc0[a4, 0], acc0[a4, 7])\n"), std::string::npos) << printed;
  expect_exact_round_trip(g, "register_array");
}

// y[r, c] = x[(r + pos) % 8, c] * scale over a 2-D grid in clusters, with its rows brought in by
// TMA through a tensor-map parameter into dynamic shared memory.
Graph kernel_abi_graph() {
  Graph g = one_input("x", {8, 64}, DType::F32);
  auto op = std::make_unique<KernelOp>();
  op->name = "k_roll";
  op->grid = {2, 8, 1};
  op->block = {32, 1, 1};
  op->cluster = {2, 1, 1};
  op->dynamic_smem = 65536;
  KernelParam pos{"pos", ParamKind::Scalar, DType::I32, false, Interval{0, 7}, {}};
  KernelParam scale{"scale", ParamKind::Scalar, DType::F32, false, std::nullopt, {}};
  KernelParam steps{"steps", ParamKind::Scalar, DType::I64, false, std::nullopt, {}};
  KernelParam tmap{"tmap_x", ParamKind::TensorMap, DType::F32, false, std::nullopt, TensorMapSpec{"x", {1, 64}, SmemSwizzle::None, TensorMapOobFill::Zero, {}}};
  op->params = {pos, scale, steps, tmap};
  Expr row = (var("a1") + var("pos")) % 8;
  op->body = {
      Let{"a0", var("threadIdx.x")},
      Let{"a1", var("blockIdx.y")},
      Let{"a2", var("blockIdx.x") * 32 + var("a0")},
      Smem{"x_smem", DType::F32, {64}},
      MbarrierInit{"bar0", 1},
      Cond{Expr::binary(ExprKind::Eq, var("a0"), lit(0)), {MbarrierArrive{"bar0", Expr::int_(0), 256}, TmaLoad{"x_smem", {}, "tmap_x", {lit(0), row}, "bar0", Expr::int_(0)}}, {}},
      MbarrierWait{"bar0", lit(0), lit(0)},
      Load{"in0", "x_smem", {var("a2")}},
      Assign{"v0", ElementwiseFn::Mul, {val("in0"), val("scale")}},
      Cond{var("a2") < var("steps"), {Write{"y", {var("a1"), var("a2")}, val("v0")}}, {}}};
  g.add("y", std::move(op), {"x"}, tensor({8, 64}, DType::F32));
  g.outputs() = {"y"};
  return g;
}

TEST(IrParser, KernelAbiHeaderRoundTripsExactly) {
  const Graph g = kernel_abi_graph();
  const std::string printed = print_graph(g);
  EXPECT_NE(printed.find("kernel k_roll  grid=(2, 8, 1) block=(32, 1, 1) cluster=(2, 1, 1) smem=65536 dynamic  "
                         "inputs: x  outputs: y: (8, 64) float32  params: pos: i32 in [0, 7], scale: f32, "
                         "steps: i64, tmap_x: tensor_map(x, box=(1, 64))\n"),
            std::string::npos)
      << printed;
  expect_exact_round_trip(g, "kernel_abi");

  // The namespaces come back from the definitions: an integer scalar is an index variable, a
  // floating-point one a value.
  auto parsed = parse_graph(printed, "abi.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  const Body& body = parsed->find("y")->op_as<KernelOp>()->body;
  const Assign* scaled = body[8].as<Assign>();
  ASSERT_NE(scaled, nullptr);
  EXPECT_TRUE(scaled->args[0].is(ExprKind::Value));
  EXPECT_TRUE(scaled->args[1].is(ExprKind::Value));
  const Cond* guard = body[9].as<Cond>();
  ASSERT_NE(guard, nullptr);
  EXPECT_TRUE(guard->cond.operand(1).is(ExprKind::Var));
  EXPECT_EQ(parsed->find("y")->op_as<KernelOp>()->params[3].dtype, DType::F32);
}

TEST(IrParser, NamesAreValuesOrIndexVariablesByTheirDefinition) {
  auto parsed = parse_body(
      "a0 = threadIdx.x\n"
      "bf16 in0 = load x[a0]\n"
      "i64 acc0 = init(0)\n"
      "for a1 in 0..4:  # unroll 4\n"
      "  v0 = add(in0, a1)\n"
      "  acc0 <- add(acc0, i64(in0))\n"
      "y[a0] = select(a0 < n, acc0, in0)\n",
      "names.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  const Loop* loop = (*parsed)[3].as<Loop>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ((*parsed)[1].as<Load>()->type, typed(DType::BF16));
  EXPECT_EQ((*parsed)[2].as<Init>()->type, typed(DType::I64));
  const Assign* add = loop->body[0].as<Assign>();
  EXPECT_TRUE(add->args[0].is(ExprKind::Value));
  EXPECT_TRUE(add->args[1].is(ExprKind::Var));
  EXPECT_EQ(add->type, ValueType{});
  EXPECT_TRUE(loop->body[1].as<Accum>()->value.operand(0).is(ExprKind::Value));
  const Expr& select = (*parsed)[4].as<Write>()->value;
  EXPECT_TRUE(select.operand(0).operand(0).is(ExprKind::Var));   // a0: a Let variable
  EXPECT_TRUE(select.operand(0).operand(1).is(ExprKind::Var));   // n: bound nowhere
  EXPECT_TRUE(select.operand(1).is(ExprKind::Value));            // acc0
  EXPECT_TRUE(select.operand(2).is(ExprKind::Value));            // in0
}

// Real pass output, at every kernel stage: what lift, fuse, the tile passes and materialize build
// parses back to the same JSON (so passes and the parser agree on every name's namespace and every
// value's type).
class IrParserPipeline : public test::BuiltPluginsTest {};

TEST_F(IrParserPipeline, LoweredProgramsParseBackExactlyAtEveryKernelStage) {
  ASSERT_TRUE(load_error_.empty()) << load_error_;
  ASSERT_NE(h100(), nullptr);
  Expected<PipelineSpec> spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
  ASSERT_TRUE(spec) << spec.error().render();
  struct Program {
    const char* text;
    DType dtype;
  };
  const Program programs[] = {
      {"x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); torch.relu(torch.matmul(x + bias, w))",
       DType::F32},
      {"nn.RMSNorm(2048)(torch.randn(1,3,2048))", DType::F32},
      {"nn.RMSNorm(2048)(torch.randn(1,3,2048))", DType::BF16},
      {"torch.nn.Softmax(dim=-1)(torch.randn(1,3,33,77))", DType::BF16},
      {"import torch.nn.functional as F; x=torch.randn(7,33); F.gelu(x) + F.gelu(x, approximate='tanh')",
       DType::F16},
      {"ids=torch.randint(0, 10, (4, 6)); x=torch.randn(4, 6); x * ids + (ids > 4).float()", DType::F32},
      {"ids=torch.randint(0, 10, (3, 5)); nn.Embedding(10, 8)(ids)", DType::BF16},
  };
  for (const Program& p : programs) {
    for (Dialect stop : {Dialect::Loop, Dialect::Tile, Dialect::Kernel}) {
      Graph g = trace(p.text, p.dtype);
      if (::testing::Test::HasFailure()) return;
      Status s = lower(g, *spec, stop, h100());
      ASSERT_TRUE(s) << p.text << ": " << s.message();
      // Where the frontend created a node is not part of the printout.
      for (const Node* n : g.nodes()) g.find(n->id())->loc = SourceLoc{};
      expect_exact_round_trip(g, std::string(p.text) + " (" + std::string(dtype_short_name(p.dtype)) + ", " +
                                     std::string(dialect_name(stop)) + ")");
    }
  }
}

// Goldens that start from a hand-built kernel graph's JSON (Loop IR with hand-written names, Kernel
// IR headers with a 2-D grid, cluster dims, scalars and a tensor map) print and parse back to the
// same JSON.
// (Not canonicalize/dead_torch_nodes.txt: an elementwise-only Torch IR graph prints exactly like
// Tensor IR and reads back as Tensor IR, see docs/ir.md.)
TEST(IrParser, JsonGoldensParseBackToTheSameJson) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(TESSERA_SOURCE_DIR) / "tests" / "golden";
  size_t checked = 0;
  for (const char* file : {"canonicalize/loop_names.txt", "canonicalize/kernel_abi_header.txt",
                           "emit_cuda/scalar_param_2d_grid.txt"}) {
    const std::string path = (root / file).string();
    for (const auto& section : test::parse_golden_sections(test::read_file(path))) {
      if (section.name != "from-ir") continue;
      auto g = graph_from_json_text(section.text, path);
      ASSERT_TRUE(g) << g.error().render();
      expect_exact_round_trip(*g, path);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3u);
}

TEST(IrParser, DeclarationsKeepTheirProvenance) {
  const std::string text =
      "x: (4, 8) float32\n"
      "m: (8,) bool  # ones\n"
      "s: () float32  # full(0.5)\n"
      "p_w: (8,) bfloat16 = param layers.0.w  # randn seed=18446744073709551615 scale=0.02\n"
      "c: (2,) float32 = const  # values=[1.0, -2.5]\n"
      "z: (3,) int64 = const  # zeros\n"
      "\n"
      "return x\n";
  auto parsed = parse_graph(text, "decls.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_graph(*parsed), text);
  const auto* p = parsed->find("p_w")->op_as<ConstantOp>();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->seed, 18446744073709551615ull);
  EXPECT_EQ(p->path, "layers.0.w");
  EXPECT_EQ(parsed->find("s")->op_as<InputOp>()->fill, 0.5);
}

TEST(IrParser, CheckpointConstantsParseBack) {
  const std::string text =
      "x: (1, 4) float32\n"
      "p_model_norm_weight: (4,) float32 = param model.norm.weight from /m/tiny model/model.safetensors  "
      "# file_bytes=1024 modified_ns=1732490113123456789\n"
      "\n"
      "return x\n";
  auto parsed = parse_graph(text, "ckpt.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_graph(*parsed), text);
  const auto* p = parsed->find("p_model_norm_weight")->op_as<ConstantOp>();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->path, "model.norm.weight");
  ASSERT_TRUE(p->checkpoint);
  EXPECT_EQ(*p->checkpoint, (CheckpointRef{"/m/tiny model/model.safetensors", 1024, 1732490113123456789}));
  EXPECT_TRUE(p->values.empty());

  std::string no_stamp = text;
  no_stamp.erase(no_stamp.find("  # file_bytes"), no_stamp.find("\n\nreturn") - no_stamp.find("  # file_bytes"));
  auto bad = parse_graph(no_stamp, "ckpt.tir");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("'# file_bytes=N modified_ns=T'"), std::string::npos) << bad.error().render();
}

// ---- errors: message and location --------------------------------------------------------------

struct ErrorCase {
  const char* name;
  std::string text;
  std::string message;  // a substring of the message
  int line, col;
};

void expect_graph_error(const ErrorCase& c) {
  auto parsed = parse_graph(c.text, "bad.tir");
  ASSERT_FALSE(parsed) << c.name << " parsed";
  const Diagnostic& d = parsed.error();
  EXPECT_NE(d.message.find(c.message), std::string::npos) << c.name << ": " << d.render();
  EXPECT_EQ(d.loc.file, "bad.tir") << c.name;
  EXPECT_EQ(d.loc.line, c.line) << c.name << ": " << d.render();
  EXPECT_EQ(d.loc.col, c.col) << c.name << ": " << d.render();
  // The rendering shows the line and a caret under the column.
  const std::string rendered = d.render();
  EXPECT_NE(rendered.find("bad.tir:" + std::to_string(c.line) + ":" + std::to_string(c.col) +
                          ": error: "),
            std::string::npos)
      << rendered;
  EXPECT_NE(rendered.find('^'), std::string::npos) << rendered;
}

const std::string kHeader = "x: (4, 8) float32\n\n=== k(x) -> y: (4, 8) float32 ===\n";

TEST(IrParserErrors, UnknownStatement) {
  expect_graph_error({"unknown statement", kHeader + "  Frobnicate(x)\n\nreturn y\n",
                      "expected '=', '<-' or '[' after 'Frobnicate'", 4, 13});
}

TEST(IrParserErrors, UnknownLoopRole) {
  expect_graph_error({"unknown loop role",
                      kHeader + "  for a0 in 0..4:  # sideways\n    in0 = load x[a0, 0]\n\nreturn y\n",
                      "expected a loop role (free, reduce), not 'sideways'", 4, 22});
}

TEST(IrParserErrors, BadIndentation) {
  expect_graph_error({"bad indentation",
                      kHeader + "  for a0 in 0..4:  # free\n     in0 = load x[a0, 0]\n\nreturn y\n",
                      "unexpected indentation: expected 4 spaces, found 5", 5, 1});
}

TEST(IrParserErrors, BadExpression) {
  expect_graph_error({"bad expression", kHeader + "  in0 = load x[a0 + * 2, 0]\n\nreturn y\n",
                      "expected an expression, found '*'", 4, 21});
}

TEST(IrParserErrors, UnknownBuffer) {
  expect_graph_error({"unknown buffer in a statement",
                      kHeader + "  in0 = load w[0, 0]\n\nreturn y\n", "unknown buffer 'w'", 4, 14});
  expect_graph_error({"unknown buffer in a header",
                      "x: (4,) float32\n\nkernel k  inputs: x, q  outputs: y: (4,) float32\n"
                      "  Sync()\n\nreturn y\n",
                      "unknown buffer 'q'", 3, 22});
}

TEST(IrParserErrors, TruncatedBlock) {
  expect_graph_error({"loop without a body", kHeader + "  for a0 in 0..4:  # free\n",
                      "expected an indented block after 'for' (the text ends here)", 4, 3});
  expect_graph_error({"kernel without a body", kHeader,
                      "expected an indented kernel body after this header", 3, 1});
  expect_graph_error({"no return line", kHeader + "  Sync()\n",
                      "expected a 'return' line", 4, 9});
}

TEST(IrParserErrors, VectorWidthMustMatch) {
  auto parsed = parse_body("(in0, in1) = load4 x[0]\n", "vec.tir");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("expected 'load2' for 2 values, found 'load4'"),
            std::string::npos)
      << parsed.error().render();
  EXPECT_EQ(parsed.error().loc.col, 14);
}

TEST(IrParserErrors, OneGraphIsAtOneStage) {
  expect_graph_error({"torch and tensor lines",
                      "x: (4, 8) float32\n\nx_bc = x[i, j] -> (4, 8) float32\n"
                      "s = softmax(x_bc, dim=-1) -> (4, 8) float32\n\nreturn s\n",
                      "a Tensor IR node in a graph whose line 4 is Torch IR", 3, 1});
}

TEST(IrParser, TorchGraphRoundTrips) {
  const Graph g = torch_graph();
  const std::string printed = print_graph(g);
  auto parsed = parse_graph(printed, "torch.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_graph(*parsed), printed);
  EXPECT_TRUE(structurally_equal(*parsed, g)) << printed;
  EXPECT_EQ(parsed->stage(), Dialect::Torch);
}

TEST(IrParser, AnElementwiseOnlyGraphReadsAsTensorIr) {
  auto parsed = parse_graph("x: (4,) float32\n\nr = relu(x) -> (4,) float32\n\nreturn r\n", "ew.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(parsed->stage(), Dialect::Tensor);
  // A broadcasting operand is Torch IR only.
  auto torch = parse_graph("x: (4,) float32\nb: () float32\n\nr = add(x, b) -> (4,) float32\n\nreturn r\n",
                           "bc.tir");
  ASSERT_TRUE(torch) << torch.error().render();
  EXPECT_EQ(torch->stage(), Dialect::Torch);
}

TEST(IrParser, TensorGraphRoundTrips) {
  const Graph g = tensor_graph();
  const std::string printed = print_graph(g);
  auto parsed = parse_graph(printed, "tensor.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_graph(*parsed), printed);
  EXPECT_TRUE(structurally_equal(*parsed, g)) << printed;
}

TEST(IrParserErrors, NestingDepthIsBoundedWithoutRecursingPastIt) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += std::string(2 * i, ' ') + "for a" + std::to_string(i) + " in 0..2:\n";
  text += std::string(400, ' ') + "Sync()\n";
  auto parsed = parse_body(text, "deep.tir");
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("nested deeper than 64 levels"), std::string::npos)
      << parsed.error().message;
  EXPECT_EQ(parsed.error().loc.line, 65);  // 64 levels are allowed

  std::string parens(100000, '(');
  auto deep_expr = parse_expr(parens + "a0" + std::string(100000, ')'), "expr");
  ASSERT_FALSE(deep_expr);
  EXPECT_NE(deep_expr.error().message.find("nested deeper than"), std::string::npos);
}

TEST(IrParserErrors, TypedDefinitionsAndKernelHeaders) {
  expect_graph_error({"unknown value type", kHeader + "  f33 in0 = load x[0, 0]\n\nreturn y\n",
                      "expected a value type (f32, bf16, i64, bool, bf16x2, f32[4][8], ...), found 'f33'", 4, 3});
  expect_graph_error({"type on a write", kHeader + "  for a0 in 0..4:\n    bf16 a1 = a0 + 1\n\nreturn y\n",
                      "a value type prefix belongs to a definition of a value", 5, 5});
  expect_graph_error({"accumulator element mismatch",
                      kHeader + "  f32[2] acc0 = init(0.0)\n  acc0[0] <- add(acc0[1], 1.0)\n\nreturn y\n",
                      "expected the accumulator 'acc0[0]' as the first operand, found 'acc0[1]'", 5, 18});
  const std::string x = "x: (4, 8) float32\n\n";
  expect_graph_error({"cluster without a launch",
                      x + "kernel k  cluster=(2, 1, 1)  inputs: x  outputs: y: (4, 8) float32\n  Sync()\n\nreturn y\n",
                      "expected 'grid=(..)' and 'block=(..)'", 3, 11});
  expect_graph_error({"field twice",
                      x + "kernel k  grid=(1, 1, 1) block=(1, 1, 1) grid=(2, 1, 1)  inputs: x  outputs: y: (4, 8) "
                          "float32\n  Sync()\n\nreturn y\n",
                      "kernel header field 'grid' is given twice", 3, 42});
  expect_graph_error({"smem without dynamic",
                      x + "kernel k  grid=(1, 1, 1) block=(1, 1, 1) smem=1024  inputs: x  outputs: y: (4, 8) "
                          "float32\n  Sync()\n\nreturn y\n",
                      "expected 'dynamic'", 3, 53});
  expect_graph_error({"unknown param type",
                      x + "kernel k  grid=(1, 1, 1) block=(1, 1, 1)  inputs: x  outputs: y: (4, 8) float32  "
                          "params: n: u32\n  Sync()\n\nreturn y\n",
                      "unknown parameter type 'u32'", 3, 93});
  expect_graph_error({"tensor map of an unknown buffer",
                      x + "kernel k  grid=(1, 1, 1) block=(1, 1, 1)  inputs: x  outputs: y: (4, 8) float32  "
                          "params: t: tensor_map(w, box=(1, 8))\n  Sync()\n\nreturn y\n",
                      "unknown buffer 'w'", 3, 104});
  expect_graph_error({"params on a Tile IR kernel",
                      x + "kernel k  inputs: x  outputs: y: (4, 8) float32  params: n: i32\n  Sync()\n\nreturn y\n",
                      "a Tile IR kernel has no params", 3, 50});
  expect_graph_error({"TmaLoad of an undeclared tensor map",
                      x + "kernel k  grid=(1, 1, 1) block=(1, 1, 1)  inputs: x  outputs: y: (4, 8) float32\n"
                          "  Smem x_smem: f32[8]\n  bar0 = MbarrierInit(count=1)\n"
                          "  TmaLoad(x_smem, tmap_x, coords=(0, 0), mbar=bar0)\n\nreturn y\n",
                      "unknown buffer 'tmap_x'", 6, 19});
}

TEST(IrParserErrors, LineCountIsBounded) {
  ParseLimits limits;
  limits.max_lines = 3;
  auto parsed = parse_body("Sync()\nSync()\nSync()\nSync()\n", "long.tir", limits);
  ASSERT_FALSE(parsed);
  EXPECT_NE(parsed.error().message.find("more than 3 lines"), std::string::npos);
  EXPECT_EQ(parsed.error().loc.line, 4);
}

}  // namespace
}  // namespace tessera

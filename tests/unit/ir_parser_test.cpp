// The IR text parser (tessera/ir/parser.h): printed statements, expressions and graphs parse back
// to structurally equal IR that prints identically, and bad text fails with a located message.
// tests/golden/ir_round_trip_test.cpp checks the same identity on every golden printout.
#include <gtest/gtest.h>

#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/stmt.h"
#include "unit/ir_fixtures.h"

namespace tessera {
namespace {

using namespace ir_fixtures;

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
  for (const Graph& g : {loop_graph(), tile_graph(), kernel_graph()}) {
    const std::string printed = print_graph(g);
    auto parsed = parse_graph(printed, "graph.tir");
    ASSERT_TRUE(parsed) << parsed.error().render();
    EXPECT_EQ(print_graph(*parsed), printed);
    EXPECT_TRUE(structurally_equal(*parsed, g)) << printed;
  }
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

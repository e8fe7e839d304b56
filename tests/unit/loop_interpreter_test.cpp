// Tests of evaluate_loop_ir on hand-built Loop IR: the values of elementwise, reduction, guarded
// and Let/Select kernels, and that every kind of bad access is an error naming the node and the
// statement (never a crash). The differential runs over whole programs live in lift_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tessera/eval/loop_interpreter.h"
#include "tessera/ir/graph.h"

namespace tessera {
namespace {

Expr v(const std::string& name) { return Expr::var(name); }
Expr i(int64_t value) { return Expr::int_(value); }

Stmt loop(const std::string& var, int64_t end, Body body, LoopRole role = LoopRole::Free) {
  return Loop{var, i(0), i(end), role, 0, std::move(body)};
}

// x: (2, 3) input; `y` a LoopOp over inputs {x} with type `out`.
Graph kernel_graph(Body body, Shape out = {2, 3}, std::vector<std::string> inputs = {"x"}) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{2, 3}, DType::F32});
  auto op = std::make_unique<LoopOp>();
  op->name = "y";
  op->body = std::move(body);
  g.add("y", std::move(op), std::move(inputs), TensorType{std::move(out), DType::F32});
  g.outputs() = {"y"};
  return g;
}

ValueMap x_inputs() {
  return {{"x", TensorValue(TensorType{{2, 3}, DType::F32}, {1, -2, 3, -4, 5, -6})}};
}

std::string error_of(const Graph& g) {
  Expected<ValueMap> r = evaluate_loop_ir(g, x_inputs());
  if (r) return "<no error>";
  EXPECT_EQ(r.error().node, "y");
  return r.error().message;
}

TEST(LoopInterpreter, ElementwiseKernel) {
  Graph g = kernel_graph({loop("a0", 2, {loop("a1", 3, {Load{"in0", "x", {v("a0"), v("a1")}},
                                                          Assign{"v0", ElementwiseFn::Mul, {v("in0"), Expr::float_(2.0)}},
                                                          Assign{"v1", ElementwiseFn::Relu, {v("v0")}},
                                                          Write{"y", {v("a0"), v("a1")}, v("v1")}})})});
  Expected<ValueMap> r = evaluate_loop_ir(g, x_inputs());
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->at("y").data, (std::vector<double>{2, 0, 6, 0, 10, 0}));
  EXPECT_EQ(r->at("x").data, x_inputs().at("x").data);
}

TEST(LoopInterpreter, ReductionKernels) {
  struct Case {
    CombineFn op;
    double init;
    std::vector<double> expected;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const Case& c : {Case{CombineFn::Add, 0.0, {2, -5}}, Case{CombineFn::Max, -inf, {3, 5}},
                        Case{CombineFn::Min, inf, {-2, -6}}, Case{CombineFn::Mul, 1.0, {-6, 120}}}) {
    const CombineFn op = c.op;
    Graph g = kernel_graph({loop("a0", 2, {Init{"acc0", Expr::float_(c.init)},
                                           loop("a1", 3, {Load{"in0", "x", {v("a0"), v("a1")}},
                                                          Accum{"acc0", op, v("in0")}},
                                                LoopRole::Reduce),
                                           Write{"y", {v("a0"), i(0)}, v("acc0")}})},
                           {2, 1});
    Expected<ValueMap> r = evaluate_loop_ir(g, x_inputs());
    ASSERT_TRUE(r) << name_of(op) << ": " << r.error().render();
    EXPECT_EQ(r->at("y").data, c.expected) << name_of(op);
  }
}

TEST(LoopInterpreter, CondAndSelect) {
  // y[a0, a1] = x[a0, 2 - a1] where a1 < 2, else the literal 9, through Cond and Select.
  Graph g = kernel_graph({loop(
      "a0", 2,
      {loop("a1", 3,
            {Cond{v("a1") < i(2),
                  {Load{"in0", "x", {v("a0"), i(2) - v("a1")}}, Select{"v0", v("a0") < i(1), v("in0"), Expr::float_(0.5)},
                   Write{"y", {v("a0"), v("a1")}, v("v0")}},
                  {Write{"y", {v("a0"), v("a1")}, Expr::float_(9.0)}}}})})});
  Expected<ValueMap> r = evaluate_loop_ir(g, x_inputs());
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->at("y").data, (std::vector<double>{3, -2, 9, 0.5, 0.5, 9}));
}

TEST(LoopInterpreter, ReadingBackTheOutputAfterWritingIt) {
  Graph g = kernel_graph({loop("a0", 2, {loop("a1", 3, {Load{"in0", "x", {v("a0"), v("a1")}},
                                                          Write{"y", {v("a0"), v("a1")}, v("in0")},
                                                          Load{"in1", "y", {v("a0"), v("a1")}},
                                                          Assign{"v0", ElementwiseFn::Add, {v("in1"), v("in1")}},
                                                          Write{"y", {v("a0"), v("a1")}, v("v0")}})})});
  Expected<ValueMap> r = evaluate_loop_ir(g, x_inputs());
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->at("y").data, (std::vector<double>{2, -4, 6, -8, 10, -12}));
}

TEST(LoopInterpreter, OutOfBoundsLoadNamesNodeAndStatement) {
  Graph g = kernel_graph({loop("a0", 2, {loop("a1", 3, {Load{"in0", "x", {v("a0"), v("a1") + i(1)}},
                                                          Write{"y", {v("a0"), v("a1")}, v("in0")}})})});
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("y"), std::string::npos) << msg;
  EXPECT_NE(msg.find("in0 = load x[a0, a1 + 1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out of bounds"), std::string::npos) << msg;
}

TEST(LoopInterpreter, OutOfBoundsWriteIsAnError) {
  Graph g = kernel_graph({loop("a0", 3, {loop("a1", 3, {Write{"y", {v("a0"), v("a1")}, Expr::float_(1.0)}})})});
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("y[a0, a1] = 1.0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("out of bounds"), std::string::npos) << msg;
}

TEST(LoopInterpreter, ReadingAnUnwrittenOutputElementIsAnError) {
  Graph g = kernel_graph({loop("a0", 2, {loop("a1", 3, {Load{"in0", "y", {v("a0"), v("a1")}},
                                                          Write{"y", {v("a0"), v("a1")}, v("in0")}})})});
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("in0 = load y[a0, a1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("before it is written"), std::string::npos) << msg;
}

TEST(LoopInterpreter, AnOutputElementNeverWrittenIsAnError) {
  Graph g = kernel_graph({loop("a0", 2, {loop("a1", 2, {Write{"y", {v("a0"), v("a1")}, Expr::float_(1.0)}})})});
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("never writes output element [0, 2]"), std::string::npos) << msg;
}

TEST(LoopInterpreter, BadBuffersNamesAndStatementsAreErrors) {
  // Writing an input.
  EXPECT_NE(error_of(kernel_graph({Write{"x", {i(0), i(0)}, Expr::float_(1.0)}})).find("only its own output"),
            std::string::npos);
  // Loading a buffer that is not an input of the node.
  EXPECT_NE(error_of(kernel_graph({Load{"in0", "z", {i(0)}}})).find("neither an input"), std::string::npos);
  // Wrong index rank.
  EXPECT_NE(error_of(kernel_graph({Load{"in0", "x", {i(0)}}})).find("rank 2"), std::string::npos);
  // An unbound name.
  EXPECT_NE(error_of(kernel_graph({Write{"y", {i(0), i(0)}, v("v7")}})).find("'v7'"), std::string::npos);
  // An elementwise function given the wrong number of operands.
  EXPECT_NE(error_of(kernel_graph({Assign{"v0", ElementwiseFn::Add, {Expr::float_(1.0)}}})).find("takes 2"),
            std::string::npos);
  // An accumulator without an init.
  EXPECT_NE(error_of(kernel_graph({Accum{"acc0", CombineFn::Add, Expr::float_(1.0)}})).find("acc0"), std::string::npos);
  // A Tile IR statement.
  EXPECT_NE(error_of(kernel_graph({Sync{}})).find("Sync is not a Loop IR statement (it is Kernel IR)"), std::string::npos);
  // Which kinds are refused comes from the kind traits: Let and Combine, nested in a Loop too.
  EXPECT_NE(error_of(kernel_graph({loop("a0", 2, {Let{"a1", i(1)}})})).find("Let is not a Loop IR statement"),
            std::string::npos);
  EXPECT_NE(error_of(kernel_graph({Combine{"acc0", CombineFn::Add, CombineScope::Block}}))
                .find("Combine is not a Loop IR statement (it is Tile IR)"),
            std::string::npos);
  // Integer division by zero in an index.
  EXPECT_NE(error_of(kernel_graph({Load{"in0", "x", {i(1) / i(0), i(0)}}})).find("by zero"), std::string::npos);
}

TEST(LoopInterpreter, NonLoopComputeNodesAreRejected) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{2, 3}, DType::F32});
  auto op = std::make_unique<ElementwiseOp>();
  op->fn = ElementwiseFn::Relu;
  op->args = {v("x")};
  g.add("y", std::move(op), {"x"}, TensorType{{2, 3}, DType::F32});
  g.outputs() = {"y"};
  std::string msg = error_of(g);
  EXPECT_NE(msg.find("elementwise"), std::string::npos) << msg;
}

TEST(LoopInterpreter, ScalarOutputWithoutLoops) {
  Graph g = kernel_graph({Load{"in0", "x", {i(1), i(2)}}, Write{"y", {}, v("in0")}}, Shape{});
  Expected<ValueMap> r = evaluate_loop_ir(g, x_inputs());
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->at("y").data, std::vector<double>{-6});
}

}  // namespace
}  // namespace tessera

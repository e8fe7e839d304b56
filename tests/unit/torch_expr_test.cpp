// Tests of the torch_expr frontend plugin, reached the way users reach it: a PluginHost loads the
// build's plugin directory and the registry makes the "torch_expr" frontend. Covers the graph
// built for every core op (ids, ops, shapes, dtypes, attrs), module parameters and their seeds,
// nn.Module classes, and located error messages; plus a robustness sweep over malformed programs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <memory>
#include <string>
#include <vector>

#include "tessera/frontend/frontend.h"
#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "support/built_plugins.h"
#include "tessera/plugin/plugin_host.h"

namespace tessera {
namespace {

class TorchExprTest : public test::TorchExprFrontendTest {};


const TorchOp& torch_op(const Graph& g, const std::string& id) {
  const Node* n = g.find(id);
  EXPECT_NE(n, nullptr) << "no node " << id << " in\n" << print_graph(g);
  static const TorchOp empty;
  if (!n) return empty;
  const TorchOp* op = n->op_as<TorchOp>();
  EXPECT_NE(op, nullptr) << id << " is not a torch op";
  return op ? *op : empty;
}

std::vector<std::string> node_ids(const Graph& g) {
  std::vector<std::string> ids;
  for (const Node* n : g.nodes()) ids.push_back(n->id());
  return ids;
}

TensorType tt(Shape shape, DType dtype = DType::F32) { return TensorType{std::move(shape), dtype}; }

using Ints = std::vector<int64_t>;

// Checks message fragment and location of an error.
void expect_error(const Diagnostic& d, const std::string& fragment, int line, int col, int length = -1) {
  EXPECT_NE(d.message.find(fragment), std::string::npos) << "message: " << d.message << "\nexpected: " << fragment;
  EXPECT_EQ(d.loc.file, "<-c>");
  EXPECT_EQ(d.loc.line, line) << d.render();
  EXPECT_EQ(d.loc.col, col) << d.render();
  if (length >= 0) {
    EXPECT_EQ(d.loc.length, length) << d.render();
  }
  EXPECT_FALSE(d.source_line.empty()) << d.render();
}

// ---- the main job ----------------------------------------------------------------------------

TEST_F(TorchExprTest, RMSNormModuleOnRandomInput) {
  Graph g = trace("nn.RMSNorm(2048)(torch.randn(1,32,2048))");
  EXPECT_EQ(node_ids(g), (std::vector<std::string>{"x", "p_weight", "rms_norm"}));
  EXPECT_EQ(g.outputs(), std::vector<std::string>{"rms_norm"});

  const Node* x = g.find("x");
  ASSERT_NE(x, nullptr);
  ASSERT_NE(x->op_as<InputOp>(), nullptr);
  EXPECT_EQ(x->op_as<InputOp>()->init, "randn");
  EXPECT_EQ(x->type, tt({1, 32, 2048}));

  const Node* w = g.find("p_weight");
  ASSERT_NE(w, nullptr);
  const ConstantOp* param = w->op_as<ConstantOp>();
  ASSERT_NE(param, nullptr);
  EXPECT_EQ(param->path, "weight");
  EXPECT_EQ(w->type, tt({2048}));

  const TorchOp& op = torch_op(g, "rms_norm");
  EXPECT_EQ(op.target, "rms_norm");
  EXPECT_EQ(g.find("rms_norm")->inputs, (std::vector<std::string>{"x", "p_weight"}));
  EXPECT_EQ(g.find("rms_norm")->type, tt({1, 32, 2048}));
  ASSERT_NE(op.attrs.find("normalized_shape"), nullptr);
  EXPECT_EQ(*op.attrs.find("normalized_shape"), AttrValue(Ints{2048}));
  // eps=None means torch.finfo(float32).eps, recorded explicitly.
  EXPECT_EQ(op.attrs.get_float("eps", -1.0), 1.1920928955078125e-07);
}

TEST_F(TorchExprTest, RMSNormPrintsAsTorchIR) {
  Graph g = trace("nn.RMSNorm(2048)(torch.randn(1,32,2048))");
  std::string text = print_graph(g);
  EXPECT_NE(text.find("x: (1, 32, 2048) float32\n"), std::string::npos) << text;
  EXPECT_NE(text.find("p_weight: (2048,) float32 = param weight"), std::string::npos) << text;
  EXPECT_NE(text.find("rms_norm = rms_norm(x, p_weight, normalized_shape=(2048,), eps=1.1920928955078125e-07) -> "
                      "(1, 32, 2048) float32\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("return rms_norm\n"), std::string::npos) << text;
}

TEST_F(TorchExprTest, SameProgramSameGraphBytes) {
  const std::string program =
      "import torch\nimport torch.nn as nn\nx = torch.randn(4, 16)\nh = nn.Linear(16, 32)(x)\nF.silu(h) * 2.0";
  EXPECT_EQ(print_graph(trace(program)), print_graph(trace(program)));
}

TEST_F(TorchExprTest, NodesRecordTheirSourceLocation) {
  Graph g = trace("x = torch.randn(2, 8)\ny = nn.RMSNorm(8)(x)\ny");
  const Node* y = g.find("y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->loc.file, "<-c>");
  EXPECT_EQ(y->loc.line, 2);
  EXPECT_EQ(y->loc.col, 5);
  EXPECT_EQ(y->loc.length, 16);  // nn.RMSNorm(8)(x)
}

// ---- naming ----------------------------------------------------------------------------------

TEST_F(TorchExprTest, NodesAreNamedAfterVariablesElseAfterTheirOp) {
  Graph g = trace(
      "x = torch.randn(16, 64); bias = torch.randn(64); w = torch.randn(64, 16)\n"
      "torch.relu(torch.matmul(x + bias, w))");
  EXPECT_EQ(node_ids(g), (std::vector<std::string>{"x", "bias", "w", "add", "matmul", "relu"}));
  EXPECT_EQ(g.find("add")->inputs, (std::vector<std::string>{"x", "bias"}));
  EXPECT_EQ(g.find("add")->type, tt({16, 64}));
  EXPECT_EQ(g.find("matmul")->type, tt({16, 16}));
  EXPECT_EQ(g.find("relu")->type, tt({16, 16}));
  EXPECT_EQ(g.outputs(), std::vector<std::string>{"relu"});
}

TEST_F(TorchExprTest, ReassignedNamesAndRepeatedOpsGetUniqueIds) {
  Graph g = trace("x = torch.randn(4)\nx = x * 2\ny = x.exp() + x.exp()\ny");
  EXPECT_EQ(node_ids(g), (std::vector<std::string>{"x", "x_1", "exp", "exp_1", "y"}));
  EXPECT_EQ(g.find("x_1")->inputs, std::vector<std::string>{"x"});
}

TEST_F(TorchExprTest, TupleAssignmentNamesEachElement) {
  Graph g = trace("x = torch.randn(4)\na, b = x.relu(), x.exp()\na, b");
  EXPECT_EQ(torch_op(g, "a").target, "relu");
  EXPECT_EQ(torch_op(g, "b").target, "exp");
  EXPECT_EQ(g.outputs(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(TorchExprTest, VariableNamedLikeACppKeywordIsRenamed) {
  Graph g = trace("float = torch.randn(3)\nfloat");
  EXPECT_EQ(g.outputs(), std::vector<std::string>{"float_"});
}

TEST_F(TorchExprTest, UnusedValuesArePruned) {
  Graph g = trace("x = torch.randn(4)\nunused = torch.randn(5)\nz = x.exp()\nx.relu()");
  EXPECT_EQ(node_ids(g), (std::vector<std::string>{"x", "relu"}));
}

// ---- inputs ----------------------------------------------------------------------------------

TEST_F(TorchExprTest, TensorConstructorsBecomeInputs) {
  Graph g = trace(
      "a = torch.randn((2, 3))\nb = torch.rand([2, 3], dtype=torch.float16)\nc = torch.zeros(2, 3, dtype=torch.int32)\n"
      "d = torch.ones(2, 3, device='cuda')\ne = torch.full((2, 3), 0.5, dtype=torch.bfloat16)\na, b, c, d, e");
  struct Expect {
    const char* id;
    const char* init;
    DType dtype;
  };
  for (const Expect& e : {Expect{"a", "randn", DType::F32}, Expect{"b", "rand", DType::F16},
                          Expect{"c", "zeros", DType::I32}, Expect{"d", "ones", DType::F32},
                          Expect{"e", "full", DType::BF16}}) {
    const Node* n = g.find(e.id);
    ASSERT_NE(n, nullptr) << e.id;
    ASSERT_NE(n->op_as<InputOp>(), nullptr) << e.id;
    EXPECT_EQ(n->op_as<InputOp>()->init, e.init) << e.id;
    EXPECT_EQ(n->type, tt({2, 3}, e.dtype)) << e.id;
  }
  EXPECT_EQ(g.find("e")->op_as<InputOp>()->fill, 0.5);
}

TEST_F(TorchExprTest, DefaultDtypeComesFromOptions) {
  FrontendOptions options;
  options.dtype = DType::BF16;
  Graph g = trace("nn.Linear(8, 4)(torch.randn(2, 8))", options);
  EXPECT_EQ(g.find("x")->type.dtype, DType::BF16);
  EXPECT_EQ(g.find("p_weight")->type, tt({4, 8}, DType::BF16));  // parameters follow the input
  EXPECT_EQ(g.find("linear")->type, tt({2, 4}, DType::BF16));
}

// ---- modules and parameters ------------------------------------------------------------------

TEST_F(TorchExprTest, LinearModuleHasWeightAndBias) {
  Graph g = trace("nn.Linear(64, 16)(torch.randn(8, 64))");
  EXPECT_EQ(node_ids(g), (std::vector<std::string>{"x", "p_weight", "p_bias", "linear"}));
  EXPECT_EQ(g.find("p_weight")->type, tt({16, 64}));
  EXPECT_EQ(g.find("p_bias")->type, tt({16}));
  EXPECT_EQ(g.find("p_bias")->op_as<ConstantOp>()->path, "bias");
  EXPECT_EQ(g.find("linear")->inputs, (std::vector<std::string>{"x", "p_weight", "p_bias"}));
  EXPECT_EQ(g.find("linear")->type, tt({8, 16}));
  EXPECT_EQ(torch_op(g, "linear").target, "linear");
  // Weights are scaled like PyTorch's default init.
  EXPECT_DOUBLE_EQ(g.find("p_weight")->op_as<ConstantOp>()->scale, 1.0 / 8.0);
}

TEST_F(TorchExprTest, LinearWithoutBias) {
  Graph g = trace("nn.Linear(64, 16, bias=False)(torch.randn(3, 5, 64))");
  EXPECT_EQ(g.find("p_bias"), nullptr);
  EXPECT_EQ(g.find("linear")->inputs, (std::vector<std::string>{"x", "p_weight"}));
  EXPECT_EQ(g.find("linear")->type, tt({3, 5, 16}));
}

TEST_F(TorchExprTest, ParameterSeedsDependOnPathAndBaseSeedOnly) {
  Graph a = trace("nn.Linear(4, 4)(nn.Linear(4, 4)(torch.randn(2, 4)))");
  Graph b = trace("nn.Linear(4, 4)(nn.Linear(4, 4)(torch.randn(2, 4)))");
  // The second anonymous module is named after its op so its parameters stay distinct.
  EXPECT_EQ(a.find("p_linear_weight")->op_as<ConstantOp>()->path, "linear.weight");
  uint64_t w = a.find("p_weight")->op_as<ConstantOp>()->seed;
  uint64_t w2 = a.find("p_linear_weight")->op_as<ConstantOp>()->seed;
  uint64_t bias = a.find("p_bias")->op_as<ConstantOp>()->seed;
  EXPECT_NE(w, w2);
  EXPECT_NE(w, bias);
  EXPECT_EQ(w, b.find("p_weight")->op_as<ConstantOp>()->seed);

  FrontendOptions reseeded;
  reseeded.seed = 7;
  Graph c = trace("nn.Linear(4, 4)(nn.Linear(4, 4)(torch.randn(2, 4)))", reseeded);
  EXPECT_NE(w, c.find("p_weight")->op_as<ConstantOp>()->seed);
  // The seed comes from the path, not from the position: same path in another program, same seed.
  Graph d = trace("y = torch.randn(7, 4)\nnn.RMSNorm(4)(y)");
  EXPECT_EQ(w, d.find("p_weight")->op_as<ConstantOp>()->seed);
}

TEST_F(TorchExprTest, ModuleInAVariableIsNamedAfterIt) {
  Graph g = trace("norm = nn.RMSNorm(8, eps=1e-6)\nx = torch.randn(2, 8)\ny = norm(x)\nnorm(y)");
  const Node* w = g.find("p_norm_weight");
  ASSERT_NE(w, nullptr) << print_graph(g);
  EXPECT_EQ(w->op_as<ConstantOp>()->path, "norm.weight");
  // Calling the module twice shares its parameters.
  EXPECT_EQ(g.find("y")->inputs, (std::vector<std::string>{"x", "p_norm_weight"}));
  EXPECT_EQ(g.find("rms_norm")->inputs, (std::vector<std::string>{"y", "p_norm_weight"}));
  EXPECT_EQ(torch_op(g, "y").attrs.get_float("eps", 0), 1e-6);
}

TEST_F(TorchExprTest, LayerNormModuleAndEpsDefault) {
  Graph g = trace("nn.LayerNorm(32)(torch.randn(4, 32))");
  EXPECT_EQ(g.find("layer_norm")->inputs, (std::vector<std::string>{"x", "p_weight", "p_bias"}));
  const TorchOp& op = torch_op(g, "layer_norm");
  EXPECT_EQ(op.attrs.get_float("eps", 0), 1e-5);
  EXPECT_EQ(*op.attrs.find("normalized_shape"), AttrValue(Ints{32}));

  Graph plain = trace("nn.LayerNorm((4, 32), elementwise_affine=False)(torch.randn(2, 4, 32))");
  EXPECT_EQ(plain.find("layer_norm")->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(*torch_op(plain, "layer_norm").attrs.find("normalized_shape"), AttrValue(Ints{4, 32}));
}

TEST_F(TorchExprTest, ActivationModules) {
  Graph g = trace(
      "x = torch.randn(2, 8)\n"
      "a = nn.ReLU()(x); b = nn.SiLU()(x); c = nn.GELU(approximate='tanh')(x); d = nn.GELU()(x)\n"
      "e = torch.nn.Softmax(dim=-1)(x)\na, b, c, d, e");
  EXPECT_EQ(torch_op(g, "a").target, "relu");
  EXPECT_EQ(torch_op(g, "b").target, "silu");
  EXPECT_EQ(torch_op(g, "c").target, "gelu");
  EXPECT_EQ(torch_op(g, "c").attrs.get_string("approximate", ""), "tanh");
  EXPECT_EQ(torch_op(g, "d").attrs.get_string("approximate", ""), "none");
  EXPECT_EQ(torch_op(g, "e").target, "softmax");
  EXPECT_EQ(torch_op(g, "e").attrs.get_int("dim", 0), -1);
  for (const char* id : {"a", "b", "c", "d", "e"}) EXPECT_EQ(g.find(id)->type, tt({2, 8})) << id;
}

TEST_F(TorchExprTest, ModuleClassWithSubmodules) {
  Graph g = trace(R"(import torch
import torch.nn as nn

class MLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.act = nn.SiLU()
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        h = self.up(x)
        return self.down(self.act(h))

x = torch.randn(2, 16)
MLP(16, 64)(x)
)");
  EXPECT_EQ(node_ids(g), (std::vector<std::string>{"x", "p_up_weight", "p_up_bias", "h", "silu", "p_down_weight",
                                                   "linear"}));
  EXPECT_EQ(g.find("p_up_weight")->op_as<ConstantOp>()->path, "up.weight");
  EXPECT_EQ(g.find("p_up_weight")->type, tt({64, 16}));
  EXPECT_EQ(g.find("p_down_weight")->op_as<ConstantOp>()->path, "down.weight");
  EXPECT_EQ(g.find("linear")->inputs, (std::vector<std::string>{"silu", "p_down_weight"}));
  EXPECT_EQ(g.find("linear")->type, tt({2, 16}));
  EXPECT_EQ(g.outputs(), std::vector<std::string>{"linear"});
}

TEST_F(TorchExprTest, NestedModuleClassesGiveDottedPaths) {
  Graph g = trace(
      "class Block(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.norm = nn.RMSNorm(8)\n"
      "    def forward(self, x):\n"
      "        return x + self.norm(x)\n"
      "class Net(nn.Module):\n"
      "    def __init__(self):\n"
      "        super(Net, self).__init__()\n"
      "        self.block = Block()\n"
      "        self.scale = 0.5\n"
      "    def forward(self, x):\n"
      "        return self.block(x) * self.scale\n"
      "model = Net()\n"
      "model(torch.randn(2, 8))");
  const Node* w = g.find("p_model_block_norm_weight");
  ASSERT_NE(w, nullptr) << print_graph(g);
  EXPECT_EQ(w->op_as<ConstantOp>()->path, "model.block.norm.weight");
  const TorchOp& mul = torch_op(g, "mul");
  EXPECT_EQ(mul.scalar_args, (std::vector<std::pair<int64_t, double>>{{1, 0.5}}));
}

TEST_F(TorchExprTest, PlainFunctionsAndDefaults) {
  Graph g = trace(
      "def rms(x, eps=1e-6):\n"
      "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)\n"
      "rms(torch.randn(2, 8))");
  EXPECT_EQ(torch_op(g, "pow").scalar_args, (std::vector<std::pair<int64_t, double>>{{1, 2.0}}));
  EXPECT_EQ(torch_op(g, "add").scalar_args, (std::vector<std::pair<int64_t, double>>{{1, 1e-6}}));
  EXPECT_EQ(g.find("mean")->type, tt({2, 1}));
  EXPECT_EQ(g.find("mul")->type, tt({2, 8}));
}

// ---- elementwise, scalars, broadcasting ------------------------------------------------------

TEST_F(TorchExprTest, ScalarsBecomeScalarArgsAtTheirPosition) {
  Graph g = trace("x = torch.randn(4)\na = x + 1e-6\nb = 1 - x\nc = x ** 2\nd = 2 / x\ne = -x\na, b, c, d, e");
  using Scalars = std::vector<std::pair<int64_t, double>>;
  EXPECT_EQ(torch_op(g, "a").target, "add");
  EXPECT_EQ(torch_op(g, "a").scalar_args, (Scalars{{1, 1e-6}}));
  EXPECT_EQ(torch_op(g, "b").target, "sub");
  EXPECT_EQ(torch_op(g, "b").scalar_args, (Scalars{{0, 1.0}}));
  EXPECT_EQ(torch_op(g, "c").target, "pow");
  EXPECT_EQ(torch_op(g, "c").scalar_args, (Scalars{{1, 2.0}}));
  EXPECT_EQ(torch_op(g, "d").target, "div");
  EXPECT_EQ(torch_op(g, "d").scalar_args, (Scalars{{0, 2.0}}));
  EXPECT_EQ(torch_op(g, "e").target, "neg");
  for (const char* id : {"a", "b", "c", "d", "e"}) EXPECT_EQ(g.find(id)->inputs, std::vector<std::string>{"x"}) << id;
}

TEST_F(TorchExprTest, ScalarArithmeticIsFoldedAtTraceTime) {
  Graph g = trace("d = 64\nscale = d ** -0.5\nn = (d * 3) // 2 + d % 5\nx = torch.randn(2, n)\nx * scale");
  EXPECT_EQ(g.find("x")->type, tt({2, 100}));
  EXPECT_EQ(torch_op(g, "mul").scalar_args, (std::vector<std::pair<int64_t, double>>{{1, 0.125}}));
}

TEST_F(TorchExprTest, BroadcastingAndPromotion) {
  Graph g = trace(
      "a = torch.randn(4, 1, 8); b = torch.randn(3, 1, dtype=torch.float16); c = torch.randn(8, dtype=torch.float16)\n"
      "x = a + b; y = b * c; z = torch.zeros(3, dtype=torch.int32) / 2; w = torch.ones(3, dtype=torch.int64) + 1.5\n"
      "x, y, z, w");
  EXPECT_EQ(g.find("x")->type, tt({4, 3, 8}, DType::F32));
  EXPECT_EQ(g.find("y")->type, tt({3, 8}, DType::F16));
  EXPECT_EQ(g.find("z")->type, tt({3}, DType::F32));  // true division of integers
  EXPECT_EQ(g.find("w")->type, tt({3}, DType::F32));
}

TEST_F(TorchExprTest, ComparisonsProduceBool) {
  Graph g = trace("x = torch.randn(4, 4)\nm = x > 0\nm");
  EXPECT_EQ(torch_op(g, "m").target, "gt");
  EXPECT_EQ(g.find("m")->type, tt({4, 4}, DType::Bool));
}

TEST_F(TorchExprTest, UnaryMathFunctionsAndMethods) {
  Graph g = trace(
      "x = torch.randn(3, 5)\n"
      "torch.relu(x), torch.exp(x), torch.tanh(x), torch.sigmoid(x), torch.rsqrt(x), torch.sqrt(x), torch.abs(x), "
      "x.relu(), F.relu(x), F.silu(x), F.gelu(x, approximate='tanh'), x.abs()");
  std::vector<std::string> targets;
  for (const std::string& id : g.outputs()) {
    targets.push_back(torch_op(g, id).target);
    EXPECT_EQ(g.find(id)->type, tt({3, 5})) << id;
  }
  EXPECT_EQ(targets, (std::vector<std::string>{"relu", "exp", "tanh", "sigmoid", "rsqrt", "sqrt", "abs", "relu",
                                               "relu", "silu", "gelu", "abs"}));
}

// ---- matmul ----------------------------------------------------------------------------------

TEST_F(TorchExprTest, MatmulShapesFollowPyTorch) {
  struct Case {
    const char* a;
    const char* b;
    Shape out;
  };
  for (const Case& c : {Case{"2, 3, 4", "4, 5", {2, 3, 5}}, Case{"4", "4, 5", {5}}, Case{"3, 4", "4", {3}},
                        Case{"4", "4", {}}, Case{"2, 1, 3, 4", "5, 4, 6", {2, 5, 3, 6}}}) {
    Graph g = trace(std::string("torch.randn(") + c.a + ") @ torch.randn(" + c.b + ")");
    EXPECT_EQ(g.find("matmul")->type, tt(c.out)) << c.a << " @ " << c.b;
  }
  Graph g = trace("a = torch.randn(2, 3, 4); b = torch.randn(2, 4, 5)\ntorch.bmm(a, b), torch.mm(a[0] if False else torch.randn(3, 4), torch.randn(4, 2)), a.matmul(b)");
  EXPECT_EQ(g.find("matmul")->type, tt({2, 3, 5}));
  EXPECT_EQ(g.find("matmul_1")->type, tt({3, 2}));
  EXPECT_EQ(torch_op(g, "matmul_2").target, "matmul");
}

// ---- reductions, softmax, layout -------------------------------------------------------------

TEST_F(TorchExprTest, Reductions) {
  Graph g = trace(
      "x = torch.randn(2, 3, 4)\n"
      "a = x.mean(-1, keepdim=True); b = x.sum(); c = x.amax(dim=(0, 2)); d = torch.mean(x, 1); e = x.sum(dim=[-1, 0])\n"
      "a, b, c, d, e");
  EXPECT_EQ(g.find("a")->type, tt({2, 3, 1}));
  EXPECT_EQ(*torch_op(g, "a").attrs.find("dim"), AttrValue(Ints{-1}));
  EXPECT_TRUE(torch_op(g, "a").attrs.get_bool("keepdim", false));
  EXPECT_EQ(g.find("b")->type, tt({}));
  EXPECT_EQ(*torch_op(g, "b").attrs.find("dim"), AttrValue(Ints{0, 1, 2}));
  EXPECT_FALSE(torch_op(g, "b").attrs.get_bool("keepdim", true));
  EXPECT_EQ(torch_op(g, "c").target, "amax");
  EXPECT_EQ(g.find("c")->type, tt({3}));
  EXPECT_EQ(g.find("d")->type, tt({2, 4}));
  EXPECT_EQ(g.find("e")->type, tt({3}));
}

TEST_F(TorchExprTest, SoftmaxSpellings) {
  Graph g = trace("x = torch.randn(2, 8)\nF.softmax(x, dim=-1), x.softmax(1), torch.softmax(x, 0)");
  std::vector<int64_t> dims;
  for (const std::string& id : g.outputs()) {
    EXPECT_EQ(torch_op(g, id).target, "softmax");
    dims.push_back(torch_op(g, id).attrs.get_int("dim", 99));
  }
  EXPECT_EQ(dims, (Ints{-1, 1, 0}));
}

TEST_F(TorchExprTest, LayoutOps) {
  Graph g = trace(
      "x = torch.randn(2, 3, 4)\n"
      "t = x.transpose(0, -1); r = x.reshape(6, -1); v = x.view(-1); u = x.unsqueeze(1); s = x.reshape((4, 6))\n"
      "m = torch.randn(5, 7).T\n"
      "q = x.reshape(x.shape[0], -1); p = torch.unsqueeze(x, -1); o = torch.transpose(x, 1, 2)\n"
      "t, r, v, u, s, m, q, p, o");
  EXPECT_EQ(g.find("t")->type, tt({4, 3, 2}));
  EXPECT_EQ(torch_op(g, "t").attrs.get_int("dim0", 9), 0);
  EXPECT_EQ(torch_op(g, "t").attrs.get_int("dim1", 9), -1);
  EXPECT_EQ(g.find("r")->type, tt({6, 4}));
  EXPECT_EQ(torch_op(g, "r").target, "reshape");
  EXPECT_EQ(*torch_op(g, "r").attrs.find("shape"), AttrValue(Ints{6, 4}));
  EXPECT_EQ(torch_op(g, "v").target, "reshape");
  EXPECT_EQ(g.find("v")->type, tt({24}));
  EXPECT_EQ(g.find("u")->type, tt({2, 1, 3, 4}));
  EXPECT_EQ(torch_op(g, "u").attrs.get_int("dim", 9), 1);
  EXPECT_EQ(g.find("s")->type, tt({4, 6}));
  EXPECT_EQ(g.find("m")->type, tt({7, 5}));
  EXPECT_EQ(g.find("q")->type, tt({2, 12}));
  EXPECT_EQ(g.find("p")->type, tt({2, 3, 4, 1}));
  EXPECT_EQ(g.find("o")->type, tt({2, 4, 3}));
}

// ---- functional norms and linear -------------------------------------------------------------

TEST_F(TorchExprTest, FunctionalNormsAndLinear) {
  Graph g = trace(
      "x = torch.randn(2, 8, dtype=torch.float16); w = torch.randn(8, dtype=torch.float16)\n"
      "b = torch.randn(8, dtype=torch.float16); lw = torch.randn(3, 8, dtype=torch.float16)\n"
      "r = F.rms_norm(x, (8,), w); l = F.layer_norm(x, [8], w, b, eps=1e-3); y = F.linear(x, lw)\nr, l, y");
  EXPECT_EQ(g.find("r")->inputs, (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(torch_op(g, "r").attrs.get_float("eps", 0), 1.1920928955078125e-07);  // float32's, as PyTorch
  EXPECT_EQ(g.find("l")->inputs, (std::vector<std::string>{"x", "w", "b"}));
  EXPECT_EQ(torch_op(g, "l").attrs.get_float("eps", 0), 1e-3);
  EXPECT_EQ(g.find("y")->type, tt({2, 3}, DType::F16));
  EXPECT_EQ(g.find("y")->inputs, (std::vector<std::string>{"x", "lw"}));
}

// ---- language --------------------------------------------------------------------------------

TEST_F(TorchExprTest, ImportsAreAccepted) {
  Graph g = trace(
      "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nfrom torch import nn as tnn\n"
      "from torch.nn import RMSNorm, functional as fn\nx = torch.randn(2, 4)\n"
      "fn.relu(tnn.ReLU()(RMSNorm(4)(x)))");
  EXPECT_EQ(torch_op(g, "relu_1").target, "relu");
}

TEST_F(TorchExprTest, IndentedProgramCommentsAndContinuations) {
  Graph g = trace(
      "\n    # a whole program indented, as when pasted from a script\n"
      "    x = torch.randn(2,\n"
      "                    4)  # implicit line joining\n"
      "    y = x + \\\n"
      "        1.0\n"
      "    y\n");
  EXPECT_EQ(g.find("y")->type, tt({2, 4}));
}

TEST_F(TorchExprTest, OutputsFromNestedTuples) {
  Graph g = trace("x = torch.randn(2)\n(x.exp(), [x.relu(), x])");
  EXPECT_EQ(g.outputs(), (std::vector<std::string>{"exp", "relu", "x"}));
}

// ---- errors ----------------------------------------------------------------------------------

TEST_F(TorchExprTest, ErrorUnclosedParenPointsAtTheOpeningParen) {
  Diagnostic d = fail("nn.RMSNorm(2048)(torch.randn(1,32,2048)");
  expect_error(d, "'(' was never closed", 1, 17, 1);
  std::string rendered = d.render();
  EXPECT_NE(rendered.find("<-c>:1:17: error: '(' was never closed\n"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("  nn.RMSNorm(2048)(torch.randn(1,32,2048)\n                  ^\n"), std::string::npos)
      << rendered;
}

TEST_F(TorchExprTest, ErrorUnmatchedAndMismatchedBrackets) {
  expect_error(fail("torch.randn(2))"), "unmatched ')'", 1, 15, 1);
  expect_error(fail("x = torch.randn(2, 3]"), "closing ']' does not match opening '('", 1, 21, 1);
}

TEST_F(TorchExprTest, ErrorBadToken) {
  expect_error(fail("x = torch.randn(2)\ny = x $ 3"), "invalid character '$'", 2, 7, 1);
  expect_error(fail("x = torch.randn(2) \xc3\x97 3"), "invalid character '\xc3\x97' (U+00D7)", 1, 20, 1);
  expect_error(fail("x = 1.5e"), "invalid decimal literal", 1, 5);
  expect_error(fail("s = 'abc"), "unterminated string literal", 1, 5);
}

TEST_F(TorchExprTest, ErrorSyntax) {
  expect_error(fail("x = = torch.randn(2)"), "expected an expression, got '='", 1, 5, 1);
  expect_error(fail("x = torch.randn(2) torch.randn(3)"), "missing operator or comma", 1, 20, 5);
  expect_error(fail("x = torch.randn(2 3)"), "expected ',' or ')'", 1, 19, 1);
  expect_error(fail("x = torch.randn(2)\n  y = x"), "unexpected indent", 2, 3);
  expect_error(fail("class M(nn.Module):\ndef forward(self, x): return x"), "expected an indented block", 2, 1);
  expect_error(fail("    x = torch.randn(2)\n  x"), "unindent does not match any outer indentation level", 2, 1, 2);
  expect_error(fail("def f(x):\n        y = x\n    return y\nf(torch.randn(2))"), "unindent does not match", 3, 1, 4);
}

TEST_F(TorchExprTest, ErrorUnknownName) {
  Diagnostic d = fail("x = torch.randn(2)\ntorch.relu(y)");
  expect_error(d, "name 'y' is not defined", 2, 12, 1);
  expect_error(fail("hidden = torch.randn(2)\nhiden.exp()"), "did you mean 'hidden'?", 2, 1, 5);
}

TEST_F(TorchExprTest, ErrorUnknownModuleSuggestsClosest) {
  Diagnostic d = fail("nn.RMSNrom(2048)(torch.randn(1,32,2048))");
  expect_error(d, "did you mean 'RMSNorm'?", 1, 4, 7);
  EXPECT_NE(d.message.find("RMSNrom"), std::string::npos);
  std::string rendered = d.render();
  EXPECT_NE(rendered.find("  nn.RMSNrom(2048)(torch.randn(1,32,2048))\n     ^~~~~~~\n"), std::string::npos)
      << rendered;
  // Nothing close: the supported names are listed instead.
  Diagnostic far = fail("nn.Conv2d(3, 8, 3)");
  expect_error(far, "has no module 'Conv2d'", 1, 4, 6);
  ASSERT_FALSE(far.notes.empty());
  EXPECT_NE(far.notes[0].find("RMSNorm"), std::string::npos);
}

TEST_F(TorchExprTest, ErrorUnknownFunctionOrMethod) {
  expect_error(fail("torch.matmull(torch.randn(2, 2), torch.randn(2, 2))"), "did you mean 'matmul'?", 1, 7, 7);
  expect_error(fail("F.rms_nrom(torch.randn(2), (2,))"), "did you mean 'rms_norm'?", 1, 3, 8);
  Diagnostic d = fail("x = torch.randn(2, 3)\nx.meen(-1)");
  expect_error(d, "tensor attribute 'meen' is not supported; did you mean 'mean'?", 2, 3, 4);
}

TEST_F(TorchExprTest, ErrorUnsupportedConstructs) {
  // `for` loops, comprehensions and `if` on trace-time values are traced (torch_idioms_test.cpp).
  expect_error(fail("x = torch.randn(2)\nfor i in range(3):\n    x = x + i\nelse:\n    pass\nx"),
               "'for ... else' is not supported", 4, 1, 4);
  expect_error(fail("while True:\n    pass"), "'while' loops are not supported", 1, 1, 5);
  expect_error(fail("f = lambda x: x * 2"), "lambda expressions are not supported", 1, 5, 6);
  expect_error(fail("import os\ntorch.randn(2)"), "import of 'os' is not supported", 1, 8, 2);
  expect_error(fail("x = torch.randn(2)\nx.foo"), "tensor attribute 'foo' is not supported", 2, 3, 3);
  // Indexing with a tensor (boolean masks, gathers) stays unsupported; ints, slices, ... and None work.
  expect_error(fail("x = torch.randn(4, 4)\nx[1:, x]"), "tensors can only be indexed with ints, slices", 2, 7, 1);
  expect_error(fail("x = torch.randn(2)\nif x: x"), "the truth value of a traced tensor is unknown", 2, 4, 1);
  expect_error(fail("[x for x in (1, 2) for y in (3,)]"), "comprehensions with more than one 'for'", 1, 20, 3);
  expect_error(fail("{'a': 1}"), "dict and set literals are not supported", 1, 1, 1);
}

TEST_F(TorchExprTest, ErrorShapeMismatchNamesBothShapes) {
  Diagnostic mm = fail("x = torch.randn(4, 8)\nw = torch.randn(16, 4)\ny = x @ w\ny");
  expect_error(mm, "(4, 8)", 3, 5, 5);
  EXPECT_NE(mm.message.find("(16, 4)"), std::string::npos) << mm.message;
  EXPECT_NE(mm.message.find("matmul"), std::string::npos) << mm.message;

  Diagnostic bc = fail("torch.randn(4, 8) + torch.randn(3)");
  expect_error(bc, "shapes (4, 8) and (3,) cannot be broadcast", 1, 1, 34);

  Diagnostic lin = fail("nn.Linear(32, 8)(torch.randn(2, 16))");
  expect_error(lin, "nn.Linear: input of shape (2, 16) does not match weight of shape (8, 32)", 1, 1);

  Diagnostic norm = fail("nn.RMSNorm(2048)(torch.randn(1, 32, 1024))");
  expect_error(norm, "does not end with normalized_shape (2048,)", 1, 1);

  expect_error(fail("torch.randn(2, 3).reshape(4, -1)"), "shape (4, -1) is invalid for input of size 6", 1, 1);
  expect_error(fail("torch.randn(2, 3).transpose(0, 2)"), "dimension out of range", 1, 1);
}

TEST_F(TorchExprTest, ErrorWrongNumberOfArguments) {
  Diagnostic missing = fail("nn.Linear(4)");
  expect_error(missing, "nn.Linear() missing required argument 'out_features'", 1, 1, 12);
  ASSERT_FALSE(missing.notes.empty());
  EXPECT_NE(missing.notes[0].find("in_features, out_features, bias=True"), std::string::npos);
  expect_error(fail("x = torch.randn(2)\ntorch.relu(x, x)"), "takes 1 positional argument but 2 were given", 2, 15, 1);
  expect_error(fail(
                   "class M(nn.Module):\n"
                   "    def forward(self, x):\n"
                   "        return x\n"
                   "M()(torch.randn(2), 3)"),
               "M.forward() takes 1 positional argument(s) but more were given", 4, 21, 1);
}

TEST_F(TorchExprTest, ErrorBadKeyword) {
  Diagnostic d = fail("x = torch.randn(2, 3)\nx.mean(-1, keepdims=True)");
  expect_error(d, "unexpected keyword argument 'keepdims'; did you mean 'keepdim'?", 2, 12, 8);
  expect_error(fail("torch.randn(2, dtype=torch.flaot16)"), "did you mean 'float16'?", 1, 28, 7);
  expect_error(fail("nn.GELU(approximate='fast')"), "approximate must be 'none' or 'tanh'", 1, 9);
}

TEST_F(TorchExprTest, ErrorNoOutputExpression) {
  Diagnostic d = fail("x = torch.randn(3)\ny = x.exp()");
  expect_error(d, "program has no output expression", 2, 1, 11);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("add a final line `y`"), std::string::npos);
  EXPECT_NE(fail("").message.find("program has no output expression"), std::string::npos);
  EXPECT_NE(fail("# only a comment\n").message.find("program has no output expression"), std::string::npos);
  expect_error(fail("1 + 2"), "output must be a tensor or a tuple of tensors, got int", 1, 1, 5);
}

TEST_F(TorchExprTest, ErrorsInsideMethodsNameTheCall) {
  Diagnostic d = fail(
      "class M(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.proj = nn.Linear(8, 4)\n"
      "    def forward(self, x):\n"
      "        return self.proj(x) @ x\n"
      "M()(torch.randn(2, 8))");
  expect_error(d, "cannot be multiplied", 6, 16, 16);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("M.forward(), called at <-c>:7:1"), std::string::npos) << d.notes[0];
}

TEST_F(TorchExprTest, ErrorClassMustDeriveFromModuleAndRecursionIsBounded) {
  expect_error(fail("class M:\n    pass\nM()"), "must derive from nn.Module", 1, 7, 1);
  Diagnostic d = fail(
      "def f(x):\n"
      "    return f(x)\n"
      "f(torch.randn(2))");
  EXPECT_NE(d.message.find("maximum call depth"), std::string::npos) << d.message;
}

// Calls stack statements and expressions on top of each other, each within the parser's limits:
// the total is bounded too, so deep recursion is a located error, never a stack overflow.
TEST_F(TorchExprTest, NestingAcrossCallsIsBounded) {
  auto deep = [](const std::string& nest, int n, const std::string& core) {
    std::string prefix;
    for (int i = 0; i < n; ++i) prefix += nest;
    return prefix + core;
  };
  // Sixty negations around each recursive call: far past the budget long before 64 calls.
  Diagnostic d = fail("def f(x):\n    return " + deep("-", 60, "f(x)") + "\nf(torch.randn(2))");
  EXPECT_NE(d.message.find("nested too deeply across calls (the limit is 1000 levels)"), std::string::npos)
      << d.message;
  EXPECT_EQ(d.loc.line, 2);
  // Nested `if` blocks stack statements the same way.
  std::string ifs = "def f(x):\n";
  for (int i = 1; i <= 40; ++i) ifs += std::string(static_cast<size_t>(i), ' ') + "if True:\n";
  ifs += std::string(41, ' ') + "return f(x)\nf(torch.randn(2))";
  d = fail(ifs);
  EXPECT_NE(d.message.find("nested too deeply across calls"), std::string::npos) << d.message;
  // Under the budget the same shape traces: a few calls deep, a hundred levels each.
  Graph g = trace("def f(x, n):\n    if n == 0:\n        return x\n    return " + deep("-", 100, "f(x, n - 1)") +
                  "\nf(torch.randn(2), 5)");
  EXPECT_GT(g.size(), 500u);
}

TEST_F(TorchExprTest, ErrorReturnOutsideFunctionAndDivisionByZero) {
  expect_error(fail("return torch.randn(2)"), "'return' outside function", 1, 1);
  expect_error(fail("n = 4 // 0\ntorch.randn(n)"), "division or modulo by zero", 1, 7, 2);
}

TEST_F(TorchExprTest, ErrorsUseTheInputFileName) {
  Expected<Graph> g = frontend_->import(FrontendInput{"torch.randn(2) +", "model.py"}, FrontendOptions{});
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().loc.file, "model.py");
  EXPECT_EQ(g.error().render().rfind("model.py:1:", 0), 0u) << g.error().render();
}

// ---- robustness ------------------------------------------------------------------------------

// Every prefix of valid programs, and every single-character corruption of them, must either trace
// or fail with a located error — never crash, hang or return an unlocated error.
TEST_F(TorchExprTest, MalformedProgramsNeverCrash) {
  const std::vector<std::string> programs = {
      "nn.RMSNorm(2048)(torch.randn(1,32,2048))",
      "x = torch.randn(16, 64); bias = torch.randn(64); w = torch.randn(64, 16)\n"
      "torch.relu(torch.matmul(x + bias, w))",
      "import torch.nn.functional as F\nx = torch.randn(2, 3, 4, dtype=torch.float16)\n"
      "y = F.softmax(x.transpose(0, -1).reshape(4, -1) * 2 ** -0.5, dim=-1)\ny.mean((0,), keepdim=True), x[1:, ...]",
      "class MLP(nn.Module):\n"
      "    def __init__(self, d):\n"
      "        super().__init__()\n"
      "        self.up = nn.Linear(d, 2 * d)\n"
      "    def forward(self, x):\n"
      "        return F.gelu(self.up(x), approximate='tanh')\n"
      "MLP(8)(torch.randn(2, 8))",
      "x = torch.randn(4, 6)\ny = x[1:, None, ..., ::2]\n"
      "torch.cat(x.chunk(2, -1), 0), y.permute(2, 0, 1)[0], torch.max(x, -1)[1], x.to(torch.int64)",
  };
  const std::string corruptions = "()[]{},:;.=+-*/@'\"\\#\n $1xe";
  size_t traced = 0, failed = 0;
  auto check = [&](const std::string& text) {
    Expected<Graph> g = import(text);
    if (g) {
      ++traced;
      return;
    }
    ++failed;
    EXPECT_FALSE(g.error().message.empty()) << text;
    EXPECT_TRUE(g.error().loc.valid()) << "unlocated error for:\n" << text << "\n" << g.error().render();
  };
  for (const std::string& p : programs) {
    for (size_t n = 0; n <= p.size(); ++n) check(p.substr(0, n));
    for (size_t i = 0; i < p.size(); ++i) {
      for (char c : corruptions) {
        std::string mutated = p;
        mutated[i] = c;
        check(mutated);
      }
    }
  }
  EXPECT_GT(traced, 10u);
  EXPECT_GT(failed, 100u);
}

TEST_F(TorchExprTest, PathologicalInputsAreRejectedCleanly) {
  for (const std::string& text : {std::string(100000, '('), std::string(5000, '-') + "1", std::string("x") + std::string(3000, '.'),
                                  std::string("torch.randn(") + std::string(3000, '[') , std::string("\xff\xfe"),
                                  std::string("torch.randn(99999999, 99999999, 99999999)"), std::string("(1,) * 10**12"),
                                  std::string("2 ** 10 ** 10"), std::string("\0", 1), std::string("() * 10**12"),
                                  std::string("(1, 2, 3)[::9223372036854775807]")}) {
    Expected<Graph> g = import(text);
    ASSERT_FALSE(g) << text.substr(0, 50);
    EXPECT_TRUE(g.error().loc.valid()) << g.error().render();
  }
}

// ---- issue 3 coverage ------------------------------------------------------------------------

const std::string kRopeModule =
    "import torch\nimport torch.nn as nn\n"
    "def rotate_half(x):\n"
    "    x1 = x[..., : x.shape[-1] // 2]\n"
    "    x2 = x[..., x.shape[-1] // 2 :]\n"
    "    return torch.cat((-x2, x1), dim=-1)\n"
    "class Block(nn.Module):\n"
    "    def __init__(self, vocab, d):\n"
    "        super().__init__()\n"
    "        self.emb = nn.Embedding(vocab, d)\n"
    "        self.norm = nn.RMSNorm(d)\n"
    "        self.proj = nn.Linear(d, d, bias=False)\n"
    "    def forward(self, ids, cos, sin):\n"
    "        h = self.norm(self.emb(ids))\n"
    "        q = self.proj(h)\n"
    "        return q * cos + rotate_half(q) * sin\n"
    "Block(100, 64)(torch.randint(100, (2, 8)), torch.randn(8, 64), torch.randn(8, 64))";

TEST_F(TorchExprTest, IssueProgramsTrace) {
  const std::vector<std::string> programs = {
      "nn.RMSNorm(2048)(torch.randn(1,32,2048))",
      "torch.nn.Softmax(dim=-1)(torch.randn(1,28,2048,2048))",
      "x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); torch.relu(torch.matmul(x + bias, w))",
      "class LN(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        m = x.mean(-1, keepdim=True)\n"
      "        v = ((x - m) ** 2).mean(-1, keepdim=True)\n"
      "        return (x - m) * torch.rsqrt(v + 1e-6)\n"
      "LN()(torch.randn(64, 2048))",
      "import torch; import torch.nn.functional as F; x=torch.randn((1,32,1024)); w=torch.randn((1024,)); "
      "F.rms_norm(x, (1024,), w, eps=1e-6)",
      "import torch.nn.functional as F; q=torch.randn(1,16,128,128); k=torch.randn(1,8,128,128); "
      "v=torch.randn(1,8,128,128); F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)",
      "import torch.nn.functional as F; x=torch.randn(1,128,1024); wg=torch.randn(1024,3072); "
      "wu=torch.randn(1024,3072); F.silu(torch.matmul(x,wg))*torch.matmul(x,wu)",
      kRopeModule,
  };
  for (const std::string& p : programs) {
    Graph g = trace(p);
    EXPECT_FALSE(g.outputs().empty()) << p;
  }
}

TEST_F(TorchExprTest, RopeModuleUsesSliceCatNegAndEmbedding) {
  Graph g = trace(kRopeModule);
  std::vector<std::string> targets;
  for (const Node* n : g.nodes())
    if (const TorchOp* op = n->op_as<TorchOp>()) targets.push_back(op->target);
  for (const char* t : {"embedding", "rms_norm", "linear", "slice", "neg", "cat", "mul", "add"})
    EXPECT_NE(std::find(targets.begin(), targets.end(), t), targets.end()) << t << "\n" << print_graph(g);
  const Node* ids = g.find("x");  // the first argument of Block(...)(...)
  ASSERT_NE(ids, nullptr) << print_graph(g);
  EXPECT_EQ(ids->type, tt({2, 8}, DType::I64));
  EXPECT_EQ(ids->op_as<InputOp>()->init, "randint");
  EXPECT_EQ(ids->op_as<InputOp>()->fill, 100.0);
  EXPECT_EQ(g.find(g.outputs()[0])->type, tt({2, 8, 64}));
  std::set<std::string> paths;
  for (const Node* n : g.nodes())
    if (const auto* c = n->op_as<ConstantOp>()) paths.insert(c->path);
  EXPECT_EQ(paths, (std::set<std::string>{"emb.weight", "norm.weight", "proj.weight"}));
}

TEST_F(TorchExprTest, ElementwiseCoverage) {
  Graph g = trace(
      "x = torch.randn(3, 4); y = torch.randn(4)\n"
      "a = torch.log(x); b = x.reciprocal(); c = torch.maximum(x, y); d = x.minimum(y)\n"
      "e = torch.where(x > 0, x, 0.0); f = torch.where(x < y, 1, y); g2 = torch.max(x, y)\n"
      "h = torch.ge(x, 1); i = x.ne(y)\n"
      "a, b, c, d, e, f, g2, h, i");
  EXPECT_EQ(torch_op(g, "a").target, "log");
  EXPECT_EQ(torch_op(g, "b").target, "reciprocal");
  EXPECT_EQ(torch_op(g, "c").target, "maximum");
  EXPECT_EQ(g.find("c")->type, tt({3, 4}));
  EXPECT_EQ(torch_op(g, "d").target, "minimum");
  EXPECT_EQ(torch_op(g, "e").target, "where");
  EXPECT_EQ(g.find("e")->inputs.size(), 2u);
  EXPECT_EQ(torch_op(g, "e").scalar_args, (std::vector<std::pair<int64_t, double>>{{2, 0.0}}));
  EXPECT_EQ(torch_op(g, "f").scalar_args, (std::vector<std::pair<int64_t, double>>{{1, 1.0}}));
  EXPECT_EQ(g.find("f")->type, tt({3, 4}));
  EXPECT_EQ(torch_op(g, "g2").target, "maximum");
  EXPECT_EQ(g.find("h")->type, tt({3, 4}, DType::Bool));
  EXPECT_EQ(torch_op(g, "i").target, "ne");
}

TEST_F(TorchExprTest, ReductionCoverage) {
  Graph g = trace(
      "x = torch.randn(3, 5, 7)\n"
      "v, i = torch.max(x, -1, keepdim=True); m = x.min(1)[0]; a = x.amin(dim=(0, 2)); s = x.max()\n"
      "v, i, m, a, s");
  // Tuple unpacking does not name nodes: look them up through the outputs.
  ASSERT_EQ(g.outputs().size(), 5u);
  const std::string v = g.outputs()[0], i = g.outputs()[1], m = g.outputs()[2];
  EXPECT_EQ(torch_op(g, v).target, "amax");
  EXPECT_EQ(g.find(v)->type, tt({3, 5, 1}));
  EXPECT_EQ(torch_op(g, i).target, "argmax");
  EXPECT_EQ(torch_op(g, i).attrs.get_int("dim", 9), 2);
  EXPECT_EQ(g.find(i)->type, tt({3, 5, 1}, DType::I64));
  EXPECT_EQ(torch_op(g, m).target, "amin");
  EXPECT_EQ(g.find(m)->type, tt({3, 7}));
  EXPECT_EQ(g.find("a")->type, tt({5}));
  EXPECT_EQ(g.find("s")->type, tt({}));
  // The unused indices of x.min(1) are pruned.
  for (const Node* n : g.nodes())
    if (const TorchOp* op = n->op_as<TorchOp>()) {
      EXPECT_NE(op->target, "argmin");
    }
}

TEST_F(TorchExprTest, LayoutCoverage) {
  Graph g = trace(
      "x = torch.randn(2, 3, 4)\n"
      "p = x.permute(2, 0, -2); e = torch.randn(3, 1).expand(2, -1, 5); f = x.flatten(1); f0 = torch.flatten(x)\n"
      "t = torch.randn(3, 5).t(); c = x.contiguous(); q = torch.randn(1, 3, 1).squeeze(); q0 = torch.squeeze(torch.randn(1, 3), 0)\n"
      "k = torch.cat([x, x], dim=-1); st = torch.stack((x, x), 1)\n"
      "a, b = x.chunk(2, -1); s1, s2, s3 = torch.split(x, [1, 1, 1], dim=1)\n"
      "p, e, f, f0, t, c, q, q0, k, st, a, b, s1, s2, s3");
  EXPECT_EQ(torch_op(g, "p").target, "permute");
  EXPECT_EQ(*torch_op(g, "p").attrs.find("dims"), AttrValue(Ints{2, 0, 1}));
  EXPECT_EQ(g.find("p")->type, tt({4, 2, 3}));
  EXPECT_EQ(torch_op(g, "e").target, "expand");
  EXPECT_EQ(*torch_op(g, "e").attrs.find("shape"), AttrValue(Ints{2, 3, 5}));
  EXPECT_EQ(torch_op(g, "f").target, "reshape");
  EXPECT_EQ(g.find("f")->type, tt({2, 12}));
  EXPECT_EQ(g.find("f0")->type, tt({24}));
  EXPECT_EQ(torch_op(g, "t").target, "transpose");
  EXPECT_EQ(g.find("t")->type, tt({5, 3}));
  EXPECT_EQ(g.find("c"), nullptr) << "contiguous() is a no-op";
  EXPECT_EQ(g.find("q")->type, tt({3}));
  EXPECT_EQ(g.find("q0")->type, tt({3}));
  EXPECT_EQ(torch_op(g, "k").target, "cat");
  EXPECT_EQ(torch_op(g, "k").attrs.get_int("dim", 9), 2);
  EXPECT_EQ(g.find("k")->type, tt({2, 3, 8}));
  EXPECT_EQ(torch_op(g, "st").target, "cat");
  EXPECT_EQ(g.find("st")->type, tt({2, 2, 3, 4}));
  std::vector<const Node*> slices;
  for (const Node* n : g.nodes())
    if (const TorchOp* op = n->op_as<TorchOp>(); op && op->target == "slice") slices.push_back(n);
  ASSERT_EQ(slices.size(), 5u) << print_graph(g);
  EXPECT_EQ(slices[0]->type, tt({2, 3, 2}));
  const TorchOp& second = *slices[1]->op_as<TorchOp>();
  EXPECT_EQ(second.attrs.get_int("dim", 9), 2);
  EXPECT_EQ(second.attrs.get_int("start", 9), 2);
  EXPECT_EQ(second.attrs.get_int("end", 9), 4);
  EXPECT_EQ(second.attrs.get_int("step", 9), 1);
  EXPECT_EQ(slices[4]->type, tt({2, 1, 4}));
}

// split / chunk / unbind make a piece's nodes when the program first uses the piece, so node
// names count only the pieces used before (eagerly made pieces would take slice_1, slice_2, ...).
TEST_F(TorchExprTest, SplitPiecesAreMadeOnFirstUse) {
  auto slices = [](const Graph& g) {
    std::vector<std::string> out;
    for (const Node* n : g.nodes())
      if (const TorchOp* op = n->op_as<TorchOp>(); op && op->target == "slice")
        out.push_back(n->id() + ":" + std::to_string(op->attrs.get_int("start", -1)));
    return out;
  };
  using Strings = std::vector<std::string>;
  // An indexed piece is the first slice made; a piece used twice is one node.
  Graph g = trace("x = torch.randn(8, 3); t = x.chunk(4); t[2] + t[2] + x[1:2]");
  EXPECT_EQ(slices(g), (Strings{"slice:4", "slice_1:1"})) << print_graph(g);
  // Pieces made in the order the program uses them; a slice of the tuple makes only its pieces.
  g = trace("x = torch.randn(6, 3); t = torch.split(x, 1); u = t[-1]; a, b = t[1:3]; u + a + b + t[0]");
  EXPECT_EQ(slices(g), (Strings{"slice:5", "slice_1:1", "slice_2:2", "slice_3:0"})) << print_graph(g);
  // Unpacking makes every piece in order, as the eager split did.
  g = trace("x = torch.randn(3, 2); a, b, c = x.split(1); c, b, a");
  EXPECT_EQ(slices(g), (Strings{"slice:0", "slice_1:1", "slice_2:2"})) << print_graph(g);
  // unbind: a piece is a slice and a reshape dropping the dim.
  g = trace("x = torch.randn(5, 4); r = x.unbind(0); r[3] * 2");
  EXPECT_EQ(slices(g), (Strings{"slice:3"})) << print_graph(g);
  EXPECT_EQ(torch_op(g, "reshape").target, "reshape");
  EXPECT_EQ(g.find("reshape")->type, tt({4}));
  // A million pieces, two used: only their slices exist.
  g = trace("t = torch.randn(1000000, 1).split(1, 0); t[0] + t[999999]");
  EXPECT_EQ(slices(g), (Strings{"slice:0", "slice_1:999999"})) << print_graph(g);
  // The piece count is known without making pieces.
  expect_error(fail("x = torch.randn(1000000, 1)\na, b = x.split(1, 0)"),
               "too many values to unpack (expected 2, got 1000000)", 2, 1);
  expect_error(fail("x = torch.randn(4, 1)\nt = x.split(1, 0)\nt[4]"), "tuple index out of range", 3, 3);
}

TEST_F(TorchExprTest, TensorIndexing) {
  Graph g = trace(
      "x = torch.randn(4, 6, 8)\n"
      "a = x[1:, ::2, -3:]; b = x[..., 0]; c = x[None, -1]; d = x[:, 1:5:3]; e = x[...]; f = x[:, :, None, 2:-2]\n"
      "a, b, c, d, e, f");
  EXPECT_EQ(g.find("a")->type, tt({3, 3, 3}));
  EXPECT_EQ(torch_op(g, "a").attrs.get_int("start", 0), 5);
  EXPECT_EQ(g.find("b")->type, tt({4, 6}));
  EXPECT_EQ(torch_op(g, "b").target, "reshape");
  EXPECT_EQ(g.find("c")->type, tt({1, 6, 8}));
  EXPECT_EQ(g.find("d")->type, tt({4, 2, 8}));
  EXPECT_EQ(torch_op(g, "d").attrs.get_int("step", 0), 3);
  EXPECT_EQ(g.outputs()[4], "x") << "x[...] is x itself";
  EXPECT_EQ(g.find("f")->type, tt({4, 6, 1, 4}));
}

TEST_F(TorchExprTest, CastsAndEmbeddingAndAttention) {
  Graph g = trace(
      "import torch.nn.functional as F\n"
      "x = torch.randn(2, 3, dtype=torch.float16); a = x.float(); b = x.to(torch.bfloat16); c = a.to('cuda'); d = x.half()\n"
      "ids = torch.randint(0, 10, (5,)); w = torch.randn(10, 4); e = F.embedding(ids, w)\n"
      "q = torch.randn(2, 8, 5, 16); k = torch.randn(2, 2, 7, 16); v = torch.randn(2, 2, 7, 32)\n"
      "o = F.scaled_dot_product_attention(q, k, v, scale=0.5, enable_gqa=True)\n"
      "o2 = F.scaled_dot_product_attention(q, q, q, is_causal=True)\n"
      "a, b, c, d, e, o, o2");
  EXPECT_EQ(torch_op(g, "a").target, "cast");
  EXPECT_EQ(torch_op(g, "a").attrs.get_string("dtype", ""), "float32");
  EXPECT_EQ(g.find("a")->type, tt({2, 3}));
  EXPECT_EQ(g.find("b")->type, tt({2, 3}, DType::BF16));
  EXPECT_EQ(g.outputs()[2], "a") << ".to('cuda') is a no-op";
  EXPECT_EQ(g.outputs()[3], "x") << ".half() of a float16 tensor is a no-op";
  EXPECT_EQ(torch_op(g, "e").target, "embedding");
  EXPECT_EQ(g.find("e")->type, tt({5, 4}));
  EXPECT_EQ(torch_op(g, "o").target, "scaled_dot_product_attention");
  EXPECT_EQ(g.find("o")->type, tt({2, 8, 5, 32}));
  EXPECT_EQ(torch_op(g, "o").attrs.get_float("scale", 0), 0.5);
  EXPECT_TRUE(torch_op(g, "o").attrs.get_bool("enable_gqa", false));
  EXPECT_FALSE(torch_op(g, "o").attrs.get_bool("is_causal", true));
  EXPECT_EQ(torch_op(g, "o2").attrs.get_float("scale", 0), 0.25);
  EXPECT_TRUE(torch_op(g, "o2").attrs.get_bool("is_causal", false));
}

TEST_F(TorchExprTest, CoverageErrorsAreLocated) {
  expect_error(fail("x = torch.randn(4, 4)\nx[5]"), "index 5 is out of bounds for dimension 0 with size 4", 2, 3, 1);
  expect_error(fail("x = torch.randn(4, 4)\nx[1, 2, 3]"), "too many indices", 2, 1, 10);
  expect_error(fail("x = torch.randn(4, 4)\nx[::-1]"), "negative slice steps", 2, 3, 4);
  // An empty slice is an empty tensor, as in PyTorch; only an empty program output is refused.
  expect_error(fail("x = torch.randn(4, 4)\nx[3:1]"), "output 'slice' is an empty tensor of shape (0, 4)", 2, 1);
  expect_error(fail("x = torch.randn(4, 4)\nx[..., ...]"), "single ellipsis", 2, 8, 3);
  expect_error(fail("x = torch.randn(2, 3)\nx.permute(0, 0)"), "repeat a dimension", 2, 1);
  expect_error(fail("x = torch.randn(2, 3)\nx.expand(4, 3, 2)"), "cannot expand shape (2, 3)", 2, 1);
  expect_error(fail("torch.cat([torch.randn(2, 3), torch.randn(3, 3)], dim=1)"), "does not match tensor 0", 1, 1);
  expect_error(fail("torch.cat([torch.randn(2), 3])"), "must contain only tensors", 1, 11);
  expect_error(fail("torch.split(torch.randn(5), [2, 2])"), "must sum to the size of dimension 0 (5)", 1, 29);
  expect_error(fail("x = torch.randn(2, 3)\ntorch.where(x, x, x)"), "condition must be a bool tensor", 2, 1);
  expect_error(fail("F.embedding(torch.randn(3), torch.randn(10, 4))"), "indices must be an int32 or int64 tensor", 1, 1);
  expect_error(fail("q = torch.randn(1, 6, 4, 8); k = torch.randn(1, 4, 4, 8)\n"
                    "F.scaled_dot_product_attention(q, k, k, enable_gqa=True)"),
               "must be a multiple of the key/value heads", 2, 1);
  expect_error(fail("q = torch.randn(1, 6, 4, 8); k = torch.randn(1, 3, 4, 8)\n"
                    "F.scaled_dot_product_attention(q, k, k)"),
               "batch dimensions", 2, 1);
  expect_error(fail("q = torch.randn(1, 4, 8)\nF.scaled_dot_product_attention(q, q, q, dropout_p=0.1)"),
               "dropout_p must be 0", 2, 41, 13);
  expect_error(fail("torch.randint(10, 2, (3,))"), "random_ expects 'from' to be less than 'to'", 1, 15);
  expect_error(fail("torch.randn(2, 3).t().t().reshape(1, 2, 3).t()"), "<= 2 dimensions", 1, 1);
  expect_error(fail("nn.Embedding(10, 4)(torch.randn(3))"), "indices must be an int32 or int64 tensor", 1, 1);
}

// docs/torch-ops.md is the contract the evaluator and the decomposition are written from: every
// target the frontend emits must have a row there.
// Long left-deep chains are built by the parser's loops, not its recursion: each is refused with a
// located error at a fixed height instead of overflowing the tracer's stack.
TEST_F(TorchExprTest, LongChainsAreRefusedAtTheHeightLimit) {
  auto repeat = [](const std::string& piece, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += piece;
    return out;
  };
  const std::string sum = "x=torch.randn(4)\nx" + repeat("+x", 5999);
  expect_error(fail(sum), "expression is too long or nested too deeply (more than 1000 levels", 2, 1);
  expect_error(fail("x=torch.randn(4)\nx" + repeat("[0]", 5000)), "more than 1000 levels", 2, 1);
  expect_error(fail("x=torch.randn(4)\nx" + repeat(".abs()", 3000)), "more than 1000 levels", 2, 1);
  expect_error(fail("def f(): return f\nf" + repeat("()", 6000)), "more than 1000 levels", 2, 1);
  expect_error(fail("x=torch.randn(4)\nx" + repeat(" or x", 2000)), "more than 1000 levels", 2, 1);
  // Below the limit the chain traces (and the tracer's recursion stays bounded).
  Graph g = trace("x=torch.randn(4)\nx" + repeat("+x", 900));
  EXPECT_GT(g.size(), 900u);
}

TEST_F(TorchExprTest, EveryEmittedTargetIsInTheCatalog) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/docs/torch-ops.md");
  ASSERT_TRUE(in) << "docs/torch-ops.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  const std::string catalog = text.str();
  std::vector<std::string> programs = {
      kRopeModule,
      "x = torch.randn(3, 4); y = torch.randn(4)\n"
      "(x + y, x - 1, x * y, x / 2, x ** 2, -x, x.abs(), x.exp(), x.log(), x.sqrt(), x.rsqrt(),"
      " x.tanh(), x.sigmoid(), x.reciprocal(), torch.maximum(x, y), torch.minimum(x, y), torch.where(x > y, x, y),"
      " x == y, x != y, x < y, x <= y, x >= y, torch.relu(x), F.silu(x), F.gelu(x, approximate='tanh'), x.half(),"
      " x @ y, F.linear(x, torch.randn(5, 4)), x.sum(-1), x.mean(0), x.amax(1), x.amin(1), torch.max(x, 1)[1],"
      " torch.min(x, 1)[1], x.softmax(-1), F.rms_norm(x, (4,)), F.layer_norm(x, (4,)), x.reshape(4, 3),"
      " x.unsqueeze(0), x.transpose(0, 1), x.permute(1, 0), x[:, None].expand(3, 2, 4), x[1:], torch.cat((x, x)),"
      " F.scaled_dot_product_attention(x, x, x), F.embedding(torch.randint(3, (2,)), x))",
  };
  std::set<std::string> targets;
  for (const std::string& p : programs) {
    Graph g = trace("import torch.nn.functional as F\n" + p);
    for (const Node* n : g.nodes())
      if (const TorchOp* op = n->op_as<TorchOp>()) targets.insert(op->target);
  }
  EXPECT_GE(targets.size(), 45u);
  for (const std::string& t : targets)
    EXPECT_NE(catalog.find("`" + t + "`"), std::string::npos) << "target " << t << " is not in docs/torch-ops.md";
}

// The frontend's elementwise functions come from the table (tessera/ir/elementwise_fn.h): every
// entry with a torch form is a torch.* function and a Tensor method that emit the target of its
// name, and has a row in docs/torch-ops.md.
TEST_F(TorchExprTest, EveryTableFunctionWithATorchFormTraces) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/docs/torch-ops.md");
  ASSERT_TRUE(in) << "docs/torch-ops.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  const std::string catalog = text.str();
  int traced = 0;
  for (const ElementwiseFnInfo& f : kElementwiseFns) {
    const std::string name(f.name);
    std::vector<std::string> calls;
    switch (f.torch) {
      case TorchForm::None: break;
      case TorchForm::Unary: calls = {"torch." + name + "(x)", "x." + name + "()"}; break;
      case TorchForm::Arithmetic:
      case TorchForm::TensorPair:
      case TorchForm::Comparison: calls = {"torch." + name + "(x, y)", "x." + name + "(y)"}; break;
      case TorchForm::Where: calls = {"torch.where(x > y, x, y)", "x.where(x > y, y)"}; break;
    }
    for (const std::string& call : calls) {
      Graph g = trace("x = torch.randn(3, 4); y = torch.randn(4)\n" + call);
      bool emitted = false;
      for (const Node* n : g.nodes())
        if (const TorchOp* op = n->op_as<TorchOp>()) emitted = emitted || op->target == name;
      EXPECT_TRUE(emitted) << call << " emits no '" << name << "' node";
      ++traced;
    }
    if (!calls.empty()) {
      EXPECT_NE(catalog.find("`" + name + "`"), std::string::npos) << name << " is not in docs/torch-ops.md";
    }
  }
  EXPECT_GE(traced, 2 * 28);
}

}  // namespace
}  // namespace tessera

// Tests of the issue-13 idioms of the torch_expr frontend (docs/torch-ops.md, "Generated tensors"
// and "Idioms"): the types PyTorch gives (checked against PyTorch 2.15 by hand, see the values in
// the comments), the values of the two generated targets in the reference evaluator, the Python the
// tracer runs (loops, comprehensions, if, builtins, math, module containers), and a located error
// for every unsupported corner. Values against the reference at every IR level are the corpus's job
// (the Idiom* programs of tests/support/program_corpus.h).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/plugin/plugin_host.h"

namespace tessera {
namespace {

class TorchIdiomsTest : public test::TorchExprFrontendTest {
 protected:
  // The reference values of the program's only output (a program without inputs).
  std::vector<double> reference_values(const std::string& text) {
    Graph g = trace(text);
    Expected<ValueMap> values = evaluate_reference(g, ValueMap{});
    if (!values) {
      ADD_FAILURE() << values.error().render();
      return {};
    }
    return values->at(g.outputs()[0]).data;
  }

};

TensorType tt(Shape shape, DType dtype = DType::F32) { return TensorType{std::move(shape), dtype}; }

bool has_target(const Graph& g, const std::string& target) {
  for (const Node* n : g.nodes())
    if (const auto* op = n->op_as<TorchOp>(); op && op->target == target) return true;
  return false;
}

void expect_error(const Diagnostic& d, const std::string& fragment, int line, int col) {
  EXPECT_NE(d.message.find(fragment), std::string::npos) << "message: " << d.message << "\nexpected: " << fragment;
  EXPECT_EQ(d.loc.line, line) << d.render();
  EXPECT_EQ(d.loc.col, col) << d.render();
  EXPECT_FALSE(d.source_line.empty()) << d.render();
}

// ---- generated tensors -------------------------------------------------------------------------

TEST_F(TorchIdiomsTest, ArangeDtypeFollowsItsArguments) {
  // torch.arange(5).dtype == int64, arange(0, 5, 0.5) and arange(1., 4) float32.
  EXPECT_EQ(output_type("torch.arange(5)"), tt({5}, DType::I64));
  EXPECT_EQ(output_type("torch.arange(0, 5, 0.5)"), tt({10}));
  EXPECT_EQ(output_type("torch.arange(1., 4)"), tt({3}));
  EXPECT_EQ(output_type("torch.arange(0, 10, 3)"), tt({4}, DType::I64));
  EXPECT_EQ(output_type("torch.arange(start=2, end=9, step=2, dtype=torch.float16)"), tt({4}, DType::F16));
  EXPECT_EQ(output_type("torch.arange(5, 0, -2)"), tt({3}, DType::I64));
}

TEST_F(TorchIdiomsTest, ArangeAndFullValuesInTheReference) {
  EXPECT_EQ(reference_values("torch.arange(0, 10, 3)"), (std::vector<double>{0, 3, 6, 9}));
  EXPECT_EQ(reference_values("torch.arange(5, 0, -2)"), (std::vector<double>{5, 3, 1}));
  std::vector<double> halves = reference_values("torch.arange(1, 3, 0.5)");
  EXPECT_EQ(halves, (std::vector<double>{1.0, 1.5, 2.0, 2.5}));
  // zeros_like of a computed value is a constant, not an input.
  Graph g = trace("x = torch.arange(3).float()\ntorch.full_like(x, 2.5) + torch.ones_like(x)");
  EXPECT_TRUE(has_target(g, "full"));
  EXPECT_EQ(reference_values("x = torch.arange(3).float()\ntorch.full_like(x, 2.5) + torch.ones_like(x)"),
            (std::vector<double>{3.5, 3.5, 3.5}));
}

TEST_F(TorchIdiomsTest, ConstructorsInsideAFunctionAreConstants) {
  Graph g = trace("def f(x):\n    return x + torch.ones(3)\nf(torch.randn(3))");
  int inputs = 0;
  for (const Node* n : g.nodes()) inputs += n->op_as<InputOp>() != nullptr;
  EXPECT_EQ(inputs, 1) << print_graph(g);
  EXPECT_TRUE(has_target(g, "full"));
}

// ---- RoPE and masks ----------------------------------------------------------------------------

TEST_F(TorchIdiomsTest, EinsumContractionsOfATransformer) {
  EXPECT_EQ(output_type("a=torch.randn(2,3,5,8); b=torch.randn(2,3,7,8); torch.einsum('bhqd,bhkd->bhqk', a, b)"),
            tt({2, 3, 5, 7}));
  EXPECT_EQ(output_type("a=torch.randn(2,3,5,7); b=torch.randn(2,3,7,8); torch.einsum('bhqk,bhkd->bhqd', a, b)"),
            tt({2, 3, 5, 8}));
  EXPECT_EQ(output_type("a=torch.randn(4); b=torch.randn(6); torch.einsum('i,j->ij', a, b)"), tt({4, 6}));
  EXPECT_EQ(output_type("a=torch.randn(2,3,4); w=torch.randn(4,6); torch.einsum('...d,de->...e', a, w)"), tt({2, 3, 6}));
  // Implicit output: the letters used once, sorted ('ij,jk' -> 'ik'); a list of operands works too.
  EXPECT_EQ(output_type("a=torch.randn(2,3); b=torch.randn(3,5); torch.einsum('ij,jk', [a, b])"), tt({2, 5}));
  EXPECT_EQ(output_type("a=torch.randn(2,3); torch.einsum('ij->ji', a)"), tt({3, 2}));
}

TEST_F(TorchIdiomsTest, MaskOpsKeepPyTorchsTypes) {
  // tril keeps bool and int32; masked_fill keeps x's dtype (int64 stays int64 with a float value).
  EXPECT_EQ(output_type("torch.tril(torch.ones(3, 3, dtype=torch.bool))"), tt({3, 3}, DType::Bool));
  EXPECT_EQ(output_type("torch.randint(0, 5, (3, 3), dtype=torch.int32).triu(1)"), tt({3, 3}, DType::I32));
  EXPECT_EQ(output_type("torch.tril(torch.randn(2, 3, 4))"), tt({2, 3, 4}));
  EXPECT_EQ(output_type("x = torch.randint(0, 5, (2, 3)); x.masked_fill(x > 2, 2.5)"), tt({2, 3}, DType::I64));
  EXPECT_EQ(output_type("x = torch.randn(2, 3, dtype=torch.float16); x.masked_fill(x > 0, float('-inf'))"),
            tt({2, 3}, DType::F16));
  EXPECT_EQ(output_type("x = torch.randn(2, 3); (x > 0) & (x < 1) | ~(x > 2)"), tt({2, 3}, DType::Bool));
  EXPECT_EQ(output_type("x = torch.randn(5, 3, 2); x[torch.randint(0, 5, (4,))]"), tt({4, 3, 2}));
  EXPECT_EQ(output_type("x = torch.randn(5); x[torch.randint(0, 5, (2, 4))]"), tt({2, 4}));
}

TEST_F(TorchIdiomsTest, ArgmaxSpellingsAndNamedResults) {
  EXPECT_EQ(output_type("torch.argmax(torch.randn(4, 7))"), tt({}, DType::I64));
  EXPECT_EQ(output_type("torch.randn(4, 7).argmin(keepdim=True)"), tt({1, 1}, DType::I64));
  EXPECT_EQ(output_type("torch.argmax(torch.randn(4, 7), dim=-1, keepdim=True)"), tt({4, 1}, DType::I64));
  EXPECT_EQ(output_type("torch.randn(4, 7).max(dim=0).indices"), tt({7}, DType::I64));
  EXPECT_EQ(output_type("torch.min(torch.randn(4, 7), 1, keepdim=True).values"), tt({4, 1}));
}

TEST_F(TorchIdiomsTest, PrecisionSpellings) {
  EXPECT_EQ(output_type("x = torch.randn(2, 3, dtype=torch.float16); F.softmax(x, dim=-1, dtype=torch.float32)"),
            tt({2, 3}));
  EXPECT_EQ(output_type("x = torch.randn(2, 3, dtype=torch.float16); F.softmax(x, dim=-1, dtype=torch.float32).to(x.dtype)"),
            tt({2, 3}, DType::F16));
  EXPECT_EQ(output_type("torch.randn(2).type_as(torch.randn(2, dtype=torch.bfloat16))"), tt({2}, DType::BF16));
  EXPECT_EQ(output_type("torch.randn(2).type(torch.int64)"), tt({2}, DType::I64));
  EXPECT_EQ(output_type("torch.randn(2).type('torch.HalfTensor')"), tt({2}, DType::F16));
  EXPECT_EQ(output_type("F.log_softmax(torch.randn(2, 5), dim=-1)"), tt({2, 5}));
}

TEST_F(TorchIdiomsTest, AlsoListTypes) {
  EXPECT_EQ(output_type("torch.clamp(torch.randint(0, 5, (3,)), min=1.5)"), tt({3}));  // PyTorch promotes
  EXPECT_EQ(output_type("torch.randn(4, 5).var()"), tt({}));
  EXPECT_EQ(output_type("torch.randn(4, 5).std(1, keepdim=True)"), tt({4, 1}));
  EXPECT_EQ(output_type("torch.div(torch.randint(0, 9, (3,)), 2, rounding_mode='trunc')"), tt({3}, DType::I64));
  EXPECT_EQ(output_type("torch.sub(2, torch.randn(3))"), tt({3}));
  EXPECT_EQ(output_type("torch.randn(2, 3, 4).T"), tt({4, 3, 2}));
  EXPECT_EQ(output_type("torch.randn(2, 3, 4).mT"), tt({2, 4, 3}));
  EXPECT_EQ(output_type("torch.randn(size=(2, 3))"), tt({2, 3}));
  EXPECT_EQ(output_type("torch.concatenate([torch.randn(2), torch.randn(3)], axis=0)"), tt({5}));
  EXPECT_EQ(output_type("a, b = torch.randn(2, 3).unbind(0); a * b"), tt({3}));
  EXPECT_EQ(output_type("abs(torch.randn(2))"), tt({2}));
  EXPECT_EQ(output_type("torch.tensor([[1, 2], [3, 4]])"), tt({2, 2}, DType::I64));
  EXPECT_EQ(output_type("torch.tensor([1.0, 2])"), tt({2}));
  EXPECT_EQ(output_type("torch.tensor(True)"), tt({}, DType::Bool));
  EXPECT_EQ(reference_values("torch.tensor([[1, 2], [3, 4]]) * 1"), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(output_type("torch.topk(torch.randn(4, 9), 3).indices"), tt({4, 3}, DType::I64));
  EXPECT_EQ(output_type("torch.randn(4, 9).topk(2, dim=0, largest=False).values"), tt({2, 9}));
}

// ---- Python at trace time ----------------------------------------------------------------------

TEST_F(TorchIdiomsTest, LoopsComprehensionsAndContainersNameParametersByIndex) {
  Graph g = trace(
      "import math\n"
      "class M(nn.Module):\n"
      "    def __init__(self, n):\n"
      "        super().__init__()\n"
      "        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])\n"
      "        self.head = nn.Sequential(nn.ReLU(), nn.Dropout(0.1), nn.Linear(4, 2))\n"
      "    def forward(self, x):\n"
      "        for i, layer in enumerate(self.layers):\n"
      "            if i % 2 == 0:\n"
      "                x = layer(x)\n"
      "            elif self.training:\n"
      "                x = x * 0\n"
      "            else:\n"
      "                x = layer(x) / math.sqrt(len(self.layers))\n"
      "        return self.head(x)\n"
      "M(3)(torch.randn(2, 4))");
  std::vector<std::string> paths;
  for (const Node* n : g.nodes())
    if (const auto* c = n->op_as<ConstantOp>()) paths.push_back(c->path);
  EXPECT_EQ(paths, (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                                             "layers.2.weight", "layers.2.bias", "head.2.weight", "head.2.bias"}));
}

TEST_F(TorchIdiomsTest, TraceTimePython) {
  EXPECT_EQ(output_type("xs = [torch.randn(2) for _ in range(3)]\nsum(xs)"), tt({2}));
  EXPECT_EQ(output_type("x = torch.randn(2)\nfor a, b in zip([1, 2], (3.0, 4.0)):\n    x = x * a + b\nx"), tt({2}));
  EXPECT_EQ(output_type("x = torch.randn(2)\nm = None\nif m is not None:\n    x = x + m\nx"), tt({2}));
  EXPECT_EQ(output_type("from math import pi, sqrt\ntorch.randn(2) * pi / sqrt(2) * float('inf')"), tt({2}));
  EXPECT_EQ(output_type("torch.full((2,), torch.finfo(torch.float16).min, dtype=torch.float16) * int(max(1, 2.5))"),
            tt({2}, DType::F16));
}

// ---- unsupported corners: located errors -------------------------------------------------------

TEST_F(TorchIdiomsTest, ErrorsAreLocated) {
  expect_error(fail("a = torch.randn(2, 2)\ntorch.einsum('ij,jk,kl', a, a, a)"), "only one or two operands", 2, 14);
  expect_error(fail("a = torch.randn(2, 2)\ntorch.einsum('ii->i', a)"), "diagonals are not supported", 2, 14);
  expect_error(fail("a = torch.randn(2, 2)\ntorch.einsum('i$,jk', a, a)"), "invalid subscript '$'", 2, 14);
  expect_error(fail("a = torch.randn(2, 3)\ntorch.einsum('ij,ij->ij', a, a.t())"), "subscript 'i' has size", 2, 14);
  expect_error(fail("x = torch.randn(4)\nx.repeat_interleave(torch.randint(0, 2, (4,)))"), "repeats given as a tensor", 2, 21);
  expect_error(fail("x = torch.randn(4)\nx.masked_fill(x, 0.0)"), "the mask must be a bool tensor", 2, 1);
  expect_error(fail("x = torch.randint(0, 4, (4,))\nx & x"), "only supported on bool tensors", 2, 1);
  expect_error(fail("x = torch.randn(4)\n~x"), "only supported on bool tensors", 2, 1);
  expect_error(fail("x = torch.randn(4)\nx[x > 0]"), "indexing with a bool mask is not supported", 2, 1);
  expect_error(fail("x = torch.randn(4)\nx[torch.randn(2)]"), "must be int64, int32 or bool", 2, 1);
  expect_error(fail("torch.arange(3, 3)"), "the range is empty", 1, 1);
  expect_error(fail("q = torch.randn(1, 2, 4, 8)\nm = torch.ones(4, 4, dtype=torch.bool)\n"
                    "F.scaled_dot_product_attention(q, q, q, attn_mask=m, is_causal=True)"),
               "attn_mask and is_causal=True cannot both be given", 3, 1);
  expect_error(fail("F.dropout(torch.randn(3), 0.5)"), "training=True is random", 1, 1);
  expect_error(fail("x = torch.randn(2)\nfor i in range(30000):\n    x = x + 1\nx"), "unroll to more than 20000", 2, 1);
  expect_error(fail("xs = [i for i in range(100000)]"), "range() is too long", 1, 18);
  expect_error(fail("torch.randn(2).mT"), "tensor.mT is only supported on matrices", 1, 16);
  expect_error(fail("torch.div(torch.randn(2), 2, rounding_mode='round')"), "must be None, 'trunc' or 'floor'", 1, 30);
  expect_error(fail("torch.randn(2) << 2"), "operator '<<' is not supported on tensors", 1, 1);
  expect_error(fail("torch.finfo(torch.int64)"), "requires a floating point dtype", 1, 13);
  expect_error(fail("import math\nmath.sqrtt(2)"), "did you mean 'sqrt'", 2, 6);
  expect_error(fail("ms = nn.ModuleList([nn.ReLU()])\nms(torch.randn(2))"), "is not callable", 2, 1);
  expect_error(fail("ms = nn.ModuleList([nn.ReLU()])\nms[1](torch.randn(2))"), "out of range", 2, 4);
  expect_error(fail("nn.ModuleList([1, 2])"), "holds modules, got int", 1, 15);
  expect_error(fail("r = torch.randn(3).max(0)\nr.valuez"), "did you mean 'values'", 2, 3);
  expect_error(fail("x = torch.randn(2)\nfor v in x:\n    pass\nx"), "iterating over a tensor", 2, 10);
  expect_error(fail("x = torch.randn(2)\nwhile x:\n    pass"), "'while' loops are not supported", 2, 1);
  expect_error(fail("torch.randn(4).topk(5)"), "out of range", 1, 21);
  expect_error(fail("torch.tensor([[1, 2], [3]])"), "not rectangular", 1, 14);
}

}  // namespace
}  // namespace tessera

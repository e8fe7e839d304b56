// Empty (zero-size) tensors in the torch_expr frontend: slices, narrow and split pieces of size 0
// trace with PyTorch's shapes, and fold_empty_tensors (plugins/frontends/torch_expr) removes them
// before the graph leaves the frontend, computing what PyTorch computes for every non-empty value
// that reads one. Each expectation was read off PyTorch 2.15; the programs whose values matter
// are also in the differential corpus (the Empty* programs of tests/support/program_corpus.h),
// which the PyTorch oracle runs in PyTorch itself.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "support/built_plugins.h"
#include "support/cli_runner.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/printer.h"

namespace tessera {
namespace {

using test::run_cli;

class TorchEmptyTensorsTest : public test::TorchExprFrontendTest {
 protected:
  // Traces a program that must succeed and checks that no value in its graph is empty.
  Graph trace_without_empty_values(const std::string& text) {
    Graph g = trace(text);
    for (const Node* n : std::as_const(g).nodes())
      for (const Dim& d : n->type.shape)
        EXPECT_GT(d.value(), 0) << "node '" << n->id() << "' of " << n->type.str() << " in\n" << print_graph(g);
    return g;
  }

  // The reference evaluator's values of every output on seed-0 inputs.
  std::vector<TensorValue> outputs_of(const std::string& text) {
    Graph g = trace_without_empty_values(text);
    Expected<ValueMap> values = evaluate_reference(g, make_inputs(g, 0));
    if (!values) {
      ADD_FAILURE() << values.error().render();
      return {};
    }
    std::vector<TensorValue> out;
    for (const std::string& id : g.outputs()) out.push_back(values->at(id));
    return out;
  }

  static void expect_all(const TensorValue& v, double expected, const std::string& what) {
    ASSERT_FALSE(v.data.empty()) << what;
    for (double x : v.data) {
      if (std::isnan(expected)) EXPECT_TRUE(std::isnan(x)) << what << ": " << x;
      else EXPECT_EQ(x, expected) << what;
    }
  }
};

TensorType tt(Shape shape, DType dtype = DType::F32) { return TensorType{std::move(shape), dtype}; }

const char* const kX = "x = torch.randn(4, 6)\n";

// ---- shapes: what PyTorch makes empty -------------------------------------------------------------

TEST_F(TorchEmptyTensorsTest, EmptySlicesNarrowAndSplitPiecesHavePyTorchsShapes) {
  // Each empty piece is concatenated to a non-empty tensor so that the output is not empty.
  const std::string x = kX;
  EXPECT_EQ(output_type(x + "torch.cat((x[2:1], x), 0)"), tt({4, 6}));
  EXPECT_EQ(output_type(x + "torch.cat((x[:, 5:3], x), 1)"), tt({4, 6}));
  EXPECT_EQ(output_type(x + "torch.cat((x[:, 3:3], x[:, 6:], x[:, :0], x), 1)"), tt({4, 6}));
  EXPECT_EQ(output_type(x + "torch.cat((x.narrow(1, 2, 0), x), 1)"), tt({4, 6}));
  EXPECT_EQ(output_type(x + "torch.cat((torch.narrow(x, 0, 4, 0), x), 0)"), tt({4, 6}));
  EXPECT_EQ(output_type(x + "a, b, c = x.split([3, 0, 3], dim=1)\ntorch.cat((b, a, c), 1)"), tt({4, 6}));
  // split and chunk of an empty dim: one empty piece (split), `chunks` empty pieces (chunk).
  EXPECT_EQ(output_type(x + "len(x[:, :0].split(2, dim=1)) + torch.zeros(1)"), tt({1}));
  EXPECT_EQ(output_type(x + "a, b, c = x[:, :0].chunk(3, dim=1)\ntorch.cat((a, b, c, x), 1)"), tt({4, 6}));
  // Views, layout and elementwise ops of an empty tensor stay empty.
  EXPECT_EQ(output_type(x + "e = x[:, :0]\n"
                            "torch.cat((e.t().reshape(0, 4).t(), e.exp() * 2, e.view(4, 0, 1).squeeze(-1), "
                            "e.unsqueeze(0)[0], e.transpose(0, 1).T, e.contiguous(), e.flatten(1), "
                            "e.expand(4, 0), e.float(), e.softmax(-1), F.log_softmax(e, -1), e.tril(), "
                            "torch.where(e > 0, e, 0.0), e.masked_fill(e > 0, 1.0), e + torch.randn(4, 1), x), 1)"),
            tt({4, 6}));
  // A size-1 dim expands to 0 and reshape infers -1 next to a 0, as in PyTorch.
  EXPECT_EQ(output_type(x + "torch.cat((x[:, :1].expand(4, 0), x[:, :0].reshape(-1, 4).t(), x), 1)"), tt({4, 6}));
  // An empty cache made inside a function is a constant, not an input.
  EXPECT_EQ(output_type("def f(k):\n    past = torch.zeros(1, 2, 0, 8)\n    return torch.cat((past, k), dim=2)\n"
                        "f(torch.randn(1, 2, 3, 8))"),
            tt({1, 2, 3, 8}));
}

TEST_F(TorchEmptyTensorsTest, CatDropsEmptyOperands) {
  Graph two = trace_without_empty_values(std::string(kX) + "y = torch.cat((x[:, :2], x[:, 3:3], x), 1)\ny");
  const Node* cat = two.find("y");
  ASSERT_NE(cat, nullptr) << print_graph(two);
  EXPECT_EQ(cat->op_as<TorchOp>()->target, "cat");
  EXPECT_EQ(cat->inputs.size(), 2u);
  // One operand left: a copy (reshape to its own shape) keeps the node and its name.
  Graph one = trace_without_empty_values(std::string(kX) + "y = torch.cat((x[:, :0], x * 2), 1)\ny");
  ASSERT_NE(one.find("y"), nullptr) << print_graph(one);
  EXPECT_EQ(one.find("y")->op_as<TorchOp>()->target, "reshape");
  // PyTorch's legacy rule: a 1-D tensor of shape (0,) joins any other shape.
  EXPECT_EQ(output_type(std::string(kX) + "torch.cat((x[0][:0], x), 0)"), tt({4, 6}));
  std::vector<TensorValue> v = outputs_of(std::string(kX) + "torch.cat((x[:, :0], x * 2), 1) - 2 * x");
  ASSERT_EQ(v.size(), 1u);
  expect_all(v[0], 0.0, "cat without its empty operand");
}

// ---- values: what PyTorch computes over nothing ---------------------------------------------------

TEST_F(TorchEmptyTensorsTest, ReductionsOverAnEmptyDimGivePyTorchsIdentities) {
  std::vector<TensorValue> v = outputs_of(std::string(kX) +
                                          "e = x[:, 3:3]\n"
                                          "(e.sum(-1), e.mean(-1), (e > 0).sum(-1), e.any(-1), e.all(-1), "
                                          "e.logsumexp(-1), e.var(-1), e.std(-1), e.var(-1, correction=0), e.sum(), "
                                          "torch.any(e), e.mean((0, 1)), x)");
  ASSERT_EQ(v.size(), 13u);
  expect_all(v[0], 0.0, "sum");
  expect_all(v[1], NAN, "mean");
  expect_all(v[2], 0.0, "bool sum");
  EXPECT_EQ(v[2].type, tt({4}, DType::I64));
  expect_all(v[3], 0.0, "any");
  EXPECT_EQ(v[3].type, tt({4}, DType::Bool));
  expect_all(v[4], 1.0, "all");
  expect_all(v[5], -INFINITY, "logsumexp");
  expect_all(v[6], NAN, "var");
  expect_all(v[7], NAN, "std");
  expect_all(v[8], NAN, "var(correction=0)");
  expect_all(v[9], 0.0, "sum of every dim");
  EXPECT_EQ(v[9].type, tt({}));
  expect_all(v[10], 0.0, "torch.any");
  expect_all(v[11], NAN, "mean of every dim");
}

TEST_F(TorchEmptyTensorsTest, ContractionsOverAnEmptyDimAreZerosPlusBias) {
  std::vector<TensorValue> v = outputs_of(
      "x = torch.randn(3, 8)\nw = torch.randn(5, 4)\nb = torch.randn(5)\n"
      "e = x[:, 8:]\n"
      "(e @ w.t()[:0], torch.matmul(e, w[:, :0].t()), F.linear(e, w[:, :0], b), F.linear(e, w[:, :0]), "
      "torch.einsum('ik,jk->ij', e, w[:, 4:]), F.linear(e[0], w[:, :0], b) - b, b)");
  ASSERT_EQ(v.size(), 7u);
  expect_all(v[0], 0.0, "matmul");
  EXPECT_EQ(v[0].type, tt({3, 5}));
  expect_all(v[1], 0.0, "matmul");
  EXPECT_EQ(v[1].type, tt({3, 5}));
  ASSERT_EQ(v[2].data.size(), 15u);
  for (size_t i = 0; i < 15; ++i) EXPECT_EQ(v[2].data[i], v[6].data[i % 5]) << "linear is its bias, row " << i / 5;
  expect_all(v[3], 0.0, "linear without bias");
  expect_all(v[4], 0.0, "einsum");
  expect_all(v[5], 0.0, "1-D linear minus its bias");
}

TEST_F(TorchEmptyTensorsTest, AttentionWithNoKeysIsZero) {
  std::vector<TensorValue> v = outputs_of(
      "q = torch.randn(1, 2, 3, 8)\nk = torch.randn(1, 2, 4, 8)\n"
      "(F.scaled_dot_product_attention(q, k[:, :, :0], k[:, :, :0, :4]), "
      "F.scaled_dot_product_attention(q, k[:, :, :0], k[:, :, :0], attn_mask=torch.ones(3, 1, dtype=torch.bool)[:, :0]), "
      "q, k)");
  ASSERT_EQ(v.size(), 4u);
  expect_all(v[0], 0.0, "sdpa");
  EXPECT_EQ(v[0].type, tt({1, 2, 3, 4}));
  expect_all(v[1], 0.0, "sdpa with a mask");
}

TEST_F(TorchEmptyTensorsTest, PartialRopeWithAnEmptyPassThroughRunsOnTheSimulator) {
  const char* program =
      "def rope(q, cos, sin):\n"
      "    q_rot, q_pass = q[..., :8], q[..., 8:]\n"
      "    rotated = torch.cat((-q_rot[..., 4:], q_rot[..., :4]), dim=-1)\n"
      "    return torch.cat((q_rot * cos + rotated * sin, q_pass), dim=-1)\n"
      "rope(torch.randn(1, 2, 5, 8), torch.randn(5, 8), torch.randn(5, 8))";
  trace_without_empty_values(program);
  test::CliResult r = run_cli({"run", "--target", "sim", "-c", program});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// ---- errors ---------------------------------------------------------------------------------------

TEST_F(TorchEmptyTensorsTest, AnEmptyOutputIsALocatedError) {
  expect_refused(std::string(kX) + "x[:, 3:3]", "the program's output 'slice' is an empty tensor of shape (4, 0)", 2, 1);
  expect_refused(std::string(kX) + "y = x[2:1] * 2\ny", "output 'y' is an empty tensor of shape (0, 6)", 2, 5);
  expect_refused(std::string(kX) + "(x, x.narrow(1, 0, 0))", "is an empty tensor of shape (4, 0)", 2, 5);
}

TEST_F(TorchEmptyTensorsTest, MaxMinAndArgmaxOverAnEmptyDimAreRefusedLikePyTorch) {
  const std::string x = std::string(kX) + "e = x[:, :0]\n";
  // amax/amin name the dim as written, max/min/argmax normalized (as PyTorch does).
  expect_refused(x + "e.amax(-1)", "amax(): Expected reduction dim -1 to have non-zero size.", 3, 1);
  expect_refused(x + "e.amax()",
                 "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                 "with the 'dim' argument.",
                 3, 1);
  expect_refused(x + "x[:0].amin(0)", "amin(): Expected reduction dim 0 to have non-zero size.", 3, 1);
  expect_refused(x + "torch.amin(e, 1)", "amin(): Expected reduction dim 1 to have non-zero size.", 3, 1);
  expect_refused(x + "e.max(-1)[0]", "max(): Expected reduction dim 1 to have non-zero size.", 3, 1);
  expect_refused(x + "e.min()", "min(): Expected reduction dim to be specified for input.numel() == 0.", 3, 1);
  expect_refused(x + "x[:0][torch.randint(0, 4, (2,))]", "index is out of bounds for dimension with size 0", 3, 1);
  expect_refused(x + "torch.min(e, 1).values", "min(): Expected reduction dim 1 to have non-zero size.", 3, 1);
  expect_refused(x + "e.argmax(-1)", "argmax(): Expected reduction dim 1 to have non-zero size.", 3, 1);
  expect_refused(x + "e.max()",
                 "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                 "with the 'dim' argument.",
                 3, 1);
  expect_refused(x + "e.argmin()", "argmin(): Expected reduction dim to be specified for input.numel() == 0.", 3, 1);
  // Over a non-empty dim of an empty tensor the result is empty, not an error.
  EXPECT_EQ(output_type(x + "torch.cat((e.amax(0, keepdim=True), x[:1]), 1)"), tt({1, 6}));
}

TEST_F(TorchEmptyTensorsTest, ShapeErrorsWithZeroFollowPyTorch) {
  const std::string x = std::string(kX) + "e = x[:, :0]\n";
  // 0 broadcasts only with 1 or 0.
  expect_refused(x + "e + torch.randn(4, 3)", "cannot be broadcast together (0 vs 3", 3, 1);
  expect_refused(x + "e.reshape(0, -1)", "the unspecified dimension size -1 can be any value and is ambiguous", 3, 1);
  expect_refused(x + "e.expand(4, 2)", "cannot expand shape (4, 0) to (4, 2)", 3, 1);
  expect_refused(std::string(kX) + "x.narrow(1, 5, 2)", "start (5) + length (2) exceeds dimension size (6).", 2, 16);
  expect_refused(std::string(kX) + "x.narrow(1, 7, 0)", "start out of range (expected to be in range of [-6, 6], but got 7)",
                 2, 13);
  expect_refused(std::string(kX) + "x.narrow(1, 1, -1)", "length must be non-negative.", 2, 16);
  expect_refused(std::string(kX) + "x.split([3, -1, 4], dim=1)", "section sizes must be non-negative", 2, 9);
  expect_refused(std::string(kX) + "x[:0][0]", "index 0 is out of bounds for dimension 0 with size 0", 2, 7);
}

TEST_F(TorchEmptyTensorsTest, WhatStaysUnsupportedIsALocatedError) {
  // Program inputs are never empty (an empty tensor made inside the program is).
  expect_refused("torch.randn(0, 3)", "zero-size program inputs are not supported", 1, 13);
  expect_refused("torch.zeros(2, 0)", "zero-size program inputs are not supported", 1, 13);
  expect_refused("torch.arange(3, 3)", "the range is empty", 1, 1);
  // A non-empty value that would need an empty one PyTorch cannot read either.
  expect_refused("ids = torch.randint(0, 4, (3,))\nw = torch.randn(4, 5)\nF.embedding(ids, w[:0])",
                 "embedding reads the empty tensor", 3, 1);
  expect_refused("q = torch.randn(1, 3, 8)\nF.scaled_dot_product_attention(q[..., :0], q[..., :0], q)",
                 "scaled_dot_product_attention with an empty embedding dimension is not supported", 2, 1);
}

}  // namespace
}  // namespace tessera

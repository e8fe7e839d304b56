// Differential tests of the decompose and compose_index_maps passes: each program is traced by the
// torch_expr frontend, evaluated by the reference evaluator (Torch IR, double precision), lowered
// by the two passes (loaded as plugins, as users load them) and evaluated by the Tensor IR
// interpreter; the program outputs must agree to a relative error below 1e-6. Also checks what the
// passes guarantee structurally (no TorchOp left, verifies, chains of IndexMaps composed) and that
// an unknown torch op is a located error, not a crash.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "support/built_plugins.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

class DecomposeTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override { ASSERT_TRUE(load_error_.empty()) << load_error_; }

  Graph trace(const std::string& text) {
    std::unique_ptr<Frontend> frontend = host_->registry().make_frontend("torch_expr");
    EXPECT_NE(frontend, nullptr);
    if (!frontend) return Graph();
    Expected<Graph> g = frontend->import(FrontendInput{text, "<-c>"}, {});
    if (!g) {
      ADD_FAILURE() << "program failed to trace:\n" << text << "\n" << g.error().render();
      return Graph();
    }
    return std::move(*g);
  }

  Status run_pass(const std::string& name, Graph& g) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass(name);
    if (!pass) return make_error("pass '" + name + "' is not registered");
    PassContext ctx(name, "d:00x_" + name, pass->knobs(), {}, {}, &device_, &diags_);
    return pass->run(g, ctx);
  }

  // Lowers `torch` to Tensor IR with decompose (+ compose_index_maps when `compose`).
  Graph lower(const Graph& torch, bool compose = true) {
    Graph tensor = torch;
    Status s = run_pass("decompose", tensor);
    EXPECT_TRUE(s) << s.message();
    if (s && compose) {
      s = run_pass("compose_index_maps", tensor);
      EXPECT_TRUE(s) << s.message();
    }
    for (const Node* n : tensor.nodes())
      EXPECT_EQ(n->op_as<TorchOp>(), nullptr) << "torch node left: " << n->id << "\n" << print_graph(tensor);
    Status v = verify_graph(tensor, Dialect::Tensor);
    EXPECT_TRUE(v) << v.message() << "\n" << print_graph(tensor);
    return tensor;
  }

  // The differential check, with and without compose_index_maps.
  void expect_matches_reference(const std::string& program) {
    Graph torch = trace(program);
    if (::testing::Test::HasFailure()) return;
    ValueMap inputs = make_inputs(torch, 7);
    Expected<ValueMap> expected = evaluate_reference(torch, inputs);
    ASSERT_TRUE(expected) << expected.error().render();
    for (bool compose : {false, true}) {
      Graph tensor = lower(torch, compose);
      if (::testing::Test::HasFailure()) return;
      Expected<ValueMap> actual = evaluate_tensor_ir(tensor, inputs);
      ASSERT_TRUE(actual) << actual.error().render() << "\n" << print_graph(tensor);
      Expected<ValueComparison> cmp = compare_values(*expected, *actual, torch.outputs());
      ASSERT_TRUE(cmp) << cmp.error().render();
      EXPECT_GT(cmp->elements, 0) << "nothing was compared";
      EXPECT_TRUE(cmp->within(1e-6)) << program << "\ncompose=" << compose << ": " << cmp->str() << "\n"
                                      << print_graph(tensor);
    }
  }

  DeviceDesc device_{};
  DiagnosticEngine diags_;
};


// ---- the programs (shapes reduced where the full size would make the double-precision
// evaluators slow; the structure is the same) ----

TEST_F(DecomposeTest, SeedReluMatmulBias) {
  expect_matches_reference(
      "x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); torch.relu(torch.matmul(x + bias, w))");
}

TEST_F(DecomposeTest, RMSNormModule) { expect_matches_reference("nn.RMSNorm(2048)(torch.randn(1,3,2048))"); }

TEST_F(DecomposeTest, SoftmaxModule) {
  expect_matches_reference("torch.nn.Softmax(dim=-1)(torch.randn(1,3,33,77))");
}

TEST_F(DecomposeTest, LayerNormClass) {
  expect_matches_reference(
      "class LN(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        m = x.mean(-1, keepdim=True)\n"
      "        v = ((x - m) ** 2).mean(-1, keepdim=True)\n"
      "        return (x - m) * torch.rsqrt(v + 1e-6)\n"
      "LN()(torch.randn(7, 1000))");
}

TEST_F(DecomposeTest, FunctionalRMSNorm) {
  expect_matches_reference(
      "import torch; import torch.nn.functional as F; x=torch.randn((1,7,1024)); w=torch.randn((1024,)); "
      "F.rms_norm(x, (1024,), w, eps=1e-6)");
}

TEST_F(DecomposeTest, GatedMLP) {
  expect_matches_reference(
      "import torch.nn.functional as F; x=torch.randn(1,7,64); wg=torch.randn(64,33); wu=torch.randn(64,33); "
      "F.silu(torch.matmul(x,wg))*torch.matmul(x,wu)");
}

TEST_F(DecomposeTest, SdpaCausalGqa) {
  expect_matches_reference(
      "import torch.nn.functional as F; q=torch.randn(1,4,7,16); k=torch.randn(1,2,9,16); v=torch.randn(1,2,9,8); "
      "F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)");
}

TEST_F(DecomposeTest, SdpaPlainWithScale) {
  expect_matches_reference(
      "import torch.nn.functional as F; q=torch.randn(2,3,5,8); k=torch.randn(2,3,5,8); v=torch.randn(2,3,5,8); "
      "F.scaled_dot_product_attention(q, k, v, scale=0.3)");
}

// ---- op families: odd sizes, negative dims, keepdim on and off, broadcasting corners ----

TEST_F(DecomposeTest, BroadcastingCorners) {
  expect_matches_reference("a=torch.randn(7,1,33); b=torch.randn(1,5,1); a + b");
  expect_matches_reference("a=torch.randn(1); b=torch.randn(7,33); a * b - 2.5");
  expect_matches_reference("a=torch.randn(7,33); 1 - a / 3");
}

TEST_F(DecomposeTest, UnaryMath) {
  expect_matches_reference("x=torch.rand(7,33); torch.sqrt(x) + torch.rsqrt(x + 1) + torch.exp(-x) + torch.tanh(x)");
  expect_matches_reference("x=torch.randn(33); torch.sigmoid(x) * torch.abs(x) + torch.relu(x) + x ** 2");
  expect_matches_reference("import torch.nn.functional as F; x=torch.randn(7,33); F.gelu(x) + F.gelu(x, approximate='tanh')");
}

TEST_F(DecomposeTest, Reductions) {
  expect_matches_reference("x=torch.randn(7,33,5); x.sum(-2)");
  expect_matches_reference("x=torch.randn(7,33,5); x.mean(1, keepdim=True)");
  expect_matches_reference("x=torch.randn(7,33,5); torch.amax(x, dim=-1, keepdim=False)");
  expect_matches_reference("x=torch.randn(7,33,5); x.sum()");
  expect_matches_reference("x=torch.randn(7,33,5); x.mean((0, 2))");
}

TEST_F(DecomposeTest, MatmulShapes) {
  expect_matches_reference("a=torch.randn(33); b=torch.randn(33,7); a @ b");
  expect_matches_reference("a=torch.randn(5,33); b=torch.randn(33); a @ b");
  expect_matches_reference("a=torch.randn(2,1,5,33); b=torch.randn(3,33,7); torch.matmul(a, b)");
  expect_matches_reference("a=torch.randn(3,5,33); b=torch.randn(3,33,7); torch.bmm(a, b)");
}

TEST_F(DecomposeTest, LinearAndNorms) {
  expect_matches_reference("nn.Linear(33, 7)(torch.randn(2, 5, 33))");
  expect_matches_reference("nn.Linear(33, 1, bias=False)(torch.randn(33))");
  expect_matches_reference("nn.LayerNorm(33)(torch.randn(7, 33))");
  expect_matches_reference("nn.LayerNorm((5, 33))(torch.randn(7, 5, 33))");
}

TEST_F(DecomposeTest, LayoutOps) {
  expect_matches_reference("x=torch.randn(6,35); x.reshape(5, 7, 6) * 2");
  expect_matches_reference("x=torch.randn(6,35); x.transpose(0, -1).unsqueeze(1) + 1");
  expect_matches_reference("x=torch.randn(2,3,5); x.view(6, 5).t() * 1");
}

TEST_F(DecomposeTest, SliceCatStackChunk) {
  expect_matches_reference("x=torch.randn(4,6); y=torch.randn(4,3); torch.cat([x, y, x], dim=-1)");
  expect_matches_reference("x=torch.randn(4,6); torch.stack([x, x * 2], dim=1)");
  expect_matches_reference("x=torch.randn(5,9); x[1:4, ::2] + 1");
  expect_matches_reference("x=torch.randn(5,9); x[..., -3:] * 3");
  expect_matches_reference("x=torch.randn(4,6); a, b = x.chunk(2, dim=-1); a * b");
}

TEST_F(DecomposeTest, PermuteExpandSqueezeFlatten) {
  expect_matches_reference("x=torch.randn(2,3,4); x.permute(2, 0, 1) * 1");
  expect_matches_reference("x=torch.randn(3,1); x.expand(3, 5) + 0");
  expect_matches_reference("x=torch.randn(4,1,6); x.squeeze(1).flatten() * 2");
}

TEST_F(DecomposeTest, WhereMinMaxComparisonsCasts) {
  expect_matches_reference("x=torch.randn(4,6); torch.where(x > 0, x, 0.5)");
  expect_matches_reference("x=torch.randn(4,6); y=torch.randn(6); torch.maximum(x, y) + torch.minimum(x, y)");
  expect_matches_reference("x=torch.randn(4,6); (x < 0.1).float() + (x >= 0).float()");
  expect_matches_reference("x=torch.randn(4,6); torch.amin(x, dim=0) + torch.max(x, 0)[0]");
  expect_matches_reference("x=torch.randn(7,8); torch.log(x.abs() + 1) * torch.reciprocal(x)");
}

TEST_F(DecomposeTest, ArgmaxArgminTakeTheFirstHit) {
  expect_matches_reference("x=torch.randn(4,7); torch.max(x, -1)[1]");
  expect_matches_reference("x=torch.randn(4,7); torch.min(x, 0, keepdim=True)[1]");
  expect_matches_reference("x=torch.zeros(3,5); torch.max(x, 1)[1]");  // all ties: index 0
}

TEST_F(DecomposeTest, EmbeddingIsAGather) {
  expect_matches_reference("ids=torch.randint(0, 10, (3, 5)); nn.Embedding(10, 8)(ids)");
}

// The module program: submodules, RoPE-style rotate_half with slicing, cat and negation.
TEST_F(DecomposeTest, ModuleWithRotateHalf) {
  expect_matches_reference(
      "class Block(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.emb = nn.Embedding(50, 16)\n"
      "        self.norm = nn.RMSNorm(16)\n"
      "        self.proj = nn.Linear(16, 16)\n"
      "    def forward(self, ids):\n"
      "        q = self.proj(self.norm(self.emb(ids)))\n"
      "        x1 = q[..., :8]\n"
      "        x2 = q[..., 8:]\n"
      "        rot = torch.cat((-x2, x1), dim=-1)\n"
      "        return q * 0.5 + rot * 0.25\n"
      "Block()(torch.randint(0, 50, (2, 7)))");
}

// ---- structure ----

TEST_F(DecomposeTest, SeedMatmulFollowsTheSeedPrintout) {
  Graph torch = trace("x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); "
                      "torch.relu(torch.matmul(x + bias, w))");
  Graph tensor = lower(torch);
  const Node* red = tensor.find("red");
  ASSERT_NE(red, nullptr) << print_graph(tensor);
  ASSERT_NE(red->op_as<ReduceOp>(), nullptr);
  EXPECT_EQ(red->op_as<ReduceOp>()->axis, -2);
  EXPECT_EQ(red->type.str(), "(16, 1, 16) float32");
  const Node* matmul = tensor.find("matmul");
  ASSERT_NE(matmul, nullptr);
  ASSERT_NE(matmul->op_as<IndexMapOp>(), nullptr);
  EXPECT_EQ(tensor.outputs(), std::vector<std::string>{"relu"});
}

TEST_F(DecomposeTest, ComposeFoldsChainsIntoOneMap) {
  // transpose -> reshape -> unsqueeze: three IndexMaps in a chain become one.
  Graph torch = trace("x=torch.randn(6,35); x.transpose(0, 1).reshape(5, 42).unsqueeze(0).exp()");
  Graph uncomposed = lower(torch, false);
  Graph composed = lower(torch, true);
  auto count_maps = [](const Graph& g) {
    int n = 0;
    for (const Node* node : g.nodes()) n += node->op_as<IndexMapOp>() != nullptr;
    return n;
  };
  EXPECT_EQ(count_maps(uncomposed), 3) << print_graph(uncomposed);
  EXPECT_EQ(count_maps(composed), 1) << print_graph(composed);
  expect_matches_reference("x=torch.randn(6,35); x.transpose(0, 1).reshape(5, 42).unsqueeze(0).exp()");
}

// (i * 64 + j) / 64 and % 64 fold to i and j, and the identity map left is removed.
TEST_F(DecomposeTest, ComposeSimplifiesReshapeRoundTripAway) {
  Graph torch = trace("x=torch.randn(8,64); x.reshape(512).reshape(8, 64).exp()");
  Graph tensor = lower(torch);
  for (const Node* n : tensor.nodes()) EXPECT_EQ(n->op_as<IndexMapOp>(), nullptr) << print_graph(tensor);
  const Node* exp = tensor.find("exp");
  ASSERT_NE(exp, nullptr) << print_graph(tensor);
  EXPECT_EQ(exp->inputs, std::vector<std::string>{"x"});
  // A user that reads both the identity and its source ends up reading x twice, through one input.
  expect_matches_reference("x=torch.randn(8,64); x * x.reshape(512).reshape(8, 64)");
}

TEST_F(DecomposeTest, UnknownTorchOpIsAnErrorNamingTheNode) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{4}, DType::F32});
  auto op = std::make_unique<TorchOp>();
  op->target = "frobnicate";
  g.add("y", std::move(op), {"x"}, TensorType{{4}, DType::F32});
  g.outputs() = {"y"};
  Status s = run_pass("decompose", g);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("frobnicate"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("y"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tessera

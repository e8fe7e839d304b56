// Differential tests of the decompose and compose_index_maps passes: each program is traced by the
// torch_expr frontend, evaluated by the reference evaluator (Torch IR, double precision), lowered
// by the two passes (loaded as plugins, as users load them) and evaluated by the Tensor IR
// interpreter; the program outputs must agree to a relative error below 1e-6 (f16/bf16 outputs to
// their dtype's tolerance: the reference rounds them, the interpreter does not). Also checks what the
// passes guarantee structurally (no TorchOp left, verifies, chains of IndexMaps composed) and that
// an unknown torch op is a located error, not a crash.
#include <gtest/gtest.h>

#include <algorithm>
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
#include "support/program_corpus.h"
#include "support/sanitizer_build.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

class DecomposeTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override { ASSERT_TRUE(load_error_.empty()) << load_error_; }

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
      EXPECT_EQ(n->op_as<TorchOp>(), nullptr) << "torch node left: " << n->id() << "\n" << print_graph(tensor);
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
      // The reference rounds f16/bf16 results like PyTorch eager; the Tensor IR interpreter keeps
      // them in double: half outputs agree to their dtype's tolerance.
      double tolerance = 1e-6;
      for (const std::string& out : torch.outputs()) {
        const DType d = torch.find(out)->type.dtype;
        if (d == DType::F16 || d == DType::BF16) tolerance = std::max(tolerance, default_output_rtol(d));
      }
      EXPECT_TRUE(cmp->within(tolerance)) << program << "\ncompose=" << compose << ": " << cmp->str() << "\n"
                                          << print_graph(tensor);
    }
  }

  DeviceDesc device_{};
  DiagnosticEngine diags_;
};


// ---- the programs (shapes reduced where the full size would make the double-precision
// evaluators slow; the structure is the same) ----









// ---- op families: odd sizes, negative dims, keepdim on and off, broadcasting corners ----













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

// Every program of the differential corpus (tests/support/program_corpus.h).
class DecomposeTestCorpus : public DecomposeTest, public ::testing::WithParamInterface<test::CorpusProgram> {};

TEST_P(DecomposeTestCorpus, MatchesReference) { expect_matches_reference(GetParam().text); }

INSTANTIATE_TEST_SUITE_P(Corpus, DecomposeTestCorpus, ::testing::ValuesIn(test::sanitizer_share(test::differential_corpus())),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

}  // namespace
}  // namespace tessera

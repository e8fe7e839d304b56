// Tests of the lift and dedup_loads passes. Differential: every program of the decompose corpus
// (tests/unit/decompose_test.cpp) is traced, evaluated by the reference evaluator (Torch IR,
// double), lowered through a PipelineRunner (decompose, compose_index_maps, lift, optionally
// dedup_loads; plugins loaded as users load them) and run by the Loop IR interpreter; the program
// outputs must agree to a relative error below 1e-5. Also checks the structure lift guarantees
// (same ids, inputs and types; the contract's loop nests) and dedup_loads on hand-built kernels.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tessera/eval/constant_data.h"
#include "tessera/eval/loop_interpreter.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "support/built_plugins.h"
#include "support/program_corpus.h"
#include "support/sanitizer_build.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

class LiftTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_.name = "test";
    device_.arch = "sm_90";
  }

  static PipelineSpec loop_pipeline(bool dedup) {
    PipelineSpec spec;
    spec.name = dedup ? "lift_dedup" : "lift";
    spec.file = "<test>";
    spec.stages[Dialect::Tensor] = {PassEntry{"decompose", {}, {}, {}}, PassEntry{"compose_index_maps", {}, {}, {}}};
    spec.stages[Dialect::Loop].push_back(PassEntry{"lift", {}, {}, {}});
    if (dedup) spec.stages[Dialect::Loop].push_back(PassEntry{"dedup_loads", {}, {}, {}});
    return spec;
  }

  // Lowers `torch` to Loop IR through the pipeline runner (which verifies after every stage).
  Graph lower(const Graph& torch, bool dedup) {
    PipelineSpec spec = loop_pipeline(dedup);
    RunnerOptions opts;
    opts.stop_after = Dialect::Loop;
    opts.device = &device_;
    Graph g = torch;
    DiagnosticEngine diags;
    Status s = PipelineRunner(host_->registry(), spec, opts).run(g, diags);
    EXPECT_TRUE(s) << s.message();
    for (const Node* n : g.nodes()) {
      if (n->op_as<InputOp>() || n->op_as<ConstantOp>()) continue;
      EXPECT_NE(n->op_as<LoopOp>(), nullptr) << "not lifted: " << n->id() << "\n" << print_graph(g);
    }
    return g;
  }

  Status run_pass(const std::string& name, Graph& g) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass(name);
    if (!pass) return make_error("pass '" + name + "' is not registered");
    DiagnosticEngine diags;
    PassContext ctx(name, "l:00x_" + name, pass->knobs(), {}, {}, &device_, &diags);
    return pass->run(g, ctx);
  }

  void expect_matches_reference(const std::string& program) {
    Graph torch = trace(program);
    if (::testing::Test::HasFailure()) return;
    ValueMap inputs = make_inputs(torch, 11);
    Expected<ValueMap> expected = evaluate_reference(torch, inputs);
    ASSERT_TRUE(expected) << expected.error().render();
    for (bool dedup : {false, true}) {
      Graph loop = lower(torch, dedup);
      if (::testing::Test::HasFailure()) return;
      Expected<ValueMap> actual = evaluate_loop_ir(loop, inputs);
      ASSERT_TRUE(actual) << actual.error().render() << "\n" << print_graph(loop);
      Expected<ValueComparison> cmp = compare_values(*expected, *actual, torch.outputs());
      ASSERT_TRUE(cmp) << cmp.error().render();
      EXPECT_GT(cmp->elements, 0) << "nothing was compared";
      EXPECT_TRUE(cmp->within(1e-5)) << program << "\ndedup=" << dedup << ": " << cmp->str();
    }
  }

  DeviceDesc device_{};
};


// ---- the decompose corpus, differentially ----














TEST_F(LiftTest, LayoutOps) {
  expect_matches_reference("x=torch.randn(6,35); x.transpose(0, 1).reshape(5, 42).unsqueeze(0).exp()");
  expect_matches_reference("x=torch.randn(8,64); x * x.reshape(512).reshape(8, 64)");
}







// ---- structure ----

TEST_F(LiftTest, KeepsIdsInputsAndTypes) {
  Graph torch = trace("x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); "
                      "torch.relu(torch.matmul(x + bias, w))");
  PipelineSpec tensor_only = loop_pipeline(false);
  tensor_only.stages.erase(Dialect::Loop);
  RunnerOptions opts;
  opts.stop_after = Dialect::Tensor;
  opts.device = &device_;
  Graph tensor = torch;
  DiagnosticEngine diags;
  ASSERT_TRUE(PipelineRunner(host_->registry(), tensor_only, opts).run(tensor, diags));
  Graph loop = tensor;
  ASSERT_TRUE(run_pass("lift", loop));
  ASSERT_EQ(loop.size(), tensor.size());
  std::vector<const Node*> before = std::as_const(tensor).nodes(), after = std::as_const(loop).nodes();
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i]->id(), before[i]->id());
    EXPECT_EQ(after[i]->inputs, before[i]->inputs);
    EXPECT_EQ(after[i]->type, before[i]->type);
    const auto* op = after[i]->op_as<LoopOp>();
    if (op != nullptr) {
      EXPECT_EQ(op->name, after[i]->id());
    }
  }
  EXPECT_EQ(loop.outputs(), tensor.outputs());
}

TEST_F(LiftTest, ContractLoopNests) {
  Graph loop = lower(trace("x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); "
                           "torch.relu(torch.matmul(x + bias, w))"),
                     false);
  auto body = [&](const std::string& id) {
    const Node* n = loop.find(id);
    return n && n->op_as<LoopOp>() ? print_body(n->op_as<LoopOp>()->body) : std::string("<missing " + id + ">");
  };
  EXPECT_EQ(body("add"),
            "for a0 in 0..16:  # free\n"
            "  for a1 in 0..64:  # free\n"
            "    in0 = load x[a0, a1]\n"
            "    in1 = load bias_bc[a0, a1]\n"
            "    v0 = add(in0, in1)\n"
            "    add[a0, a1] = v0\n");
  EXPECT_EQ(body("red"),
            "for a0 in 0..16:  # free\n"
            "  for a1 in 0..16:  # free\n"
            "    acc0 = init(0.0)\n"
            "    for a2 in 0..64:  # reduce\n"
            "      in0 = load prod[a0, a2, a1]\n"
            "      acc0 <- add(acc0, in0)\n"
            "    red[a0, 0, a1] = acc0\n");
}

TEST_F(LiftTest, MaxReduceWithoutKeepdimDropsTheIndex) {
  Graph loop = lower(trace("x=torch.randn(7,33,5); torch.amax(x, dim=-1, keepdim=False)"), false);
  const Node* out = loop.find(loop.outputs().at(0));
  ASSERT_NE(out, nullptr);
  std::string text = print_graph(loop);
  EXPECT_NE(text.find("acc0 = init(-inf)"), std::string::npos) << text;
  EXPECT_NE(text.find("acc0 <- max(acc0, in0)"), std::string::npos) << text;
  EXPECT_NE(text.find(out->id() + "[a0, a1] = acc0"), std::string::npos) << text;
}

TEST_F(LiftTest, CatBecomesGuardedLoads) {
  Graph loop = lower(trace("x=torch.randn(4,6); y=torch.randn(4,3); torch.cat([x, y], dim=-1)"), false);
  std::string text = print_graph(loop);
  EXPECT_NE(text.find("if a1 < 6:"), std::string::npos) << text;
  EXPECT_NE(text.find("else:"), std::string::npos) << text;
  EXPECT_NE(text.find("load y[a0, a1 - 6]"), std::string::npos) << text;
}

TEST_F(LiftTest, GatherLoadsTheIdThenTheRow) {
  Graph loop = lower(trace("ids=torch.randint(0, 10, (3, 5)); nn.Embedding(10, 8)(ids)"), false);
  std::string text = print_graph(loop);
  EXPECT_NE(text.find("in0 = load ids[a0, a1]"), std::string::npos) << text;
  EXPECT_NE(text.find("[i64(in0), a2]"), std::string::npos) << text;
}

TEST_F(LiftTest, RejectsTorchNodesNamingThem) {
  Graph g = trace("x=torch.randn(4); torch.relu(x)");
  Status s = run_pass("lift", g);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("relu"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Tensor IR"), std::string::npos) << s.message();
}

// ---- dedup_loads on hand-built kernels ----

Graph one_kernel_graph(Body body) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{4}, DType::F32});
  auto op = std::make_unique<LoopOp>();
  op->name = "y";
  op->body = std::move(body);
  g.add("y", std::move(op), {"x"}, TensorType{{4}, DType::F32});
  g.outputs() = {"y"};
  return g;
}

std::string kernel_text(const Graph& g) { return print_body(g.find("y")->op_as<LoopOp>()->body); }

TEST_F(LiftTest, DedupLoadsCollapsesRepeatedLoadsAndRenamesUses) {
  Expr a0 = Expr::var("a0");
  Graph g = one_kernel_graph(Body{Loop{"a0", Expr::int_(0), Expr::int_(4), LoopRole::Free, 0,
                                       Body{Load{"in0", "x", {a0}}, Load{"in1", "x", {a0}},
                                            Load{"in2", "x", {Expr::int_(3) - a0}},
                                            Assign{"v0", ElementwiseFn::Mul, {Expr::var("in0"), Expr::var("in1")}},
                                            Assign{"v1", ElementwiseFn::Add, {Expr::var("v0"), Expr::var("in2")}},
                                            Write{"y", {a0}, Expr::var("v1")}}}});
  ValueMap inputs = make_inputs(g, 3);
  Expected<ValueMap> before = evaluate_loop_ir(g, inputs);
  ASSERT_TRUE(before) << before.error().render();
  ASSERT_TRUE(run_pass("dedup_loads", g));
  EXPECT_EQ(kernel_text(g),
            "for a0 in 0..4:  # free\n"
            "  in0 = load x[a0]\n"
            "  in2 = load x[3 - a0]\n"
            "  v0 = mul(in0, in0)\n"
            "  v1 = add(v0, in2)\n"
            "  y[a0] = v1\n");
  Expected<ValueMap> after = evaluate_loop_ir(g, inputs);
  ASSERT_TRUE(after) << after.error().render();
  EXPECT_EQ(before->at("y").data, after->at("y").data);
  // Idempotent.
  std::string once = kernel_text(g);
  ASSERT_TRUE(run_pass("dedup_loads", g));
  EXPECT_EQ(kernel_text(g), once);
}

TEST_F(LiftTest, DedupLoadsReusesOuterLoadsButNotBranchLocalOnes) {
  Expr a0 = Expr::var("a0");
  Graph g = one_kernel_graph(Body{Loop{
      "a0", Expr::int_(0), Expr::int_(4), LoopRole::Free, 0,
      Body{Load{"in0", "x", {a0}},
           Cond{a0 < Expr::int_(2),
                Body{Load{"in1", "x", {a0}}, Load{"in2", "x", {Expr::int_(0)}}, Write{"y", {a0}, Expr::var("in1")}},
                Body{Load{"in3", "x", {Expr::int_(0)}}, Write{"y", {a0}, Expr::var("in3")}}}}}});
  ASSERT_TRUE(run_pass("dedup_loads", g));
  EXPECT_EQ(kernel_text(g),
            "for a0 in 0..4:  # free\n"
            "  in0 = load x[a0]\n"
            "  if a0 < 2:\n"
            "    in2 = load x[0]\n"
            "    y[a0] = in0\n"
            "  else:\n"
            "    in3 = load x[0]\n"
            "    y[a0] = in3\n");
}

TEST_F(LiftTest, DedupLoadsKeepsALoadAfterAWriteToItsBuffer) {
  Expr a0 = Expr::var("a0");
  Graph g = one_kernel_graph(Body{Loop{"a0", Expr::int_(0), Expr::int_(4), LoopRole::Free, 0,
                                       Body{Load{"in0", "x", {a0}}, Write{"y", {a0}, Expr::var("in0")},
                                            Load{"in1", "y", {a0}}, Write{"y", {a0}, Expr::var("in1")},
                                            Load{"in2", "y", {a0}}, Write{"y", {a0}, Expr::var("in2")}}}});
  std::string before = kernel_text(g);
  ASSERT_TRUE(run_pass("dedup_loads", g));
  EXPECT_EQ(kernel_text(g), before);
}

// Every program of the differential corpus (tests/support/program_corpus.h).
class LiftTestCorpus : public LiftTest, public ::testing::WithParamInterface<test::CorpusProgram> {};

TEST_P(LiftTestCorpus, MatchesReference) { expect_matches_reference(GetParam().text); }

INSTANTIATE_TEST_SUITE_P(Corpus, LiftTestCorpus, ::testing::ValuesIn(test::sanitizer_share(test::differential_corpus())),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

}  // namespace
}  // namespace tessera

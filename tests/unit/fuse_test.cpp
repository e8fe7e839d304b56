// Tests of the fuse pass: each program is traced by the torch_expr frontend, evaluated by the
// reference evaluator (Torch IR, double), lowered by decompose, compose_index_maps, lift and fuse
// (loaded as plugins, as users load them) and run by the Loop IR interpreter; the outputs must agree
// to a relative error below 1e-5. Also checks the kernel counts the issue asks for, the shape of the
// merged kernels (prologue inside the reduce loop, epilogue after it, one shared K loop), and both
// sides of the cost rule (declined fusions are reported as skips naming the node).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/eval/constant_data.h"
#include "tessera/eval/loop_interpreter.h"
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

class FuseTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override { ASSERT_TRUE(load_error_.empty()) << load_error_; }

  // Runs pass `name`; its skips are appended to `skips` when given.
  Status run_pass(const std::string& name, Graph& g, std::vector<PassContext::Skip>* skips = nullptr) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass(name);
    if (!pass) return make_error("pass '" + name + "' is not registered");
    PassContext ctx(name, "l:00x_" + name, pass->knobs(), {}, {}, &device_, &diags_);
    Status s = pass->run(g, ctx);
    if (skips) skips->insert(skips->end(), ctx.skips().begin(), ctx.skips().end());
    return s;
  }

  // Torch IR -> Loop IR, fused when `fuse`.
  Graph lower(const Graph& torch, bool fuse, std::vector<PassContext::Skip>* skips = nullptr) {
    Graph g = torch;
    for (const char* pass : {"decompose", "compose_index_maps", "canonicalize", "lift"}) {
      Status s = run_pass(pass, g);
      EXPECT_TRUE(s) << pass << ": " << s.message();
      if (!s) return g;
    }
    if (fuse) {
      Status s = run_pass("fuse", g, skips);
      EXPECT_TRUE(s) << s.message();
    }
    Status v = verify_graph(g, Dialect::Loop);
    EXPECT_TRUE(v) << v.message() << "\n" << print_graph(g);
    return g;
  }

  static int count_kernels(const Graph& g) {
    int n = 0;
    for (const Node* node : g.nodes()) n += node->op_as<LoopOp>() != nullptr;
    return n;
  }

  // The differential check after fuse; returns the fused graph.
  Graph expect_matches_reference(const std::string& program) {
    Graph torch = trace(program);
    if (::testing::Test::HasFailure()) return Graph();
    ValueMap inputs = make_inputs(torch, 7);
    Expected<ValueMap> expected = evaluate_reference(torch, inputs);
    EXPECT_TRUE(expected) << expected.error().render();
    if (!expected) return Graph();
    Graph fused = lower(torch, true);
    if (::testing::Test::HasFailure()) return fused;
    Expected<ValueMap> actual = evaluate_loop_ir(fused, inputs);
    EXPECT_TRUE(actual) << actual.error().render() << "\n" << print_graph(fused);
    if (!actual) return fused;
    Expected<ValueComparison> cmp = compare_values(*expected, *actual, torch.outputs());
    EXPECT_TRUE(cmp) << cmp.error().render();
    if (!cmp) return fused;
    EXPECT_GT(cmp->elements, 0) << "nothing was compared";
    EXPECT_TRUE(cmp->within(1e-5)) << program << ": " << cmp->str() << "\n" << print_graph(fused);
    return fused;
  }

  void expect_kernels(const std::string& program, int kernels) {
    Graph fused = expect_matches_reference(program);
    EXPECT_EQ(count_kernels(fused), kernels) << program << "\n" << print_graph(fused);
  }

  static bool has_skip(const std::vector<PassContext::Skip>& skips, const std::string& node,
                       const std::string& reason_part) {
    for (const auto& s : skips)
      if (s.node == node && s.reason.find(reason_part) != std::string::npos) return true;
    return false;
  }

  DeviceDesc device_{};
  DiagnosticEngine diags_;
};


// ---- kernel counts of the programs ----

TEST_F(FuseTest, SeedIsOneKernelWithPrologueAndEpilogue) {
  Graph g = expect_matches_reference(
      "x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); torch.relu(torch.matmul(x + bias, w))");
  ASSERT_EQ(count_kernels(g), 1) << print_graph(g);
  const Node* relu = g.find("relu");
  ASSERT_NE(relu, nullptr) << print_graph(g);
  const auto* op = relu->op_as<LoopOp>();
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->name, "merged_relu");
  EXPECT_EQ(relu->inputs, (std::vector<std::string>{"x", "bias", "w"}));
  // The bias add sits inside the reduce loop, the relu after it, and nothing else touches memory.
  const std::string text = print_body(op->body);
  size_t reduce = text.find("# reduce");
  size_t add = text.find("add(in");
  size_t relu_at = text.find("relu(acc0)");
  ASSERT_NE(reduce, std::string::npos) << text;
  EXPECT_GT(add, reduce) << text;
  EXPECT_NE(relu_at, std::string::npos) << text;
  EXPECT_EQ(text.find("load add"), std::string::npos) << text;
  EXPECT_EQ(text.find("load red"), std::string::npos) << text;
}

TEST_F(FuseTest, RMSNormIsOneKernel) { expect_kernels("nn.RMSNorm(2048)(torch.randn(1,3,2048))", 1); }

TEST_F(FuseTest, SoftmaxIsOneKernel) { expect_kernels("torch.nn.Softmax(dim=-1)(torch.randn(1,3,33,77))", 1); }

TEST_F(FuseTest, LayerNormIsOneKernel) {
  expect_kernels("nn.LayerNorm(33)(torch.randn(7, 33))", 1);
  expect_kernels(
      "class LN(torch.nn.Module):\n"
      "    def forward(self, x):\n"
      "        m = x.mean(-1, keepdim=True)\n"
      "        v = ((x - m) ** 2).mean(-1, keepdim=True)\n"
      "        return (x - m) * torch.rsqrt(v + 1e-6)\n"
      "LN()(torch.randn(7, 1000))",
      1);
}

TEST_F(FuseTest, ResidualAddFusesIntoTheMatmulEpilogue) {
  expect_kernels("x=torch.randn(8,16); w=torch.randn(16,24); r=torch.randn(8,24); torch.matmul(x, w) + r", 1);
  expect_kernels("x=torch.randn(2,8,16); lin=nn.Linear(16,16); x + lin(x)", 1);
}

TEST_F(FuseTest, GatedMlpIsOneKernelWithOneSharedKLoop) {
  Graph g = expect_matches_reference(
      "import torch.nn.functional as F; x=torch.randn(1,7,64); wg=torch.randn(64,33); wu=torch.randn(64,33); "
      "F.silu(torch.matmul(x,wg))*torch.matmul(x,wu)");
  ASSERT_EQ(count_kernels(g), 1) << print_graph(g);
  const std::string text = print_body(g.nodes().back()->op_as<LoopOp>()->body);
  size_t first = text.find("# reduce");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("# reduce", first + 1), std::string::npos) << "two K loops:\n" << text;
}

// TENSOR-CORE RULE: a prefill's 16-bit RMSNorm output, the gated MLP's A, stays a kernel on a
// device with tensor cores (the product then reads it from memory on them); one row (a decode
// step's GEMV) or a device without tensor cores fuses it as before.
TEST_F(FuseTest, ASixteenBitContractionOperandOfManyRowsStaysAKernelOnTensorCores) {
  auto program = [](int rows) {
    return "x=torch.randn(1," + std::to_string(rows) +
           ",64,dtype=torch.bfloat16); h=nn.RMSNorm(64,dtype=torch.bfloat16)(x); "
           "F.silu(nn.Linear(64,48,bias=False,dtype=torch.bfloat16)(h)) * nn.Linear(64,48,bias=False,dtype=torch.bfloat16)(h)";
  };
  ASSERT_NE(h100(), nullptr);
  device_ = *h100();
  std::vector<PassContext::Skip> skips;
  Graph prefill = lower(trace(program(32)), true, &skips);
  EXPECT_EQ(count_kernels(prefill), 2) << print_graph(prefill);
  EXPECT_TRUE(has_skip(skips, "h", "tensor cores: it is a 16-bit operand of mul's contraction over 64 (32 rows)"));
  Graph decode = lower(trace(program(1)), true);
  EXPECT_EQ(count_kernels(decode), 1) << print_graph(decode);
  device_ = DeviceDesc{};  // no mma_sync
  Graph without = lower(trace(program(32)), true);
  EXPECT_EQ(count_kernels(without), 1) << print_graph(without);
}

// The max loop must stay before the sum loop that reads its result: no sharing across a dependence.
TEST_F(FuseTest, DependentReduceLoopsAreNotShared) {
  Graph g = expect_matches_reference("torch.nn.Softmax(dim=-1)(torch.randn(2,5,9))");
  const std::string text = print_body(g.nodes().back()->op_as<LoopOp>()->body);
  size_t first = text.find("# reduce");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_NE(text.find("# reduce", first + 1), std::string::npos) << text;
}

// ---- the cost rule, both sides ----

// (a @ b) @ c: the first product is read inside the second's K loop at every column of the result,
// so fusing would recompute its reduction N times: declined, and reported.
TEST_F(FuseTest, RecomputingAReductionIsDeclined) {
  Graph torch = trace("a=torch.randn(5,8); b=torch.randn(8,6); c=torch.randn(6,7); torch.matmul(torch.matmul(a, b), c)");
  std::vector<PassContext::Skip> skips;
  Graph g = lower(torch, true, &skips);
  EXPECT_EQ(count_kernels(g), 2) << print_graph(g);
  bool reported = false;
  for (const auto& s : skips) reported = reported || s.reason.find("cost") != std::string::npos;
  EXPECT_TRUE(reported) << print_graph(g);
  expect_matches_reference("a=torch.randn(5,8); b=torch.randn(8,6); c=torch.randn(6,7); torch.matmul(torch.matmul(a, b), c)");
}

// QK^T into softmax(.)V: the scores are a reduction read once per column of V: declined.
TEST_F(FuseTest, AttentionScoresAreNotRecomputedPerValueColumn) {
  const std::string program =
      "import torch.nn.functional as F; q=torch.randn(2,3,5,8); k=torch.randn(2,3,5,8); v=torch.randn(2,3,5,8); "
      "F.scaled_dot_product_attention(q, k, v, scale=0.3)";
  std::vector<PassContext::Skip> skips;
  Graph g = lower(trace(program), true, &skips);
  EXPECT_EQ(count_kernels(g), 2) << print_graph(g);
  // The scaled scores stay a kernel with the QK^T matmul fused in (the epilogue rule): recomputing
  // them in softmax(.)V would recompute QK^T per column of V.
  EXPECT_TRUE(has_skip(skips, "scaled_dot_product_attention_scaled",
                       "would leave its reduction input scaled_dot_product_attention_scores materialized"))
      << print_graph(g);
  expect_matches_reference(program);
}

// The epilogue rule: a residual add `x + linear(x)` read by another matmul (many times per element)
// and by the next residual add is not recomputed there, as that would leave its matmul a kernel of
// its own; it stays a kernel with the matmul fused in. The same holds through a bias add between
// them. The other side: an elementwise producer of inputs only (no reduction behind it) is still
// recomputed as a matmul prologue.
TEST_F(FuseTest, ResidualAddKeepsItsMatmulInsteadOfBeingRecomputed) {
  for (const std::string bias : {"False", "True"}) {
    const std::string program = "import torch.nn as nn; x=torch.randn(4,16); r = x + nn.Linear(16, 16, bias=" + bias +
                                ")(x); nn.Linear(16, 16, bias=False)(r) + r";
    std::vector<PassContext::Skip> skips;
    Graph g = lower(trace(program), true, &skips);
    EXPECT_EQ(count_kernels(g), 2) << print_graph(g);
    ASSERT_NE(g.find("r"), nullptr) << print_graph(g);
    EXPECT_TRUE(has_skip(skips, "r", "would leave its reduction input")) << print_graph(g);
    expect_matches_reference(program);
  }
  expect_kernels("import torch.nn as nn; x=torch.randn(4,16); y=torch.randn(4,16); nn.Linear(16, 16)(x + y)", 1);
}

// The other side: a reduction read once per element (matmul + 1) and an elementwise producer read
// many times (the bias add in the K loop) both fuse.
TEST_F(FuseTest, ReductionReadOncePerElementFuses) {
  expect_kernels("a=torch.randn(5,8); b=torch.randn(8,6); torch.matmul(a, b) + 1", 1);
  expect_kernels("a=torch.randn(5,8); b=torch.randn(8); c=torch.randn(8,6); torch.matmul(torch.exp(a + b), c)", 1);
}

// Hand-built kernels for the elementwise side of the cost rule: p = a chain of `statements` ops over
// x (4, 8); c[i, j] = sum_k p[i, k] * w[k, j] reads p inside its K loop at every j (R = 3).
Graph elementwise_into_matmul(int statements) {
  auto f32 = [](Shape s) { return TensorType{std::move(s), DType::F32}; };
  auto v = [](const std::string& n) { return Expr::var(n); };
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, f32({4, 8}));
  g.add("w", std::make_unique<InputOp>(), {}, f32({8, 3}));
  auto p = std::make_unique<LoopOp>();
  p->name = "p";
  Body inner{Load{"in0", "x", {v("a0"), v("a1")}}};
  std::string last = "in0";
  for (int i = 0; i < statements; ++i) {
    std::string dst = "v" + std::to_string(i);
    inner.push_back(Assign{dst, ElementwiseFn::Add, {v(last), Expr::float_(0.5)}});
    last = dst;
  }
  inner.push_back(Write{"p", {v("a0"), v("a1")}, v(last)});
  p->body = {Loop{"a0", Expr::int_(0), Expr::int_(4), LoopRole::Free, 0,
                  {Loop{"a1", Expr::int_(0), Expr::int_(8), LoopRole::Free, 0, inner}}}};
  g.add("p", std::move(p), {"x"}, f32({4, 8}));
  auto c = std::make_unique<LoopOp>();
  c->name = "c";
  Body k_body{Load{"in0", "p", {v("a0"), v("a2")}}, Load{"in1", "w", {v("a2"), v("a1")}},
              Assign{"v0", ElementwiseFn::Mul, {v("in0"), v("in1")}}, Accum{"acc0", CombineFn::Add, v("v0")}};
  c->body = {Loop{"a0", Expr::int_(0), Expr::int_(4), LoopRole::Free, 0,
                  {Loop{"a1", Expr::int_(0), Expr::int_(3), LoopRole::Free, 0,
                        {Init{"acc0", Expr::float_(0.0)}, Loop{"a2", Expr::int_(0), Expr::int_(8), LoopRole::Reduce, 0, k_body},
                         Write{"c", {v("a0"), v("a1")}, v("acc0")}}}}}};
  g.add("c", std::move(c), {"p", "w"}, f32({4, 3}));
  g.outputs() = {"c"};
  return g;
}

TEST_F(FuseTest, RecomputedElementwiseWorkIsBounded) {
  for (int statements : {3, 40}) {
    Graph g = elementwise_into_matmul(statements);
    ValueMap inputs = make_inputs(g, 3);
    Expected<ValueMap> before = evaluate_loop_ir(g, inputs);
    ASSERT_TRUE(before) << before.error().render();
    std::vector<PassContext::Skip> skips;
    ASSERT_TRUE(run_pass("fuse", g, &skips));
    bool small = statements <= 16;
    EXPECT_EQ(count_kernels(g), small ? 1 : 2) << print_graph(g);
    EXPECT_EQ(has_skip(skips, "p", "cost: recomputing"), !small) << print_graph(g);
    if (small) {
      EXPECT_EQ(g.find("c")->inputs, (std::vector<std::string>{"x", "w"}));
    }
    Expected<ValueMap> after = evaluate_loop_ir(g, inputs);
    ASSERT_TRUE(after) << after.error().render() << "\n" << print_graph(g);
    Expected<ValueComparison> cmp = compare_values(*before, *after, {"c"});
    ASSERT_TRUE(cmp) << cmp.error().render();
    EXPECT_TRUE(cmp->within(1e-12)) << cmp->str();
  }
}

// SIZE RULE: a chain of 600 elementwise statements becomes several kernels of at most 128
// statements each (not one kernel that grows with the program), computing the same values.
TEST_F(FuseTest, LongElementwiseChainsAreCutIntoBoundedKernels) {
  std::string program = "x = torch.randn(3, 5)\n";
  for (int i = 0; i < 600; ++i) program += i % 2 ? "x = x * 0.5\n" : "x = x + 1\n";
  program += "x";
  Graph torch = trace(program);
  if (HasFailure()) return;
  std::vector<PassContext::Skip> skips;
  Graph g = lower(torch, true, &skips);
  EXPECT_GE(count_kernels(g), 5) << print_graph(g);
  EXPECT_LE(count_kernels(g), 12) << print_graph(g);
  for (const Node* n : g.nodes()) {
    const auto* op = n->op_as<LoopOp>();
    if (op == nullptr) continue;
    struct StatementCount final : StmtVisitor {
      int64_t n = 0;
#define TESSERA_X(K)                        \
  void visit_##K(const K& s) override {     \
    ++n;                                    \
    StmtVisitor::visit_##K(s);              \
  }
      TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
    } count;
    count.visit(op->body);
    EXPECT_LE(count.n, 128) << n->id();
  }
  bool size_skip = false;
  for (const auto& s : skips) size_skip = size_skip || s.reason.find("size: fusing would make kernel") != std::string::npos;
  EXPECT_TRUE(size_skip);
  expect_matches_reference(program);
}

TEST_F(FuseTest, ProgramOutputsStayMaterialized) {
  Graph torch = trace("x=torch.randn(4,6); y = torch.exp(x); z = y + 1; (y, z)");
  if (HasFailure()) return;
  std::vector<PassContext::Skip> skips;
  Graph g = lower(torch, true, &skips);
  EXPECT_EQ(count_kernels(g), 2) << print_graph(g);
  expect_matches_reference("x=torch.randn(4,6); y = torch.exp(x); z = y + 1; (y, z)");
}

// The SELECT RULE: rotate_half's torch.cat is a two-source map; it fuses into the RoPE's kernel as
// one value per element (each source loaded at a clamped index, the value selected), so RoPE is one
// kernel with no `cat` buffer and computes the reference's values.
TEST_F(FuseTest, RotateHalfCatFusesAsASelectIntoOneKernel) {
  const std::string program =
      "def rotate_half(x):\n    x1 = x[..., : x.shape[-1] // 2]\n    x2 = x[..., x.shape[-1] // 2 :]\n"
      "    return torch.cat((-x2, x1), dim=-1)\n"
      "q = torch.randn(1, 3, 5, 8); cos = torch.randn(5, 8); sin = torch.randn(5, 8)\n"
      "q * cos + rotate_half(q) * sin";
  Graph g = expect_matches_reference(program);
  ASSERT_EQ(count_kernels(g), 1) << print_graph(g);
  const std::string printed = print_graph(g);
  EXPECT_NE(printed.find("select(a3 < 4, "), std::string::npos) << printed;
  EXPECT_NE(printed.find("load q[0, a1, a2, min(a3, 3) + 4]"), std::string::npos) << printed;
  EXPECT_NE(printed.find("load q[0, a1, a2, max(a3 - 4, 0)]"), std::string::npos) << printed;
}

// A map of more sources than the select bound loads every one per element: it stays a kernel, and
// the reason names the bound.
TEST_F(FuseTest, MapOfManySourcesStaysAKernel) {
  const std::string program = "x=torch.randn(4,3); y=torch.randn(4,2); torch.cat([x, y, x, y, x], dim=-1) * 2";
  std::vector<PassContext::Skip> skips;
  Graph g = lower(trace(program), true, &skips);
  EXPECT_EQ(count_kernels(g), 2) << print_graph(g);
  bool reported = false;
  for (const auto& s : skips) reported = reported || s.reason.find("a map of 5 sources (the select bound is 4") != std::string::npos;
  EXPECT_TRUE(reported) << print_graph(g);
  expect_matches_reference(program);
  expect_kernels("x=torch.randn(4,3); y=torch.randn(4,2); torch.cat([x, y, x, y], dim=-1) * 2", 1);
}

// ---- the differential corpus (decompose_test's programs) ----








// Every program of the differential corpus (tests/support/program_corpus.h).
class FuseTestCorpus : public FuseTest, public ::testing::WithParamInterface<test::CorpusProgram> {};

TEST_P(FuseTestCorpus, MatchesReference) { expect_matches_reference(GetParam().text); }

INSTANTIATE_TEST_SUITE_P(Corpus, FuseTestCorpus, ::testing::ValuesIn(test::sanitizer_share(test::differential_corpus())),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

}  // namespace
}  // namespace tessera

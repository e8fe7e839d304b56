// Tests of the core tile passes (tileify, coarsen_elementwise, launch_geometry, cooperative_reduce,
// mark_unroll), loaded as plugins the way users load them. Every program of the differential corpus
// is lowered to Loop IR, scheduled under the default heuristics and with each BN candidate pinned,
// and must verify as Tile IR with every axis bound to THREAD or BLOCK, within the device's thread
// limit; then it is lowered by materialize, run on the sim target and compared with the reference
// evaluator (relative error < 1e-4, relative to at least 1e-2). Focused tests check the schedule
// decisions themselves: the cooperative RMSNorm, the split and guarded tail of a ragged elementwise
// kernel, a coarsened elementwise kernel under each ELEMS, where Combines and `if t == 0` go, what
// mark_unroll marks and skips.
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
#include "support/program_corpus.h"
#include "support/sanitizer_build.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

class TilePassesTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_ = h100();
    ASSERT_NE(device_, nullptr);
  }

  Status run_pass(const std::string& name, Graph& g, std::vector<KnobPin> pins = {},
                  std::vector<PassContext::Skip>* skips = nullptr) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass(name);
    if (!pass) return make_error("pass '" + name + "' is not registered");
    PassContext ctx(name, "t:00x_" + name, pass->knobs(), std::move(pins), {}, device_, &diags_);
    Status s = pass->run(g, ctx);
    if (skips) skips->insert(skips->end(), ctx.skips().begin(), ctx.skips().end());
    return s;
  }

  Graph lower_to_loop(const std::string& program) {
    Graph g = trace(program);
    for (const char* pass : {"decompose", "compose_index_maps", "canonicalize", "lift", "fuse", "dedup_loads",
                             "canonicalize"}) {
      Status s = run_pass(pass, g);
      EXPECT_TRUE(s) << pass << ": " << s.message();
      if (!s) break;
    }
    return g;
  }

  // tileify, launch_geometry (with `bn` pinned unless 0), cooperative_reduce, mark_unroll.
  Graph schedule(const std::string& program, int64_t bn = 0, std::vector<PassContext::Skip>* skips = nullptr,
                 std::vector<KnobPin> geometry_pins = {}) {
    Graph g = lower_to_loop(program);
    if (::testing::Test::HasFailure()) return g;
    if (bn != 0) geometry_pins.push_back(KnobPin{"BN", AttrValue(bn), {}});
    for (const char* pass : {"tileify", "launch_geometry", "cooperative_reduce", "mark_unroll"}) {
      std::vector<KnobPin> pins = std::string(pass) == "launch_geometry" ? geometry_pins : std::vector<KnobPin>{};
      Status s = run_pass(pass, g, pins, skips);
      EXPECT_TRUE(s) << pass << ": " << s.message() << "\n" << print_graph(g);
      if (!s) break;
    }
    return g;
  }

  // Verifies as Tile IR; every kernel is one Tile whose axes are all bound, within the thread limit.
  void expect_fully_bound(const Graph& g, const std::string& what) {
    Status v = verify_graph(g, Dialect::Tile);
    EXPECT_TRUE(v) << what << ": " << v.message() << "\n" << print_graph(g);
    int kernels = 0;
    for (const Node* n : g.nodes()) {
      EXPECT_EQ(n->op_as<LoopOp>(), nullptr) << what << ": " << n->id() << " is still a Loop IR kernel";
      const auto* op = n->op_as<TileOp>();
      if (op == nullptr) continue;
      ++kernels;
      ASSERT_EQ(op->body.size(), 1u) << what;
      const Tile* tile = op->body[0].as<Tile>();
      ASSERT_NE(tile, nullptr) << what;
      int64_t threads = 1;
      for (const TileAxis& a : tile->axes) {
        EXPECT_TRUE(a.binding == AxisBinding::Thread || a.binding == AxisBinding::Block)
            << what << ": axis " << a.name << " of " << n->id() << " is " << spelling(a.binding) << "\n" << print_graph(g);
        if (a.binding == AxisBinding::Thread) threads *= a.extent;
      }
      EXPECT_LE(threads, device_->max_threads_per_block) << what << ": " << n->id();
    }
    EXPECT_GT(kernels, 0) << what << ": no Tile IR kernel\n" << print_graph(g);
  }

  // materialize + the sim target must agree with the reference evaluator on the scheduled graph.
  void expect_simulates_like_reference(const std::string& program, Graph scheduled, const std::string& what) {
    Graph torch = trace(program);
    if (::testing::Test::HasFailure()) return;
    ValueMap inputs = make_inputs(torch, 7);
    Expected<ValueMap> expected = evaluate_reference(torch, inputs);
    ASSERT_TRUE(expected) << expected.error().render();
    Status m = run_pass("materialize", scheduled);
    ASSERT_TRUE(m) << what << ": materialize: " << m.message() << "\n" << print_graph(scheduled);
    std::unique_ptr<Target> sim = host_->registry().make_target("sim");
    ASSERT_NE(sim, nullptr);
    Expected<TargetRun> run = sim->execute(scheduled, inputs, TargetOptions{.arch = device_->arch, .device = device_, .cache_dir = ""});
    ASSERT_TRUE(run) << what << ": " << run.error().render() << "\n" << print_graph(scheduled);
    for (const std::string& out : torch.outputs()) {
      Expected<ValueComparison> cmp = compare_output(*expected, run->outputs, out);
      ASSERT_TRUE(cmp) << cmp.error().render();
      EXPECT_GT(cmp->elements, 0) << "nothing was compared";
      EXPECT_TRUE(cmp->within(1e-4)) << what << ": " << cmp->str() << "\n" << print_graph(scheduled);
    }
  }

  static const TileOp* kernel(const Graph& g, const std::string& id) {
    const Node* n = g.find(id);
    return n ? n->op_as<TileOp>() : nullptr;
  }
  static std::string text_of(const Graph& g, const std::string& id) {
    const TileOp* op = kernel(g, id);
    return op ? print_body(op->body) : "<no Tile IR kernel '" + id + "'>\n" + print_graph(g);
  }
  static bool has_skip(const std::vector<PassContext::Skip>& skips, const std::string& node,
                       const std::string& reason_part) {
    for (const auto& s : skips)
      if (s.node == node && s.reason.find(reason_part) != std::string::npos) return true;
    return false;
  }

  const DeviceDesc* device_ = nullptr;
  DiagnosticEngine diags_;
};

class TilePassesCorpusTest : public TilePassesTest,
                             public ::testing::WithParamInterface<test::CorpusProgram> {};

TEST_P(TilePassesCorpusTest, HeuristicScheduleIsFullyBoundAndSimulatesCorrectly) {
  Graph g = schedule(GetParam().text);
  expect_fully_bound(g, "heuristics");
  if (::testing::Test::HasFailure()) return;
  expect_simulates_like_reference(GetParam().text, std::move(g), "heuristics");
}

TEST_P(TilePassesCorpusTest, EveryPinnedBNIsFullyBoundAndSimulatesCorrectly) {
  for (int64_t bn : {1, 32, 64, 128, 256, 512, 1024}) {
    const std::string what = "BN=" + std::to_string(bn);
    Graph g = schedule(GetParam().text, bn);
    expect_fully_bound(g, what);
    if (::testing::Test::HasFailure()) return;
    expect_simulates_like_reference(GetParam().text, std::move(g), what);
    if (::testing::Test::HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, TilePassesCorpusTest, ::testing::ValuesIn(test::sanitizer_share(test::differential_corpus())),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

// ---- tileify ----

TEST_F(TilePassesTest, TileifyPeelsTheFreeNestAndDropsUnitAxes) {
  Graph g = lower_to_loop("nn.RMSNorm(2048)(torch.randn(1,32,2048))");
  ASSERT_TRUE(run_pass("tileify", g));
  const TileOp* op = kernel(g, "rms_norm");
  ASSERT_NE(op, nullptr) << print_graph(g);
  EXPECT_EQ(op->name, "k_rms_norm_reduce");
  const Tile* tile = op->body[0].as<Tile>();
  ASSERT_NE(tile, nullptr);
  ASSERT_EQ(tile->axes.size(), 1u) << print_body(op->body);  // the extent-1 batch axis is gone
  EXPECT_EQ(tile->axes[0].extent, 32);
  EXPECT_EQ(tile->axes[0].binding, AxisBinding::Parallel);
  const std::string text = print_body(op->body);
  EXPECT_NE(text.find("rms_norm[0, a0, "), std::string::npos) << text;
}

TEST_F(TilePassesTest, TileifyNamesElementwiseKernelsWithoutReduce) {
  Graph g = lower_to_loop("x=torch.randn(33,77); torch.relu(x) + 1");
  ASSERT_TRUE(run_pass("tileify", g));
  for (const Node* n : g.nodes()) {
    if (const auto* op = n->op_as<TileOp>()) {
      EXPECT_EQ(op->name, "k_" + n->id());
    }
  }
}

TEST_F(TilePassesTest, ScalarReductionGetsAnAxislessTile) {
  Graph g = lower_to_loop("x=torch.randn(7,33,5); x.sum()");
  ASSERT_TRUE(run_pass("tileify", g));
  const TileOp* op = kernel(g, g.outputs().at(0));
  ASSERT_NE(op, nullptr) << print_graph(g);
  EXPECT_TRUE(op->body[0].as<Tile>()->axes.empty()) << print_body(op->body);
}

// ---- launch_geometry ----

TEST_F(TilePassesTest, RaggedElementwiseKernelIsSplitAndGuarded) {
  std::vector<PassContext::Skip> skips;
  Graph g = schedule("x=torch.randn(33,77); x * 2", 32, &skips, {KnobPin{"BM", AttrValue(int64_t{4}), {}}});
  expect_fully_bound(g, "33x77");
  const TileOp* op = kernel(g, g.outputs().at(0));
  ASSERT_NE(op, nullptr);
  const Tile* tile = op->body[0].as<Tile>();
  ASSERT_EQ(tile->axes.size(), 4u) << print_body(op->body);
  // threads: 32 along the 77 columns (coalesced, first), 4 along the 33 rows; blocks: 3 x 9.
  EXPECT_EQ(tile->axes[0].extent, 32);
  EXPECT_EQ(tile->axes[0].binding, AxisBinding::Thread);
  EXPECT_EQ(tile->axes[1].extent, 4);
  EXPECT_EQ(tile->axes[1].binding, AxisBinding::Thread);
  EXPECT_EQ(tile->axes[2].extent, 3);
  EXPECT_EQ(tile->axes[2].binding, AxisBinding::Block);
  EXPECT_EQ(tile->axes[3].extent, 9);
  EXPECT_EQ(tile->axes[3].binding, AxisBinding::Block);
  ASSERT_EQ(tile->body.size(), 1u);
  const Cond* guard = tile->body[0].as<Cond>();
  ASSERT_NE(guard, nullptr) << print_body(op->body);
  EXPECT_EQ(guard->cond.str(), "a2 * 32 + a0 < 77 && a3 * 4 + a1 < 33") << print_body(op->body);
  // cooperative_reduce leaves a Tile with threads alone.
  EXPECT_TRUE(has_skip(skips, g.outputs().at(0), "THREAD")) << print_body(op->body);
}

// coarsen_elementwise before launch_geometry: each ELEMS leaves the tail guard outside the K-loop
// (so the loop stays straight-line for vectorize_loads) and computes every element exactly once,
// also where the threads over-cover the shortened axis and for a broadcast operand.
TEST_F(TilePassesTest, CoarsenedElementwiseKernelKeepsTheGuardOutsideItsLoop) {
  const std::string program = "x=torch.randn(6,72); b=torch.randn(72); torch.relu(x) + b";
  for (int64_t elems : {1, 2, 4, 8}) {
    const std::string what = "ELEMS=" + std::to_string(elems);
    Graph g = lower_to_loop(program);
    ASSERT_FALSE(HasFailure());
    ASSERT_TRUE(run_pass("tileify", g));
    Status c = run_pass("coarsen_elementwise", g, {KnobPin{"ELEMS", AttrValue(elems), {}}});
    ASSERT_TRUE(c) << what << ": " << c.message();
    ASSERT_TRUE(run_pass("launch_geometry", g,
                         {KnobPin{"BN", AttrValue(int64_t{32}), {}}, KnobPin{"BM", AttrValue(int64_t{2}), {}}}));
    expect_fully_bound(g, what);
    const TileOp* op = kernel(g, g.outputs().at(0));
    ASSERT_NE(op, nullptr);
    const Tile* tile = op->body[0].as<Tile>();
    ASSERT_EQ(tile->body.size(), 1u) << what << "\n" << print_body(op->body);
    // 72 / ELEMS columns over 32 threads (6 rows over 2 exactly): a guard whenever 32 does not
    // divide the columns.
    const Body* inside = &tile->body;
    if (const Cond* guard = tile->body[0].as<Cond>()) inside = &guard->then_body;
    EXPECT_EQ((72 / elems) % 32 != 0, tile->body[0].is<Cond>()) << what << "\n" << print_body(op->body);
    ASSERT_EQ(inside->size(), elems > 1 ? 1u : 5u) << what << "\n" << print_body(op->body);
    if (elems > 1) {
      const Loop* lanes = (*inside)[0].as<Loop>();
      ASSERT_NE(lanes, nullptr) << what << "\n" << print_body(op->body);
      EXPECT_EQ(lanes->end.str(), std::to_string(elems)) << print_body(op->body);
      for (const Stmt& s : lanes->body) EXPECT_FALSE(s.is<Cond>()) << print_body(op->body);
    }
    expect_simulates_like_reference(program, std::move(g), what);
  }
}

TEST_F(TilePassesTest, ExactSplitHasNoGuard) {
  Graph g = schedule("x=torch.randn(4,64); x * 2", 32);
  const TileOp* op = kernel(g, g.outputs().at(0));
  ASSERT_NE(op, nullptr);
  const Tile* tile = op->body[0].as<Tile>();
  for (const Stmt& s : tile->body) EXPECT_FALSE(s.is<Cond>()) << print_body(op->body);
}

TEST_F(TilePassesTest, MatmulIsNotCooperative) {
  Graph g = schedule("x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); torch.relu(torch.matmul(x + bias, w))");
  const Node* relu = g.find("relu");
  ASSERT_NE(relu, nullptr) << print_graph(g);
  bool found = false;
  for (const KnobChoice& c : relu->choices) {
    if (c.pass == "launch_geometry" && c.knob == "BN") {
      found = true;
      EXPECT_NE(std::get<int64_t>(c.value), 1) << "a matmul reuses its operands: one thread per output";
    }
  }
  EXPECT_TRUE(found) << print_graph(g);
}

TEST_F(TilePassesTest, PinnedBMOutsideTheCandidatesIsAnError) {
  Graph g = lower_to_loop("x=torch.randn(33,77); x * 2");
  ASSERT_TRUE(run_pass("tileify", g));
  Status s = run_pass("launch_geometry", g, {KnobPin{"BN", AttrValue(int64_t{1024}), {}},
                                             KnobPin{"BM", AttrValue(int64_t{2}), {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("BM"), std::string::npos) << s.message();
}

// ---- cooperative_reduce ----

TEST_F(TilePassesTest, RMSNormIsOneRowPerBlockWith256Threads) {
  Graph g = schedule("nn.RMSNorm(2048)(torch.randn(1,32,2048))");
  expect_fully_bound(g, "rms_norm");
  const std::string text = text_of(g, "rms_norm");
  EXPECT_NE(text.find("Tile(axes=(a0:256=THREAD, a1:32=BLOCK)):"), std::string::npos) << text;
  EXPECT_NE(text.find("StridedLoop(a2 = a0; < 2048; += 256):  # reduce"), std::string::npos) << text;
  EXPECT_NE(text.find("StridedLoop(a3 = a0; < 2048; += 256):  # free"), std::string::npos) << text;
  // The Combine follows the reduce loop, before the value is used.
  size_t combine = text.find("Combine(acc0, op=add)");
  ASSERT_NE(combine, std::string::npos) << text;
  EXPECT_LT(combine, text.find("mul(acc0")) << text;
  EXPECT_EQ(text.find("Combine", combine + 1), std::string::npos) << "one accumulator, one Combine\n" << text;
}

TEST_F(TilePassesTest, ScalarReductionWritesFromThreadZeroOnly) {
  Graph g = schedule("x=torch.randn(7,33,5); x.sum()");
  expect_fully_bound(g, "sum");
  const std::string text = text_of(g, g.outputs().at(0));
  EXPECT_NE(text.find("Combine(acc0, op=add)"), std::string::npos) << text;
  size_t guard = text.find("if a0 == 0:");
  ASSERT_NE(guard, std::string::npos) << text;
  EXPECT_LT(text.find("Combine"), guard) << text;
}

TEST_F(TilePassesTest, SoftmaxCombinesMaxThenSum) {
  Graph g = schedule("torch.nn.Softmax(dim=-1)(torch.randn(1,3,33,77))");
  expect_fully_bound(g, "softmax");
  const std::string text = text_of(g, g.outputs().at(0));
  size_t max_combine = text.find("op=max)");
  size_t add_combine = text.find("op=add)");
  ASSERT_NE(max_combine, std::string::npos) << text;
  ASSERT_NE(add_combine, std::string::npos) << text;
  EXPECT_LT(max_combine, add_combine) << text;
}

TEST_F(TilePassesTest, PinnedBNOneWithoutLoopsIsSkippedByCooperativeReduce) {
  std::vector<PassContext::Skip> skips;
  Graph g = schedule("x=torch.randn(33,77); x * 2", 1, &skips);
  expect_fully_bound(g, "BN=1 elementwise");
  EXPECT_TRUE(has_skip(skips, g.outputs().at(0), "no top-level loop")) << print_graph(g);
}

// ---- mark_unroll ----

TEST_F(TilePassesTest, ShortConstantLoopsAreUnrolled) {
  Graph g = schedule("x=torch.randn(7,33,5); torch.amax(x, dim=-1, keepdim=False)");
  const std::string text = text_of(g, g.outputs().at(0));
  EXPECT_NE(text.find("# reduce, unroll 5"), std::string::npos) << text;
}

TEST_F(TilePassesTest, MaxUnrollZeroDisables) {
  Graph g = lower_to_loop("x=torch.randn(7,33,5); torch.amax(x, dim=-1, keepdim=False)");
  for (const char* pass : {"tileify", "launch_geometry", "cooperative_reduce"}) ASSERT_TRUE(run_pass(pass, g));
  ASSERT_TRUE(run_pass("mark_unroll", g, {KnobPin{"MAX_UNROLL", AttrValue(int64_t{0}), {}}}));
  const std::string text = text_of(g, g.outputs().at(0));
  EXPECT_EQ(text.find("unroll"), std::string::npos) << text;
}

TEST_F(TilePassesTest, LoopsHoldingACollectiveAreNotUnrolled) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{Shape{4}, DType::F32});
  auto op = std::make_unique<TileOp>();
  op->name = "k_y_reduce";
  Loop with_combine{"a1", Expr::int_(0), Expr::int_(2), LoopRole::Free, 0,
                    Body{Init{"acc0", Expr::float_(0.0)}, Combine{"acc0", CombineFn::Add, CombineScope::Block}}};
  Loop plain{"a2", Expr::int_(0), Expr::int_(4), LoopRole::Free, 0,
             Body{Load{"in0", "x", {Expr::var("a2")}},
                  Cond{Expr::binary(ExprKind::Eq, Expr::var("a0"), Expr::int_(0)),
                       Body{Write{"y", {Expr::var("a2")}, Expr::var("in0")}}, {}}}};
  op->body = Body{Tile{{TileAxis{"a0", 32, AxisBinding::Thread}}, Body{with_combine, plain}}};
  g.add("y", std::move(op), {"x"}, TensorType{Shape{4}, DType::F32});
  g.outputs().push_back("y");
  ASSERT_TRUE(verify_graph(g, Dialect::Tile));
  ASSERT_TRUE(run_pass("mark_unroll", g));
  const std::string text = text_of(g, "y");
  EXPECT_NE(text.find("for a1 in 0..2:  # free\n"), std::string::npos) << text;
  EXPECT_NE(text.find("for a2 in 0..4:  # free, unroll 4"), std::string::npos) << text;
}

}  // namespace
}  // namespace tessera

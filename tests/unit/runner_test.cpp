// PipelineRunner: stage ordering, knob pinning per pipeline, -vv diffs, and independence of two
// pipelines run in one process (sequentially and on two threads at once). Kernel passes: the same
// result, diffs and skips for any thread count, a failure leaves the graph as it was and names the
// first failing node, a node left unlowered is an error; reproducers hold the failing pass's input
// (rebuilt by replay for a whole-graph pass, or copied while a tuner answers).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/tune/choice_source.h"

namespace tessera {
namespace {

// Chooses knob TILE per compute node and appends it to the node's op attrs, so the effect of the
// choice is visible in the printed IR, not only in the recorded choices.
class ChooseTilePass final : public Pass {
 public:
  std::string_view name() const override { return "choose_tile"; }
  std::string_view summary() const override { return "test pass"; }
  std::vector<Dialect> stages() const override { return {Dialect::Torch}; }
  std::vector<KnobSpec> knobs() const override { return {KnobSpec{"TILE", KnobType::Int, {}, std::nullopt, "test"}}; }
  Status run(Graph& g, PassContext& ctx) override {
    for (Node* n : g.nodes()) {
      auto* op = n->op_as<TorchOp>();
      if (!op) continue;
      auto v = ctx.choose_int("TILE", *n, {8, 16, 32, 64}, 16);
      if (!v) return v.error();
      op->attrs.set("tile", *v);
    }
    return Status::ok();
  }
};

// The kernel-pass form of choose_tile: also declines nodes whose target is `neg`, and fails at
// nodes whose target is `fail`.
class TileKernelsPass final : public KernelPass {
 public:
  std::string_view name() const override { return "tile_kernels"; }
  std::string_view summary() const override { return "test kernel pass"; }
  std::vector<Dialect> stages() const override { return {Dialect::Torch}; }
  Dialect input_dialect() const override { return Dialect::Torch; }
  std::vector<KnobSpec> knobs() const override { return {KnobSpec{"TILE", KnobType::Int, {}, std::nullopt, "test"}}; }
  Status run_on(Node& n, PassContext& ctx) override {
    auto* op = n.op_as<TorchOp>();
    if (op->target == "neg") {
      ctx.skip(n, "declines neg");
      return Status::ok();
    }
    if (op->target == "fail") return ctx.error_at(n, "refuses this node");
    // Reads its input through the graph as it was before the pass: never another node's rewrite.
    const Node* input = ctx.graph().find(n.inputs[0]);
    if (input->op_as<TorchOp>() && input->op_as<TorchOp>()->attrs.has("tile"))
      return ctx.error_at(n, "saw a rewritten input");
    auto v = ctx.choose_int("TILE", n, {8, 16, 32, 64}, 16);
    if (!v) return v.error();
    op->attrs.set("tile", *v);
    return Status::ok();
  }
};

// Claims to lower Torch IR to Tensor IR but leaves `keep` nodes as they are.
class HalfLowerPass final : public KernelPass {
 public:
  std::string_view name() const override { return "half_lower"; }
  std::string_view summary() const override { return "test lowering pass"; }
  std::vector<Dialect> stages() const override { return {Dialect::Tensor}; }
  Dialect input_dialect() const override { return Dialect::Torch; }
  Status run_on(Node& n, PassContext&) override {
    if (n.op_as<TorchOp>()->target == "keep") return Status::ok();
    n.op = std::make_unique<ElementwiseOp>();
    return Status::ok();
  }
};

// A whole-graph pass that marks every node `seen` until it fails at the first `stop` node.
class FailWholePass final : public Pass {
 public:
  std::string_view name() const override { return "fail_whole"; }
  std::string_view summary() const override { return "test pass"; }
  std::vector<Dialect> stages() const override { return {Dialect::Torch}; }
  Status run(Graph& g, PassContext& ctx) override {
    for (Node* n : g.nodes()) {
      auto* op = n->op_as<TorchOp>();
      if (op && op->target == "stop") return ctx.error_at(*n, "refuses this node");
      if (op) op->attrs.set("seen", int64_t{1});  // changes the graph before failing
    }
    return Status::ok();
  }
};

Registry make_registry() {
  Registry r;
  r.begin_plugin(PluginRecord{"<test>", "test", "0", {}});
  r.add_pass("choose_tile", [] { return std::make_unique<ChooseTilePass>(); });
  r.add_pass("tile_kernels", [] { return std::make_unique<TileKernelsPass>(); });
  r.add_pass("half_lower", [] { return std::make_unique<HalfLowerPass>(); });
  r.add_pass("fail_whole", [] { return std::make_unique<FailWholePass>(); });
  EXPECT_TRUE(r.end_plugin());
  return r;
}

// x -> a chain of `count` torch nodes; every fifth is a `neg` (declined by tile_kernels), and the
// nodes at `fail_at` positions are `fail`.
Graph chain_graph(int count, std::vector<int> fail_at = {}) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{4, 8}, DType::F32});
  std::string prev = "x";
  for (int i = 0; i < count; ++i) {
    auto op = std::make_unique<TorchOp>();
    op->target = std::find(fail_at.begin(), fail_at.end(), i) != fail_at.end() ? "fail" : i % 5 == 4 ? "neg" : "relu";
    std::string id = "n" + std::to_string(i);
    g.add(id, std::move(op), {prev}, TensorType{{4, 8}, DType::F32});
    prev = id;
  }
  g.outputs().push_back(prev);
  return g;
}

PipelineSpec torch_pipeline(std::vector<std::string> passes, int threads = 1) {
  PipelineSpec spec;
  spec.name = "test";
  spec.file = "<test>";
  spec.threads = threads;
  for (const std::string& p : passes) spec.stages[Dialect::Torch].push_back(PassEntry{p, {}, {}, {}});
  return spec;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Graph make_graph() {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{4, 8}, DType::F32});
  auto relu = std::make_unique<TorchOp>();
  relu->target = "relu";
  g.add("relu", std::move(relu), {"x"}, TensorType{{4, 8}, DType::F32});
  g.outputs().push_back("relu");
  return g;
}

PipelineSpec pipeline_pinning(int64_t tile) {
  PipelineSpec spec;
  spec.name = "p" + std::to_string(tile);
  spec.file = "<test>";
  spec.stages[Dialect::Torch].push_back(PassEntry{"choose_tile", {KnobPin{"TILE", AttrValue{tile}, {}}}, {}, {}});
  return spec;
}

DeviceDesc test_device() {
  DeviceDesc d;
  d.name = "test";
  d.arch = "sm_90";
  return d;
}

int64_t chosen_tile(const Graph& g) {
  const Node* n = g.find("relu");
  for (const auto& c : n->choices)
    if (c.knob == "TILE") return std::get<int64_t>(c.value);
  return -1;
}

TEST(Runner, TwoPipelinesWithDifferentPinsDoNotInterfere) {
  Registry reg = make_registry();
  DeviceDesc dev = test_device();
  PipelineSpec a = pipeline_pinning(8), b = pipeline_pinning(64);
  RunnerOptions opts;
  opts.device = &dev;
  PipelineRunner ra(reg, a, opts), rb(reg, b, opts);
  Graph ga = make_graph(), gb = make_graph(), ga2 = make_graph();
  DiagnosticEngine diags;
  ASSERT_TRUE(ra.run(ga, diags));
  ASSERT_TRUE(rb.run(gb, diags));
  ASSERT_TRUE(ra.run(ga2, diags));
  EXPECT_EQ(chosen_tile(ga), 8);
  EXPECT_EQ(chosen_tile(gb), 64);
  EXPECT_EQ(print_graph(ga), print_graph(ga2));
  EXPECT_NE(print_graph(ga), print_graph(gb));
}

TEST(Runner, TwoPipelinesOnTwoThreadsAtOnce) {
  Registry reg = make_registry();
  DeviceDesc dev = test_device();
  PipelineSpec a = pipeline_pinning(16), b = pipeline_pinning(32);
  RunnerOptions opts;
  opts.device = &dev;
  std::vector<int64_t> seen_a, seen_b;
  auto work = [&](const PipelineSpec& spec, std::vector<int64_t>& seen) {
    PipelineRunner runner(reg, spec, opts);
    for (int i = 0; i < 200; ++i) {
      Graph g = make_graph();
      DiagnosticEngine diags;
      if (!runner.run(g, diags)) return;
      seen.push_back(chosen_tile(g));
    }
  };
  std::thread ta(work, std::cref(a), std::ref(seen_a)), tb(work, std::cref(b), std::ref(seen_b));
  ta.join();
  tb.join();
  ASSERT_EQ(seen_a.size(), 200u);
  ASSERT_EQ(seen_b.size(), 200u);
  for (auto v : seen_a) EXPECT_EQ(v, 16);
  for (auto v : seen_b) EXPECT_EQ(v, 32);
}

TEST(Runner, UnpinnedKnobTakesTunerThenHeuristic) {
  Registry reg = make_registry();
  DeviceDesc dev = test_device();
  PipelineSpec spec;
  spec.name = "free";
  spec.stages[Dialect::Torch].push_back(PassEntry{"choose_tile", {}, {}, {}});
  RunnerOptions opts;
  opts.device = &dev;
  Graph g = make_graph();
  DiagnosticEngine diags;
  ASSERT_TRUE(PipelineRunner(reg, spec, opts).run(g, diags));
  EXPECT_EQ(chosen_tile(g), 16);
  EXPECT_EQ(g.find("relu")->choices.at(0).source, "heuristic");

  // The sampler explores: seeds draw different values (each seed always the same one, since it
  // draws by the decision's key).
  std::set<int64_t> values;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    RandomChoiceSource sampler(seed);
    opts.tuner = &sampler;
    Graph h = make_graph();
    ASSERT_TRUE(PipelineRunner(reg, spec, opts).run(h, diags));
    values.insert(chosen_tile(h));
    EXPECT_EQ(h.find("relu")->choices.at(0).source, "sampled");
    Graph again = make_graph();
    ASSERT_TRUE(PipelineRunner(reg, spec, opts).run(again, diags));
    EXPECT_EQ(chosen_tile(again), chosen_tile(h)) << "seed " << seed;
  }
  EXPECT_GT(values.size(), 1u);
}

TEST(Runner, VeryVerboseEmitsOneDiffBlockPerApplication) {
  Registry reg = make_registry();
  DeviceDesc dev = test_device();
  PipelineSpec spec = pipeline_pinning(32);
  std::ostringstream out, err;
  RunnerOptions opts;
  opts.device = &dev;
  opts.verbosity = 2;
  opts.out = &out;
  opts.err = &err;
  Graph g = make_graph();
  DiagnosticEngine diags;
  ASSERT_TRUE(PipelineRunner(reg, spec, opts).run(g, diags));
  const std::string s = out.str();
  EXPECT_EQ(s.rfind(">>> g:001_choose_tile\n@@ matched at relu (in-place) @@\n", 0), 0u) << s;
  EXPECT_NE(s.find("+relu = relu(x, tile=32)"), std::string::npos) << s;
  EXPECT_NE(s.find("<<< g:001_choose_tile\n"), std::string::npos) << s;
  EXPECT_NE(err.str().find("[g:001_choose_tile]"), std::string::npos) << err.str();
}

// on_stage_end sees each stage that ran, once, with that stage's verified result.
TEST(Runner, OnStageEndReceivesEveryStageThatRan) {
  Registry reg = make_registry();
  DeviceDesc dev = test_device();
  PipelineSpec spec = pipeline_pinning(64);
  RunnerOptions opts;
  opts.device = &dev;
  std::vector<std::pair<Dialect, std::string>> seen;
  opts.on_stage_end = [&seen](Dialect stage, const Graph& g) { seen.emplace_back(stage, print_graph(g)); };
  Graph g = make_graph();
  DiagnosticEngine diags;
  ASSERT_TRUE(PipelineRunner(reg, spec, opts).run(g, diags));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].first, Dialect::Torch);
  EXPECT_NE(seen[0].second.find("relu = relu(x, tile=64)"), std::string::npos) << seen[0].second;
}

struct KernelPassRun {
  std::string ir, out;
  Status status;
};

KernelPassRun run_tile_kernels(Graph g, int threads, ChoiceSource* tuner = nullptr) {
  Registry reg = make_registry();
  DeviceDesc dev = test_device();
  PipelineSpec spec = torch_pipeline({"tile_kernels"}, threads);
  std::ostringstream out, err;
  RunnerOptions opts;
  opts.device = &dev;
  opts.verbosity = 2;
  opts.tuner = tuner;
  opts.out = &out;
  opts.err = &err;
  DiagnosticEngine diags;
  KernelPassRun r;
  r.status = PipelineRunner(reg, spec, opts).run(g, diags);
  r.ir = print_graph(g);
  r.out = out.str();
  return r;
}

TEST(Runner, KernelPassGivesTheSameBytesForAnyThreadCount) {
  KernelPassRun one = run_tile_kernels(chain_graph(60), 1);
  ASSERT_TRUE(one.status) << one.status.message();
  EXPECT_NE(one.ir.find("n0 = relu(x, tile=16)"), std::string::npos) << one.ir;
  EXPECT_NE(one.ir.find("n4 = neg(n3)"), std::string::npos) << one.ir;
  // Skips in graph order, after the diff block.
  const size_t skip4 = one.out.find("--- g:001_tile_kernels skipped at n4: declines neg");
  const size_t skip9 = one.out.find("--- g:001_tile_kernels skipped at n9: declines neg");
  ASSERT_NE(skip4, std::string::npos) << one.out;
  EXPECT_LT(skip4, skip9);
  EXPECT_LT(one.out.find("@@ matched at n0 (in-place) @@"), one.out.find("@@ matched at n1 (in-place) @@"));
  for (int threads : {2, 3, 8, 64}) {
    KernelPassRun many = run_tile_kernels(chain_graph(60), threads);
    ASSERT_TRUE(many.status) << many.status.message();
    EXPECT_EQ(many.ir, one.ir) << threads;
    EXPECT_EQ(many.out, one.out) << threads;
  }
}

TEST(Runner, KernelPassWithATunerAsksInGraphOrder) {
  RandomChoiceSource a(9), b(9);
  KernelPassRun one = run_tile_kernels(chain_graph(40), 1, &a);
  KernelPassRun eight = run_tile_kernels(chain_graph(40), 8, &b);
  ASSERT_TRUE(one.status && eight.status);
  EXPECT_EQ(eight.ir, one.ir);
  EXPECT_NE(one.ir.find("(sampled)"), std::string::npos) << one.ir;
}

TEST(Runner, FailedKernelPassLeavesTheGraphAndNamesTheFirstFailingNode) {
  for (int threads : {1, 4}) {
    Graph input = chain_graph(30, {17, 6});
    const std::string before = graph_to_json_text(input);
    Registry reg = make_registry();
    DeviceDesc dev = test_device();
    PipelineSpec spec = torch_pipeline({"tile_kernels"}, threads);
    RunnerOptions opts;
    opts.device = &dev;
    opts.reproducer_dir = (std::filesystem::temp_directory_path() / ("tessera-runner-test-" + std::to_string(threads))).string();
    Graph g = input;
    DiagnosticEngine diags;
    Status st = PipelineRunner(reg, spec, opts).run(g, diags);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().node, "n6") << threads;
    EXPECT_EQ(graph_to_json_text(g), before);  // no node rewritten, not even n0..n5
    EXPECT_EQ(read_file(std::filesystem::path(opts.reproducer_dir) / "input.json"), before);
    std::filesystem::remove_all(opts.reproducer_dir);
  }
}

TEST(Runner, ANodeALoweringPassLeavesBehindIsAnErrorNamingIt) {
  Registry reg = make_registry();
  DeviceDesc dev = test_device();
  PipelineSpec spec;
  spec.name = "lower";
  spec.file = "<test>";
  spec.stages[Dialect::Tensor].push_back(PassEntry{"half_lower", {}, {}, {}});
  RunnerOptions opts;
  opts.device = &dev;
  opts.stop_after = Dialect::Tensor;
  opts.reproducer_dir = (std::filesystem::temp_directory_path() / "tessera-runner-test-lower").string();
  Graph g = make_graph();
  auto keep = std::make_unique<TorchOp>();
  keep->target = "keep";
  g.add("kept", std::move(keep), {"relu"}, TensorType{{4, 8}, DType::F32});
  DiagnosticEngine diags;
  Status st = PipelineRunner(reg, spec, opts).run(g, diags);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().node, "kept");
  EXPECT_NE(st.error().message.find("half_lower could not lower node 'kept': it is left as torch IR"),
            std::string::npos)
      << st.error().render();
  std::filesystem::remove_all(opts.reproducer_dir);
}

// The reproducer of a whole-graph pass holds the graph the pass received: the result of the
// passes before it, not the graph the failing pass left half-rewritten.
TEST(Runner, WholeGraphPassReproducerHoldsItsInput) {
  for (bool with_tuner : {false, true}) {
    Registry reg = make_registry();
    DeviceDesc dev = test_device();
    PipelineSpec spec = torch_pipeline({"tile_kernels", "fail_whole"}, 2);
    RandomChoiceSource tuner(3);
    RunnerOptions opts;
    opts.device = &dev;
    opts.tuner = with_tuner ? &tuner : nullptr;
    opts.reproducer_dir = (std::filesystem::temp_directory_path() / "tessera-runner-test-whole").string();
    Graph g = chain_graph(12);
    auto stop = std::make_unique<TorchOp>();
    stop->target = "stop";
    g.add("bad", std::move(stop), {"n11"}, TensorType{{4, 8}, DType::F32});
    Graph expected = g;
    DiagnosticEngine ignored;
    RandomChoiceSource same_tuner(3);
    RunnerOptions first = opts;
    first.tuner = with_tuner ? &same_tuner : nullptr;
    ASSERT_TRUE(PipelineRunner(reg, torch_pipeline({"tile_kernels"}, 2), first).run(expected, ignored));

    DiagnosticEngine diags;
    Status st = PipelineRunner(reg, spec, opts).run(g, diags);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().node, "bad");
    EXPECT_TRUE(g.find("n0")->op_as<TorchOp>()->attrs.has("seen"));  // the pass did change g
    const std::string reproducer = read_file(std::filesystem::path(opts.reproducer_dir) / "input.json");
    EXPECT_EQ(reproducer, graph_to_json_text(expected)) << (with_tuner ? "with a tuner" : "replayed");
    EXPECT_EQ(reproducer.find("\"seen\""), std::string::npos);
    std::filesystem::remove_all(opts.reproducer_dir);
  }
}

}  // namespace
}  // namespace tessera

// PipelineRunner: stage ordering, knob pinning per pipeline, -vv diffs, and independence of two
// pipelines run in one process (sequentially and on two threads at once).
#include <gtest/gtest.h>

#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/ir/printer.h"
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

Registry make_registry() {
  Registry r;
  r.begin_plugin(PluginRecord{"<test>", "test", "0", {}});
  r.add_pass("choose_tile", [] { return std::make_unique<ChooseTilePass>(); });
  EXPECT_TRUE(r.end_plugin());
  return r;
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

  RandomChoiceSource sampler(7);
  opts.tuner = &sampler;
  std::set<int64_t> values;
  for (int i = 0; i < 40; ++i) {
    Graph h = make_graph();
    ASSERT_TRUE(PipelineRunner(reg, spec, opts).run(h, diags));
    values.insert(chosen_tile(h));
    EXPECT_EQ(h.find("relu")->choices.at(0).source, "sampled");
  }
  EXPECT_GT(values.size(), 1u);  // the sampler explores
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

}  // namespace
}  // namespace tessera

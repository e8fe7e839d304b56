// Tests of the host side of tuning: keyed decisions with kernel sharing and the thread pool on,
// task extraction, one trial of a task through the pipeline, replaying tuned decisions, and the
// budget split over tasks and shards.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "framework/src/tune/pipeline_trial_runner.h"
#include "framework/src/tune/program_tuning.h"
#include "framework/src/tune/tuned_choice_source.h"
#include "framework/src/tune/tuning_task.h"
#include "support/built_plugins.h"
#include "support/test_paths.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/kernel_identity.h"
#include "tessera/target/kernel_report.h"

namespace tessera {
namespace {

using test::BuiltPluginsTest;

// Scores a compiled task by its kernels' roofline bounds plus a per-block cost, so schedules with
// more and smaller launches differ: a deterministic stand-in for a measurer.
class RooflineMeasurer final : public Measurer {
 public:
  explicit RooflineMeasurer(const DeviceDesc& d) : device_(d) {}
  std::string_view name() const override { return "roofline"; }
  Dialect needs_stage() const override { return Dialect::Kernel; }
  Measurement measure(const Graph& g) override {
    Measurement m;
    Expected<std::vector<KernelReport>> reports = KernelReport::of_program(g);
    if (!reports) {
      m.error = reports.error().render();
      return m;
    }
    for (const KernelReport& r : *reports)
      m.latency_us += KernelBound::on(r, device_, 0).bound_us() + 1e-4 * static_cast<double>(r.blocks()) + 2.0;
    m.ok = true;
    return m;
  }

 private:
  const DeviceDesc& device_;
};

// Records every request it sees, answers none.
class RecordingSource final : public ChoiceSource {
 public:
  std::string_view name() const override { return "tuner"; }
  std::optional<AttrValue> choose(const ChoiceRequest& r) override {
    std::lock_guard<std::mutex> lock(mutex_);
    keys.push_back(r.key);
    nodes.insert(r.node.id());
    return std::nullopt;
  }
  std::mutex mutex_;
  std::vector<DecisionKey> keys;
  std::set<std::string> nodes;
};

class TuningTaskTest : public BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    ASSERT_NE(h100(), nullptr);
    Expected<PipelineSpec> p = load_pipeline_file(test::default_pipeline_path());
    ASSERT_TRUE(p) << p.error().render();
    pipeline_ = std::move(*p);
  }

  // Two layers of the same shape: x -> rmsnorm -> @w1 -> rmsnorm -> @w2.
  static constexpr const char* kTwoLayers =
      "x = torch.randn(8, 256)\n"
      "w1 = torch.randn(256, 256)\n"
      "w2 = torch.randn(256, 256)\n"
      "h = torch.relu(x @ w1)\n"
      "torch.relu(h @ w2)";

  Graph to_loop(const std::string& program) {
    Graph g = trace(program);
    RunnerOptions o;
    o.stop_after = Dialect::Loop;
    o.device = h100();
    std::ostringstream sink;
    o.out = &sink;
    o.err = &sink;
    DiagnosticEngine diags;
    Status st = PipelineRunner(host_->registry(), pipeline_, o).run(g, diags);
    EXPECT_TRUE(st) << st.error().render();
    return g;
  }

  PipelineSpec pipeline_;
};

TEST_F(TuningTaskTest, EqualKernelsAreOneTaskWeightedByTheirCount) {
  Graph g = to_loop(kTwoLayers);
  Expected<std::vector<TuningTaskGraph>> tasks = extract_tuning_tasks(g);
  ASSERT_TRUE(tasks) << tasks.error().render();
  ASSERT_EQ(tasks->size(), 1u) << print_graph(g);
  EXPECT_EQ((*tasks)[0].task.weight, 2);
  EXPECT_EQ((*tasks)[0].members.size(), 2u);
  // The task's graph holds the kernel alone, and its hash is the task's.
  const Graph& alone = (*tasks)[0].graph;
  const Node* kernel = alone.find(alone.outputs().at(0));
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel_structural_hash(alone, *kernel), std::optional<uint64_t>((*tasks)[0].task.hash));
}

TEST_F(TuningTaskTest, DifferentShapesAreDifferentTasks) {
  Graph g = to_loop("x = torch.randn(8, 256)\nw1 = torch.randn(256, 512)\nw2 = torch.randn(512, 256)\n(x @ w1) @ w2");
  Expected<std::vector<TuningTaskGraph>> tasks = extract_tuning_tasks(g);
  ASSERT_TRUE(tasks) << tasks.error().render();
  ASSERT_EQ(tasks->size(), 2u);
  EXPECT_NE((*tasks)[0].task.hash, (*tasks)[1].task.hash);
  EXPECT_EQ((*tasks)[0].task.weight, 1);
}

// With a source attached, equal kernels are still scheduled once (one set of asks), and the
// result does not depend on the thread count.
TEST_F(TuningTaskTest, SourcesKeepKernelSharingAndThreadsOn) {
  auto compile = [&](int threads, ChoiceSource* source) {
    Graph g = trace(kTwoLayers);
    PipelineSpec p = pipeline_;
    p.threads = threads;
    RunnerOptions o;
    o.stop_after = Dialect::Kernel;
    o.device = h100();
    o.tuner = source;
    std::ostringstream sink;
    o.out = &sink;
    o.err = &sink;
    DiagnosticEngine diags;
    Status st = PipelineRunner(host_->registry(), p, o).run(g, diags);
    EXPECT_TRUE(st) << st.error().render();
    return g;
  };
  RecordingSource recording;
  Graph shared = compile(1, &recording);
  ASSERT_FALSE(recording.keys.empty());
  // Only one of the two matmul kernels was asked about by the kernel passes.
  std::set<std::string> matmul_like;
  for (const std::string& id : recording.nodes) matmul_like.insert(id);
  EXPECT_LE(matmul_like.size(), 3u) << "asked about: " << ::testing::PrintToString(recording.nodes);

  RandomChoiceSource a(17), b(17);
  EXPECT_EQ(print_graph(compile(1, &a)), print_graph(compile(2, &b)));
  // Both layers' kernels got the same sampled schedule: the first layer's kernels' knob values
  // equal the second layer's, kernel by kernel.
  Graph sampled = compile(2, &a);
  std::vector<std::vector<AttrValue>> values;
  for (const Node* n : sampled.nodes()) {
    if (!n->op_as<KernelOp>()) continue;
    values.emplace_back();
    for (const KnobChoice& c : n->choices) values.back().push_back(c.value);
  }
  ASSERT_EQ(values.size() % 2, 0u);
  ASSERT_FALSE(values.empty());
  const size_t half = values.size() / 2;
  for (size_t i = 0; i < half; ++i) EXPECT_EQ(values[i], values[half + i]) << "kernel " << i;
}

TEST_F(TuningTaskTest, TrialsFixDecisionsAndReportTheTreeInPipelineOrder) {
  Graph g = to_loop("x = torch.randn(64, 512)\nw = torch.randn(512, 256)\nx @ w");
  Expected<std::vector<TuningTaskGraph>> tasks = extract_tuning_tasks(g);
  ASSERT_TRUE(tasks);
  ASSERT_EQ(tasks->size(), 1u);
  RooflineMeasurer measurer(*h100());
  PipelineTrialRunner runner(host_->registry(), pipeline_, *h100(), (*tasks)[0].graph, measurer);

  TrialResult heuristic = runner.run(TrialSpec{});
  ASSERT_TRUE(heuristic.ok) << heuristic.error;
  ASSERT_GE(heuristic.decisions.size(), 2u);
  for (const DecisionPoint& d : heuristic.decisions) {
    EXPECT_GT(d.candidates.size(), 1u) << d.key.str();
    EXPECT_EQ(d.chosen, d.heuristic) << d.key.str();
  }
  for (size_t i = 1; i < heuristic.decisions.size(); ++i)
    EXPECT_FALSE(marker_before(heuristic.decisions[i].marker, heuristic.decisions[i - 1].marker))
        << heuristic.decisions[i - 1].marker << " then " << heuristic.decisions[i].marker;

  // Fixing the first decision to another candidate changes what the trial chose there.
  const DecisionPoint& first = heuristic.decisions[0];
  AttrValue other = first.candidates[0] == first.heuristic ? first.candidates[1] : first.candidates[0];
  TrialSpec spec;
  spec.fixed[first.key] = other;
  TrialResult fixed = runner.run(spec);
  ASSERT_FALSE(fixed.decisions.empty());
  EXPECT_EQ(fixed.decisions[0].key, first.key);
  EXPECT_EQ(fixed.decisions[0].chosen, other);

  // The same spec twice: the same decisions and latency (deterministic).
  TrialResult again = runner.run(spec);
  EXPECT_EQ(again.latency_us, fixed.latency_us);
  ASSERT_EQ(again.decisions.size(), fixed.decisions.size());
  for (size_t i = 0; i < again.decisions.size(); ++i) EXPECT_EQ(again.decisions[i].chosen, fixed.decisions[i].chosen);

  // Random rollouts reach other schedules than the heuristic's.
  std::set<std::string> schedules;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    TrialSpec random;
    random.rollout_seed = seed;
    TrialResult r = runner.run(random);
    std::string s;
    for (const DecisionPoint& d : r.decisions) s += d.key.str() + "=" + attr_str(d.chosen) + ";";
    schedules.insert(s);
  }
  EXPECT_GT(schedules.size(), 1u);
}

// A trial's decisions, replayed on the whole program, give its kernel the trial's schedule, every
// layer's copy of it too, each choice recorded as "tuned".
TEST_F(TuningTaskTest, ReplayedDecisionsReproduceTheTrialInTheProgram) {
  Graph g = to_loop(kTwoLayers);
  Expected<std::vector<TuningTaskGraph>> tasks = extract_tuning_tasks(g);
  ASSERT_TRUE(tasks);
  RooflineMeasurer measurer(*h100());
  PipelineTrialRunner runner(host_->registry(), pipeline_, *h100(), (*tasks)[0].graph, measurer);
  TrialSpec random;
  random.rollout_seed = 5;
  TrialResult trial = runner.run(random);
  ASSERT_TRUE(trial.ok) << trial.error;

  TuningRecord record;
  record.key.kernel = (*tasks)[0].task.hash;
  for (const DecisionPoint& d : trial.decisions) record.decisions.push_back(Decision{d.key, d.chosen});
  TunedChoiceSource replay({record});

  Graph program = trace(kTwoLayers);
  RunnerOptions o;
  o.stop_after = Dialect::Kernel;
  o.device = h100();
  o.replay = &replay;
  std::ostringstream sink;
  o.out = &sink;
  o.err = &sink;
  DiagnosticEngine diags;
  ASSERT_TRUE(PipelineRunner(host_->registry(), pipeline_, o).run(program, diags));
  // Every choice of a knob the trial decided was replayed ("tuned") with one of the trial's values
  // for that knob (the trial's task holds the partial and combine kernels of both layers' kernel).
  int kernels = 0, tuned = 0;
  for (const Node* n : program.nodes()) {
    if (!n->op_as<KernelOp>()) continue;
    ++kernels;
    for (const KnobChoice& c : n->choices) {
      bool decided = false, same_value = false;
      for (const DecisionPoint& d : trial.decisions)
        if (d.key.pass == c.pass && d.key.knob == c.knob) {
          decided = true;
          same_value = same_value || d.chosen == c.value;
        }
      if (!decided) continue;
      ++tuned;
      EXPECT_EQ(c.source, "tuned") << n->id() << ": " << c.pass << "." << c.knob;
      EXPECT_TRUE(same_value) << n->id() << ": " << c.pass << "." << c.knob << "=" << attr_str(c.value);
    }
  }
  EXPECT_GT(tuned, 0);
  EXPECT_EQ(kernels % 2, 0);
}

TEST(TrialBudgetTest, SplitsByWeightWithAFloorAndSumsToTheBudget) {
  std::vector<TuneTask> tasks = {{1, "a", 28}, {2, "b", 1}, {3, "c", 1}, {4, "d", 2}};
  TuningBudget b;
  b.trials = 200;
  b.min_trials_per_task = 8;
  std::vector<int64_t> s = split_trial_budget(tasks, b);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0] + s[1] + s[2] + s[3], 200);
  for (int64_t n : s) EXPECT_GE(n, 8);
  EXPECT_GT(s[0], s[3]);
  EXPECT_GE(s[3], s[1]);
  // Fewer trials than floors: every task still gets its floor.
  b.trials = 10;
  s = split_trial_budget(tasks, b);
  for (int64_t n : s) EXPECT_EQ(n, 8);
  // Default: 64 a task.
  b.trials = 0;
  s = split_trial_budget(tasks, b);
  EXPECT_EQ(s[0] + s[1] + s[2] + s[3], 256);
}

TEST(TrialBudgetTest, ShardsPartitionTheTasks) {
  for (int count : {1, 2, 3, 5}) {
    std::map<size_t, int> owners;
    for (int shard = 0; shard < count; ++shard)
      for (size_t t = 0; t < 11; ++t)
        if (in_shard(t, shard, count)) ++owners[t];
    ASSERT_EQ(owners.size(), 11u);
    for (const auto& [t, n] : owners) EXPECT_EQ(n, 1) << "task " << t << " in " << n << " of " << count << " shards";
  }
}

}  // namespace
}  // namespace tessera

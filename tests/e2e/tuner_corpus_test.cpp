// The tuner against exhaustive search: for every kernel of the op corpus whose decision tree is
// small enough to enumerate (at most kMaxLeaves complete schedules), the mcts tuner, scored by the
// cost model, finds a schedule within 3% of the exhaustive best in at most 64 trials.
// bench/tuner-trials.md is this test's output (how many trials each kernel needed to get within
// 3%), checked like a golden: TESSERA_UPDATE_GOLDENS=1 rewrites it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>

#include "framework/src/tune/pipeline_trial_runner.h"
#include "framework/src/tune/tuning_task.h"
#include "support/built_plugins.h"
#include "support/program_corpus.h"
#include "support/test_paths.h"
#include "tessera/target/cost_model.h"
#include "tessera/tune/cost_model_measurer.h"

namespace tessera {
namespace {

constexpr const char* kTablePath = TESSERA_SOURCE_DIR "/bench/tuner-trials.md";
constexpr int64_t kMaxLeaves = 96;
constexpr int64_t kTrialBudget = 64;
constexpr double kWithin = 1.03;

// Every complete schedule of a task, enumerated depth-first through the lazily revealed tree: a
// trial fixes a prefix and the heuristic answers the rest; the first decision it met beyond the
// prefix branches. nullopt when there are more than `max_leaves` schedules.
struct Enumeration {
  double best_us = 0;
  int64_t leaves = 0;
  bool complete = true;
};

class Enumerator {
 public:
  Enumerator(TrialRunner& runner, int64_t max_leaves) : runner_(runner), max_leaves_(max_leaves) {}

  Enumeration run() {
    TrialResult heuristic = runner_.run(TrialSpec{});
    // The heuristic trajectory's candidate counts multiplied: the tree's size when its branches
    // look alike. Far above the cap, the tree is not enumerated at all.
    double estimate = 1;
    for (const DecisionPoint& d : heuristic.decisions) estimate *= static_cast<double>(d.candidates.size());
    if (estimate > 4.0 * static_cast<double>(max_leaves_)) {
      result_.complete = false;
      return result_;
    }
    visit(TrialSpec{}, heuristic);
    return result_;
  }

 private:
  void visit(const TrialSpec& spec, const TrialResult& r) {
    if (!result_.complete) return;
    const DecisionPoint* branch = nullptr;
    for (const DecisionPoint& d : r.decisions)
      if (!spec.fixed.count(d.key)) {
        branch = &d;
        break;
      }
    if (branch == nullptr) {
      if (++result_.leaves > max_leaves_) {
        result_.complete = false;
        return;
      }
      if (r.ok && (result_.best_us == 0 || r.latency_us < result_.best_us)) result_.best_us = r.latency_us;
      return;
    }
    const DecisionPoint point = *branch;  // r may be replaced below
    for (const AttrValue& c : point.candidates) {
      TrialSpec next = spec;
      next.fixed[point.key] = c;
      // The heuristic's child is the trial just run (the rollout answered the heuristic there).
      visit(next, c == point.chosen ? r : runner_.run(next));
      if (!result_.complete) return;
    }
  }

  TrialRunner& runner_;
  int64_t max_leaves_;
  Enumeration result_;
};

class TunerCorpusTest : public test::BuiltPluginsTest {};

TEST_F(TunerCorpusTest, MctsGetsWithinThreePercentOfExhaustiveIn64Trials) {
  ASSERT_TRUE(load_error_.empty()) << load_error_;
  const DeviceDesc* device = h100();
  ASSERT_NE(device, nullptr);
  Expected<PipelineSpec> pipeline = load_pipeline_file(test::default_pipeline_path());
  ASSERT_TRUE(pipeline) << pipeline.error().render();
  Expected<CostModel> model = CostModel::load_default();
  ASSERT_TRUE(model) << model.error().render();
  CostModelMeasurer measurer(*model, *device);
  std::unique_ptr<Tuner> tuner = host_->registry().make_tuner("mcts");
  ASSERT_NE(tuner, nullptr);

  std::ostringstream rows;
  int enumerated = 0, too_large = 0;
  std::map<uint64_t, bool> seen;  // a kernel shape met in several programs is checked once
  std::vector<int64_t> trials_needed;
  for (const test::CorpusProgram& program : test::differential_corpus()) {
    Graph g = trace(program.text);
    RunnerOptions o;
    o.stop_after = Dialect::Loop;
    o.device = device;
    std::ostringstream sink;
    o.out = &sink;
    o.err = &sink;
    DiagnosticEngine diags;
    ASSERT_TRUE(PipelineRunner(host_->registry(), *pipeline, o).run(g, diags)) << program.name;
    Expected<std::vector<TuningTaskGraph>> tasks = extract_tuning_tasks(g);
    ASSERT_TRUE(tasks) << program.name;
    for (const TuningTaskGraph& task : *tasks) {
      if (!seen.emplace(task.task.hash, true).second) continue;
      PipelineTrialRunner runner(host_->registry(), *pipeline, *device, task.graph, measurer);
      Enumeration all = Enumerator(runner, kMaxLeaves).run();
      if (!all.complete) {
        ++too_large;
        continue;
      }
      if (all.leaves <= 1 || all.best_us <= 0) continue;  // nothing to choose, or nothing compiles
      ++enumerated;
      TuneOptions options;
      options.max_trials = kTrialBudget;
      options.seed = task.task.hash;
      Expected<std::unique_ptr<TaskSearch>> search = tuner->start(task.task, runner, options);
      ASSERT_TRUE(search) << search.error().render();
      int64_t needed = 0;
      // The best only improves: the search can stop once it is within 3%.
      while (!(*search)->done() && needed == 0) {
        (*search)->step();
        const TuneBest& best = (*search)->best();
        if (best.found && best.latency_us <= kWithin * all.best_us) needed = (*search)->trials();
      }
      const TuneBest& best = (*search)->best();
      ASSERT_TRUE(best.found) << program.name << " " << task.task.name;
      EXPECT_LE(best.latency_us, kWithin * all.best_us)
          << program.name << " kernel " << task.task.name << ": best of " << (*search)->trials() << " trials "
          << best.latency_us << " us, exhaustive best over " << all.leaves << " schedules " << all.best_us << " us";
      EXPECT_LE((*search)->trials(), kTrialBudget);
      trials_needed.push_back(needed);
      rows << "| " << program.name << " | `" << task.task.name << "` | " << all.leaves << " | " << std::fixed
           << std::setprecision(3) << all.best_us << " | " << needed << " |\n";
    }
  }
  EXPECT_GT(enumerated, 20) << "too few kernels with an enumerable tree: the check says little";

  std::sort(trials_needed.begin(), trials_needed.end());
  auto percentile = [&](double p) {
    if (trials_needed.empty()) return int64_t{0};
    return trials_needed[std::min(trials_needed.size() - 1, static_cast<size_t>(p * trials_needed.size()))];
  };
  std::ostringstream table;
  table << "# Trials to within 3% of the exhaustive best\n\n"
        << "The mcts tuner (default options) against exhaustive search, scored by the analytic cost model "
           "(docs/cost-model.md) for the h100, on every distinct kernel of the op corpus "
           "(`tests/support/program_corpus.h`) whose decision tree has at most "
        << kMaxLeaves << " complete schedules under `pipelines/default.yaml` (" << enumerated << " kernels; "
        << too_large << " have larger trees). Produced by `TunerCorpusTest` "
        << "(`TESSERA_UPDATE_GOLDENS=1 build/bin/tessera_tests --gtest_filter='TunerCorpusTest.*'`); "
           "trial 1 is the heuristic schedule, so 1 means the heuristic was already within 3%.\n\n"
        << "Trials needed: median " << percentile(0.5) << ", 90th percentile " << percentile(0.9) << ", worst "
        << (trials_needed.empty() ? 0 : trials_needed.back()) << " (budget " << kTrialBudget << ").\n\n"
        << "| program | kernel | schedules | best (us, cost model) | trials to 3% |\n|---|---|---:|---:|---:|\n"
        << rows.str();
  if (const char* update = std::getenv("TESSERA_UPDATE_GOLDENS"); update != nullptr && std::string(update) == "1") {
    std::ofstream(kTablePath) << table.str();
    return;
  }
  std::ifstream in(kTablePath);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(table.str(), expected.str())
      << "bench/tuner-trials.md is out of date: rerun with TESSERA_UPDATE_GOLDENS=1 build/bin/tessera_tests "
         "--gtest_filter='TunerCorpusTest.*' and review the diff";
}

}  // namespace
}  // namespace tessera

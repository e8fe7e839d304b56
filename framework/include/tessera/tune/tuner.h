// Tuner: searches the knob decisions of one tuning task (docs/tuning.md).
//
// A task is one distinct kernel of a program as it enters the tile stage (kernels equal up to
// buffer names are one task, weighted by how many there are). The host compiles the task's kernel
// through the rest of the pipeline once per trial, answering the decisions the trial fixes and
// leaving the others to the trial's rollout, and measures the result (on the GPU, or with the cost
// model). The tuner only sees trials: it never compiles or measures anything itself, so any search
// can drive any measurer, and tests can drive a tuner with a synthetic TrialRunner.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/knob.h"
#include "tessera/pass/pass_context.h"
#include "tessera/support/status.h"
#include "tessera/tune/decision.h"

namespace tessera {

// What one trial fixes. Decisions not in `fixed` are answered by the rollout: the heuristic when
// rollout_seed is 0, else RandomChoiceSource(rollout_seed) (a function of the key, so repeatable).
struct TrialSpec {
  std::map<DecisionKey, AttrValue> fixed;
  uint64_t rollout_seed = 0;
};

struct TrialResult {
  // Every decision the compile asked, in pipeline order (sorted by marker, then key), each once,
  // with the value it got.
  std::vector<DecisionPoint> decisions;
  bool ok = false;          // compiled and measured (a wrong or failed candidate is not ok)
  double latency_us = 0;    // the task's kernels run once, when ok
  std::string error;        // why not ok
};

// Compiles and measures one trial of one task. Deterministic for a deterministic measurer.
class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  virtual TrialResult run(const TrialSpec& spec) = 0;
  // A cheap analytic estimate of the trial's latency (the cost model) when the runner measures
  // some other way (on the GPU): a prior the tuner may rank untried values by. nullopt when the
  // runner has none, or the trial does not compile.
  virtual std::optional<double> estimate(const TrialSpec& spec) { return std::nullopt; }
};

struct TuneTask {
  uint64_t hash = 0;      // kernel_structural_hash of the task's kernel at the tile stage's entry
  std::string name;       // the first kernel's node id, for progress lines
  int64_t weight = 1;     // how many kernels of the program it stands for
};

// Budget and options of one task's search. The host fills the budget from the pipeline's `tuner:`
// section and the command line; `options` are the tuner plugin's own (validated against options()).
struct TuneOptions {
  int64_t max_trials = 64;   // trials for this task
  int64_t patience = 0;      // stop after this many trials without improvement (0 = never)
  uint64_t seed = 0;         // the search's seed (the host derives one per task from its hash)
  std::vector<KnobPin> options;
};

struct TuneBest {
  bool found = false;
  double latency_us = 0;
  std::vector<Decision> decisions;  // every decision of the best trial, in pipeline order
};

// One task's search, advanced a trial at a time so that the host can interleave tasks.
class TaskSearch {
 public:
  virtual ~TaskSearch() = default;
  // Runs one more trial (the first is the heuristic schedule). Returns its result.
  virtual TrialResult step() = 0;
  // True once the search stops: budget or patience spent, or the tree exhausted.
  virtual bool done() const = 0;
  virtual int64_t trials() const = 0;
  virtual const TuneBest& best() const = 0;
};

class Tuner {
 public:
  virtual ~Tuner() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  // Options read from the pipeline's `tuner:` section (validated like pass knobs).
  virtual std::vector<KnobSpec> options() const { return {}; }
  // A search of `task` driving `runner` (which must outlive the search). An error when an option
  // is invalid.
  virtual Expected<std::unique_ptr<TaskSearch>> start(const TuneTask& task, TrialRunner& runner,
                                                      const TuneOptions& options) const = 0;
};

}  // namespace tessera

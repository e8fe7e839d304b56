// ProgramTuning: tunes the tasks of a program with a tuner plugin, a measurer and a trial budget
// (docs/tuning.md), and hands each task's result to an observer (the CLI writes them to the
// tuning database and prints progress).
//
// The budget is split over the tasks before any trial runs, by weight (a kernel that runs in 28
// layers counts 28 times) with a floor per task, so each task's search is the same whether the
// program is tuned whole or sharded (`--shard I/N` takes every N-th task): merging the shards'
// databases equals tuning unsharded with the same seed and measurer. While tasks remain, the next
// trial goes to the task with the largest expected gain (Ansor's task scheduler: weight x latency
// x recent relative improvement, plus an exploration term); that order decides which tasks have
// progressed when a time budget runs out. With `jobs` above 1, that many tasks are searched at
// once, on threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "tessera/support/status.h"
#include "tessera/tune/tuner.h"
#include "tuning_task.h"

namespace tessera {

struct TuningBudget {
  int64_t trials = 0;            // over all tasks of the program (0: 64 per task)
  int64_t min_trials_per_task = 8;
  int64_t max_trials_per_task = 0;  // 0: no cap beyond the split
  int64_t patience = 0;          // per task (0: never)
  double time_budget_s = 0;      // wall-clock for this run (0: none); every task still runs its
                                 // first trial (the heuristic schedule) when it is spent
  uint64_t seed = 1;
  int shard_index = 0, shard_count = 1;
  // Tasks searched at once (each task's trials run one after another, so the results are the
  // same for any count; only the order of the progress lines changes). The runners made by the
  // factory and their measurers must then be usable from several threads.
  int jobs = 1;
};

// The trials each task gets: by weight, at least min_trials_per_task, summing to about `trials`.
std::vector<int64_t> split_trial_budget(const std::vector<TuneTask>& tasks, const TuningBudget& budget);

// The tasks shard `index` of `count` tunes: every count-th from `index`.
bool in_shard(size_t task_index, int shard_index, int shard_count);

struct TaskOutcome {
  TuneTask task;
  int64_t trials = 0;
  int64_t budget = 0;
  double heuristic_us = 0;  // the first trial's (the heuristic schedule), 0 when it failed
  TuneBest best;
  int64_t failed = 0;       // trials that failed to compile or measure
  std::string first_error;  // the first failed trial's reason
};

class TuningObserver {
 public:
  virtual ~TuningObserver() = default;
  virtual void on_trial(const TaskOutcome& task, const TrialResult& trial) {}
  virtual void on_task_done(const TaskOutcome& task) {}
};

// Makes the trial runner of task `index` (alive until its search is done).
using TrialRunnerFactory = std::function<std::unique_ptr<TrialRunner>(size_t index)>;

// Tunes the shard's tasks of `tasks`. Outcomes in task order (the shard's tasks only).
Expected<std::vector<TaskOutcome>> tune_program(const Tuner& tuner, const std::vector<TuneTask>& tasks,
                                                const TrialRunnerFactory& runners, const TuningBudget& budget,
                                                const std::vector<KnobPin>& tuner_options, TuningObserver& observer);

}  // namespace tessera

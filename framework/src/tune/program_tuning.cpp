// Tuning a program's tasks under one budget (see program_tuning.h).
#include "program_tuning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

namespace tessera {

namespace {


struct ActiveTask {
  size_t index;
  std::unique_ptr<TrialRunner> runner;
  std::unique_ptr<TaskSearch> search;
  TaskOutcome outcome;
  std::vector<double> best_history;  // the best latency after each trial (0 = none yet)
  bool busy = false;                 // a worker is running one of its trials
};

// Expected gain of one more trial: weight x current latency x (recent relative improvement +
// an exploration term that shrinks with the trials spent).
double priority(const ActiveTask& t) {
  const double best = t.outcome.best.found ? t.outcome.best.latency_us : 1.0;
  double recent = 0;
  const size_t n = t.best_history.size();
  const size_t window = 8;
  if (n > window && t.best_history[n - 1 - window] > 0 && t.best_history[n - 1] > 0)
    recent = (t.best_history[n - 1 - window] - t.best_history[n - 1]) / t.best_history[n - 1 - window];
  return static_cast<double>(std::max<int64_t>(1, t.outcome.task.weight)) * best * (recent + 1.0 / static_cast<double>(n + 1));
}

}  // namespace

std::vector<int64_t> split_trial_budget(const std::vector<TuneTask>& tasks, const TuningBudget& budget) {
  std::vector<int64_t> out(tasks.size(), 0);
  if (tasks.empty()) return out;
  const int64_t floor = std::max<int64_t>(1, budget.min_trials_per_task);
  const int64_t total = budget.trials > 0 ? budget.trials : 64 * static_cast<int64_t>(tasks.size());
  int64_t weight_sum = 0;
  for (const TuneTask& t : tasks) weight_sum += std::max<int64_t>(1, t.weight);
  // Largest-remainder split of what is left after the floors, so the shares sum exactly.
  const int64_t spare = std::max<int64_t>(0, total - floor * static_cast<int64_t>(tasks.size()));
  std::vector<std::pair<double, size_t>> remainders;
  int64_t given = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const double share = static_cast<double>(spare) * static_cast<double>(std::max<int64_t>(1, tasks[i].weight)) /
                         static_cast<double>(weight_sum);
    out[i] = floor + static_cast<int64_t>(std::floor(share));
    given += static_cast<int64_t>(std::floor(share));
    remainders.emplace_back(share - std::floor(share), i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t r = 0; r < remainders.size() && given < spare; ++r, ++given) ++out[remainders[r].second];
  if (budget.max_trials_per_task > 0)
    for (int64_t& n : out) n = std::min(n, budget.max_trials_per_task);
  return out;
}

bool in_shard(size_t task_index, int shard_index, int shard_count) {
  return shard_count <= 1 || static_cast<int>(task_index % static_cast<size_t>(shard_count)) == shard_index;
}

Expected<std::vector<TaskOutcome>> tune_program(const Tuner& tuner, const std::vector<TuneTask>& tasks,
                                                const TrialRunnerFactory& runners, const TuningBudget& budget,
                                                const std::vector<KnobPin>& tuner_options, TuningObserver& observer) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int64_t> shares = split_trial_budget(tasks, budget);
  std::vector<ActiveTask> active;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!in_shard(i, budget.shard_index, budget.shard_count)) continue;
    ActiveTask t;
    t.index = i;
    t.outcome.task = tasks[i];
    t.outcome.budget = shares[i];
    t.runner = runners(i);
    TuneOptions options;
    options.max_trials = shares[i];
    options.patience = budget.patience;
    // Each task's own seed: the same whichever shard tunes it.
    options.seed = hash_mix(budget.seed ^ hash_mix(tasks[i].hash));
    options.options = tuner_options;
    TESSERA_ASSIGN_OR_RETURN(t.search, tuner.start(tasks[i], *t.runner, options));
    active.push_back(std::move(t));
  }

  auto out_of_time = [&] {
    if (budget.time_budget_s <= 0) return false;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= budget.time_budget_s;
  };
  auto finish = [&](ActiveTask& t) {
    t.outcome.best = t.search->best();
    observer.on_task_done(t.outcome);
    t.search.reset();
    t.runner.reset();
  };

  // Workers step different tasks at once; a task is stepped by one worker at a time, so each
  // task's trials (and its outcome) are the same for any number of jobs. Choosing, recording and
  // the observer's calls happen under one lock.
  std::mutex mutex;
  auto work = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      // Out of time, only tasks that have not run their first (heuristic) trial still get it, so
      // every task records a schedule.
      const bool late = out_of_time();
      ActiveTask* next = nullptr;
      double next_priority = -1;
      for (ActiveTask& t : active) {
        if (!t.search || t.busy) continue;
        if (t.search->done() || (late && t.outcome.trials > 0)) {
          if (!late || t.search->done()) finish(t);
          continue;
        }
        const double p = priority(t);
        if (p > next_priority) {
          next_priority = p;
          next = &t;
        }
      }
      if (next == nullptr) break;  // every task is done or being stepped by another worker
      next->busy = true;
      lock.unlock();
      TrialResult r = next->search->step();
      lock.lock();
      next->busy = false;
      TaskOutcome& o = next->outcome;
      ++o.trials;
      if (!r.ok && o.failed++ == 0) o.first_error = r.error;
      if (o.trials == 1 && r.ok) o.heuristic_us = r.latency_us;
      o.best = next->search->best();
      next->best_history.push_back(o.best.found ? o.best.latency_us : 0);
      observer.on_trial(o, r);
      if (next->search->done()) finish(*next);
    }
  };
  const int jobs = std::max(1, std::min<int>(budget.jobs, static_cast<int>(active.size())));
  std::vector<std::thread> workers;
  for (int j = 1; j < jobs; ++j) workers.emplace_back(work);
  work();
  for (std::thread& w : workers) w.join();
  // Out of time (or a worker left while others still stepped): finish what is left.
  for (ActiveTask& t : active)
    if (t.search) finish(t);

  std::vector<TaskOutcome> outcomes;
  for (ActiveTask& t : active) outcomes.push_back(std::move(t.outcome));
  return outcomes;
}

}  // namespace tessera

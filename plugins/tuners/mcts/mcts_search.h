// MctsSearch: one task's SP-MCTS search, a trial per step() (docs/tuner-mcts.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "mcts_options.h"
#include "search_tree.h"
#include "tessera/tune/tuner.h"

namespace tessera::mcts {

class MctsSearch final : public TaskSearch {
 public:
  MctsSearch(TrialRunner& runner, const TuneOptions& budget, const MctsOptions& options);

  TrialResult step() override;
  bool done() const override;
  int64_t trials() const override { return trials_; }
  const TuneBest& best() const override { return best_; }

 private:
  // The next trial's spec and the expansion it explores; nullopt when nothing is left to try.
  std::optional<std::pair<TrialSpec, std::optional<Expansion>>> next_trial();
  uint64_t rollout_seed();
  void take(const TrialResult& result);
  // The runner's estimate of a trial fixing `fixed` (with the rollout's values below), cached.
  std::optional<double> estimate(const std::map<DecisionKey, AttrValue>& fixed);

  TrialRunner& runner_;
  int64_t max_trials_;
  int64_t patience_;
  MctsOptions options_;
  std::mt19937_64 rng_;
  SearchTree tree_;
  std::set<std::string> specs_run_;  // every TrialSpec run, printed: none runs twice
  int64_t trials_ = 0;
  int64_t since_improvement_ = 0;
  bool nothing_left_ = false;
  TuneBest best_;
  bool has_estimates_ = false;  // the runner estimated the heuristic schedule: it has a prior
  std::map<std::string, std::optional<double>> estimates_;
};

}  // namespace tessera::mcts

// MctsSearch: advances one task's SP-MCTS search a trial at a time. The first trial is the
// heuristic schedule; each later one fixes the values along the path the tree selects plus one
// untried value, and leaves the rest to the rollout; when the runner estimates trials (the cost
// model, while trials are measured on the GPU), values no trial has tried yet are taken in the
// order of their estimates. It stops on the trial budget, on patience
// (trials without a better latency) or when the tree is exhausted. A failed trial (compile or
// measurement) is a reward of 0 with its visit counted: it never stops or stalls the search.
// Deterministic: the tree is ordered by keys and values, and the only randomness (random rollout
// seeds) comes from a std::mt19937_64 seeded with TuneOptions::seed.
// Tests: tests/unit/mcts_tuner_test.cpp.
#include "mcts_search.h"

#include <cmath>
#include <utility>

namespace tessera::mcts {

namespace {

// A trial's reward: 1 / latency, or 0 for a failed trial (a latency that is not a positive finite
// number counts as a failure).
double reward_of(const TrialResult& r) {
  if (!r.ok || !std::isfinite(r.latency_us) || r.latency_us <= 0) return 0;
  return 1.0 / r.latency_us;
}

std::string spec_text(const TrialSpec& spec) {
  std::string s = std::to_string(spec.rollout_seed);
  for (const auto& [key, value] : spec.fixed) s += ";" + key.str() + "=" + knob_value_str(value);
  return s;
}

}  // namespace

MctsSearch::MctsSearch(TrialRunner& runner, const TuneOptions& budget, const MctsOptions& options)
    : runner_(runner),
      max_trials_(budget.max_trials),
      patience_(budget.patience),
      options_(options),
      rng_(budget.seed),
      tree_(SearchTree::Weights{options.ucb_c, options.prior_weight, options.widening}) {}

bool MctsSearch::done() const {
  return nothing_left_ || trials_ >= max_trials_ || (patience_ > 0 && since_improvement_ >= patience_);
}

uint64_t MctsSearch::rollout_seed() {
  switch (options_.rollout) {
    case RolloutPolicy::Heuristic:
    case RolloutPolicy::Best: return 0;
    case RolloutPolicy::Random: {
      uint64_t seed = rng_();
      return seed == 0 ? 1 : seed;  // 0 would mean the heuristic rollout
    }
  }
  return 0;
}

std::optional<double> MctsSearch::estimate(const std::map<DecisionKey, AttrValue>& fixed) {
  TrialSpec spec{fixed, 0};
  if (options_.rollout == RolloutPolicy::Best)
    for (const Decision& d : best_.decisions) spec.fixed.emplace(d.key, d.value);
  auto [it, fresh] = estimates_.try_emplace(spec_text(spec));
  if (fresh) it->second = runner_.estimate(spec);
  return it->second;
}

std::optional<std::pair<TrialSpec, std::optional<Expansion>>> MctsSearch::next_trial() {
  if (tree_.empty()) {
    // The heuristic schedule; whether the runner offers a prior is learnt from its estimate.
    has_estimates_ = estimate({}).has_value();
    return std::make_pair(TrialSpec{}, std::optional<Expansion>());
  }
  const SearchTree::Estimate prior = [this](const std::map<DecisionKey, AttrValue>& fixed) { return estimate(fixed); };
  for (;;) {
    std::optional<Expansion> e = tree_.select(has_estimates_ ? &prior : nullptr);
    if (!e) return std::nullopt;
    TrialSpec spec{e->fixed, rollout_seed()};
    if (options_.rollout == RolloutPolicy::Best) {
      // Below the explored value, the best trial's values (emplace keeps the path's own).
      for (const Decision& d : best_.decisions) spec.fixed.emplace(d.key, d.value);
    }
    if (specs_run_.insert(spec_text(spec)).second) return std::make_pair(std::move(spec), std::move(e));
    // The same spec again (possible only when trials contradicted the tree): spend the value
    // without running it, which marks it attempted, and select again.
    tree_.skip(*e);
  }
}

TrialResult MctsSearch::step() {
  if (done()) return TrialResult{{}, false, 0, "the search is done"};
  auto next = next_trial();
  if (!next) {
    nothing_left_ = true;
    return TrialResult{{}, false, 0, "every trajectory of the task's decision tree has been tried"};
  }
  if (tree_.empty()) specs_run_.insert(spec_text(next->first));
  TrialResult result = runner_.run(next->first);
  ++trials_;
  tree_.record(result.decisions, reward_of(result), next->second);
  take(result);
  if (tree_.exhausted()) nothing_left_ = true;
  return result;
}

void MctsSearch::take(const TrialResult& result) {
  const bool better = reward_of(result) > 0 && (!best_.found || result.latency_us < best_.latency_us);
  if (!better) {
    ++since_improvement_;
    return;
  }
  since_improvement_ = 0;
  best_.found = true;
  best_.latency_us = result.latency_us;
  best_.decisions.clear();
  for (const DecisionPoint& d : result.decisions) best_.decisions.push_back(Decision{d.key, d.chosen});
}

}  // namespace tessera::mcts

// MctsOptions: the mcts tuner's own options (the pipeline's `tuner:` section), typed and checked.
#pragma once

#include <vector>

#include "tessera/pass/knob.h"
#include "tessera/pass/pass_context.h"
#include "tessera/support/status.h"

namespace tessera::mcts {

// How the decisions below the expanded one are answered in a trial.
enum class RolloutPolicy {
  Heuristic,  // every pass's heuristic (TrialSpec::rollout_seed 0)
  Random,     // a fresh random seed per trial (RandomChoiceSource, a function of the key)
  Best,       // the best trial's values where it asked the same decision, else the heuristic
};

struct MctsOptions {
  double ucb_c = 1.41;        // weight of UCB1's exploration term
  double prior_weight = 0.5;  // bonus of the heuristic's child, divided by 1 + its visits
  double widening = 0.5;      // a node with v visits tries at most ceil(v^widening) of its values
  RolloutPolicy rollout = RolloutPolicy::Best;

  // The schema `Tuner::options()` declares. `patience` and `max_trials` are in it so that the
  // pipeline's `tuner:` section validates; the host reads them into TuneOptions, which the
  // search obeys.
  static std::vector<KnobSpec> specs();
  // Reads and range-checks `pins`; an error names the option (and where it was written).
  static Expected<MctsOptions> parse(const std::vector<KnobPin>& pins);
};

}  // namespace tessera::mcts

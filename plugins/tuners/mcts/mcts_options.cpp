// The mcts tuner's options: their schema (what `--print-pipeline` and pipeline validation see) and
// their parsing from the pipeline's `tuner:` section, with a range check per option. Every error
// names the option and the tuner and points at where the value was written.
// Tests: tests/unit/mcts_tuner_test.cpp (MctsTunerTest.Options*).
#include "mcts_options.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::mcts {

namespace {

constexpr const char* kRolloutHeuristic = "heuristic";
constexpr const char* kRolloutRandom = "random";
constexpr const char* kRolloutBest = "best";

// "option 'ucb_c' of tuner 'mcts' <message>, got '-1'" (the wording of the pipeline's own checks).
Diagnostic option_error(const KnobPin& pin, const std::string& message, const char* separator = ",") {
  Diagnostic d = make_error("option '" + pin.knob + "' of tuner 'mcts' " + message + separator + " got '" +
                            knob_value_str(pin.value) + "'");
  if (pin.loc.valid()) d.at(pin.loc);
  return d;
}

// A float option: an int or a float, finite and at least 0.
Expected<double> non_negative_number(const KnobPin& pin) {
  double v = 0;
  if (const auto* i = std::get_if<int64_t>(&pin.value)) v = static_cast<double>(*i);
  else if (const auto* f = std::get_if<double>(&pin.value)) v = *f;
  else return option_error(pin, "expects float");
  if (!std::isfinite(v) || v < 0) return option_error(pin, "must be a finite number >= 0");
  return v;
}

Expected<int64_t> integer_at_least(const KnobPin& pin, int64_t least) {
  const auto* i = std::get_if<int64_t>(&pin.value);
  if (!i) return option_error(pin, "expects int");
  if (*i < least) return option_error(pin, "must be an integer >= " + std::to_string(least));
  return *i;
}

}  // namespace

std::vector<KnobSpec> MctsOptions::specs() {
  const MctsOptions defaults;
  return {
      KnobSpec{"patience", KnobType::Int, {}, AttrValue(int64_t{0}),
               "stop a task after this many trials without a better latency (0 = never); read by the host"},
      KnobSpec{"max_trials", KnobType::Int, {}, AttrValue(int64_t{64}),
               "trials per task at most; read by the host"},
      KnobSpec{"ucb_c", KnobType::Float, {}, AttrValue(defaults.ucb_c),
               "weight of UCB1's exploration term (>= 0)"},
      KnobSpec{"prior_weight", KnobType::Float, {}, AttrValue(defaults.prior_weight),
               "selection bonus of each heuristic value, divided by 1 + its visits (>= 0)"},
      KnobSpec{"widening", KnobType::Float, {}, AttrValue(defaults.widening),
               "progressive widening: a node visited v times has tried at most ceil(v^widening) of its values (0 to 1)"},
      KnobSpec{"rollout", KnobType::String,
               {AttrValue(std::string(kRolloutBest)), AttrValue(std::string(kRolloutHeuristic)), AttrValue(std::string(kRolloutRandom))},
               AttrValue(std::string(kRolloutBest)),
               "how a trial answers the decisions below the one it explores: the best trial's values, the heuristics, or random values"},
  };
}

Expected<MctsOptions> MctsOptions::parse(const std::vector<KnobPin>& pins) {
  MctsOptions options;
  const std::vector<KnobSpec> known = specs();
  for (const KnobPin& pin : pins) {
    if (pin.knob == "ucb_c") {
      Expected<double> v = non_negative_number(pin);
      if (!v) return v.error();
      options.ucb_c = *v;
    } else if (pin.knob == "prior_weight") {
      Expected<double> v = non_negative_number(pin);
      if (!v) return v.error();
      options.prior_weight = *v;
    } else if (pin.knob == "widening") {
      Expected<double> v = non_negative_number(pin);
      if (!v) return v.error();
      if (*v > 1) return option_error(pin, "must be a number from 0 to 1");
      options.widening = *v;
    } else if (pin.knob == "rollout") {
      const auto* s = std::get_if<std::string>(&pin.value);
      if (!s) return option_error(pin, "expects string");
      if (*s == kRolloutBest) options.rollout = RolloutPolicy::Best;
      else if (*s == kRolloutHeuristic) options.rollout = RolloutPolicy::Heuristic;
      else if (*s == kRolloutRandom) options.rollout = RolloutPolicy::Random;
      else return option_error(pin, std::string("must be one of ") + kRolloutBest + ", " + kRolloutHeuristic + ", " + kRolloutRandom, ";");
    } else if (pin.knob == "patience") {
      Expected<int64_t> v = integer_at_least(pin, 0);
      if (!v) return v.error();
    } else if (pin.knob == "max_trials") {
      Expected<int64_t> v = integer_at_least(pin, 1);
      if (!v) return v.error();
    } else {
      std::string names;
      for (const KnobSpec& k : known) names += (names.empty() ? "" : ", ") + k.name;
      Diagnostic d = make_error("unknown option '" + pin.knob + "' of tuner 'mcts'");
      if (pin.loc.valid()) d.at(pin.loc);
      d.note("options of 'mcts': " + names);
      return d;
    }
  }
  return options;
}

}  // namespace tessera::mcts

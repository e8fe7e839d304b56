// The mcts tuner plugin: single-player Monte Carlo tree search over one task's knob decisions
// (docs/tuner-mcts.md). It accepts any task and any TrialRunner; it guarantees that the first
// trial is the heuristic schedule, that no trial spec runs twice, that failed trials never stop
// the search, and that a seed and a deterministic runner give the same trials in the same order.
// Its options are validated in start() (an error names the option).
// Tests: tests/unit/mcts_tuner_test.cpp.
#include <memory>

#include "mcts_options.h"
#include "mcts_search.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/tune/tuner.h"

namespace tessera::mcts {
namespace {

class MctsTuner final : public Tuner {
 public:
  std::string_view name() const override { return "mcts"; }
  std::string_view summary() const override {
    return "single-player MCTS over a kernel's knob decisions: UCB1 on max-normalised 1/latency plus a heuristic prior";
  }
  std::vector<KnobSpec> options() const override { return MctsOptions::specs(); }

  Expected<std::unique_ptr<TaskSearch>> start(const TuneTask&, TrialRunner& runner,
                                              const TuneOptions& options) const override {
    Expected<MctsOptions> parsed = MctsOptions::parse(options.options);
    if (!parsed) return parsed.error();
    if (options.max_trials < 1)
      return make_error("tuner 'mcts': the trial budget must be at least 1, got " + std::to_string(options.max_trials));
    if (options.patience < 0)
      return make_error("tuner 'mcts': patience must be 0 (never) or more, got " + std::to_string(options.patience));
    return std::unique_ptr<TaskSearch>(std::make_unique<MctsSearch>(runner, options, *parsed));
  }
};

void register_plugin(Registry& r) {
  r.add_tuner("mcts", [] { return std::make_unique<MctsTuner>(); });
}

}  // namespace
}  // namespace tessera::mcts

TESSERA_PLUGIN("mcts", "1.0.0", tessera::mcts::register_plugin)

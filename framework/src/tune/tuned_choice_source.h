// TunedChoiceSource: replays a tuning database's decisions. Built from the records that match the
// compile's device, compute capability, Tessera version and pipeline; answers each decision by its
// key, so every kernel of the program with a tuned counterpart (any layer, any program) gets the
// tuned schedule and every other decision falls through to the heuristic. Recorded as "tuned".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tessera/tune/choice_source.h"
#include "tessera/tune/tuning_db.h"

namespace tessera {

class TunedChoiceSource final : public ChoiceSource {
 public:
  // Records in order; where two give one key different values, the first record's wins.
  explicit TunedChoiceSource(const std::vector<TuningRecord>& records);
  std::string_view name() const override { return "tuned"; }
  std::optional<AttrValue> choose(const ChoiceRequest& request) override;
  size_t size() const { return decisions_.size(); }

 private:
  std::map<DecisionKey, AttrValue> decisions_;  // read-only after construction: thread-safe
};

}  // namespace tessera

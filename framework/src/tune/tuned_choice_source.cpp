// TunedChoiceSource: a tuning database's decisions, answered by key (see tuned_choice_source.h).
#include "tuned_choice_source.h"

namespace tessera {

TunedChoiceSource::TunedChoiceSource(const std::vector<TuningRecord>& records) {
  for (const TuningRecord& r : records)
    for (const Decision& d : r.decisions) decisions_.try_emplace(d.key, d.value);
}

std::optional<AttrValue> TunedChoiceSource::choose(const ChoiceRequest& request) {
  auto it = decisions_.find(request.key);
  if (it == decisions_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tessera

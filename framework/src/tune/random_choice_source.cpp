// RandomChoiceSource: answers every knob decision with a uniformly random candidate, drawn from
// its own seeded mt19937_64 so that a seed names one reproducible schedule.
#include "tessera/tune/choice_source.h"

#include <limits>

namespace tessera {

std::optional<AttrValue> RandomChoiceSource::choose(const ChoiceRequest& request) {
  const uint64_t n = request.candidates.size();
  if (n == 0) return std::nullopt;  // nothing to sample from: let the next source decide
  // Rejection sampling instead of std::uniform_int_distribution, whose algorithm differs between
  // standard libraries: mt19937_64's output is specified, so this is the same everywhere.
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = max - (max % n + 1) % n;  // largest value below which every residue is equally likely
  uint64_t draw = rng_();
  while (draw > limit) draw = rng_();
  return request.candidates[static_cast<size_t>(draw % n)];
}

}  // namespace tessera

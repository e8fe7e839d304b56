// RandomChoiceSource: answers every knob decision with a uniformly random candidate, drawn as a
// function of its seed and the decision's key, so that a seed names one reproducible schedule
// whatever order or thread the decisions come in.
#include "tessera/tune/choice_source.h"

namespace tessera {

size_t RandomChoiceSource::draw(uint64_t seed, const DecisionKey& key, size_t n) {
  uint64_t h = hash_mix(seed);
  h = hash_mix(h ^ key.kernel);
  h = hash_mix(hash_text(key.pass, h) ^ 0x2f);
  h = hash_mix(hash_text(key.knob, h) ^ 0x3d);
  h = hash_mix(h ^ static_cast<uint64_t>(key.ordinal));
  // The high half of the 128-bit product: uniform in [0, n) up to n / 2^64, which no test can see.
  return static_cast<size_t>((static_cast<unsigned __int128>(h) * n) >> 64);
}

std::optional<AttrValue> RandomChoiceSource::choose(const ChoiceRequest& request) {
  const size_t n = request.candidates.size();
  if (n == 0) return std::nullopt;  // nothing to sample from: let the next source decide
  return request.candidates[draw(seed_, request.key, n)];
}

}  // namespace tessera

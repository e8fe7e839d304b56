// ChoiceSource: something that can answer a knob decision for a node — the tuner's current
// trajectory, a tuning-database replay, or a seeded random sampler.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "tessera/ir/graph.h"

namespace tessera {

struct ChoiceRequest {
  std::string_view pass;
  std::string_view knob;
  const Node& node;
  const std::vector<AttrValue>& candidates;
  const AttrValue& heuristic;
};

class ChoiceSource {
 public:
  virtual ~ChoiceSource() = default;
  // Recorded on the node as the choice's source: "tuner", "replay", "sampled".
  virtual std::string_view name() const = 0;
  // A value among request.candidates, or nullopt to let the next source decide.
  virtual std::optional<AttrValue> choose(const ChoiceRequest& request) = 0;
};

// Picks a uniformly random candidate for every decision. Its RNG is its own state, seeded by the
// caller, so the same seed gives the same schedule. Used by random-knob tests and by the tuner.
class RandomChoiceSource final : public ChoiceSource {
 public:
  explicit RandomChoiceSource(uint64_t seed) : rng_(seed) {}
  std::string_view name() const override { return "sampled"; }
  std::optional<AttrValue> choose(const ChoiceRequest& request) override;

 private:
  std::mt19937_64 rng_;
};

}  // namespace tessera

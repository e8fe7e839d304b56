// ChoiceSource: something that can answer a knob decision for a node — the tuner's current
// trajectory, a tuning-database replay, or a seeded random sampler. Sources answer by the
// decision's key (tune/decision.h), never by the order they are asked in: kernel passes apply to
// several kernels at once, so choose() is called from several threads and must be thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/tune/decision.h"

namespace tessera {

struct ChoiceRequest {
  const DecisionKey& key;
  std::string_view marker;  // the asking pass's pipeline position, "t:007_stage_inputs"
  const Node& node;
  const std::vector<AttrValue>& candidates;
  const AttrValue& heuristic;
};

class ChoiceSource {
 public:
  virtual ~ChoiceSource() = default;
  // Recorded on the node as the choice's source: "tuner", "tuned" (a database replay), "sampled".
  virtual std::string_view name() const = 0;
  // A value among request.candidates, or nullopt to let the next source decide. Thread-safe; the
  // same key must get the same answer for the whole run.
  virtual std::optional<AttrValue> choose(const ChoiceRequest& request) = 0;
};

// Picks a uniformly random candidate for every decision: the draw is a function of the seed and
// the decision's key alone, so the same seed gives the same schedule whatever order (or thread)
// the decisions are asked in. Used by random-knob tests and by the tuner's rollouts.
class RandomChoiceSource final : public ChoiceSource {
 public:
  explicit RandomChoiceSource(uint64_t seed) : seed_(seed) {}
  std::string_view name() const override { return "sampled"; }
  std::optional<AttrValue> choose(const ChoiceRequest& request) override;

  // The index in [0, n) that seed `seed` draws for `key` (n > 0).
  static size_t draw(uint64_t seed, const DecisionKey& key, size_t n);

 private:
  uint64_t seed_;
};

}  // namespace tessera

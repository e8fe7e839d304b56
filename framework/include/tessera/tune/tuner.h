// Tuner: searches the knob decisions of a compiled program (see docs/architecture.md, tuning).
#pragma once

#include <string_view>

#include "tessera/ir/graph.h"
#include "tessera/pass/knob.h"
#include "tessera/support/status.h"

namespace tessera {

class Tuner {
 public:
  virtual ~Tuner() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  // Options read from the pipeline's `tuner:` section (validated like pass knobs).
  virtual std::vector<KnobSpec> options() const { return {}; }
};

}  // namespace tessera

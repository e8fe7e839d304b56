// Knobs: the typed schema of a pass's schedule decisions.
//
// A pass declares each decision it can make as a KnobSpec. A value can be pinned in the pipeline
// YAML (`- launch_geometry: {BN: 128}`); otherwise the tuner, a tuning-database replay or the
// pass's heuristic decides, per node, through PassContext::choose.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/attr.h"

namespace tessera {

enum class KnobType { Bool, Int, Float, String, IntList };

std::string_view knob_type_name(KnobType t);  // "bool", "int", "float", "string", "int-list"

struct KnobSpec {
  std::string name;
  KnobType type = KnobType::Int;
  // The values the knob may take in general. Empty when the candidates depend on the node
  // (the pass computes them and passes them to choose()). When non-empty, a pinned value must be
  // one of them.
  std::vector<AttrValue> candidates;
  // A fixed default; when absent the pass's heuristic decides ("default: heuristic").
  std::optional<AttrValue> default_value;
  std::string help;
};

// True when `v` has the knob's type (an Int is accepted where a Float is expected).
bool knob_value_has_type(const AttrValue& v, KnobType t);

// "BN (int, default: heuristic, candidates: 32, 64, 128) — threads per block"
std::string describe_knob(const KnobSpec& k);

// Types a plain (unquoted) YAML scalar by its content: true/false -> bool, integers -> int,
// floats (1.5, 1e-3, .inf) -> float, anything else -> string. nullopt for `auto` (not pinned).
std::optional<AttrValue> parse_knob_value(std::string_view text);

// The YAML spelling of a knob value, which the pipeline parser reads back to the same value:
// true, 128, 0.5, tanh, [1, 2]; a string that would read as another type is quoted ("128").
std::string knob_value_str(const AttrValue& v);

}  // namespace tessera

// Spelling suggestions for "did you mean ...?" hints in errors about unknown names.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// The candidate closest to `word` (case-insensitive optimal-string-alignment distance: Levenshtein
// plus adjacent transpositions, so `stage_inptus` is one edit from `stage_inputs`), if it is close
// enough to be a plausible typo. Ties go to the earliest candidate, so hints are deterministic.
std::optional<std::string> closest_spelling(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace tessera

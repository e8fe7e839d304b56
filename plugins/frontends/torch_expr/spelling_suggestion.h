// Spelling suggestions for "did you mean 'RMSNorm'?" in unknown-name errors.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::torch_expr {

// The candidate closest to `word` (case-insensitive edit distance with transpositions), if it is
// close enough to be a plausible typo. Ties go to the earliest candidate, so results are stable.
std::optional<std::string> closest_spelling(std::string_view word, const std::vector<std::string>& candidates);

// "; did you mean 'RMSNorm'?" or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace tessera::torch_expr

// The frontend's wording of spelling hints: "; did you mean 'RMSNorm'?".
#include "spelling_suggestion.h"

#include "tessera/support/spelling.h"

namespace tessera::torch_expr {

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::optional<std::string> best = closest_spelling(word, candidates);
  return best ? "; did you mean '" + *best + "'?" : std::string();
}

}  // namespace tessera::torch_expr

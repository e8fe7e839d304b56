// Spelling suggestions: the closest known name to a typo, for "did you mean" hints.
#include "tessera/support/spelling.h"

#include <algorithm>
#include <cctype>

namespace tessera {
namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

}  // namespace

std::optional<std::string> closest_spelling(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty() || word.size() > 64) return std::nullopt;
  const std::string w = lowercase(word);
  const size_t threshold = std::max<size_t>(1, (word.size() + 2) / 3);
  std::optional<std::string> best;
  size_t best_distance = threshold + 1;
  for (const std::string& c : candidates) {
    if (c == word) continue;
    size_t distance = edit_distance(w, lowercase(c));
    if (distance < best_distance) {
      best_distance = distance;
      best = c;
    }
  }
  return best;
}

}  // namespace tessera

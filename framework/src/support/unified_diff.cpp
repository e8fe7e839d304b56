// Unified diff of two texts, line by line (LCS table; IR printouts are small enough for O(n*m)).
#include "tessera/support/unified_diff.h"

#include <algorithm>
#include <sstream>

namespace tessera {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  std::istringstream is(text);
  while (std::getline(is, cur)) lines.push_back(cur);
  return lines;
}

namespace {

struct Edit {
  char tag;      // ' ', '-', '+'
  size_t a, b;   // line index in before / after (for ' ' both valid)
};

std::vector<Edit> diff_edits(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const size_t n = a.size(), m = b.size();
  // lcs[i][j] = LCS length of a[i..] and b[j..]
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<Edit> edits;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      edits.push_back({' ', i++, j++});
    } else if (j < m && (i == n || lcs[i][j + 1] > lcs[i + 1][j])) {
      edits.push_back({'+', i, j++});
    } else {
      edits.push_back({'-', i++, j});  // ties delete first, so '-' lines precede '+' lines
    }
  }
  return edits;
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after, int context) {
  auto a = split_lines(before);
  auto b = split_lines(after);
  auto edits = diff_edits(a, b);
  const size_t ctx = static_cast<size_t>(std::max(0, context));
  std::ostringstream os;
  size_t k = 0;
  while (k < edits.size()) {
    // Find the next change.
    while (k < edits.size() && edits[k].tag == ' ') ++k;
    if (k == edits.size()) break;
    size_t start = k >= ctx ? k - ctx : 0;
    // Extend the hunk while changes are within 2*ctx unchanged lines of each other.
    size_t end = k;
    while (true) {
      while (end < edits.size() && edits[end].tag != ' ') ++end;
      size_t run = end;
      while (run < edits.size() && edits[run].tag == ' ') ++run;
      if (run < edits.size() && run - end <= 2 * ctx) {
        end = run;
        continue;
      }
      end = std::min(edits.size(), end + ctx);
      break;
    }
    size_t a_start = edits[start].a, b_start = edits[start].b;
    size_t a_len = 0, b_len = 0;
    for (size_t e = start; e < end; ++e) {
      if (edits[e].tag != '+') ++a_len;
      if (edits[e].tag != '-') ++b_len;
    }
    // Unified-diff convention: a zero-length range names the line before it.
    os << "@@ -" << (a_len ? a_start + 1 : a_start) << "," << a_len << " +"
       << (b_len ? b_start + 1 : b_start) << "," << b_len << " @@\n";
    for (size_t e = start; e < end; ++e) {
      const std::string& line = edits[e].tag == '+' ? b[edits[e].b] : a[edits[e].a];
      os << edits[e].tag << line << "\n";
    }
    k = end;
  }
  return os.str();
}

}  // namespace tessera

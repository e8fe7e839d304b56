// The section format of the pass goldens (tests/golden/<folder>/*.txt): `#### NAME` header lines,
// each followed by its text. Shared by the golden driver and the round-trip test.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace tessera::test {

struct GoldenSection {
  std::string name;
  std::string text;
  int header_line = 0;  // 1-based line of `#### NAME` in the file
};

inline std::vector<GoldenSection> parse_golden_sections(const std::string& file_text) {
  std::vector<GoldenSection> sections;
  std::istringstream is(file_text);
  std::string line;
  int number = 0;
  while (std::getline(is, line)) {
    ++number;
    if (line.rfind("#### ", 0) == 0) {
      sections.push_back({line.substr(5), "", number});
    } else if (!sections.empty()) {
      sections.back().text += line + "\n";
    }
  }
  return sections;
}

}  // namespace tessera::test

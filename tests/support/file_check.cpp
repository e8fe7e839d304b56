// The golden tests' FileCheck (see file_check.h).
#include "support/file_check.h"

#include <optional>
#include <sstream>
#include <vector>

namespace tessera::test {
namespace {

enum class Directive { Check, Next, Same, Not };

struct CheckLine {
  Directive directive;
  std::string pattern;
  int line;  // 1-based, in the checks text
  std::string spelling;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) out.push_back(line);
  return out;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(' ');
  return s.substr(b, e - b + 1);
}

// A position in the text: line index and the column after the last match on it.
struct Pos {
  int line = -1;  // -1: before the first line
  size_t col = 0;
};

std::string quote(const std::string& s) { return "\"" + s + "\""; }

}  // namespace

std::string file_check(const std::string& checks, const std::string& text,
                       const std::string& checks_name) {
  static const std::pair<const char*, Directive> kDirectives[] = {
      {"CHECK-NEXT:", Directive::Next}, {"CHECK-SAME:", Directive::Same},
      {"CHECK-NOT:", Directive::Not}, {"CHECK:", Directive::Check}};
  std::vector<CheckLine> directives;
  std::vector<std::string> check_lines = lines_of(checks);
  for (size_t i = 0; i < check_lines.size(); ++i) {
    std::string line = trim(check_lines[i]);
    if (line.empty()) continue;
    const int number = static_cast<int>(i) + 1;
    const std::string where = checks_name + ":" + std::to_string(number) + ": error: ";
    bool found = false;
    for (const auto& [spelling, directive] : kDirectives) {
      std::string prefix = spelling;
      if (line.rfind(prefix, 0) != 0) continue;
      std::string pattern = trim(line.substr(prefix.size()));
      if (pattern.empty()) return where + prefix + " has an empty pattern";
      directives.push_back({directive, pattern, number, prefix.substr(0, prefix.size() - 1)});
      found = true;
      break;
    }
    if (!found) {
      return where + "expected CHECK:, CHECK-NEXT:, CHECK-SAME: or CHECK-NOT:, found " +
             quote(line);
    }
  }
  if (directives.empty()) return checks_name + ": error: no CHECK lines";
  if (directives.front().directive == Directive::Next ||
      directives.front().directive == Directive::Same) {
    return checks_name + ":" + std::to_string(directives.front().line) + ": error: " +
           directives.front().spelling + " needs a CHECK before it";
  }

  const std::vector<std::string> out = lines_of(text);
  auto fail = [&](const CheckLine& d, const std::string& what, int text_line) {
    std::string msg = checks_name + ":" + std::to_string(d.line) + ": error: " + d.spelling + ": " +
                      what + "\n  pattern: " + quote(d.pattern);
    if (text_line >= 0 && text_line < static_cast<int>(out.size())) {
      msg += "\n  text line " + std::to_string(text_line + 1) + ": " + quote(out[text_line]);
    }
    return msg;
  };
  // The first occurrence of `pattern` in [from, to) (to.line == size: the end of the text).
  auto find = [&](const std::string& pattern, Pos from, Pos to) -> std::optional<Pos> {
    for (int l = std::max(from.line, 0); l < static_cast<int>(out.size()) && l <= to.line; ++l) {
      size_t start = l == from.line ? from.col : 0;
      size_t hit = out[l].find(pattern, start);
      if (hit == std::string::npos) continue;
      if (l == to.line && hit + pattern.size() > to.col) return std::nullopt;
      return Pos{l, hit};
    }
    return std::nullopt;
  };

  Pos last;  // end of the previous positive match
  std::vector<const CheckLine*> pending_not;
  auto check_nots = [&](Pos until) -> std::string {
    for (const CheckLine* n : pending_not) {
      if (auto hit = find(n->pattern, last, until)) {
        return fail(*n, "excluded string found", hit->line);
      }
    }
    pending_not.clear();
    return "";
  };
  for (const CheckLine& d : directives) {
    std::optional<Pos> hit;
    switch (d.directive) {
      case Directive::Not:
        pending_not.push_back(&d);
        continue;
      case Directive::Check:
        hit = find(d.pattern, last, Pos{static_cast<int>(out.size()), 0});
        if (!hit) return fail(d, "expected string not found", std::max(last.line, 0));
        break;
      case Directive::Next: {
        int l = last.line + 1;
        if (l >= static_cast<int>(out.size())) return fail(d, "the text ends before the next line", last.line);
        size_t at = out[l].find(d.pattern);
        if (at == std::string::npos) return fail(d, "expected string not found on the next line", l);
        hit = Pos{l, at};
        break;
      }
      case Directive::Same: {
        size_t at = out[last.line].find(d.pattern, last.col);
        if (at == std::string::npos) return fail(d, "expected string not found on the same line", last.line);
        hit = Pos{last.line, at};
        break;
      }
    }
    if (std::string e = check_nots(*hit); !e.empty()) return e;
    last = Pos{hit->line, hit->col + d.pattern.size()};
  }
  return check_nots(Pos{static_cast<int>(out.size()), 0});
}

}  // namespace tessera::test

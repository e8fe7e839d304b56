// A small FileCheck for golden tests: checks a text against `CHECK:` lines, in the manner of
// LLVM's FileCheck but with literal substrings only (no regular expressions or variables), so a
// golden needs no tool outside the build.
//
//   CHECK: text        `text` occurs after the previous match (later on its line, or below)
//   CHECK-NEXT: text   `text` occurs on the line right after the previous match's line
//   CHECK-SAME: text   `text` occurs on the previous match's line, after that match
//   CHECK-NOT: text    `text` does not occur between the previous match and the next one (or the
//                      end of the text when no positive check follows)
//
// One leading space after the colon and trailing spaces are not part of the pattern; blank lines
// are ignored; any other line is an error (so a misspelled directive cannot pass silently).
#pragma once

#include <string>

namespace tessera::test {

// Empty when `text` satisfies `checks`; otherwise a message located at the failing check line
// (`checks_name:LINE: error: ...`) that quotes the pattern and the text line it was looking at.
std::string file_check(const std::string& checks, const std::string& text,
                       const std::string& checks_name);

}  // namespace tessera::test

// Line-based unified diff, used by `-vv` to show what one pass application changed.
#pragma once

#include <string>
#include <vector>

namespace tessera {

std::vector<std::string> split_lines(const std::string& text);

// Returns the hunks ("@@ -a,b +c,d @@" headers followed by ' ', '-', '+' lines) that turn
// `before` into `after`, with `context` unchanged lines around each change. Empty when equal.
// Deterministic: the same inputs always produce the same hunks (LCS with a fixed tie-break).
std::string unified_diff(const std::string& before, const std::string& after, int context = 3);

}  // namespace tessera

// Private to the IR printers (printer.cpp, stmt_printer.cpp): comma-separated lists, the one
// punctuation every printout shares.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ir/expr.h"

namespace tessera::print_lists {

// "a, b, c"
inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += items[i];
  }
  return out;
}

inline std::string join(const ExprList& exprs) {
  std::vector<std::string> items;
  items.reserve(exprs.size());
  for (const Expr& e : exprs) items.push_back(e.str());
  return join(items);
}

inline std::string join(const std::vector<int64_t>& values) {
  std::vector<std::string> items;
  items.reserve(values.size());
  for (int64_t v : values) items.push_back(std::to_string(v));
  return join(items);
}

}  // namespace tessera::print_lists

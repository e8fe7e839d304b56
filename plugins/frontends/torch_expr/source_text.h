// SourceText: the program text of one `-c` compilation plus the position helpers every stage of
// the frontend uses to turn a span into a located Diagnostic (file:line:col, caret, source line).
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/support/diagnostics.h"

namespace tessera::torch_expr {

// A half-open range of source text: [line:col, end_line:end_col). Lines and columns are 1-based
// byte positions; a default span (line 0) means "unknown".
struct SourceSpan {
  int line = 0;
  int col = 0;
  int end_line = 0;
  int end_col = 0;

  bool valid() const { return line > 0; }
  // The span from the start of `a` to the end of `b`.
  static SourceSpan cover(const SourceSpan& a, const SourceSpan& b) {
    if (!a.valid()) return b;
    if (!b.valid()) return a;
    return SourceSpan{a.line, a.col, b.end_line, b.end_col};
  }
};

class SourceText {
 public:
  SourceText(std::string file, std::string text) : file_(std::move(file)), text_(std::move(text)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text_.size(); ++i)
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }

  const std::string& file() const { return file_; }
  const std::string& text() const { return text_; }
  int line_count() const { return static_cast<int>(line_starts_.size()); }

  // Line `line` (1-based) without its newline (and without a trailing '\r').
  std::string line(int line) const {
    if (line < 1 || line > line_count()) return {};
    size_t begin = line_starts_[static_cast<size_t>(line - 1)];
    size_t end = text_.find('\n', begin);
    if (end == std::string::npos) end = text_.size();
    if (end > begin && text_[end - 1] == '\r') --end;
    return text_.substr(begin, end - begin);
  }

  // A SourceLoc whose caret covers the span (clipped to the first line of a multi-line span).
  SourceLoc loc(const SourceSpan& span) const {
    SourceLoc l;
    l.file = file_;
    if (!span.valid()) return l;
    l.line = span.line;
    l.col = span.col;
    int line_length = static_cast<int>(line(span.line).size());
    int end = span.end_line == span.line ? span.end_col : line_length + 1;
    l.length = std::max(1, end - span.col);
    return l;
  }

  // An error located at `span`, carrying the source line for the caret display.
  Diagnostic error(const SourceSpan& span, std::string message) const {
    Diagnostic d = make_error(std::move(message));
    d.at(loc(span), span.valid() ? line(span.line) : std::string());
    return d;
  }

  // The position just after the last character of the text (where "unexpected end" errors point).
  SourceSpan end_span() const {
    int last = line_count();
    // A trailing newline leaves an empty last line; point at the end of the last real line instead.
    while (last > 1 && line(last).empty()) --last;
    int col = static_cast<int>(line(last).size()) + 1;
    return SourceSpan{last, col, last, col + 1};
  }

 private:
  std::string file_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

}  // namespace tessera::torch_expr

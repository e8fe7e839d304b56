// Diagnostic rendering and the per-compilation diagnostics engine.
#include "tessera/support/diagnostics.h"

#include <algorithm>
#include <sstream>

namespace tessera {

std::string SourceLoc::str() const {
  std::string s = file.empty() ? std::string("<input>") : file;
  if (line > 0) s += ":" + std::to_string(line);
  if (line > 0 && col > 0) s += ":" + std::to_string(col);
  return s;
}

static std::string_view severity_word(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

std::string Diagnostic::render() const {
  std::ostringstream os;
  if (loc.valid() || !loc.file.empty()) os << loc.str() << ": ";
  os << severity_word(severity) << ": ";
  if (!pass.empty() && !node.empty()) {
    os << "in pass " << pass << " at node '" << node << "': ";
  } else if (!pass.empty()) {
    os << "in pass " << pass << ": ";
  } else if (!node.empty()) {
    os << "at node '" << node << "': ";
  }
  os << message << "\n";
  if (loc.valid() && !source_line.empty()) {
    os << "  " << source_line << "\n";
    // The caret sits under column `col`; tabs in the prefix are kept so it lines up.
    std::string pad;
    for (int i = 1; i < loc.col && i <= static_cast<int>(source_line.size()); ++i)
      pad += source_line[static_cast<size_t>(i - 1)] == '\t' ? '\t' : ' ';
    int len = std::max(1, loc.length);
    os << "  " << pad << '^' << std::string(static_cast<size_t>(len - 1), '~') << "\n";
  }
  for (const auto& n : notes) os << "note: " << n << "\n";
  return os.str();
}

Diagnostic& Diagnostic::at(SourceLoc l, std::string line_text) {
  loc = std::move(l);
  source_line = std::move(line_text);
  return *this;
}

Diagnostic& Diagnostic::at_node(std::string node_id) {
  node = std::move(node_id);
  return *this;
}

Diagnostic& Diagnostic::in_pass(std::string pass_name) {
  pass = std::move(pass_name);
  return *this;
}

Diagnostic& Diagnostic::note(std::string text) {
  notes.push_back(std::move(text));
  return *this;
}

Diagnostic make_error(std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  return d;
}

Diagnostic make_warning(std::string message) {
  Diagnostic d;
  d.severity = Severity::Warning;
  d.message = std::move(message);
  return d;
}

SourceLoc source_loc_at(const std::string& text, const std::string& file, size_t offset) {
  offset = std::min(offset, text.size());
  int line = 1, col = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return SourceLoc{file, line, col, 1};
}

std::string source_line_of(const std::string& text, int line) {
  if (line < 1) return {};
  size_t start = 0;
  for (int i = 1; i < line; ++i) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  std::string out = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (!out.empty() && out.back() == '\r') out.pop_back();
  return out;
}

void DiagnosticEngine::report(Diagnostic d) { diags_.push_back(std::move(d)); }

bool DiagnosticEngine::has_errors() const {
  return std::any_of(diags_.begin(), diags_.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::Error; });
}

std::string DiagnosticEngine::render_all() const {
  std::string out;
  for (const auto& d : diags_) out += d.render();
  return out;
}

}  // namespace tessera

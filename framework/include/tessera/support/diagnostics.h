// Diagnostics: every error Tessera reports is a value carrying where it happened.
//
// A Diagnostic names its place in one of three ways, whichever applies:
//   * a source location (frontend text or a YAML file): file:line:col, plus the source line so the
//     renderer can draw a caret under the offending construct;
//   * an IR node and the pass that was running when it failed (pipeline errors);
//   * neither (command-line misuse), in which case the message must name the offending thing.
// Diagnostics never cross plugin boundaries as exceptions: they travel inside Status/Expected.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tessera {

// A position in a text the user wrote. line and col are 1-based; 0 means "unknown".
struct SourceLoc {
  std::string file;  // "<-c>" for command-line expressions, a path for files
  int line = 0;
  int col = 0;
  int length = 1;    // how many columns the caret underline covers

  bool valid() const { return line > 0; }
  std::string str() const;  // "file:line:col" (or "file:line" / "file" when parts are unknown)
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string message;
  SourceLoc loc;
  std::string source_line;     // the full text of loc.line, for the caret display
  std::string node;            // IR node id the problem is attached to, if any
  std::string pass;            // pass (pipeline marker such as "t:007_stage_inputs") if any
  std::vector<std::string> notes;  // extra lines printed after the main message

  // Renders as:
  //   file:line:col: error: message
  //     <source line>
  //     ^~~~
  //   (or "error: in pass P at node N: message" for pipeline errors), then "note: ..." lines.
  std::string render() const;

  // Fluent helpers so call sites read as one expression.
  Diagnostic& at(SourceLoc l, std::string line_text = {});
  Diagnostic& at_node(std::string node_id);
  Diagnostic& in_pass(std::string pass_name);
  Diagnostic& note(std::string text);
};

Diagnostic make_error(std::string message);
Diagnostic make_warning(std::string message);

// Returns line `line` (1-based) of `text` without its newline; empty when out of range.
std::string source_line_of(const std::string& text, int line);

// The location (1-based line and column, length 1) of byte `offset` (0-based) of `text` in `file`;
// an offset past the end is the end. For parsers that report a byte offset (the JSON library).
SourceLoc source_loc_at(const std::string& text, const std::string& file, size_t offset);

// Collects diagnostics for one compilation. Owned by whoever drives the compilation (the CLI,
// a test); never a global.
class DiagnosticEngine {
 public:
  void report(Diagnostic d);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }
  bool has_errors() const;
  std::string render_all() const;
  void clear() { diags_.clear(); }

 private:
  std::vector<Diagnostic> diags_;
};

}  // namespace tessera

// Private to the IR text parser (graph_parser.cpp, stmt_parser.cpp, expr_parser.cpp): the lines of
// a printed text and a cursor over one line with the small grammar helpers every printed form
// shares (words, names, integers, punctuation, comma lists), each failing with a located
// `expected ...` diagnostic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/expr.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/stmt.h"
#include "tessera/support/status.h"

namespace tessera::ir_text {

// One non-blank line: its full text (for the caret display), 1-based number and indentation.
struct TextLine {
  std::string_view text;
  int number = 0;
  size_t indent = 0;  // leading spaces
};

// Splits `text` into its non-blank lines. Tabs in the indentation and too many lines are errors.
Expected<std::vector<TextLine>> split_lines(std::string_view text, const std::string& file,
                                            const ParseLimits& limits);

bool is_name_start(char c);
bool is_name_char(char c);

class LineCursor {
 public:
  LineCursor(const TextLine& line, const std::string& file)
      : line_(&line), file_(&file), pos_(line.indent) {}

  const TextLine& line() const { return *line_; }
  size_t pos() const { return pos_; }
  void reset(size_t pos) { pos_ = pos; }

  void skip_spaces();
  bool at_end();                      // only spaces left
  bool peek(std::string_view text);   // after spaces, without consuming
  char peek_char();                   // after spaces; '\0' at the end
  bool accept(std::string_view text);  // punctuation or text, after spaces
  bool accept_word(std::string_view word);  // a whole word: not followed by a name character
  Status expect(std::string_view text);
  Status expect_word(std::string_view word);
  Status expect_end();                // nothing but spaces left

  // A name: [A-Za-z_][A-Za-z0-9_]*, with `.field` parts allowed (threadIdx.x, layers.0.w).
  Expected<std::string> name(std::string_view what);
  Expected<int64_t> integer(std::string_view what);  // optionally negative
  Expected<uint64_t> unsigned_integer(std::string_view what);
  // A word of letters, digits and '_' (a spelling that may start with a digit, like `128B`);
  // empty, consuming nothing, when none follows.
  std::string word();
  // The rest of the line, stripped of surrounding spaces (and consumed).
  std::string_view take_rest();

  // `expected WHAT` at the cursor (or at `col`, 0-based, covering `length` columns).
  Diagnostic error(std::string message) const;
  Diagnostic error_at(size_t col, size_t length, std::string message) const;
  Diagnostic expected(std::string_view what);

 private:
  const TextLine* line_;
  const std::string* file_;
  size_t pos_;
};

// Which namespace a bare name of an expression belongs to (expr.h: Var or Value). The printer
// writes both as the bare name, so the parser decides by the name's definition: a name an SSA
// definition bound (Load, VectorLoad, Assign, Select, Init, WarpShuffle) or a floating-point scalar
// parameter is a Value; everything else (loop and Tile axes, Let variables, integer scalar
// parameters, hardware indices, names no statement bound) is a Var. The latest definition in text
// order decides: valid IR binds a name once per scope, and uses follow their definition.
class NameScope {
 public:
  void bind(const std::string& name, ExprKind kind) { kinds_[name] = kind; }
  Expr reference(const std::string& name) const {
    auto it = kinds_.find(name);
    return it != kinds_.end() && it->second == ExprKind::Value ? Expr::value(name) : Expr::var(name);
  }

 private:
  std::map<std::string, ExprKind> kinds_;
};

// Expressions (expr_parser.cpp), in Expr::str's grammar. `depth` counts enclosing nesting levels;
// more than limits.max_depth is an error. Names read as `names` says (all Vars when null).
Expected<Expr> read_expr(LineCursor& c, const ParseLimits& limits, int depth = 0,
                         const NameScope* names = nullptr);
// `e, e, e` up to (not including) `close`; empty when `close` comes first.
Expected<ExprList> read_expr_list(LineCursor& c, char close, const ParseLimits& limits, int depth = 0,
                                  const NameScope* names = nullptr);

// Which buffers a body may name. Null: unchecked (a body parsed alone).
struct BufferScope {
  std::set<std::string> known;
};

// Statements (stmt_parser.cpp): reads the statements of `lines` from `next` that are indented by
// exactly `indent` spaces, with their nested bodies, and advances `next` past them. `names` starts
// with what binds names around the body (a kernel's scalar parameters) and grows with every
// definition read.
class BodyReader {
 public:
  BodyReader(const std::vector<TextLine>& lines, const std::string& file, const ParseLimits& limits,
             BufferScope* buffers, NameScope names = {})
      : lines_(lines), file_(file), limits_(limits), buffers_(buffers), names_(std::move(names)) {}

  Expected<Body> read(size_t& next, size_t indent, int depth);

 private:
  friend class StmtReader;
  const std::vector<TextLine>& lines_;
  const std::string& file_;
  const ParseLimits& limits_;
  BufferScope* buffers_;
  NameScope names_;
};

}  // namespace tessera::ir_text

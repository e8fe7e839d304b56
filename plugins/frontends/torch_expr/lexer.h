// Lexer: splits `-c` program text into Python tokens, including the NEWLINE / INDENT / DEDENT
// tokens that make indentation-based blocks (class and def bodies) parseable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "source_text.h"
#include "tessera/support/status.h"

namespace tessera::torch_expr {

enum class TokenKind {
  Name,      // identifier (not a keyword)
  Keyword,   // Python keyword: import, def, class, return, True, None, for, lambda, ...
  Int,       // 42, 0x10, 1_000
  Float,     // 1.5, 1e-6, .5
  String,    // 'tanh', "cpu"
  Operator,  // punctuation and operators: ( ) [ ] , . : ; = + - * / // % ** @ == <= -> += ...
  Newline,   // end of a logical line
  Indent,    // the start of a more indented block
  Dedent,    // the end of an indented block
  End,       // end of input
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;     // the source spelling; the decoded value for String tokens
  SourceSpan span;
  int64_t int_value = 0;
  double float_value = 0.0;

  bool is(TokenKind k, std::string_view t) const { return kind == k && text == t; }
  bool is_op(std::string_view t) const { return is(TokenKind::Operator, t); }
  bool is_keyword(std::string_view t) const { return is(TokenKind::Keyword, t); }
};

// Human-readable token description for "expected X, got Y" messages: "')'", "name 'x'", "end of input".
std::string describe_token(const Token& t);

class Lexer {
 public:
  explicit Lexer(const SourceText& source) : source_(source) {}

  // The whole token stream, ending with Newline?, Dedent*, End. Errors (bad characters, unbalanced
  // brackets, bad literals, inconsistent indentation) are located Diagnostics.
  Expected<std::vector<Token>> tokenize();

 private:
  struct OpenBracket {
    char ch;
    SourceSpan span;
  };

  Status lex_line_start();
  Status lex_number();
  Status lex_string();
  Status lex_operator();
  void push(TokenKind kind, std::string text, int start_col, int end_col);
  SourceSpan span_at(int start_col, int end_col) const { return SourceSpan{line_, start_col, line_, end_col}; }
  char peek(size_t ahead = 0) const;
  int col() const { return static_cast<int>(pos_ - line_start_) + 1; }
  void advance_line();

  const SourceText& source_;
  std::vector<Token> tokens_;
  std::vector<OpenBracket> brackets_;
  std::vector<int> indents_{0};
  int base_indent_ = -1;  // indentation of the first statement, treated as column zero
  size_t pos_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
  bool at_line_start_ = true;
};

}  // namespace tessera::torch_expr

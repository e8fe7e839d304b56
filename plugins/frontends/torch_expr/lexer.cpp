// Lexer for the torch_expr language: Python tokens with implicit line joining inside brackets,
// backslash continuations, comments, and INDENT/DEDENT tokens from leading whitespace. Bracket
// balance is checked here so that "'(' was never closed" points at the opening bracket.
#include "lexer.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tessera::torch_expr {
namespace {

constexpr size_t kMaxBracketDepth = 200;  // deeper nesting would only exhaust the parser's stack

constexpr std::array<std::string_view, 35> kKeywords = {
    "False", "None",   "True",    "and",      "as",     "assert", "async", "await", "break",
    "class", "continue", "def",   "del",      "elif",   "else",   "except", "finally", "for",
    "from",  "global", "if",      "import",   "in",     "is",     "lambda", "nonlocal", "not",
    "or",    "pass",   "raise",   "return",   "try",    "while",  "with",   "yield"};

// Longest first, so that the first match is the longest one.
constexpr std::array<std::string_view, 47> kOperators = {
    "**=", "//=", ">>=", "<<=", "...", "**", "//", "==", "!=", "<=", ">=", "->", "+=", "-=", "*=",
    "/=",  "%=",  "@=",  "&=",  "|=",  "^=", ":=", "<<", ">>", "(",  ")",  "[",  "]",  "{",  "}",
    ",",   ".",   ":",   ";",   "=",   "+",  "-",  "*",  "/",  "%",  "@",  "<",  ">",  "&",  "|",
    "^",   "~"};

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

bool is_keyword(std::string_view s) {
  for (std::string_view k : kKeywords)
    if (k == s) return true;
  return false;
}

char closing_for(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

// "'$'" for printable ASCII, "'…' (U+2026)" for a UTF-8 sequence, "'\x01'" for control bytes.
std::string describe_character(const std::string& text, size_t pos) {
  auto byte = static_cast<unsigned char>(text[pos]);
  if (byte >= 0x20 && byte < 0x7f) return std::string("'") + text[pos] + "'";
  if (byte >= 0x80) {
    int extra = byte >= 0xf0 ? 3 : byte >= 0xe0 ? 2 : byte >= 0xc0 ? 1 : 0;
    uint32_t cp = extra == 3 ? byte & 0x07u : extra == 2 ? byte & 0x0fu : byte & 0x1fu;
    bool valid = extra > 0;
    for (int i = 1; valid && i <= extra; ++i) {
      if (pos + static_cast<size_t>(i) >= text.size()) { valid = false; break; }
      auto b = static_cast<unsigned char>(text[pos + static_cast<size_t>(i)]);
      if ((b & 0xc0u) != 0x80u) valid = false;
      cp = (cp << 6) | (b & 0x3fu);
    }
    char hex[16];
    if (!valid) {
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      return std::string("byte '") + hex + "'";
    }
    std::snprintf(hex, sizeof hex, "U+%04X", cp);
    std::string described = "'";
    described.append(text, pos, static_cast<size_t>(extra) + 1).append("' (").append(hex).append(")");
    return described;
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "\\x%02x", byte);
  return std::string("'") + hex + "'";
}

}  // namespace

std::string describe_token(const Token& t) {
  switch (t.kind) {
    case TokenKind::Name: return "name '" + t.text + "'";
    case TokenKind::Keyword: return "keyword '" + t.text + "'";
    case TokenKind::Int:
    case TokenKind::Float: return "number " + t.text;
    case TokenKind::String: return "a string";
    case TokenKind::Operator: return "'" + t.text + "'";
    case TokenKind::Newline: return "end of line";
    case TokenKind::Indent: return "an indented block";
    case TokenKind::Dedent: return "the end of an indented block";
    case TokenKind::End: return "end of input";
  }
  return "a token";
}

char Lexer::peek(size_t ahead) const {
  const std::string& s = source_.text();
  return pos_ + ahead < s.size() ? s[pos_ + ahead] : '\0';
}

void Lexer::advance_line() {
  // pos_ sits on the '\n' being consumed.
  ++pos_;
  line_start_ = pos_;
  ++line_;
}

void Lexer::push(TokenKind kind, std::string text, int start_col, int end_col) {
  Token t;
  t.kind = kind;
  t.text = std::move(text);
  t.span = span_at(start_col, end_col);
  tokens_.push_back(std::move(t));
}

Status Lexer::lex_line_start() {
  const std::string& s = source_.text();
  int width = 0;
  while (pos_ < s.size() && (s[pos_] == ' ' || s[pos_] == '\t' || s[pos_] == '\f')) {
    width = s[pos_] == '\t' ? (width / 8 + 1) * 8 : s[pos_] == ' ' ? width + 1 : 0;
    ++pos_;
  }
  if (pos_ < s.size() && s[pos_] == '#')
    while (pos_ < s.size() && s[pos_] != '\n') ++pos_;
  if (pos_ + 1 < s.size() && s[pos_] == '\r' && s[pos_ + 1] == '\n') ++pos_;
  if (pos_ >= s.size()) return Status::ok();  // the text ends on a blank line
  if (s[pos_] == '\n') {  // blank or comment-only line: no tokens, no indentation change
    advance_line();
    return Status::ok();
  }
  at_line_start_ = false;

  // A `-c` program may be indented as a whole (pasted from a script); its first line sets column 0.
  if (base_indent_ < 0) base_indent_ = width;
  int level = width - base_indent_;
  int here = col();
  if (level < 0)
    return source_.error(span_at(1, here), "unindent does not match any outer indentation level");
  if (level > indents_.back()) {
    indents_.push_back(level);
    push(TokenKind::Indent, "", here, here + 1);
    return Status::ok();
  }
  while (level < indents_.back()) {
    indents_.pop_back();
    push(TokenKind::Dedent, "", here, here + 1);
  }
  if (level != indents_.back())
    return source_.error(span_at(1, here), "unindent does not match any outer indentation level");
  return Status::ok();
}

Status Lexer::lex_number() {
  const std::string& s = source_.text();
  size_t begin = pos_;
  int start = col();
  std::string digits;  // without underscores
  bool is_float = false;
  auto bad = [&](std::string_view what) {
    while (pos_ < s.size() && (is_ident_char(s[pos_]) || s[pos_] == '.')) ++pos_;
    return source_.error(span_at(start, col()), std::string(what));
  };
  // Digits with single underscores between them (Python's 1_000).
  auto scan_digits = [&](auto accept) -> bool {
    bool any = false;
    while (pos_ < s.size()) {
      char c = s[pos_];
      if (accept(c)) {
        digits += c;
        any = true;
        ++pos_;
      } else if (c == '_' && any && pos_ + 1 < s.size() && accept(s[pos_ + 1])) {
        ++pos_;
      } else {
        break;
      }
    }
    return any;
  };

  int base = 10;
  if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X' || peek(1) == 'o' || peek(1) == 'O' ||
                        peek(1) == 'b' || peek(1) == 'B')) {
    char p = static_cast<char>(peek(1) | 0x20);
    base = p == 'x' ? 16 : p == 'o' ? 8 : 2;
    pos_ += 2;
    if (peek() == '_') ++pos_;
    auto accept = [base](char c) {
      if (base == 16) return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      return c >= '0' && c < static_cast<char>('0' + base);
    };
    if (!scan_digits(accept))
      return bad(base == 16 ? "invalid hexadecimal literal" : base == 8 ? "invalid octal literal"
                                                                        : "invalid binary literal");
  } else {
    scan_digits(is_digit);
    if (peek() == '.' && !(peek(1) == '.' && peek(2) == '.')) {
      is_float = true;
      digits += '.';
      ++pos_;
      scan_digits(is_digit);
    }
    if (peek() == 'e' || peek() == 'E') {
      is_float = true;
      digits += 'e';
      ++pos_;
      if (peek() == '+' || peek() == '-') digits += s[pos_++];
      if (!scan_digits(is_digit)) return bad("invalid decimal literal");
    }
  }
  if (peek() == 'j' || peek() == 'J') {
    ++pos_;
    return source_.error(span_at(start, col()), "complex numbers are not supported");
  }
  if (is_ident_char(peek()) || peek() == '_') return bad("invalid decimal literal");

  Token t;
  t.text = s.substr(begin, pos_ - begin);
  t.span = span_at(start, col());
  if (is_float) {
    t.kind = TokenKind::Float;
    std::string normalized = digits.front() == '.' ? "0" + digits : digits;
    auto [ptr, ec] = std::from_chars(normalized.data(), normalized.data() + normalized.size(),
                                     t.float_value, std::chars_format::general);
    if (ec == std::errc::result_out_of_range) {
      // Python reads 1e999 as inf and 1e-999 as 0.0.
      size_t e = normalized.find('e');
      bool negative_exponent = e != std::string::npos && e + 1 < normalized.size() && normalized[e + 1] == '-';
      t.float_value = negative_exponent ? 0.0 : HUGE_VAL;
    } else if (ec != std::errc() || ptr != normalized.data() + normalized.size()) {
      return source_.error(t.span, "invalid decimal literal");
    }
  } else {
    t.kind = TokenKind::Int;
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (ec == std::errc::result_out_of_range || value > static_cast<uint64_t>(INT64_MAX))
      return source_.error(t.span, "integer literal " + t.text + " is too large");
    if (ec != std::errc() || ptr != digits.data() + digits.size())
      return source_.error(t.span, "invalid decimal literal");
    t.int_value = static_cast<int64_t>(value);
  }
  tokens_.push_back(std::move(t));
  return Status::ok();
}

Status Lexer::lex_string() {
  const std::string& s = source_.text();
  char quote = s[pos_];
  int start_line = line_;
  int start = col();
  bool triple = peek(1) == quote && peek(2) == quote;
  pos_ += triple ? 3 : 1;
  std::string value;
  while (true) {
    if (pos_ >= s.size() || (!triple && (s[pos_] == '\n' || s[pos_] == '\r'))) {
      SourceSpan span{start_line, start, start_line, start + 1};
      span.end_col = start_line == line_ ? col() : start + 1;
      return source_.error(span, triple ? "unterminated triple-quoted string literal"
                                        : "unterminated string literal");
    }
    char c = s[pos_];
    if (c == quote && (!triple || (peek(1) == quote && peek(2) == quote))) {
      pos_ += triple ? 3 : 1;
      break;
    }
    if (c == '\n') {
      value += c;
      advance_line();
      continue;
    }
    if (c == '\\' && pos_ + 1 < s.size()) {
      char e = s[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n':  // an escaped newline continues the string on the next line
          --pos_;
          advance_line();
          break;
        default:  // Python keeps unknown escapes verbatim
          value += '\\';
          value += e;
          break;
      }
      continue;
    }
    value += c;
    ++pos_;
  }
  Token t;
  t.kind = TokenKind::String;
  t.text = std::move(value);
  t.span = SourceSpan{start_line, start, line_, col()};
  tokens_.push_back(std::move(t));
  return Status::ok();
}

Status Lexer::lex_operator() {
  const std::string& s = source_.text();
  int start = col();
  for (std::string_view op : kOperators) {
    if (s.compare(pos_, op.size(), op) != 0) continue;
    pos_ += op.size();
    SourceSpan span = span_at(start, col());
    char c = op.size() == 1 ? op[0] : '\0';
    if (c == '(' || c == '[' || c == '{') {
      if (brackets_.size() >= kMaxBracketDepth)
        return source_.error(span, "too many nested brackets (the limit is " +
                                       std::to_string(kMaxBracketDepth) + ")");
      brackets_.push_back({c, span});
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets_.empty()) return source_.error(span, std::string("unmatched '") + c + "'");
      OpenBracket open = brackets_.back();
      if (closing_for(open.ch) != c) {
        std::string msg = std::string("closing '") + c + "' does not match opening '" + open.ch + "'";
        if (open.span.line != line_) msg += " on line " + std::to_string(open.span.line);
        return source_.error(span, msg);
      }
      brackets_.pop_back();
    }
    push(TokenKind::Operator, std::string(op), start, col());
    return Status::ok();
  }
  if (s[pos_] == '!')
    return source_.error(span_at(start, start + 1), "invalid syntax: '!' is only valid in '!='");
  return source_.error(span_at(start, start + 1), "invalid character " + describe_character(s, pos_));
}

Expected<std::vector<Token>> Lexer::tokenize() {
  const std::string& s = source_.text();
  while (pos_ < s.size()) {
    if (at_line_start_) {
      TESSERA_TRY(lex_line_start());
      continue;
    }
    char c = s[pos_];
    if (c == ' ' || c == '\t' || c == '\f' || c == '\r') {
      ++pos_;
    } else if (c == '\n') {
      if (brackets_.empty()) {
        push(TokenKind::Newline, "", col(), col() + 1);
        at_line_start_ = true;
      }
      advance_line();
    } else if (c == '#') {
      while (pos_ < s.size() && s[pos_] != '\n') ++pos_;
    } else if (c == '\\') {
      size_t next = pos_ + 1;
      if (next < s.size() && s[next] == '\r') ++next;
      if (next >= s.size() || s[next] != '\n')
        return source_.error(span_at(col(), col() + 1),
                             "unexpected character after line continuation character");
      pos_ = next;
      advance_line();
    } else if (is_digit(c) || (c == '.' && is_digit(peek(1)))) {
      TESSERA_TRY(lex_number());
    } else if (is_ident_start(c)) {
      int start = col();
      size_t begin = pos_;
      while (pos_ < s.size() && is_ident_char(s[pos_])) ++pos_;
      std::string word = s.substr(begin, pos_ - begin);
      if (peek() == '\'' || peek() == '"')
        return source_.error(span_at(start, col()), "string prefix '" + word + "' is not supported");
      TokenKind kind = is_keyword(word) ? TokenKind::Keyword : TokenKind::Name;
      push(kind, std::move(word), start, col());
    } else if (c == '\'' || c == '"') {
      TESSERA_TRY(lex_string());
    } else {
      TESSERA_TRY(lex_operator());
    }
  }
  if (!brackets_.empty()) {
    const OpenBracket& open = brackets_.back();
    return source_.error(open.span, std::string("'") + open.ch + "' was never closed");
  }
  SourceSpan end = source_.end_span();
  bool has_statement = !tokens_.empty() && tokens_.back().kind != TokenKind::Newline &&
                       tokens_.back().kind != TokenKind::Dedent;
  if (has_statement) {
    Token t;
    t.kind = TokenKind::Newline;
    t.span = end;
    tokens_.push_back(std::move(t));
  }
  while (indents_.size() > 1) {
    indents_.pop_back();
    Token t;
    t.kind = TokenKind::Dedent;
    t.span = end;
    tokens_.push_back(std::move(t));
  }
  Token t;
  t.kind = TokenKind::End;
  t.span = end;
  tokens_.push_back(std::move(t));
  return std::move(tokens_);
}

}  // namespace tessera::torch_expr

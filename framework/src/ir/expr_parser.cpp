// Expression parser: the inverse of Expr::str (expr.cpp), by precedence climbing over the
// printer's levels (loosest first): `||`, `&&`, comparisons (not chained), `|`, `^`, `&`,
// `<< >>`, `+ -`, `* / %`, unary `!`, atoms (Python's order; the printer parenthesizes wherever
// C's order would differ, so either reading of a printout agrees). Atoms are numbers (a float has a `.`, an exponent, or is inf / nan, as Python's
// repr prints it), negative literals (`-1`, printed `(-1)` inside an operator), names, calls
// `min(a, b)`, `max(a, b)`, `select(c, a, b)`, casts `f16(x)`, register array elements
// `acc0[1, a3]`, and parenthesized expressions. A bare name is a Var or a Value as the NameScope
// says (ir_text_reader.h); an element's index operands are read the same way.
#include <charconv>
#include <cmath>
#include <limits>

#include "ir_text_reader.h"
#include "tessera/ir/parser.h"

namespace tessera::ir_text {
namespace {

class ExprReader {
 public:
  ExprReader(LineCursor& c, const ParseLimits& limits, const NameScope* names)
      : c_(c), limits_(limits), names_(names) {}

  Expected<Expr> expr(int depth) {
    if (depth > limits_.max_depth) {
      return c_.error("expression nested deeper than " + std::to_string(limits_.max_depth) +
                      " levels");
    }
    return logical_or(depth);
  }

 private:
  Expected<Expr> logical_or(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, logical_and(depth));
    while (c_.accept("||")) {
      TESSERA_ASSIGN_OR_RETURN(Expr rhs, logical_and(depth));
      lhs = Expr::binary(ExprKind::Or, lhs, rhs);
    }
    return lhs;
  }

  Expected<Expr> logical_and(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, comparison(depth));
    while (c_.accept("&&")) {
      TESSERA_ASSIGN_OR_RETURN(Expr rhs, comparison(depth));
      lhs = Expr::binary(ExprKind::And, lhs, rhs);
    }
    return lhs;
  }

  Expected<Expr> comparison(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, bit_or(depth));
    ExprKind kind;
    if (c_.accept("<=")) kind = ExprKind::Le;
    else if (c_.peek("<-")) return lhs;  // an Accum arrow is never a comparison
    else if (c_.accept("<")) kind = ExprKind::Lt;
    else if (c_.accept("==")) kind = ExprKind::Eq;
    else if (c_.accept("!=")) kind = ExprKind::Ne;
    else return lhs;
    TESSERA_ASSIGN_OR_RETURN(Expr rhs, bit_or(depth));
    return Expr::binary(kind, lhs, rhs);
  }

  // `|` and `&` are the bitwise operators only when not doubled (`||`, `&&` are logical).
  Expected<Expr> bit_or(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, bit_xor(depth));
    while (c_.peek("|") && !c_.peek("||")) {
      c_.accept("|");
      TESSERA_ASSIGN_OR_RETURN(Expr rhs, bit_xor(depth));
      lhs = Expr::binary(ExprKind::BitOr, lhs, rhs);
    }
    return lhs;
  }

  Expected<Expr> bit_xor(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, bit_and(depth));
    while (c_.accept("^")) {
      TESSERA_ASSIGN_OR_RETURN(Expr rhs, bit_and(depth));
      lhs = Expr::binary(ExprKind::Xor, lhs, rhs);
    }
    return lhs;
  }

  Expected<Expr> bit_and(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, shift(depth));
    while (c_.peek("&") && !c_.peek("&&")) {
      c_.accept("&");
      TESSERA_ASSIGN_OR_RETURN(Expr rhs, shift(depth));
      lhs = Expr::binary(ExprKind::BitAnd, lhs, rhs);
    }
    return lhs;
  }

  Expected<Expr> shift(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, additive(depth));
    for (;;) {
      ExprKind kind;
      if (c_.accept("<<")) kind = ExprKind::Shl;
      else if (c_.accept(">>")) kind = ExprKind::Shr;
      else return lhs;
      TESSERA_ASSIGN_OR_RETURN(Expr rhs, additive(depth));
      lhs = Expr::binary(kind, lhs, rhs);
    }
  }

  Expected<Expr> additive(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, multiplicative(depth));
    for (;;) {
      ExprKind kind;
      if (c_.accept("+")) kind = ExprKind::Add;
      else if (c_.peek("-") && !c_.peek("->")) { c_.accept("-"); kind = ExprKind::Sub; }
      else return lhs;
      TESSERA_ASSIGN_OR_RETURN(Expr rhs, multiplicative(depth));
      lhs = Expr::binary(kind, lhs, rhs);
    }
  }

  Expected<Expr> multiplicative(int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr lhs, unary(depth));
    for (;;) {
      ExprKind kind;
      if (c_.accept("*")) kind = ExprKind::Mul;
      else if (c_.accept("/")) kind = ExprKind::Div;
      else if (c_.accept("%")) kind = ExprKind::Mod;
      else return lhs;
      TESSERA_ASSIGN_OR_RETURN(Expr rhs, unary(depth));
      lhs = Expr::binary(kind, lhs, rhs);
    }
  }

  Expected<Expr> unary(int depth) {
    if (c_.peek("!") && !c_.peek("!=")) {
      c_.accept("!");
      if (depth + 1 > limits_.max_depth) return expr(depth + 1);  // reports the depth error
      TESSERA_ASSIGN_OR_RETURN(Expr operand, unary(depth + 1));
      return Expr::not_(operand);
    }
    return atom(depth);
  }

  // A literal at the cursor, negated when `negative`.
  Expected<Expr> number(bool negative) {
    c_.skip_spaces();
    const std::string_view t = c_.line().text;
    size_t start = c_.pos();
    if (c_.accept_word("inf")) {
      double v = std::numeric_limits<double>::infinity();
      return Expr::float_(negative ? -v : v);
    }
    if (c_.accept_word("nan")) return Expr::float_(std::numeric_limits<double>::quiet_NaN());
    size_t end = start;
    auto digits = [&] {
      size_t from = end;
      while (end < t.size() && t[end] >= '0' && t[end] <= '9') ++end;
      return end > from;
    };
    if (!digits()) return c_.expected("a number");
    bool is_float = false;
    if (end + 1 < t.size() && t[end] == '.' && t[end + 1] >= '0' && t[end + 1] <= '9') {
      ++end;
      digits();
      is_float = true;
    }
    if (end < t.size() && (t[end] == 'e' || t[end] == 'E')) {
      size_t mark = end++;
      if (end < t.size() && (t[end] == '+' || t[end] == '-')) ++end;
      if (digits()) is_float = true;
      else end = mark;
    }
    std::string text = (negative ? "-" : "") + std::string(t.substr(start, end - start));
    c_.reset(end);
    if (is_float) {
      double v = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || ptr != text.data() + text.size()) {
        return c_.error_at(start, end - start, "expected a float literal, found '" + text + "'");
      }
      return Expr::float_(v);
    }
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      return c_.error_at(start, end - start, "integer literal '" + text + "' is out of range");
    }
    return Expr::int_(v);
  }

  Expected<ExprList> call_args(size_t count, const std::string& fn, size_t fn_col, int depth) {
    TESSERA_ASSIGN_OR_RETURN(ExprList args, read_expr_list(c_, ')', limits_, depth + 1, names_));
    TESSERA_TRY(c_.expect(")"));
    if (args.size() != count) {
      return c_.error_at(fn_col, fn.size(),
                         "'" + fn + "' takes " + std::to_string(count) + " argument" +
                             (count == 1 ? "" : "s") + ", found " + std::to_string(args.size()));
    }
    return args;
  }

  Expected<Expr> atom(int depth) {
    char ch = c_.peek_char();
    if (ch == '(') {
      c_.accept("(");
      TESSERA_ASSIGN_OR_RETURN(Expr inner, expr(depth + 1));
      TESSERA_TRY(c_.expect(")"));
      return inner;
    }
    if (ch == '-') {
      c_.accept("-");
      return number(true);
    }
    if (ch >= '0' && ch <= '9') return number(false);
    if (!is_name_start(ch)) return c_.expected("an expression");
    if (c_.peek("inf") || c_.peek("nan")) {
      size_t mark = c_.pos();
      if (c_.accept_word("inf") || c_.accept_word("nan")) {
        c_.reset(mark);
        return number(false);
      }
    }
    size_t col = c_.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string name, c_.name("an expression"));
    if (c_.accept("[")) {
      TESSERA_ASSIGN_OR_RETURN(ExprList index, read_expr_list(c_, ']', limits_, depth + 1, names_));
      TESSERA_TRY(c_.expect("]"));
      if (index.empty()) return c_.error_at(col, c_.pos() - col, "an array element needs an index");
      return Expr::element(name, std::move(index));
    }
    if (!c_.accept("(")) return names_ != nullptr ? names_->reference(name) : Expr::var(name);
    if (name == "min" || name == "max") {
      TESSERA_ASSIGN_OR_RETURN(ExprList a, call_args(2, name, col, depth));
      return name == "min" ? Expr::min(a[0], a[1]) : Expr::max(a[0], a[1]);
    }
    if (name == "select") {
      TESSERA_ASSIGN_OR_RETURN(ExprList a, call_args(3, name, col, depth));
      return Expr::select(a[0], a[1], a[2]);
    }
    if (std::optional<DType> to = parse_dtype(name); to && dtype_short_name(*to) == name) {
      TESSERA_ASSIGN_OR_RETURN(ExprList a, call_args(1, name, col, depth));
      return Expr::cast(*to, a[0]);
    }
    return c_.error_at(col, name.size(),
                       "unknown function '" + name +
                           "' in an expression (expected min, max, select or a cast such as f16)");
  }

  LineCursor& c_;
  const ParseLimits& limits_;
  const NameScope* names_;
};

}  // namespace

Expected<Expr> read_expr(LineCursor& c, const ParseLimits& limits, int depth, const NameScope* names) {
  return ExprReader(c, limits, names).expr(depth);
}

Expected<ExprList> read_expr_list(LineCursor& c, char close, const ParseLimits& limits, int depth,
                                  const NameScope* names) {
  ExprList out;
  if (c.peek_char() == close) return out;
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(Expr e, read_expr(c, limits, depth, names));
    out.push_back(std::move(e));
    if (!c.accept(",")) return out;
  }
}

}  // namespace tessera::ir_text

namespace tessera {

Expected<Expr> parse_expr(std::string_view text, const std::string& file, ParseLimits limits) {
  if (text.find('\n') != std::string_view::npos) {
    return make_error("an expression is one line").at(SourceLoc{file, 1, 1, 1}, std::string(text));
  }
  ir_text::TextLine line{text, 1, 0};
  ir_text::LineCursor c(line, file);
  TESSERA_ASSIGN_OR_RETURN(Expr e, ir_text::read_expr(c, limits));
  TESSERA_TRY(c.expect_end());
  return e;
}

}  // namespace tessera

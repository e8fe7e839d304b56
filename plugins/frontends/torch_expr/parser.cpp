// Recursive-descent parser for the torch_expr language (see parser.h). Precedence follows Python:
// conditional < or < and < not < comparisons < | < ^ < & < shifts < + - < * / // % @ < unary < **
// < postfix (call, attribute, subscript) < atoms.
#include "parser.h"

#include <algorithm>
#include <array>
#include <optional>
#include <set>

namespace tessera::torch_expr {
namespace {

constexpr int kMaxDepth = 150;
// Tallest expression tree accepted (a chain `x+x+...` of N terms is N levels tall). The tracer
// recurses once or twice per level; this keeps it far from the stack limit.
constexpr int kMaxExprHeight = 1000;

struct BinaryLevelOp {
  std::string_view text;
  BinaryOp op;
};

// Binary operator levels from the loosest to the tightest; level 6 is a unary factor.
const std::array<std::vector<BinaryLevelOp>, 6>& binary_levels() {
  static const std::array<std::vector<BinaryLevelOp>, 6> levels = {{
      {{"|", BinaryOp::BitOr}},
      {{"^", BinaryOp::BitXor}},
      {{"&", BinaryOp::BitAnd}},
      {{"<<", BinaryOp::LShift}, {">>", BinaryOp::RShift}},
      {{"+", BinaryOp::Add}, {"-", BinaryOp::Sub}},
      {{"*", BinaryOp::Mul}, {"/", BinaryOp::Div}, {"//", BinaryOp::FloorDiv}, {"%", BinaryOp::Mod},
       {"@", BinaryOp::MatMul}},
  }};
  return levels;
}

bool starts_expression(const Token& t) {
  switch (t.kind) {
    case TokenKind::Name:
    case TokenKind::Int:
    case TokenKind::Float:
    case TokenKind::String: return true;
    case TokenKind::Keyword:
      return t.text == "True" || t.text == "False" || t.text == "None" || t.text == "not" ||
             t.text == "lambda" || t.text == "await" || t.text == "yield";
    case TokenKind::Operator:
      return t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" || t.text == "+" ||
             t.text == "~" || t.text == "..." || t.text == "*";
    default: return false;
  }
}

std::string_view describe_target(const ExprNode& e) {
  if (e.as<CallExpr>()) return "function call";
  if (e.as<IntLiteral>() || e.as<FloatLiteral>() || e.as<StringLiteral>() || e.as<BoolLiteral>() ||
      e.as<NoneLiteral>() || e.as<EllipsisLiteral>())
    return "literal";
  if (e.as<CompareExpr>()) return "comparison";
  return "expression";
}

}  // namespace

// ---- token access ----------------------------------------------------------------------------

const Token& Parser::peek(size_t ahead) const {
  size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
  return tokens_[i];
}

const Token& Parser::advance() {
  const Token& t = tokens_[std::min(pos_, tokens_.size() - 1)];
  if (pos_ < tokens_.size() - 1) ++pos_;
  last_span_ = t.span;
  return t;
}

bool Parser::accept_op(std::string_view op) {
  if (!peek().is_op(op)) return false;
  advance();
  return true;
}

Status Parser::expect_op(std::string_view op, std::string_view context) {
  if (accept_op(op)) return Status::ok();
  std::string expected = "'";
  expected.append(op).append("'");
  if (!context.empty()) expected += " " + std::string(context);
  return unexpected(peek(), expected);
}

Diagnostic Parser::unexpected(const Token& t, std::string_view expected) const {
  return error_at(t, "invalid syntax: expected " + std::string(expected) + ", got " + describe_token(t));
}

Status Parser::check_depth(const Token& at) const {
  if (depth_ > kMaxDepth)
    return error_at(at, "program is nested too deeply (the limit is " + std::to_string(kMaxDepth) + " levels)");
  return Status::ok();
}

Status Parser::check_height(const ExprNode& e) const {
  if (e.height > kMaxExprHeight)
    return source_.error(e.span, "expression is too long or nested too deeply (more than " +
                                     std::to_string(kMaxExprHeight) +
                                     " levels of operators, calls, attributes or subscripts); split it "
                                     "into several statements");
  return Status::ok();
}

namespace {

int height_of(const ExprPtr& e) { return e ? e->height : 0; }

// The tallest child of each expression kind (leaves have none).
template <class T> int tallest_child(const T&) { return 0; }
int tallest_child(const TupleExpr& n) {
  int h = 0;
  for (const ExprPtr& item : n.items) h = std::max(h, height_of(item));
  return h;
}
int tallest_child(const AttributeExpr& n) { return height_of(n.value); }
int tallest_child(const CallExpr& n) {
  int h = height_of(n.callee);
  for (const CallArgument& a : n.args) h = std::max(h, height_of(a.value));
  return h;
}
int tallest_child(const BinaryExpr& n) { return std::max(height_of(n.lhs), height_of(n.rhs)); }
int tallest_child(const UnaryExpr& n) { return height_of(n.operand); }
int tallest_child(const CompareExpr& n) {
  int h = 0;
  for (const ExprPtr& o : n.operands) h = std::max(h, height_of(o));
  return h;
}
int tallest_child(const BoolExpr& n) { return std::max(height_of(n.lhs), height_of(n.rhs)); }
int tallest_child(const ConditionalExpr& n) {
  return std::max({height_of(n.body), height_of(n.cond), height_of(n.orelse)});
}
int tallest_child(const SubscriptExpr& n) { return std::max(height_of(n.value), height_of(n.index)); }
int tallest_child(const SliceExpr& n) {
  return std::max({height_of(n.lower), height_of(n.upper), height_of(n.step)});
}
int tallest_child(const StarredExpr& n) { return height_of(n.value); }
int tallest_child(const ComprehensionExpr& n) {
  int h = std::max({height_of(n.element), height_of(n.target), height_of(n.iter)});
  for (const ExprPtr& c : n.conditions) h = std::max(h, height_of(c));
  return h;
}

}  // namespace

template <class T>
ExprPtr Parser::make_expr(SourceSpan span, T node) const {
  auto e = std::make_unique<ExprNode>();
  e->span = span;
  e->height = 1 + tallest_child(node);
  e->node = std::move(node);
  return e;
}

// ---- statements ------------------------------------------------------------------------------

Expected<Program> Parser::parse_program() {
  if (tokens_.empty()) return source_.error(source_.end_span(), "internal error: no tokens");
  Program program;
  while (peek().kind != TokenKind::End) {
    if (peek().kind == TokenKind::Newline) {
      advance();
      continue;
    }
    TESSERA_TRY(parse_statement(program.body));
  }
  return program;
}

Status Parser::parse_statement(StmtList& out) {
  const Token& t = peek();
  DepthGuard guard(depth_);
  TESSERA_TRY(check_depth(t));
  if (t.kind == TokenKind::Indent) return error_at(t, "unexpected indent");
  if (t.kind == TokenKind::Dedent) return error_at(t, "unexpected unindent");
  if (t.is_op("@")) return error_at(t, "decorators are not supported");
  if (t.kind == TokenKind::Keyword) {
    if (t.text == "def" || t.text == "class") {
      Expected<StmtPtr> s = t.text == "def" ? parse_function_def() : parse_class_def();
      if (!s) return s.error();
      out.push_back(std::move(*s));
      return Status::ok();
    }
    if (t.text == "for" || t.text == "if") {
      Expected<StmtPtr> s = t.text == "for" ? parse_for() : parse_if();
      if (!s) return s.error();
      out.push_back(std::move(*s));
      return Status::ok();
    }
    if (t.text == "while")
      return error_at(t, "'while' loops are not supported: the trip count must be known at trace time; use "
                         "`for ... in range(n)`");
    if (t.text == "with" || t.text == "try" || t.text == "async")
      return error_at(t, "'" + t.text + "' statements are not supported");
  }
  return parse_simple_statements(out);
}

Status Parser::parse_simple_statements(StmtList& out) {
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(StmtPtr s, parse_small_statement());
    out.push_back(std::move(s));
    if (!accept_op(";")) break;
    if (peek().kind == TokenKind::Newline || peek().kind == TokenKind::End) break;
  }
  const Token& t = peek();
  if (t.kind == TokenKind::Newline) {
    advance();
    return Status::ok();
  }
  if (t.kind == TokenKind::End || t.kind == TokenKind::Dedent) return Status::ok();
  if (starts_expression(t) && t.kind != TokenKind::Keyword)
    return error_at(t, "invalid syntax: unexpected " + describe_token(t) + " (missing operator or comma?)");
  return error_at(t, "invalid syntax: unexpected " + describe_token(t));
}

Expected<StmtPtr> Parser::parse_small_statement() {
  const Token& t = peek();
  if (t.kind == TokenKind::Keyword) {
    if (t.text == "import") return parse_import();
    if (t.text == "from") return parse_from_import();
    if (t.text == "return") return parse_return();
    if (t.text == "pass") {
      advance();
      auto s = std::make_unique<StmtNode>();
      s->span = t.span;
      s->node = PassStmt{};
      return s;
    }
    static const std::set<std::string, std::less<>> unsupported = {
        "del", "global", "nonlocal", "raise", "assert", "break", "continue", "yield"};
    if (unsupported.count(t.text)) return error_at(t, "'" + t.text + "' statements are not supported");
    if (t.text == "else" || t.text == "elif" || t.text == "except" || t.text == "finally" ||
        t.text == "in" || t.text == "is" || t.text == "as" || t.text == "and" || t.text == "or")
      return error_at(t, "invalid syntax: unexpected keyword '" + t.text + "'");
  }
  return parse_expression_statement();
}

Status Parser::check_assignable(const ExprNode& target, bool allow_tuple) const {
  if (target.as<NameExpr>() || target.as<AttributeExpr>() || target.as<SubscriptExpr>()) return Status::ok();
  if (const auto* tuple = target.as<TupleExpr>(); tuple && allow_tuple) {
    if (tuple->items.empty()) return source_.error(target.span, "cannot assign to an empty tuple");
    for (const ExprPtr& item : tuple->items) TESSERA_TRY(check_assignable(*item, true));
    return Status::ok();
  }
  if (target.as<StarredExpr>())
    return source_.error(target.span, "starred assignment targets are not supported");
  return source_.error(target.span, "cannot assign to " + std::string(describe_target(target)));
}

Expected<StmtPtr> Parser::parse_expression_statement() {
  SourceSpan start = peek().span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr first, parse_expression_list(true));
  auto stmt = std::make_unique<StmtNode>();

  static const std::array<std::pair<std::string_view, BinaryOp>, 12> aug_ops = {{
      {"+=", BinaryOp::Add}, {"-=", BinaryOp::Sub}, {"*=", BinaryOp::Mul}, {"/=", BinaryOp::Div},
      {"//=", BinaryOp::FloorDiv}, {"%=", BinaryOp::Mod}, {"**=", BinaryOp::Pow}, {"@=", BinaryOp::MatMul},
      {"&=", BinaryOp::BitAnd}, {"|=", BinaryOp::BitOr}, {"^=", BinaryOp::BitXor}, {"<<=", BinaryOp::LShift}}};
  for (const auto& [text, op] : aug_ops) {
    if (!peek().is_op(text)) continue;
    if (!first->as<NameExpr>() && !first->as<AttributeExpr>() && !first->as<SubscriptExpr>())
      return source_.error(first->span, "'" + std::string(describe_target(*first)) +
                                            "' is an illegal target for augmented assignment");
    SourceSpan op_span = advance().span;
    TESSERA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression_list(false));
    stmt->node = AugAssignStmt{std::move(first), op, op_span, std::move(value)};
    stmt->span = span_from(start);
    return stmt;
  }
  if (peek().is_op(">>=")) return error_at(peek(), "operator '>>=' is not supported");
  if (peek().is_op(":")) return error_at(peek(), "variable annotations are not supported");

  if (!peek().is_op("=")) {
    if (first->as<StarredExpr>()) return source_.error(first->span, "can't use starred expression here");
    stmt->node = ExprStmt{std::move(first)};
    stmt->span = span_from(start);
    return stmt;
  }
  AssignStmt assign;
  ExprPtr value = std::move(first);
  while (accept_op("=")) {
    TESSERA_TRY(check_assignable(*value, true));
    assign.targets.push_back(std::move(value));
    TESSERA_ASSIGN_OR_RETURN(value, parse_expression_list(true));
  }
  if (value->as<StarredExpr>()) return source_.error(value->span, "can't use starred expression here");
  assign.value = std::move(value);
  stmt->node = std::move(assign);
  stmt->span = span_from(start);
  return stmt;
}

Expected<ImportAlias> Parser::parse_dotted_name(std::string_view what) {
  ImportAlias alias;
  if (peek().kind != TokenKind::Name) return unexpected(peek(), std::string(what));
  const Token& first = advance();
  alias.name = first.text;
  alias.span = first.span;
  while (peek().is_op(".")) {
    advance();
    if (peek().kind != TokenKind::Name) return unexpected(peek(), "a module name after '.'");
    alias.name += "." + advance().text;
  }
  alias.span = span_from(alias.span);
  return alias;
}

Expected<StmtPtr> Parser::parse_import() {
  SourceSpan start = advance().span;  // 'import'
  ImportStmt import;
  do {
    TESSERA_ASSIGN_OR_RETURN(ImportAlias alias, parse_dotted_name("a module name"));
    if (peek().is_keyword("as")) {
      advance();
      if (peek().kind != TokenKind::Name) return unexpected(peek(), "a name after 'as'");
      alias.as_name = advance().text;
    }
    import.names.push_back(std::move(alias));
  } while (accept_op(","));
  auto s = std::make_unique<StmtNode>();
  s->node = std::move(import);
  s->span = span_from(start);
  return s;
}

Expected<StmtPtr> Parser::parse_from_import() {
  SourceSpan start = advance().span;  // 'from'
  FromImportStmt from;
  if (peek().is_op(".")) return error_at(peek(), "relative imports are not supported");
  TESSERA_ASSIGN_OR_RETURN(ImportAlias module, parse_dotted_name("a module name"));
  from.module = module.name;
  from.module_span = module.span;
  if (!peek().is_keyword("import")) return unexpected(peek(), "'import'");
  advance();
  if (peek().is_op("*")) return error_at(peek(), "'from ... import *' is not supported");
  bool parenthesized = accept_op("(");
  do {
    if (parenthesized && peek().is_op(")")) break;
    if (peek().kind != TokenKind::Name) return unexpected(peek(), "a name to import");
    ImportAlias alias;
    const Token& name = advance();
    alias.name = name.text;
    alias.span = name.span;
    if (peek().is_keyword("as")) {
      advance();
      if (peek().kind != TokenKind::Name) return unexpected(peek(), "a name after 'as'");
      alias.as_name = advance().text;
    }
    from.names.push_back(std::move(alias));
  } while (accept_op(","));
  if (parenthesized) TESSERA_TRY(expect_op(")", "to close the import list"));
  auto s = std::make_unique<StmtNode>();
  s->node = std::move(from);
  s->span = span_from(start);
  return s;
}

Expected<StmtPtr> Parser::parse_return() {
  const Token& keyword = advance();
  SourceSpan start = keyword.span;
  ReturnStmt ret;
  if (starts_expression(peek())) {
    TESSERA_ASSIGN_OR_RETURN(ret.value, parse_expression_list(false));
  }
  auto s = std::make_unique<StmtNode>();
  s->node = std::move(ret);
  s->span = span_from(start);
  return s;
}

Expected<StmtList> Parser::parse_block(std::string_view owner, const Token& header) {
  TESSERA_TRY(expect_op(":", "to end the '" + std::string(owner) + "' header"));
  StmtList body;
  if (peek().kind != TokenKind::Newline) {  // `def f(x): return x`
    TESSERA_TRY(parse_simple_statements(body));
    return body;
  }
  advance();
  if (peek().kind != TokenKind::Indent)
    return error_at(peek(), "expected an indented block after '" + std::string(owner) +
                                "' statement on line " + std::to_string(header.span.line));
  advance();
  while (peek().kind != TokenKind::Dedent && peek().kind != TokenKind::End) {
    if (peek().kind == TokenKind::Newline) {
      advance();
      continue;
    }
    TESSERA_TRY(parse_statement(body));
  }
  if (peek().kind == TokenKind::Dedent) advance();
  return body;
}

Expected<StmtPtr> Parser::parse_function_def() {
  const Token header = advance();  // 'def'
  FunctionDef def;
  if (peek().kind != TokenKind::Name) return unexpected(peek(), "a function name after 'def'");
  const Token& name = advance();
  def.name = name.text;
  def.name_span = name.span;
  TESSERA_TRY(expect_op("(", "after the function name"));
  std::set<std::string, std::less<>> seen;
  bool saw_default = false;
  while (!peek().is_op(")")) {
    const Token& t = peek();
    if (t.is_op("*") || t.is_op("**") || t.is_op("/"))
      return error_at(t, "'" + t.text + "' in parameter lists is not supported");
    if (t.kind != TokenKind::Name) return unexpected(t, "a parameter name");
    Parameter p;
    p.name = advance().text;
    p.span = t.span;
    if (!seen.insert(p.name).second)
      return error_at(t, "duplicate argument '" + p.name + "' in function definition");
    if (accept_op(":")) {  // annotations are accepted and ignored
      TESSERA_ASSIGN_OR_RETURN(ExprPtr annotation, parse_expression());
      (void)annotation;
    }
    if (accept_op("=")) {
      TESSERA_ASSIGN_OR_RETURN(p.default_value, parse_expression());
      saw_default = true;
    } else if (saw_default) {
      return error_at(t, "parameter without a default follows parameter with a default");
    }
    def.params.push_back(std::move(p));
    if (!accept_op(",")) break;
  }
  TESSERA_TRY(expect_op(")", "to close the parameter list"));
  if (accept_op("->")) {
    TESSERA_ASSIGN_OR_RETURN(ExprPtr annotation, parse_expression());
    (void)annotation;
  }
  TESSERA_ASSIGN_OR_RETURN(def.body, parse_block("def", header));
  auto s = std::make_unique<StmtNode>();
  s->span = SourceSpan::cover(header.span, name.span);
  s->node = std::move(def);
  return s;
}

Expected<StmtPtr> Parser::parse_class_def() {
  const Token header = advance();  // 'class'
  ClassDef cls;
  if (peek().kind != TokenKind::Name) return unexpected(peek(), "a class name after 'class'");
  const Token& name = advance();
  cls.name = name.text;
  cls.name_span = name.span;
  if (accept_op("(")) {
    while (!peek().is_op(")")) {
      if (peek().kind == TokenKind::Name && peek(1).is_op("="))
        return error_at(peek(), "keyword arguments in class definitions are not supported");
      TESSERA_ASSIGN_OR_RETURN(ExprPtr base, parse_expression());
      cls.bases.push_back(std::move(base));
      if (!accept_op(",")) break;
    }
    TESSERA_TRY(expect_op(")", "to close the base class list"));
  }
  TESSERA_ASSIGN_OR_RETURN(cls.body, parse_block("class", header));
  auto s = std::make_unique<StmtNode>();
  s->span = SourceSpan::cover(header.span, name.span);
  s->node = std::move(cls);
  return s;
}

// ---- expressions -----------------------------------------------------------------------------

Expected<ExprPtr> Parser::parse_expression_list(bool allow_starred) {
  SourceSpan start = peek().span;
  auto parse_item = [&]() -> Expected<ExprPtr> {
    if (allow_starred && peek().is_op("*")) {
      SourceSpan star = advance().span;
      TESSERA_ASSIGN_OR_RETURN(ExprPtr value, parse_or());
      return make_expr(span_from(star), StarredExpr{std::move(value)});
    }
    return parse_expression();
  };
  TESSERA_ASSIGN_OR_RETURN(ExprPtr first, parse_item());
  if (!peek().is_op(",")) return first;
  TupleExpr tuple;
  tuple.items.push_back(std::move(first));
  while (accept_op(",")) {
    if (!starts_expression(peek())) break;  // trailing comma: `x = 1,`
    TESSERA_ASSIGN_OR_RETURN(ExprPtr item, parse_item());
    tuple.items.push_back(std::move(item));
  }
  return make_expr(span_from(start), std::move(tuple));
}

Expected<ExprPtr> Parser::parse_expression() {
  const Token& t = peek();
  DepthGuard guard(depth_);
  TESSERA_TRY(check_depth(t));
  if (t.is_keyword("lambda")) return error_at(t, "lambda expressions are not supported");
  if (t.is_keyword("yield") || t.is_keyword("await"))
    return error_at(t, "'" + t.text + "' expressions are not supported");
  SourceSpan start = t.span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr body, parse_or());
  if (peek().is_op(":=")) return error_at(peek(), "assignment expressions (':=') are not supported");
  if (!peek().is_keyword("if")) return body;
  advance();
  TESSERA_ASSIGN_OR_RETURN(ExprPtr cond, parse_or());
  if (!peek().is_keyword("else")) return unexpected(peek(), "'else' in the conditional expression");
  advance();
  TESSERA_ASSIGN_OR_RETURN(ExprPtr orelse, parse_expression());
  return make_expr(span_from(start), ConditionalExpr{std::move(body), std::move(cond), std::move(orelse)});
}

Expected<ExprPtr> Parser::parse_or() {
  SourceSpan start = peek().span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr lhs, parse_and());
  while (peek().is_keyword("or")) {
    advance();
    TESSERA_ASSIGN_OR_RETURN(ExprPtr rhs, parse_and());
    lhs = make_expr(span_from(start), BoolExpr{false, std::move(lhs), std::move(rhs)});
    TESSERA_TRY(check_height(*lhs));
  }
  return lhs;
}

Expected<ExprPtr> Parser::parse_and() {
  SourceSpan start = peek().span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr lhs, parse_not());
  while (peek().is_keyword("and")) {
    advance();
    TESSERA_ASSIGN_OR_RETURN(ExprPtr rhs, parse_not());
    lhs = make_expr(span_from(start), BoolExpr{true, std::move(lhs), std::move(rhs)});
    TESSERA_TRY(check_height(*lhs));
  }
  return lhs;
}

Expected<ExprPtr> Parser::parse_not() {
  if (!peek().is_keyword("not")) return parse_comparison();
  SourceSpan start = advance().span;
  DepthGuard guard(depth_);
  TESSERA_TRY(check_depth(peek()));
  TESSERA_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
  return make_expr(span_from(start), UnaryExpr{UnaryOp::Not, std::move(operand)});
}

Expected<ExprPtr> Parser::parse_comparison() {
  SourceSpan start = peek().span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr first, parse_binary_level(0));
  CompareExpr cmp;
  while (true) {
    const Token& t = peek();
    std::optional<CompareOp> op;
    SourceSpan op_span = t.span;
    if (t.kind == TokenKind::Operator) {
      if (t.text == "<") op = CompareOp::Lt;
      else if (t.text == "<=") op = CompareOp::Le;
      else if (t.text == ">") op = CompareOp::Gt;
      else if (t.text == ">=") op = CompareOp::Ge;
      else if (t.text == "==") op = CompareOp::Eq;
      else if (t.text == "!=") op = CompareOp::Ne;
      if (op) advance();
    } else if (t.is_keyword("in")) {
      op = CompareOp::In;
      advance();
    } else if (t.is_keyword("is")) {
      advance();
      op = CompareOp::Is;
      if (peek().is_keyword("not")) {
        op = CompareOp::IsNot;
        op_span = SourceSpan::cover(op_span, advance().span);
      }
    } else if (t.is_keyword("not") && peek(1).is_keyword("in")) {
      advance();
      op = CompareOp::NotIn;
      op_span = SourceSpan::cover(op_span, advance().span);
    }
    if (!op) break;
    TESSERA_ASSIGN_OR_RETURN(ExprPtr rhs, parse_binary_level(0));
    if (cmp.operands.empty()) cmp.operands.push_back(std::move(first));
    cmp.operands.push_back(std::move(rhs));
    cmp.ops.push_back(*op);
    cmp.op_spans.push_back(op_span);
  }
  if (cmp.ops.empty()) return first;
  return make_expr(span_from(start), std::move(cmp));
}

Expected<ExprPtr> Parser::parse_binary_level(int level) {
  if (level >= static_cast<int>(binary_levels().size())) return parse_factor();
  SourceSpan start = peek().span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr lhs, parse_binary_level(level + 1));
  while (true) {
    const Token& t = peek();
    const BinaryLevelOp* match = nullptr;
    if (t.kind == TokenKind::Operator)
      for (const BinaryLevelOp& candidate : binary_levels()[static_cast<size_t>(level)])
        if (candidate.text == t.text) match = &candidate;
    if (!match) return lhs;
    SourceSpan op_span = advance().span;
    TESSERA_ASSIGN_OR_RETURN(ExprPtr rhs, parse_binary_level(level + 1));
    lhs = make_expr(span_from(start), BinaryExpr{match->op, op_span, std::move(lhs), std::move(rhs)});
    TESSERA_TRY(check_height(*lhs));
  }
}

Expected<ExprPtr> Parser::parse_factor() {
  const Token& t = peek();
  std::optional<UnaryOp> op;
  if (t.is_op("-")) op = UnaryOp::Neg;
  else if (t.is_op("+")) op = UnaryOp::Pos;
  else if (t.is_op("~")) op = UnaryOp::Invert;
  if (!op) return parse_power();
  SourceSpan start = advance().span;
  DepthGuard guard(depth_);
  TESSERA_TRY(check_depth(peek()));
  TESSERA_ASSIGN_OR_RETURN(ExprPtr operand, parse_factor());
  return make_expr(span_from(start), UnaryExpr{*op, std::move(operand)});
}

Expected<ExprPtr> Parser::parse_power() {
  SourceSpan start = peek().span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr base, parse_postfix());
  if (!peek().is_op("**")) return base;
  SourceSpan op_span = advance().span;
  DepthGuard guard(depth_);
  TESSERA_TRY(check_depth(peek()));
  TESSERA_ASSIGN_OR_RETURN(ExprPtr exponent, parse_factor());  // right-associative, binds unary minus
  return make_expr(span_from(start), BinaryExpr{BinaryOp::Pow, op_span, std::move(base), std::move(exponent)});
}

Expected<ExprPtr> Parser::parse_postfix() {
  SourceSpan start = peek().span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr e, parse_atom());
  while (true) {
    if (peek().is_op(".")) {
      advance();
      const Token& name = peek();
      if (name.kind != TokenKind::Name) return unexpected(name, "an attribute name after '.'");
      advance();
      e = make_expr(span_from(start), AttributeExpr{std::move(e), name.text, name.span});
    } else if (peek().is_op("(")) {
      advance();
      CallExpr call;
      call.callee = std::move(e);
      TESSERA_TRY(parse_call_arguments(call));
      e = make_expr(span_from(start), std::move(call));
    } else if (peek().is_op("[")) {
      advance();
      TESSERA_ASSIGN_OR_RETURN(ExprPtr index, parse_subscript_index());
      TESSERA_TRY(expect_op("]", "to close the subscript"));
      e = make_expr(span_from(start), SubscriptExpr{std::move(e), std::move(index)});
    } else {
      return e;
    }
    TESSERA_TRY(check_height(*e));
  }
}

Status Parser::reject_comprehension() const {
  if (!peek().is_keyword("for")) return Status::ok();
  return error_at(peek(), "a comprehension must be the only item inside its brackets");
}

// A `for` target: names, attributes, subscripts and (parenthesized) tuples of them, stopping at
// `in` (which parse_expression would read as a comparison).
Expected<ExprPtr> Parser::parse_for_target() {
  SourceSpan start = peek().span;
  TESSERA_ASSIGN_OR_RETURN(ExprPtr first, parse_postfix());
  if (!peek().is_op(",")) {
    TESSERA_TRY(check_assignable(*first, true));
    return first;
  }
  TupleExpr tuple;
  tuple.items.push_back(std::move(first));
  while (accept_op(",")) {
    if (peek().is_keyword("in")) break;
    TESSERA_ASSIGN_OR_RETURN(ExprPtr item, parse_postfix());
    tuple.items.push_back(std::move(item));
  }
  ExprPtr target = make_expr(span_from(start), std::move(tuple));
  TESSERA_TRY(check_assignable(*target, true));
  return target;
}

Expected<ExprPtr> Parser::parse_comprehension(ExprPtr element, SourceSpan start) {
  advance();  // 'for'
  ComprehensionExpr comp;
  comp.element = std::move(element);
  TESSERA_ASSIGN_OR_RETURN(comp.target, parse_for_target());
  if (!peek().is_keyword("in")) return unexpected(peek(), "'in' in the comprehension");
  advance();
  TESSERA_ASSIGN_OR_RETURN(comp.iter, parse_or());
  while (peek().is_keyword("if")) {
    advance();
    TESSERA_ASSIGN_OR_RETURN(ExprPtr cond, parse_or());
    comp.conditions.push_back(std::move(cond));
  }
  if (peek().is_keyword("for")) return error_at(peek(), "comprehensions with more than one 'for' are not supported");
  return make_expr(span_from(start), std::move(comp));
}

Expected<StmtPtr> Parser::parse_for() {
  const Token header = advance();  // 'for'
  ForStmt loop;
  TESSERA_ASSIGN_OR_RETURN(loop.target, parse_for_target());
  if (!peek().is_keyword("in")) return unexpected(peek(), "'in' in the 'for' statement");
  advance();
  TESSERA_ASSIGN_OR_RETURN(loop.iter, parse_expression_list(false));
  TESSERA_ASSIGN_OR_RETURN(loop.body, parse_block("for", header));
  if (peek().is_keyword("else")) return error_at(peek(), "'for ... else' is not supported");
  auto s = std::make_unique<StmtNode>();
  s->span = header.span;
  s->node = std::move(loop);
  return s;
}

Expected<StmtPtr> Parser::parse_if() {
  const Token header = advance();  // 'if' or 'elif'
  IfStmt branch;
  TESSERA_ASSIGN_OR_RETURN(branch.cond, parse_expression());
  TESSERA_ASSIGN_OR_RETURN(branch.body, parse_block(header.text, header));
  if (peek().is_keyword("elif")) {
    TESSERA_ASSIGN_OR_RETURN(StmtPtr nested, parse_if());
    branch.orelse.push_back(std::move(nested));
  } else if (peek().is_keyword("else")) {
    const Token else_token = advance();
    TESSERA_ASSIGN_OR_RETURN(branch.orelse, parse_block("else", else_token));
  }
  auto s = std::make_unique<StmtNode>();
  s->span = header.span;
  s->node = std::move(branch);
  return s;
}

Status Parser::parse_call_arguments(CallExpr& call) {
  std::set<std::string, std::less<>> keywords;
  while (!peek().is_op(")")) {
    DepthGuard guard(depth_);
    TESSERA_TRY(check_depth(peek()));
    CallArgument arg;
    const Token& t = peek();
    if (t.is_op("**")) return error_at(t, "'**' arguments are not supported");
    if (t.is_op("*")) {
      advance();
      arg.starred = true;
    } else if (t.kind == TokenKind::Name && peek(1).is_op("=")) {
      arg.keyword = t.text;
      arg.keyword_span = t.span;
      if (!keywords.insert(arg.keyword).second)
        return error_at(t, "keyword argument repeated: '" + arg.keyword + "'");
      advance();
      advance();  // '='
    } else if (!keywords.empty()) {
      TESSERA_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      return source_.error(value->span, "positional argument follows keyword argument");
    }
    TESSERA_ASSIGN_OR_RETURN(arg.value, parse_expression());
    if (peek().is_keyword("for") && call.args.empty() && arg.keyword.empty() && !arg.starred) {
      // f(x for x in xs): a generator expression as the only argument.
      SourceSpan start = arg.value->span;
      TESSERA_ASSIGN_OR_RETURN(arg.value, parse_comprehension(std::move(arg.value), start));
      if (!peek().is_op(")")) return unexpected(peek(), "')' after the generator expression");
    }
    TESSERA_TRY(reject_comprehension());
    call.args.push_back(std::move(arg));
    if (!accept_op(",")) break;
  }
  if (!peek().is_op(")"))
    return unexpected(peek(), "',' or ')' to continue or close the call");
  advance();
  return Status::ok();
}

Expected<ExprPtr> Parser::parse_subscript_index() {
  SourceSpan start = peek().span;
  if (peek().is_op("]")) return error_at(peek(), "invalid syntax: expected an index inside '[]'");
  TESSERA_ASSIGN_OR_RETURN(ExprPtr first, parse_subscript_item());
  if (!peek().is_op(",")) return first;
  TupleExpr tuple;
  tuple.items.push_back(std::move(first));
  while (accept_op(",")) {
    if (peek().is_op("]")) break;
    TESSERA_ASSIGN_OR_RETURN(ExprPtr item, parse_subscript_item());
    tuple.items.push_back(std::move(item));
  }
  return make_expr(span_from(start), std::move(tuple));
}

Expected<ExprPtr> Parser::parse_subscript_item() {
  SourceSpan start = peek().span;
  auto ends_part = [this] { return peek().is_op(":") || peek().is_op(",") || peek().is_op("]"); };
  SliceExpr slice;
  if (!peek().is_op(":")) {
    TESSERA_ASSIGN_OR_RETURN(ExprPtr index, parse_expression());
    if (!peek().is_op(":")) return index;
    slice.lower = std::move(index);
  }
  advance();  // ':'
  if (!ends_part()) {
    TESSERA_ASSIGN_OR_RETURN(slice.upper, parse_expression());
  }
  if (accept_op(":") && !ends_part()) {
    TESSERA_ASSIGN_OR_RETURN(slice.step, parse_expression());
  }
  return make_expr(span_from(start), std::move(slice));
}

Expected<ExprPtr> Parser::parse_bracketed(const Token& open) {
  bool is_list = open.text == "[";
  std::string_view close = is_list ? "]" : ")";
  SourceSpan start = open.span;
  TupleExpr tuple;
  tuple.is_list = is_list;
  if (accept_op(close)) return make_expr(span_from(start), std::move(tuple));
  bool saw_comma = false;
  while (true) {
    ExprPtr item;
    if (peek().is_op("*")) {
      SourceSpan star = advance().span;
      TESSERA_ASSIGN_OR_RETURN(ExprPtr value, parse_or());
      item = make_expr(span_from(star), StarredExpr{std::move(value)});
    } else {
      TESSERA_ASSIGN_OR_RETURN(item, parse_expression());
    }
    if (peek().is_keyword("for") && tuple.items.empty() && !item->as<StarredExpr>()) {
      TESSERA_ASSIGN_OR_RETURN(ExprPtr comp, parse_comprehension(std::move(item), start));
      if (!peek().is_op(close)) return unexpected(peek(), "'" + std::string(close) + "' to close the comprehension");
      advance();
      comp->span = span_from(start);
      return comp;
    }
    TESSERA_TRY(reject_comprehension());
    tuple.items.push_back(std::move(item));
    if (!accept_op(",")) break;
    saw_comma = true;
    if (peek().is_op(close)) break;
  }
  if (!peek().is_op(close))
    return unexpected(peek(), "',' or '" + std::string(close) + "' (missing comma?)");
  advance();
  if (!is_list && !saw_comma) {  // a parenthesized expression, not a tuple
    ExprPtr inner = std::move(tuple.items.front());
    if (inner->as<StarredExpr>()) return source_.error(inner->span, "can't use starred expression here");
    return inner;
  }
  return make_expr(span_from(start), std::move(tuple));
}

Expected<ExprPtr> Parser::parse_atom() {
  const Token& t = peek();
  switch (t.kind) {
    case TokenKind::Name:
      advance();
      return make_expr(t.span, NameExpr{t.text});
    case TokenKind::Int:
      advance();
      return make_expr(t.span, IntLiteral{t.int_value});
    case TokenKind::Float:
      advance();
      return make_expr(t.span, FloatLiteral{t.float_value});
    case TokenKind::String: {
      SourceSpan start = advance().span;
      std::string value = t.text;
      while (peek().kind == TokenKind::String) value += advance().text;  // "a" "b" concatenates
      return make_expr(span_from(start), StringLiteral{std::move(value)});
    }
    case TokenKind::Keyword:
      if (t.text == "True" || t.text == "False") {
        advance();
        return make_expr(t.span, BoolLiteral{t.text == "True"});
      }
      if (t.text == "None") {
        advance();
        return make_expr(t.span, NoneLiteral{});
      }
      if (t.text == "lambda") return error_at(t, "lambda expressions are not supported");
      return unexpected(t, "an expression");
    case TokenKind::Operator:
      if (t.text == "(" || t.text == "[") {
        const Token open = advance();
        DepthGuard guard(depth_);
        TESSERA_TRY(check_depth(open));
        return parse_bracketed(open);
      }
      if (t.text == "{") return error_at(t, "dict and set literals are not supported");
      if (t.text == "...") {
        advance();
        return make_expr(t.span, EllipsisLiteral{});
      }
      return unexpected(t, "an expression");
    default:
      return unexpected(t, "an expression");
  }
}

std::string_view binary_op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Pow: return "**";
    case BinaryOp::MatMul: return "@";
    case BinaryOp::BitAnd: return "&";
    case BinaryOp::BitOr: return "|";
    case BinaryOp::BitXor: return "^";
    case BinaryOp::LShift: return "<<";
    case BinaryOp::RShift: return ">>";
  }
  return "?";
}

}  // namespace tessera::torch_expr

// Parser: tokens -> Program (ast.h). Recursive descent over Python's grammar, restricted to the
// torch_expr subset. `for` and `if` statements and single-`for` comprehensions are parsed (the
// tracer unrolls them); constructs outside the subset that a user is likely to try (while, lambda,
// nested comprehensions, dict literals, decorators, *args parameters) are rejected here with a
// message that names the construct and a caret under it.
#pragma once

#include <string_view>
#include <vector>

#include "ast.h"
#include "depth_guard.h"
#include "lexer.h"
#include "tessera/support/status.h"

namespace tessera::torch_expr {

class Parser {
 public:
  Parser(const SourceText& source, std::vector<Token> tokens)
      : source_(source), tokens_(std::move(tokens)) {}

  Expected<Program> parse_program();

 private:
  // Statements.
  Status parse_statement(StmtList& out);
  Status parse_simple_statements(StmtList& out);
  Expected<StmtPtr> parse_small_statement();
  Expected<StmtPtr> parse_expression_statement();
  Expected<StmtPtr> parse_import();
  Expected<StmtPtr> parse_from_import();
  Expected<StmtPtr> parse_return();
  Expected<StmtPtr> parse_function_def();
  Expected<StmtPtr> parse_class_def();
  Expected<StmtList> parse_block(std::string_view owner, const Token& header);
  Expected<ImportAlias> parse_dotted_name(std::string_view what);
  Status check_assignable(const ExprNode& target, bool allow_tuple) const;

  // Expressions, from the loosest binding to the tightest.
  Expected<ExprPtr> parse_expression_list(bool allow_starred);
  Expected<ExprPtr> parse_expression();
  Expected<ExprPtr> parse_or();
  Expected<ExprPtr> parse_and();
  Expected<ExprPtr> parse_not();
  Expected<ExprPtr> parse_comparison();
  Expected<ExprPtr> parse_binary_level(int level);
  Expected<ExprPtr> parse_factor();
  Expected<ExprPtr> parse_power();
  Expected<ExprPtr> parse_postfix();
  Expected<ExprPtr> parse_atom();
  Expected<ExprPtr> parse_bracketed(const Token& open);
  Expected<ExprPtr> parse_subscript_index();
  Expected<ExprPtr> parse_subscript_item();
  Status parse_call_arguments(CallExpr& call);
  Status reject_comprehension() const;
  // Loops, conditionals and comprehensions (traced by unrolling / at trace time).
  Expected<StmtPtr> parse_for();
  Expected<StmtPtr> parse_if();
  Expected<ExprPtr> parse_for_target();
  Expected<ExprPtr> parse_comprehension(ExprPtr element, SourceSpan start);

  // Token access.
  const Token& peek(size_t ahead = 0) const;
  const Token& advance();
  bool accept_op(std::string_view op);
  Status expect_op(std::string_view op, std::string_view context);
  Diagnostic error_at(const Token& t, std::string message) const { return source_.error(t.span, std::move(message)); }
  Diagnostic unexpected(const Token& t, std::string_view expected) const;
  SourceSpan span_from(const SourceSpan& start) const { return SourceSpan::cover(start, last_span_); }
  template <class T> ExprPtr make_expr(SourceSpan span, T node) const;

  // Guards the recursion depth so that "((((((...", "------x" or deeply nested defs produce an
  // error instead of exhausting the stack.
  Status check_depth(const Token& at) const;
  Status check_height(const ExprNode& e) const;

  const SourceText& source_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  SourceSpan last_span_;
  int depth_ = 0;
};

}  // namespace tessera::torch_expr

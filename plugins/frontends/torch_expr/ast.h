// The syntax tree of a torch_expr program: a small Python subset. The parser builds it in full
// (including constructs the tracer does not support yet, such as slices), so that unsupported
// features are reported by the tracer with a precise location instead of as syntax errors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "source_text.h"

namespace tessera::torch_expr {

struct ExprNode;
struct StmtNode;
using ExprPtr = std::unique_ptr<ExprNode>;
using StmtPtr = std::unique_ptr<StmtNode>;
using StmtList = std::vector<StmtPtr>;

// ---- expressions -----------------------------------------------------------------------------

struct NameExpr {
  std::string id;
};
struct NoneLiteral {};
struct EllipsisLiteral {};
struct BoolLiteral {
  bool value = false;
};
struct IntLiteral {
  int64_t value = 0;
};
struct FloatLiteral {
  double value = 0.0;
};
struct StringLiteral {
  std::string value;
};
// `(a, b)` or `[a, b]`; also the bare tuple of `return a, b` and `x = 1, 2`.
struct TupleExpr {
  std::vector<ExprPtr> items;
  bool is_list = false;
};
struct AttributeExpr {
  ExprPtr value;
  std::string attr;
  SourceSpan attr_span;
};
struct CallArgument {
  std::string keyword;       // empty for a positional argument
  SourceSpan keyword_span;
  ExprPtr value;
  bool starred = false;      // `*args` (parsed, not traced)
};
struct CallExpr {
  ExprPtr callee;
  std::vector<CallArgument> args;
};

enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, MatMul, BitAnd, BitOr, BitXor, LShift, RShift };

// The operator as written in source ("+", "//", "@", ...), for messages. Defined in parser.cpp.
std::string_view binary_op_symbol(BinaryOp op);
enum class UnaryOp { Neg, Pos, Invert, Not };
enum class CompareOp { Lt, Le, Gt, Ge, Eq, Ne, In, NotIn, Is, IsNot };

struct BinaryExpr {
  BinaryOp op = BinaryOp::Add;
  SourceSpan op_span;
  ExprPtr lhs;
  ExprPtr rhs;
};
struct UnaryExpr {
  UnaryOp op = UnaryOp::Neg;
  ExprPtr operand;
};
// `a < b <= c`: operands.size() == ops.size() + 1.
struct CompareExpr {
  std::vector<ExprPtr> operands;
  std::vector<CompareOp> ops;
  std::vector<SourceSpan> op_spans;
};
// `a and b or c` as nested BoolExprs.
struct BoolExpr {
  bool is_and = true;
  ExprPtr lhs;
  ExprPtr rhs;
};
// `body if cond else orelse`
struct ConditionalExpr {
  ExprPtr body;
  ExprPtr cond;
  ExprPtr orelse;
};
// `x[...]`: `index` is one expression, a SliceExpr, or a TupleExpr of those (x[:, 0]).
struct SubscriptExpr {
  ExprPtr value;
  ExprPtr index;
};
// `lower:upper:step` inside a subscript; each part may be absent.
struct SliceExpr {
  ExprPtr lower;
  ExprPtr upper;
  ExprPtr step;
};
struct StarredExpr {
  ExprPtr value;
};
// `[element for target in iter if condition]`, also a generator expression `(... for ...)`
// (traced as a list): one `for` clause, any number of `if` filters.
struct ComprehensionExpr {
  ExprPtr element;
  ExprPtr target;
  ExprPtr iter;
  std::vector<ExprPtr> conditions;
};

struct ExprNode {
  SourceSpan span;
  // 1 for a leaf, else 1 + the tallest child: the recursion depth the tracer will need for this
  // expression. The parser builds operator, call, attribute and subscript chains in loops, so it
  // checks this against a limit instead of relying on its own recursion guard.
  int height = 1;
  std::variant<NameExpr, NoneLiteral, EllipsisLiteral, BoolLiteral, IntLiteral, FloatLiteral,
               StringLiteral, TupleExpr, AttributeExpr, CallExpr, BinaryExpr, UnaryExpr,
               CompareExpr, BoolExpr, ConditionalExpr, SubscriptExpr, SliceExpr, StarredExpr,
               ComprehensionExpr>
      node;

  template <class T> const T* as() const { return std::get_if<T>(&node); }
};

// ---- statements ------------------------------------------------------------------------------

struct ExprStmt {
  ExprPtr value;
};
// `a = b = value`: every target receives the value (targets: names, tuples, attributes, subscripts).
struct AssignStmt {
  std::vector<ExprPtr> targets;
  ExprPtr value;
};
// `x += 1`
struct AugAssignStmt {
  ExprPtr target;
  BinaryOp op = BinaryOp::Add;
  SourceSpan op_span;
  ExprPtr value;
};
// `import torch.nn.functional as F` (one entry per comma-separated module).
struct ImportAlias {
  std::string name;       // dotted: "torch.nn.functional"; for `from` imports the imported name
  std::string as_name;    // empty when there is no `as`
  SourceSpan span;        // the dotted name
};
struct ImportStmt {
  std::vector<ImportAlias> names;
};
// `from torch import nn`
struct FromImportStmt {
  std::string module;
  SourceSpan module_span;
  std::vector<ImportAlias> names;
};
struct ReturnStmt {
  ExprPtr value;  // null for a bare `return`
};
struct PassStmt {};
struct Parameter {
  std::string name;
  SourceSpan span;
  ExprPtr default_value;  // null when required
};
struct FunctionDef {
  std::string name;
  SourceSpan name_span;
  std::vector<Parameter> params;
  StmtList body;
};
struct ClassDef {
  std::string name;
  SourceSpan name_span;
  std::vector<ExprPtr> bases;
  StmtList body;
};

// `for target in iter:` (traced by unrolling).
struct ForStmt {
  ExprPtr target;
  ExprPtr iter;
  StmtList body;
};
// `if cond: ... elif ...: ... else: ...` (the condition is a trace-time value; `elif` nests an
// IfStmt in orelse).
struct IfStmt {
  ExprPtr cond;
  StmtList body;
  StmtList orelse;
};

struct StmtNode {
  SourceSpan span;
  std::variant<ExprStmt, AssignStmt, AugAssignStmt, ImportStmt, FromImportStmt, ReturnStmt,
               PassStmt, FunctionDef, ClassDef, ForStmt, IfStmt>
      node;

  template <class T> const T* as() const { return std::get_if<T>(&node); }
};

struct Program {
  StmtList body;
};

}  // namespace tessera::torch_expr

// Tracer: symbolically executes a parsed torch_expr program and records every tensor operation
// as a Torch IR node. Python scalars, tuples and strings are evaluated at trace time (so shapes
// can be computed: `x.reshape(b, -1)`, `d ** -0.5`); tensors are graph nodes; nn.Module classes
// written in the program are instantiated and their forward() is inlined.
//
// The program's output is the value of its last statement, which must be an expression: a tensor
// or a (nested) tuple of tensors. Nodes the output does not depend on are dropped.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ast.h"
#include "call_signature.h"
#include "graph_builder.h"
#include "torch_library.h"
#include "traced_value.h"

namespace tessera::torch_expr {

class Tracer {
 public:
  Tracer(const SourceText& source, const FrontendOptions& options);

  Expected<Graph> trace(const Program& program);

 private:
  // Where names live while a statement runs.
  struct Frame {
    std::map<std::string, TracedValue>* locals = nullptr;  // null at top level: names are globals
    UserObject* self = nullptr;                              // the object whose method runs
    UserClass* method_class = nullptr;                       // the class defining that method (for super())
  };

  // Statements. `returned` is set by a `return` and stops the enclosing block.
  Status exec_block(const StmtList& body, Frame& frame, std::optional<TracedValue>& returned);
  Status exec(const StmtNode& stmt, Frame& frame, std::optional<TracedValue>& returned);
  Status exec_assign(const AssignStmt& assign, Frame& frame);
  Status exec_import(const ImportStmt& import, Frame& frame);
  Status exec_from_import(const FromImportStmt& from, Frame& frame);
  Status exec_function_def(const FunctionDef& def, Frame& frame, const std::string& qualified_name);
  Status exec_class_def(const ClassDef& cls, Frame& frame);
  Status assign_to(const ExprNode& target, const TracedValue& value, Frame& frame);
  void bind_name(const std::string& name, const TracedValue& value, Frame& frame);

  // Expressions. `name_hint` names the node the expression's outermost operation creates.
  // eval() never returns a TensorPiecesValue: it makes every piece of one. eval_keeping_pieces()
  // may, for the places that can use a split's pieces one by one (a name or attribute bound to
  // it, a subscript of it), so the pieces a program never reads get no nodes.
  Expected<TracedValue> eval(const ExprNode& e, Frame& frame, std::string_view name_hint = {});
  Expected<TracedValue> eval_keeping_pieces(const ExprNode& e, Frame& frame, std::string_view name_hint = {});
  Expected<TracedValue> all_pieces(TracedValue v);
  Expected<TracedValue> eval_name(const ExprNode& e, const NameExpr& name, Frame& frame);
  Expected<TracedValue> eval_attribute(const ExprNode& e, const AttributeExpr& attr, Frame& frame,
                                       std::string_view name_hint);
  Expected<TracedValue> eval_call(const ExprNode& e, const CallExpr& call, Frame& frame, std::string_view name_hint);
  Expected<TracedValue> eval_binary(const ExprNode& e, const BinaryExpr& bin, Frame& frame, std::string_view name_hint);
  Expected<TracedValue> eval_unary(const ExprNode& e, const UnaryExpr& un, Frame& frame, std::string_view name_hint);
  Expected<TracedValue> eval_compare(const ExprNode& e, const CompareExpr& cmp, Frame& frame,
                                     std::string_view name_hint);
  Expected<TracedValue> eval_subscript(const ExprNode& e, const SubscriptExpr& sub, Frame& frame,
                                       std::string_view name_hint);
  Expected<TracedValue> eval_sequence(const TupleExpr& tuple, Frame& frame);
  Expected<std::vector<ArgumentValue>> eval_arguments(const CallExpr& call, Frame& frame);

  // Calls.
  Expected<TracedValue> call_value(const TracedValue& callee, const std::vector<ArgumentValue>& args,
                                   const CallSite& site, const SourceSpan& callee_span, Frame& frame);
  Expected<TracedValue> invoke(UserFunction& fn, UserObject* self, UserClass* method_class,
                               const std::vector<ArgumentValue>& args, const CallSite& site);
  Expected<TracedValue> instantiate(UserClass& cls, const std::vector<ArgumentValue>& args, const CallSite& site);
  Expected<TracedValue> object_attribute(UserObject& object, const std::string& attr, const SourceSpan& span);

  // Python semantics for values known at trace time.
  Expected<TracedValue> fold_binary(BinaryOp op, const TracedValue& lhs, const TracedValue& rhs,
                                    const SourceSpan& span, const SourceSpan& op_span);
  Expected<TracedValue> fold_compare(CompareOp op, const TracedValue& lhs, const TracedValue& rhs,
                                     const SourceSpan& span);
  Expected<bool> truth(const TracedValue& v, const SourceSpan& span);
  Status collect_outputs(const TracedValue& v, const SourceSpan& span, std::vector<std::string>& out);

  // Idioms (tracer_idioms.cpp): loops and conditionals, comprehensions, Python builtins, the
  // math module, torch.finfo and nn.ModuleList / nn.Sequential.
  Status exec_for(const StmtNode& stmt, const ForStmt& loop, Frame& frame, std::optional<TracedValue>& returned);
  Status exec_if(const IfStmt& branch, Frame& frame, std::optional<TracedValue>& returned);
  Expected<TracedValue> eval_comprehension(const ExprNode& e, const ComprehensionExpr& comp, Frame& frame);
  Expected<std::vector<TracedValue>> iterate(const TracedValue& v, const SourceSpan& span);
  Status count_unrolled(const SourceSpan& span, size_t statements);
  static bool is_builtin(const std::string& name);
  Expected<TracedValue> call_builtin(const std::string& name, const std::vector<ArgumentValue>& args,
                                     const CallSite& site, Frame& frame);
  Expected<TracedValue> math_member(const std::string& name, const SourceSpan& span);
  Expected<TracedValue> construct_container(const std::string& kind, const std::vector<ArgumentValue>& args,
                                            const CallSite& site);
  Expected<TracedValue> container_item(ModuleContainer& c, const TracedValue& index, const SourceSpan& span);

  // Module conversion and mode (module_conversion.cpp): `.half()`, `.float()`, `.double()`,
  // `.bfloat16()`, `.to(...)`, `.cuda()`, `.cpu()`, `.eval()`, `.train()`, `.requires_grad_()`.
  struct ModuleChange {
    std::optional<DType> dtype;     // floating-point parameters become this dtype
    std::optional<bool> training;   // the training flag of every module of the tree
  };
  static bool is_module_method(const std::string& name);
  Expected<TracedValue> call_module_method(const ModuleMethodValue& method, const std::vector<ArgumentValue>& args,
                                           const CallSite& site);
  Status change_module_tree(const TracedValue& root, const ModuleChange& change, const CallSite& site);

  Diagnostic nested_too_deeply(const SourceSpan& span) const;
  std::vector<std::string> visible_names(const Frame& frame) const;
  static std::string callee_display(const ExprNode& callee);

  const SourceText& source_;
  GraphBuilder builder_;
  TorchLibrary library_;
  std::map<std::string, TracedValue> globals_;
  int call_depth_ = 0;
  int nesting_depth_ = 0;  // statements and expressions being run, across calls (kMaxNestingDepth)

  // The arena: every object the program creates lives until the trace ends.
  std::vector<std::unique_ptr<BuiltinModule>> modules_;
  std::vector<std::unique_ptr<UserClass>> classes_;
  std::vector<std::unique_ptr<UserObject>> objects_;
  std::vector<std::unique_ptr<UserFunction>> functions_;
  std::vector<std::unique_ptr<ModuleContainer>> containers_;
  size_t unrolled_statements_ = 0;  // statements run by loop iterations and comprehension elements
};

}  // namespace tessera::torch_expr

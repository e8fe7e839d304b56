// Symbolic execution of torch_expr programs (see tracer.h): statements, name resolution, user
// classes and functions, Python scalar folding, and dispatch of tensor operations to the
// TorchLibrary.
#include "tracer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "depth_guard.h"
#include "spelling_suggestion.h"

namespace tessera::torch_expr {
namespace {

constexpr int kMaxCallDepth = 64;
// The parser bounds the nesting of one statement or expression, but calls stack them on top of
// each other (`return -(-f(x))` nests three levels per call): this bounds the total, so a program
// that nests too deeply is an error, never a stack overflow.
constexpr int kMaxNestingDepth = 1000;  // as deep as the parser lets one expression be
constexpr size_t kMaxSequenceLength = 1 << 16;


// The Torch IR op name an operator becomes (also names the node when no variable does).
std::string binary_target(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::MatMul: return "matmul";
    default: return std::string("operator '") + std::string(binary_op_symbol(op)) + "'";
  }
}

std::string compare_target(CompareOp op) {
  switch (op) {
    case CompareOp::Lt: return "lt";
    case CompareOp::Le: return "le";
    case CompareOp::Gt: return "gt";
    case CompareOp::Ge: return "ge";
    case CompareOp::Eq: return "eq";
    case CompareOp::Ne: return "ne";
    default: return "compare";
  }
}

bool is_int_like(const TracedValue& v) { return v.is<int64_t>() || v.is<bool>(); }
int64_t int_of(const TracedValue& v) {
  if (const auto* b = v.as<bool>()) return *b ? 1 : 0;
  return *v.as<int64_t>();
}

// Python's floor division and modulo on ints (b != 0).
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

bool values_equal(const TracedValue& a, const TracedValue& b) {
  if (a.is_number() && b.is_number()) return a.number() == b.number();
  if (a.is<NoneValue>() || b.is<NoneValue>()) return a.is<NoneValue>() && b.is<NoneValue>();
  if (const auto* s = a.as<std::string>()) return b.is<std::string>() && *s == *b.as<std::string>();
  if (const auto* d = a.as<DTypeValue>()) return b.is<DTypeValue>() && d->dtype == b.as<DTypeValue>()->dtype;
  if (const auto* sa = a.as<SequenceValue>()) {
    const auto* sb = b.as<SequenceValue>();
    if (!sb || sa->is_list != sb->is_list || sa->items.size() != sb->items.size()) return false;
    for (size_t i = 0; i < sa->items.size(); ++i)
      if (!values_equal(sa->items[i], sb->items[i])) return false;
    return true;
  }
  return false;
}

}  // namespace

Tracer::Tracer(const SourceText& source, const FrontendOptions& options)
    : source_(source), builder_(source, options), library_(builder_) {
  // `torch`, `nn` and `F` are predefined so that one-line programs need no imports.
  globals_["torch"] = NamespaceValue{"torch"};
  globals_["nn"] = NamespaceValue{"torch.nn"};
  globals_["F"] = NamespaceValue{"torch.nn.functional"};
}

// ---- program and statements ------------------------------------------------------------------

Expected<Graph> Tracer::trace(const Program& program) {
  Frame top;
  std::optional<TracedValue> returned;
  const StmtList& body = program.body;
  for (size_t i = 0; i + 1 < body.size(); ++i) TESSERA_TRY(exec(*body[i], top, returned));

  const StmtNode* last = body.empty() ? nullptr : body.back().get();
  const ExprStmt* output_stmt = last ? last->as<ExprStmt>() : nullptr;
  if (!output_stmt) {
    if (last) TESSERA_TRY(exec(*last, top, returned));
    Diagnostic d = source_.error(last ? last->span : source_.end_span(),
                                 "program has no output expression: its last statement must be an expression "
                                 "giving the tensor (or tuple of tensors) to return");
    if (last)
      if (const auto* assign = last->as<AssignStmt>())
        if (const auto* name = assign->targets.back()->as<NameExpr>())
          d.note("add a final line `" + name->id + "` to return the value assigned to '" + name->id + "'");
    return d;
  }
  TESSERA_ASSIGN_OR_RETURN(TracedValue result, eval(*output_stmt->value, top));
  std::vector<std::string> outputs;
  TESSERA_TRY(collect_outputs(result, output_stmt->value->span, outputs));
  return builder_.finish(std::move(outputs));
}

Status Tracer::collect_outputs(const TracedValue& v, const SourceSpan& span, std::vector<std::string>& out) {
  if (const auto* t = v.as<TensorValue>()) {
    out.push_back(t->node);
    return Status::ok();
  }
  if (const auto* seq = v.as<SequenceValue>(); seq && !seq->items.empty()) {
    for (const TracedValue& item : seq->items) TESSERA_TRY(collect_outputs(item, span, out));
    return Status::ok();
  }
  return source_.error(span, "the program's output must be a tensor or a tuple of tensors, got " + describe_value(v));
}

Status Tracer::exec_block(const StmtList& body, Frame& frame, std::optional<TracedValue>& returned) {
  for (const StmtPtr& stmt : body) {
    TESSERA_TRY(exec(*stmt, frame, returned));
    if (returned) break;
  }
  return Status::ok();
}

Diagnostic Tracer::nested_too_deeply(const SourceSpan& span) const {
  return source_.error(span, "statements and expressions are nested too deeply across calls (the limit is " +
                                 std::to_string(kMaxNestingDepth) + " levels): is a function recursive?");
}

Status Tracer::exec(const StmtNode& stmt, Frame& frame, std::optional<TracedValue>& returned) {
  if (nesting_depth_ >= kMaxNestingDepth) return nested_too_deeply(stmt.span);
  DepthGuard guard(nesting_depth_);
  if (const auto* s = stmt.as<ExprStmt>()) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue ignored, eval_keeping_pieces(*s->value, frame));
    (void)ignored;
    return Status::ok();
  }
  if (const auto* s = stmt.as<AssignStmt>()) return exec_assign(*s, frame);
  if (const auto* s = stmt.as<AugAssignStmt>()) {
    const auto* name = s->target->as<NameExpr>();
    TESSERA_ASSIGN_OR_RETURN(TracedValue current, eval(*s->target, frame));
    TESSERA_ASSIGN_OR_RETURN(TracedValue operand, eval(*s->value, frame));
    CallSite site{binary_target(s->op), stmt.span, name ? name->id : std::string()};
    Expected<TracedValue> result = (current.is<TensorValue>() || operand.is<TensorValue>())
                                       ? library_.binary(s->op, current, operand, site)
                                       : fold_binary(s->op, current, operand, stmt.span, s->op_span);
    if (!result) return result.error();
    return assign_to(*s->target, *result, frame);
  }
  if (const auto* s = stmt.as<ImportStmt>()) return exec_import(*s, frame);
  if (const auto* s = stmt.as<FromImportStmt>()) return exec_from_import(*s, frame);
  if (const auto* s = stmt.as<ReturnStmt>()) {
    if (!frame.locals) return source_.error(stmt.span, "'return' outside function");
    if (!s->value) {
      returned = TracedValue(NoneValue{});
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*s->value, frame));
    returned = std::move(v);
    return Status::ok();
  }
  if (stmt.as<PassStmt>()) return Status::ok();
  if (const auto* s = stmt.as<FunctionDef>()) return exec_function_def(*s, frame, s->name);
  if (const auto* s = stmt.as<ClassDef>()) return exec_class_def(*s, frame);
  if (const auto* s = stmt.as<ForStmt>()) return exec_for(stmt, *s, frame, returned);
  if (const auto* s = stmt.as<IfStmt>()) return exec_if(*s, frame, returned);
  return source_.error(stmt.span, "unsupported statement");
}

Status Tracer::exec_assign(const AssignStmt& assign, Frame& frame) {
  const ExprNode& target = *assign.targets.front();
  TracedValue value;
  const auto* target_tuple = target.as<TupleExpr>();
  const auto* value_tuple = assign.value->as<TupleExpr>();
  if (assign.targets.size() == 1 && target_tuple && value_tuple &&
      target_tuple->items.size() == value_tuple->items.size()) {
    // `a, b = x + 1, x * 2`: each element is named after its own target.
    SequenceValue seq;
    seq.is_list = value_tuple->is_list;
    for (size_t i = 0; i < value_tuple->items.size(); ++i) {
      const auto* name = target_tuple->items[i]->as<NameExpr>();
      if (value_tuple->items[i]->as<StarredExpr>()) {
        TESSERA_ASSIGN_OR_RETURN(value, eval(*assign.value, frame));
        seq.items.clear();
        break;
      }
      TESSERA_ASSIGN_OR_RETURN(TracedValue item, eval(*value_tuple->items[i], frame, name ? name->id : ""));
      seq.items.push_back(std::move(item));
    }
    if (!seq.items.empty()) value = std::move(seq);
  } else {
    const auto* name = assign.targets.size() == 1 ? target.as<NameExpr>() : nullptr;
    TESSERA_ASSIGN_OR_RETURN(value, eval_keeping_pieces(*assign.value, frame, name ? name->id : ""));
  }
  for (const ExprPtr& t : assign.targets) TESSERA_TRY(assign_to(*t, value, frame));
  return Status::ok();
}

void Tracer::bind_name(const std::string& name, const TracedValue& value, Frame& frame) {
  if (frame.locals) {
    (*frame.locals)[name] = value;
    return;
  }
  // A module stored in a top-level variable takes the variable's name as its path.
  if (ModuleSlot* slot = module_slot(value)) slot->bind(nullptr, name);
  globals_[name] = value;
}

Status Tracer::assign_to(const ExprNode& target, const TracedValue& value, Frame& frame) {
  if (const auto* name = target.as<NameExpr>()) {
    bind_name(name->id, value, frame);
    return Status::ok();
  }
  if (const auto* attr = target.as<AttributeExpr>()) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue owner, eval(*attr->value, frame));
    auto* object = owner.as<UserObjectValue>();
    if (!object)
      return source_.error(target.span, "cannot set attribute '" + attr->attr + "' on " + describe_value(owner) +
                                            "; only attributes of nn.Module objects can be assigned");
    if (ModuleSlot* slot = module_slot(value)) slot->bind(object->object, attr->attr);
    object->object->attrs[attr->attr] = value;
    return Status::ok();
  }
  if (const auto* tuple = target.as<TupleExpr>()) {
    const auto* seq = value.as<SequenceValue>();
    const auto* pieces = value.as<TensorPiecesValue>();
    if (!seq && !pieces) {
      std::string what = value.is<TensorValue>() ? "unpacking a tensor is not supported"
                                                 : "cannot unpack " + describe_value(value);
      return source_.error(target.span, what);
    }
    const size_t n = seq ? seq->items.size() : static_cast<size_t>(pieces->pieces->count());
    if (n != tuple->items.size())
      return source_.error(target.span, (n > tuple->items.size() ? "too many" : "not enough") +
                                            std::string(" values to unpack (expected ") +
                                            std::to_string(tuple->items.size()) + ", got " + std::to_string(n) + ")");
    TESSERA_ASSIGN_OR_RETURN(TracedValue unpacked, all_pieces(value));
    const std::vector<TracedValue>& items = unpacked.as<SequenceValue>()->items;
    for (size_t i = 0; i < n; ++i) TESSERA_TRY(assign_to(*tuple->items[i], items[i], frame));
    return Status::ok();
  }
  if (target.as<SubscriptExpr>()) return source_.error(target.span, "item assignment is not supported");
  return source_.error(target.span, "cannot assign to this expression");
}

Status Tracer::exec_import(const ImportStmt& import, Frame& frame) {
  for (const ImportAlias& alias : import.names) {
    if (alias.name == "math") {  // trace-time scalar math: math.sqrt(d), math.pi
      bind_name(alias.as_name.empty() ? "math" : alias.as_name, NamespaceValue{"math"}, frame);
      continue;
    }
    if (alias.name != "torch" && alias.name.rfind("torch.", 0) != 0)
      return source_.error(alias.span, "import of '" + alias.name +
                                           "' is not supported: only torch, torch.nn and torch.nn.functional "
                                           "can be imported");
    if (!TorchLibrary::is_namespace(alias.name))
      return source_.error(alias.span, "module '" + alias.name + "' is not available" +
                                           did_you_mean(alias.name, {"torch", "torch.nn", "torch.nn.functional"}));
    // `import torch.nn` binds `torch`, like Python; `import torch.nn as nn` binds `nn`.
    if (alias.as_name.empty()) bind_name("torch", NamespaceValue{"torch"}, frame);
    else bind_name(alias.as_name, NamespaceValue{alias.name}, frame);
  }
  return Status::ok();
}

Status Tracer::exec_from_import(const FromImportStmt& from, Frame& frame) {
  if (from.module == "math") {
    for (const ImportAlias& alias : from.names) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue v, math_member(alias.name, alias.span));
      bind_name(alias.as_name.empty() ? alias.name : alias.as_name, v, frame);
    }
    return Status::ok();
  }
  if (from.module != "torch" && from.module.rfind("torch.", 0) != 0)
    return source_.error(from.module_span, "import from '" + from.module +
                                               "' is not supported: only torch, torch.nn and torch.nn.functional "
                                               "can be imported");
  if (!TorchLibrary::is_namespace(from.module))
    return source_.error(from.module_span, "module '" + from.module + "' is not available" +
                                               did_you_mean(from.module, {"torch", "torch.nn", "torch.nn.functional"}));
  for (const ImportAlias& alias : from.names) {
    std::optional<TracedValue> v = library_.member(from.module, alias.name);
    if (!v)
      return source_.error(alias.span, "cannot import name '" + alias.name + "' from '" + from.module + "'" +
                                           did_you_mean(alias.name, library_.member_names(from.module)));
    bind_name(alias.as_name.empty() ? alias.name : alias.as_name, *v, frame);
  }
  return Status::ok();
}

Status Tracer::exec_function_def(const FunctionDef& def, Frame& frame, const std::string& qualified_name) {
  auto fn = std::make_unique<UserFunction>();
  fn->def = &def;
  fn->qualified_name = qualified_name;
  for (const Parameter& p : def.params) {
    if (p.default_value) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*p.default_value, frame));
      fn->defaults.push_back(std::move(v));
      fn->has_default.push_back(true);
    } else {
      fn->defaults.push_back(NoneValue{});
      fn->has_default.push_back(false);
    }
  }
  functions_.push_back(std::move(fn));
  bind_name(def.name, UserFunctionValue{functions_.back().get(), nullptr}, frame);
  return Status::ok();
}

Status Tracer::exec_class_def(const ClassDef& def, Frame& frame) {
  auto cls = std::make_unique<UserClass>();
  cls->def = &def;
  cls->name = def.name;
  bool derives_from_module = false;
  for (const ExprPtr& base : def.bases) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue b, eval(*base, frame));
    if (const auto* mc = b.as<ModuleClassValue>(); mc && mc->name == "torch.nn.Module") {
      derives_from_module = true;
    } else if (const auto* uc = b.as<UserClassValue>(); uc && !cls->base) {
      cls->base = uc->cls;
      derives_from_module = true;
    } else {
      return source_.error(base->span, "class '" + def.name + "' may only derive from nn.Module (or one class "
                                                              "defined in the program), not " + describe_value(b));
    }
  }
  if (!derives_from_module)
    return source_.error(def.name_span, "class '" + def.name + "' must derive from nn.Module: write `class " +
                                            def.name + "(nn.Module):`");

  // The class body runs once, in its own namespace: methods and constant class attributes.
  for (const StmtPtr& s : def.body) {
    if (const auto* method = s->as<FunctionDef>()) {
      std::map<std::string, TracedValue> scratch;
      Frame class_frame{&scratch, nullptr, nullptr};
      TESSERA_TRY(exec_function_def(*method, class_frame, def.name + "." + method->name));
      cls->methods[method->name] = functions_.back().get();
    } else if (const auto* assign = s->as<AssignStmt>()) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*assign->value, frame));
      for (const ExprPtr& t : assign->targets) {
        const auto* name = t->as<NameExpr>();
        if (!name) return source_.error(t->span, "only simple names can be assigned in a class body");
        cls->class_attrs[name->id] = v;
      }
    } else if (s->as<PassStmt>()) {
    } else if (const auto* e = s->as<ExprStmt>(); e && e->value->as<StringLiteral>()) {
      // a docstring
    } else {
      return source_.error(s->span, "only method definitions and simple assignments are supported in a class body");
    }
  }
  classes_.push_back(std::move(cls));
  bind_name(def.name, UserClassValue{classes_.back().get()}, frame);
  return Status::ok();
}

// ---- expressions -----------------------------------------------------------------------------

Expected<TracedValue> Tracer::eval(const ExprNode& e, Frame& frame, std::string_view name_hint) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval_keeping_pieces(e, frame, name_hint));
  return all_pieces(std::move(v));
}

Expected<TracedValue> Tracer::all_pieces(TracedValue v) {
  if (auto* p = v.as<TensorPiecesValue>()) return library_.all_pieces(*p->pieces);
  return v;
}

Expected<TracedValue> Tracer::eval_keeping_pieces(const ExprNode& e, Frame& frame, std::string_view name_hint) {
  if (nesting_depth_ >= kMaxNestingDepth) return nested_too_deeply(e.span);
  DepthGuard guard(nesting_depth_);
  if (const auto* n = e.as<NameExpr>()) return eval_name(e, *n, frame);
  if (e.as<NoneLiteral>()) return TracedValue(NoneValue{});
  if (e.as<EllipsisLiteral>()) return TracedValue(EllipsisValue{});
  if (const auto* b = e.as<BoolLiteral>()) return TracedValue(b->value);
  if (const auto* i = e.as<IntLiteral>()) return TracedValue(i->value);
  if (const auto* f = e.as<FloatLiteral>()) return TracedValue(f->value);
  if (const auto* s = e.as<StringLiteral>()) return TracedValue(s->value);
  if (const auto* t = e.as<TupleExpr>()) return eval_sequence(*t, frame);
  if (const auto* a = e.as<AttributeExpr>()) return eval_attribute(e, *a, frame, name_hint);
  if (const auto* c = e.as<CallExpr>()) return eval_call(e, *c, frame, name_hint);
  if (const auto* b = e.as<BinaryExpr>()) return eval_binary(e, *b, frame, name_hint);
  if (const auto* u = e.as<UnaryExpr>()) return eval_unary(e, *u, frame, name_hint);
  if (const auto* c = e.as<CompareExpr>()) return eval_compare(e, *c, frame, name_hint);
  if (const auto* s = e.as<SubscriptExpr>()) return eval_subscript(e, *s, frame, name_hint);
  if (const auto* b = e.as<BoolExpr>()) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue lhs, eval(*b->lhs, frame));
    TESSERA_ASSIGN_OR_RETURN(bool lhs_true, truth(lhs, b->lhs->span));
    // Python returns the deciding operand: `a and b` is a when a is falsy, else b.
    if (b->is_and != lhs_true) return lhs;
    return eval(*b->rhs, frame, name_hint);
  }
  if (const auto* c = e.as<ConditionalExpr>()) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue cond, eval(*c->cond, frame));
    TESSERA_ASSIGN_OR_RETURN(bool taken, truth(cond, c->cond->span));
    return eval(taken ? *c->body : *c->orelse, frame, name_hint);
  }
  if (const auto* c = e.as<ComprehensionExpr>()) return eval_comprehension(e, *c, frame);
  if (e.as<StarredExpr>()) return source_.error(e.span, "can't use starred expression here");
  if (e.as<SliceExpr>()) return source_.error(e.span, "a slice is only valid inside '[]'");
  return source_.error(e.span, "unsupported expression");
}

std::vector<std::string> Tracer::visible_names(const Frame& frame) const {
  std::vector<std::string> names;
  if (frame.locals)
    for (const auto& [name, v] : *frame.locals) names.push_back(name);
  for (const auto& [name, v] : globals_) names.push_back(name);
  names.push_back("super");
  return names;
}

Expected<TracedValue> Tracer::eval_name(const ExprNode& e, const NameExpr& name, Frame& frame) {
  if (frame.locals)
    if (auto it = frame.locals->find(name.id); it != frame.locals->end()) return it->second;
  if (auto it = globals_.find(name.id); it != globals_.end()) return it->second;
  if (name.id == "super") return TracedValue(FunctionValue{"super"});
  if (is_builtin(name.id)) return TracedValue(FunctionValue{"builtins." + name.id});
  return source_.error(e.span, "name '" + name.id + "' is not defined" + did_you_mean(name.id, visible_names(frame)));
}

Expected<TracedValue> Tracer::object_attribute(UserObject& object, const std::string& attr, const SourceSpan& span) {
  if (auto it = object.attrs.find(attr); it != object.attrs.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [name, v] : object.attrs) names.push_back(name);
  for (UserClass* c = object.cls; c; c = c->base) {
    if (auto it = c->methods.find(attr); it != c->methods.end()) return TracedValue(UserFunctionValue{it->second, &object});
    if (auto it = c->class_attrs.find(attr); it != c->class_attrs.end()) return it->second;
    for (const auto& [name, fn] : c->methods) names.push_back(name);
    for (const auto& [name, v] : c->class_attrs) names.push_back(name);
  }
  return source_.error(span, "'" + object.cls->name + "' object has no attribute '" + attr + "'" +
                                 did_you_mean(attr, names));
}

Expected<TracedValue> Tracer::eval_attribute(const ExprNode& e, const AttributeExpr& attr, Frame& frame,
                                             std::string_view name_hint) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue owner, eval(*attr.value, frame));
  if (const auto* ns = owner.as<NamespaceValue>()) {
    if (ns->path == "math") return math_member(attr.attr, attr.attr_span);
    if (ns->path == "torch" && attr.attr == "finfo") return TracedValue(FunctionValue{"builtins.finfo"});
    if (std::optional<TracedValue> member = library_.member(ns->path, attr.attr)) return *member;
    std::vector<std::string> names = library_.member_names(ns->path);
    std::string what = ns->path == "torch.nn" ? "module" : ns->path == "torch" ? "function or attribute" : "function";
    Diagnostic d = source_.error(attr.attr_span, ns->path + " has no " + what + " '" + attr.attr + "'" +
                                                     did_you_mean(attr.attr, names));
    if (!closest_spelling(attr.attr, names)) {
      std::string list;
      for (const std::string& n : names)
        if (!n.empty() && n != "functional" && n != "nn") list += (list.empty() ? "" : ", ") + n;
      d.note("supported: " + list);
    }
    return d;
  }
  if (const auto* t = owner.as<TensorValue>()) {
    CallSite site{"transpose", e.span, std::string(name_hint)};
    return library_.tensor_attribute(t->node, attr.attr, attr.attr_span, site);
  }
  if (auto* o = owner.as<UserObjectValue>()) {
    // Tessera traces inference: a module's `training` flag reads False (as after .eval()) unless
    // the program called .train().
    if (attr.attr == "training" && !o->object->attrs.count("training")) return TracedValue(o->object->training);
    Expected<TracedValue> found = object_attribute(*o->object, attr.attr, attr.attr_span);
    // nn.Module's own methods, unless the class defines one of the same name.
    if (!found && is_module_method(attr.attr)) return TracedValue(ModuleMethodValue{*o, attr.attr});
    return found;
  }
  if (const auto* seq = owner.as<SequenceValue>()) {
    for (size_t i = 0; i < seq->field_names.size() && i < seq->items.size(); ++i)
      if (seq->field_names[i] == attr.attr) return seq->items[i];
    if (!seq->field_names.empty())
      return source_.error(attr.attr_span, "this result has no field '" + attr.attr + "'" +
                                               did_you_mean(attr.attr, seq->field_names));
  }
  if (const auto* c = owner.as<UserClassValue>()) {
    for (UserClass* k = c->cls; k; k = k->base) {
      if (auto it = k->methods.find(attr.attr); it != k->methods.end()) return TracedValue(UserFunctionValue{it->second, nullptr});
      if (auto it = k->class_attrs.find(attr.attr); it != k->class_attrs.end()) return it->second;
    }
    return source_.error(attr.attr_span, "class '" + c->cls->name + "' has no attribute '" + attr.attr + "'");
  }
  if (const auto* s = owner.as<SuperValue>()) {
    UserClass* base = s->cls ? s->cls->base : nullptr;
    for (UserClass* k = base; k; k = k->base)
      if (auto it = k->methods.find(attr.attr); it != k->methods.end())
        return TracedValue(UserFunctionValue{it->second, s->object});
    if (attr.attr == "__init__") return TracedValue(ModuleInitValue{});
    return source_.error(attr.attr_span, "super()." + attr.attr + " is not supported; only super().__init__() is");
  }
  if (owner.is<ModuleValue>() || owner.is<ContainerValue>()) {
    if (attr.attr == "training") return TracedValue(module_slot(owner)->training);
    if (is_module_method(attr.attr)) {
      if (const auto* m = owner.as<ModuleValue>()) return TracedValue(ModuleMethodValue{*m, attr.attr});
      return TracedValue(ModuleMethodValue{*owner.as<ContainerValue>(), attr.attr});
    }
  }
  if (owner.is<ModuleValue>())
    return source_.error(attr.attr_span, "attribute '" + attr.attr + "' of " + describe_value(owner) +
                                             " is not supported yet; call the module instead");
  return source_.error(attr.attr_span, describe_value(owner) + " has no attribute '" + attr.attr + "'");
}

Expected<TracedValue> Tracer::eval_sequence(const TupleExpr& tuple, Frame& frame) {
  SequenceValue seq;
  seq.is_list = tuple.is_list;
  for (const ExprPtr& item : tuple.items) {
    if (const auto* star = item->as<StarredExpr>()) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*star->value, frame));
      const auto* inner = v.as<SequenceValue>();
      if (!inner) return source_.error(item->span, "cannot unpack " + describe_value(v) + " with '*'");
      seq.items.insert(seq.items.end(), inner->items.begin(), inner->items.end());
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*item, frame));
    seq.items.push_back(std::move(v));
  }
  return TracedValue(std::move(seq));
}

Expected<std::vector<ArgumentValue>> Tracer::eval_arguments(const CallExpr& call, Frame& frame) {
  std::vector<ArgumentValue> args;
  for (const CallArgument& a : call.args) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*a.value, frame));
    if (a.starred) {
      const auto* seq = v.as<SequenceValue>();
      if (!seq) return source_.error(a.value->span, "cannot unpack " + describe_value(v) + " with '*'");
      for (const TracedValue& item : seq->items) args.push_back(ArgumentValue{"", {}, item, a.value->span});
      continue;
    }
    args.push_back(ArgumentValue{a.keyword, a.keyword_span, std::move(v), a.value->span});
  }
  return args;
}

std::string Tracer::callee_display(const ExprNode& callee) {
  if (const auto* n = callee.as<NameExpr>()) return n->id;
  if (const auto* a = callee.as<AttributeExpr>()) {
    std::string owner = callee_display(*a->value);
    return (owner.empty() ? "tensor" : owner) + "." + a->attr;
  }
  return "";
}

Expected<TracedValue> Tracer::eval_call(const ExprNode& e, const CallExpr& call, Frame& frame,
                                        std::string_view name_hint) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue callee, eval(*call.callee, frame));
  TESSERA_ASSIGN_OR_RETURN(std::vector<ArgumentValue> args, eval_arguments(call, frame));
  std::string display = callee_display(*call.callee);
  CallSite site{display.empty() ? describe_value(callee) : display, e.span, std::string(name_hint)};
  return call_value(callee, args, site, call.callee->span, frame);
}

Expected<TracedValue> Tracer::call_value(const TracedValue& callee, const std::vector<ArgumentValue>& args,
                                         const CallSite& site, const SourceSpan& callee_span, Frame& frame) {
  if (const auto* f = callee.as<FunctionValue>()) {
    if (f->name == "super") {
      if (!frame.self) return source_.error(site.span, "super() is only supported inside methods of a class");
      if (!args.empty() && args.size() != 2)
        return source_.error(site.span, "super() takes no arguments (or the class and self)");
      return TracedValue(SuperValue{frame.self, frame.method_class});
    }
    if (f->name.rfind("builtins.", 0) == 0) return call_builtin(f->name.substr(9), args, site, frame);
    return library_.call_function(f->name, args, site);
  }
  if (const auto* c = callee.as<ModuleClassValue>(); c && (c->name == "torch.nn.ModuleList" || c->name == "torch.nn.Sequential"))
    return construct_container(c->name.substr(9), args, site);
  if (const auto* c = callee.as<ContainerValue>()) {
    if (c->container->kind != "Sequential")
      return source_.error(site.span, "an nn." + c->container->kind + " is not callable; call its modules");
    // nn.Sequential: each module's output is the next one's input.
    std::vector<ArgumentValue> current = args;
    TracedValue out;
    for (const TracedValue& m : c->container->items) {
      TESSERA_ASSIGN_OR_RETURN(out, call_value(m, current, site, callee_span, frame));
      current = {ArgumentValue{"", {}, out, site.span}};
    }
    if (c->container->items.empty()) {
      if (args.size() != 1) return source_.error(site.span, "an empty nn.Sequential takes one input");
      return args[0].value;
    }
    return out;
  }
  if (const auto* c = callee.as<ModuleClassValue>()) {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<BuiltinModule> m, library_.construct_module(c->name, args, site));
    modules_.push_back(std::move(m));
    return TracedValue(ModuleValue{modules_.back().get()});
  }
  if (const auto* m = callee.as<ModuleValue>()) return library_.call_module(*m->module, args, site);
  if (const auto* method = callee.as<TensorMethodValue>())
    return library_.call_tensor_method(method->node, method->method, args, site);
  if (const auto* c = callee.as<UserClassValue>()) return instantiate(*c->cls, args, site);
  if (const auto* o = callee.as<UserObjectValue>()) {
    for (UserClass* k = o->object->cls; k; k = k->base)
      if (auto it = k->methods.find("forward"); it != k->methods.end())
        return invoke(*it->second, o->object, k, args, site);
    return source_.error(site.span, "'" + o->object->cls->name + "' object has no forward() method to call");
  }
  if (const auto* f = callee.as<UserFunctionValue>()) {
    UserClass* owner = nullptr;
    if (f->self)
      for (UserClass* k = f->self->cls; k && !owner; k = k->base)
        for (const auto& [name, fn] : k->methods)
          if (fn == f->function) owner = k;
    return invoke(*f->function, f->self, owner, args, site);
  }
  if (callee.is<ModuleInitValue>()) return TracedValue(NoneValue{});  // nn.Module.__init__ has nothing to do here
  if (const auto* m = callee.as<ModuleMethodValue>()) return call_module_method(*m, args, site);
  return source_.error(callee_span, describe_value(callee) + " is not callable");
}

Expected<TracedValue> Tracer::invoke(UserFunction& fn, UserObject* self, UserClass* method_class,
                                     const std::vector<ArgumentValue>& args, const CallSite& site) {
  if (call_depth_ >= kMaxCallDepth)
    return source_.error(site.span, "maximum call depth (" + std::to_string(kMaxCallDepth) +
                                        ") exceeded: is " + fn.qualified_name + "() recursive?");
  const FunctionDef& def = *fn.def;
  const std::string callee = fn.qualified_name + "()";
  std::map<std::string, TracedValue> locals;
  std::vector<bool> bound(def.params.size(), false);
  size_t next = 0;
  if (self) {
    if (def.params.empty())
      return source_.error(site.span, callee + " takes no parameters, but is called as a method with self");
    locals[def.params[0].name] = UserObjectValue{self};
    bound[0] = true;
    next = 1;
  }
  for (const ArgumentValue& a : args) {
    if (!a.keyword.empty()) continue;
    if (next >= def.params.size())
      return source_.error(a.span, callee + " takes " + std::to_string(def.params.size() - (self ? 1 : 0)) +
                                       " positional argument(s) but more were given");
    locals[def.params[next].name] = a.value;
    bound[next++] = true;
  }
  for (const ArgumentValue& a : args) {
    if (a.keyword.empty()) continue;
    size_t i = 0;
    while (i < def.params.size() && def.params[i].name != a.keyword) ++i;
    if (i == def.params.size() || (self && i == 0)) {
      std::vector<std::string> names;
      for (size_t k = self ? 1 : 0; k < def.params.size(); ++k) names.push_back(def.params[k].name);
      return source_.error(a.keyword_span, callee + " got an unexpected keyword argument '" + a.keyword + "'" +
                                               did_you_mean(a.keyword, names));
    }
    if (bound[i]) return source_.error(a.keyword_span, callee + " got multiple values for argument '" + a.keyword + "'");
    locals[a.keyword] = a.value;
    bound[i] = true;
  }
  for (size_t i = 0; i < def.params.size(); ++i) {
    if (bound[i]) continue;
    if (!fn.has_default[i])
      return source_.error(site.span, callee + " missing required argument '" + def.params[i].name + "'");
    locals[def.params[i].name] = fn.defaults[i];
  }

  Frame frame{&locals, self, method_class};
  std::optional<TracedValue> returned;
  ++call_depth_;
  library_.set_inside_function(true);
  Status s = exec_block(def.body, frame, returned);
  --call_depth_;
  library_.set_inside_function(call_depth_ > 0);
  if (!s) {
    Diagnostic d = std::move(s).error();
    d.note("in " + callee + ", called at " + source_.loc(site.span).str());
    return d;
  }
  return returned ? *returned : TracedValue(NoneValue{});
}

Expected<TracedValue> Tracer::instantiate(UserClass& cls, const std::vector<ArgumentValue>& args, const CallSite& site) {
  objects_.push_back(std::make_unique<UserObject>());
  UserObject* object = objects_.back().get();
  object->cls = &cls;
  for (UserClass* k = &cls; k; k = k->base) {
    auto it = k->methods.find("__init__");
    if (it == k->methods.end()) continue;
    TESSERA_ASSIGN_OR_RETURN(TracedValue r, invoke(*it->second, object, k, args, site));
    if (!r.is<NoneValue>()) return source_.error(site.span, cls.name + ".__init__() should return None");
    return TracedValue(UserObjectValue{object});
  }
  if (!args.empty()) return source_.error(site.span, cls.name + "() takes no arguments");
  return TracedValue(UserObjectValue{object});
}

Expected<TracedValue> Tracer::eval_binary(const ExprNode& e, const BinaryExpr& bin, Frame& frame,
                                          std::string_view name_hint) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue lhs, eval(*bin.lhs, frame));
  TESSERA_ASSIGN_OR_RETURN(TracedValue rhs, eval(*bin.rhs, frame));
  if (lhs.is<TensorValue>() || rhs.is<TensorValue>()) {
    CallSite site{binary_target(bin.op), e.span, std::string(name_hint)};
    return library_.binary(bin.op, lhs, rhs, site);
  }
  return fold_binary(bin.op, lhs, rhs, e.span, bin.op_span);
}

Expected<TracedValue> Tracer::eval_unary(const ExprNode& e, const UnaryExpr& un, Frame& frame,
                                         std::string_view name_hint) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*un.operand, frame));
  if (const auto* t = v.as<TensorValue>()) {
    CallSite site{un.op == UnaryOp::Neg ? "neg" : "unary operator", e.span, std::string(name_hint)};
    return library_.unary(un.op, t->node, site);
  }
  if (un.op == UnaryOp::Not) {
    TESSERA_ASSIGN_OR_RETURN(bool b, truth(v, un.operand->span));
    return TracedValue(!b);
  }
  if (!v.is_number())
    return source_.error(e.span, "bad operand type for unary operator: " + describe_value(v));
  if (un.op == UnaryOp::Invert) {
    if (!is_int_like(v)) return source_.error(e.span, "bad operand type for unary ~: " + describe_value(v));
    return TracedValue(~int_of(v));
  }
  if (is_int_like(v)) {
    int64_t i = int_of(v);
    if (un.op == UnaryOp::Pos) return TracedValue(i);
    if (i == std::numeric_limits<int64_t>::min()) return source_.error(e.span, "integer overflow");
    return TracedValue(-i);
  }
  return TracedValue(un.op == UnaryOp::Neg ? -v.number() : v.number());
}

Expected<TracedValue> Tracer::eval_compare(const ExprNode& e, const CompareExpr& cmp, Frame& frame,
                                           std::string_view name_hint) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue lhs, eval(*cmp.operands[0], frame));
  TracedValue result = true;
  for (size_t i = 0; i < cmp.ops.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue rhs, eval(*cmp.operands[i + 1], frame));
    const bool identity = cmp.ops[i] == CompareOp::Is || cmp.ops[i] == CompareOp::IsNot;
    if (identity && (lhs.is<TensorValue>() || rhs.is<TensorValue>())) {
      // `mask is None` on a tensor: identity is known at trace time (the same node or not).
      const auto* a = lhs.as<TensorValue>();
      const auto* b = rhs.as<TensorValue>();
      bool same = a && b && a->node == b->node;
      if (same != (cmp.ops[i] == CompareOp::Is)) return TracedValue(false);
      lhs = std::move(rhs);
      continue;
    }
    if (lhs.is<TensorValue>() || rhs.is<TensorValue>()) {
      if (cmp.ops.size() > 1)
        return source_.error(e.span, "chained comparisons involving tensors are not supported; use & on two comparisons");
      CallSite site{compare_target(cmp.ops[i]), e.span, std::string(name_hint)};
      return library_.compare(cmp.ops[i], lhs, rhs, site);
    }
    TESSERA_ASSIGN_OR_RETURN(TracedValue r, fold_compare(cmp.ops[i], lhs, rhs, e.span));
    if (!*r.as<bool>()) return TracedValue(false);
    lhs = std::move(rhs);
  }
  return result;
}

Expected<TracedValue> Tracer::eval_subscript(const ExprNode& e, const SubscriptExpr& sub, Frame& frame,
                                             std::string_view name_hint) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue owner, eval_keeping_pieces(*sub.value, frame));
  if (const auto* t = owner.as<TensorValue>()) {
    // `x[a, b:c, ..., None]`: each component evaluated here, applied by the catalog.
    std::vector<const ExprNode*> parts;
    if (const auto* tuple = sub.index->as<TupleExpr>(); tuple && !tuple->is_list)
      for (const ExprPtr& item : tuple->items) parts.push_back(item.get());
    else
      parts.push_back(sub.index.get());
    std::vector<TensorIndexItem> items;
    for (const ExprNode* part : parts) {
      TensorIndexItem item;
      item.span = part->span;
      if (const auto* slice = part->as<SliceExpr>()) {
        item.kind = TensorIndexItem::Kind::Slice;
        for (auto [expr, out, what] : {std::tuple{&slice->lower, &item.start, "start"},
                                       std::tuple{&slice->upper, &item.stop, "stop"},
                                       std::tuple{&slice->step, &item.step, "step"}}) {
          if (!*expr) continue;
          TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(**expr, frame));
          if (v.is<NoneValue>()) continue;
          if (!is_int_like(v))
            return source_.error((*expr)->span, std::string("slice ") + what + " must be an int or None, got " +
                                                    describe_value(v));
          *out = int_of(v);
        }
      } else {
        TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*part, frame));
        if (v.is<EllipsisValue>()) {
          item.kind = TensorIndexItem::Kind::Ellipsis;
        } else if (v.is<NoneValue>()) {
          item.kind = TensorIndexItem::Kind::NewAxis;
        } else if (is_int_like(v)) {
          item.kind = TensorIndexItem::Kind::Integer;
          item.integer = int_of(v);
        } else if (const auto* index = v.as<TensorValue>(); index && parts.size() == 1) {
          CallSite site{"indexing", e.span, std::string(name_hint)};
          return library_.index_with_tensor(t->node, index->node, site);
        } else {
          return source_.error(part->span, "tensors can only be indexed with ints, slices, '...' and None, got " +
                                               describe_value(v));
        }
      }
      items.push_back(std::move(item));
    }
    CallSite site{"indexing", e.span, std::string(name_hint)};
    return library_.index_tensor(t->node, items, site);
  }
  if (const auto* c = owner.as<ContainerValue>()) {
    if (sub.index->as<SliceExpr>()) {
      // A slice of a container: its modules as a list (to iterate or index further).
      const auto& all = c->container->items;
      const auto* slice = sub.index->as<SliceExpr>();
      std::optional<int64_t> bounds[3];
      const ExprPtr* parts[3] = {&slice->lower, &slice->upper, &slice->step};
      for (int i = 0; i < 3; ++i) {
        if (!*parts[i]) continue;
        TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(**parts[i], frame));
        if (v.is<NoneValue>()) continue;
        if (!is_int_like(v)) return source_.error((*parts[i])->span, "slice indices must be ints");
        bounds[i] = int_of(v);
      }
      const int64_t n = static_cast<int64_t>(all.size());
      const int64_t step = bounds[2].value_or(1);
      if (step != 1) return source_.error(sub.index->span, "only step 1 slices of a module container are supported");
      auto clampi = [n](std::optional<int64_t> v, int64_t fallback) {
        if (!v) return fallback;
        return std::clamp<int64_t>(*v < 0 ? *v + n : *v, 0, n);
      };
      SequenceValue out;
      out.is_list = true;
      for (int64_t i = clampi(bounds[0], 0); i < clampi(bounds[1], n); ++i) out.items.push_back(all[static_cast<size_t>(i)]);
      return TracedValue(std::move(out));
    }
    TESSERA_ASSIGN_OR_RETURN(TracedValue index, eval(*sub.index, frame));
    return container_item(*c->container, index, sub.index->span);
  }
  const auto* seq = owner.as<SequenceValue>();
  const auto* pieces = owner.as<TensorPiecesValue>();
  if (!seq && !pieces) return source_.error(sub.value->span, describe_value(owner) + " is not subscriptable");
  const int64_t n = seq ? static_cast<int64_t>(seq->items.size()) : pieces->pieces->count();
  // A split's pieces are made as they are indexed.
  auto item = [&](int64_t i) -> Expected<TracedValue> {
    if (seq) return seq->items[static_cast<size_t>(i)];
    return library_.piece(*pieces->pieces, i);
  };

  if (const auto* slice = sub.index->as<SliceExpr>()) {
    auto part = [&](const ExprPtr& p, const char* what) -> Expected<std::optional<int64_t>> {
      if (!p) return std::optional<int64_t>();
      TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*p, frame));
      if (v.is<NoneValue>()) return std::optional<int64_t>();
      if (!is_int_like(v)) return source_.error(p->span, std::string("slice ") + what + " must be an int or None, got " +
                                                             describe_value(v));
      return std::optional<int64_t>(int_of(v));
    };
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> lower, part(slice->lower, "start"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> upper, part(slice->upper, "stop"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> step_opt, part(slice->step, "step"));
    int64_t step = step_opt.value_or(1);
    if (step == 0) return source_.error(sub.index->span, "slice step cannot be zero");
    // Python's slice.indices().
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
      if (!v) return fallback;
      int64_t x = *v < 0 ? *v + n : *v;
      if (step > 0) return std::clamp<int64_t>(x, 0, n);
      return std::clamp<int64_t>(x, -1, n - 1);
    };
    int64_t start = clamp(lower, step > 0 ? 0 : n - 1);
    int64_t stop = clamp(upper, step > 0 ? n : -1);
    SequenceValue out;
    out.is_list = seq && seq->is_list;
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue picked, item(i));
      out.items.push_back(std::move(picked));
      if (__builtin_add_overflow(i, step, &i)) break;
    }
    return TracedValue(std::move(out));
  }
  TESSERA_ASSIGN_OR_RETURN(TracedValue index, eval(*sub.index, frame));
  if (!is_int_like(index))
    return source_.error(sub.index->span, describe_value(owner) + " indices must be integers, got " + describe_value(index));
  int64_t i = int_of(index);
  if (i < -n || i >= n) return source_.error(sub.index->span, describe_value(owner) + " index out of range");
  return item(i < 0 ? i + n : i);
}

// ---- Python semantics for trace-time values --------------------------------------------------

Expected<bool> Tracer::truth(const TracedValue& v, const SourceSpan& span) {
  if (v.is<TensorValue>())
    return source_.error(span, "the truth value of a traced tensor is unknown at trace time; data-dependent "
                               "control flow is not supported");
  if (v.is<NoneValue>()) return false;
  if (v.is_number()) return v.number() != 0.0;
  if (const auto* s = v.as<std::string>()) return !s->empty();
  if (const auto* seq = v.as<SequenceValue>()) return !seq->items.empty();
  return true;
}

Expected<TracedValue> Tracer::fold_binary(BinaryOp op, const TracedValue& lhs, const TracedValue& rhs,
                                          const SourceSpan& span, const SourceSpan& op_span) {
  auto unsupported = [&] {
    return source_.error(span, "unsupported operand types for " + std::string(binary_op_symbol(op)) + ": " +
                                   describe_value(lhs) + " and " + describe_value(rhs));
  };
  // Sequences: concatenation and repetition, e.g. `x.shape[:-1] + (n,)`.
  const auto* ls = lhs.as<SequenceValue>();
  const auto* rs = rhs.as<SequenceValue>();
  if (ls || rs) {
    if (op == BinaryOp::Add && ls && rs && ls->is_list == rs->is_list) {
      SequenceValue out = *ls;
      out.items.insert(out.items.end(), rs->items.begin(), rs->items.end());
      if (out.items.size() > kMaxSequenceLength) return source_.error(span, "sequence is too long");
      return TracedValue(std::move(out));
    }
    if (op == BinaryOp::Mul && ((ls && is_int_like(rhs)) || (rs && is_int_like(lhs)))) {
      const SequenceValue& s = ls ? *ls : *rs;
      int64_t times = s.items.empty() ? 0 : std::max<int64_t>(0, int_of(ls ? rhs : lhs));
      if (!s.items.empty() && static_cast<uint64_t>(times) > kMaxSequenceLength / s.items.size())
        return source_.error(span, "sequence is too long");
      SequenceValue out;
      out.is_list = s.is_list;
      for (int64_t i = 0; i < times; ++i) out.items.insert(out.items.end(), s.items.begin(), s.items.end());
      return TracedValue(std::move(out));
    }
    return unsupported();
  }
  if (const auto* a = lhs.as<std::string>(); a && op == BinaryOp::Add)
    if (const auto* b = rhs.as<std::string>()) return TracedValue(*a + *b);
  if (!lhs.is_number() || !rhs.is_number()) return unsupported();

  if (is_int_like(lhs) && is_int_like(rhs)) {
    int64_t a = int_of(lhs), b = int_of(rhs), r = 0;
    auto overflow = [&] { return source_.error(span, "integer overflow in " + std::string(binary_op_symbol(op))); };
    switch (op) {
      case BinaryOp::Add: if (__builtin_add_overflow(a, b, &r)) return overflow(); return TracedValue(r);
      case BinaryOp::Sub: if (__builtin_sub_overflow(a, b, &r)) return overflow(); return TracedValue(r);
      case BinaryOp::Mul: if (__builtin_mul_overflow(a, b, &r)) return overflow(); return TracedValue(r);
      case BinaryOp::Div:
        if (b == 0) return source_.error(op_span, "division by zero");
        return TracedValue(static_cast<double>(a) / static_cast<double>(b));
      case BinaryOp::FloorDiv:
      case BinaryOp::Mod:
        if (b == 0) return source_.error(op_span, "integer division or modulo by zero");
        if (a == std::numeric_limits<int64_t>::min() && b == -1) return overflow();
        return TracedValue(op == BinaryOp::FloorDiv ? floor_div(a, b) : floor_mod(a, b));
      case BinaryOp::Pow: {
        if (b < 0) {
          if (a == 0) return source_.error(op_span, "0 cannot be raised to a negative power");
          return TracedValue(std::pow(static_cast<double>(a), static_cast<double>(b)));
        }
        int64_t result = 1, base = a;
        for (int64_t e = b; e > 0; e >>= 1) {
          if ((e & 1) && __builtin_mul_overflow(result, base, &result)) return overflow();
          if (e > 1 && __builtin_mul_overflow(base, base, &base)) return overflow();
        }
        return TracedValue(result);
      }
      case BinaryOp::BitAnd: return TracedValue(a & b);
      case BinaryOp::BitOr: return TracedValue(a | b);
      case BinaryOp::BitXor: return TracedValue(a ^ b);
      case BinaryOp::LShift:
      case BinaryOp::RShift:
        if (b < 0) return source_.error(op_span, "negative shift count");
        if (op == BinaryOp::RShift) return TracedValue(b >= 63 ? (a < 0 ? -1 : 0) : (a >> b));
        if (b >= 63 || (a != 0 && (a > (std::numeric_limits<int64_t>::max() >> b) ||
                                   a < (std::numeric_limits<int64_t>::min() >> b))))
          return overflow();
        return TracedValue(static_cast<int64_t>(static_cast<uint64_t>(a) << b));
      case BinaryOp::MatMul: return unsupported();
    }
    return unsupported();
  }

  double a = lhs.number(), b = rhs.number();
  switch (op) {
    case BinaryOp::Add: return TracedValue(a + b);
    case BinaryOp::Sub: return TracedValue(a - b);
    case BinaryOp::Mul: return TracedValue(a * b);
    case BinaryOp::Div:
      if (b == 0) return source_.error(op_span, "float division by zero");
      return TracedValue(a / b);
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (b == 0) return source_.error(op_span, "float division or modulo by zero");
      double q = std::floor(a / b);
      return TracedValue(op == BinaryOp::FloorDiv ? q : a - q * b);
    }
    case BinaryOp::Pow: {
      if (a == 0 && b < 0) return source_.error(op_span, "0.0 cannot be raised to a negative power");
      if (a < 0 && b != std::floor(b)) return source_.error(span, "a negative number to a fractional power is complex");
      return TracedValue(std::pow(a, b));
    }
    default: return unsupported();
  }
}

Expected<TracedValue> Tracer::fold_compare(CompareOp op, const TracedValue& lhs, const TracedValue& rhs,
                                           const SourceSpan& span) {
  switch (op) {
    case CompareOp::Eq: return TracedValue(values_equal(lhs, rhs));
    case CompareOp::Ne: return TracedValue(!values_equal(lhs, rhs));
    case CompareOp::Is:
    case CompareOp::IsNot: {
      // Only `is None` / `is not None` are meaningful on trace-time values.
      bool same = (lhs.is<NoneValue>() || rhs.is<NoneValue>()) ? (lhs.is<NoneValue>() && rhs.is<NoneValue>())
                                                                : values_equal(lhs, rhs);
      return TracedValue(op == CompareOp::Is ? same : !same);
    }
    case CompareOp::In:
    case CompareOp::NotIn: {
      const auto* seq = rhs.as<SequenceValue>();
      if (!seq) return source_.error(span, "'in' needs a tuple or list on the right, got " + describe_value(rhs));
      bool found = false;
      for (const TracedValue& item : seq->items) found = found || values_equal(lhs, item);
      return TracedValue(op == CompareOp::In ? found : !found);
    }
    default: break;
  }
  int order = 0;
  if (lhs.is_number() && rhs.is_number()) {
    double a = lhs.number(), b = rhs.number();
    order = a < b ? -1 : a > b ? 1 : 0;
  } else if (lhs.is<std::string>() && rhs.is<std::string>()) {
    order = lhs.as<std::string>()->compare(*rhs.as<std::string>());
  } else {
    return source_.error(span, "cannot order " + describe_value(lhs) + " and " + describe_value(rhs));
  }
  switch (op) {
    case CompareOp::Lt: return TracedValue(order < 0);
    case CompareOp::Le: return TracedValue(order <= 0);
    case CompareOp::Gt: return TracedValue(order > 0);
    case CompareOp::Ge: return TracedValue(order >= 0);
    default: return TracedValue(false);
  }
}

}  // namespace tessera::torch_expr

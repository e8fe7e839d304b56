// CudaEmitter, expressions: Expr -> C text with its precedence and C type, the conversions
// between value types, literals and elementwise-function calls (cuda_emitter_impl.h).
#include "cuda_emitter_impl.h"

namespace tessera::cuda_emit {

std::string CudaEmitter::float_literal(double v) {
  if (std::isnan(v)) {
    helpers_.insert(kNeedNan);
    return "NAN";
  }
  if (std::isinf(v)) {
    helpers_.insert(kNeedInf);
    return v > 0 ? "INFINITY" : "-INFINITY";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, double_context_ ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return double_context_ ? s : s + "f";
}

bool CudaEmitter::non_negative(const Expr& e) const {
  std::optional<Interval> b = bound_of(e, ranges_);
  return b && b->lo >= 0;
}

Printed CudaEmitter::infix(const Printed& a, const std::string& op, const Printed& b, int prec, Ty type) {
  return {wrap(a, a.prec > prec) + " " + op + " " + wrap(b, b.prec >= prec), prec, type};
}

// Index bitwise operators on C ints: `>>` of a negative int is arithmetic in CUDA, matching the
// IR's floor(a / 2^b). An operand that is itself an operator is parenthesized unless it is the
// same operator on the left, so the text never leans on C's surprising bitwise precedence.
Printed CudaEmitter::bitwise(const Printed& a, const std::string& op, const Printed& b, int prec) {
  if (a.type != Ty::Int || b.type != Ty::Int) expr_problem("bitwise '" + op + "' on a float operand");
  return {wrap(a, a.prec > kUnary && a.prec != prec) + " " + op + " " + wrap(b, b.prec > kUnary), prec, Ty::Int};
}

Ty CudaEmitter::join_type(const Printed& a, const Printed& b) {
  if (a.type == Ty::Double || b.type == Ty::Double) return Ty::Double;
  return a.type == Ty::Float || b.type == Ty::Float ? Ty::Float : Ty::Int;
}

Printed CudaEmitter::print(const Expr& e) {
  if (!e.defined()) {
    expr_problem("missing expression");
    return {"0", kAtom, Ty::Int};
  }
  switch (e.kind()) {
    case ExprKind::Value: return print_value_name(e.name());
    case ExprKind::Element: {  // `acc0[1][a3]`; read through float like a value of its dtype
      std::string text = e.name();
      for (const Expr& i : e.operands()) text += "[" + index(i).text + "]";
      Printed name = print_value_name(e.name());
      auto it = value_types_.find(e.name());
      if (it == value_types_.end()) return name;
      if (it->second == DType::F16) return {"__half2float(" + text + ")", kAtom, Ty::Float};
      if (it->second == DType::BF16) return {"__bfloat162float(" + text + ")", kAtom, Ty::Float};
      return {text, kAtom, name.type};
    }
    case ExprKind::Var: {
      const std::string& n = e.name();
      // Hardware indices are unsigned in CUDA; the IR's index arithmetic is signed.
      if (is_hardware_index(n)) return {"(int)" + n, kUnary, Ty::Int};
      if (value_types_.count(n)) return print_value_name(n);  // hand-built IR naming a value as a Var
      auto it = names_.find(n);
      if (it == names_.end()) {
        expr_problem("'" + n + "' is not bound here");
        return {n, kAtom, Ty::Int};
      }
      return {n, kAtom, it->second};
    }
    case ExprKind::Int: {
      int64_t v = e.int_value();
      // -9223372036854775808LL is not a C literal (the magnitude does not fit): spell it out.
      if (v == std::numeric_limits<int64_t>::min()) return {"(-9223372036854775807LL - 1)", kAtom, Ty::Int};
      std::string t = std::to_string(v) + (v > INT_MAX || v < INT_MIN ? "LL" : "");
      return {t, v < 0 ? kUnary : kAtom, Ty::Int};
    }
    case ExprKind::Float: {
      double v = e.float_value();
      return {float_literal(v), std::signbit(v) ? kUnary : kAtom, double_context_ ? Ty::Double : Ty::Float};
    }
    case ExprKind::Not: {
      Printed a = print(e.operand(0));
      return {"!" + wrap(a, a.prec > kUnary), kUnary, Ty::Int};
    }
    case ExprKind::Select: {
      Printed c = print(e.operand(0)), a = print(e.operand(1)), b = print(e.operand(2));
      Ty t = join_type(a, b);
      if (t == Ty::Float) a = as_float(a, e.operand(1)), b = as_float(b, e.operand(2));
      if (t == Ty::Double) a = as_double(a, e.operand(1)), b = as_double(b, e.operand(2));
      return {wrap(c, c.prec >= kTernary) + " ? " + wrap(a, a.prec >= kTernary) + " : " + wrap(b, b.prec > kTernary),
              kTernary, t};
    }
    case ExprKind::Cast: {
      Printed a = print(e.operand(0));
      std::string arg = "(" + a.text + ")";
      switch (e.cast_type()) {
        case DType::I32: return {"(int)" + arg, kUnary, Ty::Int};
        case DType::I64: return {"(long long)" + arg, kUnary, Ty::Int};
        case DType::Bool: return {wrap(a, a.prec >= kEq) + " != 0", kEq, Ty::Int};
        case DType::F64: return {"(double)" + arg, kUnary, Ty::Double};
        case DType::F32: case DType::F16: case DType::BF16: return {"(float)" + arg, kUnary, Ty::Float};  // values are float already
      }
      TESSERA_UNREACHABLE("a DType value is one of the declared dtypes");
    }
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::Min:
    case ExprKind::Max:
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
    case ExprKind::And:
    case ExprKind::Or:
    case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: return print_binary(e);
  }
  expr_problem("cannot print expression kind " + std::string(expr_kind_name(e.kind())));
  return {"0", kAtom, Ty::Int};
}

Printed CudaEmitter::print_binary(const Expr& e) {
  Printed a = print(e.operand(0)), b = print(e.operand(1));
  Ty t = join_type(a, b);
  switch (e.kind()) {
    case ExprKind::Add: return infix(a, "+", b, kAdd, t);
    case ExprKind::Sub: return infix(a, "-", b, kAdd, t);
    case ExprKind::Mul: return infix(a, "*", b, kMul, t);
    case ExprKind::Div:
      if (t == Ty::Float || (non_negative(e.operand(0)) && non_negative(e.operand(1))))
        return infix(a, "/", b, kMul, t);
      helpers_.insert(kFloorDiv);
      return {"tessera_floordiv(" + a.text + ", " + b.text + ")", kAtom, Ty::Int};
    case ExprKind::Mod:
      if (t != Ty::Int) {
        helpers_.insert(kFloorModF);
        return {"tessera_floormodf(" + a.text + ", " + b.text + ")", kAtom, Ty::Float};
      }
      if (non_negative(e.operand(0)) && non_negative(e.operand(1))) return infix(a, "%", b, kMul, t);
      helpers_.insert(kFloorMod);
      return {"tessera_floormod(" + a.text + ", " + b.text + ")", kAtom, Ty::Int};
    case ExprKind::Min:
      return {(t == Ty::Int ? "min(" : t == Ty::Double ? "fmin(" : "fminf(") + a.text + ", " + b.text + ")", kAtom, t};
    case ExprKind::Max:
      return {(t == Ty::Int ? "max(" : t == Ty::Double ? "fmax(" : "fmaxf(") + a.text + ", " + b.text + ")", kAtom, t};
    case ExprKind::Lt: return infix(a, "<", b, kRel, Ty::Int);
    case ExprKind::Le: return infix(a, "<=", b, kRel, Ty::Int);
    case ExprKind::Eq: return infix(a, "==", b, kEq, Ty::Int);
    case ExprKind::Ne: return infix(a, "!=", b, kEq, Ty::Int);
    case ExprKind::And: return infix(a, "&&", b, kAnd, Ty::Int);
    case ExprKind::Or: return infix(a, "||", b, kOr, Ty::Int);
    case ExprKind::Xor: return bitwise(a, "^", b, kXor);
    case ExprKind::BitAnd: return bitwise(a, "&", b, kBitAnd);
    case ExprKind::BitOr: return bitwise(a, "|", b, kBitOr);
    case ExprKind::Shl: return bitwise(a, "<<", b, kShift);
    case ExprKind::Shr: return bitwise(a, ">>", b, kShift);
    // Not binary: print() handles these before reaching here.
    case ExprKind::Var:
    case ExprKind::Value:
    case ExprKind::Int:
    case ExprKind::Float:
    case ExprKind::Not:
    case ExprKind::Select:
    case ExprKind::Cast:
    case ExprKind::Element: break;
  }
  expr_problem("cannot print expression kind " + std::string(expr_kind_name(e.kind())));
  return {"0", kAtom, Ty::Int};
}

Printed CudaEmitter::as_float(const Printed& p, const Expr& e) {
  if (p.type == Ty::Float || p.type == Ty::Double) return p;  // a double stays double (f64 arithmetic)
  if (e.is(ExprKind::Int)) {
    double v = static_cast<double>(e.int_value());
    return {float_literal(v), v < 0 ? kUnary : kAtom, Ty::Float};
  }
  return {"(float)" + wrap(p, p.prec > kAtom), kUnary, Ty::Float};
}

Printed CudaEmitter::as_double(const Printed& p, const Expr& e) {
  if (p.type == Ty::Double) return p;
  if (e.is(ExprKind::Int)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(e.int_value()));
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return {s, e.int_value() < 0 ? kUnary : kAtom, Ty::Double};
  }
  return {"(double)" + wrap(p, p.prec > kAtom), kUnary, Ty::Double};
}

Printed CudaEmitter::as_int(const Printed& p) {
  if (p.type == Ty::Int) return p;
  return {"(int)" + wrap(p, p.prec > kAtom), kUnary, Ty::Int};
}

std::string CudaEmitter::call_fn(ElementwiseFn fn, const std::vector<Printed>& args) {
  bool in_double = false;
  for (const Printed& p : args) in_double = in_double || p.type == Ty::Double;
  const std::string f64 = in_double ? f64_spelling(fn_info(fn).cuda_f32) : std::string();
  std::string_view spelling = in_double ? std::string_view(f64) : fn_info(fn).cuda_f32;
  std::string out;
  for (size_t i = 0; i < spelling.size(); ++i) {
    size_t close = spelling[i] == '{' ? spelling.find('}', i) : std::string_view::npos;
    if (close == std::string_view::npos) {
      out += spelling[i];
      continue;
    }
    std::string_view ref = spelling.substr(i + 1, close - i - 1);
    const Printed& p = args.at(static_cast<size_t>(ref[0] - '0'));
    std::string_view how = ref.size() > 2 ? ref.substr(2) : std::string_view();
    out += how == "op" ? wrap(p, p.prec > kUnary) : how == "atom" ? atom(p) : p.text;
    i = close;
  }
  // Helpers the spelling calls are defined in the preamble.
  for (auto [helper, name] :
       {std::pair{kMaximum, "tessera_maximum("}, std::pair{kMinimum, "tessera_minimum("}, std::pair{kRelu, "tessera_relu("},
        std::pair{kFloorFn, "tessera_floor("}, std::pair{kFloorDivideFn, "tessera_floor_divide("},
        std::pair{kRemainderFn, "tessera_remainder("}, std::pair{kMaximumF64, "tessera_maximum_f64("},
        std::pair{kMinimumF64, "tessera_minimum_f64("}, std::pair{kReluF64, "tessera_relu_f64("},
        std::pair{kFloorF64, "tessera_floor_f64("}, std::pair{kFloorDivideF64, "tessera_floor_divide_f64("},
        std::pair{kRemainderF64, "tessera_remainder_f64("}})
    if (spelling.find(name) != std::string_view::npos) helpers_.insert(helper);
  return out;
}

Printed CudaEmitter::print_value_name(const std::string& n) {
  auto it = value_types_.find(n);
  if (it == value_types_.end() || !names_.count(n)) {
    expr_problem("'" + n + "' is not bound here");
    return {n, kAtom, Ty::Float};
  }
  switch (it->second) {
    case DType::F16: return {"__half2float(" + n + ")", kAtom, Ty::Float};
    case DType::BF16: return {"__bfloat162float(" + n + ")", kAtom, Ty::Float};
    case DType::F32: return {n, kAtom, Ty::Float};
    case DType::F64: return {n, kAtom, Ty::Double};
    case DType::I32: case DType::I64: case DType::Bool: return {n, kAtom, Ty::Int};
  }
  TESSERA_UNREACHABLE("a DType value is one of the declared dtypes");
}

std::string CudaEmitter::convert_to(DType t, const Printed& p) {
  switch (t) {
    case DType::F32: return p.type == Ty::Float ? p.text : "(float)" + wrap(p, p.prec > kUnary);
    case DType::F16: return "__float2half(" + p.text + ")";
    case DType::BF16: return "__float2bfloat16(" + p.text + ")";
    case DType::I32: return p.type == Ty::Int ? p.text : "(int)" + wrap(p, p.prec > kUnary);
    case DType::I64: return "(long long)" + wrap(p, p.prec > kUnary);
    case DType::Bool: return p.type == Ty::Int ? wrap(p, p.prec >= kEq) + " != 0" : wrap(p, p.prec >= kEq) + " != 0.0f";
    case DType::F64: return p.type == Ty::Double ? p.text : "(double)" + wrap(p, p.prec > kUnary);
  }
  return p.text;
}

std::string CudaEmitter::declare(const ValueType& t, const std::string& name) {
  std::string type = c_type(t.dtype);
  if (t.is_packed()) type = t.dtype == DType::BF16 ? "__nv_bfloat162" : "__half2";
  std::string dims;
  for (int64_t d : t.array) dims += "[" + std::to_string(d) + "]";
  return type + " " + name + dims;
}

Printed CudaEmitter::arg(const Expr& e, DType t) {
  if (t == DType::F64) {
    double_context_ = true;
    Printed p = print(e);
    double_context_ = false;
    return as_double(p, e);
  }
  return dtype_is_float(t) ? value(e) : print(e);
}

}  // namespace tessera::cuda_emit

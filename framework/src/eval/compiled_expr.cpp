// Compiling and evaluating Exprs for the CPU evaluators (see compiled_expr.h).
#include "compiled_expr.h"

#include <algorithm>
#include <cmath>

#include "tessera/eval/tensor_value.h"
#include "tessera/support/internal_check.h"

namespace tessera::eval {

std::optional<CompiledExpr> compile_expr(const Expr& e, const std::function<int(const std::string&)>& lookup,
                                         std::string& unbound, const ArrayDimsLookup& array_dims) {
  if (!e.defined()) {
    unbound.clear();
    return std::nullopt;
  }
  CompiledExpr c;
  // Index variables and SSA values live in one environment here: both are slots.
  c.kind = e.is(ExprKind::Value) ? ExprKind::Var : e.kind();
  switch (e.kind()) {
    case ExprKind::Var:
    case ExprKind::Value:
      c.slot = lookup(e.name());
      if (c.slot < 0) {
        unbound = e.name();
        return std::nullopt;
      }
      return c;
    case ExprKind::Int: c.literal = {static_cast<double>(e.int_value()), true}; return c;
    case ExprKind::Float: c.literal = {e.float_value(), false}; return c;
    case ExprKind::Cast: c.cast_to = e.cast_type(); break;
    case ExprKind::Element: {
      c.slot = lookup(e.name());
      const std::vector<int64_t>* dims = array_dims ? array_dims(e.name()) : nullptr;
      if (c.slot < 0 || dims == nullptr || dims->size() != e.operands().size()) {
        unbound = e.name() + "[...] (not a register array of that rank)";
        return std::nullopt;
      }
      c.dims = *dims;
      break;
    }
    case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
    case ExprKind::Min: case ExprKind::Max: case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq:
    case ExprKind::Ne: case ExprKind::And: case ExprKind::Or: case ExprKind::Not: case ExprKind::Select:
    case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: break;
  }
  for (const Expr& op : e.operands()) {
    std::optional<CompiledExpr> sub = compile_expr(op, lookup, unbound, array_dims);
    if (!sub) return std::nullopt;
    c.operands.push_back(std::move(*sub));
  }
  return c;
}

Scalar eval_expr(const CompiledExpr& c, const std::vector<Scalar>& env, bool& fault) {
  auto arg = [&](size_t i) { return eval_expr(c.operands[i], env, fault); };
  auto boolean = [](bool b) { return Scalar{b ? 1.0 : 0.0, true}; };
  switch (c.kind) {
    case ExprKind::Var: return env[static_cast<size_t>(c.slot)];
    case ExprKind::Int:
    case ExprKind::Float: return c.literal;
    case ExprKind::Not: return boolean(arg(0).v == 0.0);
    case ExprKind::Cast: {
      Scalar a = arg(0);
      if (c.cast_to == DType::Bool) return boolean(a.v != 0.0);
      if (c.cast_to == DType::I32 || c.cast_to == DType::I64) return {conform_to_dtype(a.v, c.cast_to), true};
      return {a.v, false};
    }
    case ExprKind::Select: {
      Scalar cond = arg(0);
      return cond.v != 0.0 ? arg(1) : arg(2);  // only the chosen branch, like a guarded load
    }
    case ExprKind::Element: {
      int64_t flat = 0;
      for (size_t d = 0; d < c.dims.size(); ++d) {
        double i = arg(d).v;
        if (!(i >= 0 && i < static_cast<double>(c.dims[d]))) {
          fault = true;
          return {0.0, false};
        }
        flat = flat * c.dims[d] + static_cast<int64_t>(i);
      }
      return env[static_cast<size_t>(c.slot + flat)];
    }
    case ExprKind::Value: case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div:
    case ExprKind::Mod: case ExprKind::Min: case ExprKind::Max: case ExprKind::Lt: case ExprKind::Le:
    case ExprKind::Eq: case ExprKind::Ne: case ExprKind::And: case ExprKind::Or: case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: break;
  }
  Scalar a = arg(0);
  Scalar b = arg(1);
  bool ints = a.is_int && b.is_int;
  switch (c.kind) {
    case ExprKind::Add: return {a.v + b.v, ints};
    case ExprKind::Sub: return {a.v - b.v, ints};
    case ExprKind::Mul: return {a.v * b.v, ints};
    case ExprKind::Div:
      if (!ints) return {a.v / b.v, false};
      if (b.v == 0.0) {
        fault = true;
        return {0.0, true};
      }
      return {std::floor(a.v / b.v), true};
    case ExprKind::Mod:
      if (ints && b.v == 0.0) {
        fault = true;
        return {0.0, true};
      }
      return {a.v - b.v * std::floor(a.v / b.v), ints};
    case ExprKind::Min: return {std::min(a.v, b.v), ints};
    case ExprKind::Max: return {std::max(a.v, b.v), ints};
    case ExprKind::Lt: return boolean(a.v < b.v);
    case ExprKind::Le: return boolean(a.v <= b.v);
    case ExprKind::Eq: return boolean(a.v == b.v);
    case ExprKind::Ne: return boolean(a.v != b.v);
    case ExprKind::And: return boolean(a.v != 0.0 && b.v != 0.0);
    case ExprKind::Or: return boolean(a.v != 0.0 || b.v != 0.0);
    case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: {
      // Integer operands only (the verifier's rule); a shift amount out of range faults.
      std::optional<int64_t> r;
      if (ints && std::fabs(a.v) < 9.2e18 && std::fabs(b.v) < 9.2e18)
        r = eval_bitwise(c.kind, static_cast<int64_t>(a.v), static_cast<int64_t>(b.v));
      if (!r) {
        fault = true;
        return {0.0, true};
      }
      return {static_cast<double>(*r), true};
    }
    case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: case ExprKind::Not:
    case ExprKind::Select: case ExprKind::Cast: case ExprKind::Element: return {NAN, false};
  }
  TESSERA_UNREACHABLE("an ExprKind value is one of TESSERA_EXPR_KINDS");
}

}  // namespace tessera::eval

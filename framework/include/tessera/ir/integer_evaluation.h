// Integer evaluation of index expressions at a point: the arithmetic every static analysis of
// Kernel IR (the kernel report's access boxes, the cost model's warp addresses) computes the same
// way the simulator and the emitted code do. Division and modulo floor, as the IR defines them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tessera/ir/expr.h"
#include "tessera/support/internal_check.h"

namespace tessera {

// `a / b` rounded towards negative infinity (b != 0).
int64_t floor_div(int64_t a, int64_t b);

// One binary integer ExprKind applied to `a` and `b`: comparisons and logic give 0 or 1, the
// bitwise kinds as eval_bitwise; nullopt for a zero divisor or a shift out of range. `k` must be
// binary (an internal error otherwise).
std::optional<int64_t> eval_integer_binary(ExprKind k, int64_t a, int64_t b);

// The integer value of `e`, each variable's value from `var(name)` (an std::optional<int64_t>,
// nullopt when unknown). nullopt when `e` depends on data (values, floats, casts, register-array
// elements), a variable is unknown, or an operation is undefined.
template <class VarValue>
std::optional<int64_t> eval_integer(const Expr& e, const VarValue& var) {
  switch (e.kind()) {
    case ExprKind::Int: return e.int_value();
    case ExprKind::Var: return var(e.name());
    case ExprKind::Not: {
      std::optional<int64_t> a = eval_integer(e.operand(0), var);
      if (!a) return std::nullopt;
      return *a == 0 ? 1 : 0;
    }
    case ExprKind::Select: {
      std::optional<int64_t> c = eval_integer(e.operand(0), var);
      if (!c) return std::nullopt;
      return eval_integer(e.operand(*c != 0 ? 1 : 2), var);
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
    case ExprKind::Xor:
    case ExprKind::BitAnd:
    case ExprKind::BitOr:
    case ExprKind::Shl:
    case ExprKind::Shr: {
      std::optional<int64_t> a = eval_integer(e.operand(0), var);
      std::optional<int64_t> b = eval_integer(e.operand(1), var);
      if (!a || !b) return std::nullopt;
      return eval_integer_binary(e.kind(), *a, *b);
    }
    case ExprKind::Value:
    case ExprKind::Float:
    case ExprKind::Cast:
    case ExprKind::Element: return std::nullopt;
  }
  TESSERA_UNREACHABLE("eval_integer: an expression kind outside TESSERA_EXPR_KINDS");
}

}  // namespace tessera

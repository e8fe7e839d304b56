// Private to the evaluators: index and scalar Exprs compiled once (Vars resolved to slots of an
// environment vector) and evaluated many times — per output element in the Tensor IR interpreter,
// per statement execution in the Loop IR interpreter.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/expr.h"

namespace tessera::eval {

// A scalar during evaluation: integer-ness decides floor division and modulo semantics.
struct Scalar {
  double v = 0.0;
  bool is_int = false;
};

// An Expr with its Vars resolved to environment slots.
struct CompiledExpr {
  ExprKind kind = ExprKind::Int;
  int slot = -1;
  Scalar literal;
  DType cast_to = DType::F32;
  std::vector<int64_t> dims;  // Element: the register array's shape (its elements are slots slot..)
  std::vector<CompiledExpr> operands;
};

// The shape of the register array `name`, or null when `name` is not an array.
using ArrayDimsLookup = std::function<const std::vector<int64_t>*(const std::string&)>;

// Compiles `e`, resolving each Var with `lookup` (a slot, or -1 when the name is unbound). On
// failure returns nullopt and sets `unbound` to the offending name ("" for an undefined Expr).
// An Element of a register array resolves its name with `lookup` (the first element's slot) and
// its shape with `array_dims`.
std::optional<CompiledExpr> compile_expr(const Expr& e, const std::function<int(const std::string&)>& lookup,
                                         std::string& unbound, const ArrayDimsLookup& array_dims = {});

// Evaluates `c` in `env`; an integer division or modulo by zero, a shift amount outside
// [0, kShiftWidth) (or a bitwise operator meeting a float), or an array index out of bounds, sets
// `fault`. Select evaluates only the chosen branch, like a guarded load.
Scalar eval_expr(const CompiledExpr& c, const std::vector<Scalar>& env, bool& fault);

}  // namespace tessera::eval

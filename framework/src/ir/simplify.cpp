// The range-aware expression simplifier: interval bounds (bound_of) and rewriting to a canonical
// simplified form (simplify). First version: no rewriting yet.
#include "tessera/ir/expr.h"

namespace tessera {

std::optional<Interval> bound_of(const Expr& e, const RangeMap& ranges) {
  if (e.is(ExprKind::Int)) return Interval{e.int_value(), e.int_value()};
  if (e.is(ExprKind::Var)) {
    auto it = ranges.find(e.name());
    if (it != ranges.end()) return it->second;
  }
  return std::nullopt;
}

Expr simplify(const Expr& e, const RangeMap& ranges) { return e; }

}  // namespace tessera

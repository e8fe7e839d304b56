// Integer evaluation of index expressions (tessera/ir/integer_evaluation.h).
#include "tessera/ir/integer_evaluation.h"

#include <algorithm>

namespace tessera {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::optional<int64_t> eval_integer_binary(ExprKind k, int64_t a, int64_t b) {
  switch (k) {
    case ExprKind::Add: return a + b;
    case ExprKind::Sub: return a - b;
    case ExprKind::Mul: return a * b;
    case ExprKind::Div:
      if (b == 0) return std::nullopt;
      return floor_div(a, b);
    case ExprKind::Mod:
      if (b == 0) return std::nullopt;
      return a - floor_div(a, b) * b;
    case ExprKind::Min: return std::min(a, b);
    case ExprKind::Max: return std::max(a, b);
    case ExprKind::Lt: return a < b;
    case ExprKind::Le: return a <= b;
    case ExprKind::Eq: return a == b;
    case ExprKind::Ne: return a != b;
    case ExprKind::And: return (a != 0 && b != 0) ? 1 : 0;
    case ExprKind::Or: return (a != 0 || b != 0) ? 1 : 0;
    case ExprKind::Xor:
    case ExprKind::BitAnd:
    case ExprKind::BitOr:
    case ExprKind::Shl:
    case ExprKind::Shr: return eval_bitwise(k, a, b);  // nullopt for a shift out of range
    case ExprKind::Var:
    case ExprKind::Value:
    case ExprKind::Int:
    case ExprKind::Float:
    case ExprKind::Not:
    case ExprKind::Select:
    case ExprKind::Cast:
    case ExprKind::Element: break;
  }
  TESSERA_UNREACHABLE("eval_integer_binary: not a binary integer expression kind");
}

}  // namespace tessera

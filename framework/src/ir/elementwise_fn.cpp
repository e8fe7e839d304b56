// The double-precision meaning of every elementwise function (ir/elementwise_fn.h) and name
// lookup. The reference evaluator, the Tensor and Loop IR interpreters and the simulator all
// compute through apply_elementwise_fn, so they agree by construction.
#include "tessera/ir/elementwise_fn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tessera/support/spelling.h"

namespace tessera {

Expected<ElementwiseFn> parse_elementwise_fn(std::string_view name) {
  for (const ElementwiseFnInfo& f : kElementwiseFns)
    if (f.name == name) return f.fn;
  std::vector<std::string> names;
  for (const ElementwiseFnInfo& f : kElementwiseFns) names.emplace_back(f.name);
  std::string message = "unknown elementwise function '" + std::string(name) + "'";
  if (std::optional<std::string> best = closest_spelling(name, names)) message += " (did you mean '" + *best + "'?)";
  return make_error(message);
}

Expected<ElementwiseFn> resolve_elementwise_fn(std::string_view name, size_t arity) {
  TESSERA_ASSIGN_OR_RETURN(ElementwiseFn fn, parse_elementwise_fn(name));
  TESSERA_TRY(check_arity(fn, arity));
  return fn;
}

Status check_arity(ElementwiseFn fn, size_t arity) {
  if (fn_info(fn).arity == arity) return Status::ok();
  return make_error("elementwise function '" + std::string(name_of(fn)) + "' takes " +
                    std::to_string(fn_info(fn).arity) + " argument(s), got " + std::to_string(arity));
}

namespace {

// PyTorch's div_floor_floating (Python's float //): the floor of the exact quotient, computed from
// the exact fmod so that 1 // 0.1 is 9 (floor(1 / 0.1) would round up to 10). Exact for integer
// operands below 2^53 too, so integers share it.
double floor_divide(double a, double b) {
  if (b == 0.0) return a / b;
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && (b < 0.0) != (mod < 0.0)) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floored = std::floor(div);
  if (div - floored > 0.5) floored += 1.0;
  return floored;
}

}  // namespace

bool is_integer_division_by_zero(ElementwiseFn fn, std::span<const double> args) {
  return (fn == ElementwiseFn::FloorDivide || fn == ElementwiseFn::Remainder) && args.size() == 2 && args[1] == 0.0;
}

double apply_elementwise_fn(ElementwiseFn fn, std::span<const double> a) {
  switch (fn) {
    // A cast's value is unchanged here; the typed definition it feeds (Assign's result type, the
    // node's dtype) does the rounding to f16/bf16 or the truncation to an integer.
    case ElementwiseFn::Identity:
    case ElementwiseFn::Cast: return a[0];
    case ElementwiseFn::Neg: return -a[0];
    case ElementwiseFn::Exp: return std::exp(a[0]);
    case ElementwiseFn::Log: return std::log(a[0]);
    case ElementwiseFn::Sqrt: return std::sqrt(a[0]);
    case ElementwiseFn::Rsqrt: return 1.0 / std::sqrt(a[0]);
    case ElementwiseFn::Tanh: return std::tanh(a[0]);
    case ElementwiseFn::Sigmoid: return 1.0 / (1.0 + std::exp(-a[0]));
    case ElementwiseFn::Abs: return std::fabs(a[0]);
    case ElementwiseFn::Reciprocal: return 1.0 / a[0];
    case ElementwiseFn::Erf: return std::erf(a[0]);
    case ElementwiseFn::Relu: return a[0] > 0.0 || std::isnan(a[0]) ? a[0] : 0.0;
    case ElementwiseFn::Silu: return a[0] / (1.0 + std::exp(-a[0]));
    case ElementwiseFn::Sin: return std::sin(a[0]);
    case ElementwiseFn::Cos: return std::cos(a[0]);
    case ElementwiseFn::Square: return a[0] * a[0];
    case ElementwiseFn::Floor: return std::floor(a[0]);
    case ElementwiseFn::LogicalNot: return a[0] == 0.0 ? 1.0 : 0.0;
    case ElementwiseFn::Add: return a[0] + a[1];
    case ElementwiseFn::Sub: return a[0] - a[1];
    case ElementwiseFn::Mul: return a[0] * a[1];
    case ElementwiseFn::Div: return a[0] / a[1];
    case ElementwiseFn::Pow: return std::pow(a[0], a[1]);
    case ElementwiseFn::FloorDivide: return floor_divide(a[0], a[1]);
    case ElementwiseFn::Remainder: {
      // Python's modulo: fmod is exact; a nonzero result takes the divisor's sign.
      const double mod = std::fmod(a[0], a[1]);
      return mod != 0.0 && (a[1] < 0.0) != (mod < 0.0) ? mod + a[1] : mod;
    }
    // PyTorch propagates NaN through maximum/minimum (unlike std::fmax).
    case ElementwiseFn::Maximum: return std::isnan(a[0]) || std::isnan(a[1]) ? NAN : std::max(a[0], a[1]);
    case ElementwiseFn::Minimum: return std::isnan(a[0]) || std::isnan(a[1]) ? NAN : std::min(a[0], a[1]);
    case ElementwiseFn::Lt: return a[0] < a[1] ? 1.0 : 0.0;
    case ElementwiseFn::Le: return a[0] <= a[1] ? 1.0 : 0.0;
    case ElementwiseFn::Eq: return a[0] == a[1] ? 1.0 : 0.0;
    case ElementwiseFn::Ne: return a[0] != a[1] ? 1.0 : 0.0;
    case ElementwiseFn::Gt: return a[0] > a[1] ? 1.0 : 0.0;
    case ElementwiseFn::Ge: return a[0] >= a[1] ? 1.0 : 0.0;
    case ElementwiseFn::LogicalAnd: return a[0] != 0.0 && a[1] != 0.0 ? 1.0 : 0.0;
    case ElementwiseFn::LogicalOr: return a[0] != 0.0 || a[1] != 0.0 ? 1.0 : 0.0;
    case ElementwiseFn::Where: return a[0] != 0.0 ? a[1] : a[2];
  }
  return NAN;  // unreachable: the switch covers every function
}

Expected<CombineFn> parse_combine_fn(std::string_view name) {
  for (const CombineFnInfo& c : kCombineFns)
    if (c.name == name || name_of(c.fn) == name) return c.op;
  std::string names;
  for (const CombineFnInfo& c : kCombineFns) names += (names.empty() ? "" : ", ") + std::string(c.name);
  return make_error("unknown accumulation op '" + std::string(name) + "' (expected " + names + ")");
}

Expected<CombineFn> parse_reduction(std::string_view name) {
  for (const CombineFnInfo& c : kCombineFns)
    if (c.reduction == name) return c.op;
  std::string names;
  for (const CombineFnInfo& c : kCombineFns) names += (names.empty() ? "" : ", ") + std::string(c.reduction);
  return make_error("unknown reduce function '" + std::string(name) + "' (expected " + names + ")");
}

}  // namespace tessera

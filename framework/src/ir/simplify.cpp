// The range-aware expression simplifier: interval bounds of integer expressions (bound_of) and
// rewriting to a canonical simplified form (simplify).
//
// Typing convention: Vars are integers (loop axes, thread indices, sizes); float values enter an
// expression only through Float literals, casts to a float dtype and Values (SSA value references,
// which are opaque here whatever their type: never folded, never bounded, never reassociated as
// integers). Integer rules (reassociation,
// x*0, x-x, the div/mod rules) are applied only to expressions without float parts; float parts
// get constant folding and the exact identities (x+0, x-0, x*1, x/1) only.
//
// Integer sums are normalized through a linear form: a list of (atom, coefficient) terms in
// first-occurrence order plus a constant. Printing puts a positive term first, then the others,
// then the constant: `a0 * 2048 + a1 - 1`. A constant multiple of a sum stays factored
// (`(a0 + 1) * 4`) except inside a division or modulo, where the sum is fully distributed so that
// `((a0 + 1) * 2048 + a1) / 2048` can split into a quotient and a vanishing remainder.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "tessera/ir/expr.h"
#include "tessera/support/internal_check.h"

namespace tessera {
namespace {

// Every rewrite either shrinks the tree or moves it towards the canonical form, so a handful of
// rounds reaches the fixpoint; the cap only guards against a rule pair that would oscillate.
constexpr int kMaxRounds = 16;

// ---- Checked integer arithmetic -------------------------------------------------------------

std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> floor_div(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return std::nullopt;
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

std::optional<int64_t> floor_mod(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// ---- Expression classification --------------------------------------------------------------

bool is_comparison(ExprKind k) {
  return k == ExprKind::Lt || k == ExprKind::Le || k == ExprKind::Eq || k == ExprKind::Ne;
}

bool is_logic(ExprKind k) { return k == ExprKind::And || k == ExprKind::Or || k == ExprKind::Not; }

// True when the value of `e` is a float (see the typing convention above).
bool is_float_valued(const Expr& e) {
  if (!e.defined()) return false;
  switch (e.kind()) {
    case ExprKind::Float: case ExprKind::Value: case ExprKind::Element: return true;
    case ExprKind::Var: case ExprKind::Int: return false;
    case ExprKind::Cast: return dtype_is_float(e.cast_type());
    case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne:
    case ExprKind::And: case ExprKind::Or: case ExprKind::Not:
      return false;  // booleans
    case ExprKind::Select: return is_float_valued(e.operand(1)) || is_float_valued(e.operand(2));
    case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
    case ExprKind::Min: case ExprKind::Max:
    case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:  // a float operand is a verifier error
      return is_float_valued(e.operand(0)) || is_float_valued(e.operand(1));
  }
  TESSERA_UNREACHABLE("an ExprKind value is one of TESSERA_EXPR_KINDS");
}

double const_as_double(const Expr& e) {
  return e.is(ExprKind::Int) ? static_cast<double>(e.int_value()) : e.float_value();
}

bool const_truth(const Expr& e) { return const_as_double(e) != 0.0; }

bool is_const_value(const Expr& e, int64_t v) {
  if (e.is(ExprKind::Int)) return e.int_value() == v;
  if (e.is(ExprKind::Float)) return e.float_value() == static_cast<double>(v);
  return false;
}

Expr bool_expr(bool b) { return Expr::int_(b ? 1 : 0); }

// ---- Bounds -----------------------------------------------------------------------------------

std::optional<Interval> make_interval(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (!lo || !hi) return std::nullopt;
  return Interval{*lo, *hi};
}

// The smallest interval holding four corner values (nullopt if any overflowed).
std::optional<Interval> hull_of_corners(const std::optional<int64_t> (&corners)[4]) {
  Interval r{std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  for (const auto& c : corners) {
    if (!c) return std::nullopt;
    r.lo = std::min(r.lo, *c);
    r.hi = std::max(r.hi, *c);
  }
  return r;
}

std::optional<Interval> bound_mul(Interval a, Interval b) {
  return hull_of_corners({checked_mul(a.lo, b.lo), checked_mul(a.lo, b.hi), checked_mul(a.hi, b.lo),
                          checked_mul(a.hi, b.hi)});
}

// Floor division is monotone in each argument while the divisor keeps its sign, so the extremes
// lie at the corners.
std::optional<Interval> bound_div(Interval n, Interval d) {
  if (d.contains(0)) return std::nullopt;
  return hull_of_corners({floor_div(n.lo, d.lo), floor_div(n.lo, d.hi), floor_div(n.hi, d.lo),
                          floor_div(n.hi, d.hi)});
}

// Floor modulo: the result takes the divisor's sign, so it is bounded by the divisor alone even
// when the numerator is unbounded.
std::optional<Interval> bound_mod(std::optional<Interval> n, Interval d) {
  if (d.contains(0)) return std::nullopt;
  if (d.lo > 0) {
    if (n && d.lo == d.hi) {
      auto klo = floor_div(n->lo, d.lo);
      auto khi = floor_div(n->hi, d.lo);
      if (klo && khi && *klo == *khi) {
        auto shift = checked_mul(*klo, d.lo);
        if (shift) return make_interval(checked_sub(n->lo, *shift), checked_sub(n->hi, *shift));
      }
    }
    if (n && n->lo >= 0 && n->hi < d.lo) return n;
    return Interval{0, d.hi - 1};
  }
  return Interval{d.lo + 1, 0};
}

std::optional<Interval> bound_cast(DType to, const Expr& operand, const RangeMap& ranges) {
  if (to == DType::Bool) return Interval{0, 1};
  if (dtype_is_float(to) || is_float_valued(operand)) return std::nullopt;
  auto b = bound_of(operand, ranges);
  if (!b) return std::nullopt;
  if (to == DType::I32 && (b->lo < std::numeric_limits<int32_t>::min() ||
                           b->hi > std::numeric_limits<int32_t>::max())) {
    return Interval{std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  }
  return b;
}

// Two's-complement facts: `x & m` with m >= 0 keeps only bits of m, so it lies in [0, m]
// whatever x is; for non-negative operands `|` and `^` stay below the next power of two above
// both, and `x | y` >= max(x, y).
std::optional<Interval> bound_bit_and(std::optional<Interval> a, std::optional<Interval> b) {
  std::optional<int64_t> hi;
  if (a && a->lo >= 0) hi = a->hi;
  if (b && b->lo >= 0) hi = hi ? std::min(*hi, b->hi) : b->hi;
  if (!hi) return std::nullopt;
  return Interval{0, *hi};
}

std::optional<Interval> bound_bit_or_xor(ExprKind k, Interval a, Interval b) {
  if (a.lo < 0 || b.lo < 0) return std::nullopt;
  const uint64_t top = static_cast<uint64_t>(std::max(a.hi, b.hi));
  const int64_t all_ones = static_cast<int64_t>(std::bit_ceil(top + 1) - 1);  // top < 2^63
  return Interval{k == ExprKind::BitOr ? std::max(a.lo, b.lo) : 0, all_ones};
}

// a << b is a * 2^b and a >> b is floor(a / 2^b): bound them as that product / quotient over the
// range of 2^b. An amount that may leave [0, kShiftWidth) has no bound.
std::optional<Interval> bound_shift(ExprKind k, Interval a, Interval b) {
  if (b.lo < 0 || b.hi >= kShiftWidth) return std::nullopt;
  const Interval scale{int64_t{1} << b.lo, int64_t{1} << b.hi};
  return k == ExprKind::Shl ? bound_mul(a, scale) : bound_div(a, scale);
}

// ---- Linear forms -----------------------------------------------------------------------------

struct LinearTerm {
  Expr atom;
  int64_t coeff = 0;
};

// sum(terms[i].atom * terms[i].coeff) + constant. Terms keep first-occurrence order; zero
// coefficients may linger until build() drops them.
struct LinearSum {
  std::vector<LinearTerm> terms;
  int64_t constant = 0;

  bool has_terms() const {
    for (const auto& t : terms) {
      if (t.coeff != 0) return true;
    }
    return false;
  }

  // The single nonzero term when the sum is exactly `atom * coeff` (no constant).
  const LinearTerm* single_term() const {
    const LinearTerm* found = nullptr;
    for (const auto& t : terms) {
      if (t.coeff == 0) continue;
      if (found != nullptr) return nullptr;
      found = &t;
    }
    return constant == 0 ? found : nullptr;
  }

  bool add_term(const Expr& atom, int64_t coeff) {
    for (auto& t : terms) {
      if (structurally_equal(t.atom, atom)) {
        auto c = checked_add(t.coeff, coeff);
        if (!c) return false;
        t.coeff = *c;
        return true;
      }
    }
    terms.push_back({atom, coeff});
    return true;
  }

  // this += other * scale; false on overflow.
  bool add_scaled(const LinearSum& other, int64_t scale) {
    for (const auto& t : other.terms) {
      auto c = checked_mul(t.coeff, scale);
      if (!c || !add_term(t.atom, *c)) return false;
    }
    auto c = checked_mul(other.constant, scale);
    if (!c) return false;
    auto sum = checked_add(constant, *c);
    if (!sum) return false;
    constant = *sum;
    return true;
  }
};

Expr scaled_atom(const Expr& atom, int64_t coeff) {
  return coeff == 1 ? atom : atom * Expr::int_(coeff);
}

// The canonical expression of a linear form (see the file comment for the layout).
Expr build(const LinearSum& s) {
  std::vector<const LinearTerm*> live;
  for (const auto& t : s.terms) {
    if (t.coeff != 0) live.push_back(&t);
  }
  if (live.empty()) return Expr::int_(s.constant);
  size_t lead = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    if (live[i]->coeff > 0) {
      lead = i;
      break;
    }
  }
  Expr result = scaled_atom(live[lead]->atom, live[lead]->coeff);
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < live.size(); ++i) {
    if (i == lead) continue;
    const LinearTerm& t = *live[i];
    if (t.coeff > 0 || t.coeff == kMin) {
      result = result + scaled_atom(t.atom, t.coeff);
    } else {
      result = result - scaled_atom(t.atom, -t.coeff);
    }
  }
  if (s.constant > 0 || s.constant == kMin) {
    result = result + Expr::int_(s.constant);
  } else if (s.constant < 0) {
    result = result - Expr::int_(-s.constant);
  }
  return result;
}

// Linear form of an integer expression. With `distribute`, constant multiples of sums are
// multiplied out; without it they stay one factored term. nullopt on overflow.
std::optional<LinearSum> linearize(const Expr& e, bool distribute) {
  LinearSum out;
  switch (e.kind()) {
    case ExprKind::Int:
      out.constant = e.int_value();
      return out;
    case ExprKind::Add:
    case ExprKind::Sub: {
      auto a = linearize(e.operand(0), distribute);
      auto b = linearize(e.operand(1), distribute);
      if (!a || !b) return std::nullopt;
      if (!a->add_scaled(*b, e.is(ExprKind::Add) ? 1 : -1)) return std::nullopt;
      return a;
    }
    case ExprKind::Mul: {
      const Expr& x = e.operand(0);
      const Expr& y = e.operand(1);
      if (x.is(ExprKind::Int) || y.is(ExprKind::Int)) {
        const Expr& other = x.is(ExprKind::Int) ? y : x;
        int64_t c = x.is(ExprKind::Int) ? x.int_value() : y.int_value();
        auto inner = linearize(other, distribute);
        if (!inner) return std::nullopt;
        bool scale = distribute || c == 0 || c == 1 || c == -1 || !inner->has_terms() ||
                     inner->single_term() != nullptr;
        if (scale) {
          if (!out.add_scaled(*inner, c)) return std::nullopt;
        } else {
          out.add_term(other, c);
        }
        return out;
      }
      // A product of two scaled atoms: pull both coefficients out, (x*2) * (y*3) -> x*y * 6.
      auto a = linearize(x, distribute);
      auto b = linearize(y, distribute);
      if (a && b && a->single_term() && b->single_term()) {
        auto c = checked_mul(a->single_term()->coeff, b->single_term()->coeff);
        if (c) {
          out.add_term(a->single_term()->atom * b->single_term()->atom, *c);
          return out;
        }
      }
      out.add_term(e, 1);
      return out;
    }
    case ExprKind::Var: case ExprKind::Value: case ExprKind::Float: case ExprKind::Div: case ExprKind::Mod:
    case ExprKind::Min: case ExprKind::Max: case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq:
    case ExprKind::Ne: case ExprKind::And: case ExprKind::Or: case ExprKind::Not: case ExprKind::Select:
    case ExprKind::Cast: case ExprKind::Element: case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:
      out.add_term(e, 1);
      return out;
  }
  TESSERA_UNREACHABLE("an ExprKind value is one of TESSERA_EXPR_KINDS");
}

size_t node_count(const Expr& e) {
  size_t n = 1;
  for (const Expr& op : e.operands()) n += node_count(op);
  return n;
}

bool is_div_or_mod_by_positive(const Expr& e, ExprKind k) {
  return e.is(k) && e.operand(1).is(ExprKind::Int) && e.operand(1).int_value() > 0;
}

// Re-joins the pieces of a split index:
//   (x / n) * (n*k) + (x % n) * k  ->  x * k
//   x * k - (x / n) * (n*k)        ->  (x % n) * k
// Returns `s` unchanged when nothing matches or the arithmetic would overflow.
LinearSum combine_div_mod(const LinearSum& s) {
  LinearSum out = s;
  std::vector<LinearTerm> joined;  // added after the scan so indices stay valid
  for (size_t i = 0; i < out.terms.size(); ++i) {
    LinearTerm& quotient = out.terms[i];
    if (quotient.coeff == 0 || !is_div_or_mod_by_positive(quotient.atom, ExprKind::Div)) continue;
    const Expr& x = quotient.atom.operand(0);
    int64_t n = quotient.atom.operand(1).int_value();
    if (quotient.coeff % n != 0) continue;
    int64_t k = quotient.coeff / n;
    for (size_t j = 0; j < out.terms.size(); ++j) {
      LinearTerm& other = out.terms[j];
      if (j == i || other.coeff == 0) continue;
      if (other.coeff == k && is_div_or_mod_by_positive(other.atom, ExprKind::Mod) &&
          other.atom.operand(1).int_value() == n && structurally_equal(other.atom.operand(0), x)) {
        joined.push_back({x, k});
      } else if (k != std::numeric_limits<int64_t>::min() && other.coeff == -k &&
                 structurally_equal(other.atom, x)) {
        joined.push_back({x % Expr::int_(n), -k});
      } else {
        continue;
      }
      quotient.coeff = 0;
      other.coeff = 0;
      break;
    }
  }
  for (const LinearTerm& t : joined) {
    auto lin = linearize(t.atom, false);
    if (!lin || !out.add_scaled(*lin, t.coeff)) return s;
  }
  return out;
}

// ---- Float helpers ----------------------------------------------------------------------------

// Whether `v` survives a round trip through `t` unchanged (normal numbers only, for simplicity).
bool float_exactly_representable(double v, DType t) {
  if (!std::isfinite(v)) return true;
  if (v == 0.0) return true;
  int significand_bits = 24;
  double max_finite = static_cast<double>(std::numeric_limits<float>::max());
  int min_exponent = std::numeric_limits<float>::min_exponent;
  if (t == DType::F16) {
    significand_bits = 11;
    max_finite = 65504.0;
    min_exponent = -13;
  } else if (t == DType::BF16) {
    significand_bits = 8;
    max_finite = 3.3895313892515355e38;
  }
  if (std::fabs(v) > max_finite) return false;
  int exponent = 0;
  double mantissa = std::frexp(v, &exponent);  // v = mantissa * 2^exponent, 0.5 <= |m| < 1
  if (exponent < min_exponent) return false;
  double scaled = std::ldexp(mantissa, significand_bits);
  return scaled == std::trunc(scaled);
}

std::optional<double> fold_float(ExprKind k, double a, double b) {
  switch (k) {
    case ExprKind::Add: return a + b;
    case ExprKind::Sub: return a - b;
    case ExprKind::Mul: return a * b;
    case ExprKind::Div:
      if (b == 0.0) return std::nullopt;  // inf vs trap: leave it to the target
      return a / b;
    case ExprKind::Mod: {
      if (b == 0.0) return std::nullopt;
      double r = std::fmod(a, b);
      if (r != 0.0 && ((r < 0) != (b < 0))) r += b;  // floor modulo, like Python
      return r;
    }
    case ExprKind::Min:
    case ExprKind::Max:
      if (std::isnan(a) || std::isnan(b)) return std::nullopt;  // fmin and std::min disagree
      return k == ExprKind::Min ? std::min(a, b) : std::max(a, b);
    case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: case ExprKind::Lt:
    case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne: case ExprKind::And: case ExprKind::Or:
    case ExprKind::Not: case ExprKind::Select: case ExprKind::Cast: case ExprKind::Element:
    case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:  // integer only
      return std::nullopt;
  }
  TESSERA_UNREACHABLE("an ExprKind value is one of TESSERA_EXPR_KINDS");
}

std::optional<int64_t> fold_int(ExprKind k, int64_t a, int64_t b) {
  switch (k) {
    case ExprKind::Add: return checked_add(a, b);
    case ExprKind::Sub: return checked_sub(a, b);
    case ExprKind::Mul: return checked_mul(a, b);
    case ExprKind::Div: return floor_div(a, b);
    case ExprKind::Mod: return floor_mod(a, b);
    case ExprKind::Min: return std::min(a, b);
    case ExprKind::Max: return std::max(a, b);
    case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: return eval_bitwise(k, a, b);
    case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: case ExprKind::Lt:
    case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne: case ExprKind::And: case ExprKind::Or:
    case ExprKind::Not: case ExprKind::Select: case ExprKind::Cast: case ExprKind::Element: return std::nullopt;
  }
  TESSERA_UNREACHABLE("an ExprKind value is one of TESSERA_EXPR_KINDS");
}

// Folds a binary arithmetic node over two literals; undefined when it must stay unfolded.
Expr fold_constants(ExprKind k, const Expr& a, const Expr& b) {
  if (a.is(ExprKind::Int) && b.is(ExprKind::Int)) {
    auto r = fold_int(k, a.int_value(), b.int_value());
    return r ? Expr::int_(*r) : Expr();
  }
  auto r = fold_float(k, const_as_double(a), const_as_double(b));
  return r ? Expr::float_(*r) : Expr();
}

// ---- The rewriter -----------------------------------------------------------------------------

class Simplifier {
 public:
  explicit Simplifier(const RangeMap& ranges) : ranges_(ranges) {}

  // One bottom-up round.
  Expr visit(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::Int:
      case ExprKind::Float:
      case ExprKind::Value:
        return e;
      case ExprKind::Var:
        return fold_by_bounds(e);
      case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
      case ExprKind::Min: case ExprKind::Max: case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq:
      case ExprKind::Ne: case ExprKind::And: case ExprKind::Or: case ExprKind::Not: case ExprKind::Select:
      case ExprKind::Cast: case ExprKind::Element: case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:
        break;
    }
    std::vector<Expr> ops;
    ops.reserve(e.operands().size());
    for (const Expr& op : e.operands()) {
      if (!op.defined()) return e;  // a malformed tree: leave it for the verifier to report
      ops.push_back(visit(op));
    }
    Expr r;
    switch (e.kind()) {
      case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul:
        r = arith(e.kind(), ops[0], ops[1]);
        break;
      case ExprKind::Div: r = div(ops[0], ops[1]); break;
      case ExprKind::Mod: r = mod(ops[0], ops[1]); break;
      case ExprKind::Min: case ExprKind::Max: r = min_max(e.kind(), ops[0], ops[1]); break;
      case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne:
        r = compare(e.kind(), ops[0], ops[1]);
        break;
      case ExprKind::And: case ExprKind::Or: r = logic(e.kind(), ops[0], ops[1]); break;
      case ExprKind::Not: r = not_(ops[0]); break;
      case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: r = bitwise(e.kind(), ops[0], ops[1]); break;
      case ExprKind::Select: r = select(ops[0], ops[1], ops[2]); break;
      case ExprKind::Cast: r = cast(e.cast_type(), ops[0]); break;
      case ExprKind::Element: return Expr::element(e.name(), std::move(ops));  // opaque; indices simplified
      case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: r = e; break;
    }
    return fold_by_bounds(r);
  }

 private:
  // An integer expression whose bounds pin it to one value is that value (e.g. an axis of
  // extent 1, or `a1 / 2048` for a1 in [0, 2047]).
  Expr fold_by_bounds(const Expr& e) {
    if (e.is_const() || is_float_valued(e)) return e;
    auto b = bound_of(e, ranges_);
    if (b && b->lo == b->hi) return Expr::int_(b->lo);
    return e;
  }

  std::optional<Interval> bound(const Expr& e) { return bound_of(e, ranges_); }

  bool is_boolean(const Expr& e) {
    if (is_comparison(e.kind()) || is_logic(e.kind())) return true;
    if (e.is(ExprKind::Cast) && e.cast_type() == DType::Bool) return true;
    if (is_float_valued(e)) return false;
    auto b = bound(e);
    return b && b->lo >= 0 && b->hi <= 1;
  }

  // Bounds of a - b after cancelling common terms, so `x + 1 < x + 3` is decided without
  // knowing x.
  std::optional<Interval> difference_bound(const Expr& a, const Expr& b) {
    auto la = linearize(a, true);
    auto lb = linearize(b, true);
    if (la && lb && la->add_scaled(*lb, -1)) {
      if (!la->has_terms()) return Interval{la->constant, la->constant};
      if (auto d = bound(build(*la))) return d;
    }
    auto ba = bound(a);
    auto bb = bound(b);
    if (ba && bb) return make_interval(checked_sub(ba->lo, bb->hi), checked_sub(ba->hi, bb->lo));
    return std::nullopt;
  }

  Expr float_arith(ExprKind k, const Expr& a, const Expr& b) {
    if (a.is_const() && b.is_const()) {
      Expr folded = fold_constants(k, a, b);
      if (folded.defined()) return folded;
    }
    switch (k) {
      case ExprKind::Add:
        if (is_const_value(b, 0)) return a;
        if (is_const_value(a, 0)) return b;
        if (a.is_const()) return b + a;
        break;
      case ExprKind::Sub:
        if (is_const_value(b, 0)) return a;
        break;
      case ExprKind::Mul:
        if (is_const_value(b, 1)) return a;
        if (is_const_value(a, 1)) return b;
        if (a.is_const()) return b * a;
        break;
      case ExprKind::Div:
        if (is_const_value(b, 1)) return a;
        break;
      case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: case ExprKind::Mod:
      case ExprKind::Min: case ExprKind::Max: case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq:
      case ExprKind::Ne: case ExprKind::And: case ExprKind::Or: case ExprKind::Not: case ExprKind::Select:
      case ExprKind::Cast: case ExprKind::Element: case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:
        break;
    }
    return Expr::binary(k, a, b);
  }

  // Integer +, -, *: through the linear form. Constant multiples of sums stay factored unless
  // multiplying them out gives a smaller expression ((x + 1) * 4 - x * 4 -> 4).
  Expr arith(ExprKind k, const Expr& a, const Expr& b) {
    if (is_float_valued(a) || is_float_valued(b)) return float_arith(k, a, b);
    Expr node = Expr::binary(k, a, b);
    auto factored = linearize(node, false);
    if (!factored) {
      if (a.is_const() && b.is_const()) {
        Expr folded = fold_constants(k, a, b);
        if (folded.defined()) return folded;
      }
      return node;
    }
    Expr result = build(combine_div_mod(*factored));
    if (auto distributed = linearize(node, true)) {
      Expr flat = build(combine_div_mod(*distributed));
      if (node_count(flat) < node_count(result)) result = flat;
    }
    return result;
  }

  Expr div(const Expr& a, const Expr& b) {
    if (is_float_valued(a) || is_float_valued(b)) return float_arith(ExprKind::Div, a, b);
    if (!b.is(ExprKind::Int)) return Expr::binary(ExprKind::Div, a, b);
    int64_t n = b.int_value();
    if (a.is(ExprKind::Int)) {
      auto q = floor_div(a.int_value(), n);
      return q ? Expr::int_(*q) : Expr::binary(ExprKind::Div, a, b);
    }
    if (n == 1) return a;
    if (n == -1) return arith(ExprKind::Mul, a, Expr::int_(-1));
    if (n <= 0) return Expr::binary(ExprKind::Div, a, b);

    // (x / m) / n == x / (m * n) for positive m, n.
    if (a.is(ExprKind::Div) && a.operand(1).is(ExprKind::Int) && a.operand(1).int_value() > 0) {
      if (auto mn = checked_mul(a.operand(1).int_value(), n)) {
        return div(a.operand(0), Expr::int_(*mn));
      }
    }

    auto lin = linearize(a, true);
    if (lin) {
      // (g*X) / (g*m) == X / m for g > 0.
      int64_t g = n;
      bool gcd_ok = lin->constant != std::numeric_limits<int64_t>::min();
      for (const auto& t : lin->terms) {
        if (t.coeff == std::numeric_limits<int64_t>::min()) gcd_ok = false;
        if (gcd_ok) g = std::gcd(g, t.coeff);
      }
      if (gcd_ok) g = std::gcd(g, lin->constant);
      if (gcd_ok && g > 1) {
        LinearSum reduced;
        for (const auto& t : lin->terms) reduced.add_term(t.atom, t.coeff / g);
        reduced.constant = lin->constant / g;
        return div(build(reduced), Expr::int_(n / g));
      }

      // Split into n * quotient + remainder; when the remainder's bounds sit inside one
      // multiple of n, the division is the quotient plus that multiple.
      LinearSum quotient, remainder;
      bool ok = true;
      for (const auto& t : lin->terms) {
        if (t.coeff == 0) continue;
        if (t.coeff % n == 0) ok = ok && quotient.add_term(t.atom, t.coeff / n);
        else ok = ok && remainder.add_term(t.atom, t.coeff);
      }
      quotient.constant = *floor_div(lin->constant, n);
      remainder.constant = *floor_mod(lin->constant, n);
      if (ok) {
        if (!remainder.has_terms()) return build(quotient);
        if (auto rb = bound(build(remainder))) {
          auto klo = floor_div(rb->lo, n);
          auto khi = floor_div(rb->hi, n);
          if (klo && khi && *klo == *khi) {
            if (auto c = checked_add(quotient.constant, *klo)) {
              quotient.constant = *c;
              return build(quotient);
            }
          }
        }
      }
    }
    return Expr::binary(ExprKind::Div, a, b);
  }

  Expr mod(const Expr& a, const Expr& b) {
    if (is_float_valued(a) || is_float_valued(b)) return float_arith(ExprKind::Mod, a, b);
    if (!b.is(ExprKind::Int)) return Expr::binary(ExprKind::Mod, a, b);
    int64_t n = b.int_value();
    if (a.is(ExprKind::Int)) {
      auto r = floor_mod(a.int_value(), n);
      return r ? Expr::int_(*r) : Expr::binary(ExprKind::Mod, a, b);
    }
    if (n == 1 || n == -1) return Expr::int_(0);
    if (n <= 0) return Expr::binary(ExprKind::Mod, a, b);

    // (x % m) % n == x % n when n divides m.
    if (a.is(ExprKind::Mod) && a.operand(1).is(ExprKind::Int) && a.operand(1).int_value() > 0 &&
        a.operand(1).int_value() % n == 0) {
      return mod(a.operand(0), b);
    }

    // Drop the terms that are multiples of n and reduce the constant modulo n.
    Expr rest = a;
    auto lin = linearize(a, true);
    if (lin) {
      LinearSum kept;
      bool changed = false;
      for (const auto& t : lin->terms) {
        if (t.coeff == 0) continue;
        if (t.coeff % n == 0) {
          changed = true;
          continue;
        }
        kept.add_term(t.atom, t.coeff);
      }
      kept.constant = *floor_mod(lin->constant, n);
      changed = changed || kept.constant != lin->constant;
      if (!kept.has_terms()) return Expr::int_(kept.constant);
      if (changed) rest = build(kept);
    }

    // When `rest` lies within one multiple of n the modulo is a plain subtraction.
    if (auto rb = bound(rest)) {
      auto klo = floor_div(rb->lo, n);
      auto khi = floor_div(rb->hi, n);
      if (klo && khi && *klo == *khi) {
        if (*klo == 0) return rest;
        if (auto shift = checked_mul(*klo, n)) return arith(ExprKind::Sub, rest, Expr::int_(*shift));
      }
    }
    return Expr::binary(ExprKind::Mod, rest, b);
  }

  Expr min_max(ExprKind k, const Expr& a, const Expr& b) {
    bool is_min = k == ExprKind::Min;
    if (a.is_const() && b.is_const()) {
      Expr folded = fold_constants(k, a, b);
      if (folded.defined()) return folded;
      return Expr::binary(k, a, b);
    }
    if (structurally_equal(a, b)) return a;
    if (a.is_const()) return min_max(k, b, a);  // constants to the right
    if (!is_float_valued(a) && !is_float_valued(b)) {
      if (auto d = difference_bound(a, b)) {
        if (d->hi <= 0) return is_min ? a : b;  // a <= b
        if (d->lo >= 0) return is_min ? b : a;  // a >= b
      }
      // min(min(x, c1), c2) -> min(x, min(c1, c2))
      if (a.is(k) && a.operand(1).is(ExprKind::Int) && b.is(ExprKind::Int)) {
        return min_max(k, a.operand(0), fold_constants(k, a.operand(1), b));
      }
    }
    return Expr::binary(k, a, b);
  }

  static std::optional<bool> decide_by_difference(ExprKind k, Interval d) {
    switch (k) {
      case ExprKind::Lt:
        if (d.hi < 0) return true;
        if (d.lo >= 0) return false;
        break;
      case ExprKind::Le:
        if (d.hi <= 0) return true;
        if (d.lo > 0) return false;
        break;
      case ExprKind::Eq:
      case ExprKind::Ne: {
        std::optional<bool> equal;
        if (d.lo == 0 && d.hi == 0) equal = true;
        else if (!d.contains(0)) equal = false;
        if (equal) return k == ExprKind::Eq ? *equal : !*equal;
        break;
      }
      case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: case ExprKind::Add:
      case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod: case ExprKind::Min:
      case ExprKind::Max: case ExprKind::And: case ExprKind::Or: case ExprKind::Not: case ExprKind::Select:
      case ExprKind::Cast: case ExprKind::Element: case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:
        break;
    }
    return std::nullopt;
  }

  Expr compare(ExprKind k, const Expr& a, const Expr& b) {
    if (a.is_const() && b.is_const()) {
      if (a.is(ExprKind::Int) && b.is(ExprKind::Int)) {
        int64_t x = a.int_value(), y = b.int_value();
        switch (k) {
          case ExprKind::Lt: return bool_expr(x < y);
          case ExprKind::Le: return bool_expr(x <= y);
          case ExprKind::Eq: return bool_expr(x == y);
          case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float:
          case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
          case ExprKind::Min: case ExprKind::Max: case ExprKind::Ne: case ExprKind::And: case ExprKind::Or:
          case ExprKind::Not: case ExprKind::Select: case ExprKind::Cast: case ExprKind::Element:
          case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: return bool_expr(x != y);
        }
      }
      double x = const_as_double(a), y = const_as_double(b);  // NaN compares false, != true
      switch (k) {
        case ExprKind::Lt: return bool_expr(x < y);
        case ExprKind::Le: return bool_expr(x <= y);
        case ExprKind::Eq: return bool_expr(x == y);
        case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float:
        case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
        case ExprKind::Min: case ExprKind::Max: case ExprKind::Ne: case ExprKind::And: case ExprKind::Or:
        case ExprKind::Not: case ExprKind::Select: case ExprKind::Cast: case ExprKind::Element:
        case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: return bool_expr(x != y);
      }
    }
    if (!is_float_valued(a) && !is_float_valued(b)) {
      if (auto d = difference_bound(a, b)) {
        if (auto decided = decide_by_difference(k, *d)) return bool_expr(*decided);
      }
    }
    return Expr::binary(k, a, b);
  }

  Expr logic(ExprKind k, const Expr& a, const Expr& b) {
    bool is_and = k == ExprKind::And;
    if (a.is_const() && b.is_const()) {
      return bool_expr(is_and ? (const_truth(a) && const_truth(b)) : (const_truth(a) || const_truth(b)));
    }
    // One constant side: it either decides the result or drops out (if the other side is
    // already 0/1, so dropping the conversion to bool is exact).
    for (int side = 0; side < 2; ++side) {
      const Expr& c = side == 0 ? a : b;
      const Expr& other = side == 0 ? b : a;
      if (!c.is_const()) continue;
      bool t = const_truth(c);
      if (is_and && !t) return bool_expr(false);
      if (!is_and && t) return bool_expr(true);
      if (is_boolean(other)) return other;
    }
    if (structurally_equal(a, b) && is_boolean(a)) return a;
    return Expr::binary(k, a, b);
  }

  Expr not_(const Expr& a) {
    if (a.is_const()) return bool_expr(!const_truth(a));
    if (a.is(ExprKind::Not) && is_boolean(a.operand(0))) return a.operand(0);
    if (a.is(ExprKind::Eq)) return Expr::binary(ExprKind::Ne, a.operand(0), a.operand(1));
    if (a.is(ExprKind::Ne)) return Expr::binary(ExprKind::Eq, a.operand(0), a.operand(1));
    // !(x < y) == y <= x holds for integers only (NaN breaks it for floats).
    if ((a.is(ExprKind::Lt) || a.is(ExprKind::Le)) && !is_float_valued(a.operand(0)) &&
        !is_float_valued(a.operand(1))) {
      return Expr::binary(a.is(ExprKind::Lt) ? ExprKind::Le : ExprKind::Lt, a.operand(1),
                          a.operand(0));
    }
    return Expr::not_(a);
  }

  Expr select(const Expr& c, const Expr& t, const Expr& f) {
    if (c.is_const()) return const_truth(c) ? t : f;
    if (structurally_equal(t, f)) return t;
    if (is_boolean(c)) {
      if (t.is(ExprKind::Int) && f.is(ExprKind::Int)) {
        if (t.int_value() == 1 && f.int_value() == 0) return c;
        if (t.int_value() == 0 && f.int_value() == 1) return not_(c);
      }
    }
    return Expr::select(c, t, f);
  }

  Expr cast(DType to, const Expr& a) {
    if (a.is(ExprKind::Cast) && a.cast_type() == to) return a;
    if (!a.is_const()) return Expr::cast(to, a);
    if (to == DType::Bool) return bool_expr(const_truth(a));
    if (dtype_is_float(to)) {
      double v = const_as_double(a);
      // Integers beyond 2^53 already lost bits on the way to double.
      bool exact_source = a.is(ExprKind::Float) ||
                          (a.int_value() >= -(int64_t{1} << 53) && a.int_value() <= (int64_t{1} << 53));
      if (exact_source && float_exactly_representable(v, to)) return Expr::float_(v);
      return Expr::cast(to, a);
    }
    if (a.is(ExprKind::Int)) {
      int64_t v = a.int_value();
      if (to == DType::I64) return a;
      if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) return a;
      return Expr::cast(to, a);  // wraps at run time; keep the cast visible
    }
    // Float to an integer type: C semantics (truncate toward zero), only when the value fits.
    double lo = to == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
    double hi_exclusive = to == DType::I32 ? 2147483648.0 : 9223372036854775808.0;
    double v = a.float_value();
    if (std::isfinite(v) && std::trunc(v) >= lo && std::trunc(v) < hi_exclusive) {
      return Expr::int_(static_cast<int64_t>(std::trunc(v)));
    }
    return Expr::cast(to, a);
  }

  // Bitwise kinds: constant folding (eval_bitwise; an out-of-range shift stays for the verifier),
  // constants to the right of the commutative ones, and identities that hold for every integer:
  // x ^ 0, x | 0, x << 0, x >> 0 -> x; x & 0 -> 0; x | -1 -> -1; x & -1, x & x, x | x -> x;
  // x ^ x -> 0; and x & m -> x when m = 2^k - 1 and 0 <= x <= m (x has no bits above m's).
  Expr bitwise(ExprKind k, const Expr& a, const Expr& b) {
    if (is_float_valued(a) || is_float_valued(b)) return Expr::binary(k, a, b);  // the verifier refuses it
    if (a.is(ExprKind::Int) && b.is(ExprKind::Int)) {
      Expr folded = fold_constants(k, a, b);
      if (folded.defined()) return folded;
      return Expr::binary(k, a, b);
    }
    const bool commutative = k == ExprKind::Xor || k == ExprKind::BitAnd || k == ExprKind::BitOr;
    if (commutative && a.is(ExprKind::Int)) return bitwise(k, b, a);
    const bool same = structurally_equal(a, b);
    switch (k) {
      case ExprKind::Xor:
        if (is_const_value(b, 0)) return a;
        if (same) return Expr::int_(0);
        break;
      case ExprKind::BitOr:
        if (is_const_value(b, 0) || same) return a;
        if (is_const_value(b, -1)) return Expr::int_(-1);
        break;
      case ExprKind::BitAnd: {
        if (is_const_value(b, 0)) return Expr::int_(0);
        if (is_const_value(b, -1) || same) return a;
        if (b.is(ExprKind::Int) && b.int_value() >= 0 && std::has_single_bit(static_cast<uint64_t>(b.int_value()) + 1)) {
          auto x = bound(a);
          if (x && x->lo >= 0 && x->hi <= b.int_value()) return a;
        }
        break;
      }
      case ExprKind::Shl: case ExprKind::Shr:
        if (is_const_value(b, 0)) return a;
        break;
      case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: case ExprKind::Add:
      case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod: case ExprKind::Min:
      case ExprKind::Max: case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne:
      case ExprKind::And: case ExprKind::Or: case ExprKind::Not: case ExprKind::Select: case ExprKind::Cast:
      case ExprKind::Element:
        TESSERA_INTERNAL_CHECK(false, "bitwise() is given a bitwise kind");
        break;
    }
    return Expr::binary(k, a, b);
  }

  const RangeMap& ranges_;
};

}  // namespace

std::optional<Interval> bound_of(const Expr& e, const RangeMap& ranges) {
  if (!e.defined()) return std::nullopt;
  switch (e.kind()) {
    case ExprKind::Var: {
      auto it = ranges.find(e.name());
      if (it == ranges.end() || it->second.lo > it->second.hi) return std::nullopt;
      return it->second;
    }
    case ExprKind::Int: return Interval{e.int_value(), e.int_value()};
    case ExprKind::Float: case ExprKind::Value: case ExprKind::Element: return std::nullopt;
    case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne:
    case ExprKind::And: case ExprKind::Or: case ExprKind::Not:
      return Interval{0, 1};
    case ExprKind::Cast: return bound_cast(e.cast_type(), e.operand(0), ranges);
    case ExprKind::Select: {
      if (is_float_valued(e)) return std::nullopt;
      auto t = bound_of(e.operand(1), ranges);
      auto f = bound_of(e.operand(2), ranges);
      if (!t || !f) return std::nullopt;
      return Interval{std::min(t->lo, f->lo), std::max(t->hi, f->hi)};
    }
    case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
    case ExprKind::Min: case ExprKind::Max: case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: break;
  }
  if (is_float_valued(e)) return std::nullopt;
  auto a = bound_of(e.operand(0), ranges);
  auto b = bound_of(e.operand(1), ranges);
  switch (e.kind()) {
    case ExprKind::Add:
      if (!a || !b) return std::nullopt;
      return make_interval(checked_add(a->lo, b->lo), checked_add(a->hi, b->hi));
    case ExprKind::Sub:
      if (!a || !b) return std::nullopt;
      return make_interval(checked_sub(a->lo, b->hi), checked_sub(a->hi, b->lo));
    case ExprKind::Mul:
      if (!a || !b) return std::nullopt;
      return bound_mul(*a, *b);
    case ExprKind::Div:
      if (!a || !b) return std::nullopt;
      return bound_div(*a, *b);
    case ExprKind::Mod:
      if (!b) return std::nullopt;
      return bound_mod(a, *b);
    case ExprKind::Min:
      if (!a || !b) return std::nullopt;
      return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
    case ExprKind::Max:
      if (!a || !b) return std::nullopt;
      return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
    case ExprKind::BitAnd: return bound_bit_and(a, b);
    case ExprKind::BitOr: case ExprKind::Xor:
      if (!a || !b) return std::nullopt;
      return bound_bit_or_xor(e.kind(), *a, *b);
    case ExprKind::Shl: case ExprKind::Shr:
      if (!a || !b) return std::nullopt;
      return bound_shift(e.kind(), *a, *b);
    case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: case ExprKind::Lt:
    case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne: case ExprKind::And: case ExprKind::Or:
    case ExprKind::Not: case ExprKind::Select: case ExprKind::Cast: case ExprKind::Element:
      return std::nullopt;
  }
  TESSERA_UNREACHABLE("an ExprKind value is one of TESSERA_EXPR_KINDS");
}

Expr simplify(const Expr& e, const RangeMap& ranges) {
  if (!e.defined()) return e;
  Simplifier s(ranges);
  Expr current = e;
  for (int round = 0; round < kMaxRounds; ++round) {
    Expr next = s.visit(current);
    if (structurally_equal(next, current)) return current;
    current = std::move(next);
  }
  return current;
}

}  // namespace tessera

// Expr: the index and scalar expression language shared by every IR below Tensor IR.
//
// An Expr is an immutable, reference-counted tree. Two namespaces of names:
//   - Var: an integer index variable: a loop axis (a0), a Let variable, a hardware index
//     (threadIdx.x) or a kernel scalar parameter. The simplifier reasons about these as integers.
//   - Value: a reference to an SSA value or accumulator of Loop/Tile/Kernel IR (in0, v1, acc0),
//     typed by its definition (ValueType). Opaque to the simplifier and to bound_of: a Value is
//     never treated as an integer index, whatever its type.
//   - Element: one element of a register array value (`acc0[1, a3]`): a name plus index operands
//     (constants or unrolled loop axes). Opaque to the simplifier like a Value; its index operands
//     are integer index expressions.
// Var and Value print as their bare name. Integer division and modulo are *floor*
// division/modulo (Python semantics); for the non-negative indices the IR produces they coincide
// with C's. Comparisons and logic produce booleans (used by Select and guards).
//
// Bitwise kinds (Xor `^`, BitAnd `&`, BitOr `|`, Shl `<<`, Shr `>>`) take integer operands only
// (the verifier refuses a float operand). Xor/BitAnd/BitOr act on the two's-complement bits, as
// on a CUDA int or long (for values that fit an int the two agree). Shifts are arithmetic:
// `a << b` is a * 2^b and `a >> b` is floor(a / 2^b), the shift of a CUDA signed int. The shift
// amount must lie in [0, kShiftWidth): a constant amount outside it is a verifier error, the
// simplifier never folds one, and an evaluator meeting one at run time reports a fault (like an
// integer division by zero). Like `*`, `<<` must not overflow the index type.
//
// Printing is infix with minimal parentheses: `a1 * 2048 + a2`, `min(a0, 7)`, `select(a0 < 4, x, y)`.
// Precedence is Python's (comparisons bind looser than the bitwise operators, which bind looser
// than + -), but a bitwise operator never mixes with another operator unparenthesized, so the
// printout reads the same under C's rules: `a1 ^ (a0 & 7)`, `(a0 << 3) + a1`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/type.h"

namespace tessera {

// The one list of expression kinds. Binary arithmetic, comparisons, logic and the bitwise kinds
// take two operands, Not one, Select three (cond, then, else), Cast one (with a dtype). New kinds
// go at the end: the structural hash (a tuning-cache key) derives kind codes from the order.
#define TESSERA_EXPR_KINDS(X) \
  X(Var) X(Value) X(Int) X(Float) \
  X(Add) X(Sub) X(Mul) X(Div) X(Mod) X(Min) X(Max) \
  X(Lt) X(Le) X(Eq) X(Ne) X(And) X(Or) X(Not)     \
  X(Select) X(Cast) X(Element)                    \
  X(Xor) X(BitAnd) X(BitOr) X(Shl) X(Shr)

enum class ExprKind : uint8_t {
#define TESSERA_X(K) K,
  TESSERA_EXPR_KINDS(TESSERA_X)
#undef TESSERA_X
};

std::string_view expr_kind_name(ExprKind k);

// The shape of each kind, declared once: the consumers that only need to know how a kind is built
// (its operands, how it prints) read it here. expr_kind_traits' switch has no default, so a new
// kind is described here first (the build fails until it is), and every consumer that gives kinds
// a meaning (printer, simplifier, evaluators, emitter, simulator) switches over ExprKind without a
// default as well.
enum class ExprShape : uint8_t {
  Name,     // Var, Value: a name, no operands
  Literal,  // Int, Float
  Binary,   // two operands; `infix` is its operator, or "" for a call (min, max)
  Not,      // one operand, prefix `!`
  Select,   // three operands
  Cast,     // one operand and a dtype
  Element,  // a name and one index per dimension
};
struct ExprKindTraits {
  ExprShape shape;
  const char* infix = "";  // Binary kinds printed infix: " + ", " < ", ...
  int precedence = 0;      // of an infix kind: higher binds tighter (|| 1, && 2, compare 3,
                           // | 4, ^ 5, & 6, << >> 7, + - 8, * / % 9)
  bool bitwise = false;    // Xor, BitAnd, BitOr, Shl, Shr: integer operands only
};
constexpr ExprKindTraits expr_kind_traits(ExprKind k) {
  switch (k) {
    case ExprKind::Var: case ExprKind::Value: return {ExprShape::Name};
    case ExprKind::Int: case ExprKind::Float: return {ExprShape::Literal};
    case ExprKind::Add: return {ExprShape::Binary, " + ", 8};
    case ExprKind::Sub: return {ExprShape::Binary, " - ", 8};
    case ExprKind::Mul: return {ExprShape::Binary, " * ", 9};
    case ExprKind::Div: return {ExprShape::Binary, " / ", 9};
    case ExprKind::Mod: return {ExprShape::Binary, " % ", 9};
    case ExprKind::Min: case ExprKind::Max: return {ExprShape::Binary};
    case ExprKind::Lt: return {ExprShape::Binary, " < ", 3};
    case ExprKind::Le: return {ExprShape::Binary, " <= ", 3};
    case ExprKind::Eq: return {ExprShape::Binary, " == ", 3};
    case ExprKind::Ne: return {ExprShape::Binary, " != ", 3};
    case ExprKind::And: return {ExprShape::Binary, " && ", 2};
    case ExprKind::Or: return {ExprShape::Binary, " || ", 1};
    case ExprKind::Not: return {ExprShape::Not};
    case ExprKind::Select: return {ExprShape::Select};
    case ExprKind::Cast: return {ExprShape::Cast};
    case ExprKind::Element: return {ExprShape::Element};
    case ExprKind::BitOr: return {ExprShape::Binary, " | ", 4, true};
    case ExprKind::Xor: return {ExprShape::Binary, " ^ ", 5, true};
    case ExprKind::BitAnd: return {ExprShape::Binary, " & ", 6, true};
    case ExprKind::Shl: return {ExprShape::Binary, " << ", 7, true};
    case ExprKind::Shr: return {ExprShape::Binary, " >> ", 7, true};
  }
  return {ExprShape::Name};  // unreachable: the switch covers every kind
}
constexpr bool is_binary_kind(ExprKind k) { return expr_kind_traits(k).shape == ExprShape::Binary; }
constexpr bool is_bitwise_kind(ExprKind k) { return expr_kind_traits(k).bitwise; }

// Shift amounts must lie in [0, kShiftWidth): the width of the CUDA int that indices are.
inline constexpr int64_t kShiftWidth = 32;
// The integer meaning of a bitwise kind (see the header comment), shared by the simplifier's
// folding and every evaluator; nullopt for a shift amount outside [0, kShiftWidth) or a `<<`
// that overflows int64. Any other kind is an internal error.
std::optional<int64_t> eval_bitwise(ExprKind k, int64_t a, int64_t b);
std::optional<ExprKind> parse_expr_kind(std::string_view s);

struct ExprNode;

class Expr {
 public:
  Expr() = default;  // the undefined expression; defined() is false
  static Expr var(std::string name);
  static Expr value(std::string name);  // an SSA value reference (see the namespaces above)
  static Expr element(std::string name, std::vector<Expr> index);  // `acc0[1, a3]`
  static Expr int_(int64_t v);
  static Expr float_(double v);
  static Expr binary(ExprKind k, Expr a, Expr b);
  static Expr not_(Expr a);
  static Expr select(Expr cond, Expr then_value, Expr else_value);
  static Expr cast(DType to, Expr a);
  static Expr min(Expr a, Expr b) { return binary(ExprKind::Min, std::move(a), std::move(b)); }
  static Expr max(Expr a, Expr b) { return binary(ExprKind::Max, std::move(a), std::move(b)); }

  bool defined() const { return node_ != nullptr; }
  ExprKind kind() const;
  bool is(ExprKind k) const { return defined() && kind() == k; }
  bool is_const() const { return is(ExprKind::Int) || is(ExprKind::Float); }
  const std::string& name() const;        // Var, Value or Element (the array's name)
  bool is_name() const { return is(ExprKind::Var) || is(ExprKind::Value); }
  int64_t int_value() const;               // Int only
  double float_value() const;              // Float only
  DType cast_type() const;                 // Cast only
  const std::vector<Expr>& operands() const;
  const Expr& operand(size_t i) const { return operands()[i]; }

  std::string str() const;  // printed form

  // Identity of the underlying node (not structural equality: use structurally_equal).
  bool same_node(const Expr& o) const { return node_ == o.node_; }

 private:
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  std::shared_ptr<const ExprNode> node_;
};

using ExprList = std::vector<Expr>;

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // floor division
Expr operator%(Expr a, Expr b);  // floor modulo
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
inline Expr operator+(Expr a, int64_t b) { return std::move(a) + Expr::int_(b); }
inline Expr operator-(Expr a, int64_t b) { return std::move(a) - Expr::int_(b); }
inline Expr operator*(Expr a, int64_t b) { return std::move(a) * Expr::int_(b); }
inline Expr operator/(Expr a, int64_t b) { return std::move(a) / Expr::int_(b); }
inline Expr operator%(Expr a, int64_t b) { return std::move(a) % Expr::int_(b); }

bool structurally_equal(const Expr& a, const Expr& b);
// Element by element (an index, an argument list); lists of different lengths differ.
bool structurally_equal(const ExprList& a, const ExprList& b);
uint64_t structural_hash(const Expr& e);

// Replaces every Var or Value whose name is a key of `map` by the mapped expression (SSA and
// index names never collide: both come from the one set of names a kernel binds). A Value mapped
// to a bare Var is renamed and stays a Value, so renaming maps may be built with Expr::var.
Expr substitute(const Expr& e, const std::map<std::string, Expr>& map);
// Names of all Vars and Values in `e`, in first-occurrence order.
std::vector<std::string> free_vars(const Expr& e);
// Whether `name` is among free_vars(e).
bool mentions_var(const Expr& e, std::string_view name);
// Appends the conjuncts of a condition to `out`: `x && y && z` -> x, y, z (a non-conjunction: itself).
void conjuncts(const Expr& e, ExprList& out);

// ---------------------------------------------------------------------------------------------
// Ranges and the simplifier.

// Closed integer interval [lo, hi].
struct Interval {
  int64_t lo = 0;
  int64_t hi = 0;
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  friend bool operator==(const Interval& a, const Interval& b) { return a.lo == b.lo && a.hi == b.hi; }
};

// Known value ranges of variables, e.g. {"a0": [0, 15]} for `for a0 in 0..16`.
using RangeMap = std::map<std::string, Interval>;

// Bounds of an integer expression under `ranges`; nullopt when some variable is unbounded or the
// expression is not integral.
std::optional<Interval> bound_of(const Expr& e, const RangeMap& ranges);

// Algebraic simplification that uses `ranges`: constant folding, identities (x+0, x*1, x*0; for
// the bitwise kinds x^0, x|0, x<<0, x>>0, x&-1, x&x, x|x -> x, x&0, x^x -> 0, x|-1 -> -1, and
// x&m -> x for m = 2^k-1 when 0 <= x <= m; out-of-range shifts never fold),
// reassociation of constants, (x*N + y) / N -> x when 0 <= y < N, (x*N + y) % N -> y,
// x / N -> 0 and x % N -> x when 0 <= x < N, min/max and comparisons decided by bounds,
// select with a decided condition. The result is structurally canonical: equal inputs under equal
// ranges give structurally equal outputs.
Expr simplify(const Expr& e, const RangeMap& ranges = {});

}  // namespace tessera

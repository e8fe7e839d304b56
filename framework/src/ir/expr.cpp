// Expr: construction, accessors, printing, structural equality/hash, substitution and free vars
// of the index/scalar expression language (the simplifier lives in simplify.cpp).
#include "tessera/ir/expr.h"

#include <bit>
#include <cmath>
#include <set>

#include "tessera/ir/attr.h"
#include "tessera/support/internal_check.h"

namespace tessera {

// The node is immutable after construction and shared between trees.
struct ExprNode {
  ExprKind kind = ExprKind::Int;
  std::string name;       // Var, Value, Element
  int64_t int_value = 0;  // Int
  double float_value = 0; // Float
  DType cast_type = DType::F32;  // Cast
  std::vector<Expr> operands;
};

namespace {

// FNV-1a over explicit little-endian bytes, so the hash does not depend on the platform.
constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv_byte(uint64_t h, uint8_t b) { return (h ^ b) * kFnvPrime; }

uint64_t fnv_u64(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) h = fnv_byte(h, static_cast<uint8_t>(v >> (8 * i)));
  return h;
}

uint64_t fnv_string(uint64_t h, const std::string& s) {
  h = fnv_u64(h, s.size());  // length first, so ("ab","c") and ("a","bc") differ
  for (char c : s) h = fnv_byte(h, static_cast<uint8_t>(c));
  return h;
}

// splitmix64 finalizer: spreads FNV's weak low bits before a hash is combined into a parent.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The byte a kind contributes to the hash. The hash is the tuning-cache key, so the codes of the
// kinds that existed before Value and Element were added stay what their enum index was then.
uint8_t stable_kind_code(ExprKind k) {
  if (k == ExprKind::Value) return 100;
  if (k == ExprKind::Element) return 101;
  const auto index = static_cast<uint8_t>(k);
  const auto value_index = static_cast<uint8_t>(ExprKind::Value);
  const auto element_index = static_cast<uint8_t>(ExprKind::Element);
  return static_cast<uint8_t>(index - (index > value_index ? 1 : 0) - (index > element_index ? 1 : 0));
}

uint64_t compute_hash(const Expr& e) {
  if (!e.defined()) return 0;
  uint64_t h = fnv_byte(kFnvOffset, stable_kind_code(e.kind()));
  switch (expr_kind_traits(e.kind()).shape) {
    case ExprShape::Name: case ExprShape::Element: h = fnv_string(h, e.name()); break;
    case ExprShape::Literal:
      h = e.is(ExprKind::Int) ? fnv_u64(h, static_cast<uint64_t>(e.int_value()))
                              : fnv_u64(h, std::bit_cast<uint64_t>(e.float_value()));
      break;
    case ExprShape::Cast: h = fnv_byte(h, static_cast<uint8_t>(e.cast_type())); break;
    case ExprShape::Binary: case ExprShape::Not: case ExprShape::Select: break;  // operands only
  }
  h = fnv_u64(h, e.operands().size());
  for (const Expr& op : e.operands()) h = fnv_u64(h, compute_hash(op));
  return mix(h);
}

// Printing precedence: higher binds tighter (infix kinds take theirs from expr_kind_traits).
enum Prec : int { kOr = 1, kAnd = 2, kCompare = 3, kUnary = 10, kAtom = 11 };

int infix_prec(ExprKind k) { return expr_kind_traits(k).precedence; }

bool is_negative_literal(const Expr& e) {
  if (e.is(ExprKind::Int)) return e.int_value() < 0;
  if (e.is(ExprKind::Float)) return std::signbit(e.float_value()) && !std::isnan(e.float_value());
  return false;
}

std::string float_literal_str(double v) {
  // Python's repr, which already gives "2048.0", "1e-06", "inf", "nan".
  return attr_str(AttrValue(v));
}

void print(const Expr& e, std::string& out);

bool is_infix(const Expr& e) { return is_binary_kind(e.kind()) && infix_prec(e.kind()) > 0; }

// Prints an operand of an infix or prefix operator, parenthesized when it binds looser than
// `min_prec` requires. A negative literal is always parenthesized there so `a + (-1)` and
// `a - (-1)` never read as `a + -1` or `a -- 1`. A bitwise operator and a different infix
// operator never meet unparenthesized (C and Python rank them differently; see expr.h).
void print_operand(const Expr& e, int min_prec, std::string& out, ExprKind parent = ExprKind::Not) {
  int p = kAtom;
  if (is_infix(e)) p = infix_prec(e.kind());
  else if (e.is(ExprKind::Not)) p = kUnary;
  const bool mixes_bitwise = is_infix(e) && is_binary_kind(parent) && e.kind() != parent &&
                             (is_bitwise_kind(e.kind()) || is_bitwise_kind(parent));
  bool parens = p < min_prec || is_negative_literal(e) || mixes_bitwise;
  if (parens) out += '(';
  print(e, out);
  if (parens) out += ')';
}

void print_call(const char* fn, const Expr& e, std::string& out) {
  out += fn;
  out += '(';
  const auto& ops = e.operands();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i > 0) out += ", ";
    print(ops[i], out);
  }
  out += ')';
}

void print(const Expr& e, std::string& out) {
  if (!e.defined()) {
    out += "<undef>";
    return;
  }
  switch (e.kind()) {
    case ExprKind::Var: case ExprKind::Value: out += e.name(); return;
    case ExprKind::Element: {
      out += e.name();
      out += '[';
      for (size_t i = 0; i < e.operands().size(); ++i) {
        if (i > 0) out += ", ";
        print(e.operand(i), out);
      }
      out += ']';
      return;
    }
    case ExprKind::Int: out += std::to_string(e.int_value()); return;
    case ExprKind::Float: out += float_literal_str(e.float_value()); return;
    case ExprKind::Min: print_call("min", e, out); return;
    case ExprKind::Max: print_call("max", e, out); return;
    case ExprKind::Select: print_call("select", e, out); return;
    case ExprKind::Cast: {
      std::string fn(dtype_short_name(e.cast_type()));
      print_call(fn.c_str(), e, out);
      return;
    }
    case ExprKind::Not:
      out += '!';
      print_operand(e.operand(0), kUnary, out);
      return;
    case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
    case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne: case ExprKind::And:
    case ExprKind::Or: case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl:
    case ExprKind::Shr:
      break;  // infix, below
  }
  // Infix binary. All are left-associative: the right operand needs strictly tighter binding,
  // so `a - (b - c)` keeps its parentheses and `a - b - c` has none. Comparisons do not chain,
  // so a comparison operand of a comparison is parenthesized on both sides.
  int p = infix_prec(e.kind());
  int left_min = p == kCompare ? p + 1 : p;
  print_operand(e.operand(0), left_min, out, e.kind());
  out += expr_kind_traits(e.kind()).infix;
  print_operand(e.operand(1), p + 1, out, e.kind());
}

}  // namespace

std::string_view expr_kind_name(ExprKind k) {
  switch (k) {
#define TESSERA_X(K) \
  case ExprKind::K: return #K;
    TESSERA_EXPR_KINDS(TESSERA_X)
#undef TESSERA_X
  }
  TESSERA_INTERNAL_CHECK(false, "an ExprKind value is one of TESSERA_EXPR_KINDS");
}

std::optional<ExprKind> parse_expr_kind(std::string_view s) {
#define TESSERA_X(K) \
  if (s == #K) return ExprKind::K;
  TESSERA_EXPR_KINDS(TESSERA_X)
#undef TESSERA_X
  return std::nullopt;
}

std::optional<int64_t> eval_bitwise(ExprKind k, int64_t a, int64_t b) {
  const bool shift_in_range = b >= 0 && b < kShiftWidth;
  switch (k) {
    case ExprKind::Xor: return a ^ b;
    case ExprKind::BitAnd: return a & b;
    case ExprKind::BitOr: return a | b;
    case ExprKind::Shl: {  // a * 2^b, checked (shifting a negative int64 left is not portable C++)
      int64_t r = 0;
      if (!shift_in_range || __builtin_mul_overflow(a, int64_t{1} << b, &r)) return std::nullopt;
      return r;
    }
    case ExprKind::Shr:  // floor(a / 2^b): C++20 defines >> on negative values as arithmetic
      if (!shift_in_range) return std::nullopt;
      return a >> b;
    case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float: case ExprKind::Add:
    case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod: case ExprKind::Min:
    case ExprKind::Max: case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne:
    case ExprKind::And: case ExprKind::Or: case ExprKind::Not: case ExprKind::Select: case ExprKind::Cast:
    case ExprKind::Element: break;
  }
  TESSERA_INTERNAL_CHECK(false, "eval_bitwise is given a bitwise kind");
  return std::nullopt;
}

Expr Expr::var(std::string name) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Var;
  n->name = std::move(name);
  return Expr(std::move(n));
}

Expr Expr::value(std::string name) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Value;
  n->name = std::move(name);
  return Expr(std::move(n));
}

Expr Expr::element(std::string name, std::vector<Expr> index) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Element;
  n->name = std::move(name);
  n->operands = std::move(index);
  return Expr(std::move(n));
}

Expr Expr::int_(int64_t v) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Int;
  n->int_value = v;
  return Expr(std::move(n));
}

Expr Expr::float_(double v) {
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Float;
  n->float_value = v;
  return Expr(std::move(n));
}

Expr Expr::binary(ExprKind k, Expr a, Expr b) {
  TESSERA_INTERNAL_CHECK(is_binary_kind(k), "Expr::binary is given a binary kind");
  TESSERA_INTERNAL_CHECK(a.defined() && b.defined(), "Expr::binary is given defined operands");
  auto n = std::make_shared<ExprNode>();
  n->kind = k;
  n->operands = {std::move(a), std::move(b)};
  return Expr(std::move(n));
}

Expr Expr::not_(Expr a) {
  TESSERA_INTERNAL_CHECK(a.defined(), "Expr::not_ is given a defined operand");
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Not;
  n->operands = {std::move(a)};
  return Expr(std::move(n));
}

Expr Expr::select(Expr cond, Expr then_value, Expr else_value) {
  TESSERA_INTERNAL_CHECK(cond.defined() && then_value.defined() && else_value.defined(),
                         "Expr::select is given defined operands");
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Select;
  n->operands = {std::move(cond), std::move(then_value), std::move(else_value)};
  return Expr(std::move(n));
}

Expr Expr::cast(DType to, Expr a) {
  TESSERA_INTERNAL_CHECK(a.defined(), "Expr::cast is given a defined operand");
  auto n = std::make_shared<ExprNode>();
  n->kind = ExprKind::Cast;
  n->cast_type = to;
  n->operands = {std::move(a)};
  return Expr(std::move(n));
}

ExprKind Expr::kind() const {
  TESSERA_INTERNAL_CHECK(defined(), "Expr::kind is read from a defined Expr");
  return node_->kind;
}

const std::string& Expr::name() const {
  TESSERA_INTERNAL_CHECK(is_name() || is(ExprKind::Element), "Expr::name is read from a Var, Value or Element");
  return node_->name;
}

int64_t Expr::int_value() const {
  TESSERA_INTERNAL_CHECK(is(ExprKind::Int), "Expr::int_value is read from an Int");
  return node_->int_value;
}

double Expr::float_value() const {
  TESSERA_INTERNAL_CHECK(is(ExprKind::Float), "Expr::float_value is read from a Float");
  return node_->float_value;
}

DType Expr::cast_type() const {
  TESSERA_INTERNAL_CHECK(is(ExprKind::Cast), "Expr::cast_type is read from a Cast");
  return node_->cast_type;
}

const std::vector<Expr>& Expr::operands() const {
  TESSERA_INTERNAL_CHECK(defined(), "Expr::operands is read from a defined Expr");
  return node_->operands;
}

std::string Expr::str() const {
  std::string out;
  print(*this, out);
  return out;
}

Expr operator+(Expr a, Expr b) { return Expr::binary(ExprKind::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Expr::binary(ExprKind::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Expr::binary(ExprKind::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return Expr::binary(ExprKind::Div, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return Expr::binary(ExprKind::Mod, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return Expr::binary(ExprKind::Lt, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return Expr::binary(ExprKind::Le, std::move(a), std::move(b)); }

bool structurally_equal(const Expr& a, const Expr& b) {
  if (a.same_node(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ExprKind::Var: case ExprKind::Value: case ExprKind::Element:
      if (a.name() != b.name()) return false;
      break;
    case ExprKind::Int: if (a.int_value() != b.int_value()) return false; break;
    case ExprKind::Float:
      // Bitwise, so nan equals nan and 0.0 differs from -0.0 (they print differently).
      if (std::bit_cast<uint64_t>(a.float_value()) != std::bit_cast<uint64_t>(b.float_value()))
        return false;
      break;
    case ExprKind::Cast: if (a.cast_type() != b.cast_type()) return false; break;
    case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
    case ExprKind::Min: case ExprKind::Max: case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq:
    case ExprKind::Ne: case ExprKind::And: case ExprKind::Or: case ExprKind::Not: case ExprKind::Select:
    case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:
      break;  // the operands decide
  }
  const auto& xs = a.operands();
  const auto& ys = b.operands();
  if (xs.size() != ys.size()) return false;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!structurally_equal(xs[i], ys[i])) return false;
  }
  return true;
}

uint64_t structural_hash(const Expr& e) { return compute_hash(e); }

namespace {

Expr substitute_impl(const Expr& e, const std::map<std::string, Expr>& map) {
  if (!e.defined()) return e;
  if (e.is_name()) {
    auto it = map.find(e.name());
    if (it == map.end()) return e;
    // Renaming a Value to a bare name keeps it in the value namespace.
    if (e.is(ExprKind::Value) && it->second.is(ExprKind::Var)) return Expr::value(it->second.name());
    return it->second;
  }
  if (e.is(ExprKind::Element)) {  // the array's name renames like a Value; indices substitute
    std::string name = e.name();
    auto it = map.find(name);
    if (it != map.end() && it->second.is_name()) name = it->second.name();
    std::vector<Expr> index;
    for (const Expr& op : e.operands()) index.push_back(substitute_impl(op, map));
    return Expr::element(std::move(name), std::move(index));
  }
  const auto& ops = e.operands();
  if (ops.empty()) return e;
  std::vector<Expr> new_ops;
  new_ops.reserve(ops.size());
  bool changed = false;
  for (const Expr& op : ops) {
    new_ops.push_back(substitute_impl(op, map));
    changed = changed || !new_ops.back().same_node(op);
  }
  if (!changed) return e;  // keep sharing untouched subtrees
  switch (expr_kind_traits(e.kind()).shape) {
    case ExprShape::Not: return Expr::not_(std::move(new_ops[0]));
    case ExprShape::Cast: return Expr::cast(e.cast_type(), std::move(new_ops[0]));
    case ExprShape::Select:
      return Expr::select(std::move(new_ops[0]), std::move(new_ops[1]), std::move(new_ops[2]));
    case ExprShape::Binary: return Expr::binary(e.kind(), std::move(new_ops[0]), std::move(new_ops[1]));
    case ExprShape::Name: case ExprShape::Literal: case ExprShape::Element:
      break;  // handled above: no operands, or the Element case
  }
  TESSERA_INTERNAL_CHECK(false, "substitute rebuilds only kinds with operands");
  return e;
}

void collect_vars(const Expr& e, std::set<std::string>& seen, std::vector<std::string>& out) {
  if (!e.defined()) return;
  if (e.is_name()) {
    if (seen.insert(e.name()).second) out.push_back(e.name());
    return;
  }
  if (e.is(ExprKind::Element) && seen.insert(e.name()).second) out.push_back(e.name());
  for (const Expr& op : e.operands()) collect_vars(op, seen, out);
}

}  // namespace

Expr substitute(const Expr& e, const std::map<std::string, Expr>& map) {
  if (!e.defined() || map.empty()) return e;
  return substitute_impl(e, map);
}

bool structurally_equal(const ExprList& a, const ExprList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!structurally_equal(a[i], b[i])) return false;
  return true;
}

void conjuncts(const Expr& e, ExprList& out) {
  if (e.is(ExprKind::And)) {
    conjuncts(e.operand(0), out);
    conjuncts(e.operand(1), out);
  } else {
    out.push_back(e);
  }
}

std::vector<std::string> free_vars(const Expr& e) {
  std::vector<std::string> out;
  if (!e.defined()) return out;
  std::set<std::string> seen;
  collect_vars(e, seen, out);
  return out;
}

bool mentions_var(const Expr& e, std::string_view name) {
  for (const std::string& v : free_vars(e))
    if (v == name) return true;
  return false;
}

}  // namespace tessera

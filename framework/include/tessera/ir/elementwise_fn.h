// The elementwise functions: the one list of scalar functions that Torch elementwise targets,
// Tensor IR `Elementwise(fn)` and Loop/Tile/Kernel IR `Assign` apply, and of the combine ops that
// `Accum`, `Combine` and `TreeHalve` reduce with.
//
// TESSERA_ELEMENTWISE_FNS is the only place a function is declared. Each entry gives
//   Enum      the ElementwiseFn value
//   name      the spelling in IR text, JSON and Torch IR targets
//   arity     the number of operands
//   result    Same (the operands' type), Float (floating point even for integer operands, as in
//             PyTorch) or Bool (comparisons and logical ops)
//   torch     how the torch_expr frontend exposes it (TorchForm below)
//   cuda_f32  the CUDA C++ for f32 operands: `{N}` is operand N as printed (safe inside call
//             parentheses), `{N:op}` the operand of a binary C operator (parenthesized unless it is
//             an atom or a unary expression), `{N:atom}` an atom (parenthesized unless it is one);
//             `tessera_<name>(` calls a helper the emitter defines in the kernel preamble
//   semantics one line of PyTorch semantics, for docs and reviewers
// Its double-precision meaning is `apply_elementwise_fn` (elementwise_fn.cpp), which switches
// over ElementwiseFn without a default, as do the consumers that need more than the table: a new
// entry fails the build (-Werror=switch) until each handles it. docs/architecture.md, "Adding an
// elementwise function", lists them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tessera/ir/stmt_enums.h"
#include "tessera/support/status.h"

namespace tessera {

// How the torch_expr frontend exposes a function; it registers every entry that has a form.
enum class TorchForm : uint8_t {
  None,        // not a torch.* function of its own (internal, or reached through F.*/modules)
  Unary,       // torch.f(input) and Tensor.f()
  Arithmetic,  // torch.f(input, other) and Tensor.f(other); other may be a Python number
  TensorPair,  // torch.f(input, other) and Tensor.f(other); both tensors
  Comparison,  // like Arithmetic, with a bool result
  Where,       // torch.where(condition, input, other) and Tensor.where(condition, other)
};

// What type the result has, given the operands' type.
enum class FnResult : uint8_t { Same, Float, Bool };

// clang-format off
#define TESSERA_ELEMENTWISE_FNS(X)                                                                          \
  X(Identity,   "identity",    1, Same,  None,       "{0}",                              "a copy")                                  \
  X(Cast,       "cast",        1, Same,  None,       "{0}",                              "a conversion: the result type rounds (f16/bf16) or truncates (integers)") \
  X(Neg,        "neg",         1, Same,  Unary,      "-{0:atom}",                        "-x")                                      \
  X(Exp,        "exp",         1, Float, Unary,      "expf({0})",                        "e^x")                                     \
  X(Log,        "log",         1, Float, Unary,      "logf({0})",                        "natural log; log(0) = -inf, log(x<0) = NaN") \
  X(Sqrt,       "sqrt",        1, Float, Unary,      "sqrtf({0})",                       "sqrt(x<0) = NaN")                         \
  X(Rsqrt,      "rsqrt",       1, Float, Unary,      "rsqrtf({0})",                      "1 / sqrt(x); rsqrt(0) = inf")             \
  X(Tanh,       "tanh",        1, Float, Unary,      "tanhf({0})",                       "hyperbolic tangent")                      \
  X(Sigmoid,    "sigmoid",     1, Float, Unary,      "1.0f / (1.0f + expf(-{0:atom}))",  "1 / (1 + e^-x)")                          \
  X(Abs,        "abs",         1, Same,  Unary,      "fabsf({0})",                       "absolute value")                                     \
  X(Reciprocal, "reciprocal",  1, Float, Unary,      "1.0f / {0:op}",                    "1 / x; 1/0 = inf")                        \
  X(Erf,        "erf",         1, Float, Unary,      "erff({0})",                        "the error function")                      \
  X(Relu,       "relu",        1, Same,  Unary,      "tessera_relu({0})",                "max(x, 0); NaN stays NaN")                \
  X(Silu,       "silu",        1, Float, None,       "{0:op} / (1.0f + expf(-{0:atom}))", "x * sigmoid(x) (F.silu; decompose expands it)") \
  X(Sin,        "sin",         1, Float, Unary,      "sinf({0})",                        "sine")                                    \
  X(Cos,        "cos",         1, Float, Unary,      "cosf({0})",                        "cosine")                                  \
  X(Square,     "square",      1, Same,  Unary,      "{0:op} * {0:op}",                  "x * x")                                   \
  X(Floor,      "floor",       1, Same,  Unary,      "tessera_floor({0})",               "round toward -inf; integers unchanged (bool is an error, as in PyTorch)") \
  X(LogicalNot, "logical_not", 1, Bool,  None,       "{0:op} == 0.0f ? 1.0f : 0.0f",     "x == 0")                                  \
  X(Add,        "add",         2, Same,  Arithmetic, "{0:op} + {1:op}",                  "a + b")                                   \
  X(Sub,        "sub",         2, Same,  Arithmetic, "{0:op} - {1:op}",                  "a - b")                                   \
  X(Mul,        "mul",         2, Same,  Arithmetic, "{0:op} * {1:op}",                  "a * b")                                   \
  X(Div,        "div",         2, Float, Arithmetic, "{0:op} / {1:op}",                  "true division; x/0 = +-inf, 0/0 = NaN")   \
  X(Pow,        "pow",         2, Same,  Arithmetic, "powf({0}, {1})",                   "a ^ b; pow(x, 0) = 1 even for NaN x")     \
  X(FloorDivide, "floor_divide", 2, Same, Arithmetic, "tessera_floor_divide({0}, {1})", "Python's a // b: the floor of the exact quotient (integers stay integers); float x // 0 = x / 0; integer x // 0 is ZeroDivisionError") \
  X(Remainder,  "remainder",   2, Same,  Arithmetic, "tessera_remainder({0}, {1})",      "Python's a % b: a - (a // b) * b, the sign of b; float x % 0 = NaN; integer x % 0 is ZeroDivisionError") \
  X(Maximum,    "maximum",     2, Same,  TensorPair, "tessera_maximum({0}, {1})",        "larger of a, b; NaN if either is NaN (unlike fmax)") \
  X(Minimum,    "minimum",     2, Same,  TensorPair, "tessera_minimum({0}, {1})",        "smaller of a, b; NaN if either is NaN (unlike fmin)") \
  X(Lt,         "lt",          2, Bool,  Comparison, "{0:op} < {1:op} ? 1.0f : 0.0f",    "a < b; false for NaN")                    \
  X(Le,         "le",          2, Bool,  Comparison, "{0:op} <= {1:op} ? 1.0f : 0.0f",   "a <= b; false for NaN")                   \
  X(Eq,         "eq",          2, Bool,  Comparison, "{0:op} == {1:op} ? 1.0f : 0.0f",   "a == b; false for NaN")                   \
  X(Ne,         "ne",          2, Bool,  Comparison, "{0:op} != {1:op} ? 1.0f : 0.0f",   "a != b; true for NaN")                    \
  X(Gt,         "gt",          2, Bool,  Comparison, "{0:op} > {1:op} ? 1.0f : 0.0f",    "a > b; false for NaN")                    \
  X(Ge,         "ge",          2, Bool,  Comparison, "{0:op} >= {1:op} ? 1.0f : 0.0f",   "a >= b; false for NaN")                   \
  X(LogicalAnd, "logical_and", 2, Bool,  None,       "{0:op} != 0.0f && {1:op} != 0.0f ? 1.0f : 0.0f", "a != 0 and b != 0")     \
  X(LogicalOr,  "logical_or",  2, Bool,  None,       "{0:op} != 0.0f || {1:op} != 0.0f ? 1.0f : 0.0f", "a != 0 or b != 0")      \
  X(Where,      "where",       3, Same,  Where,      "{0:op} != 0.0f ? {1:op} : {2:op}", "cond ? a : b (cond is bool)")
// clang-format on

enum class ElementwiseFn : uint8_t {
#define TESSERA_ELEMENTWISE_FN_ENUM_(e, name, arity, result, torch, cuda, semantics) e,
  TESSERA_ELEMENTWISE_FNS(TESSERA_ELEMENTWISE_FN_ENUM_)
#undef TESSERA_ELEMENTWISE_FN_ENUM_
};

struct ElementwiseFnInfo {
  ElementwiseFn fn;
  std::string_view name;
  size_t arity;
  FnResult result;
  TorchForm torch;
  std::string_view cuda_f32;
  std::string_view semantics;
};

// Every function, in declaration order (kElementwiseFns[i].fn has the value i).
inline constexpr ElementwiseFnInfo kElementwiseFns[] = {
#define TESSERA_ELEMENTWISE_FN_INFO_(e, name, arity, result, torch, cuda, semantics) \
  {ElementwiseFn::e, name, arity, FnResult::result, TorchForm::torch, cuda, semantics},
    TESSERA_ELEMENTWISE_FNS(TESSERA_ELEMENTWISE_FN_INFO_)
#undef TESSERA_ELEMENTWISE_FN_INFO_
};

constexpr const ElementwiseFnInfo& fn_info(ElementwiseFn fn) { return kElementwiseFns[static_cast<size_t>(fn)]; }
constexpr std::string_view name_of(ElementwiseFn fn) { return fn_info(fn).name; }

// The function spelled `name`; an unknown name is an error suggesting the closest spelling.
Expected<ElementwiseFn> parse_elementwise_fn(std::string_view name);
// The same, and also an error unless it takes `arity` operands.
Expected<ElementwiseFn> resolve_elementwise_fn(std::string_view name, size_t arity);
// An error unless `fn` takes `arity` operands.
Status check_arity(ElementwiseFn fn, size_t arity);

// The function in double precision; `args` holds fn_info(fn).arity values (comparisons give 1 / 0).
double apply_elementwise_fn(ElementwiseFn fn, std::span<const double> args);

// Whether `fn` applied to integer operands `args` is an integer division by zero: floor_divide or
// remainder with a zero divisor, which PyTorch refuses at run time ("ZeroDivisionError"). The
// evaluators (reference, Tensor and Loop IR interpreters, simulator) report it as an error; a CUDA
// kernel cannot and gives 0 (docs/ir.md, "Elementwise functions"). Float operands divide by zero
// as IEEE floats do, so callers ask only for integer results.
bool is_integer_division_by_zero(ElementwiseFn fn, std::span<const double> args);

// ---- combine ops: how Accum, Combine and TreeHalve merge two partial results -------------------

// X(Enum, name, the elementwise function it applies, the Tensor IR reduction it performs).
// Loop, Tile and Kernel IR spell the op `name` (Accum, Combine, TreeHalve); a Tensor IR
// `ReduceOp` spells it as its reduction (sum, prod, max, min), PyTorch's names. When reading IR
// text, `maximum`/`minimum` are accepted as aliases of max/min (they denote the same function).
#define TESSERA_COMBINE_FNS(X)   \
  X(Add, "add", Add, "sum")      \
  X(Mul, "mul", Mul, "prod")     \
  X(Max, "max", Maximum, "max")  \
  X(Min, "min", Minimum, "min")

enum class CombineFn : uint8_t {
#define TESSERA_COMBINE_FN_ENUM_(e, name, fn, reduction) e,
  TESSERA_COMBINE_FNS(TESSERA_COMBINE_FN_ENUM_)
#undef TESSERA_COMBINE_FN_ENUM_
};

struct CombineFnInfo {
  CombineFn op;
  std::string_view name;
  ElementwiseFn fn;
  std::string_view reduction;
};

inline constexpr CombineFnInfo kCombineFns[] = {
#define TESSERA_COMBINE_FN_INFO_(e, name, fn, reduction) {CombineFn::e, name, ElementwiseFn::fn, reduction},
    TESSERA_COMBINE_FNS(TESSERA_COMBINE_FN_INFO_)
#undef TESSERA_COMBINE_FN_INFO_
};

constexpr const CombineFnInfo& fn_info(CombineFn op) { return kCombineFns[static_cast<size_t>(op)]; }
constexpr std::string_view name_of(CombineFn op) { return fn_info(op).name; }
constexpr std::string_view reduction_name(CombineFn op) { return fn_info(op).reduction; }

// The combine op spelled `name` (or its elementwise alias); otherwise an error listing them.
Expected<CombineFn> parse_combine_fn(std::string_view name);
// The combine op of the Tensor IR reduction spelled `name` (sum, prod, max, min); otherwise an
// error listing them.
Expected<CombineFn> parse_reduction(std::string_view name);

// op(acc, x) in double precision: the elementwise function of `op` (NaN propagates through max/min).
inline double apply_combine_fn(CombineFn op, double acc, double x) {
  const double args[2] = {acc, x};
  return apply_elementwise_fn(fn_info(op).fn, args);
}

// Statement fields hold these enums: their spellings come from the tables above, so the IR
// printer, parser and JSON agree by construction (tessera/ir/stmt_enums.h). spelling_pairs
// lists a table's (value, name) pairs in declaration order.
template <class E, class Info, size_t N>
constexpr std::array<std::pair<E, std::string_view>, N> spelling_pairs(const Info (&infos)[N], E Info::*value) {
  std::array<std::pair<E, std::string_view>, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = {infos[i].*value, infos[i].name};
  return out;
}
template <> struct StmtEnumTable<ElementwiseFn> {
  static constexpr auto entries = spelling_pairs(kElementwiseFns, &ElementwiseFnInfo::fn);
  static constexpr std::string_view what = "an elementwise function name";
};
template <> struct StmtEnumTable<CombineFn> {
  static constexpr auto entries = spelling_pairs(kCombineFns, &CombineFnInfo::op);
  static constexpr std::string_view what = "an accumulate op (add, mul, max, min)";
};

}  // namespace tessera

// The CudaEmitter class and the helpers its source files share; private to the cuda plugin. The
// emitter is split by concern (cuda_emitter.cpp describes what it produces):
//   cuda_emitter.cpp        the kernel as a whole: checks, signature and kernel ABI, buffers,
//                           preamble helpers, errors, and emit_cuda_kernel
//   cuda_emitter_exprs.cpp  expressions and the C types of values
//   cuda_emitter_stmts.cpp  statements, one emit_<kind> per statement kind
//   cuda_emitter_ptx.cpp    inline PTX: cp.async runs under their architecture guard, and the
//                           sm_90 TMA copies and mbarriers (MbarrierInit / Arrive / Wait, TmaLoad)
#pragma once

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include "tessera/ir/elementwise_fn.h"
#include "tessera/support/internal_check.h"
#include "cuda_emitter.h"

namespace tessera::cuda_emit {

// C operator precedence, lower binds tighter (only the levels we print).
constexpr int kAtom = 0, kUnary = 2, kMul = 3, kAdd = 4, kShift = 5, kRel = 6, kEq = 7, kBitAnd = 8, kXor = 9,
              kBitOr = 10, kAnd = 11, kOr = 12, kTernary = 13;

enum class Ty { Int, Float, Double };

struct Printed {
  std::string text;
  int prec = kAtom;
  Ty type = Ty::Int;
};

inline std::string wrap(const Printed& p, bool needed) { return needed ? "(" + p.text + ")" : p.text; }
inline std::string atom(const Printed& p) { return wrap(p, p.prec > kAtom); }

struct Buffer {
  std::string cname;  // the C identifier (the buffer name unless that is reserved in C)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  bool shared = false;
  bool writable = false;
  int64_t align = 0;                         // Smem: the declared alignment in bytes
  SmemSwizzle swizzle = SmemSwizzle::None;   // Smem: the declared swizzle (what a TmaLoad must match)
};

// The mbarriers one MbarrierInit declares: a static `__shared__ unsigned long long cname[slots]`.
struct Barrier {
  std::string cname;
  int64_t slots = 1;
};

// Preamble pieces, emitted only when used, in this order.
enum Helper {
  kNeedInf, kNeedNan, kFloorDiv, kFloorMod, kFloorModF, kMaximum, kMinimum, kRelu,
  kFloorFn, kFloorDivideFn, kRemainderFn, kMaximumF64, kMinimumF64, kReluF64, kFloorF64, kFloorDivideF64,
  kRemainderF64, kHelperCount
};

inline const char* const kHelperText[kHelperCount] = {
    "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n",
    "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n",
    "// Floor division and modulo (the IR's integer / and %), for operands that may be negative.\n"
    "__device__ __forceinline__ long long tessera_floordiv(long long a, long long b) {\n"
    "  long long q = a / b;\n"
    "  return (q * b != a && (a < 0) != (b < 0)) ? q - 1 : q;\n"
    "}\n",
    "__device__ __forceinline__ long long tessera_floormod(long long a, long long b) {\n"
    "  long long r = a % b;\n"
    "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n"
    "}\n",
    "__device__ __forceinline__ float tessera_floormodf(float a, float b) {\n"
    "  return a - b * floorf(a / b);\n"
    "}\n",
    "// max/min that propagate NaN like torch.maximum and amax (fmaxf would drop it).\n"
    "__device__ __forceinline__ float tessera_maximum(float a, float b) {\n"
    "  return (a != a || b != b) ? a + b : fmaxf(a, b);\n"
    "}\n",
    "__device__ __forceinline__ float tessera_minimum(float a, float b) {\n"
    "  return (a != a || b != b) ? a + b : fminf(a, b);\n"
    "}\n",
    "__device__ __forceinline__ float tessera_relu(float x) {\n"
    "  return (x > 0.0f || x != x) ? x : 0.0f;\n"
    "}\n",
    "// torch.floor: integers are unchanged (floorf would round a large int64 through float).\n"
    "__device__ __forceinline__ float tessera_floor(float x) { return floorf(x); }\n"
    "template <typename T> __device__ __forceinline__ T tessera_floor(T x) { return x; }\n",
    "// Python's // (torch.floor_divide): floats as PyTorch's div_floor_floating (the floor of the exact\n"
    "// quotient, from fmod); integers by truncating division corrected toward -inf. An integer\n"
    "// division by zero, which PyTorch refuses, gives 0 here (a kernel cannot raise).\n"
    "__device__ __forceinline__ float tessera_floor_divide(float a, float b) {\n"
    "  if (b == 0.0f) return a / b;\n"
    "  float mod = fmodf(a, b);\n"
    "  float div = (a - mod) / b;\n"
    "  if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) div -= 1.0f;\n"
    "  if (div == 0.0f) return copysignf(0.0f, a / b);\n"
    "  float q = floorf(div);\n"
    "  return div - q > 0.5f ? q + 1.0f : q;\n"
    "}\n"
    "template <typename A, typename B>\n"
    "__device__ __forceinline__ auto tessera_floor_divide(A a, B b) -> decltype(a / b) {\n"
    "  typedef decltype(a / b) T;\n"
    "  if (b == 0) return 0;\n"
    "  if (b == -1) return (T)(0ULL - (unsigned long long)a);  // wraps like PyTorch: INT_MIN // -1 == INT_MIN\n"
    "  T q = (T)a / (T)b;\n"
    "  return ((T)a % (T)b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n"
    "}\n",
    "// Python's % (torch.remainder): the result has the divisor's sign; integer x % 0 gives 0.\n"
    "__device__ __forceinline__ float tessera_remainder(float a, float b) {\n"
    "  float mod = fmodf(a, b);\n"
    "  return (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) ? mod + b : mod;\n"
    "}\n"
    "template <typename A, typename B>\n"
    "__device__ __forceinline__ auto tessera_remainder(A a, B b) -> decltype(a % b) {\n"
    "  typedef decltype(a % b) T;\n"
    "  if (b == 0 || b == -1) return 0;\n"
    "  T r = (T)a % (T)b;\n"
    "  return (r != 0 && (r < 0) != (b < 0)) ? r + (T)b : r;\n"
    "}\n",
    // The f64 variants: f64_spelling renames tessera_<f>( to tessera_<f>_f64(.
    "__device__ __forceinline__ double tessera_maximum_f64(double a, double b) {\n"
    "  return (a != a || b != b) ? a + b : fmax(a, b);\n"
    "}\n",
    "__device__ __forceinline__ double tessera_minimum_f64(double a, double b) {\n"
    "  return (a != a || b != b) ? a + b : fmin(a, b);\n"
    "}\n",
    "__device__ __forceinline__ double tessera_relu_f64(double x) {\n"
    "  return (x > 0.0 || x != x) ? x : 0.0;\n"
    "}\n",
    "__device__ __forceinline__ double tessera_floor_f64(double x) { return floor(x); }\n",
    "__device__ __forceinline__ double tessera_floor_divide_f64(double a, double b) {\n"
    "  if (b == 0.0) return a / b;\n"
    "  double mod = fmod(a, b);\n"
    "  double div = (a - mod) / b;\n"
    "  if (mod != 0.0 && (b < 0.0) != (mod < 0.0)) div -= 1.0;\n"
    "  if (div == 0.0) return copysign(0.0, a / b);\n"
    "  double q = floor(div);\n"
    "  return div - q > 0.5 ? q + 1.0 : q;\n"
    "}\n",
    "__device__ __forceinline__ double tessera_remainder_f64(double a, double b) {\n"
    "  double mod = fmod(a, b);\n"
    "  return (mod != 0.0 && (b < 0.0) != (mod < 0.0)) ? mod + b : mod;\n"
    "}\n",
};

inline bool is_hardware_index(const std::string& name) {
  static const std::set<std::string> names = {
      "threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
      "blockDim.x",  "blockDim.y",  "blockDim.z",  "gridDim.x",  "gridDim.y",  "gridDim.z"};
  return names.count(name) > 0;
}

inline bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Names a buffer parameter may not take: C++/CUDA keywords and builtins, names the emitter itself
// introduces (tessera_*), and the IR's local names (a0, in0, v0, acc0), which would shadow it.
inline bool is_reserved(const std::string& s) {
  static const std::set<std::string> words = {
      "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
      "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected", "public",
      "register", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template",
      "this", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using", "virtual",
      "void", "volatile", "while", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
      "min", "max", "half", "float2", "float4", "INFINITY", "NAN"};
  if (words.count(s) || s.rfind("tessera_", 0) == 0 || s.rfind("__", 0) == 0) return true;
  for (const char* prefix : {"a", "in", "v", "acc"}) {
    std::string p = prefix;
    if (s.size() > p.size() && s.rfind(p, 0) == 0 &&
        s.find_first_not_of("0123456789", p.size()) == std::string::npos)
      return true;
  }
  return false;
}

// The f64 form of an elementwise function's f32 CUDA spelling: the double-precision math functions
// (expf -> exp), the helpers' f64 variants (tessera_relu -> tessera_relu_f64) and double literals
// (1.0f -> 1.0). Placeholders ({0:op}) pass through.
inline std::string f64_spelling(std::string_view f32) {
  static const std::set<std::string> float_math = {"expf",  "logf",  "sqrtf", "rsqrtf", "tanhf",     "fabsf", "erff",
                                                   "sinf",  "cosf",  "powf",  "floorf", "copysignf", "fmodf", "fmaxf",
                                                   "fminf"};
  std::string out;
  for (size_t i = 0; i < f32.size();) {
    const char c = f32[i];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = i;
      while (end < f32.size() && (std::isalnum(static_cast<unsigned char>(f32[end])) || f32[end] == '_')) ++end;
      std::string word(f32.substr(i, end - i));
      if (float_math.count(word)) word.pop_back();
      else if (word.rfind("tessera_", 0) == 0) word += "_f64";
      out += word;
      i = end;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t end = i;
      while (end < f32.size() && (std::isdigit(static_cast<unsigned char>(f32[end])) || f32[end] == '.')) ++end;
      out += f32.substr(i, end - i);
      if (end < f32.size() && f32[end] == 'f') ++end;  // 1.0f -> 1.0
      i = end;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

inline std::string c_type(DType t) { return std::string(dtype_cuda_name(t)); }

inline std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  size_t start = line.find_first_not_of(' ');
  return start == std::string::npos ? line : line.substr(start);
}

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

class CudaEmitter {
 public:
  CudaEmitter(const Graph& g, const Node& node, const KernelOp& op, const CudaEmitLimits& limits)
      : g_(g), node_(node), op_(op), limits_(limits), warpgroup_products_(contains_warpgroup_products(op.body)) {}

  Expected<CudaOp> emit();

 private:
  // ---- errors -----------------------------------------------------------------------------------
  Diagnostic error(const std::string& msg) const;
  Diagnostic error_at(const Stmt& s, const std::string& msg) const;
  // Expression printing records its first problem here; statements check it (see checked()).
  void expr_problem(const std::string& msg);
  Status checked(const Stmt& s);

  // ---- buffers ----------------------------------------------------------------------------------
  Status add_global(const std::string& id, bool writable);
  std::string c_name_for(const std::string& id);
  const Buffer* buffer(const std::string& id);
  void use_dtype(DType t);

  // The element `index` of `b` as an lvalue text: `x[a1 * 2048 + a0]`.
  std::string element(const Buffer& b, const ExprList& index, int64_t offset = 0);
  std::string load_text(const Buffer& b, const std::string& elem);
  std::string store_text(const Buffer& b, const Printed& v);

  // ---- expressions ------------------------------------------------------------------------------
  std::string float_literal(double v);
  bool non_negative(const Expr& e) const;
  Printed infix(const Printed& a, const std::string& op, const Printed& b, int prec, Ty type);
  Printed bitwise(const Printed& a, const std::string& op, const Printed& b, int prec);
  static Ty join_type(const Printed& a, const Printed& b);
  Printed print(const Expr& e);
  Printed print_binary(const Expr& e);
  Printed as_float(const Printed& p, const Expr& e);
  Printed as_double(const Printed& p, const Expr& e);
  Printed as_int(const Printed& p);
  Printed value(const Expr& e) { return as_float(print(e), e); }
  Printed index(const Expr& e) { return as_int(print(e)); }

  // An Accum / TreeHalve combination of two float texts (loads and accumulators: atoms).
  std::string combine(CombineFn op, const std::string& a, const std::string& b, DType t);

  // An elementwise function applied to float arguments: its table spelling (ir/elementwise_fn.h)
  // with `{N}` the argument as printed, `{N:op}` an operand of a C operator, `{N:atom}` an atom.
  // The arity was checked when the name was resolved.
  std::string call_fn(ElementwiseFn fn, const std::vector<Printed>& args);

  // ---- statements -------------------------------------------------------------------------------
  void line(const std::string& text) { body_ += std::string(2 * indent_, ' ') + text + "\n"; }
  void directive(const std::string& text) { body_ += text + "\n"; }  // preprocessor lines: column 0

  void bind(const std::string& name, Ty t) { names_[name] = t; }

  // Binds an SSA value of dtype `t`: half values are read through float, others as they are.
  void bind_value(const std::string& name, DType t);
  Printed print_value_name(const std::string& n);

  // The initializer of a value of dtype `t` from the computed text `p`.
  std::string convert_to(DType t, const Printed& p);

  // `float v0` / `__nv_bfloat16 in0` / `float acc0[4][8]`.
  std::string declare(const ValueType& t, const std::string& name);

  // The arguments of an Assign of result type `t`: float arithmetic for float results, integer
  // arithmetic (values as they are) otherwise.
  Printed arg(const Expr& e, DType t);
  Status emit_nested(const Body& b);
  static bool is_cp_async(const Stmt& s);
  Status emit_body(const Body& b, bool top_level);

  // One case per kind: the kinds with CUDA of their own go to their emit_<kind> below; the others
  // are answered with a located error.
  Status emit(const Stmt& s);
  Status emit_load(const Stmt& s, const Load* st);
  Status emit_assign(const Stmt& s, const Assign* st);
  Status emit_select(const Stmt& s, const Select* st);
  Status emit_init(const Stmt& s, const Init* st);
  Status emit_accum(const Stmt& s, const Accum* st);
  Status emit_write(const Stmt& s, const Write* st);
  Status emit_loop(const Stmt& s, const Loop* st);
  Status emit_strided_loop(const Stmt& s, const StridedLoop* st);
  Status emit_cond(const Stmt& s, const Cond* st);
  Status emit_let(const Stmt& s, const Let* st);
  Status emit_smem(const Stmt& s, const Smem* st);
  Status emit_warp_shuffle(const Stmt& s, const WarpShuffle* st);

  Status emit_loop_body(const std::string& var, const Expr& begin, const Expr& end, const Expr& step,
                        const Body& body);

  // cp.async on sm_80+, an ordinary (synchronous) copy below, where commit and wait have nothing
  // to wait for.
  Status emit_cp_async_run(const Body& b, size_t begin, size_t end);

  // TMA and mbarriers (sm_90 PTX), each under `#if __CUDA_ARCH__ >= 900` with a `__trap()` below:
  // a TMA kernel built for an older architecture compiles, and fails loudly if it runs.
  Status emit_mbarrier_init(const Stmt& s, const MbarrierInit& st);
  Status emit_mbarrier_arrive(const Stmt& s, const MbarrierArrive& st);
  Status emit_mbarrier_wait(const Stmt& s, const MbarrierWait& st);
  Status emit_cluster_sync(const Stmt& s);
  Status emit_dsmem_load(const Stmt& s, const DsmemLoad& st);
  // `dst` (of `type`) = the element `elem` of `buf` (an expression of its storage type), converted.
  void emit_loaded_value(const std::string& dst, const ValueType& type, const Buffer& buf, const std::string& elem);
  Status emit_tma_load(const Stmt& s, const TmaLoad& st);
  // `(unsigned)__cvta_generic_to_shared(&bar[slot])` for barrier `name`'s `slot` (a problem is
  // recorded for checked() when `name` is not an MbarrierInit above, or a constant slot is outside it).
  std::string barrier_address(const std::string& name, const Expr& slot);
  // Emits `lines` between `#if __CUDA_ARCH__ >= 900` and `#else __trap(); #endif`.
  void sm90_only(const std::vector<std::string>& lines, const std::string& needs = "TMA and mbarriers");
  // The same with the guard `__CUDA_ARCH__ >= arch` (80, 90).
  void arch_only(int arch, const std::vector<std::string>& lines, const std::string& needs);

  // Tensor cores (sm_80 PTX, under `#if __CUDA_ARCH__ >= 800` with a `__trap()` below): fragments
  // are 16-byte aligned arrays of their element type, passed to the instructions as 32-bit
  // registers (two 16-bit elements each).
  Status emit_fragment(const Stmt& s, const Fragment& st);
  Status emit_ldmatrix(const Stmt& s, const LdMatrix& st);
  Status emit_mma(const Stmt& s, const MmaSync& st);
  // Warpgroup tensor cores (sm_90a PTX, under `#if defined(__CUDA_ARCH_FEAT_SM90_ALL)`, the
  // architecture-specific features of sm_90a, with a `__trap()` below): wgmma.mma_async takes
  // 64-bit shared-memory matrix descriptors built from the operand's address, strides and swizzle.
  Status emit_wgmma(const Stmt& s, const WgmmaMma& st);
  void sm90a_only(const std::vector<std::string>& lines);
  // The descriptor of the operand starting at `elem` (an element of a shared buffer).
  static std::string wgmma_descriptor(const std::string& elem, int64_t lbo, int64_t sbo, SmemSwizzle swizzle);
  // `frag0[i][j]`: element `element` (row-major) of the slice `name[index]` of a register array.
  std::string slice_element(const std::string& name, const ExprList& prefix, int64_t element);
  Status emit_tree_halve(const Stmt& s, const TreeHalve& st);

  // The text written to an element of `b`: a value of the buffer's dtype as it is, anything else
  // converted from float.
  std::string stored(const Buffer& b, const Expr& v);

  static bool vectorizable(const Buffer& b, size_t k) { return b.dtype == DType::F32 && (k == 2 || k == 4); }

  // 16-bit elements move as raw bits: K of them in one `unsigned int` (K = 2), `uint2` (4) or
  // `uint4` (8, a 128-bit access), reinterpreted element-wise.
  static std::optional<std::string> raw_vector_type(const Buffer& b, size_t k);
  Status emit_vector_load(const Stmt& s, const VectorLoad& st);
  Status emit_vector_store(const Stmt& s, const VectorStore& st);
  const Graph& g_;
  const Node& node_;
  const KernelOp& op_;
  CudaEmitLimits limits_;
  std::map<std::string, Buffer> buffers_;
  std::map<std::string, Barrier> barriers_;          // by MbarrierInit name
  std::map<std::string, KernelParam> tensor_maps_;   // tensor-map params by name
  std::set<std::string> used_cnames_;
  std::map<std::string, Ty> names_;  // scalar names bound in the current scope
  std::map<std::string, DType> value_types_;  // SSA values (and accumulators) -> their dtype
  std::map<std::string, std::vector<int64_t>> array_dims_;  // register arrays (Init, Fragment): their shapes
  RangeMap ranges_;                   // known ranges of integer names (for `/` and `%`)
  std::set<Helper> helpers_;
  bool uses_half_ = false, uses_bf16_ = false;
  bool double_context_ = false;  // printing the operands of an f64 definition: float literals are doubles
  int64_t smem_bytes_ = 0;
  std::vector<SmemSlot> smem_slots_;  // the dynamic layout, when op_.dynamic_smem > 0
  bool declared_dynamic_smem_ = false;
  bool warpgroup_products_ = false;  // the body holds a WgmmaMma: Sync() fences the async proxy too
  std::string body_;
  int indent_ = 1;
  std::string expr_error_;
};

}  // namespace tessera::cuda_emit

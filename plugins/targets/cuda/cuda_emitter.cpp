// CudaEmitter: Kernel IR -> CUDA C++ source, with exactly the semantics of docs/ir.md "Kernel IR"
// (the sim target is the oracle). One statement per line, two-space indent, deterministic.
//
// Typing: each value (in*, v*, acc*) is declared with the C type of its ValueType (`float`,
// `__nv_bfloat16`, `__half`, `int`, `long long`, `bool`); loop, Let and hardware indices are `int`.
// Arithmetic is printed in float (f32 values, and half values read through __bfloat162float /
// __half2float), in double (f64 values: the table's f32 spelling with the double math functions,
// the helpers' _f64 variants and double literals, see f64_spelling) or in integers (integer and
// bool values); a definition converts the computed text to its declared type
// (`__float2bfloat16(...)`), so a `cast` Assign is just a typed definition.
// An Expr is printed with the evaluator's typing rule (integral iff all operands are), so floor
// division and modulo become C's `/` and `%` only where bound_of proves both operands
// non-negative, else the preamble helpers tessera_floordiv / tessera_floormod. Buffers are flat
// pointers: multi-dim indices are flattened row-major with the node (or Smem) shape. A load or
// write whose value type is the buffer's dtype moves the element as it is; otherwise it converts
// through float.
#include "cuda_emitter.h"

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

namespace tessera {
namespace {

// C operator precedence, lower binds tighter (only the levels we print).
constexpr int kAtom = 0, kUnary = 2, kMul = 3, kAdd = 4, kRel = 6, kEq = 7, kAnd = 11, kOr = 12,
              kTernary = 13;

enum class Ty { Int, Float, Double };

struct Printed {
  std::string text;
  int prec = kAtom;
  Ty type = Ty::Int;
};

std::string wrap(const Printed& p, bool needed) { return needed ? "(" + p.text + ")" : p.text; }
std::string atom(const Printed& p) { return wrap(p, p.prec > kAtom); }

struct Buffer {
  std::string cname;  // the C identifier (the buffer name unless that is reserved in C)
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  bool shared = false;
  bool writable = false;
};

// Preamble pieces, emitted only when used, in this order.
enum Helper {
  kNeedInf, kNeedNan, kFloorDiv, kFloorMod, kFloorModF, kMaximum, kMinimum, kRelu,
  kFloorFn, kFloorDivideFn, kRemainderFn, kMaximumF64, kMinimumF64, kReluF64, kFloorF64, kFloorDivideF64,
  kRemainderF64, kHelperCount
};

const char* const kHelperText[kHelperCount] = {
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

bool is_hardware_index(const std::string& name) {
  static const std::set<std::string> names = {
      "threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
      "blockDim.x",  "blockDim.y",  "blockDim.z",  "gridDim.x",  "gridDim.y",  "gridDim.z"};
  return names.count(name) > 0;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Names a buffer parameter may not take: C++/CUDA keywords and builtins, names the emitter itself
// introduces (tessera_*), and the IR's local names (a0, in0, v0, acc0), which would shadow it.
bool is_reserved(const std::string& s) {
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
std::string f64_spelling(std::string_view f32) {
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

std::string c_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::Bool: return "bool";
    case DType::F64: return "double";
  }
  return "float";
}

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  size_t start = line.find_first_not_of(' ');
  return start == std::string::npos ? line : line.substr(start);
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

class CudaEmitter {
 public:
  CudaEmitter(const Graph& g, const Node& node, const KernelOp& op, const CudaEmitLimits& limits)
      : g_(g), node_(node), op_(op), limits_(limits) {}

  Expected<CudaOp> emit() {
    if (!is_identifier(op_.name)) return error("kernel name '" + op_.name + "' is not a C identifier");
    if (op_.grid.size() != 3 || op_.block.size() != 3)
      return error("grid and block must have three dimensions");
    int64_t threads = 1;
    for (size_t i = 0; i < 3; ++i) {
      if (op_.grid[i] < 1 || op_.block[i] < 1) return error("grid and block dimensions must be positive");
      threads *= op_.block[i];
    }
    if (limits_.max_threads_per_block > 0 && threads > limits_.max_threads_per_block)
      return error("block of " + std::to_string(threads) + " threads exceeds the device's " +
                   std::to_string(limits_.max_threads_per_block));
    static const char* const axes[] = {"x", "y", "z"};
    for (size_t i = 0; i < 3; ++i) {
      ranges_[std::string("threadIdx.") + axes[i]] = {0, op_.block[i] - 1};
      ranges_[std::string("blockIdx.") + axes[i]] = {0, op_.grid[i] - 1};
      ranges_[std::string("blockDim.") + axes[i]] = {op_.block[i], op_.block[i]};
      ranges_[std::string("gridDim.") + axes[i]] = {op_.grid[i], op_.grid[i]};
    }

    CudaOp out;
    out.name = op_.name;
    out.grid = op_.grid;
    out.block = op_.block;
    out.cluster = op_.cluster;
    out.dynamic_smem = op_.dynamic_smem;
    if (op_.dynamic_smem < 0) return error("dynamic shared memory is negative");
    TESSERA_ASSIGN_OR_RETURN(out.params, kernel_signature(g_, node_));
    std::vector<std::string> params;
    bool uses_tensor_map = false;
    for (const KernelParam& p : out.params) {
      switch (p.kind) {
        case ParamKind::Buffer: {
          TESSERA_TRY(add_global(p.name, p.written));
          const Buffer& b = buffers_.at(p.name);
          params.push_back((b.writable ? "" : "const ") + c_type(b.dtype) + "* __restrict__ " + b.cname);
          use_dtype(b.dtype);
          break;
        }
        case ParamKind::Scalar: {
          // The body names a scalar as a Var, so its C name must be its IR name.
          if (!is_identifier(p.name) || is_reserved(p.name) || used_cnames_.count(p.name))
            return error("scalar parameter '" + p.name + "' cannot be a C identifier here");
          if (!is_scalar_param_type(p.dtype)) return error("scalar parameter '" + p.name + "' must be i32, i64 or f32");
          used_cnames_.insert(p.name);
          params.push_back(c_type(p.dtype) + " " + p.name);
          bind(p.name, dtype_is_float(p.dtype) ? Ty::Float : Ty::Int);
          // A floating-point scalar is a value of the body (an integer one an index variable).
          if (dtype_is_float(p.dtype)) value_types_[p.name] = p.dtype;
          if (p.range) ranges_[p.name] = *p.range;
          break;
        }
        case ParamKind::TensorMap:
          if (!is_identifier(p.name) || is_reserved(p.name) || used_cnames_.count(p.name))
            return error("tensor-map parameter '" + p.name + "' cannot be a C identifier here");
          used_cnames_.insert(p.name);
          params.push_back("const __grid_constant__ CUtensorMap " + p.name);
          uses_tensor_map = true;
          break;
      }
    }
    if (op_.dynamic_smem > 0) {
      smem_slots_ = smem_layout(op_.body);
      const int64_t needed = smem_layout_bytes(op_.body);
      if (needed > op_.dynamic_smem)
        return error("the Smem arrays need " + std::to_string(needed) + " bytes but the kernel declares " +
                     std::to_string(op_.dynamic_smem) + " bytes of dynamic shared memory");
      if (limits_.max_smem_bytes > 0 && op_.dynamic_smem > limits_.max_smem_bytes)
        return error("dynamic shared memory of " + std::to_string(op_.dynamic_smem) + " bytes exceeds the device's " +
                     std::to_string(limits_.max_smem_bytes) + "-byte limit per block");
    }

    indent_ = 1;
    TESSERA_TRY(emit_body(op_.body, /*top_level=*/true));
    if (op_.dynamic_smem == 0 && limits_.static_smem_bytes > 0 && smem_bytes_ > limits_.static_smem_bytes)
      return error("static shared memory of " + std::to_string(smem_bytes_) + " bytes exceeds the device's " +
                   std::to_string(limits_.static_smem_bytes) + "-byte limit for static __shared__ arrays");

    std::string src;
    if (uses_half_) src += "#include <cuda_fp16.h>\n";
    if (uses_bf16_) src += "#include <cuda_bf16.h>\n";
    std::string helpers;
    // The driver's opaque descriptor (cuda.h spells it the same way; NVRTC sources do not include
    // cuda.h): 128 bytes, 64-byte aligned, passed by value.
    if (uses_tensor_map)
      helpers += "typedef struct __align__(64) CUtensorMap_st { unsigned long long opaque[16]; } CUtensorMap;\n";
    for (int h = 0; h < kHelperCount; ++h)
      if (helpers_.count(static_cast<Helper>(h))) helpers += kHelperText[h];
    if (!src.empty()) src += "\n";
    if (!helpers.empty()) src += helpers + "\n";
    src += "extern \"C\" __global__ __launch_bounds__(" + std::to_string(threads) + ") void " + op_.name + "(" +
           join(params, ", ") + ") {\n" + body_ + "}\n";
    out.source = std::move(src);
    return out;
  }

 private:
  // ---- errors -----------------------------------------------------------------------------------
  Diagnostic error(const std::string& msg) const {
    return make_error("kernel " + op_.name + ": " + msg).at_node(node_.id());
  }
  Diagnostic error_at(const Stmt& s, const std::string& msg) const {
    return make_error("kernel " + op_.name + ", statement `" + first_line(print_stmt(s)) + "`: " + msg)
        .at_node(node_.id());
  }
  // Expression printing records its first problem here; statements check it (see checked()).
  void expr_problem(const std::string& msg) {
    if (expr_error_.empty()) expr_error_ = msg;
  }
  Status checked(const Stmt& s) {
    if (expr_error_.empty()) return Status::ok();
    std::string msg = expr_error_;
    expr_error_.clear();
    return error_at(s, msg);
  }

  // ---- buffers ----------------------------------------------------------------------------------
  Status add_global(const std::string& id, bool writable) {
    const Node* n = g_.find(id);
    if (!n) return error("buffer '" + id + "' is not a node of the graph");
    Buffer b;
    b.dtype = n->type.dtype;
    for (const Dim& d : n->type.shape) b.shape.push_back(d.value());
    b.elements = num_elements(n->type.shape);
    b.writable = writable;
    b.cname = c_name_for(id);
    buffers_[id] = std::move(b);
    return Status::ok();
  }

  std::string c_name_for(const std::string& id) {
    std::string base = id;
    if (!is_identifier(base) || is_reserved(base)) {
      for (char& c : base)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      base = "buf_" + base;
    }
    std::string name = base;
    for (int k = 1; used_cnames_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_cnames_.insert(name);
    return name;
  }

  const Buffer* buffer(const std::string& id) {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) {
      expr_problem("buffer '" + id + "' is neither an input or the output of this node nor a declared Smem");
      return nullptr;
    }
    return &it->second;
  }

  void use_dtype(DType t) {
    if (t == DType::F16) uses_half_ = true;
    if (t == DType::BF16) uses_bf16_ = true;
  }

  // The element `index` of `b` as an lvalue text: `x[a1 * 2048 + a0]`.
  std::string element(const Buffer& b, const ExprList& index, int64_t offset = 0) {
    if (index.size() != b.shape.size()) {
      expr_problem("buffer '" + b.cname + "' has " + std::to_string(b.shape.size()) + " dimensions but is indexed with " +
                   std::to_string(index.size()));
      return b.cname + "[0]";
    }
    Expr flat = Expr::int_(0);
    for (size_t i = 0; i < index.size(); ++i) {
      if (!index[i].defined()) {
        expr_problem("missing index expression");
        return b.cname + "[0]";
      }
      // Past 2^31 elements the flat index needs 64 bits.
      Expr term = i == 0 && b.elements > INT_MAX ? Expr::cast(DType::I64, index[0]) : index[i];
      flat = i == 0 ? term : flat * b.shape[i] + term;
    }
    if (offset != 0) flat = flat + offset;
    return b.cname + "[" + as_int(print(simplify(flat, ranges_))).text + "]";
  }

  std::string load_text(const Buffer& b, const std::string& elem) {
    switch (b.dtype) {
      case DType::F32: return elem;
      case DType::F16: return "__half2float(" + elem + ")";
      case DType::BF16: return "__bfloat162float(" + elem + ")";
      case DType::I32:
      case DType::I64: return "(float)" + elem;
      case DType::Bool: return "(" + elem + " ? 1.0f : 0.0f)";
      case DType::F64: return elem;
    }
    return elem;
  }

  std::string store_text(const Buffer& b, const Printed& v) {
    switch (b.dtype) {
      case DType::F32: return v.text;
      case DType::F16: return "__float2half(" + v.text + ")";
      case DType::BF16: return "__float2bfloat16(" + v.text + ")";
      case DType::I32: return "(int)" + wrap(v, v.prec > kUnary);
      case DType::I64: return "(long long)" + wrap(v, v.prec > kUnary);
      case DType::Bool: return wrap(v, v.prec >= kEq) + " != 0.0f";
      case DType::F64: return v.type == Ty::Double ? v.text : "(double)" + wrap(v, v.prec > kUnary);
    }
    return v.text;
  }

  // ---- expressions ------------------------------------------------------------------------------
  std::string float_literal(double v) {
    if (std::isnan(v)) {
      helpers_.insert(kNeedNan);
      return "NAN";
    }
    if (std::isinf(v)) {
      helpers_.insert(kNeedInf);
      return v > 0 ? "INFINITY" : "-INFINITY";
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, double_context_ ? "%.17g" : "%.9g", v);
    std::string s = buf;
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return double_context_ ? s : s + "f";
  }

  bool non_negative(const Expr& e) const {
    std::optional<Interval> b = bound_of(e, ranges_);
    return b && b->lo >= 0;
  }

  Printed infix(const Printed& a, const std::string& op, const Printed& b, int prec, Ty type) {
    return {wrap(a, a.prec > prec) + " " + op + " " + wrap(b, b.prec >= prec), prec, type};
  }

  static Ty join_type(const Printed& a, const Printed& b) {
    if (a.type == Ty::Double || b.type == Ty::Double) return Ty::Double;
    return a.type == Ty::Float || b.type == Ty::Float ? Ty::Float : Ty::Int;
  }

  Printed print(const Expr& e) {
    if (!e.defined()) {
      expr_problem("missing expression");
      return {"0", kAtom, Ty::Int};
    }
    switch (e.kind()) {
      case ExprKind::Value: return print_value_name(e.name());
      case ExprKind::Element: {  // `acc0[1][a3]`; read through float like a value of its dtype
        std::string text = e.name();
        for (const Expr& i : e.operands()) text += "[" + index(i).text + "]";
        Printed name = print_value_name(e.name());
        auto it = value_types_.find(e.name());
        if (it == value_types_.end()) return name;
        if (it->second == DType::F16) return {"__half2float(" + text + ")", kAtom, Ty::Float};
        if (it->second == DType::BF16) return {"__bfloat162float(" + text + ")", kAtom, Ty::Float};
        return {text, kAtom, name.type};
      }
      case ExprKind::Var: {
        const std::string& n = e.name();
        // Hardware indices are unsigned in CUDA; the IR's index arithmetic is signed.
        if (is_hardware_index(n)) return {"(int)" + n, kUnary, Ty::Int};
        if (value_types_.count(n)) return print_value_name(n);  // hand-built IR naming a value as a Var
        auto it = names_.find(n);
        if (it == names_.end()) {
          expr_problem("'" + n + "' is not bound here");
          return {n, kAtom, Ty::Int};
        }
        return {n, kAtom, it->second};
      }
      case ExprKind::Int: {
        int64_t v = e.int_value();
        // -9223372036854775808LL is not a C literal (the magnitude does not fit): spell it out.
        if (v == std::numeric_limits<int64_t>::min()) return {"(-9223372036854775807LL - 1)", kAtom, Ty::Int};
        std::string t = std::to_string(v) + (v > INT_MAX || v < INT_MIN ? "LL" : "");
        return {t, v < 0 ? kUnary : kAtom, Ty::Int};
      }
      case ExprKind::Float: {
        double v = e.float_value();
        return {float_literal(v), std::signbit(v) ? kUnary : kAtom, double_context_ ? Ty::Double : Ty::Float};
      }
      case ExprKind::Not: {
        Printed a = print(e.operand(0));
        return {"!" + wrap(a, a.prec > kUnary), kUnary, Ty::Int};
      }
      case ExprKind::Select: {
        Printed c = print(e.operand(0)), a = print(e.operand(1)), b = print(e.operand(2));
        Ty t = join_type(a, b);
        if (t == Ty::Float) a = as_float(a, e.operand(1)), b = as_float(b, e.operand(2));
        if (t == Ty::Double) a = as_double(a, e.operand(1)), b = as_double(b, e.operand(2));
        return {wrap(c, c.prec >= kTernary) + " ? " + wrap(a, a.prec >= kTernary) + " : " + wrap(b, b.prec > kTernary),
                kTernary, t};
      }
      case ExprKind::Cast: {
        Printed a = print(e.operand(0));
        std::string arg = "(" + a.text + ")";
        switch (e.cast_type()) {
          case DType::I32: return {"(int)" + arg, kUnary, Ty::Int};
          case DType::I64: return {"(long long)" + arg, kUnary, Ty::Int};
          case DType::Bool: return {wrap(a, a.prec >= kEq) + " != 0", kEq, Ty::Int};
          case DType::F64: return {"(double)" + arg, kUnary, Ty::Double};
          case DType::F32: case DType::F16: case DType::BF16: return {"(float)" + arg, kUnary, Ty::Float};  // values are float already
        }
        TESSERA_UNREACHABLE("a DType value is one of the declared dtypes");
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
      case ExprKind::Or: return print_binary(e);
    }
    expr_problem("cannot print expression kind " + std::string(expr_kind_name(e.kind())));
    return {"0", kAtom, Ty::Int};
  }

  Printed print_binary(const Expr& e) {
    Printed a = print(e.operand(0)), b = print(e.operand(1));
    Ty t = join_type(a, b);
    switch (e.kind()) {
      case ExprKind::Add: return infix(a, "+", b, kAdd, t);
      case ExprKind::Sub: return infix(a, "-", b, kAdd, t);
      case ExprKind::Mul: return infix(a, "*", b, kMul, t);
      case ExprKind::Div:
        if (t == Ty::Float || (non_negative(e.operand(0)) && non_negative(e.operand(1))))
          return infix(a, "/", b, kMul, t);
        helpers_.insert(kFloorDiv);
        return {"tessera_floordiv(" + a.text + ", " + b.text + ")", kAtom, Ty::Int};
      case ExprKind::Mod:
        if (t != Ty::Int) {
          helpers_.insert(kFloorModF);
          return {"tessera_floormodf(" + a.text + ", " + b.text + ")", kAtom, Ty::Float};
        }
        if (non_negative(e.operand(0)) && non_negative(e.operand(1))) return infix(a, "%", b, kMul, t);
        helpers_.insert(kFloorMod);
        return {"tessera_floormod(" + a.text + ", " + b.text + ")", kAtom, Ty::Int};
      case ExprKind::Min:
        return {(t == Ty::Int ? "min(" : t == Ty::Double ? "fmin(" : "fminf(") + a.text + ", " + b.text + ")", kAtom, t};
      case ExprKind::Max:
        return {(t == Ty::Int ? "max(" : t == Ty::Double ? "fmax(" : "fmaxf(") + a.text + ", " + b.text + ")", kAtom, t};
      case ExprKind::Lt: return infix(a, "<", b, kRel, Ty::Int);
      case ExprKind::Le: return infix(a, "<=", b, kRel, Ty::Int);
      case ExprKind::Eq: return infix(a, "==", b, kEq, Ty::Int);
      case ExprKind::Ne: return infix(a, "!=", b, kEq, Ty::Int);
      case ExprKind::And: return infix(a, "&&", b, kAnd, Ty::Int);
      case ExprKind::Or: return infix(a, "||", b, kOr, Ty::Int);
      // Not binary: print() handles these before reaching here.
      case ExprKind::Var:
      case ExprKind::Value:
      case ExprKind::Int:
      case ExprKind::Float:
      case ExprKind::Not:
      case ExprKind::Select:
      case ExprKind::Cast:
      case ExprKind::Element: break;
    }
    expr_problem("cannot print expression kind " + std::string(expr_kind_name(e.kind())));
    return {"0", kAtom, Ty::Int};
  }

  Printed as_float(const Printed& p, const Expr& e) {
    if (p.type == Ty::Float || p.type == Ty::Double) return p;  // a double stays double (f64 arithmetic)
    if (e.is(ExprKind::Int)) {
      double v = static_cast<double>(e.int_value());
      return {float_literal(v), v < 0 ? kUnary : kAtom, Ty::Float};
    }
    return {"(float)" + wrap(p, p.prec > kAtom), kUnary, Ty::Float};
  }
  Printed as_double(const Printed& p, const Expr& e) {
    if (p.type == Ty::Double) return p;
    if (e.is(ExprKind::Int)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(e.int_value()));
      std::string s = buf;
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return {s, e.int_value() < 0 ? kUnary : kAtom, Ty::Double};
    }
    return {"(double)" + wrap(p, p.prec > kAtom), kUnary, Ty::Double};
  }
  Printed as_int(const Printed& p) {
    if (p.type == Ty::Int) return p;
    return {"(int)" + wrap(p, p.prec > kAtom), kUnary, Ty::Int};
  }
  Printed value(const Expr& e) { return as_float(print(e), e); }
  Printed index(const Expr& e) { return as_int(print(e)); }

  // An Accum / TreeHalve combination of two float texts (loads and accumulators: atoms).
  std::string combine(CombineFn op, const std::string& a, const std::string& b, DType t) {
    const Ty ty = t == DType::F64 ? Ty::Double : Ty::Float;
    return call_fn(fn_info(op).fn, {Printed{a, kAtom, ty}, Printed{b, kAtom, ty}});
  }

  // An elementwise function applied to float arguments: its table spelling (ir/elementwise_fn.h)
  // with `{N}` the argument as printed, `{N:op}` an operand of a C operator, `{N:atom}` an atom.
  // The arity was checked when the name was resolved.
  std::string call_fn(ElementwiseFn fn, const std::vector<Printed>& args) {
    bool in_double = false;
    for (const Printed& p : args) in_double = in_double || p.type == Ty::Double;
    const std::string f64 = in_double ? f64_spelling(fn_info(fn).cuda_f32) : std::string();
    std::string_view spelling = in_double ? std::string_view(f64) : fn_info(fn).cuda_f32;
    std::string out;
    for (size_t i = 0; i < spelling.size(); ++i) {
      size_t close = spelling[i] == '{' ? spelling.find('}', i) : std::string_view::npos;
      if (close == std::string_view::npos) {
        out += spelling[i];
        continue;
      }
      std::string_view ref = spelling.substr(i + 1, close - i - 1);
      const Printed& p = args.at(static_cast<size_t>(ref[0] - '0'));
      std::string_view how = ref.size() > 2 ? ref.substr(2) : std::string_view();
      out += how == "op" ? wrap(p, p.prec > kUnary) : how == "atom" ? atom(p) : p.text;
      i = close;
    }
    // Helpers the spelling calls are defined in the preamble.
    for (auto [helper, name] :
         {std::pair{kMaximum, "tessera_maximum("}, std::pair{kMinimum, "tessera_minimum("}, std::pair{kRelu, "tessera_relu("},
          std::pair{kFloorFn, "tessera_floor("}, std::pair{kFloorDivideFn, "tessera_floor_divide("},
          std::pair{kRemainderFn, "tessera_remainder("}, std::pair{kMaximumF64, "tessera_maximum_f64("},
          std::pair{kMinimumF64, "tessera_minimum_f64("}, std::pair{kReluF64, "tessera_relu_f64("},
          std::pair{kFloorF64, "tessera_floor_f64("}, std::pair{kFloorDivideF64, "tessera_floor_divide_f64("},
          std::pair{kRemainderF64, "tessera_remainder_f64("}})
      if (spelling.find(name) != std::string_view::npos) helpers_.insert(helper);
    return out;
  }

  // ---- statements -------------------------------------------------------------------------------
  void line(const std::string& text) { body_ += std::string(2 * indent_, ' ') + text + "\n"; }
  void directive(const std::string& text) { body_ += text + "\n"; }  // preprocessor lines: column 0

  void bind(const std::string& name, Ty t) { names_[name] = t; }

  // Binds an SSA value of dtype `t`: half values are read through float, others as they are.
  void bind_value(const std::string& name, DType t) {
    use_dtype(t);
    names_[name] = dtype_is_float(t) ? Ty::Float : Ty::Int;
    value_types_[name] = t;
  }

  Printed print_value_name(const std::string& n) {
    auto it = value_types_.find(n);
    if (it == value_types_.end() || !names_.count(n)) {
      expr_problem("'" + n + "' is not bound here");
      return {n, kAtom, Ty::Float};
    }
    switch (it->second) {
      case DType::F16: return {"__half2float(" + n + ")", kAtom, Ty::Float};
      case DType::BF16: return {"__bfloat162float(" + n + ")", kAtom, Ty::Float};
      case DType::F32: return {n, kAtom, Ty::Float};
      case DType::F64: return {n, kAtom, Ty::Double};
      case DType::I32: case DType::I64: case DType::Bool: return {n, kAtom, Ty::Int};
    }
    TESSERA_UNREACHABLE("a DType value is one of the declared dtypes");
  }

  // The initializer of a value of dtype `t` from the computed text `p`.
  std::string convert_to(DType t, const Printed& p) {
    switch (t) {
      case DType::F32: return p.type == Ty::Float ? p.text : "(float)" + wrap(p, p.prec > kUnary);
      case DType::F16: return "__float2half(" + p.text + ")";
      case DType::BF16: return "__float2bfloat16(" + p.text + ")";
      case DType::I32: return p.type == Ty::Int ? p.text : "(int)" + wrap(p, p.prec > kUnary);
      case DType::I64: return "(long long)" + wrap(p, p.prec > kUnary);
      case DType::Bool: return p.type == Ty::Int ? wrap(p, p.prec >= kEq) + " != 0" : wrap(p, p.prec >= kEq) + " != 0.0f";
      case DType::F64: return p.type == Ty::Double ? p.text : "(double)" + wrap(p, p.prec > kUnary);
    }
    return p.text;
  }

  // `float v0` / `__nv_bfloat16 in0` / `float acc0[4][8]`.
  std::string declare(const ValueType& t, const std::string& name) {
    std::string type = c_type(t.dtype);
    if (t.is_packed()) type = t.dtype == DType::BF16 ? "__nv_bfloat162" : "__half2";
    std::string dims;
    for (int64_t d : t.array) dims += "[" + std::to_string(d) + "]";
    return type + " " + name + dims;
  }

  // The arguments of an Assign of result type `t`: float arithmetic for float results, integer
  // arithmetic (values as they are) otherwise.
  Printed arg(const Expr& e, DType t) {
    if (t == DType::F64) {
      double_context_ = true;
      Printed p = print(e);
      double_context_ = false;
      return as_double(p, e);
    }
    return dtype_is_float(t) ? value(e) : print(e);
  }

  Status emit_nested(const Body& b) {
    auto saved_names = names_;
    auto saved_ranges = ranges_;
    ++indent_;
    Status s = emit_body(b, false);
    --indent_;
    names_ = std::move(saved_names);
    ranges_ = std::move(saved_ranges);
    return s;
  }

  static bool is_cp_async(const Stmt& s) {
    return s.is<CpAsyncCopy>() || s.is<CpAsyncCommit>() || s.is<CpAsyncWait>();
  }

  Status emit_body(const Body& b, bool top_level) {
    for (size_t i = 0; i < b.size();) {
      if (is_cp_async(b[i])) {
        // A run of cp.async statements shares one architecture guard.
        size_t end = i;
        while (end < b.size() && is_cp_async(b[end])) ++end;
        TESSERA_TRY(emit_cp_async_run(b, i, end));
        i = end;
        continue;
      }
      if (b[i].is<Smem>() && !top_level) return error_at(b[i], "Smem must be at the top level of the body");
      TESSERA_TRY(emit(b[i]));
      TESSERA_TRY(checked(b[i]));
      ++i;
    }
    return Status::ok();
  }

  // One case per kind: the kinds with CUDA of their own go to their emit_<kind> below; the others
  // are answered with a located error.
  Status emit(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::Load: return emit_load(s, s.as<Load>());
      case StmtKind::Assign: return emit_assign(s, s.as<Assign>());
      case StmtKind::Select: return emit_select(s, s.as<Select>());
      case StmtKind::Init: return emit_init(s, s.as<Init>());
      case StmtKind::Accum: return emit_accum(s, s.as<Accum>());
      case StmtKind::Write: return emit_write(s, s.as<Write>());
      case StmtKind::Loop: return emit_loop(s, s.as<Loop>());
      case StmtKind::StridedLoop: return emit_strided_loop(s, s.as<StridedLoop>());
      case StmtKind::Cond: return emit_cond(s, s.as<Cond>());
      case StmtKind::Let: return emit_let(s, s.as<Let>());
      case StmtKind::Smem: return emit_smem(s, s.as<Smem>());
      case StmtKind::Sync:
        line("__syncthreads();");
        return Status::ok();
      case StmtKind::WarpShuffle: return emit_warp_shuffle(s, s.as<WarpShuffle>());
      case StmtKind::TreeHalve: return emit_tree_halve(s, *s.as<TreeHalve>());
      case StmtKind::VectorLoad: return emit_vector_load(s, *s.as<VectorLoad>());
      case StmtKind::VectorStore: return emit_vector_store(s, *s.as<VectorStore>());
      // emit_body emits runs of these together (emit_cp_async_run) under one architecture guard.
      case StmtKind::CpAsyncCopy:
      case StmtKind::CpAsyncCommit:
      case StmtKind::CpAsyncWait: {
        Body run{s};
        return emit_cp_async_run(run, 0, 1);
      }
      case StmtKind::TmaLoad:
      case StmtKind::MbarrierInit:
      case StmtKind::MbarrierArrive:
      case StmtKind::MbarrierWait:
        return error_at(s, std::string(stmt_kind_name(s.kind())) + " is not supported by emit_cuda yet");
      case StmtKind::Tile:
      case StmtKind::Stage:
      case StmtKind::Combine:
      case StmtKind::AsyncWait:
        return error_at(s, std::string(stmt_kind_name(s.kind())) +
                               " is not a Kernel IR statement (run materialize before emit_cuda)");
    }
    return error_at(s, "statement of unknown kind");  // unreachable: the switch covers every StmtKind
  }

  Status emit_load(const Stmt& s, const Load* st) {
    const Buffer* buf = buffer(st->buffer);
    if (!buf) return checked(s);
    std::string elem = element(*buf, st->index);
    if (st->type.dtype == buf->dtype) line(declare(st->type, st->dst) + " = " + elem + ";");
    else if (st->type.dtype == DType::F64 && !dtype_is_float(buf->dtype))  // integers past 2^24 stay exact
      line(declare(st->type, st->dst) + " = (double)" + elem + ";");
    else line(declare(st->type, st->dst) + " = " + convert_to(st->type.dtype, {load_text(*buf, elem), kAtom, Ty::Float}) + ";");
    bind_value(st->dst, st->type.dtype);
    return Status::ok();
  }

  Status emit_assign(const Stmt& s, const Assign* st) {
    std::vector<Printed> args;
    for (const Expr& a : st->args) args.push_back(arg(a, st->type.dtype));
    Expected<ElementwiseFn> fn = resolve_elementwise_fn(st->op, args.size());
    if (!fn) return error_at(s, fn.error().message);
    std::optional<std::string> text = call_fn(*fn, args);
    Ty computed = dtype_is_float(st->type.dtype) || args.empty() ? Ty::Float : args[0].type;
    for (const Printed& p : args) computed = p.type == Ty::Float ? Ty::Float : computed;
    for (const Printed& p : args) computed = p.type == Ty::Double ? Ty::Double : computed;
    line(declare(st->type, st->dst) + " = " + convert_to(st->type.dtype, {*text, kTernary, computed}) + ";");
    bind_value(st->dst, st->type.dtype);
    return Status::ok();
  }

  Status emit_select(const Stmt& s, const Select* st) {
    Printed c = print(st->cond), a = arg(st->then_value, st->type.dtype), e = arg(st->else_value, st->type.dtype);
    Printed chosen{wrap(c, c.prec >= kTernary) + " ? " + wrap(a, a.prec >= kTernary) + " : " + wrap(e, e.prec > kTernary),
                   kTernary, join_type(a, e)};
    line(declare(st->type, st->dst) + " = " + convert_to(st->type.dtype, chosen) + ";");
    bind_value(st->dst, st->type.dtype);
    return Status::ok();
  }

  Status emit_init(const Stmt& s, const Init* st) {
    std::string init = convert_to(st->type.dtype, arg(st->value, st->type.dtype));
    if (st->type.is_array()) {
      // Every element starts at the identity; the unrolled fill keeps the array in registers.
      std::string first = st->acc;
      for (size_t d = 0; d < st->type.array.size(); ++d) first += "[0]";
      line(declare(st->type, st->acc) + ";");
      line("#pragma unroll");
      line("for (int tessera_i = 0; tessera_i < " + std::to_string(st->type.array_elements()) +
           "; ++tessera_i) (&" + first + ")[tessera_i] = " + init + ";");
    } else {
      line(declare(st->type, st->acc) + " = " + init + ";");
    }
    bind_value(st->acc, st->type.dtype);
    return Status::ok();
  }

  Status emit_accum(const Stmt& s, const Accum* st) {
    Printed v = value(st->value);
    if (!names_.count(st->acc)) return error_at(s, "accumulator '" + st->acc + "' is not initialized here");
    std::string target = st->acc;
    for (const Expr& i : st->index) target += "[" + index(i).text + "]";
    Expected<CombineFn> op = parse_combine_fn(st->op);
    if (!op) return error_at(s, op.error().message);
    switch (*op) {
      case CombineFn::Add: line(target + " += " + v.text + ";"); break;
      case CombineFn::Mul: line(target + " *= " + v.text + ";"); break;
      case CombineFn::Max:
      case CombineFn::Min: {
        auto acc_type = value_types_.find(st->acc);
        line(target + " = " + combine(*op, target, v.text, acc_type == value_types_.end() ? DType::F32 : acc_type->second) + ";");
        break;
      }
    }
    return Status::ok();
  }

  Status emit_write(const Stmt& s, const Write* st) {
    const Buffer* buf = buffer(st->buffer);
    if (!buf) return checked(s);
    if (!buf->writable) return error_at(s, "'" + st->buffer + "' is an input of this kernel and is read-only");
    std::string lhs = element(*buf, st->index);
    line(lhs + " = " + stored(*buf, st->value) + ";");
    return Status::ok();
  }

  Status emit_loop(const Stmt& s, const Loop* st) {
    Printed b = index(st->begin), e = index(st->end);
    TESSERA_TRY(checked(s));
    if (st->unroll > 0) line("#pragma unroll " + std::to_string(st->unroll));
    line("for (int " + st->var + " = " + b.text + "; " + st->var + " < " + wrap(e, e.prec >= kRel) + "; ++" +
         st->var + ") {");
    return emit_loop_body(st->var, st->begin, st->end, Expr::int_(1), st->body);
  }

  Status emit_strided_loop(const Stmt& s, const StridedLoop* st) {
    Printed b = index(st->begin), e = index(st->end), step = index(st->step);
    TESSERA_TRY(checked(s));
    if (st->unroll > 0) line("#pragma unroll " + std::to_string(st->unroll));
    line("for (int " + st->var + " = " + b.text + "; " + st->var + " < " + wrap(e, e.prec >= kRel) + "; " +
         st->var + " += " + step.text + ") {");
    return emit_loop_body(st->var, st->begin, st->end, st->step, st->body);
  }

  Status emit_cond(const Stmt& s, const Cond* st) {
    Printed c = print(st->cond);
    TESSERA_TRY(checked(s));
    line("if (" + c.text + ") {");
    TESSERA_TRY(emit_nested(st->then_body));
    if (!st->else_body.empty()) {
      line("} else {");
      TESSERA_TRY(emit_nested(st->else_body));
    }
    line("}");
    return Status::ok();
  }

  Status emit_let(const Stmt& s, const Let* st) {
    // `int a0 = threadIdx.x;` reads better without the signedness cast a bare index needs.
    std::string text = st->value.is(ExprKind::Var) && is_hardware_index(st->value.name())
                           ? st->value.name()
                           : index(st->value).text;
    line("int " + st->var + " = " + text + ";");
    bind(st->var, Ty::Int);
    if (std::optional<Interval> r = bound_of(st->value, ranges_)) ranges_[st->var] = *r;
    else ranges_.erase(st->var);
    return Status::ok();
  }

  Status emit_smem(const Stmt& s, const Smem* st) {
    if (buffers_.count(st->name)) return error_at(s, "buffer '" + st->name + "' is declared twice");
    Buffer b;
    b.dtype = st->dtype;
    b.shape = st->shape;
    for (int64_t d : st->shape) {
      if (d < 1) return error_at(s, "Smem dimensions must be positive");
      b.elements *= d;
    }
    b.shared = b.writable = true;
    b.cname = c_name_for(st->name);
    use_dtype(b.dtype);
    smem_bytes_ += b.elements * dtype_bytes(b.dtype);
    std::vector<std::string> dims;
    for (int64_t d : st->shape) dims.push_back(std::to_string(d));
    const std::string shape_note = st->shape.size() > 1 ? "  // [" + join(dims, ", ") + "]" : "";
    if (op_.dynamic_smem > 0) {
      // Carved from the one dynamic array at its smem_layout offset (16-byte aligned, like the
      // static arrays below).
      if (!declared_dynamic_smem_) {
        line("extern __shared__ __align__(16) unsigned char tessera_smem[];");
        declared_dynamic_smem_ = true;
      }
      int64_t offset = -1;
      for (const SmemSlot& slot : smem_slots_)
        if (slot.name == st->name) offset = slot.offset;
      if (offset < 0) return error_at(s, "Smem '" + st->name + "' is not in the kernel's shared-memory layout");
      line(c_type(b.dtype) + "* " + b.cname + " = reinterpret_cast<" + c_type(b.dtype) + "*>(tessera_smem + " +
           std::to_string(offset) + ");  // " + std::to_string(b.elements) + " elements" +
           (st->shape.size() > 1 ? ", [" + join(dims, ", ") + "]" : ""));
    } else {
      // 16-byte alignment so cp.async of 16 bytes and float4 accesses may target it.
      line("__shared__ __align__(16) " + c_type(b.dtype) + " " + b.cname + "[" + std::to_string(b.elements) + "];" +
           shape_note);
    }
    buffers_[st->name] = std::move(b);
    return Status::ok();
  }

  Status emit_warp_shuffle(const Stmt& s, const WarpShuffle* st) {
    std::string intrinsic;
    switch (st->mode) {
      case ShuffleMode::Xor: intrinsic = "__shfl_xor_sync"; break;
      case ShuffleMode::Down: intrinsic = "__shfl_down_sync"; break;
      case ShuffleMode::Up: intrinsic = "__shfl_up_sync"; break;
      case ShuffleMode::Idx: intrinsic = "__shfl_sync"; break;
    }
    if (st->width < 1 || st->width > 32 || (st->width & (st->width - 1)) != 0)
      return error_at(s, "shuffle width must be a power of two up to 32");
    Printed src = arg(st->src, st->type.dtype);
    line(declare(st->type, st->dst) + " = " + intrinsic + "(0xffffffff, " + src.text + ", " + std::to_string(st->offset) +
         ", " + std::to_string(st->width) + ");");
    bind_value(st->dst, st->type.dtype);
    return Status::ok();
  }

  Status emit_loop_body(const std::string& var, const Expr& begin, const Expr& end, const Expr& step,
                        const Body& body) {
    auto saved_names = names_;
    auto saved_ranges = ranges_;
    bind(var, Ty::Int);
    std::optional<Interval> b = bound_of(begin, ranges_), e = bound_of(end, ranges_), st = bound_of(step, ranges_);
    if (b && e && st && st->lo > 0) ranges_[var] = {b->lo, std::max(b->lo, e->hi - 1)};
    else ranges_.erase(var);
    ++indent_;
    Status s = emit_body(body, false);
    --indent_;
    names_ = std::move(saved_names);
    ranges_ = std::move(saved_ranges);
    TESSERA_TRY(s);
    line("}");
    return Status::ok();
  }

  // cp.async on sm_80+, an ordinary (synchronous) copy below, where commit and wait have nothing
  // to wait for.
  Status emit_cp_async_run(const Body& b, size_t begin, size_t end) {
    std::vector<std::string> async_lines, sync_lines;
    for (size_t i = begin; i < end; ++i) {
      const Stmt& s = b[i];
      if (const auto* st = s.as<CpAsyncCopy>()) {
        const Buffer* dst = buffer(st->dst);
        const Buffer* src = buffer(st->src);
        TESSERA_TRY(checked(s));
        if (!dst->shared) return error_at(s, "the destination '" + st->dst + "' must be an Smem buffer");
        if (src->shared) return error_at(s, "the source '" + st->src + "' must be a global buffer");
        if (dst->dtype != src->dtype) return error_at(s, "source and destination dtypes differ");
        if (st->bytes != 4 && st->bytes != 8 && st->bytes != 16)
          return error_at(s, "cp.async copies 4, 8 or 16 bytes, not " + std::to_string(st->bytes));
        int64_t elem = dtype_bytes(src->dtype);
        if (st->bytes % elem != 0) return error_at(s, "bytes is not a multiple of the element size");
        std::string d = element(*dst, st->dst_index), sv = element(*src, st->src_index);
        TESSERA_TRY(checked(s));
        std::string cache = st->bytes == 16 ? "cg" : "ca";
        async_lines.push_back("asm volatile(\"cp.async." + cache + ".shared.global [%0], [%1], " +
                              std::to_string(st->bytes) + ";\\n\" :: \"r\"((unsigned)__cvta_generic_to_shared(&" + d +
                              ")), \"l\"(&" + sv + ") : \"memory\");");
        for (int64_t k = 0; k < st->bytes / elem; ++k) {
          sync_lines.push_back(element(*dst, st->dst_index, k) + " = " + element(*src, st->src_index, k) + ";");
          TESSERA_TRY(checked(s));
        }
      } else if (s.is<CpAsyncCommit>()) {
        async_lines.push_back("asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");");
      } else if (const auto* st = s.as<CpAsyncWait>()) {
        if (st->keep < 0) return error_at(s, "keep must be non-negative");
        async_lines.push_back("asm volatile(\"cp.async.wait_group " + std::to_string(st->keep) +
                              ";\\n\" ::: \"memory\");");
      }
    }
    directive("#if __CUDA_ARCH__ >= 800");
    for (const std::string& l : async_lines) line(l);
    if (!sync_lines.empty()) {
      directive("#else");
      for (const std::string& l : sync_lines) line(l);
    }
    directive("#endif");
    return Status::ok();
  }

  Status emit_tree_halve(const Stmt& s, const TreeHalve& st) {
    const Buffer* buf = buffer(st.buffer);
    TESSERA_TRY(checked(s));
    if (!buf->shared) return error_at(s, "TreeHalve reduces an Smem buffer; '" + st.buffer + "' is global");
    if (st.count < 1 || st.count > buf->elements)
      return error_at(s, "n=" + std::to_string(st.count) + " is outside the buffer's " + std::to_string(buf->elements) +
                             " elements");
    Printed tid = index(st.tid);
    TESSERA_TRY(checked(s));
    std::string t = wrap(tid, tid.prec >= kAdd);
    auto slot = [&](const std::string& i) { return buf->cname + "[" + i + "]"; };
    Expected<CombineFn> op = parse_combine_fn(st.op);
    if (!op) return error_at(s, op.error().message);
    std::optional<std::string> c =
        combine(*op, load_text(*buf, slot(tid.text)), load_text(*buf, slot(t + " + tessera_s")), buf->dtype);
    int64_t half = 1;
    while (half < st.count) half *= 2;
    half /= 2;
    if (half == 0) {
      line("// TreeHalve over one element: nothing to combine");
      return Status::ok();
    }
    bool pow2 = half * 2 == st.count;
    line("for (int tessera_s = " + std::to_string(half) + "; tessera_s > 0; tessera_s >>= 1) {");
    ++indent_;
    line("if (" + t + " < tessera_s" + (pow2 ? "" : " && " + t + " + tessera_s < " + std::to_string(st.count)) + ") {");
    ++indent_;
    line(slot(tid.text) + " = " + store_text(*buf, Printed{*c, kTernary, buf->dtype == DType::F64 ? Ty::Double : Ty::Float}) + ";");
    --indent_;
    line("}");
    line("__syncthreads();");
    --indent_;
    line("}");
    return Status::ok();
  }

  // The text written to an element of `b`: a value of the buffer's dtype as it is, anything else
  // converted from float.
  std::string stored(const Buffer& b, const Expr& v) {
    if (v.is_name()) {
      auto it = value_types_.find(v.name());
      if (it != value_types_.end() && it->second == b.dtype && names_.count(v.name())) return v.name();
    }
    return store_text(b, value(v));
  }

  static bool vectorizable(const Buffer& b, size_t k) { return b.dtype == DType::F32 && (k == 2 || k == 4); }

  // 16-bit elements move as raw bits: K of them in one `unsigned int` (K = 2), `uint2` (4) or
  // `uint4` (8, a 128-bit access), reinterpreted element-wise.
  static std::optional<std::string> raw_vector_type(const Buffer& b, size_t k) {
    if (b.dtype != DType::BF16 && b.dtype != DType::F16) return std::nullopt;
    if (k == 2) return "unsigned int";
    if (k == 4) return "uint2";
    if (k == 8) return "uint4";
    return std::nullopt;
  }

  Status emit_vector_load(const Stmt& s, const VectorLoad& st) {
    const Buffer* buf = buffer(st.buffer);
    TESSERA_TRY(checked(s));
    const size_t k = st.dsts.size();
    if (k == 0) return error_at(s, "a vector load needs at least one destination");
    std::optional<std::string> raw = raw_vector_type(*buf, k);
    if (raw && st.type.dtype == buf->dtype) {
      std::string elem = element(*buf, st.index);
      TESSERA_TRY(checked(s));
      const std::string et = c_type(buf->dtype);
      line(et + " " + join(st.dsts, ", ") + ";");
      line("{");
      ++indent_;
      line("const " + *raw + " tessera_vec = *reinterpret_cast<const " + *raw + "*>(&" + elem + ");");
      line("const " + et + "* tessera_elems = reinterpret_cast<const " + et + "*>(&tessera_vec);");
      for (size_t i = 0; i < k; ++i) line(st.dsts[i] + " = tessera_elems[" + std::to_string(i) + "];");
      --indent_;
      line("}");
    } else if (vectorizable(*buf, k)) {
      std::string elem = element(*buf, st.index);
      TESSERA_TRY(checked(s));
      std::string vec = "float" + std::to_string(k);
      line("float " + join(st.dsts, ", ") + ";");
      line("{");
      ++indent_;
      line("const " + vec + " tessera_vec = *reinterpret_cast<const " + vec + "*>(&" + elem + ");");
      static const char* const lanes[] = {"x", "y", "z", "w"};
      for (size_t i = 0; i < k; ++i) line(st.dsts[i] + " = tessera_vec." + lanes[i] + ";");
      --indent_;
      line("}");
    } else {
      for (size_t i = 0; i < k; ++i) {
        std::string elem = element(*buf, st.index, static_cast<int64_t>(i));
        if (st.type.dtype == buf->dtype) line(declare(st.type, st.dsts[i]) + " = " + elem + ";");
        else line(declare(st.type, st.dsts[i]) + " = " + convert_to(st.type.dtype, {load_text(*buf, elem), kAtom, Ty::Float}) + ";");
        TESSERA_TRY(checked(s));
      }
    }
    for (const std::string& d : st.dsts)
      bind_value(d, vectorizable(*buf, k) && !(raw && st.type.dtype == buf->dtype) ? DType::F32 : st.type.dtype);
    return Status::ok();
  }

  Status emit_vector_store(const Stmt& s, const VectorStore& st) {
    const Buffer* buf = buffer(st.buffer);
    TESSERA_TRY(checked(s));
    if (!buf->writable) return error_at(s, "'" + st.buffer + "' is an input of this kernel and is read-only");
    const size_t k = st.values.size();
    if (k == 0) return error_at(s, "a vector store needs at least one value");
    std::vector<Printed> values;
    for (const Expr& v : st.values) values.push_back(value(v));
    TESSERA_TRY(checked(s));
    if (std::optional<std::string> raw = raw_vector_type(*buf, k)) {
      const std::string et = c_type(buf->dtype);
      std::string elem = element(*buf, st.index);
      line("{");
      ++indent_;
      line(*raw + " tessera_vec;");
      line(et + "* tessera_elems = reinterpret_cast<" + et + "*>(&tessera_vec);");
      for (size_t i = 0; i < k; ++i) line("tessera_elems[" + std::to_string(i) + "] = " + stored(*buf, st.values[i]) + ";");
      line("*reinterpret_cast<" + *raw + "*>(&" + elem + ") = tessera_vec;");
      --indent_;
      line("}");
    } else if (vectorizable(*buf, k)) {
      std::vector<std::string> texts;
      for (const Printed& p : values) texts.push_back(p.text);
      std::string vec = "float" + std::to_string(k);
      line("*reinterpret_cast<" + vec + "*>(&" + element(*buf, st.index) + ") = make_" + vec + "(" + join(texts, ", ") +
           ");");
    } else {
      for (size_t i = 0; i < k; ++i)
        line(element(*buf, st.index, static_cast<int64_t>(i)) + " = " + store_text(*buf, values[i]) + ";");
    }
    return checked(s);
  }

  const Graph& g_;
  const Node& node_;
  const KernelOp& op_;
  CudaEmitLimits limits_;
  std::map<std::string, Buffer> buffers_;
  std::set<std::string> used_cnames_;
  std::map<std::string, Ty> names_;  // scalar names bound in the current scope
  std::map<std::string, DType> value_types_;  // SSA values (and accumulators) -> their dtype
  RangeMap ranges_;                   // known ranges of integer names (for `/` and `%`)
  std::set<Helper> helpers_;
  bool uses_half_ = false, uses_bf16_ = false;
  bool double_context_ = false;  // printing the operands of an f64 definition: float literals are doubles
  int64_t smem_bytes_ = 0;
  std::vector<SmemSlot> smem_slots_;  // the dynamic layout, when op_.dynamic_smem > 0
  bool declared_dynamic_smem_ = false;
  std::string body_;
  int indent_ = 1;
  std::string expr_error_;
};

}  // namespace

Expected<CudaOp> emit_cuda_kernel(const Graph& g, const Node& node, const CudaEmitLimits& limits) {
  const auto* op = node.op_as<KernelOp>();
  if (!op) return make_error("node is not a Kernel IR node").at_node(node.id());
  return CudaEmitter(g, node, *op, limits).emit();
}

}  // namespace tessera

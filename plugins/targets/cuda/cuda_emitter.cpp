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
//
// Inline PTX (cp.async runs, and the sm_90 TMA copies and mbarriers, each under an architecture
// guard; tensor-map params are `const __grid_constant__ CUtensorMap`) is described in
// cuda_emitter_ptx.cpp.
//
// This file: the kernel as a whole (checks, signature and kernel ABI, buffers, the preamble,
// errors) and emit_cuda_kernel; cuda_emitter_impl.h lists the other files.
#include "cuda_emitter_impl.h"

namespace tessera {
namespace cuda_emit {

Expected<CudaOp> CudaEmitter::emit() {
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
        tensor_maps_[p.name] = p;
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
  // A kernel that rebalances registers between warpgroups (setmaxnreg) runs one block per SM: the
  // block's pool is then the SM's registers, which the counts it asks for are sized to.
  const std::string min_blocks = contains_stmt_kind(op_.body, StmtKind::SetMaxNReg) ? ", 1" : "";
  src += "extern \"C\" __global__ __launch_bounds__(" + std::to_string(threads) + min_blocks + ") void " + op_.name + "(" +
         join(params, ", ") + ") {\n" + body_ + "}\n";
  out.source = std::move(src);
  return out;
}

Diagnostic CudaEmitter::error(const std::string& msg) const {
  return make_error("kernel " + op_.name + ": " + msg).at_node(node_.id());
}

Diagnostic CudaEmitter::error_at(const Stmt& s, const std::string& msg) const {
  return make_error("kernel " + op_.name + ", statement `" + first_line(print_stmt(s)) + "`: " + msg)
      .at_node(node_.id());
}

void CudaEmitter::expr_problem(const std::string& msg) {
  if (expr_error_.empty()) expr_error_ = msg;
}

Status CudaEmitter::checked(const Stmt& s) {
  if (expr_error_.empty()) return Status::ok();
  std::string msg = expr_error_;
  expr_error_.clear();
  return error_at(s, msg);
}

Status CudaEmitter::add_global(const std::string& id, bool writable) {
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

std::string CudaEmitter::c_name_for(const std::string& id) {
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

const Buffer* CudaEmitter::buffer(const std::string& id) {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) {
    expr_problem("buffer '" + id + "' is neither an input or the output of this node nor a declared Smem");
    return nullptr;
  }
  return &it->second;
}

void CudaEmitter::use_dtype(DType t) {
  if (t == DType::F16) uses_half_ = true;
  if (t == DType::BF16) uses_bf16_ = true;
}

std::string CudaEmitter::element(const Buffer& b, const ExprList& index, int64_t offset) {
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

std::string CudaEmitter::load_text(const Buffer& b, const std::string& elem) {
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

std::string CudaEmitter::store_text(const Buffer& b, const Printed& v) {
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

std::string CudaEmitter::combine(CombineFn op, const std::string& a, const std::string& b, DType t) {
  // Integers combine as integers: the float spellings (fmaxf, float arithmetic) would round int64
  // sums past 2^24.
  if (!dtype_is_float(t)) {
    switch (op) {
      case CombineFn::Add: return a + " + " + b;
      case CombineFn::Mul: return a + " * " + b;
      case CombineFn::Max: return "max(" + a + ", " + b + ")";
      case CombineFn::Min: return "min(" + a + ", " + b + ")";
    }
    TESSERA_UNREACHABLE("a CombineFn value is one of the declared combine functions");
  }
  const Ty ty = t == DType::F64 ? Ty::Double : Ty::Float;
  return call_fn(fn_info(op).fn, {Printed{a, kAtom, ty}, Printed{b, kAtom, ty}});
}

void CudaEmitter::bind_value(const std::string& name, DType t) {
  use_dtype(t);
  names_[name] = dtype_is_float(t) ? Ty::Float : Ty::Int;
  value_types_[name] = t;
}

std::optional<std::string> CudaEmitter::raw_vector_type(const Buffer& b, size_t k) {
  if (b.dtype != DType::BF16 && b.dtype != DType::F16) return std::nullopt;
  if (k == 2) return "unsigned int";
  if (k == 4) return "uint2";
  if (k == 8) return "uint4";
  return std::nullopt;
}

}  // namespace cuda_emit

Expected<CudaOp> emit_cuda_kernel(const Graph& g, const Node& node, const CudaEmitLimits& limits) {
  const auto* op = node.op_as<KernelOp>();
  if (!op) return make_error("node is not a Kernel IR node").at_node(node.id());
  return cuda_emit::CudaEmitter(g, node, *op, limits).emit();
}

}  // namespace tessera

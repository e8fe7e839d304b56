// CudaEmitter, statements: one emit_<kind> per Kernel IR statement kind, loops and their ranges,
// vector loads and stores, tree reductions (cuda_emitter_impl.h). The inline-PTX kinds (cp.async,
// TMA, mbarriers) are dispatched here and emitted in cuda_emitter_ptx.cpp.
#include "cuda_emitter_impl.h"

namespace tessera::cuda_emit {

Status CudaEmitter::emit_nested(const Body& b) {
  auto saved_names = names_;
  auto saved_ranges = ranges_;
  ++indent_;
  Status s = emit_body(b, false);
  --indent_;
  names_ = std::move(saved_names);
  ranges_ = std::move(saved_ranges);
  return s;
}

bool CudaEmitter::is_cp_async(const Stmt& s) {
  return s.is<CpAsyncCopy>() || s.is<CpAsyncCommit>() || s.is<CpAsyncWait>();
}

Status CudaEmitter::emit_body(const Body& b, bool top_level) {
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
    if (b[i].is<MbarrierInit>() && !top_level)
      return error_at(b[i], "MbarrierInit must be at the top level of the kernel body (every thread reaches it)");
    TESSERA_TRY(emit(b[i]));
    TESSERA_TRY(checked(b[i]));
    ++i;
  }
  return Status::ok();
}

Status CudaEmitter::emit(const Stmt& s) {
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
      // In a kernel of warpgroup products, the threads' shared-memory writes before a barrier are
      // made visible to the tensor cores' reads after it (the async proxy): fence.proxy.async.
      if (warpgroup_products_) {
        directive("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)");
        line("asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");");
        directive("#endif");
      }
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
    case StmtKind::TmaLoad: return emit_tma_load(s, *s.as<TmaLoad>());
    case StmtKind::MbarrierInit: return emit_mbarrier_init(s, *s.as<MbarrierInit>());
    case StmtKind::MbarrierArrive: return emit_mbarrier_arrive(s, *s.as<MbarrierArrive>());
    case StmtKind::MbarrierWait: return emit_mbarrier_wait(s, *s.as<MbarrierWait>());
    case StmtKind::ClusterSync: return emit_cluster_sync(s);
    case StmtKind::NamedBarrier: {
      const auto& st = *s.as<NamedBarrier>();
      if (!named_barrier_id_is_valid(st.id)) return error_at(s, "a named barrier's id is 1 to 15 (0 is __syncthreads')");
      if (!named_barrier_threads_is_valid(st.threads, op_.block[0] * op_.block[1] * op_.block[2]))
        return error_at(s, "a named barrier counts whole warps of the block: " + std::to_string(st.threads) +
                               " threads is not a positive multiple of 32 up to the block's size");
      if (warpgroup_products_) {  // as for Sync(): the threads' writes become visible to the tensor cores
        directive("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)");
        line("asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");");
        directive("#endif");
      }
      line("asm volatile(\"bar.sync " + std::to_string(st.id) + ", " + std::to_string(st.threads) +
           ";\\n\" ::: \"memory\");");
      return Status::ok();
    }
    case StmtKind::SetMaxNReg: {
      const auto& st = *s.as<SetMaxNReg>();
      if (!setmaxnreg_count_is_valid(st.regs))
        return error_at(s, "setmaxnreg takes a multiple of 8 registers from 24 to 256, not " + std::to_string(st.regs));
      sm90a_only({"asm volatile(\"setmaxnreg." + std::string(spelling(st.action)) + ".sync.aligned.u32 " +
                  std::to_string(st.regs) + ";\\n\" ::: \"memory\");"});
      return Status::ok();
    }
    case StmtKind::DsmemLoad: return emit_dsmem_load(s, *s.as<DsmemLoad>());
    case StmtKind::Fragment: return emit_fragment(s, *s.as<Fragment>());
    case StmtKind::LdMatrix: return emit_ldmatrix(s, *s.as<LdMatrix>());
    case StmtKind::MmaSync: return emit_mma(s, *s.as<MmaSync>());
    case StmtKind::WgmmaMma: return emit_wgmma(s, *s.as<WgmmaMma>());
    case StmtKind::WgmmaFence:
      sm90a_only({"asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");"});
      return Status::ok();
    case StmtKind::WgmmaCommit:
      sm90a_only({"asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");"});
      return Status::ok();
    case StmtKind::WgmmaWait: {
      const int64_t keep = s.as<WgmmaWait>()->keep;
      if (keep < 0 || keep > 7) return error_at(s, "WgmmaWait keeps 0 to 7 groups in flight");
      sm90a_only({"asm volatile(\"wgmma.wait_group.sync.aligned " + std::to_string(keep) + ";\\n\" ::: \"memory\");"});
      return Status::ok();
    }
    case StmtKind::Tile:
    case StmtKind::Stage:
    case StmtKind::Combine:
    case StmtKind::AsyncWait:
      case StmtKind::SlabMap:
      return error_at(s, std::string(stmt_kind_name(s.kind())) +
                             " is not a Kernel IR statement (run materialize before emit_cuda)");
  }
  return error_at(s, "statement of unknown kind");  // unreachable: the switch covers every StmtKind
}

Status CudaEmitter::emit_load(const Stmt& s, const Load* st) {
  const Buffer* buf = buffer(st->buffer);
  if (!buf) return checked(s);
  emit_loaded_value(st->dst, st->type, *buf, element(*buf, st->index));
  return Status::ok();
}

void CudaEmitter::emit_loaded_value(const std::string& dst, const ValueType& type, const Buffer& buf,
                                    const std::string& elem) {
  if (type.dtype == buf.dtype) line(declare(type, dst) + " = " + elem + ";");
  else if (type.dtype == DType::F64 && !dtype_is_float(buf.dtype))  // integers past 2^24 stay exact
    line(declare(type, dst) + " = (double)" + elem + ";");
  else line(declare(type, dst) + " = " + convert_to(type.dtype, {load_text(buf, elem), kAtom, Ty::Float}) + ";");
  bind_value(dst, type.dtype);
}

Status CudaEmitter::emit_assign(const Stmt& s, const Assign* st) {
  std::vector<Printed> args;
  for (const Expr& a : st->args) args.push_back(arg(a, st->type.dtype));
  if (Status arity = check_arity(st->op, args.size()); !arity.is_ok()) return error_at(s, arity.error().message);
  std::optional<std::string> text = call_fn(st->op, args);
  Ty computed = dtype_is_float(st->type.dtype) || args.empty() ? Ty::Float : args[0].type;
  for (const Printed& p : args) computed = p.type == Ty::Float ? Ty::Float : computed;
  for (const Printed& p : args) computed = p.type == Ty::Double ? Ty::Double : computed;
  line(declare(st->type, st->dst) + " = " + convert_to(st->type.dtype, {*text, kTernary, computed}) + ";");
  bind_value(st->dst, st->type.dtype);
  return Status::ok();
}

Status CudaEmitter::emit_select(const Stmt& s, const Select* st) {
  Printed c = print(st->cond), a = arg(st->then_value, st->type.dtype), e = arg(st->else_value, st->type.dtype);
  Printed chosen{wrap(c, c.prec >= kTernary) + " ? " + wrap(a, a.prec >= kTernary) + " : " + wrap(e, e.prec > kTernary),
                 kTernary, join_type(a, e)};
  line(declare(st->type, st->dst) + " = " + convert_to(st->type.dtype, chosen) + ";");
  bind_value(st->dst, st->type.dtype);
  return Status::ok();
}

Status CudaEmitter::emit_init(const Stmt& s, const Init* st) {
  std::string init = convert_to(st->type.dtype, arg(st->value, st->type.dtype));
  if (st->type.is_array()) {
    // Every element starts at the identity; the unrolled fill keeps the array in registers.
    std::string first = st->acc;
    for (size_t d = 0; d < st->type.array.size(); ++d) first += "[0]";
    line(declare(st->type, st->acc) + ";");
    array_dims_[st->acc] = st->type.array;
    line("#pragma unroll");
    line("for (int tessera_i = 0; tessera_i < " + std::to_string(st->type.array_elements()) +
         "; ++tessera_i) (&" + first + ")[tessera_i] = " + init + ";");
  } else {
    line(declare(st->type, st->acc) + " = " + init + ";");
  }
  bind_value(st->acc, st->type.dtype);
  return Status::ok();
}

Status CudaEmitter::emit_accum(const Stmt& s, const Accum* st) {
  if (!names_.count(st->acc)) return error_at(s, "accumulator '" + st->acc + "' is not initialized here");
  auto acc_type = value_types_.find(st->acc);
  const DType t = acc_type == value_types_.end() ? DType::F32 : acc_type->second;
  // The value in the accumulator's own arithmetic: an integer accumulator adds integers exactly.
  Printed v = arg(st->value, t);
  std::string target = st->acc;
  for (const Expr& i : st->index) target += "[" + index(i).text + "]";
  switch (st->op) {
    case CombineFn::Add: line(target + " += " + v.text + ";"); break;
    case CombineFn::Mul: line(target + " *= " + v.text + ";"); break;
    case CombineFn::Max:
    case CombineFn::Min: line(target + " = " + combine(st->op, target, v.text, t) + ";"); break;
  }
  return Status::ok();
}

Status CudaEmitter::emit_write(const Stmt& s, const Write* st) {
  const Buffer* buf = buffer(st->buffer);
  if (!buf) return checked(s);
  if (!buf->writable) return error_at(s, "'" + st->buffer + "' is an input of this kernel and is read-only");
  std::string lhs = element(*buf, st->index);
  line(lhs + " = " + stored(*buf, st->value) + ";");
  return Status::ok();
}

Status CudaEmitter::emit_loop(const Stmt& s, const Loop* st) {
  Printed b = index(st->begin), e = index(st->end);
  TESSERA_TRY(checked(s));
  if (st->unroll > 0) line("#pragma unroll " + std::to_string(st->unroll));
  line("for (int " + st->var + " = " + b.text + "; " + st->var + " < " + wrap(e, e.prec >= kRel) + "; ++" +
       st->var + ") {");
  return emit_loop_body(st->var, st->begin, st->end, Expr::int_(1), st->body);
}

Status CudaEmitter::emit_strided_loop(const Stmt& s, const StridedLoop* st) {
  Printed b = index(st->begin), e = index(st->end), step = index(st->step);
  TESSERA_TRY(checked(s));
  if (st->unroll > 0) line("#pragma unroll " + std::to_string(st->unroll));
  line("for (int " + st->var + " = " + b.text + "; " + st->var + " < " + wrap(e, e.prec >= kRel) + "; " +
       st->var + " += " + step.text + ") {");
  return emit_loop_body(st->var, st->begin, st->end, st->step, st->body);
}

Status CudaEmitter::emit_cond(const Stmt& s, const Cond* st) {
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

Status CudaEmitter::emit_let(const Stmt& s, const Let* st) {
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

Status CudaEmitter::emit_smem(const Stmt& s, const Smem* st) {
  if (buffers_.count(st->name) || barriers_.count(st->name))
    return error_at(s, "buffer '" + st->name + "' is declared twice");
  Buffer b;
  b.dtype = st->dtype;
  b.shape = st->shape;
  for (int64_t d : st->shape) {
    if (d < 1) return error_at(s, "Smem dimensions must be positive");
    b.elements *= d;
  }
  b.shared = b.writable = true;
  b.align = st->align;
  b.swizzle = st->swizzle;
  b.cname = c_name_for(st->name);
  use_dtype(b.dtype);
  // Counted like smem_layout: each array starts at the next multiple of its alignment.
  const int64_t align = st->align;
  smem_bytes_ = (smem_bytes_ + align - 1) / align * align + b.elements * dtype_bytes(b.dtype);
  std::vector<std::string> dims;
  for (int64_t d : st->shape) dims.push_back(std::to_string(d));
  const std::string shape_note = st->shape.size() > 1 ? "  // [" + join(dims, ", ") + "]" : "";
  if (op_.dynamic_smem > 0) {
    // Carved from the one dynamic array at its smem_layout offset (a multiple of its align); the
    // array is declared with the largest align of its slots, so each slot's address is aligned.
    if (!declared_dynamic_smem_) {
      line("extern __shared__ __align__(" + std::to_string(smem_layout_align(op_.body)) +
           ") unsigned char tessera_smem[];");
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
    // Its align (16 by default, so cp.async of 16 bytes and float4 accesses may target it).
    line("__shared__ __align__(" + std::to_string(align) + ") " + c_type(b.dtype) + " " + b.cname + "[" + std::to_string(b.elements) + "];" +
         shape_note);
  }
  buffers_[st->name] = std::move(b);
  return Status::ok();
}

Status CudaEmitter::emit_warp_shuffle(const Stmt& s, const WarpShuffle* st) {
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

Status CudaEmitter::emit_loop_body(const std::string& var, const Expr& begin, const Expr& end, const Expr& step,
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

Status CudaEmitter::emit_tree_halve(const Stmt& s, const TreeHalve& st) {
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
  std::optional<std::string> c =
      combine(st.op, load_text(*buf, slot(tid.text)), load_text(*buf, slot(t + " + tessera_s")), buf->dtype);
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

std::string CudaEmitter::stored(const Buffer& b, const Expr& v) {
  if (v.is_name()) {
    auto it = value_types_.find(v.name());
    if (it != value_types_.end() && it->second == b.dtype && names_.count(v.name())) return v.name();
  }
  return store_text(b, value(v));
}

Status CudaEmitter::emit_vector_load(const Stmt& s, const VectorLoad& st) {
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

Status CudaEmitter::emit_vector_store(const Stmt& s, const VectorStore& st) {
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

}  // namespace tessera::cuda_emit

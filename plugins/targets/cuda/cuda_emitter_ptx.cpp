// CudaEmitter, inline PTX (cuda_emitter_impl.h):
//  * runs of cp.async copies, commits and waits, emitted together under one architecture guard
//    (sm_80) with a plain-copy fallback;
//  * the Tensor Memory Accelerator and mbarriers of sm_90, one architecture guard per statement
//    whose fallback is `__trap()` (no plain-code equivalent is attempted: a TMA kernel built for an
//    older architecture compiles, and fails loudly if launched, never computing garbage):
//      MbarrierInit    `__shared__ __align__(8) unsigned long long bar[slots];`, then thread
//                      (0, 0, 0) runs `mbarrier.init.shared::cta.b64` on each slot with the count,
//                      `fence.mbarrier_init.release.cluster` and `fence.proxy.async.shared::cta`;
//                      `__syncthreads()` (outside the guard) publishes the barriers to the block.
//                      Top level only. The barriers are static shared memory even in a kernel whose
//                      Smem arrays are dynamic.
//      MbarrierArrive  `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], tx;` (tx > 0) or
//                      `mbarrier.arrive.shared::cta.b64 _, [bar];` (tx = 0).
//      MbarrierWait    a loop on `mbarrier.try_wait.parity.shared::cta.b64` until the phase of the
//                      given parity has completed.
//      TmaLoad         `cp.async.bulk.tensor.<rank>d.shared::cluster.global.mbarrier::complete_tx::bytes
//                      [dst], [tmap, {c_inner, ..., c_outer}], [bar];`: the coordinates innermost
//                      first as 32-bit ints, the tensor map by the generic address of its
//                      `__grid_constant__` parameter.
//  * thread-block clusters (sm_90), guarded the same way:
//      ClusterSync     `barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;`
//                      (every thread of the cluster; the release/acquire pair orders the shared-
//                      memory writes before it with the remote reads after it).
//      DsmemLoad       `mapa.u64` maps the generic address of the element in this block's Smem
//                      array to the same element in the block of the given rank; a generic load
//                      of it reads that block's shared memory.
//    Errors name the statement, for what the hardware or the sim target would refuse: an unknown
//    tensor map or barrier, a map over no buffer of the kernel, a destination that is not an Smem
//    array of the covered buffer's dtype, aligned to 128 bytes (8 swizzle spans when swizzled) and
//    declared in the map's swizzle, a coordinate count other than the box's rank (1..5), a constant
//    barrier slot outside the ring, an MbarrierInit below the top level or with a count outside
//    1..2^20-1, a tx outside 0..2^20-1.
#include "cuda_emitter_impl.h"

namespace tessera::cuda_emit {

Status CudaEmitter::emit_cp_async_run(const Body& b, size_t begin, size_t end) {
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

void CudaEmitter::sm90_only(const std::vector<std::string>& lines, const std::string& needs) {
  arch_only(90, lines, needs);
}

void CudaEmitter::arch_only(int arch, const std::vector<std::string>& lines, const std::string& needs) {
  directive("#if __CUDA_ARCH__ >= " + std::to_string(arch * 10));
  for (const std::string& l : lines) line(l);
  directive("#else");
  line("__trap();  // " + needs + " need sm_" + std::to_string(arch));
  directive("#endif");
}

// ---- tensor cores ----

std::string CudaEmitter::slice_element(const std::string& name, const ExprList& prefix, int64_t element) {
  std::string text = name;
  for (const Expr& i : prefix) text += "[" + index(i).text + "]";
  // The slice's own dimensions, row-major: the declaration's trailing dims.
  auto dims = array_dims_.find(name);
  if (dims == array_dims_.end()) {
    expr_problem("'" + name + "' is not a register array here");
    return text;
  }
  std::vector<int64_t> inner(dims->second.begin() + static_cast<std::ptrdiff_t>(std::min(prefix.size(), dims->second.size())),
                             dims->second.end());
  std::string tail;
  for (auto d = inner.rbegin(); d != inner.rend(); ++d) {
    tail = "[" + std::to_string(element % *d) + "]" + tail;
    element /= *d;
  }
  return text + tail;
}

Status CudaEmitter::emit_fragment(const Stmt& s, const Fragment& st) {
  if (!st.type.is_array()) return error_at(s, "a fragment is a register array");
  line("__align__(16) " + declare(st.type, st.name) + ";");
  bind_value(st.name, st.type.dtype);
  array_dims_[st.name] = st.type.array;
  return Status::ok();
}

Status CudaEmitter::emit_ldmatrix(const Stmt& s, const LdMatrix& st) {
  const Buffer* buf = buffer(st.buffer);
  if (!buf) return checked(s);
  if (!buf->shared) return error_at(s, "ldmatrix reads '" + st.buffer + "', which is not an Smem array");
  if (st.count != 1 && st.count != 2 && st.count != 4) return error_at(s, "ldmatrix loads 1, 2 or 4 matrices");
  const std::string row = element(*buf, st.index);
  std::string outs, regs;
  for (int64_t m = 0; m < st.count; ++m) {
    regs += (m ? ", %" : "%") + std::to_string(m);
    outs += std::string(m ? ", " : "") + "\"=r\"(*reinterpret_cast<unsigned*>(&" + slice_element(st.dst, st.dst_index, 2 * m) + "))";
  }
  TESSERA_TRY(checked(s));
  const std::string shape = ".x" + std::to_string(st.count) + (st.layout == LdMatrixLayout::Trans ? ".trans" : "");
  arch_only(80,
            {"asm volatile(\"ldmatrix.sync.aligned.m8n8" + shape + ".shared.b16 {" + regs + "}, [%" +
             std::to_string(st.count) + "];\\n\" : " + outs + " : \"r\"((unsigned)__cvta_generic_to_shared(&" + row +
             ")));"},
            "ldmatrix and mma.sync");
  return Status::ok();
}

Status CudaEmitter::emit_mma(const Stmt& s, const MmaSync& st) {
  if (st.type != DType::BF16 && st.type != DType::F16) return error_at(s, "mma multiplies bf16 or f16 fragments");
  const MmaDims d = mma_dims(st.shape);
  std::vector<std::string> operands;
  for (int64_t i = 0; i < d.c_elements(); ++i) operands.push_back("\"+f\"(" + slice_element(st.acc, st.acc_index, i) + ")");
  const std::string outs = join(operands, ", ");
  operands.clear();
  for (int64_t i = 0; i < d.a_elements(); i += 2)
    operands.push_back("\"r\"(*reinterpret_cast<const unsigned*>(&" + slice_element(st.a, st.a_index, i) + "))");
  for (int64_t i = 0; i < d.b_elements(); i += 2)
    operands.push_back("\"r\"(*reinterpret_cast<const unsigned*>(&" + slice_element(st.b, st.b_index, i) + "))");
  const std::string ins = join(operands, ", ");
  TESSERA_TRY(checked(s));
  auto regs = [](int64_t first, int64_t n) {
    std::string out = "{";
    for (int64_t i = 0; i < n; ++i) out += (i ? ", %" : "%") + std::to_string(first + i);
    return out + "}";
  };
  const int64_t nc = d.c_elements(), na = d.a_elements() / 2, nb = d.b_elements() / 2;
  const std::string t(dtype_short_name(st.type));
  arch_only(80,
            {"asm volatile(\"mma.sync.aligned." + std::string(spelling(st.shape)) + ".row.col.f32." + t + "." + t +
             ".f32 " + regs(0, nc) + ", " + regs(nc, na) + ", " + regs(nc + na, nb) + ", " + regs(0, nc) + ";\\n\" : " +
             outs + " : " + ins + ");"},
            "ldmatrix and mma.sync");
  return Status::ok();
}

// ---- warpgroup tensor cores (sm_90a) ----

void CudaEmitter::sm90a_only(const std::vector<std::string>& lines) {
  directive("#if defined(__CUDA_ARCH_FEAT_SM90_ALL)");
  for (const std::string& l : lines) line(l);
  directive("#else");
  line("__trap();  // needs sm_90a (wgmma, setmaxnreg)");
  directive("#endif");
}

// The PTX ISA's matrix descriptor: bits 0-13 the start address >> 4, 16-29 the leading and 32-45
// the stride byte offset >> 4, 62-63 the swizzle mode (0 none, 1 128B, 2 64B, 3 32B).
std::string CudaEmitter::wgmma_descriptor(const std::string& elem, int64_t lbo, int64_t sbo, SmemSwizzle swizzle) {
  int64_t mode = 0;
  switch (swizzle) {
    case SmemSwizzle::None: mode = 0; break;
    case SmemSwizzle::B128: mode = 1; break;
    case SmemSwizzle::B64: mode = 2; break;
    case SmemSwizzle::B32: mode = 3; break;
  }
  const uint64_t fixed = (static_cast<uint64_t>(lbo >> 4) << 16) | (static_cast<uint64_t>(sbo >> 4) << 32) |
                         (static_cast<uint64_t>(mode) << 62);
  return "((unsigned long long)((((unsigned)__cvta_generic_to_shared(&" + elem + ")) & 0x3FFFFu) >> 4) | " +
         std::to_string(fixed) + "ull)";
}

Status CudaEmitter::emit_wgmma(const Stmt& s, const WgmmaMma& st) {
  if (st.type != DType::BF16 && st.type != DType::F16) return error_at(s, "wgmma multiplies bf16 or f16 operands");
  if (!wgmma_n_is_valid(st.n)) return error_at(s, "wgmma's N must be a multiple of 8 from 8 to 256");
  const Buffer* a = buffer(st.a);
  const Buffer* b = buffer(st.b);
  if (!a || !b) return checked(s);
  for (const Buffer* buf : {a, b})
    if (!buf->shared || buf->dtype != st.type)
      return error_at(s, "wgmma reads its operands from Smem arrays of " + std::string(dtype_short_name(st.type)));
  const std::string da = wgmma_descriptor(element(*a, st.a_index), st.a_lbo, st.a_sbo, st.a_swizzle);
  const std::string db = wgmma_descriptor(element(*b, st.b_index), st.b_lbo, st.b_sbo, st.b_swizzle);
  const int64_t regs = st.n / 2;
  std::vector<std::string> outs;
  std::string list;
  for (int64_t i = 0; i < regs; ++i) {
    outs.push_back("\"+f\"(" + slice_element(st.acc, st.acc_index, i) + ")");
    list += (i ? ", %" : "%") + std::to_string(i);
  }
  TESSERA_TRY(checked(s));
  const std::string t(dtype_short_name(st.type));
  std::string trans_b;
  switch (st.b_major) {
    case MatrixMajor::K: trans_b = "0"; break;
    case MatrixMajor::MN: trans_b = "1"; break;
  }
  // scale-d is a predicate (1: D = A B + D); scale-a, scale-b 1; A K-major (imm-trans-a 0), B K-major
  // (imm-trans-b 0) or MN-major (1).
  sm90a_only({"asm volatile(\"{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %" + std::to_string(regs + 2) +
              ", 0;\\n\\twgmma.mma_async.sync.aligned.m64n" + std::to_string(st.n) + "k16.f32." + t + "." + t + " {" +
              list + "}, %" + std::to_string(regs) + ", %" + std::to_string(regs + 1) + ", p, 1, 1, 0, " + trans_b + ";\\n}\\n\" : " +
              join(outs, ", ") + " : \"l\"(" + da + "), \"l\"(" + db + "), \"r\"(1) : \"memory\");"});
  return Status::ok();
}

std::string CudaEmitter::barrier_address(const std::string& name, const Expr& slot) {
  auto it = barriers_.find(name);
  if (it == barriers_.end()) {
    expr_problem("'" + name + "' is not a barrier an MbarrierInit above declared");
    return "0u";
  }
  const Barrier& b = it->second;
  if (slot.is(ExprKind::Int) && (slot.int_value() < 0 || slot.int_value() >= b.slots))
    expr_problem("barrier slot " + std::to_string(slot.int_value()) + " of '" + name + "' is outside its " +
                 std::to_string(b.slots) + " slot(s)");
  return "(unsigned)__cvta_generic_to_shared(&" + b.cname + "[" + index(slot).text + "])";
}

Status CudaEmitter::emit_mbarrier_init(const Stmt& s, const MbarrierInit& st) {
  if (buffers_.count(st.name) || barriers_.count(st.name))
    return error_at(s, "buffer '" + st.name + "' is declared twice");
  // The hardware's arrival count is 20 bits.
  if (st.count < 1 || st.count > (1 << 20) - 1) return error_at(s, "count must be in 1..1048575");
  if (st.slots < 1) return error_at(s, "slots must be at least 1");
  Barrier b;
  b.cname = c_name_for(st.name);
  b.slots = st.slots;
  // Static shared memory of its own (8-byte words), counted with the static arrays.
  smem_bytes_ = (smem_bytes_ + 7) / 8 * 8 + 8 * st.slots;
  line("__shared__ __align__(8) unsigned long long " + b.cname + "[" + std::to_string(st.slots) + "];");
  const std::string count = std::to_string(st.count);
  std::vector<std::string> lines = {"if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {"};
  auto init = [&](const std::string& slot) {
    return "asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"((unsigned)__cvta_generic_to_shared(&" +
           b.cname + "[" + slot + "])), \"r\"(" + count + ") : \"memory\");";
  };
  if (st.slots == 1) {
    lines.push_back("  " + init("0"));
  } else {
    lines.push_back("  for (int tessera_b = 0; tessera_b < " + std::to_string(st.slots) + "; ++tessera_b)");
    lines.push_back("    " + init("tessera_b"));
  }
  lines.push_back("  asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");");
  lines.push_back("  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
  lines.push_back("}");
  sm90_only(lines);
  line("__syncthreads();");
  barriers_[st.name] = std::move(b);
  return Status::ok();
}

Status CudaEmitter::emit_mbarrier_arrive(const Stmt& s, const MbarrierArrive& st) {
  if (st.tx_bytes < 0 || st.tx_bytes > (1 << 20) - 1) return error_at(s, "tx must be in 0..1048575");
  const std::string bar = barrier_address(st.barrier, st.barrier_slot);
  TESSERA_TRY(checked(s));
  if (st.tx_bytes == 0)
    sm90_only({"asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"(" + bar + ") : \"memory\");"});
  else
    sm90_only({"asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(" + bar + "), \"r\"(" +
               std::to_string(st.tx_bytes) + ") : \"memory\");"});
  return Status::ok();
}

Status CudaEmitter::emit_cluster_sync(const Stmt& s) {
  TESSERA_TRY(checked(s));
  sm90_only({"asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: "
             "\"memory\");"},
            "clusters");
  return Status::ok();
}

Status CudaEmitter::emit_dsmem_load(const Stmt& s, const DsmemLoad& st) {
  const Buffer* buf = buffer(st.buffer);
  if (!buf) return checked(s);
  if (!buf->shared) return error_at(s, "DsmemLoad reads '" + st.buffer + "', which is not an Smem array");
  const std::string elem = element(*buf, st.index);
  const Printed rank = index(st.rank);
  TESSERA_TRY(checked(s));
  const std::string address = "tessera_dsmem_" + c_name_for(st.dst);
  line("unsigned long long " + address + " = (unsigned long long)&" + elem + ";");
  sm90_only({"asm volatile(\"mapa.u64 %0, %0, %1;\" : \"+l\"(" + address + ") : \"r\"((unsigned)(" + rank.text +
             ")));"},
            "clusters");
  emit_loaded_value(st.dst, st.type, *buf, "(*(const " + c_type(buf->dtype) + "*)" + address + ")");
  return Status::ok();
}

Status CudaEmitter::emit_mbarrier_wait(const Stmt& s, const MbarrierWait& st) {
  const std::string bar = barrier_address(st.barrier, st.barrier_slot);
  if (!st.phase.defined()) return error_at(s, "missing phase expression");
  const Printed phase = index(st.phase);
  TESSERA_TRY(checked(s));
  sm90_only({"for (unsigned tessera_done = 0; !tessera_done;) {",
             "  asm volatile(\"{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n "
             "selp.u32 %0, 1, 0, p;\\n}\\n\" : \"=r\"(tessera_done) : \"r\"(" +
                 bar + "), \"r\"(" +
                 (st.phase.is(ExprKind::Int) ? phase.text : "(unsigned)" + wrap(phase, phase.prec > kUnary)) +
                 ") : \"memory\");",
             "}"});
  return Status::ok();
}

Status CudaEmitter::emit_tma_load(const Stmt& s, const TmaLoad& st) {
  auto map_it = tensor_maps_.find(st.desc);
  if (map_it == tensor_maps_.end()) return error_at(s, "'" + st.desc + "' is not a tensor-map parameter of the kernel");
  const TensorMapSpec& spec = map_it->second.tensor_map;
  const size_t rank = spec.box.size();
  if (rank < 1 || rank > 5) return error_at(s, "a TMA box has rank 1 to 5, not " + std::to_string(rank));
  if (st.coords.size() != rank)
    return error_at(s, "gives " + std::to_string(st.coords.size()) + " coordinates for a box of rank " +
                           std::to_string(rank));
  auto src = buffers_.find(spec.buffer);
  if (src == buffers_.end() || src->second.shared)
    return error_at(s, "tensor map '" + st.desc + "' covers '" + spec.buffer + "', not a buffer of the kernel");
  const Buffer* dst = buffer(st.dst);
  TESSERA_TRY(checked(s));
  if (!dst->shared) return error_at(s, "'" + st.dst + "' is not a declared Smem buffer (TMA copies into shared memory)");
  if (dst->dtype != src->second.dtype)
    return error_at(s, "copies " + std::string(dtype_short_name(src->second.dtype)) + " elements into the " +
                           std::string(dtype_short_name(dst->dtype)) + " buffer '" + st.dst + "'");
  if (spec.swizzle != dst->swizzle)
    return error_at(s, "lands the box in the tensor map's " + std::string(spelling(spec.swizzle)) + " swizzle, but '" +
                           st.dst + "' is declared swizzle=" + std::string(spelling(dst->swizzle)));
  const int64_t span = swizzle_span_bytes(spec.swizzle);
  const int64_t needed = std::max<int64_t>(128, 8 * span);
  if (dst->align % needed != 0)
    return error_at(s, "'" + st.dst + "' is aligned to " + std::to_string(dst->align) + " bytes; a TMA destination" +
                           (span > 0 ? " in the " + std::string(spelling(spec.swizzle)) + " swizzle" : std::string()) +
                           " needs " + std::to_string(needed));
  const std::string to = st.dst_index.empty() ? dst->cname + "[0]" : element(*dst, st.dst_index);
  const std::string bar = barrier_address(st.barrier, st.barrier_slot);
  std::vector<std::string> coords;  // innermost first
  for (size_t k = rank; k-- > 0;) {
    if (!st.coords[k].defined()) return error_at(s, "missing coordinate expression");
    const Printed c = index(st.coords[k]);
    coords.push_back("\"r\"(" + (st.coords[k].is(ExprKind::Int) ? c.text : "(int)" + wrap(c, c.prec > kUnary)) + ")");
  }
  TESSERA_TRY(checked(s));
  std::vector<std::string> slots;
  for (size_t k = 0; k < rank; ++k) slots.push_back("%" + std::to_string(2 + k));
  const std::string bar_operand = "%" + std::to_string(2 + rank);
  sm90_only({"asm volatile(\"cp.async.bulk.tensor." + std::to_string(rank) +
             "d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {" + join(slots, ", ") + "}], [" +
             bar_operand + "];\" :: \"r\"((unsigned)__cvta_generic_to_shared(&" + to + ")), \"l\"(&" + st.desc + "), " +
             join(coords, ", ") + ", \"r\"(" + bar + ") : \"memory\");"});
  return Status::ok();
}

}  // namespace tessera::cuda_emit

// CudaEmitter, inline PTX: runs of cp.async copies, commits and waits, emitted together under one
// architecture guard with a plain-copy fallback (cuda_emitter_impl.h).
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

}  // namespace tessera::cuda_emit

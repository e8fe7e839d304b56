// The cuda plugin: the emit_cuda pass (Kernel IR -> CUDA C++) and the cuda target.
// Docs: docs/targets.md "## cuda". Tests: tests/unit/cuda_emitter_test.cpp,
// tests/unit/nvrtc_compiler_test.cpp, tests/golden/emit_cuda/.
#include "cuda_target.h"
#include "emit_cuda_pass.h"
#include "nvrtc_compiler.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace {

void register_cuda(tessera::Registry& r) {
  tessera::keep_nvrtc_loaded();
  r.add_pass("emit_cuda", [] { return tessera::make_emit_cuda_pass(); });
  r.add_target("cuda", [] { return tessera::make_cuda_target(); });
}

}  // namespace

TESSERA_PLUGIN("cuda", "0.1.0", register_cuda)

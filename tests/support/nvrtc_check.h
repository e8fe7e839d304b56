// Compiling a CudaOp with NVRTC in tests, without the cuda target (no kernel cache, no driver).
#pragma once

#include <string>

#include "tessera/ir/op.h"

namespace tessera::test {

#ifdef TESSERA_HAVE_CUDA
// Compiles `op` for `arch` (sm_XX); returns "" on success, else NVRTC's error with its log and
// the source, or, where ptxas reports register spills (stores or loads to local memory), the
// kernel's name and ptxas's report: the tests' kernels must build without spills.
std::string nvrtc_compile(const CudaOp& op, const std::string& arch);
#endif

}  // namespace tessera::test

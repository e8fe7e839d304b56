// NvrtcCompiler: compiles one emitted CUDA kernel (a CudaOp's source) to a cubin with NVRTC and
// reports the registers, shared memory and spills ptxas used. See nvrtc_compiler.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/support/status.h"

namespace tessera {

// What ptxas reports for one kernel (`--ptxas-options=-v`).
struct KernelResources {
  int registers = 0;
  int64_t shared_bytes = 0;       // static shared memory
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
};

struct CompiledKernel {
  std::string kernel;  // the __global__ function's name
  std::string arch;    // sm_XX
  std::string cubin;   // the binary image (bytes)
  std::string ptx;     // only when asked for
  KernelResources resources;
};

class NvrtcCompiler {
 public:
  // Whether this build links NVRTC (the CUDA toolkit was found at configure time).
  static bool available();
  // "major.minor" of the linked NVRTC, or "none": part of every cache key.
  static std::string version();
  // The NVRTC options compile() passes for `arch` (also part of the cache key).
  static std::vector<std::string> options(const std::string& arch);

  // Compiles `source` (whose __global__ function is `kernel`) for `arch`. An NVRTC error names the
  // kernel and quotes the log and the source lines it points at.
  static Expected<CompiledKernel> compile(const std::string& kernel, const std::string& source,
                                          const std::string& arch, bool want_ptx = false);
};

// Parses ptxas's `-v` report (the NVRTC log) for `kernel`; missing numbers read as 0.
// Keeps libnvrtc loaded until the process exits, even when the cuda plugin is unloaded. NVRTC
// carries its own static C++ runtime, whose exception-handling pool (71 KB) is allocated when the
// library loads and never freed: every plugin load/unload cycle would leak it (LeakSanitizer
// reports it at exit). Called once when the plugin registers; a no-op without NVRTC.
void keep_nvrtc_loaded();

KernelResources parse_ptxas_resources(const std::string& log, const std::string& kernel);

// The source lines an NVRTC log points at (`name.cu(N): error` or `line N`), each as
// "line N: <text>", in order of first mention.
std::vector<std::string> quote_error_lines(const std::string& log, const std::string& source);

}  // namespace tessera

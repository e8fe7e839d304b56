// CudaRuntime: runs and times a CUDA IR graph on one GPU through the Driver API (DriverApi).
// See cuda_runtime.cpp.
#pragma once

#include <memory>
#include <vector>

#include "driver_api.h"
#include "timing_extension.h"
#include "tessera/target/target.h"

namespace tessera {

class CudaRuntime {
 public:
  // Retains device 0's primary context and makes it current; reads the device's description.
  static Expected<std::unique_ptr<CudaRuntime>> open(std::shared_ptr<const DriverApi> api);
  ~CudaRuntime();
  CudaRuntime(const CudaRuntime&) = delete;
  CudaRuntime& operator=(const CudaRuntime&) = delete;

  // From the hardware: name, arch (sm_XY from the compute capability), SMs, shared memory per
  // block (default and opt-in) and per SM, registers per SM, thread limits, L2 size.
  const DeviceDesc& device() const { return device_; }

  // Runs every kernel of `g` once, in graph order, with the cubins of `builds` (Target::build's
  // result for `g`, same order) and `scalars` for the kernels' scalar parameters, and downloads the
  // graph outputs.
  Expected<TargetRun> run(const Graph& g, const ValueMap& inputs, const std::vector<KernelBuild>& builds,
                          const ScalarArgs& scalars = {});
  // Times every kernel and the whole program (see docs/targets.md "### Benchmarking").
  Expected<BenchReport> bench(const Graph& g, const ValueMap& inputs, const std::vector<KernelBuild>& builds,
                              const BenchOptions& options, const ScalarArgs& scalars = {});
  // Loads `g` once for repeated timing by the caller (TimedProgram) with the cubins of `builds`;
  // the program takes `rt` along, so the context outlives the program's device memory.
  static Expected<std::unique_ptr<TimedProgram>> prepare(std::unique_ptr<CudaRuntime> rt, const Graph& g,
                                                         const ValueMap& inputs,
                                                         const std::vector<KernelBuild>& builds,
                                                         const ScalarArgs& scalars, const TimingOptions& timing);

 private:
  friend class CudaTimedProgram;
  explicit CudaRuntime(std::shared_ptr<const DriverApi> api) : api_(std::move(api)) {}
#if TESSERA_HAVE_CUDA
  struct Loaded;
  Expected<std::unique_ptr<Loaded>> load(const Graph& g, const ValueMap& inputs,
                                         const std::vector<KernelBuild>& builds, const ScalarArgs& scalars,
                                         bool keep_uploaded);
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
#endif
  std::shared_ptr<const DriverApi> api_;
  DeviceDesc device_;
};

}  // namespace tessera

// CudaTarget: runs CUDA IR (CudaOp nodes from emit_cuda) on an NVIDIA GPU.
//
// Today it only detects the driver: libcuda.so.1 is opened at run time with dlopen, so the same
// binary runs on a machine without one and says so cleanly. Compiling with NVRTC and launching
// through the Driver API are the next issue; until then execute() reports why it cannot run.
#include "cuda_target.h"

#include <dlfcn.h>

#include <memory>
#include <string>

namespace tessera {
namespace {

constexpr const char* kNoDriver = "no CUDA driver / GPU found: libcuda.so.1 could not be loaded";
constexpr const char* kNoLauncher =
    "libcuda.so.1 is present, but the cuda target cannot launch kernels yet (the Driver API runtime "
    "is not implemented); use --target sim";

class CudaTarget final : public Target {
 public:
  std::string_view name() const override { return "cuda"; }
  std::string_view summary() const override {
    return "NVIDIA GPU: CUDA C++ from emit_cuda, NVRTC and the Driver API (launching not implemented yet)";
  }
  Dialect input_dialect() const override { return Dialect::Cuda; }

  bool available(std::string* why) const override {
    std::string reason = unavailable_reason();
    if (why) *why = reason;
    return false;
  }

  Expected<TargetRun> execute(const Graph&, const ValueMap&, const TargetOptions&) override {
    return make_error("target cuda: " + unavailable_reason());
  }

 private:
  static std::string unavailable_reason() {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) return kNoDriver;
    dlclose(driver);
    return kNoLauncher;
  }
};

}  // namespace

std::unique_ptr<Target> make_cuda_target() { return std::make_unique<CudaTarget>(); }

}  // namespace tessera

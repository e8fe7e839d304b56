// DriverApi: the CUDA Driver API, opened at run time (dlopen of libcuda.so.1, every entry point
// resolved through cuGetProcAddress), so one binary runs with or without a GPU. See driver_api.cpp.
#pragma once

#include <memory>
#include <string>

#include "tessera/support/status.h"

#if TESSERA_HAVE_CUDA
#include <cuda.h>  // types and signatures only: nothing links against libcuda
#endif

namespace tessera {

// Every message of a machine without a usable driver starts with this.
inline constexpr const char* kNoCudaPrefix = "no CUDA driver / GPU found: ";

#if TESSERA_HAVE_CUDA
// X(member, symbol passed to cuGetProcAddress, function the header declares with that signature).
#define TESSERA_CUDA_DRIVER_CALLS(X)                                                  \
  X(init, "cuInit", cuInit)                                                           \
  X(device_get, "cuDeviceGet", cuDeviceGet)                                           \
  X(device_get_count, "cuDeviceGetCount", cuDeviceGetCount)                           \
  X(device_get_name, "cuDeviceGetName", cuDeviceGetName)                              \
  X(device_get_attribute, "cuDeviceGetAttribute", cuDeviceGetAttribute)               \
  X(device_total_mem, "cuDeviceTotalMem", cuDeviceTotalMem)                           \
  X(primary_ctx_retain, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain)         \
  X(primary_ctx_release, "cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease)      \
  X(ctx_set_current, "cuCtxSetCurrent", cuCtxSetCurrent)                              \
  X(module_load_data, "cuModuleLoadData", cuModuleLoadData)                           \
  X(module_unload, "cuModuleUnload", cuModuleUnload)                                  \
  X(module_get_function, "cuModuleGetFunction", cuModuleGetFunction)                  \
  X(func_set_attribute, "cuFuncSetAttribute", cuFuncSetAttribute)                     \
  X(func_get_attribute, "cuFuncGetAttribute", cuFuncGetAttribute)                     \
  X(launch_kernel, "cuLaunchKernel", cuLaunchKernel)                                  \
  X(launch_kernel_ex, "cuLaunchKernelEx", cuLaunchKernelEx)                           \
  X(tensor_map_encode_tiled, "cuTensorMapEncodeTiled", cuTensorMapEncodeTiled)        \
  X(mem_alloc, "cuMemAlloc", cuMemAlloc)                                              \
  X(mem_free, "cuMemFree", cuMemFree)                                                 \
  X(memcpy_htod, "cuMemcpyHtoD", cuMemcpyHtoD)                                        \
  X(memcpy_dtoh, "cuMemcpyDtoH", cuMemcpyDtoH)                                        \
  X(memset_d8, "cuMemsetD8", cuMemsetD8)                                              \
  X(memset_d8_async, "cuMemsetD8Async", cuMemsetD8Async)                              \
  X(stream_create, "cuStreamCreate", cuStreamCreate)                                  \
  X(stream_destroy, "cuStreamDestroy", cuStreamDestroy)                               \
  X(stream_synchronize, "cuStreamSynchronize", cuStreamSynchronize)                   \
  X(event_create, "cuEventCreate", cuEventCreate)                                     \
  X(event_record, "cuEventRecord", cuEventRecord)                                     \
  X(event_synchronize, "cuEventSynchronize", cuEventSynchronize)                      \
  X(event_elapsed_time, "cuEventElapsedTime", cuEventElapsedTime)                     \
  X(event_destroy, "cuEventDestroy", cuEventDestroy)                                  \
  X(get_error_name, "cuGetErrorName", cuGetErrorName)                                 \
  X(get_error_string, "cuGetErrorString", cuGetErrorString)                           \
  X(stream_begin_capture, "cuStreamBeginCapture", cuStreamBeginCapture)               \
  X(stream_end_capture, "cuStreamEndCapture", cuStreamEndCapture)                     \
  X(graph_instantiate, "cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags)    \
  X(graph_launch, "cuGraphLaunch", cuGraphLaunch)                                     \
  X(graph_destroy, "cuGraphDestroy", cuGraphDestroy)                                  \
  X(graph_exec_destroy, "cuGraphExecDestroy", cuGraphExecDestroy)
#endif

class DriverApi {
 public:
  // Opens libcuda.so.1, resolves every entry point, runs cuInit(0) and checks that a device
  // exists. Every failure reads "no CUDA driver / GPU found: <reason>".
  static Expected<std::shared_ptr<const DriverApi>> load();
  ~DriverApi();
  DriverApi(const DriverApi&) = delete;
  DriverApi& operator=(const DriverApi&) = delete;

#if TESSERA_HAVE_CUDA
#define TESSERA_X(member, symbol, declared) \
  decltype(&::declared) member = nullptr;   \
  static constexpr const char* symbol_##member = symbol;
  TESSERA_CUDA_DRIVER_CALLS(TESSERA_X)
#undef TESSERA_X

  // OK for CUDA_SUCCESS; else an error naming `call` (and `what`, e.g. the kernel) with the
  // driver's name and description of `result`.
  Status check(CUresult result, const char* call, const std::string& what = "") const;
#endif

 private:
  DriverApi() = default;
  void* library_ = nullptr;
};

// Calls `api.member(args...)` and returns its error from the enclosing function on failure.
#define TESSERA_CU(api, member, what, ...) \
  TESSERA_TRY((api).check((api).member(__VA_ARGS__), ::tessera::DriverApi::symbol_##member, (what)))

}  // namespace tessera

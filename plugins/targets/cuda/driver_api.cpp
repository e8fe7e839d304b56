// DriverApi: opens the CUDA driver with dlopen and resolves its entry points with
// cuGetProcAddress_v2 (CUDA 12+), asking for the versions matching the cuda.h this plugin was
// compiled against (capped at the installed driver's version), so each pointer has exactly the
// signature of the header's declaration it is typed after.
// Accepts: any machine. Guarantees: load() never crashes without a driver or GPU; it returns
//   "no CUDA driver / GPU found: <reason>". Tests: tests/unit/cuda_runtime_test.cpp.
#include "driver_api.h"

#include <dlfcn.h>

#include <algorithm>
#include <string>

namespace tessera {

DriverApi::~DriverApi() {
  if (library_) dlclose(library_);
}

#if TESSERA_HAVE_CUDA

Status DriverApi::check(CUresult result, const char* call, const std::string& what) const {
  if (result == CUDA_SUCCESS) return Status::ok();
  const char* name = nullptr;
  const char* text = nullptr;
  if (get_error_name == nullptr || get_error_name(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (get_error_string == nullptr || get_error_string(result, &text) != CUDA_SUCCESS) text = nullptr;
  std::string msg = std::string(call) + " failed";
  if (!what.empty()) msg += " (" + what + ")";
  msg += ": " + std::string(name ? name : "CUresult " + std::to_string(static_cast<int>(result)));
  if (text) msg += " (" + std::string(text) + ")";
  return make_error(msg);
}

Expected<std::shared_ptr<const DriverApi>> DriverApi::load() {
  std::shared_ptr<DriverApi> api(new DriverApi());
  // RTLD_NODELETE: the driver stays loaded once opened, as the CUDA runtime keeps it. Its state
  // (contexts, module registrations) is process-wide, and unloading and reloading it on every
  // program would leak what it keeps in static storage.
  api->library_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!api->library_) return make_error(std::string(kNoCudaPrefix) + "libcuda.so.1 could not be loaded");

  using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  using DriverGetVersion = CUresult (*)(int*);
  auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(api->library_, "cuGetProcAddress_v2"));
  auto get_version = reinterpret_cast<DriverGetVersion>(dlsym(api->library_, "cuDriverGetVersion"));
  if (!get_proc || !get_version)
    return make_error(std::string(kNoCudaPrefix) +
                      "libcuda.so.1 has no cuGetProcAddress_v2 (a CUDA 12 or newer driver is needed)");
  int driver_version = 0;
  if (get_version(&driver_version) != CUDA_SUCCESS || driver_version <= 0)
    return make_error(std::string(kNoCudaPrefix) + "cuDriverGetVersion failed");
  const int version = std::min(driver_version, CUDA_VERSION);

#define TESSERA_X(member, symbol, declared)                                                        \
  {                                                                                               \
    void* fn = nullptr;                                                                           \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                  \
    if (get_proc(symbol, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||    \
        found != CU_GET_PROC_ADDRESS_SUCCESS || fn == nullptr)                                    \
      return make_error(std::string(kNoCudaPrefix) + "the driver (version " +                     \
                        std::to_string(driver_version) + ") does not provide " + symbol);         \
    api->member = reinterpret_cast<decltype(api->member)>(fn);                                    \
  }
  TESSERA_CUDA_DRIVER_CALLS(TESSERA_X)
#undef TESSERA_X

  if (Status s = api->check(api->init(0), "cuInit"); !s)
    return make_error(std::string(kNoCudaPrefix) + s.error().message);
  int count = 0;
  if (Status s = api->check(api->device_get_count(&count), "cuDeviceGetCount"); !s)
    return make_error(std::string(kNoCudaPrefix) + s.error().message);
  if (count <= 0) return make_error(std::string(kNoCudaPrefix) + "the driver reports no CUDA device");
  return std::shared_ptr<const DriverApi>(std::move(api));
}

#else  // built without the CUDA toolkit: the driver can be detected, never used

Expected<std::shared_ptr<const DriverApi>> DriverApi::load() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) return make_error(std::string(kNoCudaPrefix) + "libcuda.so.1 could not be loaded");
  dlclose(library);
  return make_error(std::string(kNoCudaPrefix) +
                    "this build of the cuda plugin has no CUDA toolkit headers (reconfigure with the toolkit)");
}

#endif

}  // namespace tessera

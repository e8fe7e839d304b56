// The cuda plugin's timing extension: a program loaded on the GPU once and timed launch by launch,
// for callers that run their own measurement loop (`tessera_kernel_bench` hands every launch's
// time to Google Benchmark; `tessera ab --bench` interleaves two programs run by run).
// Target::bench measures with its own loop and reports only medians, so it cannot serve them.
//
// The extension is a second C symbol of libcuda.so (kTimingExtensionSymbol) next to the plugin
// entry point, found in the already loaded plugin file (find_timing_extension). It is not part of
// the public plugin API: it is versioned by kTimingExtensionVersion and the plugin API version, and
// callers refuse any other pair, naming the file. Implemented in cuda_target.cpp and
// cuda_runtime.cpp; tests: tests/unit/kernel_bench_test.cpp.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/eval/tensor_value.h"
#include "tessera/ir/graph.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/status.h"
#include "tessera/target/device.h"
#include "tessera/target/target.h"

namespace tessera {

inline constexpr uint32_t kTimingExtensionVersion = 1;
inline constexpr const char* kTimingExtensionSymbol = "tessera_cuda_timing_extension";

// A CUDA IR program loaded on device 0: buffers allocated, inputs and constants uploaded (they
// are never overwritten, so every run reads the same data), modules loaded, one stream and two
// events. Every timing is one enqueue between two CUDA events on that stream, waited for, in
// microseconds. Not thread-safe: one caller thread at a time (each call makes the program's
// context current on the calling thread first).
class TimedProgram {
 public:
  virtual ~TimedProgram() = default;
  // The device, as the driver describes it.
  virtual const DeviceDesc& device() const = 0;
  // Every kernel in launch order: node, name, geometry, shared memory, registers and buffer bytes
  // (the timing fields are zero).
  virtual const std::vector<KernelTiming>& kernels() const = 0;
  // Non-fatal problems of the build (e.g. an unwritable kernel cache).
  virtual const std::vector<std::string>& warnings() const = 0;
  // One launch of kernel `i` (index into kernels()).
  virtual Expected<double> time_kernel(size_t i) = 0;
  // Every kernel once, back to back, in launch order.
  virtual Expected<double> time_program() = 0;
  // Timed runs that are thrown away, until the median of the last 5 is within 2% of the median of
  // the 5 before, or `max_runs` (the rule of Target::bench); returns how many ran.
  virtual Expected<int> warm_up_kernel(size_t i, int max_runs) = 0;
  virtual Expected<int> warm_up_program(int max_runs) = 0;
  // The graph outputs as the runs so far left them (waits for the stream, then downloads).
  virtual Expected<ValueMap> outputs() = 0;
};

struct TimingOptions {
  bool flush_l2 = false;  // memset a buffer of twice the L2 size before every timed enqueue
};

struct TimingExtension {
  uint32_t version;             // kTimingExtensionVersion of the plugin
  uint32_t plugin_api_version;  // kPluginApiVersion of the plugin
  // Opens the driver and device 0, compiles every kernel of `cuda_ir` (CUDA IR) for options.arch
  // (the GPU's own arch when empty) through options.cache_dir, and loads the program with
  // `inputs` (the value of every InputOp node) and options.scalars. Without a driver or GPU the
  // error reads "target cuda: no CUDA driver / GPU found: <reason>".
  Expected<std::unique_ptr<TimedProgram>> (*open)(const Graph& cuda_ir, const ValueMap& inputs,
                                                   const TargetOptions& options, const TimingOptions& timing);
};

// The extension of the cuda target plugin loaded in `registry`'s host. Errors name the file.
inline Expected<const TimingExtension*> find_timing_extension(const Registry& registry) {
  const std::string file = registry.owner(ComponentKind::Target, "cuda");
  if (file.empty()) return make_error("no cuda target plugin is installed");
  // The host keeps the plugin loaded for the whole process: borrow its handle, do not load it anew.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return make_error("the cuda target's plugin file " + file + " is not loaded in this process");
  using Entry = const TimingExtension* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kTimingExtensionSymbol));
  dlclose(handle);  // drops only the reference dlopen just added
  if (!entry) return make_error("the cuda target's plugin " + file + " has no timing extension (" +
                                std::string(kTimingExtensionSymbol) + ")");
  const TimingExtension* ext = entry();
  if (!ext || ext->version != kTimingExtensionVersion || ext->plugin_api_version != kPluginApiVersion)
    return make_error("the cuda target's plugin " + file + " has timing extension version " +
                      (ext ? std::to_string(ext->version) + " for plugin API " + std::to_string(ext->plugin_api_version)
                           : std::string("(none)")) +
                      "; this program needs version " + std::to_string(kTimingExtensionVersion) + " for plugin API " +
                      std::to_string(kPluginApiVersion));
  return ext;
}

}  // namespace tessera

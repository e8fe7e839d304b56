// Target: runs a lowered program. Targets are plugins (`sim`: the CPU SIMT simulator of Kernel IR;
// `cuda`: NVRTC + the CUDA Driver API); `tessera run --target NAME` picks one.
//
// The host compiles the program through the pipeline up to the target's input dialect (Kernel IR
// for sim, CUDA for cuda), fills the inputs with seeded data (make_inputs), calls execute(), and
// compares the returned outputs with the reference evaluator.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/eval/tensor_value.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"
#include "tessera/support/status.h"
#include "tessera/target/device.h"

namespace tessera {

// The value of a scalar kernel parameter (KernelParam of kind scalar), as the caller gives it:
// an integer for i32/i64 parameters, an integer or a double for f32 ones.
using ScalarValue = std::variant<int64_t, double>;
// By parameter name; every kernel of the program with a scalar parameter of that name gets it.
using ScalarArgs = std::map<std::string, ScalarValue>;

// How far a run has come, in units of estimated work (KernelCost::work, summed over the kernels).
struct TargetProgress {
  std::string kernel;  // the kernel running
  double done = 0;
  double total = 0;
};

struct TargetOptions {
  std::string arch;                 // sm_90, ...
  const DeviceDesc* device = nullptr;
  std::string cache_dir;
  bool want_ptx = false;            // build() also returns each kernel's PTX (KernelBuild::ptx)
  ScalarArgs scalars{};             // the values of the kernels' scalar parameters
  // Called by a target whose execute() or build() takes long, with the work done so far: the
  // simulator's execute() after every block (units of KernelCost::work), the cuda target's build()
  // as NVRTC finishes each distinct kernel (units of kernels). Empty: no reports. Always called on
  // the thread that called execute() or build().
  std::function<void(const TargetProgress&)> progress{};
};

// One kernel launch a target performed, in launch order (what `tessera run` lists).
struct KernelLaunch {
  std::string node;    // the graph node the kernel computes
  std::string kernel;  // the kernel's name
  std::vector<int64_t> grid{1, 1, 1};
  std::vector<int64_t> block{1, 1, 1};
};

// One kernel a target compiled ahead of running it (Target::build, `tessera compile --ir cuda -v`).
struct KernelBuild {
  std::string node;    // the graph node the kernel computes
  std::string kernel;  // the kernel's name
  std::string arch;    // sm_XX it was built for
  int registers = 0;   // per thread, as ptxas reports them
  int64_t shared_bytes = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  bool from_cache = false;  // served from the kernel cache (no compiler invocation)
  std::string binary;       // the compiled image (a cubin for cuda)
  std::string ptx;          // the PTX, when TargetOptions::want_ptx
  std::string cache_warning;  // why the kernel could not be stored in the cache (it was still built)
};

struct TargetRun {
  ValueMap outputs;                   // the value of every graph output, by node id
  std::vector<KernelLaunch> launches;
  std::vector<std::string> warnings;  // non-fatal problems to show the user (e.g. an unwritable cache)
};

// Timing knobs of Target::bench (`tessera run --bench`).
struct BenchOptions {
  int iterations = 50;        // timed runs per kernel (and of the whole program) after warm-up
  int max_warmup = 200;       // warm-up cap: stop once the median of the last runs is stable (2%)
  bool use_graphs = false;    // time the whole program as a replayed CUDA graph
  bool flush_l2 = false;      // memset a buffer of 2x the L2 size before every timed run
  // Run the program once before timing and return its outputs in BenchReport::outputs: a caller
  // that checks and times a program loads (and uploads) it once.
  bool outputs = false;
};

// The measured time of one kernel, in microseconds (medians and extremes over the timed runs).
struct KernelTiming {
  std::string node;
  std::string kernel;
  std::vector<int64_t> grid{1, 1, 1};
  std::vector<int64_t> block{1, 1, 1};
  int64_t dynamic_smem = 0;
  int64_t static_smem = 0;
  int registers = 0;
  int64_t bytes = 0;          // sum of the kernel's input and output buffer sizes
  double median_us = 0, min_us = 0, max_us = 0;
  int warmup_runs = 0;
};

struct BenchReport {
  std::string device;          // the device's name as the driver reports it
  std::vector<KernelTiming> kernels;  // in launch order
  double program_median_us = 0, program_min_us = 0, program_max_us = 0;  // all kernels, back to back
  bool used_graphs = false;
  // Set when a CUDA graph was asked for but could not be captured or instantiated: why (the driver
  // error, naming the kernel); the program was then timed as plain launches back to back.
  std::string graphs_unavailable;
  bool flushed_l2 = false;
  ValueMap outputs;  // with BenchOptions::outputs: every graph output of the first run, by id
};

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  // The dialect execute() consumes: the host stops the pipeline after this stage.
  virtual Dialect input_dialect() const = 0;
  // Whether this target can run on this machine now (e.g. a CUDA driver and GPU are present);
  // on false, `why` says what is missing.
  virtual bool available(std::string* why) const = 0;
  // Runs `g` (lowered to input_dialect()) on `inputs`: the value of every InputOp node, by id.
  // ConstantOp nodes take their value from `inputs` when it holds one (add_constants), else the
  // target fills them with constant_data(). Errors name the node, kernel and statement at fault.
  virtual Expected<TargetRun> execute(const Graph& g, const ValueMap& inputs,
                                      const TargetOptions& options) = 0;
  // Optional: compiles every kernel of `g` (lowered to input_dialect()) for options.arch, through
  // the on-disk cache in options.cache_dir ("" = no cache), without running anything. Results are
  // in graph order. Targets that compile nothing ahead (sim) keep this default error.
  virtual Expected<std::vector<KernelBuild>> build(const Graph& g, const TargetOptions& options) {
    (void)g;
    (void)options;
    return make_error("target " + std::string(name()) + " does not compile kernels");
  }
  // Optional: times every kernel of `g` (lowered to input_dialect()) on `inputs`; targets without
  // a clock of their own (sim) keep this default error.
  virtual Expected<BenchReport> bench(const Graph& g, const ValueMap& inputs, const TargetOptions& options,
                                      const BenchOptions& bench) {
    (void)g;
    (void)inputs;
    (void)options;
    (void)bench;
    return make_error("target " + std::string(name()) + " cannot time kernels");
  }
  // Optional: the description of the device this target would run on, read from the hardware
  // (nullopt when there is none or the target does not query one).
  virtual std::optional<DeviceDesc> query_device() const { return std::nullopt; }
};

}  // namespace tessera

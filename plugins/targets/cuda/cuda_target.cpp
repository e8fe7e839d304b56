// CudaTarget: runs CUDA IR (CudaOp nodes from emit_cuda) on an NVIDIA GPU.
//
// build() compiles every distinct CudaOp (by cache key: source, arch, options, NVRTC version; the
// layers of a model share their kernels' source) once with NVRTC (NvrtcCompiler) through the
// on-disk KernelCache, on a bounded pool of threads (at most hardware_concurrency, one kernel per
// task; results and the first error are reported in graph order, so the output does not depend on
// scheduling), and reports progress through TargetOptions::progress as kernels finish.
//
// execute() and bench() build the kernels for the GPU's own arch (sm_XY from its compute
// capability; options.arch when given) and hand them to CudaRuntime (the Driver API, opened at
// run time with dlopen by DriverApi, so the same binary runs on a machine without a GPU and says
// so: "no CUDA driver / GPU found: <reason>").
// The timing extension (timing_extension.h, exported below) builds the same way and hands the
// loaded program to its caller for launch-by-launch timing.
// Tests: tests/unit/nvrtc_compiler_test.cpp, tests/unit/cuda_emitter_test.cpp,
// tests/unit/cuda_runtime_test.cpp, tests/unit/kernel_bench_test.cpp.
#include "cuda_target.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime.h"
#include "driver_api.h"
#include "kernel_cache.h"
#include "nvrtc_compiler.h"

namespace tessera {
namespace {

class CudaTarget final : public Target {
 public:
  std::string_view name() const override { return "cuda"; }
  std::string_view summary() const override {
    return "NVIDIA GPU: CUDA C++ from emit_cuda, NVRTC and the Driver API";
  }
  Dialect input_dialect() const override { return Dialect::Cuda; }

  bool available(std::string* why) const override {
    Expected<std::shared_ptr<const DriverApi>> api = DriverApi::load();
    if (!api && why) *why = api.error().message;
    return api.has_value();
  }

  std::optional<DeviceDesc> query_device() const override {
    Expected<std::unique_ptr<CudaRuntime>> rt = open_runtime();
    if (!rt) return std::nullopt;
    return (*rt)->device();
  }

  Expected<TargetRun> execute(const Graph& g, const ValueMap& inputs, const TargetOptions& options) override {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<CudaRuntime> rt, open_runtime());
    TESSERA_ASSIGN_OR_RETURN(std::vector<KernelBuild> builds, build(g, for_device(options, rt->device())));
    Expected<TargetRun> run = rt->run(g, inputs, builds, options.scalars);
    if (run)
      for (const KernelBuild& b : builds)
        if (!b.cache_warning.empty()) {
          run->warnings.push_back(b.cache_warning);
          break;
        }
    return run;
  }

  Expected<BenchReport> bench(const Graph& g, const ValueMap& inputs, const TargetOptions& options,
                              const BenchOptions& bench_options) override {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<CudaRuntime> rt, open_runtime());
    TESSERA_ASSIGN_OR_RETURN(std::vector<KernelBuild> builds, build(g, for_device(options, rt->device())));
    return rt->bench(g, inputs, builds, bench_options, options.scalars);
  }

  // The timing extension's open (timing_extension.h): the same build and runtime as bench().
  static Expected<std::unique_ptr<TimedProgram>> open_timed(const Graph& g, const ValueMap& inputs,
                                                            const TargetOptions& options, const TimingOptions& timing) {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<CudaRuntime> rt, open_runtime());
    CudaTarget target;
    const TargetOptions o = for_device(options, rt->device());
    TESSERA_ASSIGN_OR_RETURN(std::vector<KernelBuild> builds, target.build(g, o));
    return CudaRuntime::prepare(std::move(rt), g, inputs, builds, o.scalars, timing);
  }

  Expected<std::vector<KernelBuild>> build(const Graph& g, const TargetOptions& options) override {
    if (options.arch.empty()) return make_error("target cuda: no arch to compile for");
    std::vector<const Node*> kernels;
    for (const Node* n : g.nodes()) {
      if (n->op_as<CudaOp>()) {
        kernels.push_back(n);
      } else if (!n->op_as<InputOp>() && !n->op_as<ConstantOp>()) {
        return make_error("target cuda builds CUDA IR; node " + n->id() + " is in " +
                          std::string(dialect_name(n->dialect())) + " IR")
            .at_node(n->id());
      }
    }
    // Kernels with the same cache key (the layers of a model share their kernels' source, see
    // docs/models.md) are compiled once, by the first of them.
    std::vector<std::string> keys(kernels.size());
    std::vector<size_t> first(kernels.size());
    std::vector<size_t> distinct;
    {
      std::map<std::string, size_t> seen;
      for (size_t i = 0; i < kernels.size(); ++i) {
        const auto& op = *kernels[i]->op_as<CudaOp>();
        keys[i] = KernelCache::key(op.source, options.arch, NvrtcCompiler::options(options.arch),
                                   NvrtcCompiler::version());
        auto [it, inserted] = seen.emplace(keys[i] + '/' + op.name, i);
        first[i] = it->second;
        if (inserted) distinct.push_back(i);
      }
    }
    std::vector<std::optional<Expected<KernelBuild>>> results(kernels.size());
    const KernelCache cache(options.cache_dir);
    std::atomic<size_t> next{0};
    std::mutex mutex;
    std::condition_variable finished;
    size_t done = 0;
    auto worker = [&] {
      for (size_t d = next++; d < distinct.size(); d = next++) {
        const size_t i = distinct[d];
        Expected<KernelBuild> built = build_one(*kernels[i], keys[i], options.arch, cache, options.want_ptx);
        std::lock_guard<std::mutex> lock(mutex);
        results[i] = std::move(built);
        ++done;
        finished.notify_one();
      }
    };
    // The pool compiles; the calling thread reports progress (TargetOptions::progress is called on
    // the caller's thread) as kernels finish.
    const size_t threads = std::min<size_t>(distinct.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    {
      std::unique_lock<std::mutex> lock(mutex);
      for (size_t reported = 0; reported < distinct.size();) {
        finished.wait(lock, [&] { return done > reported; });
        reported = done;
        if (options.progress) {
          const std::string what = std::to_string(reported) + "/" + std::to_string(distinct.size()) + " kernels";
          lock.unlock();
          options.progress(TargetProgress{what, static_cast<double>(reported), static_cast<double>(distinct.size())});
          lock.lock();
        }
      }
    }
    for (std::thread& t : pool) t.join();

    std::vector<KernelBuild> builds;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const size_t from = first[i];
      if (!*results[from]) return Expected<std::vector<KernelBuild>>(results[from]->error());
      KernelBuild b = **results[from];
      if (from != i) {  // the same binary, launched for this node
        b.node = kernels[i]->id();
        b.from_cache = true;
        b.cache_warning.clear();
      }
      builds.push_back(std::move(b));
    }
    return builds;
  }

 private:
  // One kernel: from the cache when its entry is intact, else compiled by NVRTC and stored.
  // With `want_ptx`, an entry stored without PTX is compiled again (and stored with it).
  static Expected<KernelBuild> build_one(const Node& n, const std::string& key, const std::string& arch,
                                         const KernelCache& cache, bool want_ptx) {
    const auto& op = *n.op_as<CudaOp>();
    KernelBuild b;
    b.node = n.id();
    b.kernel = op.name;
    b.arch = arch;
    std::optional<CompiledKernel> compiled = cache.load(key);
    b.from_cache = compiled && compiled->kernel == op.name && compiled->arch == arch &&
                   (!want_ptx || !compiled->ptx.empty());
    if (!b.from_cache) {
      Expected<CompiledKernel> fresh = NvrtcCompiler::compile(op.name, op.source, arch, want_ptx);
      if (!fresh) return std::move(fresh).error().at_node(n.id());
      if (!cache.dir().empty())
        if (Status s = cache.store(key, *fresh); !s)
          b.cache_warning = s.error().message + "; compiling without the kernel cache";
      compiled = std::move(*fresh);
    }
    b.registers = compiled->resources.registers;
    b.shared_bytes = compiled->resources.shared_bytes;
    b.spill_store_bytes = compiled->resources.spill_store_bytes;
    b.spill_load_bytes = compiled->resources.spill_load_bytes;
    b.binary = std::move(compiled->cubin);
    if (want_ptx) b.ptx = std::move(compiled->ptx);
    return b;
  }

  static Expected<std::unique_ptr<CudaRuntime>> open_runtime() {
    Expected<std::shared_ptr<const DriverApi>> api = DriverApi::load();
    if (!api) return make_error("target cuda: " + api.error().message);
    return CudaRuntime::open(std::move(*api));
  }

  // The kernels run on this GPU: compiled for its own arch unless the caller names one.
  static TargetOptions for_device(const TargetOptions& options, const DeviceDesc& device) {
    TargetOptions o = options;
    if (o.arch.empty()) o.arch = device.arch;
    return o;
  }
};

}  // namespace

std::unique_ptr<Target> make_cuda_target() { return std::make_unique<CudaTarget>(); }

}  // namespace tessera

// The timing extension's entry point, beside the plugin's (see timing_extension.h).
extern "C" __attribute__((visibility("default"))) const tessera::TimingExtension* tessera_cuda_timing_extension() {
  static const tessera::TimingExtension extension{tessera::kTimingExtensionVersion, tessera::kPluginApiVersion,
                                                  &tessera::CudaTarget::open_timed};
  return &extension;
}

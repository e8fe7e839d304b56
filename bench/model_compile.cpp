// Whole-model compile cost: for each model whose config ships with Tessera (data/models), a child
// process loads the plugins, builds the model with the hf frontend (prefill of --seq-len tokens,
// and one decode step with a --cache-len cache) and compiles it to CUDA source with the default
// pipeline, as `tessera compile MODEL --ir cuda` does, without weights. It reports the best of
// --repeat compiles in wall and CPU time (on a busy machine the CPU time is the better estimate of
// an idle core's wall time), the peak resident memory of the process after compiling (VmHWM) and
// how much of it the compile added, and the kernels and the distinct kernels (the summary of
// `tessera compile MODEL`). Then the cuda target builds every distinct kernel with NVRTC on its
// parallel pool (one thread per core) into an empty kernel cache (cold), and once more from that
// cache (warm), each in wall time (and CPU time of all threads for the cold build). Numbers are
// reported, never asserted.
//
//   build/bin/tessera_model_compile [--models ID,...] [--seq-len 128] [--cache-len 512] [--repeat 3]
//                                   [--threads T] [--nvrtc yes|no]
//
// Pin it to one core for single-core compile figures (`taskset -c 0`), but not for the NVRTC
// columns, which measure the parallel pool.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/child_measurement.h"
#include "framework/cli/model_summary.h"
#include "tessera/frontend/frontend.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/install_paths.h"
#include "tessera/target/device.h"
#include "tessera/target/target.h"

namespace {

using namespace tessera;

struct Options {
  std::vector<std::string> models = {"TinyLlama/TinyLlama-1.1B-Chat-v1.0", "Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-7B",
                                     "meta-llama/Meta-Llama-3-8B", "Qwen/Qwen3-8B"};
  int64_t seq_len = 128;
  int64_t cache_len = 512;
  int repeat = 3;
  int threads = 0;  // 0: the pipeline's
  bool nvrtc = true;
};

struct Measurement {
  double seconds = 0, cpu_seconds = 0;
  long peak_kb = 0, base_kb = 0;
  long kernels = 0, distinct = 0;
  // NVRTC: -1 when not measured (--nvrtc no, or no NVRTC in this build).
  long built = -1;  // kernels NVRTC compiled (the distinct sources)
  double cold_seconds = -1, cold_cpu_seconds = -1, warm_seconds = -1;
};

// The cuda target's build of `g` (every distinct kernel through NVRTC on its pool) into an empty
// kernel cache, then again from that cache. An empty answer when it was measured or NVRTC is
// missing (the columns stay empty), else the error.
std::string measure_nvrtc(const Registry& registry, const Graph& g, const DeviceDesc& device, const std::string& arch,
                          Measurement& m) {
  std::unique_ptr<Target> cuda = registry.make_target("cuda");
  if (!cuda) return {};
  std::error_code ec;
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path(ec) / ("tessera-model-compile-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache, ec);
  TargetOptions to;
  to.arch = arch.empty() ? device.arch : arch;
  to.device = &device;
  to.cache_dir = cache.string();
  auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = bench::process_cpu_seconds();
  Expected<std::vector<KernelBuild>> cold = cuda->build(g, to);
  if (!cold) {
    std::filesystem::remove_all(cache, ec);
    if (cold.error().message.find("this build has no NVRTC") != std::string::npos) return {};
    return cold.error().render();
  }
  m.cold_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.cold_cpu_seconds = bench::process_cpu_seconds() - cpu0;
  m.built = 0;
  for (const KernelBuild& b : *cold) m.built += !b.from_cache;
  t0 = std::chrono::steady_clock::now();
  Expected<std::vector<KernelBuild>> warm = cuda->build(g, to);
  m.warm_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::remove_all(cache, ec);
  if (!warm) return warm.error().render();
  return {};
}

// What a child does: compile `request` (the hf frontend's text) `repeat` times.
std::string measure(const std::string& request, const Options& o) {
  PluginHost host;
  if (Status st = host.load_directory(builtin_plugin_directory()); !st) return "error " + st.message();
  Expected<std::string> path = find_data_file("pipelines/default.yaml");
  if (!path) return "error " + path.error().render();
  Expected<PipelineSpec> spec = load_pipeline_file(*path);
  if (!spec) return "error " + spec.error().render();
  if (Status st = validate_pipeline(*spec, host.registry()); !st) return "error " + st.message();
  if (o.threads > 0) spec->threads = o.threads;
  Expected<DeviceTable> devices = DeviceTable::load_default();
  if (!devices) return "error " + devices.error().render();
  const DeviceDesc* device = devices->find("h100");
  if (!device) return "error no device description 'h100'";
  std::unique_ptr<Frontend> frontend = host.registry().make_frontend("hf");
  if (!frontend) return "error the hf frontend is not loaded";

  RunnerOptions ro;
  ro.device = device;
  ro.stop_after = Dialect::Cuda;
  Measurement m;
  m.base_kb = bench::status_kb("VmRSS");
  std::optional<Graph> last;
  m.seconds = m.cpu_seconds = 1e30;
  for (int r = 0; r < o.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = bench::process_cpu_seconds();
    Expected<Graph> g = frontend->import(FrontendInput{request, "<model>"}, FrontendOptions{});
    if (!g) return "error " + g.error().render();
    DiagnosticEngine diags;
    if (Status st = PipelineRunner(host.registry(), *spec, ro).run(*g, diags); !st) return "error " + st.message();
    m.seconds = std::min(m.seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    m.cpu_seconds = std::min(m.cpu_seconds, bench::process_cpu_seconds() - cpu0);
    cli::ModelSummary summary;
    cli::count_kernels(*g, summary);
    m.kernels = summary.kernels;
    m.distinct = summary.distinct_kernels;
    if (r + 1 == o.repeat) last = std::move(*g);  // one graph alive at a time
  }
  m.peak_kb = bench::status_kb("VmHWM");  // before NVRTC, whose libraries are large
  if (o.nvrtc) {
    if (std::string error = measure_nvrtc(host.registry(), *last, *device, spec->target.arch, m); !error.empty())
      return "error " + error;
  }
  std::ostringstream os;
  os << "ok " << m.seconds << " " << m.cpu_seconds << " " << m.peak_kb << " " << m.base_kb << " " << m.kernels << " "
     << m.distinct << " " << m.built << " " << m.cold_seconds << " " << m.cold_cpu_seconds << " " << m.warm_seconds;
  return os.str();
}

// Runs measure() in a child process and parses its answer.
bool measure_in_child(const std::string& request, const Options& o, Measurement& m, std::string& error) {
  const bench::ChildAnswer answer = bench::measure_in_child([&] { return measure(request, o); });
  if (!answer.ok) {
    error = answer.error;
    return false;
  }
  std::istringstream in(answer.fields);
  in >> m.seconds >> m.cpu_seconds >> m.peak_kb >> m.base_kb >> m.kernels >> m.distinct >> m.built >>
      m.cold_seconds >> m.cold_cpu_seconds >> m.warm_seconds;
  return true;
}

std::vector<std::string> parse_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

int usage() {
  std::cerr << "usage: tessera_model_compile [--models ID,...] [--seq-len 128] [--cache-len 512] [--repeat 3] "
               "[--threads T] [--nvrtc yes|no]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (a == "--models") {
      o.models = parse_list(v);
    } else if (a == "--seq-len") {
      o.seq_len = std::atoll(v.c_str());
    } else if (a == "--cache-len") {
      o.cache_len = std::atoll(v.c_str());
    } else if (a == "--repeat") {
      o.repeat = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--threads") {
      o.threads = std::atoi(v.c_str());
    } else if (a == "--nvrtc" && (v == "yes" || v == "no")) {
      o.nvrtc = v == "yes";
    } else {
      return usage();
    }
  }
  std::printf("%-36s %-12s %7s %8s %8s %8s %9s %10s %10s %9s %9s\n", "model", "phase", "kernels", "distinct",
              "wall s", "cpu s", "peak MB", "compile MB", "nvrtc cold", "cold cpu", "warm ms");
  for (const std::string& model : o.models) {
    for (bool decode : {false, true}) {
      const std::string phase = decode ? "decode" + std::to_string(o.cache_len) : "prefill" + std::to_string(o.seq_len);
      const std::string request = model + (decode ? " --decode --cache-len " + std::to_string(o.cache_len)
                                                  : " --seq-len " + std::to_string(o.seq_len));
      Measurement m;
      std::string error;
      if (!measure_in_child(request, o, m, error)) {
        std::fprintf(stderr, "%s %s: %s\n", model.c_str(), phase.c_str(), error.c_str());
        return 1;
      }
      char cold[32] = "-", cold_cpu[32] = "-", warm[32] = "-";
      if (m.cold_seconds >= 0) {
        std::snprintf(cold, sizeof cold, "%.2f s", m.cold_seconds);
        std::snprintf(cold_cpu, sizeof cold_cpu, "%.2f s", m.cold_cpu_seconds);
        std::snprintf(warm, sizeof warm, "%.1f", 1000.0 * m.warm_seconds);
      }
      std::printf("%-36s %-12s %7ld %8ld %8.3f %8.3f %9.1f %10.1f %10s %9s %9s\n", model.c_str(), phase.c_str(),
                  m.kernels, m.distinct, m.seconds, m.cpu_seconds, m.peak_kb / 1024.0,
                  (m.peak_kb - m.base_kb) / 1024.0, cold, cold_cpu, warm);
      std::fflush(stdout);
    }
  }
  return 0;
}

// Whole-model compile cost: for each model whose config ships with Tessera (data/models), a child
// process loads the plugins, builds the model with the hf frontend (prefill of --seq-len tokens,
// and one decode step with a --cache-len cache) and compiles it to CUDA source with the default
// pipeline, as `tessera compile MODEL --ir cuda` does, without NVRTC and without weights. It reports
// the best of --repeat compiles in wall and CPU time (on a busy machine the CPU time is the better
// estimate of an idle core's wall time), the peak resident memory of the process (VmHWM) and how
// much of it the compile added, the kernels and the distinct kernels (the summary of
// `tessera compile MODEL`). Numbers are reported, never asserted.
//
//   build/bin/tessera_model_compile [--models ID,...] [--seq-len 128] [--cache-len 512] [--repeat 3]
//                                   [--threads T]
//
// Pin it to one core for single-core figures: `taskset -c 0 build/bin/tessera_model_compile`.
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "framework/cli/model_summary.h"
#include "tessera/frontend/frontend.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/install_paths.h"
#include "tessera/target/device.h"

namespace {

using namespace tessera;

struct Options {
  std::vector<std::string> models = {"TinyLlama/TinyLlama-1.1B-Chat-v1.0", "Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-7B",
                                     "meta-llama/Meta-Llama-3-8B", "Qwen/Qwen3-8B"};
  int64_t seq_len = 128;
  int64_t cache_len = 512;
  int repeat = 3;
  int threads = 0;  // 0: the pipeline's
};

struct Measurement {
  double seconds = 0, cpu_seconds = 0;
  long peak_kb = 0, base_kb = 0;
  long kernels = 0, distinct = 0;
};

double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// A field of /proc/self/status in kB (VmHWM: peak resident set, VmRSS: current).
long status_kb(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  }
  return -1;
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
  m.base_kb = status_kb("VmRSS");
  m.seconds = m.cpu_seconds = 1e30;
  for (int r = 0; r < o.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = cpu_now();
    Expected<Graph> g = frontend->import(FrontendInput{request, "<model>"}, FrontendOptions{});
    if (!g) return "error " + g.error().render();
    DiagnosticEngine diags;
    if (Status st = PipelineRunner(host.registry(), *spec, ro).run(*g, diags); !st) return "error " + st.message();
    m.seconds = std::min(m.seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    m.cpu_seconds = std::min(m.cpu_seconds, cpu_now() - cpu0);
    cli::ModelSummary summary;
    cli::count_kernels(*g, summary);
    m.kernels = summary.kernels;
    m.distinct = summary.distinct_kernels;
  }
  m.peak_kb = status_kb("VmHWM");
  std::ostringstream os;
  os << "ok " << m.seconds << " " << m.cpu_seconds << " " << m.peak_kb << " " << m.base_kb << " " << m.kernels << " "
     << m.distinct;
  return os.str();
}

// Runs measure() in a child process and parses its answer.
bool measure_in_child(const std::string& request, const Options& o, Measurement& m, std::string& error) {
  int fds[2];
  if (pipe(fds) != 0) {
    error = "pipe failed";
    return false;
  }
  std::cout.flush();
  pid_t pid = fork();
  if (pid < 0) {
    error = "fork failed";
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    std::string answer = measure(request, o);
    (void)!write(fds[1], answer.data(), answer.size());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string answer;
  char buf[4096];
  for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) > 0;) answer.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  std::istringstream in(answer);
  std::string word;
  in >> word;
  if (word != "ok") {
    error = answer.empty() ? "the child process died" : answer.substr(std::min<size_t>(answer.size(), 6));
    return false;
  }
  in >> m.seconds >> m.cpu_seconds >> m.peak_kb >> m.base_kb >> m.kernels >> m.distinct;
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
               "[--threads T]\n";
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
    } else {
      return usage();
    }
  }
  std::printf("%-36s %-12s %8s %9s %8s %8s %13s %14s\n", "model", "phase", "kernels", "distinct", "wall s", "cpu s",
              "peak RSS MB", "compile MB");
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
      std::printf("%-36s %-12s %8ld %9ld %8.3f %8.3f %13.1f %14.1f\n", model.c_str(), phase.c_str(), m.kernels,
                  m.distinct, m.seconds, m.cpu_seconds, m.peak_kb / 1024.0, (m.peak_kb - m.base_kb) / 1024.0);
      std::fflush(stdout);
    }
  }
  return 0;
}

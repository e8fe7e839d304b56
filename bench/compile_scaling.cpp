// Compile-time scaling: compile time and peak memory per block as a model grows.
//
// For each N, a child process loads the plugins, builds the N-block decoder-style program of
// tests/support/decoder_blocks.h and compiles it to CUDA source with a pipeline (the default one
// unless --pipeline): the torch_expr frontend plus every pass, what `tessera compile --ir cuda`
// does, without NVRTC. It reports the compile's wall time and CPU time (each the best of --repeat
// runs; on a busy machine the CPU time is the better estimate of an idle core's wall time) and the
// process's peak resident memory (VmHWM) above what it held before the first compile, each also
// per block. A child per N keeps one size's memory from hiding another's. The last line is the
// spread of the CPU time per block over N = 4..64: compile time is linear in program size when it
// stays within 2x. Numbers are reported, never asserted.
//
//   build/bin/tessera_compile_scaling [--blocks 4,8,16,28,32,64,80] [--repeat 3] [--threads T]
//                                     [--pipeline FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "child_measurement.h"
#include "support/decoder_blocks.h"
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
  std::vector<int> blocks = {4, 8, 16, 28, 32, 64, 80};
  int repeat = 3;
  int threads = 0;  // 0: the pipeline's
  std::string pipeline;
};

struct Measurement {
  double seconds = 0, cpu_seconds = 0;
  long peak_kb = 0, base_kb = 0;
  int kernels = 0;
};

// What a child does: compile the N-block program `repeat` times; "ok ..." or "error ..." on `out`.
std::string measure(int blocks, const Options& o) {
  PluginHost host;
  if (Status st = host.load_directory(builtin_plugin_directory()); !st) return "error " + st.message();
  Expected<std::string> path = o.pipeline.empty() ? find_data_file("pipelines/default.yaml") : Expected<std::string>(o.pipeline);
  if (!path) return "error " + path.error().render();
  Expected<PipelineSpec> spec = load_pipeline_file(*path);
  if (!spec) return "error " + spec.error().render();
  if (Status st = validate_pipeline(*spec, host.registry()); !st) return "error " + st.message();
  if (o.threads > 0) spec->threads = o.threads;
  Expected<DeviceTable> devices = DeviceTable::load_default();
  if (!devices) return "error " + devices.error().render();
  const DeviceDesc* device = devices->find(spec->target.device.empty() ? "h100" : spec->target.device);
  if (!device) return "error no device description '" + spec->target.device + "'";
  std::unique_ptr<Frontend> frontend = host.registry().make_frontend("torch_expr");
  if (!frontend) return "error the torch_expr frontend is not loaded";

  const std::string program = test::decoder_blocks_program(blocks);
  RunnerOptions ro;
  ro.device = device;
  ro.stop_after = Dialect::Cuda;
  Measurement m;
  m.base_kb = bench::status_kb("VmRSS");
  m.seconds = m.cpu_seconds = 1e30;
  for (int r = 0; r < o.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = bench::process_cpu_seconds();
    Expected<Graph> g = frontend->import(FrontendInput{program, "<decoder-blocks>"}, FrontendOptions{});
    if (!g) return "error " + g.error().render();
    DiagnosticEngine diags;
    if (Status st = PipelineRunner(host.registry(), *spec, ro).run(*g, diags); !st) return "error " + st.message();
    m.seconds = std::min(m.seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    m.cpu_seconds = std::min(m.cpu_seconds, bench::process_cpu_seconds() - cpu0);
    m.kernels = 0;
    for (const Node* n : g->nodes()) m.kernels += n->op_as<CudaOp>() != nullptr;
  }
  m.peak_kb = bench::status_kb("VmHWM");
  std::ostringstream os;
  os << "ok " << m.seconds << " " << m.cpu_seconds << " " << m.peak_kb << " " << m.base_kb << " " << m.kernels;
  return os.str();
}

// Runs measure() in a child process and parses its answer.
bool measure_in_child(int blocks, const Options& o, Measurement& m, std::string& error) {
  const bench::ChildAnswer answer = bench::measure_in_child([&] { return measure(blocks, o); });
  if (!answer.ok) {
    error = answer.error;
    return false;
  }
  std::istringstream in(answer.fields);
  in >> m.seconds >> m.cpu_seconds >> m.peak_kb >> m.base_kb >> m.kernels;
  return true;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(std::atoi(item.c_str()));
  return out;
}

int usage() {
  std::cerr << "usage: tessera_compile_scaling [--blocks 4,8,16,28,32,64,80] [--repeat 3] [--threads T] "
               "[--pipeline FILE]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (a == "--blocks") {
      o.blocks = parse_list(v);
    } else if (a == "--repeat") {
      o.repeat = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--threads") {
      o.threads = std::atoi(v.c_str());
    } else if (a == "--pipeline") {
      o.pipeline = v;
    } else {
      return usage();
    }
  }
  std::printf("%7s %8s %10s %10s %14s %13s %17s\n", "blocks", "kernels", "wall s", "cpu s", "cpu ms/block",
              "peak RSS MB", "KB per block*");
  double lo = 0, hi = 0;
  for (int n : o.blocks) {
    Measurement m;
    std::string error;
    if (n <= 0 || !measure_in_child(n, o, m, error)) {
      std::fprintf(stderr, "N=%d: %s\n", n, error.c_str());
      return 1;
    }
    const double ms_per_block = 1000.0 * m.cpu_seconds / n;
    std::printf("%7d %8d %10.3f %10.3f %14.2f %13.1f %17.1f\n", n, m.kernels, m.seconds, m.cpu_seconds, ms_per_block,
                m.peak_kb / 1024.0, static_cast<double>(m.peak_kb - m.base_kb) / n);
    std::fflush(stdout);
    if (n >= 4 && n <= 64) {
      lo = lo == 0 ? ms_per_block : std::min(lo, ms_per_block);
      hi = std::max(hi, ms_per_block);
    }
  }
  std::printf("* peak resident memory above the process's before its first compile, per block\n");
  if (lo > 0) std::printf("cpu time per block over N = 4..64: max / min = %.2f\n", hi / lo);
  return 0;
}

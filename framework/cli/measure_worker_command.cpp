// `tessera measure-worker DIR`: the worker process of the GPU measurer (framework/src/tune/
// gpu_measurer.h), not meant to be run by hand and not listed in the usage text. It reads
// DIR/request.json (gpu_measure_protocol.h), runs one candidate on the GPU through the cuda
// target's timing extension — built for the GPU's arch through the kernel cache, loaded once, run
// once, its outputs checked against the task's reference, and only then timed as `run --bench`
// times (CUDA events, warm-up until the median is stable, the median of N runs, L2 flushed before
// each) — and writes DIR/result.json atomically. A probe request only opens the driver and reports
// the GPU.
//
// Exit codes: 0 when it wrote a result (a failed candidate included), 1 when it could not (an
// unreadable request, an unloadable plugin: the measurer then reports the last line of stderr).
// The worker ends with its parent (PR_SET_PDEATHSIG), so a tuner killed mid-trial leaves none.
// Tests: tests/unit/gpu_measurer_test.cpp; docs/tuning-gpu-measurer.md.
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>

#include "cli_session.h"
#include "commands.h"
#include "framework/src/tune/gpu_measure_protocol.h"
#include "plugins/targets/cuda/timing_extension.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/serialize.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/atomic_file.h"
#include "tessera/target/target.h"

namespace tessera::cli {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

GpuWorkerResult failed(GpuTrialFailure kind, std::string error) {
  GpuWorkerResult r;
  r.failure = kind;
  r.error = std::move(error);
  return r;
}

// Warm-up, then `iterations` timed runs of `time_one`: the median in µs.
template <class Warm, class Time>
Expected<double> timed_median(Warm&& warm_up, Time&& time_one, int iterations) {
  TESSERA_TRY(warm_up().status());
  std::vector<double> runs;
  for (int i = 0; i < iterations; ++i) {
    TESSERA_ASSIGN_OR_RETURN(double us, time_one());
    runs.push_back(us);
  }
  return median(std::move(runs));
}

// The outputs of the first run against the reference: "" when all are within tolerance, else
// why not.
std::string check_against(const std::vector<ReferenceOutput>& reference, const ValueMap& actual) {
  ValueMap expected;
  for (const ReferenceOutput& r : reference) expected[r.id] = r.value;
  for (const ReferenceOutput& r : reference) {
    if (!actual.count(r.id)) return "output '" + r.id + "' is missing from the run";
    Expected<ValueComparison> cmp = compare_output(expected, actual, r.id, r.tolerance);
    if (!cmp) return cmp.error().message;
    if (!cmp->within(r.tolerance.rtol))
      return r.id + ": " + cmp->str() + " (rtol " + (r.tolerance.rtol == 0 ? "0, exact" : short_number(r.tolerance.rtol)) + ")";
  }
  return "";
}

// The candidate of `request` on the GPU of `target` (available): checked, then timed.
GpuWorkerResult measure_candidate(const Registry& registry, Target& target, const DeviceDesc& gpu,
                                  const GpuWorkerRequest& request) {
  GpuWorkerResult result;
  std::ifstream f(request.graph_file, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f) return failed(GpuTrialFailure::WorkerFailed, "cannot read " + request.graph_file);
  Expected<Graph> graph = graph_from_json_text(text, request.graph_file);
  if (!graph) return failed(GpuTrialFailure::WorkerFailed, graph.error().message);
  Expected<std::vector<ReferenceOutput>> reference = read_reference(request.reference_file);
  if (!reference) return failed(GpuTrialFailure::WorkerFailed, reference.error().message);

  TargetOptions to;
  to.arch = request.arch.empty() ? gpu.arch : request.arch;
  to.device = &gpu;
  to.cache_dir = request.cache_dir;
  result.device = gpu.name;
  result.arch = to.arch;
  // Built first so a compile error is told apart from a failed run; the timing extension's own
  // build then finds every kernel in the cache.
  if (auto built = target.build(*graph, to); !built)
    return failed(GpuTrialFailure::Compile, "compile failed: " + trial_error_text(built.error()));
  Expected<const TimingExtension*> extension = find_timing_extension(registry);
  if (!extension) return failed(GpuTrialFailure::WorkerFailed, extension.error().message);
  const ValueMap inputs = make_inputs(*graph, request.seed);
  TimingOptions timing;
  timing.flush_l2 = request.flush_l2;
  Expected<std::unique_ptr<TimedProgram>> program = (*extension)->open(*graph, inputs, to, timing);
  if (!program) return failed(GpuTrialFailure::Run, trial_error_text(program.error()));
  TimedProgram& p = **program;

  // The first run is checked; a wrong candidate is not timed.
  if (auto first = p.time_program(); !first) return failed(GpuTrialFailure::Run, trial_error_text(first.error()));
  Expected<ValueMap> outputs = p.outputs();
  if (!outputs) return failed(GpuTrialFailure::Run, trial_error_text(outputs.error()));
  if (std::string wrong = check_against(*reference, *outputs); !wrong.empty())
    return failed(GpuTrialFailure::WrongResult, "wrong result: " + wrong);

  for (size_t i = 0; i < p.kernels().size(); ++i) {
    Expected<double> us = timed_median([&] { return p.warm_up_kernel(i, request.max_warmup); },
                                       [&] { return p.time_kernel(i); }, request.iterations);
    if (!us) return failed(GpuTrialFailure::Run, trial_error_text(us.error()));
    result.kernels.push_back(GpuKernelLatency{p.kernels()[i].node, p.kernels()[i].kernel, *us});
  }
  Expected<double> program_us = timed_median([&] { return p.warm_up_program(request.max_warmup); },
                                             [&] { return p.time_program(); }, request.iterations);
  if (!program_us) return failed(GpuTrialFailure::Run, trial_error_text(program_us.error()));
  result.latency_us = *program_us;
  return result;
}

}  // namespace

int measure_worker_command(int argc, char** argv, int first) {
  // Ends with the tuner: a worker left running would hold the GPU (and may be stuck in a kernel).
  // (The parent is read after the request for it is made: one that died before is seen below.)
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const pid_t parent = getppid();
  GlobalFlags flags;
  std::string dir;
  po::options_description desc("tessera measure-worker options");
  desc.add_options()("dir", po::value(&dir)->value_name("DIR"), "the request directory");
  add_global_options(desc, flags);
  po::positional_options_description pos;
  pos.add("dir", 1);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, pos, vm, "tessera measure-worker DIR (run by tessera tune)")) return *code;
  if (dir.empty()) {
    std::cerr << "error: tessera measure-worker: no request directory\n";
    return kExitUsage;
  }
  const std::string request_path = dir + "/request.json";
  std::ifstream f(request_path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f) {
    std::cerr << "error: tessera measure-worker: cannot read " << request_path << "\n";
    return kExitError;
  }
  Expected<GpuWorkerRequest> request = request_from_json_text(text, request_path);
  if (!request) return report(std::cerr, request.error());
  if (request->parent_pid != 0 && request->parent_pid != static_cast<int64_t>(parent)) return kExitError;

  auto session = open_session(flags, std::cerr, /*need_pipeline=*/false);
  if (!session) return kExitError;
  const Registry& registry = session->host.registry();
  GpuWorkerResult result = [&] {
    if (!registry.has(ComponentKind::Target, "cuda"))
      return failed(GpuTrialFailure::NoDevice, "no cuda target plugin is installed");
    std::unique_ptr<Target> target = registry.make_target("cuda");
    std::string why;
    if (!target->available(&why)) return failed(GpuTrialFailure::NoDevice, "target cuda: " + why);
    std::optional<DeviceDesc> gpu = target->query_device();
    if (!gpu) return failed(GpuTrialFailure::NoDevice, "target cuda: the GPU could not be opened");
    if (request->probe) {
      GpuWorkerResult probed;
      probed.device = gpu->name;
      probed.arch = request->arch.empty() ? gpu->arch : request->arch;
      return probed;
    }
    return measure_candidate(registry, *target, *gpu, *request);
  }();
  if (Status s = write_file_atomically(dir + "/result.json", result_to_json_text(result)); !s)
    return report(std::cerr, s.error());
  return kExitOk;
}

}  // namespace tessera::cli

// GpuMeasurer (see gpu_measurer.h): the reference once per task, then per candidate a directory
// with the graph and the request, a worker under the watchdog (watched_process.h), and its result
// turned into a Measurement.
#include "gpu_measurer.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../support/watched_process.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/loop_interpreter.h"
#include "tessera/ir/serialize.h"
#include "tessera/support/atomic_file.h"

namespace tessera {

namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The last non-empty line of a file ("" when none): the gist of what a failed worker printed.
std::string last_line(const std::string& path) {
  std::string text = read_text(path);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

// A fresh directory under `root` ("" = the system's temp directory).
Expected<std::string> make_private_dir(const std::string& root) {
  std::error_code ec;
  const fs::path base = root.empty() ? fs::temp_directory_path(ec) : fs::path(root);
  if (ec) return make_error("no temporary directory: " + ec.message());
  std::string pattern = (base / "tessera-measure-XXXXXX").string();
  if (!mkdtemp(pattern.data())) return make_error("cannot create a directory in " + base.string());
  return pattern;
}

GpuWorkerResult failure(GpuTrialFailure kind, std::string error) {
  GpuWorkerResult r;
  r.failure = kind;
  r.error = std::move(error);
  return r;
}

// Runs the worker on `dir` (which gets request.json) and reads its result; what became of a worker
// that left none is the result's failure.
GpuWorkerResult run_worker(const GpuMeasurerOptions& options, const std::string& dir, const GpuWorkerRequest& request) {
  if (options.worker_command.empty()) return failure(GpuTrialFailure::WorkerFailed, "no measure worker command");
  const std::string request_path = dir + "/request.json", result_path = dir + "/result.json";
  if (Status s = write_file_atomically(request_path, request_to_json_text(request)); !s)
    return failure(GpuTrialFailure::WorkerFailed, s.error().message);
  WatchedProcessSpec spec;
  spec.argv = options.worker_command;
  spec.argv.push_back(dir);
  spec.env = options.worker_env;
  spec.timeout_s = options.timeout_s;
  spec.stdout_path = dir + "/worker.out";
  spec.stderr_path = dir + "/worker.err";
  Expected<ProcessOutcome> outcome = run_watched_process(spec);
  if (!outcome) return failure(GpuTrialFailure::WorkerFailed, "the measure worker: " + outcome.error().message);
  const std::string said = last_line(spec.stderr_path);
  const std::string because = said.empty() ? "" : " (it said: " + said + ")";
  switch (outcome->end) {
    case ProcessEnd::TimedOut:
      return failure(GpuTrialFailure::TimedOut, outcome->str() + ": the worker was killed");
    case ProcessEnd::Signaled:
      return failure(GpuTrialFailure::WorkerDied, "the worker " + outcome->str() + because);
    case ProcessEnd::Exited:
      break;
  }
  std::error_code ec;
  if (!fs::exists(result_path, ec))
    return failure(GpuTrialFailure::WorkerFailed, "the worker " + outcome->str() + " without a result" + because);
  // A result followed by a failing exit (a check of the driver's use at exit, a crash in the
  // teardown) is not trusted: the run went wrong somewhere.
  if (outcome->exit_code != 0)
    return failure(GpuTrialFailure::WorkerFailed, "the worker " + outcome->str() + " after its result" + because);
  Expected<GpuWorkerResult> result = result_from_json_text(read_text(result_path), result_path);
  if (!result) return failure(GpuTrialFailure::WorkerFailed, result.error().message);
  return std::move(*result);
}

GpuWorkerRequest base_request(const GpuMeasurerOptions& options) {
  GpuWorkerRequest r;
  r.seed = options.seed;
  r.iterations = options.iterations;
  r.max_warmup = options.max_warmup;
  r.flush_l2 = options.flush_l2;
  r.arch = options.arch;
  r.cache_dir = options.cache_dir;
  r.parent_pid = static_cast<int64_t>(getpid());
  return r;
}

}  // namespace

GpuMeasurer::GpuMeasurer(GpuMeasurerOptions options, const Graph& task_graph)
    : options_(std::move(options)), task_graph_(task_graph) {}

GpuMeasurer::~GpuMeasurer() {
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

Status GpuMeasurer::prepare() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (prepared_) return *prepared_;
  prepared_ = [&]() -> Status {
    TESSERA_ASSIGN_OR_RETURN(dir_, make_private_dir(options_.temp_dir));
    if (options_.cache_dir.empty()) options_.cache_dir = dir_ + "/kernels";
    const ValueMap inputs = make_inputs(task_graph_, options_.seed);
    Expected<ValueMap> values = evaluate_loop_ir(task_graph_, inputs);
    if (!values) return make_error("the task's reference: " + values.error().message);
    std::vector<ReferenceOutput> reference;
    for (const std::string& id : task_graph_.outputs()) {
      auto it = values->find(id);
      if (it == values->end()) return make_error("the task's reference has no output '" + id + "'");
      reference.push_back(ReferenceOutput{id, it->second, output_tolerance(task_graph_, id)});
    }
    reference_path_ = dir_ + "/reference.json";
    return write_reference(reference_path_, reference);
  }();
  return *prepared_;
}

Status GpuMeasurer::build_ahead(const Graph& compiled) {
  TargetOptions to;
  to.arch = options_.arch;
  to.cache_dir = options_.cache_dir;
  Expected<std::vector<KernelBuild>> built = options_.compiler->build(compiled, to);
  if (!built) return built.error();
  return Status::ok();
}

GpuMeasurement GpuMeasurer::measure_detailed(const Graph& compiled) {
  GpuMeasurement out;
  auto fail = [&out](GpuTrialFailure kind, std::string error) {
    out.failure = kind;
    out.measurement.ok = false;
    out.measurement.error = std::move(error);
    return out;
  };
  if (Status s = prepare(); !s) return fail(GpuTrialFailure::Reference, s.error().message);
  if (options_.compiler && !options_.arch.empty())
    if (Status s = build_ahead(compiled); !s) return fail(GpuTrialFailure::Compile, "compile failed: " + trial_error_text(s.error()));

  const std::string dir = dir_ + "/c" + std::to_string(next_candidate_++);
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec) return fail(GpuTrialFailure::WorkerFailed, "cannot create " + dir + ": " + ec.message());
  GpuWorkerRequest request = base_request(options_);
  request.graph_file = dir + "/graph.json";
  request.reference_file = reference_path_;
  GpuWorkerResult result;
  if (Status s = write_file_atomically(request.graph_file, graph_to_json_text(compiled)); !s)
    result = failure(GpuTrialFailure::WorkerFailed, s.error().message);
  else {
    std::unique_lock<std::mutex> gpu;
    if (options_.gpu_lock) gpu = std::unique_lock<std::mutex>(*options_.gpu_lock);
    result = run_worker(options_, dir, request);
  }
  fs::remove_all(dir, ec);

  if (result.failure != GpuTrialFailure::None) return fail(result.failure, result.error);
  out.measurement.ok = true;
  out.measurement.latency_us = result.latency_us;
  out.kernels = std::move(result.kernels);
  return out;
}

Measurement GpuMeasurer::measure(const Graph& compiled) { return measure_detailed(compiled).measurement; }

Expected<GpuDeviceInfo> GpuMeasurer::probe(const GpuMeasurerOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(std::string dir, make_private_dir(options.temp_dir));
  GpuWorkerRequest request = base_request(options);
  request.probe = true;
  const GpuWorkerResult result = run_worker(options, dir, request);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (result.failure != GpuTrialFailure::None) return make_error(result.error);
  return GpuDeviceInfo{result.device, result.arch};
}

}  // namespace tessera

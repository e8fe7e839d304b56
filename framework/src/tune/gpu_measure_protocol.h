// What GpuMeasurer (gpu_measurer.h) and its worker process (`tessera measure-worker DIR`,
// framework/cli/measure_worker_command.cpp) exchange. The measurer writes DIR/request.json (and
// the candidate's graph, and once per task the reference), runs the worker, and reads
// DIR/result.json, which the worker writes atomically as its last act: a worker that dies leaves
// none. docs/tuning-gpu-measurer.md describes the protocol.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/eval/reference_evaluator.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/support/status.h"

namespace tessera {

// Why a GPU trial failed. The worker reports the first five; the measurer adds what it sees of
// the process.
enum class GpuTrialFailure {
  None,
  NoDevice,      // no CUDA driver or no GPU: no candidate can be measured (stop tuning)
  Compile,       // NVRTC refused the kernel
  Run,           // loading or running it failed (a launch refused, a fault the driver reported)
  WrongResult,   // it ran, its output is not the reference's: the schedule is wrong
  Reference,     // the task's reference could not be computed on the CPU (no candidate can be checked)
  TimedOut,      // the worker ran past the time limit and was killed
  WorkerDied,    // the worker died of a signal (a crash in the driver or the runtime)
  WorkerFailed,  // the worker exited without a result, or could not start
};
// "no-device", "compile", "run", "wrong-result", "reference", "timed-out", "worker-died",
// "worker-failed" ("none" for None).
std::string_view gpu_trial_failure_name(GpuTrialFailure f);

struct GpuWorkerRequest {
  // Only open the driver and report the device (GpuMeasurer::probe).
  bool probe = false;
  std::string graph_file;      // the candidate: a CUDA IR graph as JSON (tessera/ir/serialize.h)
  std::string reference_file;  // the expected outputs (write_reference)
  uint64_t seed = 0;           // the program inputs' data (make_inputs)
  int iterations = 20;         // timed runs after warm-up, per kernel and of the whole program
  int max_warmup = 50;
  bool flush_l2 = true;
  std::string arch;            // "" = the GPU's own
  std::string cache_dir;       // the kernel cache
  int64_t parent_pid = 0;      // the worker exits when its parent is gone
};

struct GpuKernelLatency {
  std::string node;
  std::string kernel;
  double median_us = 0;
};

struct GpuWorkerResult {
  GpuTrialFailure failure = GpuTrialFailure::None;
  std::string error;                     // why not ok
  std::string device;                    // the GPU's name, as the driver reports it
  std::string arch;                      // sm_XY the kernels were built for
  double latency_us = 0;                 // median of the whole program, kernels back to back
  std::vector<GpuKernelLatency> kernels; // each kernel timed alone, in launch order
};

std::string request_to_json_text(const GpuWorkerRequest& r);
Expected<GpuWorkerRequest> request_from_json_text(const std::string& text, const std::string& file);
std::string result_to_json_text(const GpuWorkerResult& r);
Expected<GpuWorkerResult> result_from_json_text(const std::string& text, const std::string& file);

// A diagnostic as one trial error: rendered with its notes (an NVRTC log), no trailing newline.
std::string trial_error_text(const Diagnostic& d);

// One expected output of a task, with the tolerance it is checked with.
struct ReferenceOutput {
  std::string id;
  TensorValue value;
  OutputTolerance tolerance;
};

// The reference as a small JSON manifest at `manifest_path` and each output's values as raw
// doubles beside it (manifest_path + ".<i>.f64"): exact, and read back without parsing text.
Status write_reference(const std::string& manifest_path, const std::vector<ReferenceOutput>& outputs);
Expected<std::vector<ReferenceOutput>> read_reference(const std::string& manifest_path);

}  // namespace tessera

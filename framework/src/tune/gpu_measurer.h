// GpuMeasurer: the "gpu" measurer of the tuner — a trial's kernels timed on the GPU, each
// candidate in a worker process of its own under a watchdog, and checked against the task's
// reference before it is timed. docs/tuning-gpu-measurer.md describes the whole.
//
// One GpuMeasurer per tuning task (it holds the task's reference): for each measure() it writes the
// compiled graph to a private directory, runs `<worker_command...> DIR` (the `tessera` binary's
// hidden `measure-worker` subcommand), waits at most `timeout_s`, and reads the worker's result. A
// worker that hangs is killed with its process group; one that crashes, exits without a result or
// times out gives a failed Measurement naming what happened, and the tuner goes on.
//
// The reference is the task's Loop IR graph evaluated on the CPU (evaluate_loop_ir) with the
// seeded inputs every candidate also gets (make_inputs), computed once, on the first measure(), and
// checked in the worker with each output's dtype tolerance: a candidate whose output differs is
// not timed and fails with "wrong result: ...".
//
// Thread-safe: trials may measure from several threads (each candidate gets its own directory and
// worker). With `compiler` set, measure() first builds the candidate's kernels in the calling
// thread through the kernel cache (NVRTC, Target::build), so trials compile in parallel, compile
// errors come without a worker, and the worker finds its kernels in the cache.
//
// Tests: tests/unit/gpu_measurer_test.cpp (with the stand-in driver of tests/support/fake_cuda).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpu_measure_protocol.h"
#include "tessera/ir/graph.h"
#include "tessera/target/target.h"
#include "tessera/tune/measurer.h"

namespace tessera {

struct GpuMeasurerOptions {
  // The worker's argv before its directory: {"/path/to/tessera", "measure-worker"} and any global
  // flags the worker needs to find the cuda plugin (`--plugin FILE`).
  std::vector<std::string> worker_command;
  std::map<std::string, std::string> worker_env;  // set in the worker's environment over the inherited one
  double timeout_s = 30;   // per candidate: the worker's whole run (driver start, load, check, timing)
  int iterations = 20;     // timed runs per kernel and of the whole program, after warm-up
  int max_warmup = 50;     // warm-up runs at most (stops once the median is stable, as run --bench)
  bool flush_l2 = true;    // overwrite twice the L2 before every timed run
  uint64_t seed = 0;       // the inputs' data (make_inputs), as `tessera run --seed`
  std::string arch;        // sm_XY to build for; "" = the GPU's own (probe() says which)
  std::string cache_dir;   // the kernel cache; "" = a private one, removed with the measurer
  std::string temp_dir;    // where the measurer's private directory goes; "" = the system's
  // The cuda target, to build kernels ahead in measure() (needs `arch`); null: the worker builds.
  // Called from every measuring thread at once: its build() must allow that (the cuda target's does).
  Target* compiler = nullptr;
  // Held while a worker runs, when set: measurers sharing it (the tasks of one tuning run) build
  // their candidates on several threads but run them on the GPU one at a time, so no candidate's
  // time includes another's.
  std::mutex* gpu_lock = nullptr;
};

// What the worker saw of the GPU (probe()).
struct GpuDeviceInfo {
  std::string name;  // as the driver reports it
  std::string arch;  // sm_XY from its compute capability
};

// A measurement with the details the Measurement interface has no room for.
struct GpuMeasurement {
  Measurement measurement;
  GpuTrialFailure failure = GpuTrialFailure::None;
  std::vector<GpuKernelLatency> kernels;  // each kernel timed alone (when ok)
};

class GpuMeasurer final : public Measurer {
 public:
  // `task_graph`: the task's graph at the Loop IR stage (TuningTaskGraph::graph), copied.
  GpuMeasurer(GpuMeasurerOptions options, const Graph& task_graph);
  ~GpuMeasurer() override;  // removes the private directory
  GpuMeasurer(const GpuMeasurer&) = delete;
  GpuMeasurer& operator=(const GpuMeasurer&) = delete;

  std::string_view name() const override { return "gpu"; }
  Dialect needs_stage() const override { return Dialect::Cuda; }
  Measurement measure(const Graph& compiled) override;
  // measure() with the failure's kind and each kernel's time.
  GpuMeasurement measure_detailed(const Graph& compiled);

  // Runs the worker once without a candidate: the GPU it would measure on, or why it cannot (no
  // driver, no GPU: the cuda target's message; a worker that fails to start or crashes). Call it
  // before tuning to stop early with a clear error, and to learn the arch for `arch`.
  static Expected<GpuDeviceInfo> probe(const GpuMeasurerOptions& options);

 private:
  Status prepare();  // the private directory and the reference, once
  Status build_ahead(const Graph& compiled);

  GpuMeasurerOptions options_;
  Graph task_graph_;
  std::mutex mutex_;
  std::optional<Status> prepared_;  // the outcome of prepare(), once it ran
  std::string dir_;                 // the private directory
  std::string reference_path_;
  std::atomic<uint64_t> next_candidate_{0};
};

}  // namespace tessera

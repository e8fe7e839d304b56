// Tests of the GPU measurer (framework/src/tune/gpu_measurer.h) without a GPU: its worker
// (`tessera measure-worker`) runs on the stand-in driver of tests/support/fake_cuda, first on the
// worker's LD_LIBRARY_PATH. The fake runs no kernel, so an output stays zero: a program computing
// x * 0 is right (the ok path, timed by the fake's clock of 1 us per launch) and x + 1 is wrong (the
// discard path). The fake's opt-in misbehaviour (FAKE_CUDA_HANG_ON_LAUNCH, FAKE_CUDA_CRASH_ON_LAUNCH)
// exercises the watchdog and the crash path. Without any driver, the measurer says so.
#include <gtest/gtest.h>

#include <dirent.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "framework/src/support/watched_process.h"
#include "framework/src/tune/gpu_measurer.h"
#include "framework/src/tune/pipeline_trial_runner.h"
#include "framework/src/tune/tuning_task.h"
#include "support/built_plugins.h"
#include "support/cli_runner.h"
#include "support/test_paths.h"

namespace tessera {
namespace {

using test::BuiltPluginsTest;

// The processes whose parent is this one (from /proc).
std::vector<int> children_of_this_process() {
  std::vector<int> children;
  DIR* proc = opendir("/proc");
  if (!proc) return children;
  const int self = static_cast<int>(getpid());
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == self) children.push_back(pid);
  }
  closedir(proc);
  return children;
}

class GpuMeasurerTest : public BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    ASSERT_NE(h100(), nullptr);
    Expected<PipelineSpec> p = load_pipeline_file(test::default_pipeline_path());
    ASSERT_TRUE(p) << p.error().render();
    pipeline_ = std::move(*p);
  }

  // The program's one task (its Loop IR graph), as `tessera tune` extracts it.
  TuningTaskGraph task_of(const std::string& program) {
    Graph g = trace(program);
    EXPECT_TRUE(lower(g, pipeline_, Dialect::Loop, h100())) << program;
    Expected<std::vector<TuningTaskGraph>> tasks = extract_tuning_tasks(g);
    EXPECT_TRUE(tasks) << tasks.error().render();
    EXPECT_EQ(tasks ? tasks->size() : 0u, 1u) << program;
    return tasks && !tasks->empty() ? std::move((*tasks)[0]) : TuningTaskGraph{};
  }

  // The task compiled to CUDA IR with the heuristic decisions, as a trial compiles it.
  Graph compiled(const TuningTaskGraph& task) {
    Graph g = task.graph;
    RunnerOptions o;
    o.start_after = Dialect::Loop;
    o.stop_after = Dialect::Cuda;
    o.device = h100();
    std::ostringstream sink;
    o.out = &sink;
    o.err = &sink;
    DiagnosticEngine diags;
    Status st = PipelineRunner(host_->registry(), pipeline_, o).run(g, diags);
    EXPECT_TRUE(st) << st.error().render();
    return g;
  }

  // The worker on the stand-in driver, with `misbehaviour` ("" or a FAKE_CUDA_* variable) set.
  static GpuMeasurerOptions on_fake(const std::string& misbehaviour = "") {
    GpuMeasurerOptions o;
    o.worker_command = {test::cli_path(), "measure-worker"};
#ifdef TESSERA_FAKE_CUDA_DIR
    o.worker_env["LD_LIBRARY_PATH"] = TESSERA_FAKE_CUDA_DIR;
#endif
    if (!misbehaviour.empty()) o.worker_env[misbehaviour] = "1";
    o.timeout_s = 120;  // far above a worker's run (a few seconds under the sanitizers)
    o.iterations = 3;
    o.max_warmup = 10;
    return o;
  }

  PipelineSpec pipeline_;
};

#if TESSERA_HAVE_CUDA && defined(TESSERA_FAKE_CUDA_DIR)

// The right answer is what the fake leaves (zeros): checked, then timed at the fake's 1 us per
// launch, each kernel alone and the program back to back.
TEST_F(GpuMeasurerTest, ARightCandidateIsCheckedAndTimed) {
  const TuningTaskGraph task = task_of("torch.randn(4,6) * 0");
  const Graph cuda = compiled(task);
  GpuMeasurer measurer(on_fake(), task.graph);
  EXPECT_EQ(measurer.name(), "gpu");
  EXPECT_EQ(measurer.needs_stage(), Dialect::Cuda);
  GpuMeasurement m = measurer.measure_detailed(cuda);
  ASSERT_TRUE(m.measurement.ok) << m.measurement.error;
  EXPECT_EQ(m.failure, GpuTrialFailure::None);
  size_t kernels = 0;
  for (const Node* n : cuda.nodes()) kernels += n->op_as<CudaOp>() != nullptr;
  ASSERT_GT(kernels, 0u);
  ASSERT_EQ(m.kernels.size(), kernels);
  // (Events report float milliseconds: 1 us reads as 1.00000005.)
  for (const GpuKernelLatency& k : m.kernels) EXPECT_NEAR(k.median_us, 1.0, 1e-6) << k.kernel;
  EXPECT_NEAR(m.measurement.latency_us, static_cast<double>(kernels), 1e-6 * static_cast<double>(kernels));
}

// A wrong candidate is discarded with what differs, through the trial runner as the tuner calls it.
TEST_F(GpuMeasurerTest, AWrongCandidateIsDiscardedAndReported) {
  const TuningTaskGraph task = task_of("torch.randn(4,6) + 1");
  GpuMeasurer measurer(on_fake(), task.graph);
  PipelineTrialRunner runner(host_->registry(), pipeline_, *h100(), task.graph, measurer);
  const TrialResult trial = runner.run(TrialSpec{});
  EXPECT_FALSE(trial.ok);
  EXPECT_EQ(trial.error.rfind("wrong result: ", 0), 0u) << trial.error;
  EXPECT_NE(trial.error.find("max rel 1 "), std::string::npos) << trial.error;
  EXPECT_EQ(measurer.measure_detailed(compiled(task)).failure, GpuTrialFailure::WrongResult);
}

// A kernel that never returns: the worker is killed at the limit, and nothing of it is left.
TEST_F(GpuMeasurerTest, AHangingCandidateIsKilledAtTheTimeLimit) {
  const TuningTaskGraph task = task_of("torch.randn(4,6) * 0");
  GpuMeasurerOptions o = on_fake("FAKE_CUDA_HANG_ON_LAUNCH");
  o.timeout_s = 3;
  GpuMeasurer measurer(o, task.graph);
  GpuMeasurement m = measurer.measure_detailed(compiled(task));
  EXPECT_FALSE(m.measurement.ok);
  EXPECT_EQ(m.failure, GpuTrialFailure::TimedOut);
  EXPECT_EQ(m.measurement.error, "timed out after 3 s: the worker was killed");
  EXPECT_TRUE(children_of_this_process().empty());
}

// A crash in the driver: reported with the signal; the next candidate is measured as usual.
TEST_F(GpuMeasurerTest, ACrashingWorkerIsAFailedTrial) {
  const TuningTaskGraph task = task_of("torch.randn(4,6) * 0");
  const Graph cuda = compiled(task);
  GpuMeasurer crashing(on_fake("FAKE_CUDA_CRASH_ON_LAUNCH"), task.graph);
  GpuMeasurement m = crashing.measure_detailed(cuda);
  EXPECT_FALSE(m.measurement.ok);
  EXPECT_EQ(m.failure, GpuTrialFailure::WorkerDied);
  EXPECT_EQ(m.measurement.error.rfind("the worker died of signal 11", 0), 0u) << m.measurement.error;
  EXPECT_TRUE(children_of_this_process().empty());
  GpuMeasurer fine(on_fake(), task.graph);
  EXPECT_TRUE(fine.measure(cuda).ok);
}

// A fault the driver reports: a failed run naming the error; the worker still releases
// everything it holds (the fake checks at exit, and the measurer refuses a result followed by a
// failing exit).
TEST_F(GpuMeasurerTest, AFaultReportedByTheDriverIsAFailedRun) {
  const TuningTaskGraph task = task_of("torch.randn(4,6) * 0");
  GpuMeasurer measurer(on_fake("FAKE_CUDA_FAULT_ON_LAUNCH"), task.graph);
  GpuMeasurement m = measurer.measure_detailed(compiled(task));
  EXPECT_FALSE(m.measurement.ok);
  EXPECT_EQ(m.failure, GpuTrialFailure::Run) << m.measurement.error;
  EXPECT_NE(m.measurement.error.find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos) << m.measurement.error;
}

// Candidates measured from several threads at once each get their own worker and directory.
TEST_F(GpuMeasurerTest, CandidatesCanBeMeasuredFromSeveralThreads) {
  const TuningTaskGraph task = task_of("torch.randn(4,6) * 0");
  const Graph cuda = compiled(task);
  GpuMeasurer measurer(on_fake(), task.graph);
  Measurement a, b;
  std::thread other([&] { a = measurer.measure(cuda); });
  b = measurer.measure(cuda);
  other.join();
  EXPECT_TRUE(a.ok) << a.error;
  EXPECT_TRUE(b.ok) << b.error;
  EXPECT_EQ(a.latency_us, b.latency_us);
}

// With the cuda target as compiler, kernels are built ahead in the measuring thread: a kernel NVRTC
// refuses fails there, without a worker; a good one is measured from the cache the build filled.
TEST_F(GpuMeasurerTest, KernelsBuiltAheadAndCompileErrorsReported) {
  const TuningTaskGraph task = task_of("torch.randn(4,6) * 0");
  std::unique_ptr<Target> cuda_target = host_->registry().make_target("cuda");
  ASSERT_NE(cuda_target, nullptr);
  GpuMeasurerOptions o = on_fake();
  Expected<GpuDeviceInfo> gpu = GpuMeasurer::probe(o);
  ASSERT_TRUE(gpu) << gpu.error().render();
  EXPECT_EQ(gpu->name, "Fake GPU (tests)");
  EXPECT_EQ(gpu->arch, "sm_90");
  test::TempDir cache;
  o.arch = gpu->arch;
  o.cache_dir = cache.path();
  o.compiler = cuda_target.get();
  GpuMeasurer measurer(o, task.graph);
  Graph good = compiled(task);
  EXPECT_TRUE(measurer.measure(good).ok);

  Graph broken = good;
  for (Node* n : broken.nodes())
    if (CudaOp* op = n->op_as<CudaOp>()) op->source += "\nthis is not CUDA;\n";
  GpuMeasurement m = measurer.measure_detailed(broken);
  EXPECT_EQ(m.failure, GpuTrialFailure::Compile);
  EXPECT_EQ(m.measurement.error.rfind("compile failed: ", 0), 0u) << m.measurement.error;
  EXPECT_NE(m.measurement.error.find("this is not CUDA"), std::string::npos) << m.measurement.error;  // NVRTC's log
}

#endif  // TESSERA_HAVE_CUDA && TESSERA_FAKE_CUDA_DIR

// No driver at all (this test's own environment, no stand-in): the probe and every measurement
// say so, and the failure is the kind that stops tuning.
TEST_F(GpuMeasurerTest, WithoutADriverTheMeasurerSaysSo) {
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    GTEST_SKIP() << "a CUDA driver is installed here: the no-driver path cannot be seen";
  }
  GpuMeasurerOptions o;
  o.worker_command = {test::cli_path(), "measure-worker"};
  o.timeout_s = 120;
  Expected<GpuDeviceInfo> gpu = GpuMeasurer::probe(o);
  ASSERT_FALSE(gpu);
  EXPECT_NE(gpu.error().message.find("no CUDA driver / GPU found"), std::string::npos) << gpu.error().message;

  const TuningTaskGraph task = task_of("torch.randn(4,6) * 0");
  GpuMeasurer measurer(o, task.graph);
  GpuMeasurement m = measurer.measure_detailed(compiled(task));
  EXPECT_FALSE(m.measurement.ok);
  EXPECT_EQ(m.failure, GpuTrialFailure::NoDevice);
  EXPECT_NE(m.measurement.error.find("no CUDA driver / GPU found"), std::string::npos) << m.measurement.error;
}

// A worker that cannot start, or exits without a result, is a failed trial naming why.
TEST_F(GpuMeasurerTest, AWorkerThatLeavesNoResultIsAFailedTrial) {
  const TuningTaskGraph task = task_of("torch.randn(4,6) * 0");
  const Graph cuda = compiled(task);
  GpuMeasurerOptions missing;
  missing.worker_command = {"/nonexistent/tessera", "measure-worker"};
  GpuMeasurement m = GpuMeasurer(missing, task.graph).measure_detailed(cuda);
  EXPECT_EQ(m.failure, GpuTrialFailure::WorkerFailed);
  EXPECT_NE(m.measurement.error.find("/nonexistent/tessera"), std::string::npos) << m.measurement.error;

  GpuMeasurerOptions wrong_command;
  wrong_command.worker_command = {test::cli_path(), "no-such-command"};
  m = GpuMeasurer(wrong_command, task.graph).measure_detailed(cuda);
  EXPECT_EQ(m.failure, GpuTrialFailure::WorkerFailed);
  EXPECT_NE(m.measurement.error.find("the worker exited with status 2 without a result"), std::string::npos)
      << m.measurement.error;
}

// The watchdog alone: an ordinary end, a signal, and a time limit that kills a whole process group.
TEST(WatchedProcessTest, EndsSignalsAndTimeLimits) {
  WatchedProcessSpec spec;
  spec.timeout_s = 60;
  spec.argv = {"/bin/sh", "-c", "exit 3"};
  Expected<ProcessOutcome> o = run_watched_process(spec);
  ASSERT_TRUE(o) << o.error().render();
  EXPECT_EQ(o->end, ProcessEnd::Exited);
  EXPECT_EQ(o->exit_code, 3);

  spec.argv = {"/bin/sh", "-c", "kill -SEGV $$"};
  o = run_watched_process(spec);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->end, ProcessEnd::Signaled);
  EXPECT_EQ(o->signal, 11);
  EXPECT_EQ(o->str().rfind("died of signal 11", 0), 0u) << o->str();

  // The shell's own child sleeps too: both are killed.
  spec.timeout_s = 0.5;
  spec.argv = {"/bin/sh", "-c", "sleep 100 & sleep 100; wait"};
  o = run_watched_process(spec);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->end, ProcessEnd::TimedOut);
  EXPECT_GE(o->seconds, 0.5);
  EXPECT_EQ(o->str(), "timed out after 0.5 s");
  EXPECT_TRUE(children_of_this_process().empty());
}

// The reference travels exactly (raw doubles), with its tolerance; a truncated data file is refused.
TEST(GpuMeasureProtocolTest, ReferenceAndResultRoundTrip) {
  test::TempDir dir;
  TensorValue v(TensorType{{2, 3}, DType::F16}, {0.1, -2.5, 1e-300, 3.0, -0.0, 7.25});
  ReferenceOutput out{"rms_norm", v, dtype_tolerance(DType::F16)};
  const std::string manifest = dir.path() + "/reference.json";
  ASSERT_TRUE(write_reference(manifest, {out}));
  Expected<std::vector<ReferenceOutput>> back = read_reference(manifest);
  ASSERT_TRUE(back) << back.error().render();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].id, "rms_norm");
  EXPECT_EQ((*back)[0].value.type, v.type);
  EXPECT_EQ((*back)[0].value.data, v.data);
  EXPECT_EQ((*back)[0].tolerance.rtol, out.tolerance.rtol);
  EXPECT_EQ((*back)[0].tolerance.precision, DType::F16);
  std::ofstream(manifest + ".0.f64", std::ios::trunc) << "short";
  Expected<std::vector<ReferenceOutput>> truncated = read_reference(manifest);
  ASSERT_FALSE(truncated);
  EXPECT_NE(truncated.error().message.find("5 bytes, expected 48"), std::string::npos) << truncated.error().message;

  GpuWorkerResult r;
  r.failure = GpuTrialFailure::WrongResult;
  r.error = "wrong result: add: max abs 1";
  r.kernels.push_back(GpuKernelLatency{"add", "k_add", 2.5});
  Expected<GpuWorkerResult> r2 = result_from_json_text(result_to_json_text(r), "result.json");
  ASSERT_TRUE(r2) << r2.error().render();
  EXPECT_EQ(r2->failure, r.failure);
  EXPECT_EQ(r2->error, r.error);
  ASSERT_EQ(r2->kernels.size(), 1u);
  EXPECT_EQ(r2->kernels[0].median_us, 2.5);
  EXPECT_FALSE(result_from_json_text("{\"failure\": \"exploded\"}", "result.json"));
}

}  // namespace
}  // namespace tessera

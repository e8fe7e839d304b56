// The cuda target's GPU path on the stand-in driver (tests/support/fake_cuda): `tessera run`,
// `run --bench` and `ab --bench` run in child processes whose LD_LIBRARY_PATH finds the fake
// libcuda.so.1 first. The fake runs no kernel (outputs keep the zeros of their allocation, so the
// programs here compute zeros) and counts 1 µs per launch; it exits with status 97 on a misuse of
// the Driver API (no current context, freeing or reading back before waiting, leaks at exit).
// Built only with the CUDA toolkit (the fake needs cuda.h); NVRTC compiles the kernels for real.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>

#include "support/cli_runner.h"

#if TESSERA_HAVE_CUDA && defined(TESSERA_FAKE_CUDA_DIR)
#include <cuda.h>

namespace tessera {
namespace {

constexpr const char* kPipeline = TESSERA_SOURCE_DIR "/pipelines/default.yaml";
constexpr const char* kZeros = "torch.randn(4,6) * 0";  // the right answer is what the fake leaves

test::CliResult run_on_fake(const std::vector<std::string>& args) {
  return test::run_cli(args, {{"LD_LIBRARY_PATH", TESSERA_FAKE_CUDA_DIR}});
}

TEST(FakeDriverTest, RunAndRunBenchUseTheDriverCorrectly) {
  test::CliResult r = run_on_fake({"run", "--target", "cuda", "-c", kZeros});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mul  max abs err 0"), std::string::npos) << r.out;
  r = run_on_fake({"run", "--target", "cuda", "--bench", "--iterations", "3", "--flush-l2", "-c", kZeros});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bench: Fake GPU (tests)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("program (kernels back to back): 1.00 us median"), std::string::npos) << r.out;
}

// run -v on the cuda target: the static kernel report before the run, with the registers NVRTC
// reports for each kernel.
TEST(FakeDriverTest, RunVReportsTheKernelsWithTheirRegisters) {
  test::TempDir cache;
  test::CliResult r = run_on_fake({"run", "--target", "cuda", "-v", "--cache-dir", cache.path(), "-c", kZeros});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.err.find("static kernel report: h100");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/thread; smem ", at), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not compiled", at), std::string::npos) << r.err;
}

TEST(FakeDriverTest, AbBenchOfAPipelineAgainstItselfIsNoDifference) {
  test::CliResult r = run_on_fake({"ab", kPipeline, kPipeline, "-c", kZeros, "--bench", "--iterations", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string p = kPipeline;
  const size_t report = r.out.find("\n# static kernel report with each kernel timed alone: A (left) | B (right)\n");
  ASSERT_NE(report, std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(0, report),
            "ab --bench: Fake GPU (tests) (sm_90), 20 interleaved whole-program runs per side after warm-up, inputs: "
            "seed 0\n"
            "  A  " + p + "  (1 kernel)  median 1.00 us  (10 warm-up runs)\n"
            "     mul  max rel err 0 (rtol 0.0001)  ok\n"
            "  B  " + p + "  (1 kernel)  median 1.00 us  (10 warm-up runs)\n"
            "     mul  max rel err 0 (rtol 0.0001)  ok\n"
            "  B/A latency ratio 1.000  95% CI [1.000, 1.000]  (bootstrap of the ratio of medians: 10000 paired "
            "resamples, seed 1)\n"
            "  verdict: no difference\n");
  // Then the static reports side by side, each kernel's time (the fake's 1 us a launch) beside its
  // bound (192 B at 3350 GB/s: 0.0573 ns), with the registers the driver reports for the loaded function (the fake says 32).
  const std::string tail = r.out.substr(report);
  EXPECT_NE(tail.find("  per SM    16 blocks (registers 16 at 32/thread; "), std::string::npos) << tail;
  EXPECT_NE(tail.find("  measured  1.00 us median (the bound is 0.00573% of it)  "), std::string::npos) << tail;
  EXPECT_NE(tail.find("|   measured  1.00 us median (the bound is 0.00573% of it)\n"), std::string::npos) << tail;
}

TEST(FakeDriverTest, AbBenchTimesNothingWhenAnOutputMismatches) {
  // The fake computes nothing, so x + 1 comes back as zeros: both sides mismatch.
  test::CliResult r = run_on_fake({"ab", kPipeline, kPipeline, "-c", "torch.randn(4,6) + 1", "--bench"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("add  max rel err 1 (rtol 0.0001)  MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not timed: an output does not match the reference"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("verdict"), std::string::npos) << r.out;
}

// A constant larger than one upload window (2^20 elements) is uploaded in pieces at offsets within
// its buffer (the fake ends the process on a copy past an allocation's end). Zero input, so the
// zeros the fake leaves are the right answer. (256 rows: enough outputs that the projection stays
// one kernel. Split by split_matmul_k, the output would take the weight's freed buffer, which the
// fake, computing nothing, leaves holding the weights.)
TEST(FakeDriverTest, LargeConstantsUploadWindowByWindow) {
  test::CliResult r =
      run_on_fake({"run", "--target", "cuda", "-c", "nn.Linear(1024, 1500, bias=False)(torch.zeros(256, 1024))"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("fake libcuda"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("max abs err 0"), std::string::npos) << r.out;
}

// RMSNorm over 16384 columns stages 64 KB of shared memory: past the 48 KB default, so the launch
// needs the function's opt-in attribute, which the fake checks as the driver does. Zero input.
TEST(FakeDriverTest, SharedMemoryPast48KbIsOptedIn) {
  test::CliResult r = run_on_fake({"run", "--target", "cuda", "-c", "nn.RMSNorm(16384)(torch.zeros(2, 16384))"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rms_norm  max abs err 0"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("fake libcuda"), std::string::npos) << r.err;
}

// The fake refuses CUDA graph capture, as a driver may: --graphs then times plain launches and
// says why, instead of failing the timing.
TEST(FakeDriverTest, GraphCaptureRefusedFallsBackToPlainLaunches) {
  test::CliResult r = run_on_fake({"run", "--target", "cuda", "--bench", "--graphs", "--iterations", "3", "-c", kZeros});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("program (kernels back to back): 1.00 us median"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: no CUDA graph (cuStreamBeginCapture"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the program was timed as plain launches"), std::string::npos) << r.out;
}

// The checks can fail: a call without a current context ends the process with status 97.
TEST(FakeDriverTest, TheFakeCatchesAMisuse) {
  auto misuse = [] {
    void* lib = dlopen(TESSERA_FAKE_CUDA_DIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) std::_Exit(1);
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    void* init = nullptr;
    void* alloc = nullptr;
    get_proc("cuInit", &init, CUDA_VERSION, 0, nullptr);
    get_proc("cuMemAlloc", &alloc, CUDA_VERSION, 0, nullptr);
    reinterpret_cast<decltype(&::cuInit)>(init)(0);
    CUdeviceptr p = 0;
    reinterpret_cast<decltype(&::cuMemAlloc)>(alloc)(&p, 16);  // no context retained or current
    std::_Exit(0);
  };
  EXPECT_EXIT(misuse(), ::testing::ExitedWithCode(97), "fake libcuda: cuMemAlloc without a retained primary context");
}

}  // namespace
}  // namespace tessera

#endif

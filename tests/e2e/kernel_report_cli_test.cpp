// The static kernel report in the CLI (docs/cli.md "The static kernel report"): `compile -v` at the
// cuda stage reports what the kernel stage reports plus NVRTC's registers; `run -v` reports before
// running; `ab` puts both sides' reports side by side without a GPU. The figures themselves are
// checked by hand in tests/unit/kernel_report_test.cpp and by the goldens in
// tests/golden/kernel_report.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "support/cli_runner.h"

using tessera::test::run_cli;
using tessera::test::TempDir;

namespace {

const std::string kRmsNorm = "nn.RMSNorm(2048)(torch.randn(1,32,2048))";
const std::string kSum = "x=torch.randn(8192,8192); x.sum()";
const std::string kMatmul = "x=torch.randn(256,256); w=torch.randn(256,256); x @ w";

// The report: stderr from its header line on.
std::string report_of(const std::string& err) {
  const size_t at = err.find("static kernel report: ");
  return at == std::string::npos ? std::string() : err.substr(at);
}

// The report without its `per SM` lines (the only ones the registers change).
std::string without_per_sm(const std::string& report) {
  std::istringstream in(report);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("  per SM ", 0) != 0) out += line + "\n";
  return out;
}

// The commands of the issue, as a user types them (the default pipeline ends at the cuda stage, so
// NVRTC compiles the kernels and their registers enter the report).
TEST(KernelReportCli, CompileVReportsEveryKernelAtTheCudaStage) {
  TempDir cache;
  for (const std::string& program : {kRmsNorm, kSum, kMatmul}) {
    auto cuda = run_cli({"compile", "-c", program, "-v", "-o", "/dev/null", "--cache-dir", cache.path()});
    ASSERT_EQ(cuda.exit_code, 0) << program << "\n" << cuda.err;
    auto kernel = run_cli({"compile", "-c", program, "--ir", "kernel", "-v", "-o", "/dev/null"});
    ASSERT_EQ(kernel.exit_code, 0) << program << "\n" << kernel.err;
    const std::string at_cuda = report_of(cuda.err), at_kernel = report_of(kernel.err);
    ASSERT_FALSE(at_kernel.empty()) << kernel.err;
    EXPECT_EQ(without_per_sm(at_cuda), without_per_sm(at_kernel)) << program;
    EXPECT_NE(at_kernel.find("registers - (not compiled)"), std::string::npos) << at_kernel;
#if TESSERA_HAVE_CUDA
    EXPECT_EQ(at_cuda.find("not compiled"), std::string::npos) << at_cuda;
    EXPECT_NE(at_cuda.find("/thread; smem "), std::string::npos) << at_cuda;
#endif
  }
}

// 67 M floats summed by one block (split_reduce pinned off): 268,435,456 B read and 4 written on
// 1 of 132 SMs warns. The default schedule splits the sum over 256 blocks and does not.
TEST(KernelReportCli, OneBlockSumOverAQuarterGigabyteWarns) {
  TempDir dir;
  const std::string unsplit = dir.write(
      "unsplit.yaml", "name: unsplit\nstages:\n  torch: [canonicalize]\n  tensor: [decompose, canonicalize]\n"
                      "  loop: [lift, fuse, canonicalize]\n"
                      "  tile: [tileify, {split_reduce: {SPLIT: 1}}, launch_geometry, cooperative_reduce, canonicalize]\n"
                      "  kernel: [materialize, canonicalize]\n  cuda: [emit_cuda]\ntarget: {name: cuda, arch: sm_90}\n");
  auto r = run_cli({"compile", "-c", kSum, "--ir", "kernel", "-v", "-o", "/dev/null", "--pipeline", unsplit});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("  warning: moves 268,435,460 B on 1 block, fewer than the 132 SMs\n"), std::string::npos)
      << r.err;
  auto split = run_cli({"compile", "-c", kSum, "--ir", "kernel", "-v", "-o", "/dev/null"});
  ASSERT_EQ(split.exit_code, 0) << split.err;
  EXPECT_EQ(split.err.find("warning"), std::string::npos) << split.err;
  // RMSNorm moves half a megabyte: no warning.
  auto small = run_cli({"compile", "-c", kRmsNorm, "--ir", "kernel", "-v", "-o", "/dev/null"});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_EQ(small.err.find("warning"), std::string::npos) << small.err;
}

// Before the report there is nothing to report: stages before Kernel IR print none.
TEST(KernelReportCli, NoReportBeforeTheKernelStageOrWithoutV) {
  auto tile = run_cli({"compile", "-c", kRmsNorm, "--ir", "tile", "-v", "-o", "/dev/null"});
  ASSERT_EQ(tile.exit_code, 0) << tile.err;
  EXPECT_EQ(tile.err.find("static kernel report"), std::string::npos) << tile.err;
  auto quiet = run_cli({"compile", "-c", kRmsNorm, "--ir", "kernel", "-o", "/dev/null"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;
}

// --emit report prints the report alone on stdout; before the kernel stage there is no report to
// print: a usage error naming the stage.
TEST(KernelReportCli, EmitReportPrintsTheReportOnStdout) {
  auto r = run_cli({"compile", "-c", kRmsNorm, "--ir", "kernel", "--emit", "report"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("static kernel report: h100 (sm_90, 132 SMs, 3350 GB/s DRAM, 66.9 TFLOP/s FP32)\n", 0), 0u)
      << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  auto early = run_cli({"compile", "-c", kRmsNorm, "--ir", "tile", "--emit", "report"});
  EXPECT_EQ(early.exit_code, 2);
  EXPECT_EQ(early.err,
            "error: --emit report needs the kernel or cuda stage (the report is of Kernel IR kernels); the compile "
            "stops at tile\n");
  EXPECT_TRUE(early.out.empty()) << early.out;
}

TEST(KernelReportCli, RunVReportsBeforeRunning) {
  auto r = run_cli({"run", "--target", "sim", "-v", "-c", "torch.randn(4,64) * 2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string report = report_of(r.err);
  ASSERT_FALSE(report.empty()) << r.err;
  // 4 x 64 f32 read and written once: 1,024 B each way; one mul per element.
  EXPECT_NE(report.find("  DRAM      2,048 B first touch, minimum 2,048 B (1.00x)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("  FLOPs     256 (mul 256)\n"), std::string::npos) << report;
  EXPECT_NE(report.find("registers - (not compiled)"), std::string::npos) << "sim compiles nothing\n" << report;
  EXPECT_EQ(r.out.find("static kernel report"), std::string::npos) << "stdout carries the result only";
}

// Without a GPU, `ab` at the kernel stage shows both reports side by side after the diff.
TEST(KernelReportCli, AbShowsBothReportsSideBySide) {
  TempDir tmp;
  const std::string a = std::string(TESSERA_SOURCE_DIR) + "/pipelines/default.yaml";
  const std::string b = tmp.write("b.yaml",
                                  "name: b\n"
                                  "stages:\n"
                                  "  torch: [canonicalize]\n"
                                  "  tensor: [decompose, compose_index_maps, canonicalize]\n"
                                  "  loop: [lift, fuse, dedup_loads, canonicalize]\n"
                                  "  tile: [tileify, launch_geometry, {cooperative_reduce: {THREADS: 128}}, canonicalize]\n"
                                  "  kernel: [materialize, canonicalize]\n");
  auto r = run_cli({"ab", a, b, "-c", kRmsNorm, "--ir", "kernel"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("\n# static kernel report: A (left) | B (right)\n");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string report = r.out.substr(at);
  EXPECT_NE(report.find("\nstatic kernel report: h100 (sm_90, 132 SMs, 3350 GB/s DRAM, 66.9 TFLOP/s FP32)  "),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("| static kernel report: h100 (sm_90, 132 SMs, 3350 GB/s DRAM, 66.9 TFLOP/s FP32)\n"),
            std::string::npos)
      << report;
  // Same bytes both sides; B's blocks have 128 threads, A's 256, and B stages nothing in shared
  // memory, so 16 of its blocks fit an SM.
  EXPECT_NE(report.find("\n  launch    32 blocks x 256 threads"), std::string::npos) << report;
  EXPECT_NE(report.find("|   launch    32 blocks x 128 threads"), std::string::npos) << report;
  EXPECT_NE(report.find("|   per SM    16 blocks"), std::string::npos) << report;
  EXPECT_NE(report.find("total     1 kernel: 532,480 B first touch, program minimum 532,480 B (1.00x)"),
            std::string::npos)
      << report;
  // A tile-stage comparison has no Kernel IR to report on.
  auto tile = run_cli({"ab", a, a, "-c", kRmsNorm, "--ir", "tile"});
  ASSERT_EQ(tile.exit_code, 0) << tile.err;
  EXPECT_EQ(tile.out.find("static kernel report"), std::string::npos) << tile.out;
}

}  // namespace

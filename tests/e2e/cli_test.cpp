// End-to-end tests of the `tessera` CLI: the main job, pipeline flags, dumps, reproducers, knob
// pinning through YAML, and the subcommands whose machinery lands later.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/cli_runner.h"
#include "tessera/plugin/plugin.h"

namespace fs = std::filesystem;
using tessera::test::read_file;
using tessera::test::run_cli;
using tessera::test::TempDir;
using tessera::test::kSanitizerExitCode;

namespace {

const std::string kRmsNorm = "nn.RMSNorm(2048)(torch.randn(1,32,2048))";
const std::string kProbe = std::string(TESSERA_FIXTURE_DIR) + "/libpipeline_probe.so";

// The main job: the default pipeline takes rms_norm all the way to CUDA C++: one kernel, one block
// per row, 256 threads cooperating on the mean-square reduction (warp shuffles, then a shared-memory
// tree), the row staged in shared memory with cp.async.
TEST(Cli, MainJobPrintsTheCudaKernelOfRmsNorm) {
  auto r = run_cli({"compile", "-c", kRmsNorm});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("x: (1, 32, 2048) float32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("// kernel k_rms_norm_reduce  grid=(32, 1, 1) block=(256, 1, 1) smem=8224 static + 0 dynamic  args: x, p_weight, rms_norm\n"
                       "extern \"C\" __global__ __launch_bounds__(256) void k_rms_norm_reduce("),
            std::string::npos)
      << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '{') - std::count(r.out.begin(), r.out.end(), '}'), 0) << r.out;
  for (const char* piece : {"__shared__ __align__(16) float x_smem[2048];", "cp.async.cg.shared.global",
                            "__shfl_xor_sync(0xffffffff, acc0, 16, 32)", "rsqrtf(",
                            "*reinterpret_cast<float4*>(&rms_norm[a1 * 2048 + a4 * 4]) = make_float4(v10, v12, v14, v16);"}) {
    EXPECT_NE(r.out.find(piece), std::string::npos) << piece << "\n" << r.out;
  }
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// The simulator refuses at once a program that would take it hours, with the estimate and the flag.
TEST(Cli, SimulatorRefusesWorkBeyondItsLimitWithTheEstimate) {
  const std::string big = "x=torch.randn(4096,4096); w=torch.randn(4096,4096); torch.matmul(x, w)";
  tessera::test::CliResult r = run_cli({"run", "--target", "sim", "-c", big});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: tessera run: simulating this program is about 137 G of work"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the limit is 10.0 G (--sim-work-limit G raises it"), std::string::npos) << r.err;
  r = run_cli({"run", "--target", "sim", "--sim-work-limit", "0", "-c", "torch.relu(torch.randn(4))"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = run_cli({"run", "--target", "sim", "--sim-work-limit", "0.000001", "-c", "torch.relu(torch.randn(400))"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the limit is 0 M"), std::string::npos) << r.err;
}

TEST(Cli, OutputIsDeterministic) {
  auto a = run_cli({"compile", "-c", kRmsNorm, "--emit", "json"});
  auto b = run_cli({"compile", "-c", kRmsNorm, "--emit", "json"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(Cli, HelpForEverySubcommand) {
  for (std::string cmd : {"compile", "run", "tune", "ab", "plugins", "passes"}) {
    auto r = run_cli({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    EXPECT_NE(r.out.find("--pipeline"), std::string::npos) << cmd << " help lacks the global flags:\n" << r.out;
  }
}

TEST(Cli, UnknownCommandAndBadFlagsAreUsageErrors) {
  auto r = run_cli({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos) << r.err;
  r = run_cli({"compile", "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no-such-flag"), std::string::npos) << r.err;
  r = run_cli({"compile", "-c", kRmsNorm, "--ir", "assembly"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown --ir stage 'assembly'"), std::string::npos) << r.err;
  r = run_cli({"compile", "-c", kRmsNorm, "--arch", "sm_11"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown --arch 'sm_11'"), std::string::npos) << r.err;
}

TEST(Cli, IrStageWithoutPassesIsRefusedWithTheFurthestStage) {
  TempDir tmp;
  auto p = tmp.write("p.yaml", "name: torch_only\nstages:\n  torch: [canonicalize]\n");
  auto r = run_cli({"compile", "--pipeline", p, "-c", kRmsNorm, "--ir", "cuda"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has no passes for stage 'cuda'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("furthest stage it reaches is 'torch'"), std::string::npos) << r.err;
}

TEST(Cli, RunNamesAMissingTargetAndTuneItsMissingTuner) {
  auto r = run_cli({"run", "--target", "nosuch", "-c", kRmsNorm});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tessera run: no target plugin 'nosuch' is installed"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  TempDir tmp;
  const std::string pipeline = tmp.write("p.yaml", "name: p\ntuner: {name: nosuch}\n");
  r = run_cli({"tune", "--pipeline", pipeline, "-c", kRmsNorm});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tessera tune: no tuner plugin 'nosuch'"), std::string::npos) << r.err;
}

TEST(Cli, RunOnTheSimulatorChecksEveryOutput) {
  auto r = run_cli({"run", "--target", "sim", "-c", kRmsNorm});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("target: sim  device: h100 (sm_90)  inputs: seed 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  k_rms_norm_reduce  grid=(32, 1, 1) block=(256, 1, 1)  -> rms_norm\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  rms_norm  max abs err "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(65536 elements, rtol 0.0001)  ok\n"), std::string::npos) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;

  // --seed changes the input data (so the errors differ) and is reported.
  auto seeded = run_cli({"run", "--target", "sim", "--seed", "5", "-c", kRmsNorm});
  ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
  EXPECT_NE(seeded.out.find("inputs: seed 5\n"), std::string::npos) << seeded.out;
  EXPECT_NE(seeded.out.substr(seeded.out.find("outputs:")), r.out.substr(r.out.find("outputs:")));

  // auto falls back to sim, saying why, when there is no GPU.
  auto a = run_cli({"run", "-c", "x=torch.randn(4,6); torch.softmax(x, -1)", "--sample-knobs", "3"});
  if (a.err.find("note: running on the sim target (") != std::string::npos) {
    EXPECT_EQ(a.exit_code, 0) << a.err;
    EXPECT_NE(a.out.find("knobs: sampled (seed 3)"), std::string::npos) << a.out;
  }
}

// A K = 512 f32 dot product carries ~1e-4 relative error in the outputs that land near 0: the
// tolerance is measured at the tensor's scale there (compare_output), so a correct matmul passes.
TEST(Cli, RunAcceptsALongF32Reduction) {
  auto r = run_cli({"run", "--target", "sim", "-c", "x=torch.randn(64,512); w=torch.randn(512,96); torch.relu(x @ w)"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  ok\n"), std::string::npos) << r.out;
}

// The tolerance is the narrowest precision on an output's path (docs/cli.md, the tolerance
// policy): float32 work returned as float64 is checked as float32, an f16 softmax returned as
// float32 as f16.
TEST(Cli, RunChecksEachOutputAtThePrecisionOfItsPath) {
  auto r = run_cli({"run", "--target", "sim", "-c", "x=torch.randn(8, 8); (x @ x).double()"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(64 elements, rtol 0.0001, as f32)  ok\n"), std::string::npos) << r.out;
  r = run_cli({"run", "--target", "sim", "-c", "x=torch.randn(8, 64, dtype=torch.float16); torch.softmax(x, -1).float()"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(512 elements, rtol 0.00781, as f16)  ok\n"), std::string::npos) << r.out;
}

// f16 softmax probabilities that are subnormals (rows of 262,144) pass a sampled schedule (release
// half only: its point is the size, scripts/sanitize.sh).
TEST(Cli, RunChecksALongHalfPrecisionSoftmaxAtItsPrecision) {
  auto r = run_cli({"run", "--target", "sim", "--sample-knobs", "1", "-c",
                    "x=torch.randn(3, 262144, dtype=torch.float16); torch.softmax(x.float(), dim=-1).half()"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(786432 elements, rtol 0.00781)  ok\n"), std::string::npos) << r.out;
}

// --knob pins a knob over the pipeline's for one command, typed and checked as a pin in the file.
TEST(Cli, KnobPinsAKnobOverThePipelineForOneCommand) {
  const char* matmul = "x=torch.randn(64,256); w=torch.randn(256,96); x @ w";
  auto r = run_cli({"compile", "-c", matmul, "--device", "h100", "--ir", "kernel", "--knob", "tma_copy.TMA=true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tma_copy.TMA=True (pinned)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TmaLoad("), std::string::npos) << r.out;
  // A later --knob of the same knob wins; the pipeline's heuristic is back with TMA=false.
  r = run_cli({"compile", "-c", matmul, "--device", "h100", "--ir", "kernel", "--knob", "tma_copy.TMA=true", "--knob",
               "tma_copy.TMA=false"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("TmaLoad("), std::string::npos) << r.out;
  r = run_cli({"run", "--target", "sim", "-c", matmul, "--device", "h100", "--knob", "tma_copy.TMA=true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  ok\n"), std::string::npos) << r.out;
  const std::pair<const char*, const char*> bad[] = {
      {"tma_copy.TMA=maybe", "--knob tma_copy.TMA=maybe: error: knob 'TMA' of pass 'tma_copy' expects bool, got 'maybe'"},
      {"nosuch.X=1", "--knob nosuch.X=1: pipeline 'default' has no pass 'nosuch'"},
      {"tma_copy", "--knob tma_copy: expected PASS.KNOB=VALUE"},
      {"tma_copy.NOPE=1", "unknown knob 'NOPE' of pass 'tma_copy'"},
  };
  for (const auto& [knob, message] : bad) {
    r = run_cli({"compile", "-c", matmul, "--ir", "tile", "--knob", knob});
    EXPECT_EQ(r.exit_code, 1) << knob;
    EXPECT_NE(r.err.find(message), std::string::npos) << knob << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(Cli, RunExitCodesTellMismatchFromCompileError) {
  // f32 cannot match a double-precision reference to 1e-15: the output is reported, exit 1.
  auto r = run_cli({"run", "--target", "sim", "--rtol", "1e-15", "-c", kRmsNorm});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("  MISMATCH\n"), std::string::npos) << r.out;
  // A program that does not compile never runs: exit 2, with the location.
  r = run_cli({"run", "--target", "sim", "-c", "torch.randn(4,6) @@ 2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("<-c>:1:"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// A tensor under the frontend's element cap can still be far beyond memory: run refuses it up
// front with the figures instead of dying in an allocation.
TEST(Cli, RunRefusesProgramsBeyondTheMemoryLimit) {
  auto r = run_cli({"run", "--target", "sim", "-c", "torch.randn(1000000,1000000)"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("of host memory (tensor 'x' alone needs 7.3 TB as doubles); the limit is "),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(--memory-limit GB)"), std::string::npos) << r.err;
  r = run_cli({"run", "--target", "sim", "--memory-limit", "0.001", "-c", "torch.randn(1000,1000) * 2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the limit is 1.0 MB"), std::string::npos) << r.err;
  r = run_cli({"run", "--target", "sim", "--memory-limit", "1", "-c", "torch.randn(100,100) * 2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"run", "--target", "sim", "--memory-limit", "-1", "-c", "torch.randn(4) * 2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(Cli, RunOnCudaWithoutAGpuFailsCleanly) {
  auto r = run_cli({"run", "--target", "cuda", "-c", kRmsNorm});
  if (r.exit_code == 0) GTEST_SKIP() << "a GPU is present: the cuda target ran";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: tessera run: target 'cuda' cannot run here: "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, PrintPipelineRoundTrips) {
  TempDir tmp;
  auto first = run_cli({"compile", "--print-pipeline"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("canonicalize"), std::string::npos) << first.out;
  auto again = run_cli({"compile", "--print-pipeline", "--pipeline", tmp.write("eff.yaml", first.out)});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(first.out, again.out);
}

TEST(Cli, PipelineErrorsNameFileLineColumnAndOffender) {
  TempDir tmp;
  struct Case {
    std::string yaml, expect_loc, expect_text;
  };
  std::vector<Case> cases = {
      {"name: bad\nstages:\n  torch: [canonicalize\n", "p.yaml:", "invalid YAML"},
      {"name: bad\nstages:\n  torch:\n    - canonicalise\n", "p.yaml:4:7", "unknown pass 'canonicalise'"},
      {"name: bad\nstages:\n  loop:\n    - fixture_noop: {width: big}\n", "p.yaml:4:", "'width'"},
      {"name: bad\nstagse: {}\n", "p.yaml:2:1", "'stagse'"},
  };
  for (const auto& c : cases) {
    auto p = tmp.write("p.yaml", c.yaml);
    auto r = run_cli({"compile", "--plugin", std::string(TESSERA_FIXTURE_DIR) + "/libfixture_pass.so", "--pipeline", p,
                      "-c", kRmsNorm});
    EXPECT_EQ(r.exit_code, 1) << c.yaml;
    EXPECT_NE(r.err.find(c.expect_loc), std::string::npos) << c.yaml << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect_text), std::string::npos) << c.yaml << "\n" << r.err;
  }
}

TEST(Cli, WrongApiPluginIsRefusedWithBothVersions) {
  auto r = run_cli({"plugins", "--plugin", std::string(TESSERA_FIXTURE_DIR) + "/libwrong_api.so"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("libwrong_api.so"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("999"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("host API version " + std::to_string(tessera::kPluginApiVersion)), std::string::npos) << r.err;
}

TEST(Cli, PluginsListsBuiltPluginsAndKnobs) {
  auto r = run_cli({"plugins", "--plugin", std::string(TESSERA_FIXTURE_DIR) + "/libfixture_pass.so"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("plugin canonicalize"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("frontend torch_expr"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass fixture_noop"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("knob width (int"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("knob enabled (bool"), std::string::npos) << r.out;
}

TEST(Cli, PluginPathEnvironmentAddsDirectories) {
  auto r = run_cli({"passes"}, {{"TESSERA_PLUGIN_PATH", std::string(TESSERA_FIXTURE_DIR) + "/nonexistent"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("probe_choose"), std::string::npos);
  TempDir dir;
  fs::copy_file(kProbe, dir.path() + "/libpipeline_probe.so");
  r = run_cli({"passes"}, {{"TESSERA_PLUGIN_PATH", dir.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("pass probe_choose"), std::string::npos) << r.out;
}

TEST(Cli, PinnedKnobFromYamlIsRecordedOnTheNode) {
  TempDir tmp;
  auto pinned = tmp.write("pinned.yaml", "name: pinned\nstages:\n  torch:\n    - probe_choose: {BLOCK: 128}\n");
  auto heur = tmp.write("heur.yaml", "name: heur\nstages:\n  torch: [probe_choose]\n");
  auto a = run_cli({"compile", "--plugin", kProbe, "--pipeline", pinned, "-c", kRmsNorm});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("probe_choose.BLOCK=128 (pinned)"), std::string::npos) << a.out;
  auto b = run_cli({"compile", "--plugin", kProbe, "--pipeline", heur, "-c", kRmsNorm});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("probe_choose.BLOCK=64 (heuristic)"), std::string::npos) << b.out;
  auto bad = tmp.write("bad.yaml", "name: bad\nstages:\n  torch:\n    - probe_choose: {BLOCK: 100}\n");
  auto c = run_cli({"compile", "--plugin", kProbe, "--pipeline", bad, "-c", kRmsNorm});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.err.find("bad.yaml:4:"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("100"), std::string::npos) << c.err;
}

TEST(Cli, VeryVerbosePrintsSkipsAndPassLines) {
  TempDir tmp;
  auto p = tmp.write("p.yaml", "name: p\nstages:\n  torch: [probe_choose, canonicalize]\n");
  auto r = run_cli({"compile", "--plugin", kProbe, "--pipeline", p, "-c", kRmsNorm, "-vv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(">>> g:001_probe_choose"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<<< g:001_probe_choose"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--- g:001_probe_choose skipped at x: not a compute node"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[g:002_canonicalize]"), std::string::npos) << r.err;
}

TEST(Cli, DumpDirHoldsEveryStageAsTextAndJson) {
  TempDir tmp;
  auto r = run_cli({"compile", "-c", kRmsNorm, "--ir", "loop", "--dump-dir", tmp.path() + "/dump"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (std::string f : {"0_input.txt", "0_input.json", "1_torch.txt", "1_torch.json", "2_tensor.txt",
                        "2_tensor.json", "3_loop.txt", "3_loop.json"})
    EXPECT_TRUE(fs::exists(tmp.path() + "/dump/" + f)) << f;
  EXPECT_NE(read_file(tmp.path() + "/dump/1_torch.txt").find("= rms_norm(x, p_weight"), std::string::npos);
  EXPECT_NE(read_file(tmp.path() + "/dump/2_tensor.txt").find("rms_norm_sq = mul(x, x)"), std::string::npos);
  EXPECT_EQ(read_file(tmp.path() + "/dump/3_loop.txt"), r.out);
  // A dumped stage reloads and prints identically.
  auto again = run_cli({"compile", "--from-ir", tmp.path() + "/dump/3_loop.json", "--ir", "loop"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
}

TEST(Cli, FromIrReadsPrintedIrAndResumesThePipeline) {
  TempDir tmp;
  auto loop = run_cli({"compile", "-c", kRmsNorm, "--ir", "loop"});
  ASSERT_EQ(loop.exit_code, 0) << loop.err;
  // The printed text is detected by content (not `{`), whatever the file is called.
  const std::string file = tmp.write("rms_norm.json.txt", loop.out);
  auto again = run_cli({"compile", "--from-ir", file, "--ir", "loop"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, loop.out);
  // Resuming from the printed Loop IR gives what the whole pipeline gives.
  auto resumed = run_cli({"compile", "--from-ir", file, "--ir", "kernel"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, run_cli({"compile", "-c", kRmsNorm, "--ir", "kernel"}).out);

  auto bad = run_cli({"compile", "--from-ir", tmp.write("bad.tir", "x: (4,) float32\n\n"
                                                                  "=== k(x) -> y: (4,) float32 ===\n"
                                                                  "  in0 = load q[0]\n\nreturn y\n")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad.tir:4:14: error: unknown buffer 'q'"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("    in0 = load q[0]\n               ^"), std::string::npos) << bad.err;
}

TEST(Cli, PassFailureNamesPassNodeAndWritesAReproducer) {
  TempDir tmp;
  auto p = tmp.write("p.yaml", "name: failing\nstages:\n  torch: [canonicalize, probe_fail]\n");
  const std::string repro = tmp.path() + "/repro";
  auto r = run_cli({"compile", "--plugin", kProbe, "--pipeline", p, "-c", kRmsNorm, "--dump-dir", tmp.path() + "/d"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("in pass g:002_probe_fail at node"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("probe_fail refuses this node"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reproducer written to"), std::string::npos) << r.err;
  const std::string dir = tmp.path() + "/d/reproducer";
  ASSERT_TRUE(fs::exists(dir + "/input.json")) << r.err;
  ASSERT_TRUE(fs::exists(dir + "/pipeline.yaml")) << r.err;
  // Replaying the reproducer fails the same way.
  auto replay = run_cli({"compile", "--plugin", kProbe, "--from-ir", dir + "/input.json", "--pipeline", dir + "/pipeline.yaml"});
  EXPECT_EQ(replay.exit_code, 1);
  EXPECT_NE(replay.err.find("probe_fail refuses this node"), std::string::npos) << replay.err;
}

TEST(Cli, TimePassesPrintsATableOnStderr) {
  auto r = run_cli({"compile", "-c", kRmsNorm, "--time-passes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("pass execution time"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("g:001_canonicalize"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, run_cli({"compile", "-c", kRmsNorm}).out);  // stdout is unchanged
}

TEST(Cli, PrintIrAfterNamedPassAndAfterAll) {
  TempDir tmp;
  auto p = tmp.write("p.yaml", "name: p\nstages:\n  torch: [probe_choose, canonicalize]\n");
  auto one = run_cli({"compile", "--plugin", kProbe, "--pipeline", p, "-c", kRmsNorm, "--print-ir-after", "probe_choose"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("// ----- IR after g:001_probe_choose -----"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("IR after g:002_canonicalize"), std::string::npos) << one.out;
  auto all = run_cli({"compile", "--plugin", kProbe, "--pipeline", p, "-c", kRmsNorm, "--print-ir-after-all"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_NE(all.out.find("IR after g:001_probe_choose"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("IR after g:002_canonicalize"), std::string::npos) << all.out;
  auto unknown = run_cli({"compile", "-c", kRmsNorm, "--print-ir-after", "no_such_pass"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown pass 'no_such_pass'"), std::string::npos) << unknown.err;
}

TEST(Cli, VerifyEachCatchesAPassThatBreaksTheIr) {
  TempDir tmp;
  auto p = tmp.write("p.yaml", "name: p\nstages:\n  torch: [probe_break]\n");
  auto plain = run_cli({"compile", "--plugin", kProbe, "--pipeline", p, "-c", kRmsNorm});
  auto checked = run_cli({"compile", "--plugin", kProbe, "--pipeline", p, "-c", kRmsNorm, "--verify-each"});
  // Without --verify-each the end-of-stage verification still catches it; with it, the error names
  // the pass that broke the IR.
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_NE(plain.err.find("does not verify"), std::string::npos) << plain.err;
  EXPECT_EQ(checked.exit_code, 1);
  EXPECT_NE(checked.err.find("in pass g:001_probe_break"), std::string::npos) << checked.err;
  EXPECT_NE(checked.err.find("IR does not verify after the pass"), std::string::npos) << checked.err;
}

TEST(Cli, OutputFileAndJsonEmission) {
  TempDir tmp;
  const std::string file = tmp.path() + "/out.json";
  auto r = run_cli({"compile", "-c", kRmsNorm, "--emit", "json", "-o", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  const std::string json = read_file(file);
  EXPECT_NE(json.find("\"version\": 3"), std::string::npos) << json;
  auto back = run_cli({"compile", "--from-ir", file, "--ir", "torch"});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out, run_cli({"compile", "-c", kRmsNorm}).out);
  auto bad = run_cli({"compile", "--from-ir", tmp.write("bad.json", "{\"version\": 2, \"nodes\": [{}]}")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("nodes[0]"), std::string::npos) << bad.err;
}

TEST(Cli, AbComparesTwoPipelines) {
  TempDir tmp;
  auto a = tmp.write("a.yaml", "name: a\nstages:\n  torch:\n    - probe_choose: {BLOCK: 32}\n");
  auto b = tmp.write("b.yaml", "name: b\nstages:\n  torch:\n    - probe_choose: {BLOCK: 128}\n");
  auto r = run_cli({"ab", a, b, "--plugin", kProbe, "-c", kRmsNorm});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("-# knobs: probe_choose.BLOCK=32 (pinned)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+# knobs: probe_choose.BLOCK=128 (pinned)"), std::string::npos) << r.out;
}

TEST(Cli, FrontendErrorsShowLocationAndCaret) {
  auto r = run_cli({"compile", "-c", "nn.RMSNrom(2048)(torch.randn(1,32,2048))"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("<-c>:1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("RMSNrom"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("^"), std::string::npos) << r.err;
}

// -f FILE reads the program from a file, as -c takes it inline: the same IR, and errors located
// in the file (FILE:line:col with the line and a caret).
TEST(Cli, ProgramFromAFile) {
  TempDir tmp;
  const std::string program = tmp.write("rms.py", std::string("# an RMSNorm\n") + kRmsNorm + "\n");
  auto inline_ir = run_cli({"compile", "-c", kRmsNorm, "--ir", "loop"});
  ASSERT_EQ(inline_ir.exit_code, 0) << inline_ir.err;
  for (const char* flag : {"-f", "--file"}) {
    auto from_file = run_cli({"compile", flag, program, "--ir", "loop"});
    ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
    EXPECT_EQ(from_file.out, inline_ir.out);
  }
  auto r = run_cli({"run", "-f", program, "--target", "sim"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  const std::string bad = tmp.write("bad.py", "x = torch.randn(1, 32, 2048)\ny = nn.RMSNrom(2048)(x)\ny\n");
  r = run_cli({"compile", "-f", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(bad + ":2:8: error: torch.nn has no module 'RMSNrom'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("y = nn.RMSNrom(2048)(x)\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("^"), std::string::npos) << r.err;

  r = run_cli({"compile", "-f", tmp.path() + "/missing.py"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("-f " + tmp.path() + "/missing.py: cannot read the file"), std::string::npos) << r.err;
  r = run_cli({"compile", "-f", program, "-c", kRmsNorm});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("give one program: -f FILE, -c EXPR, --from-ir FILE or a MODEL, not several"),
            std::string::npos)
      << r.err;
  r = run_cli({"compile", "-f", tmp.write("empty.py", "\n")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("empty.py: error: the program file is empty"), std::string::npos) << r.err;
}

// scripts/sanitize.sh gives sanitizer reports the exit code the runner recognises, one no tessera
// command uses: with ASan's default (1) a test expecting an error's exit 1 passed on an abort.
TEST(Cli, SanitizerReportsExitWithACodeNoCommandUses) {
  const std::string script = read_file(TESSERA_SOURCE_DIR "/scripts/sanitize.sh");
  const std::string code = "exitcode=" + std::to_string(kSanitizerExitCode);
  for (const char* variable : {"export ASAN_OPTIONS=\"", "export UBSAN_OPTIONS=\""}) {
    const size_t at = script.find(variable);
    ASSERT_NE(at, std::string::npos) << variable;
    const std::string options = script.substr(at, script.find('\n', at) - at);
    EXPECT_NE(options.find(code), std::string::npos) << options;
  }
  for (int tessera_code : {0, 1, 2}) EXPECT_NE(kSanitizerExitCode, tessera_code);
}

// A pinned knob no pass asks for (register_tile's TN on an RMSNorm, which has no tile of threads
// to register-block) changed nothing: a warning at the pin says so, with the pass's skips; a pin
// that is used draws none.
TEST(Cli, PinnedKnobThatNoPassAsksForIsAWarning) {
  TempDir tmp;
  const std::string stages =
      "name: pins\nstages:\n  torch: [canonicalize]\n  tensor: [decompose, compose_index_maps, canonicalize]\n"
      "  loop: [lift, fuse, dedup_loads, canonicalize]\n  tile:\n    - tileify\n";
  auto unused = tmp.write("unused.yaml", stages + "    - launch_geometry\n    - register_tile: {TN: 2}\n");
  auto r = run_cli({"compile", "--pipeline", unused, "-c", kRmsNorm, "--ir", "tile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(unused + ":9:23: warning: pinned knob 'TN: 2' of pass 'register_tile' had no effect: the pass "
                                "chose TN for no kernel of this program\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("note: register_tile skipped 'rms_norm': "), std::string::npos) << r.err;

  auto used = tmp.write("used.yaml", stages + "    - launch_geometry: {BN: 1}\n");
  r = run_cli({"compile", "--pipeline", used, "-c", kRmsNorm, "--ir", "tile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("launch_geometry.BN=1 (pinned)"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

}  // namespace

// End-to-end tests of `tessera run --save-io` and `tessera bench` through the CLI: the IO file of a
// simulator run holds the inputs, parameters and outputs bit for bit under their Torch IR names;
// `bench --dry-run` compiles the fixture suite through NVRTC; `bench` without a GPU stops with a
// clear message; usage and suite errors exit as documented.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "framework/src/eval/safetensors_file.h"
#include "plugins/targets/cuda/tensor_bytes.h"
#include "support/built_plugins.h"
#include "support/cli_runner.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"

namespace tessera {
namespace {

using test::read_file;
using test::run_cli;
using test::TempDir;

const std::string kFixtureSuite = std::string(TESSERA_SOURCE_DIR) + "/tests/bench/suite_fixture.yaml";

const std::string kProgram = R"(import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm(64)
        self.up = nn.Linear(64, 32, bias=False)

    def forward(self, x, y):
        return self.up(self.norm(x)) * y

Block()(torch.randn(2, 4, 64), torch.rand(2, 4, 32))
)";

class SaveIo : public test::BuiltPluginsTest {};

TEST_F(SaveIo, RunWritesInputsParamsAndOutputsBitForBit) {
  ASSERT_TRUE(load_error_.empty()) << load_error_;
  TempDir tmp;
  const std::string path = tmp.path() + "/io.safetensors";
  auto r = run_cli({"run", "--target", "sim", "--seed", "3", "--save-io", path, "-c", kProgram});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Expected<SafetensorsFile> file = read_safetensors_file(path);
  ASSERT_TRUE(file) << file.error().render();

  const Graph torch = trace(kProgram);
  const ValueMap inputs = make_inputs(torch, 3);
  // Metadata: names in order, parameter paths, the program.
  EXPECT_EQ(file->metadata.at("tessera.inputs"), R"(["x","x_1"])");
  EXPECT_EQ(file->metadata.at("tessera.params"), R"({"p_norm_weight":"norm.weight","p_up_weight":"up.weight"})");
  ASSERT_EQ(torch.outputs().size(), 1u);
  EXPECT_EQ(file->metadata.at("tessera.outputs"), "[\"" + torch.outputs()[0] + "\"]");
  EXPECT_EQ(file->metadata.at("tessera.program"), kProgram);
  ASSERT_EQ(file->tensors.size(), 5u);

  // Inputs and parameters: exactly the data every backend uses.
  for (const char* name : {"x", "x_1"}) {
    const SafetensorsTensor* t = file->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->dtype, DType::F32);
    EXPECT_EQ(t->bytes, TensorBytes::encode(inputs.at(name))) << name;
  }
  EXPECT_EQ(file->find("x")->shape, (std::vector<int64_t>{2, 4, 64}));
  for (const Node* n : torch.nodes())
    if (const auto* c = n->op_as<ConstantOp>()) {
      const SafetensorsTensor* t = file->find(n->id());
      ASSERT_NE(t, nullptr) << n->id();
      Expected<TensorValue> v = constant_data(*c, n->type);
      ASSERT_TRUE(v);
      EXPECT_EQ(t->bytes, TensorBytes::encode(*v)) << n->id();
    }
  // The output: what the simulator computed, within tolerance of the reference.
  const std::string out = torch.outputs()[0];
  const SafetensorsTensor* t = file->find(out);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 4, 32}));
  auto expected = evaluate_reference(torch, inputs);
  ASSERT_TRUE(expected);
  Expected<TensorValue> got = TensorBytes::decode(t->bytes, expected->at(out).type);
  ASSERT_TRUE(got);
  ValueMap actual{{out, *got}};
  auto cmp = compare_output(*expected, actual, out);
  ASSERT_TRUE(cmp);
  EXPECT_TRUE(cmp->within(1e-4)) << cmp->str();
}

TEST_F(SaveIo, Bf16TensorsAreStoredAsBf16) {
  TempDir tmp;
  const std::string path = tmp.path() + "/io.safetensors";
  const std::string program = "torch.randn(8, 16, dtype=torch.bfloat16) * 2";
  auto r = run_cli({"run", "--target", "sim", "--save-io", path, "-c", program});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Expected<SafetensorsFile> file = read_safetensors_file(path);
  ASSERT_TRUE(file) << file.error().render();
  const SafetensorsTensor* x = file->find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->dtype, DType::BF16);
  EXPECT_EQ(x->bytes.size(), 8u * 16u * 2u);
  const Graph torch = trace(program);
  EXPECT_EQ(x->bytes, TensorBytes::encode(make_inputs(torch, 0).at("x")));
  const SafetensorsTensor* y = file->find(torch.outputs()[0]);
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->dtype, DType::BF16);
  // x * 2 is exact in bf16: every output element is its input's bits with the exponent raised.
  Expected<TensorValue> xv = TensorBytes::decode(x->bytes, {{8, 16}, DType::BF16});
  Expected<TensorValue> yv = TensorBytes::decode(y->bytes, {{8, 16}, DType::BF16});
  ASSERT_TRUE(xv && yv);
  for (size_t i = 0; i < xv->data.size(); ++i) EXPECT_EQ(yv->data[i], 2 * xv->data[i]) << i;
}

TEST(SaveIoErrors, UnwritablePathIsAnError) {
  auto r = run_cli({"run", "--target", "sim", "--save-io", "/nonexistent-dir/io.safetensors", "-c",
                    "torch.relu(torch.randn(4))"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: tessera run --save-io: /nonexistent-dir/io.safetensors: error: cannot write the file"),
            std::string::npos)
      << r.err;
}

TEST(BenchCli, WithoutAGpuStopsWithAClearMessage) {
  TempDir tmp;
  auto r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "quick", "--out", tmp.path()});
  if (r.exit_code == 0) GTEST_SKIP() << "a GPU is present: the suite ran";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: tessera bench needs a GPU: no CUDA driver / GPU found: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--dry-run compiles the suite without one"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/report.md"));
}

TEST(BenchCli, UsageErrors) {
  auto r = run_cli({"bench", "--tier", "quick"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give the suite file: --suite bench/suite.yaml"), std::string::npos) << r.err;
  r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "slow"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tier must be quick or full, got 'slow'"), std::string::npos) << r.err;
  r = run_cli({"bench", "--suite", kFixtureSuite, "--baseline-mode", "reduce-overhead"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--baseline-mode must be default, max-autotune or none, got 'reduce-overhead'"), std::string::npos)
      << r.err;
  r = run_cli({"bench", "--suite", kFixtureSuite, "--baseline-every", "-1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--baseline-every must be >= 0"), std::string::npos) << r.err;
  r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "full", "--entries", "fixture-decode-f32-softmx"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'fixture-decode-f32-softmax'?"), std::string::npos) << r.err;
  r = run_cli({"bench", "--suite", kFixtureSuite, "--target", "tpu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--target must be cuda or sim, got 'tpu'"), std::string::npos) << r.err;
  r = run_cli({"bench", "--suite", kFixtureSuite, "--target", "sim", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dry-run compiles for the cuda target"), std::string::npos) << r.err;
}

TEST(BenchCli, InvalidSuiteIsALocatedError) {
  TempDir tmp;
  const std::string suite = tmp.write("suite.yaml", "version: 1\nentries:\n  - id: x\n    famly: norm\n");
  auto r = run_cli({"bench", "--suite", suite, "--dry-run"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(suite + ":4:5: error: unknown key 'famly' in an entry"), std::string::npos) << r.err;
}

const std::string kFakeBaseline = std::string(TESSERA_SOURCE_DIR) + "/tests/bench/fake_pytorch_baseline.py";

bool have_python3() { return std::system("python3 -c pass > /dev/null 2>&1") == 0; }

// The whole flow without a GPU: the sim target runs and checks every entry and saves its IO, the
// baseline script is called once for all of them, and the report joins both. (--keep-io: the IO
// files are read back below.)
TEST(BenchCli, SimTargetRunsChecksSavesIoAndReports) {
  if (!have_python3()) GTEST_SKIP() << "python3 is not on PATH (the baseline script needs it)";
  TempDir tmp;
  auto r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "full", "--target", "sim", "--out", tmp.path(),
                    "--baseline-script", kFakeBaseline, "--baseline-mode", "max-autotune", "--iterations", "7",
                    "--keep-io"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("report: " + tmp.path() + "/report.md"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("bench: [2/3] fixture-decode-f32-softmax: check pass, not timed; host s: compile "), std::string::npos)
      << r.err;

  // The baseline got every entry, the IO directory, the mode and the iterations.
  const nlohmann::json args = nlohmann::json::parse(read_file(tmp.path() + "/baseline.json.args"));
  const std::vector<std::string> expected_args = {
      "--suite", kFixtureSuite, "--tier", "full", "--entries",
      "fixture-prefill16-f32-rmsnorm,fixture-decode-f32-softmax,fixture-prefill8-bf16-proj", "--io-dir",
      tmp.path() + "/io", "--mode", "max-autotune", "--iterations", "7", "--out", tmp.path() + "/baseline.json"};
  EXPECT_EQ(args.get<std::vector<std::string>>(), expected_args);
  EXPECT_NE(read_file(tmp.path() + "/baseline.log").find("fake_pytorch_baseline: 3 entries"), std::string::npos);

  // Every entry's IO file reads back with its metadata.
  for (const char* id : {"fixture-prefill16-f32-rmsnorm", "fixture-decode-f32-softmax", "fixture-prefill8-bf16-proj"}) {
    Expected<SafetensorsFile> io = read_safetensors_file(tmp.path() + "/io/" + id + ".safetensors");
    ASSERT_TRUE(io) << io.error().render();
    EXPECT_EQ(io->metadata.at("tessera.inputs"), R"(["x"])") << id;
    EXPECT_NE(io->metadata.at("tessera.program").find("import torch"), std::string::npos) << id;
  }
  Expected<SafetensorsFile> proj = read_safetensors_file(tmp.path() + "/io/fixture-prefill8-bf16-proj.safetensors");
  ASSERT_TRUE(proj);
  EXPECT_EQ(proj->find("p_q_weight")->dtype, DType::BF16);
  EXPECT_EQ(proj->metadata.at("tessera.params"), R"({"p_q_weight":"q.weight"})");

  const nlohmann::json report = nlohmann::json::parse(read_file(tmp.path() + "/report.json"));
  EXPECT_TRUE(report["baseline"]["available"].get<bool>());
  EXPECT_EQ(report["baseline"]["torch"], "0.0-fake");
  EXPECT_EQ(report["baseline"]["mode"], "max-autotune");
  ASSERT_EQ(report["entries"].size(), 3u);
  for (const auto& e : report["entries"]) {
    EXPECT_TRUE(e["tessera"]["ran"].get<bool>()) << e.dump(2);
    EXPECT_FALSE(e["tessera"]["timed"].get<bool>());
    EXPECT_EQ(e["tessera"]["check"]["status"], "pass") << e.dump(2);
    EXPECT_EQ(e["pytorch"]["eager_us"], 2.0);
    EXPECT_EQ(e["output_check"], "pass");
    EXPECT_GT(e["tessera"]["bytes"].get<double>(), 0);
  }
  EXPECT_EQ(report["entries"][1]["tessera"]["flops"], 10240.0);  // the suite's flops:
  EXPECT_EQ(report["entries"][1]["tessera"]["flops_source"], "suite");
  EXPECT_EQ(report["entries"][0]["tessera"]["flops_source"], "kernel IR");

  const std::string md = read_file(tmp.path() + "/report.md");
  EXPECT_NE(md.find("- PyTorch 0.0-fake (CUDA none), torch.compile mode `max-autotune`"), std::string::npos) << md;
  EXPECT_NE(md.find("| `fixture-decode-f32-softmax` | softmax | not timed | 2.000 | 1.000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Plot\n\nPlot skipped: "), std::string::npos) << md;
}

// --baseline-every N runs the baseline after every N entries (and after the last), each batch on
// the entries measured since the one before; each IO file is deleted once the baseline read it;
// the host-side phases of every entry are in report.json; --baseline-mode none is passed on.
TEST(BenchCli, BaselineEveryNEntriesThenTheIoFilesGo) {
  if (!have_python3()) GTEST_SKIP() << "python3 is not on PATH (the baseline script needs it)";
  TempDir tmp;
  auto r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "full", "--target", "sim", "--out", tmp.path(),
                    "--baseline-script", kFakeBaseline, "--baseline-every", "2", "--baseline-mode", "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json first = nlohmann::json::parse(read_file(tmp.path() + "/baseline.json.args"));
  const nlohmann::json second = nlohmann::json::parse(read_file(tmp.path() + "/baseline-2.json.args"));
  EXPECT_EQ(first[5], "fixture-prefill16-f32-rmsnorm,fixture-decode-f32-softmax") << first.dump();
  EXPECT_EQ(second[5], "fixture-prefill8-bf16-proj") << second.dump();
  EXPECT_EQ(first[9], "none") << first.dump();
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/baseline-3.json"));
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path() + "/io"));
  const std::string md = read_file(tmp.path() + "/report.md");
  EXPECT_NE(md.find("- Note: the IO files of 3 entries were deleted once the baseline had read them (--keep-io keeps them)"),
            std::string::npos)
      << md;
  const nlohmann::json report = nlohmann::json::parse(read_file(tmp.path() + "/report.json"));
  for (const auto& e : report["entries"]) {
    for (const char* phase : {"params", "reference", "run", "save_io"})
      EXPECT_GE(e["tessera"]["host_s"][phase].get<double>(), 0) << e.dump(2);
  }
  EXPECT_NE(r.err.find("; host s: compile "), std::string::npos) << r.err;
}

// Past --io-limit the baseline runs on the pending entries and their IO files are deleted, so the
// full suite's files (tens of GB) never sit on the disk at once.
TEST(BenchCli, BaselineRunsInBatchesBeyondTheIoLimit) {
  if (!have_python3()) GTEST_SKIP() << "python3 is not on PATH (the baseline script needs it)";
  TempDir tmp;
  auto r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "full", "--target", "sim", "--out", tmp.path(),
                    "--baseline-script", kFakeBaseline, "--io-limit", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file : {"/baseline.json", "/baseline-2.json", "/baseline-3.json", "/baseline-3.log"})
    EXPECT_TRUE(std::filesystem::exists(tmp.path() + file)) << file;
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path() + "/io"));
  const nlohmann::json report = nlohmann::json::parse(read_file(tmp.path() + "/report.json"));
  for (const auto& e : report["entries"]) EXPECT_EQ(e["pytorch"]["compiled_us"], 1.0) << e.dump(2);
  const std::string md = read_file(tmp.path() + "/report.md");
  EXPECT_NE(md.find("- Note: the IO files of 3 entries were deleted once the baseline had read them (--io-limit 0 GB)"),
            std::string::npos)
      << md;

  r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "full", "--target", "sim", "--out", tmp.path(),
               "--baseline-script", kFakeBaseline, "--io-limit", "0"},
              {{"FAKE_BASELINE_EXIT", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(tmp.path() + "/report.md").find("nothing measured) (and in 2 more batches))"), std::string::npos)
      << read_file(tmp.path() + "/report.md");
}

TEST(BenchCli, BaselineThatMeasuresNothingLeavesItsColumnsNotAvailable) {
  if (!have_python3()) GTEST_SKIP() << "python3 is not on PATH (the baseline script needs it)";
  TempDir tmp;
  auto r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "quick", "--target", "sim", "--out", tmp.path(),
                    "--baseline-script", kFakeBaseline},
                   {{"FAKE_BASELINE_EXIT", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: tessera bench: PyTorch baseline n/a: the baseline measured nothing "
                       "(fake_pytorch_baseline: PyTorch is not installed; nothing measured)"),
            std::string::npos)
      << r.err;
  const std::string md = read_file(tmp.path() + "/report.md");
  EXPECT_NE(md.find("- PyTorch baseline: n/a (the baseline measured nothing"), std::string::npos) << md;
  EXPECT_NE(md.find("| `fixture-prefill16-f32-rmsnorm` | norm | not timed | n/a | n/a |"), std::string::npos) << md;
}

TEST(BenchCli, MissingPythonOrScriptLeavesTheBaselineNotAvailable) {
  TempDir tmp;
  auto r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "quick", "--target", "sim", "--entries",
                    "fixture-prefill16-f32-rmsnorm", "--out", tmp.path(), "--baseline-script", kFakeBaseline},
                   {{"PATH", tmp.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string md = read_file(tmp.path() + "/report.md");
  EXPECT_NE(md.find("- PyTorch baseline: n/a (python3 is not on PATH)"), std::string::npos) << md;
  EXPECT_NE(md.find("Plot skipped: python3 is not on PATH."), std::string::npos) << md;

  if (!have_python3()) return;
  r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "quick", "--target", "sim", "--entries",
               "fixture-prefill16-f32-rmsnorm", "--out", tmp.path(), "--baseline-script", tmp.path() + "/none.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  md = read_file(tmp.path() + "/report.md");
  EXPECT_NE(md.find("- PyTorch baseline: n/a (the baseline script " + tmp.path() + "/none.py was not found"),
            std::string::npos)
      << md;
}

TEST(BenchCli, AFailingEntryIsReportedAndTheExitCodeSaysSo) {
  TempDir tmp;
  std::string text = read_file(kFixtureSuite);
  text.replace(text.find("torch.softmax(torch.randn"), 13, "torch.softmux");
  const std::string suite = tmp.write("suite.yaml", text);
  auto r = run_cli({"bench", "--suite", suite, "--tier", "full", "--target", "sim", "--out", tmp.path() + "/out",
                    "--baseline-script", tmp.path() + "/none.py"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("bench: [2/3] fixture-decode-f32-softmax: FAILED"), std::string::npos) << r.err;
  const std::string md = read_file(tmp.path() + "/out/report.md");
  EXPECT_NE(md.find("Failed in Tessera (1, left out of the geomeans):\n\n- `fixture-decode-f32-softmax`: compile: "),
            std::string::npos)
      << md;
  EXPECT_TRUE(std::filesystem::exists(tmp.path() + "/out/io/fixture-prefill16-f32-rmsnorm.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/out/io/fixture-decode-f32-softmax.safetensors"));
}

TEST(BenchCli, ReferenceCheckIsSkippedAboveTheLimit) {
  TempDir tmp;
  auto r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "quick", "--target", "sim", "--entries",
                    "fixture-prefill8-bf16-proj", "--reference-limit", "0", "--out", tmp.path(),
                    "--baseline-script", tmp.path() + "/none.py"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(read_file(tmp.path() + "/report.json"));
  const auto& check = report["entries"][0]["tessera"]["check"];
  EXPECT_EQ(check["status"], "skipped");
  EXPECT_NE(check["detail"].get<std::string>().find("GFLOP in double precision (limit 0, --reference-limit); the "
                                                    "output check is PyTorch's"),
            std::string::npos)
      << check.dump();
  EXPECT_EQ(report["entries"][0]["output_check"], "unchecked");
}

#if TESSERA_HAVE_CUDA
TEST(BenchCli, DryRunCompilesEveryEntryThroughNvrtc) {
  TempDir tmp;
  auto r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "full", "--dry-run", "--cache-dir", tmp.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* id : {"fixture-prefill16-f32-rmsnorm", "fixture-decode-f32-softmax", "fixture-prefill8-bf16-proj"})
    EXPECT_NE(r.out.find(std::string(id) + "  "), std::string::npos) << id << "\n" << r.out;
  EXPECT_NE(r.out.find("fixture-prefill16-f32-rmsnorm  norm f32  1 kernel\n  k_rms_norm_reduce  grid=(16, 1, 1) block="),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("bench --dry-run: [3/3] fixture-prefill8-bf16-proj: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ETA"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dry run: 3 entries"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("compiled for sm_90"), std::string::npos) << r.err;

  // Another arch, and the quick tier only.
  r = run_cli({"bench", "--suite", kFixtureSuite, "--tier", "quick", "--dry-run", "--arch", "sm_80", "--cache-dir",
               tmp.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("fixture-decode-f32-softmax"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("compiled for sm_80"), std::string::npos) << r.err;
}

TEST(BenchCli, DryRunListsEveryEntryThatFails) {
  TempDir tmp;
  std::string text = read_file(kFixtureSuite);
  // Two broken programs: a syntax error and an unknown function.
  text.replace(text.find("nn.RMSNorm(256)(torch.randn(1, 16, 256))"), 40, "nn.RMSNorm(256)(torch.randn(1, 16, 256)");
  text.replace(text.find("torch.softmax(torch.randn"), 13, "torch.softmux");
  const std::string suite = tmp.write("suite.yaml", text);
  auto r = run_cli({"bench", "--suite", suite, "--tier", "full", "--dry-run", "--cache-dir", tmp.path()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("fixture-prefill16-f32-rmsnorm  FAILED: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fixture-decode-f32-softmax  FAILED: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fixture-prefill8-bf16-proj  projection bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("<fixture-decode-f32-softmax>:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 of 3 entries failed to compile for sm_90: fixture-prefill16-f32-rmsnorm, "
                       "fixture-decode-f32-softmax"),
            std::string::npos)
      << r.err;
}
#endif

}  // namespace
}  // namespace tessera

// The pieces of tessera_kernel_bench and `tessera ab --bench` that run without a GPU (its suite
// reader is `tessera bench`'s, tested in bench_suite_reader_test.cpp): the cuda plugin's timing extension
// found in the loaded plugin file and refusing to open without a driver, and `ab --bench` failing
// with one clear line. With a GPU: a TimedProgram times every kernel and the whole program, its
// outputs match the reference, and `ab --bench` of one pipeline against itself finds no difference.
// (The binary itself is checked by the ctests kernel_bench_*, bench/check_kernel_bench.cmake.)
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <memory>
#include <string>
#include <vector>

#include "plugins/targets/cuda/timing_extension.h"
#include "support/built_plugins.h"
#include "support/cli_runner.h"
#include "support/test_paths.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/op.h"
#include "tessera/pass/pipeline.h"

namespace tessera {
namespace {

constexpr const char* kSoftmax = "x=torch.randn(4,6); torch.softmax(x, -1)";
// The installed pipeline (share/tessera beside the binary), so the tests also run from a bundle on
// a machine without this source tree.
const std::string kDefaultPipeline = test::default_pipeline_path();

bool driver_library_present() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

// ---- the timing extension ----------------------------------------------------------------------

class TimingExtensionTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override { ASSERT_TRUE(load_error_.empty()) << load_error_; }
  Graph lower_to_cuda(const Graph& reference) {
    Graph g = reference;
    Expected<PipelineSpec> spec = load_pipeline_file(kDefaultPipeline);
    EXPECT_TRUE(spec) << spec.error().render();
    if (!spec) return Graph();
    Status s = lower(g, *spec, Dialect::Cuda, h100());
    EXPECT_TRUE(s) << s.message();
    return g;
  }
};

TEST_F(TimingExtensionTest, FoundInTheLoadedCudaPlugin) {
  Expected<const TimingExtension*> ext = find_timing_extension(host_->registry());
  ASSERT_TRUE(ext) << ext.error().message;
  EXPECT_EQ((*ext)->version, kTimingExtensionVersion);
  EXPECT_EQ((*ext)->plugin_api_version, kPluginApiVersion);
  EXPECT_NE((*ext)->open, nullptr);
}

TEST_F(TimingExtensionTest, WithoutTheCudaPluginSaysSo) {
  Registry empty;
  EXPECT_EQ(find_timing_extension(empty).error().message, "no cuda target plugin is installed");
}

TEST_F(TimingExtensionTest, OpenWithoutADriverReturnsTheReason) {
  if (driver_library_present()) GTEST_SKIP() << "libcuda.so.1 is present: the no-driver path cannot be tested here";
  Expected<const TimingExtension*> ext = find_timing_extension(host_->registry());
  ASSERT_TRUE(ext) << ext.error().message;
  const Graph reference = trace(kSoftmax);
  const Graph g = lower_to_cuda(reference);
  auto program = (*ext)->open(g, make_inputs(reference, 0), TargetOptions{}, TimingOptions{});
  ASSERT_FALSE(program);
  EXPECT_EQ(program.error().message, "target cuda: no CUDA driver / GPU found: libcuda.so.1 could not be loaded");
}

// ---- ab --bench --------------------------------------------------------------------------------

TEST(AbBenchTest, WithoutAGpuSaysItNeedsOne) {
  if (driver_library_present()) GTEST_SKIP() << "libcuda.so.1 is present: the no-driver path cannot be tested here";
  test::CliResult r = test::run_cli({"ab", kDefaultPipeline, kDefaultPipeline, "-c", kSoftmax, "--bench"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: tessera ab --bench needs a GPU: no CUDA driver / GPU found: libcuda.so.1 could not be loaded\n");
  EXPECT_EQ(r.out, "");
}

TEST(AbBenchTest, UsageErrors) {
  test::CliResult r = test::run_cli({"ab", kDefaultPipeline, kDefaultPipeline, "-c", kSoftmax, "--iterations", "5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: tessera ab --iterations only applies with --bench\n");
  r = test::run_cli({"ab", kDefaultPipeline, kDefaultPipeline, "-c", kSoftmax, "--bench", "--ir", "loop"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: tessera ab: --ir compares IR; --bench times the compiled programs: give one of them\n");
  r = test::run_cli({"ab", kDefaultPipeline, kDefaultPipeline, "-c", kSoftmax, "--bench", "--iterations", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: tessera ab --iterations must be at least 2\n");
}

// ---- on a GPU ------------------------------------------------------------------------------------

class TimingExtensionGpuTest : public TimingExtensionTest {
 protected:
  void SetUp() override {
    TimingExtensionTest::SetUp();
    std::string why;
    if (!host_->registry().make_target("cuda")->available(&why)) GTEST_SKIP() << why;
  }
};

TEST_F(TimingExtensionGpuTest, TimesKernelsAndProgramAndKeepsOutputsRight) {
  Expected<const TimingExtension*> ext = find_timing_extension(host_->registry());
  ASSERT_TRUE(ext) << ext.error().message;
  const Graph reference = trace("nn.RMSNorm(2048)(torch.randn(1,32,2048))");
  const Graph g = lower_to_cuda(reference);
  const ValueMap inputs = make_inputs(reference, 0);
  for (bool flush : {false, true}) {
    TimingOptions timing;
    timing.flush_l2 = flush;
    auto program = (*ext)->open(g, inputs, TargetOptions{}, timing);
    ASSERT_TRUE(program) << program.error().render();
    TimedProgram& p = **program;
    size_t kernels = 0;
    for (const Node* n : g.nodes()) kernels += n->op_as<CudaOp>() != nullptr;
    ASSERT_EQ(p.kernels().size(), kernels);
    EXPECT_FALSE(p.device().arch.empty());
    for (size_t i = 0; i < kernels; ++i) {
      EXPECT_GT(p.kernels()[i].bytes, 0);
      Expected<int> warm = p.warm_up_kernel(i, 20);
      ASSERT_TRUE(warm) << warm.error().render();
      EXPECT_GE(*warm, 1);
      EXPECT_LE(*warm, 20);
      Expected<double> us = p.time_kernel(i);
      ASSERT_TRUE(us) << us.error().render();
      EXPECT_GT(*us, 0);
    }
    EXPECT_FALSE(p.time_kernel(kernels));  // out of range: an error, not a launch
    Expected<int> warm = p.warm_up_program(20);
    ASSERT_TRUE(warm) << warm.error().render();
    Expected<double> us = p.time_program();
    ASSERT_TRUE(us) << us.error().render();
    EXPECT_GT(*us, 0);
    // Many runs over the same inputs leave the same, right outputs.
    Expected<ValueMap> outputs = p.outputs();
    ASSERT_TRUE(outputs) << outputs.error().render();
    Expected<ValueMap> expected = evaluate_reference(reference, inputs);
    ASSERT_TRUE(expected) << expected.error().render();
    for (const std::string& out : g.outputs()) {
      Expected<ValueComparison> cmp = compare_output(*expected, *outputs, out);
      ASSERT_TRUE(cmp) << cmp.error().render();
      EXPECT_TRUE(cmp->within(default_output_rtol(g.find(out)->type.dtype))) << out << ": " << cmp->max_rel_error;
    }
  }
}

TEST_F(TimingExtensionGpuTest, TwoProgramsAtOnceAndAbBenchOfAPipelineAgainstItself) {
  // `ab --bench` keeps both sides loaded and alternates between them.
  test::CliResult r = test::run_cli({"ab", kDefaultPipeline, kDefaultPipeline, "-c",
                                     "nn.RMSNorm(2048)(torch.randn(1,32,2048))", "--bench", "--iterations", "50"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("B/A latency ratio"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("95% CI ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tessera

// Tests of the cuda target's runtime. Without a driver (this is what CI machines have): available()
// is false with the exact reason, execute() and bench() return it, `tessera run --target cuda`
// fails with that one line and `--target auto` falls back to sim with a notice. Everywhere:
// BufferPlan (liveness reuse), TensorBytes (f16 / bf16 rounding and round trips), KernelCost.
// With a GPU: the differential corpus runs on the device and matches the reference, and bench()
// times every kernel (skipped with the driver's reason otherwise).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <bit>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "plugins/targets/cuda/buffer_plan.h"
#include "plugins/targets/cuda/tensor_bytes.h"
#include "support/built_plugins.h"
#include "support/test_paths.h"
#include "support/cli_runner.h"
#include "support/program_corpus.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/op.h"
#include "tessera/ir/stmt.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/kernel_cost.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

constexpr const char* kNoDriver = "no CUDA driver / GPU found: libcuda.so.1 could not be loaded";
const std::string kProgram = "x=torch.randn(4,6); torch.softmax(x, -1)";

bool driver_library_present() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

// ---- without a driver ------------------------------------------------------------------------

class CudaNoDriverTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    if (driver_library_present()) GTEST_SKIP() << "libcuda.so.1 is present: the no-driver path cannot be tested here";
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    target_ = host_->registry().make_target("cuda");
    ASSERT_NE(target_, nullptr);
  }
  std::unique_ptr<Target> target_;
};

TEST_F(CudaNoDriverTest, AvailableIsFalseWithTheReason) {
  std::string why;
  EXPECT_FALSE(target_->available(&why));
  EXPECT_EQ(why, kNoDriver);
  EXPECT_FALSE(target_->query_device().has_value());
}

TEST_F(CudaNoDriverTest, ExecuteAndBenchReturnTheReason) {
  Graph g = trace(kProgram);
  Expected<TargetRun> run = target_->execute(g, make_inputs(g, 0), TargetOptions{});
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().message, std::string("target cuda: ") + kNoDriver);
  Expected<BenchReport> bench = target_->bench(g, make_inputs(g, 0), TargetOptions{}, BenchOptions{});
  ASSERT_FALSE(bench);
  EXPECT_EQ(bench.error().message, std::string("target cuda: ") + kNoDriver);
}

TEST_F(CudaNoDriverTest, RunOnCudaFailsWithOneLine) {
  test::CliResult r = test::run_cli({"run", "--target", "cuda", "-c", kProgram});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, std::string("error: tessera run: target 'cuda' cannot run here: ") + kNoDriver + "\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(CudaNoDriverTest, AutoFallsBackToSimWithANotice) {
  test::CliResult r = test::run_cli({"run", "-c", kProgram});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(std::string("note: running on the sim target (") + kNoDriver + ")"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("target: sim"), std::string::npos) << r.out;
}

TEST_F(CudaNoDriverTest, BenchNeedsTheCudaTarget) {
  test::CliResult r = test::run_cli({"run", "--bench", "-c", kProgram});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("timing needs the cuda target"), std::string::npos) << r.err;
}

// ---- the CLI's timing flags --------------------------------------------------------------------

TEST(CudaBenchFlagsTest, TimingFlagsNeedBench) {
  for (const char* flag : {"--graphs", "--flush-l2"}) {
    test::CliResult r = test::run_cli({"run", flag, "-c", kProgram});
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_NE(r.err.find("only applies with --bench"), std::string::npos) << r.err;
  }
}

TEST(CudaBenchFlagsTest, ProfileWithoutNcuSaysSo) {
  test::CliResult r = test::run_cli({"run", "--profile", "--target", "sim", "-c", kProgram}, {{"PATH", "/nonexistent"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ncu was not found on PATH"), std::string::npos) << r.err;
}

// ---- BufferPlan --------------------------------------------------------------------------------

BufferUse use(std::string id, int64_t bytes, std::vector<std::string> inputs, bool output = false) {
  BufferUse u;
  u.id = std::move(id);
  u.bytes = bytes;
  u.kernel = !inputs.empty();
  u.inputs = std::move(inputs);
  u.output = output;
  return u;
}

TEST(BufferPlanTest, ChainReusesDeadBuffers) {
  // a (input) -> b -> c -> d (output): a is dead once b ran, so c takes it; b dies after c, d takes it.
  Expected<BufferPlan> p = BufferPlan::plan({use("a", 64, {}), use("b", 64, {"a"}), use("c", 64, {"b"}),
                                             use("d", 64, {"c"}, true)});
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->slot("c"), p->slot("a"));
  EXPECT_EQ(p->slot("d"), p->slot("b"));
  EXPECT_NE(p->slot("b"), p->slot("a"));  // a kernel never writes over its own input
  EXPECT_EQ(p->slot_bytes().size(), 2u);
}

TEST(BufferPlanTest, OutputsAreNeverReused) {
  // b is a graph output: d must not take its buffer even though b's last consumer (c) ran.
  Expected<BufferPlan> p = BufferPlan::plan({use("a", 64, {}), use("b", 64, {"a"}, true), use("c", 64, {"b"}),
                                             use("d", 64, {"c"}, true)});
  ASSERT_TRUE(p);
  EXPECT_NE(p->slot("d"), p->slot("b"));
  EXPECT_NE(p->slot("c"), p->slot("b"));
  EXPECT_EQ(p->slot("c"), p->slot("a"));
  EXPECT_NE(p->slot("d"), p->slot("c"));  // c is d's input: live while d runs
  EXPECT_EQ(p->slot_bytes().size(), 3u);
}

TEST(BufferPlanTest, KeepUploadedAndSizes) {
  const std::vector<BufferUse> uses = {use("a", 64, {}), use("b", 64, {"a"}), use("c", 64, {"b"}),
                                       use("d", 128, {"c"}, true)};
  Expected<BufferPlan> kept = BufferPlan::plan(uses, /*keep_uploaded=*/true);
  ASSERT_TRUE(kept);
  for (const char* id : {"b", "c", "d"}) EXPECT_NE(kept->slot(id), kept->slot("a")) << id;
  // d (128 bytes) does not fit in b's dead 64-byte slot: it gets a new one.
  Expected<BufferPlan> p = BufferPlan::plan(uses);
  ASSERT_TRUE(p);
  EXPECT_NE(p->slot("d"), p->slot("b"));
  EXPECT_EQ(p->slot_bytes()[static_cast<size_t>(p->slot("d"))], 128);
}

TEST(BufferPlanTest, ReadingAnUnknownBufferIsAnError) {
  Expected<BufferPlan> p = BufferPlan::plan({use("a", 4, {}), use("b", 4, {"zz"})});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("'b' reads 'zz'"), std::string::npos) << p.error().message;
}

// ---- TensorBytes -------------------------------------------------------------------------------

TEST(TensorBytesTest, EveryF16AndBf16BitPatternRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float f16 = TensorBytes::from_f16_bits(bits);
    if (!std::isnan(f16)) {
      EXPECT_EQ(TensorBytes::f16_bits(f16), bits) << std::hex << h;
    }
    const float bf16 = TensorBytes::from_bf16_bits(bits);
    if (!std::isnan(bf16)) {
      EXPECT_EQ(TensorBytes::bf16_bits(bf16), bits) << std::hex << h;
    }
  }
  EXPECT_TRUE(std::isnan(TensorBytes::from_f16_bits(TensorBytes::f16_bits(std::nanf("")))));
  EXPECT_TRUE(std::isnan(TensorBytes::from_bf16_bits(TensorBytes::bf16_bits(std::nanf("")))));
}

TEST(TensorBytesTest, RoundsToNearestEven) {
  EXPECT_EQ(TensorBytes::f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even (down)
  EXPECT_EQ(TensorBytes::f16_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(TensorBytes::f16_bits(1.0f + 1.1f * std::ldexp(1.0f, -11)), 0x3c01);
  EXPECT_EQ(TensorBytes::f16_bits(65519.0f), 0x7bff);
  EXPECT_EQ(TensorBytes::f16_bits(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(TensorBytes::f16_bits(-1e9f), 0xfc00);
  EXPECT_EQ(TensorBytes::f16_bits(std::ldexp(1.0f, -24)), 0x0001);        // smallest subnormal
  EXPECT_EQ(TensorBytes::f16_bits(std::ldexp(1.0f, -25)), 0x0000);        // tie -> even (zero)
  EXPECT_EQ(TensorBytes::f16_bits(1.5f * std::ldexp(1.0f, -24)), 0x0002);  // tie -> even (up)
  EXPECT_EQ(TensorBytes::f16_bits(std::ldexp(1023.0f, -24) + std::ldexp(1.0f, -25)), 0x0400);  // into normals
  EXPECT_EQ(TensorBytes::bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(TensorBytes::bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(TensorBytes::bf16_bits(-2.0f), 0xc000);
}

TEST(TensorBytesTest, EncodeDecodeEveryDtype) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool, DType::F64}) {
    TensorValue v(TensorType{{Dim(2), Dim(3)}, dt}, {0, 1, -2, 3, 0.5, 1});
    if (dt == DType::F64) v.data[5] = 0.1;  // not a float: f64 elements keep every bit
    if (dt == DType::Bool) v.data = {0, 1, 1, 0, 1, 0};
    if (dt == DType::I32 || dt == DType::I64) v.data[4] = 7;
    const std::string bytes = TensorBytes::encode(v);
    EXPECT_EQ(bytes.size(), 6u * static_cast<size_t>(dtype_bytes(dt))) << dtype_short_name(dt);
    Expected<TensorValue> back = TensorBytes::decode(bytes, v.type);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->data, v.data) << dtype_short_name(dt);
  }
  TensorValue h(TensorType{{Dim(1)}, DType::F16}, {1.0});
  EXPECT_EQ(TensorBytes::encode(h), std::string("\x00\x3c", 2));  // little-endian 0x3c00
  EXPECT_FALSE(TensorBytes::decode("abc", h.type));
}

// The upload encodes a constant window by window: the windows' bytes, concatenated, are the
// whole tensor's.
TEST(TensorBytesTest, WindowsEncodeToTheWholeTensorsBytes) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const TensorValue v(TensorType{{Dim(7)}, dt}, {0.1, -2.5, 3.25, 1e-3, 65504, -0.0, 7});
    std::string windows;
    for (size_t first = 0; first < v.data.size(); first += 3)
      windows += TensorBytes::encode(std::span<const double>(v.data).subspan(first, std::min<size_t>(3, 7 - first)), dt);
    EXPECT_EQ(windows, TensorBytes::encode(v)) << dtype_short_name(dt);
  }
}

// ---- KernelCost ----------------------------------------------------------------------------------

TEST(KernelCostTest, CountsAssignAndAccumTimesTripsAndThreads) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{Dim(4), Dim(256)}, DType::F32});
  auto k = std::make_unique<KernelOp>();
  k->name = "k_sum";
  k->grid = {4, 1, 1};
  k->block = {32, 1, 1};
  // per thread: 1 Assign + a loop of 8 x (Assign + Accum) + a strided loop from the thread index
  // to 256 by 32 (counted as 8 trips) x 1 Accum = 1 + 16 + 8 = 25 operations.
  Loop inner;
  inner.var = "a2";
  inner.begin = Expr::int_(0);
  inner.end = Expr::int_(8);
  inner.role = LoopRole::Reduce;
  inner.body = {Assign{"v1", ElementwiseFn::Exp, {Expr::var("v0")}}, Accum{"acc0", CombineFn::Add, Expr::var("v1")}};
  StridedLoop strided;
  strided.var = "a3";
  strided.begin = Expr::var("a0");
  strided.end = Expr::int_(256);
  strided.step = Expr::int_(32);
  strided.role = LoopRole::Reduce;
  strided.body = {Accum{"acc0", CombineFn::Add, Expr::var("v0")}};
  k->body = {Let{"a0", Expr::var("threadIdx.x")}, Assign{"v0", ElementwiseFn::Neg, {Expr::float_(1.0)}}, Stmt(inner),
             Stmt(strided)};
  g.add("y", std::move(k), {"x"}, TensorType{{Dim(4), Dim(32)}, DType::F16});
  const KernelCost cost = KernelCost::of(g, *g.find("y"));
  EXPECT_EQ(cost.flops, 4.0 * 32 * 25);
  EXPECT_EQ(cost.bytes, 4 * 256 * 4 + 4 * 32 * 2);
}

// ---- on a GPU ------------------------------------------------------------------------------------

class CudaGpuTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    target_ = host_->registry().make_target("cuda");
    ASSERT_NE(target_, nullptr);
    std::string why;
    if (!target_->available(&why)) GTEST_SKIP() << why;
    device_ = h100();
    ASSERT_NE(device_, nullptr);
  }
  Graph lower(Graph g, Dialect stop) {
    Expected<PipelineSpec> spec = load_pipeline_file(test::default_pipeline_path());
    EXPECT_TRUE(spec) << spec.error().render();
    if (!spec) return Graph();
    Status s = test::BuiltPluginsTest::lower(g, *spec, stop, device_);
    EXPECT_TRUE(s) << s.message();
    return g;
  }
  std::unique_ptr<Target> target_;
  const DeviceDesc* device_ = nullptr;
};

// Every program is run and reported: a failure is recorded and the loop goes on, so one GPU run
// shows every failing program, and the last line lists them.
TEST_F(CudaGpuTest, CorpusMatchesTheReference) {
  std::vector<std::string> failed;
  for (const test::CorpusProgram& p : test::differential_corpus()) {
    SCOPED_TRACE(p.name);
    const Graph reference = trace(p.text);
    const Graph g = lower(reference, Dialect::Cuda);
    const ValueMap inputs = make_inputs(reference, 0);
    Expected<ValueMap> expected = evaluate_reference(reference, inputs);
    if (!expected) {
      ADD_FAILURE() << "reference: " << expected.error().render();
      failed.push_back(p.name);
      continue;
    }
    Expected<TargetRun> run = target_->execute(g, inputs, TargetOptions{});
    if (!run) {
      ADD_FAILURE() << "run: " << run.error().render();
      failed.push_back(p.name);
      continue;
    }
    bool ok = true;
    for (const std::string& out : g.outputs()) {
      Expected<ValueComparison> cmp = compare_output(*expected, run->outputs, out);
      if (!cmp) {
        ADD_FAILURE() << out << ": " << cmp.error().render();
        ok = false;
        continue;
      }
      if (!cmp->within(default_output_rtol(g.find(out)->type.dtype))) {
        ADD_FAILURE() << out << ": max rel err " << cmp->max_rel_error;
        ok = false;
      }
    }
    if (!ok) failed.push_back(p.name);
  }
  std::string list;
  for (const std::string& name : failed) list += (list.empty() ? "" : ", ") + name;
  EXPECT_TRUE(failed.empty()) << failed.size() << " of " << test::differential_corpus().size()
                              << " corpus programs failed on the GPU: " << list;
}

// The whole corpus through the CLI as a user runs it (`tessera run --target cuda -c ...`): module
// loading, buffer upload, launches and the output check against the reference, one process each.
TEST_F(CudaGpuTest, CliRunsTheCorpus) {
  for (const test::CorpusProgram& p : test::differential_corpus()) {
    SCOPED_TRACE(p.name);
    test::CliResult r = test::run_cli({"run", "--target", "cuda", "-c", p.text});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("target: cuda"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  }
}

TEST_F(CudaGpuTest, BenchTimesEveryKernel) {
  const Graph reference = trace(test::differential_corpus().front().text);
  const Graph g = lower(reference, Dialect::Cuda);
  size_t kernels = 0;
  for (const Node* n : g.nodes()) kernels += n->op_as<CudaOp>() != nullptr;
  for (bool graphs : {false, true}) {
    BenchOptions bo;
    bo.iterations = 5;
    bo.use_graphs = graphs;
    bo.flush_l2 = true;
    Expected<BenchReport> r = target_->bench(g, make_inputs(reference, 0), TargetOptions{}, bo);
    ASSERT_TRUE(r) << r.error().render();
    ASSERT_EQ(r->kernels.size(), kernels);
    for (const KernelTiming& t : r->kernels) {
      EXPECT_GT(t.median_us, 0);
      EXPECT_LE(t.min_us, t.median_us);
      EXPECT_LE(t.median_us, t.max_us);
      EXPECT_GT(t.bytes, 0);
    }
    EXPECT_GT(r->program_median_us, 0);
    EXPECT_EQ(r->used_graphs, graphs);
  }
}

TEST_F(CudaGpuTest, CliBenchPrintsTheTableAndJson) {
  test::TempDir dir;
  const std::string json = dir.path() + "/bench.json";
  test::CliResult r = test::run_cli({"run", "--target", "cuda", "--bench", "--iterations", "3", "--graphs", "--json",
                                     json, "-c", "nn.RMSNorm(2048)(torch.randn(1,32,2048))"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("k_rms_norm_reduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("program (CUDA graph)"), std::string::npos) << r.out;
  const std::string text = test::read_file(json);
  EXPECT_NE(text.find("\"kernel\": \"k_rms_norm_reduce\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"cuda_graph\": true"), std::string::npos) << text;
}

}  // namespace
}  // namespace tessera

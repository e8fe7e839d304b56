// Tests of the vectorize_loads pass: real programs compiled with thread-per-row reductions (the
// kernels with serial inner loops it applies to) under every WIDTH, run on the `sim` target, must
// match both the same kernels compiled without the pass and the reference evaluator; WIDTH > 1 must
// actually produce vector accesses of that width, WIDTH = 1 none. Printouts: tests/golden/vectorize_loads/.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

// The default lowering with thread-per-row reductions; `kernel_passes` is the kernel stage.
std::string pipeline_text(const std::string& kernel_passes) {
  return "name: vectorize_loads_test\n"
         "stages:\n"
         "  torch: [canonicalize]\n"
         "  tensor: [decompose, compose_index_maps, canonicalize]\n"
         "  loop: [lift, fuse, dedup_loads, canonicalize]\n"
         "  tile: [tileify, launch_geometry: {BN: 32}, canonicalize]\n"
         "  kernel: [" + kernel_passes + "]\n";
}

// The widths of all VectorLoads and VectorStores in the graph's kernels.
std::vector<size_t> vector_widths(const Graph& g) {
  struct Finder final : StmtVisitor {
    std::vector<size_t> widths;
    void visit_VectorLoad(const VectorLoad& s) override { widths.push_back(s.dsts.size()); }
    void visit_VectorStore(const VectorStore& s) override { widths.push_back(s.values.size()); }
  } finder;
  for (const Node* n : g.nodes()) {
    if (const auto* k = n->op_as<KernelOp>()) finder.visit(k->body);
  }
  return finder.widths;
}

class VectorizeLoadsTest : public test::BuiltPluginsTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_ = h100();
    ASSERT_NE(device_, nullptr);
  }

  Graph compile(const Graph& torch, const std::string& kernel_passes) {
    auto spec = parse_pipeline(pipeline_text(kernel_passes), "<test>");
    EXPECT_TRUE(spec) << spec.error().render();
    if (!spec) return torch;
    RunnerOptions ro;
    ro.stop_after = Dialect::Kernel;
    ro.device = device_;
    ro.verify_each = true;
    std::ostringstream sink;
    ro.out = &sink;
    ro.err = &sink;
    DiagnosticEngine diags;
    Graph g = torch;
    PipelineRunner runner(host_->registry(), *spec, ro);
    Status st = runner.run(g, diags);
    EXPECT_TRUE(st) << kernel_passes << ":\n" << st.error().render();
    return g;
  }

  Expected<TargetRun> simulate(const Graph& g, const ValueMap& inputs) {
    auto sim = host_->registry().make_target("sim");
    if (!sim) return make_error("no sim target");
    TargetOptions to;
    to.arch = device_->arch;
    to.device = device_;
    return sim->execute(g, inputs, to);
  }

  // Lowers `program` (traced in bf16) with pipelines/default.yaml: its kernels must hold at least
  // the given numbers of 8-element bf16 vector loads and 8-element stores, simulate to the
  // eager-rounding reference at the bf16 tolerance, and emit CUDA with uint4 accesses that NVRTC
  // compiles for sm_90 (where the build has CUDA).
  void check_bf16_under_default_pipeline(const std::string& program, int min_loads8, int min_stores8,
                                         const std::string& cache_name);

  const DeviceDesc* device_ = nullptr;
};

TEST_P(VectorizeLoadsTest, EveryWidthMatchesTheScalarKernelAndTheReference) {
  auto frontend = host_->registry().make_frontend("torch_expr");
  ASSERT_NE(frontend, nullptr);
  auto traced = frontend->import(FrontendInput{GetParam(), "<-c>"}, FrontendOptions{});
  ASSERT_TRUE(traced) << traced.error().render();
  const Graph torch = *traced;
  ValueMap inputs = make_inputs(torch, 7);
  auto expected = evaluate_reference(torch, inputs);
  ASSERT_TRUE(expected) << expected.error().render();

  Graph scalar = compile(torch, "materialize, canonicalize");
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(vector_widths(scalar).empty());
  auto scalar_run = simulate(scalar, inputs);
  ASSERT_TRUE(scalar_run) << scalar_run.error().render();

  for (int64_t width : {1, 2, 4}) {
    Graph g = compile(torch, "materialize, vectorize_loads: {WIDTH: " + std::to_string(width) + "}, canonicalize");
    ASSERT_FALSE(HasFailure());
    std::vector<size_t> widths = vector_widths(g);
    if (width == 1) {
      EXPECT_TRUE(widths.empty()) << print_graph(g);
    } else {
      EXPECT_FALSE(widths.empty()) << "WIDTH " << width << " vectorized nothing:\n" << print_graph(g);
      for (size_t w : widths) EXPECT_EQ(w, static_cast<size_t>(width)) << print_graph(g);
    }
    auto ran = simulate(g, inputs);
    ASSERT_TRUE(ran) << "WIDTH " << width << ": " << ran.error().render() << "\n" << print_graph(g);
    for (const std::string& out : torch.outputs()) {
      auto vs_scalar = compare_output(scalar_run->outputs, ran->outputs, out);
      ASSERT_TRUE(vs_scalar) << vs_scalar.error().render();
      // Same operations in the same order: the vectorized kernel computes the same floats.
      EXPECT_TRUE(vs_scalar->within(1e-6)) << "WIDTH " << width << " vs scalar: " << vs_scalar->str();
      auto vs_reference = compare_output(*expected, ran->outputs, out);
      ASSERT_TRUE(vs_reference) << vs_reference.error().render();
      EXPECT_TRUE(vs_reference->within(default_output_rtol(DType::F32)))
          << "WIDTH " << width << " vs reference: " << vs_reference->str() << "\n" << print_graph(g);
    }
  }
}

// bf16 rows move 16 bytes per access: under the default pipeline a bf16 RMSNorm stages its row with
// 8-element (128-bit) global loads and writes the scaled row with 8-element stores, computes in f32,
// matches the reference that rounds every op's output to bf16 (as PyTorch eager does) at the bf16
// tolerance, and the emitted CUDA (uint4 accesses of __nv_bfloat16 elements) compiles for sm_90.
TEST_F(VectorizeLoadsTest, Bf16RmsNormUses128BitAccessesAndMatchesEagerRounding) {
  check_bf16_under_default_pipeline("nn.RMSNorm(2048)(torch.randn(1,4,2048))", /*min_loads8=*/1,
                                    /*min_stores8=*/1, "tessera_bf16_rms_norm_cache");
}

// The SwiGLU product is elementwise (no per-thread loop of its own): coarsen_elementwise gives each
// thread 8 consecutive elements, so both operands load with one 8-element (128-bit) access each and
// the product stores with one.
TEST_F(VectorizeLoadsTest, Bf16SwigluProductUses128BitAccessesAndMatchesEagerRounding) {
  check_bf16_under_default_pipeline(
      "import torch.nn.functional as F; g=torch.randn(1,32,5632); u=torch.randn(1,32,5632); F.silu(g) * u",
      /*min_loads8=*/2, /*min_stores8=*/1, "tessera_bf16_swiglu_cache");
}

void VectorizeLoadsTest::check_bf16_under_default_pipeline(const std::string& program, int min_loads8,
                                                           int min_stores8, const std::string& cache_name) {
  const Graph torch = trace(program, DType::BF16);
  ASSERT_FALSE(HasFailure());
  auto spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
  ASSERT_TRUE(spec) << spec.error().render();
  Graph kernel = torch;
  Status st = lower(kernel, *spec, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/true);
  ASSERT_TRUE(st) << st.error().render();

  struct Bf16Vectors final : StmtVisitor {
    int loads8 = 0, stores8 = 0;
    void visit_VectorLoad(const VectorLoad& s) override {
      loads8 += s.dsts.size() == 8 && s.type == ValueType::scalar(DType::BF16);
    }
    void visit_VectorStore(const VectorStore& s) override { stores8 += s.values.size() == 8; }
  } found;
  for (const Node* n : kernel.nodes())
    if (const auto* k = n->op_as<KernelOp>()) found.visit(k->body);
  EXPECT_GE(found.loads8, min_loads8) << print_graph(kernel);
  EXPECT_GE(found.stores8, min_stores8) << print_graph(kernel);

  ValueMap inputs = make_inputs(torch, 7);
  auto expected = evaluate_reference(torch, inputs);
  ASSERT_TRUE(expected) << expected.error().render();
  auto ran = simulate(kernel, inputs);
  ASSERT_TRUE(ran) << ran.error().render() << "\n" << print_graph(kernel);
  for (const std::string& out : torch.outputs()) {
    auto cmp = compare_output(*expected, ran->outputs, out);
    ASSERT_TRUE(cmp) << cmp.error().render();
    // Tighter than the output check's bf16 rtol (eight ulps, for long paths): a kernel that rounds
    // where eager does is within about one ulp of the reference here.
    EXPECT_TRUE(cmp->within(2e-2)) << cmp->str() << "\n" << print_graph(kernel);
  }

  Graph cuda = torch;
  st = lower(cuda, *spec, Dialect::Cuda, device_);
  ASSERT_TRUE(st) << st.error().render();
  std::string sources;
  for (const Node* n : cuda.nodes())
    if (const auto* op = n->op_as<CudaOp>()) sources += op->source;
  EXPECT_NE(sources.find("const uint4 tessera_vec = *reinterpret_cast<const uint4*>(&"), std::string::npos) << sources;
  EXPECT_NE(sources.find("*reinterpret_cast<uint4*>(&"), std::string::npos) << sources;
  EXPECT_NE(sources.find("reinterpret_cast<const __nv_bfloat16*>(&tessera_vec)"), std::string::npos) << sources;
  EXPECT_NE(sources.find("__bfloat162float("), std::string::npos) << sources;
#ifdef TESSERA_HAVE_CUDA
  auto target = host_->registry().make_target("cuda");
  ASSERT_NE(target, nullptr);
  const std::string cache = ::testing::TempDir() + "/" + cache_name;
  std::filesystem::remove_all(cache);
  auto built = target->build(cuda, TargetOptions{.arch = "sm_90", .device = device_, .cache_dir = cache});
  std::filesystem::remove_all(cache);
  EXPECT_TRUE(built) << (built ? "" : built.error().render()) << "\n" << sources;
#endif
}

// A row sum (vector loads), a softmax (vector loads and a vector store in the free loop) and a
// matmul (the A row of the K loop is contiguous; B's column walk stays scalar).
INSTANTIATE_TEST_SUITE_P(Programs, VectorizeLoadsTest,
                         ::testing::Values("x=torch.randn(256, 64); (x * 2).sum(-1)",
                                           "x=torch.randn(64, 48); torch.softmax(x, -1)",
                                           "a=torch.randn(64, 32); b=torch.randn(32, 48); a @ b"),
                         [](const auto& info) { return std::string("program") + std::to_string(info.index); });

}  // namespace
}  // namespace tessera

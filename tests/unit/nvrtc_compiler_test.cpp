// Tests of the cuda target's build(): NVRTC compiles of every kernel of the differential corpus
// (default pipeline) for sm_80 and sm_90 with no spills, the on-disk kernel cache (a rebuild is
// served from it without NVRTC, a corrupt or truncated entry is rebuilt), and NVRTC errors that
// name the kernel and quote the offending source line. Skipped with a reason without the toolkit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/built_plugins.h"
#include "support/cli_runner.h"
#include "support/nvrtc_check.h"
#include "support/program_corpus.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/target.h"
#include "tessera/tune/choice_source.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class NvrtcBuildTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
#ifndef TESSERA_HAVE_CUDA
    GTEST_SKIP() << "CUDA toolkit (NVRTC) not found at configure time: the cuda target cannot compile kernels";
#endif
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_ = h100();
    ASSERT_NE(device_, nullptr);
    target_ = host_->registry().make_target("cuda");
    ASSERT_NE(target_, nullptr);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& c : name)
      if (c == '/') c = '_';
    // The pid keeps concurrent runs of the suite (two build trees, ctest -j) out of each other's way.
    cache_dir_ = fs::path(::testing::TempDir()) / ("tessera_kernel_cache_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(cache_dir_);
  }
  void TearDown() override {
    if (!cache_dir_.empty()) fs::remove_all(cache_dir_);
  }

  // `text` through the default pipeline, stopped after emit_cuda; knobs sampled with `seed` when
  // given, the program traced in `dtype`.
  Graph lower_to_cuda(const std::string& text, std::optional<uint64_t> seed = std::nullopt,
                      DType dtype = DType::F32) {
    Expected<PipelineSpec> spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
    EXPECT_TRUE(spec) << spec.error().render();
    if (!spec) return Graph();
    Graph g = trace(text, dtype);
    Status s = lower(g, *spec, Dialect::Cuda, device_, seed);
    EXPECT_TRUE(s) << s.message();
    return g;
  }

  Expected<std::vector<KernelBuild>> build(const Graph& g, const std::string& arch) {
    return target_->build(g, TargetOptions{.arch = arch, .device = device_, .cache_dir = cache_dir_.string()});
  }

  // The cache entries (one .json per compiled kernel and arch).
  std::vector<fs::path> entries(const std::string& ext) const {
    std::vector<fs::path> out;
    if (fs::exists(cache_dir_))
      for (const auto& e : fs::directory_iterator(cache_dir_))
        if (e.path().extension() == ext) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  const DeviceDesc* device_ = nullptr;
  std::unique_ptr<Target> target_;
  fs::path cache_dir_;
};

// A one-kernel CUDA graph with hand-written source.
Graph cuda_graph(const std::string& kernel, const std::string& source) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{4}, DType::F32});
  auto op = std::make_unique<CudaOp>();
  op->name = kernel;
  op->source = source;
  KernelParam x, y;
  x.name = "x";
  y.name = "y";
  y.written = true;
  op->params = {x, y};
  g.add("y", std::move(op), {"x"}, TensorType{{4}, DType::F32});
  g.outputs() = {"y"};
  return g;
}

// The shapes whose default schedule is the large block tile (128 x 64 outputs, 4 x 8 per thread in
// f32[8][4] accumulators): square f32 and batched matmuls and a prefill projection; and the bf16
// square matmul on the tensor cores (64 x 64 block tiles, 2 x 4 mma tiles a warp in f32[2][4][4]).
// They are too large for sim, so the corpus does not hold them; their kernels must build without
// spills.
TEST_F(NvrtcBuildTest, LargeBlockTileKernelsBuildWithoutSpills) {
  for (const auto& [text, dtype] : std::vector<std::pair<std::string, DType>>{
           {"x=torch.randn(2048,2048); w=torch.randn(2048,2048); x @ w", DType::F32},
           {"x=torch.randn(4096,4096); w=torch.randn(4096,4096); x @ w", DType::BF16},
           {"a=torch.randn(8,512,256); b=torch.randn(8,256,1024); torch.bmm(a, b)", DType::F32},
           {"nn.Linear(4096, 4096)(torch.randn(1, 1024, 4096))", DType::F32}}) {
    Graph g = lower_to_cuda(text, std::nullopt, dtype);
    // f32: a thread's 8 x 4 register tile; bf16: the tensor cores' 2 x 4 mma tiles a warp.
    const std::string tile = dtype == DType::BF16 ? "float acc0[2][4][4];" : "float acc0[8][4];";
    int large_tiles = 0;
    for (const Node* n : g.nodes())
      if (const auto* op = n->op_as<CudaOp>()) large_tiles += op->source.find(tile) != std::string::npos;
    EXPECT_EQ(large_tiles, 1) << text;
    auto built = build(g, "sm_90");
    ASSERT_TRUE(built) << text << ": " << built.error().render();
    for (const KernelBuild& k : *built) {
      EXPECT_EQ(k.spill_store_bytes, 0) << text << ": " << k.kernel;
      EXPECT_EQ(k.spill_load_bytes, 0) << text << ": " << k.kernel;
    }
  }
}

// The warpgroup schedules for sm_90a (`--arch sm_90a`): the default one of a prefill projection
// (two warpgroups, m64n128k16: 64 f32 accumulators a thread), of a gated MLP (two products, one
// A slab), the projection with a producer warpgroup (a ring of two slabs; the consumers compiled
// within the 168 registers a thread of a 384-thread block gets at one block per SM), and of two
// products whose B is MN-major (`x @ w`, an attention's P V per head) must build without spills.
TEST_F(NvrtcBuildTest, WarpgroupKernelsBuildWithoutSpillsForSm90a) {
  device_ = devices_->find_by_arch("sm_90a");
  ASSERT_NE(device_, nullptr);
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"nn.Linear(4096,4096,bias=False)(torch.randn(1,1024,4096))", {}},
      {"x=torch.randn(1,512,2048); F.silu(nn.Linear(2048,5632,bias=False)(x)) * nn.Linear(2048,5632,bias=False)(x)", {}},
      {"nn.Linear(4096,4096,bias=False)(torch.randn(1,1024,4096))",
       {"double_buffer.BUFFERS=2", "use_tensor_cores.WARPGROUPS=2", "specialize_warps.PRODUCER=warpgroup"}},
      {"x=torch.randn(2048,2048); w=torch.randn(2048,2048); x @ w", {}},
      {"p=torch.randn(1,32,512,512); v=torch.randn(1,32,512,128); torch.matmul(p, v)", {}}};
  for (const auto& [text, pins] : cases) {
    Expected<PipelineSpec> spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
    ASSERT_TRUE(spec) << spec.error().render();
    for (const std::string& pin : pins) ASSERT_TRUE(pin_knob(*spec, pin)) << pin;
    Graph g = trace(text, DType::BF16);
    Status lowered = lower(g, *spec, Dialect::Cuda, device_);
    ASSERT_TRUE(lowered) << lowered.message();
    int warpgroup_kernels = 0;
    for (const Node* n : g.nodes())
      if (const auto* op = n->op_as<CudaOp>()) {
        warpgroup_kernels += op->source.find("wgmma.mma_async") != std::string::npos;
        if (!pins.empty()) EXPECT_NE(op->source.find("setmaxnreg.inc"), std::string::npos) << text;
      }
    EXPECT_EQ(warpgroup_kernels, 1) << text;
    auto built = build(g, "sm_90a");
    ASSERT_TRUE(built) << text << ": " << built.error().render();
    for (const KernelBuild& k : *built) {
      EXPECT_GT(k.registers, 0) << k.kernel;
      EXPECT_FALSE(k.binary.empty()) << k.kernel;
      EXPECT_EQ(k.spill_store_bytes, 0) << text << ": " << k.kernel << " (" << k.registers << " registers)";
      EXPECT_EQ(k.spill_load_bytes, 0) << text << ": " << k.kernel;
    }
  }
}

// The IR loads B's element of a column in each of the TM row replicas; with no store between them
// in a k step, NVRTC keeps one load per column, and the thread's 4 adjacent columns
// (permute_register_tile) are one 16-byte load: the 4096^3 kernel's PTX (the k-step loop is not
// unrolled) reads shared memory 8 + 1 times for its 8 x 4 multiply-adds, one of them
// ld.shared.v4.f32, as docs/passes.md says.
TEST_F(NvrtcBuildTest, LargeBlockTileLoadsEachOperandOncePerRowAndColumn) {
  Graph g = lower_to_cuda("x=torch.randn(4096,4096); w=torch.randn(4096,4096); x @ w");
  auto built = target_->build(
      g, TargetOptions{.arch = "sm_90", .device = device_, .cache_dir = cache_dir_.string(), .want_ptx = true});
  ASSERT_TRUE(built) << built.error().render();
  ASSERT_EQ(built->size(), 1u);
  auto count = [&](const std::string& what) {
    int n = 0;
    for (size_t at = built->front().ptx.find(what); at != std::string::npos; at = built->front().ptx.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("ld.shared"), 9) << built->front().ptx;
  EXPECT_EQ(count("ld.shared.v4.f32"), 1) << built->front().ptx;
  EXPECT_EQ(count("fma.rn.f32"), 32) << built->front().ptx;
}

class NvrtcCorpusTest : public NvrtcBuildTest, public ::testing::WithParamInterface<test::CorpusProgram> {};

TEST_P(NvrtcCorpusTest, EveryKernelBuildsWithoutSpillsAndRebuildsFromTheCache) {
  Graph g = lower_to_cuda(GetParam().text);
  size_t kernels = 0;
  for (const Node* n : g.nodes()) kernels += n->op_as<CudaOp>() != nullptr;
  ASSERT_GT(kernels, 0u);
  for (const char* arch : {"sm_80", "sm_90"}) {
    auto first = build(g, arch);
    ASSERT_TRUE(first) << arch << ": " << first.error().render();
    ASSERT_EQ(first->size(), kernels);
    size_t i = 0;
    for (const Node* n : g.nodes()) {
      const auto* op = n->op_as<CudaOp>();
      if (!op) continue;
      const KernelBuild& k = (*first)[i++];
      EXPECT_EQ(k.node, n->id());  // graph order
      EXPECT_EQ(k.kernel, op->name);
      EXPECT_EQ(k.arch, arch);
      EXPECT_GT(k.registers, 0) << k.kernel;
      EXPECT_FALSE(k.binary.empty()) << k.kernel;
      EXPECT_EQ(k.spill_store_bytes, 0) << k.kernel << " " << arch;
      EXPECT_EQ(k.spill_load_bytes, 0) << k.kernel << " " << arch;
    }
    auto second = build(g, arch);
    ASSERT_TRUE(second) << second.error().render();
    ASSERT_EQ(second->size(), kernels);
    for (size_t j = 0; j < kernels; ++j) {
      const KernelBuild& a = (*first)[j];
      const KernelBuild& b = (*second)[j];
      EXPECT_TRUE(b.from_cache) << b.kernel << " " << arch << " was compiled again";
      EXPECT_EQ(a.registers, b.registers);
      EXPECT_EQ(a.shared_bytes, b.shared_bytes);
      EXPECT_EQ(a.binary, b.binary);
    }
  }
  EXPECT_FALSE(entries(".cubin").empty());
  EXPECT_EQ(entries(".cubin").size(), entries(".json").size());
}

// Random-knob schedules and half-precision storage compile too: the first sampled schedule of the
// random-knob tests in f32, the default bf16 schedule (the tensor cores where legal) and a sampled
// f16 one must be valid CUDA (spills allowed: not a default). Each variant is built for one
// architecture: the lowering does not depend on it, the default schedule above is built for both,
// and NVRTC time is most of the release suite's time on two cores (three variants, not the five of
// before, keep the test command within CI's budget: docs/build-time.md).
TEST_P(NvrtcCorpusTest, SampledAndHalfPrecisionSchedulesBuild) {
  struct Variant {
    std::optional<uint64_t> seed;
    DType dtype;
    const char* arch;
  };
  for (const Variant& v : {Variant{1, DType::F32, "sm_90"}, Variant{std::nullopt, DType::BF16, "sm_90"},
                           Variant{4, DType::F16, "sm_80"}}) {
    Graph g = lower_to_cuda(GetParam().text, v.seed, v.dtype);
    if (HasFailure()) return;
    auto built = build(g, v.arch);
    ASSERT_TRUE(built) << dtype_short_name(v.dtype) << " seed " << (v.seed ? std::to_string(*v.seed) : "-")
                       << " " << v.arch << ": " << built.error().render();
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, NvrtcCorpusTest, ::testing::ValuesIn(test::differential_corpus()),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

#ifdef TESSERA_HAVE_CUDA
// The tests' NVRTC helper (tests/support/nvrtc_check.h) fails a kernel that spills: 96 floats
// a thread live across a product under a 32-register bound.
TEST(NvrtcCheck, AKernelThatSpillsFailsTheCheck) {
  CudaOp op;
  op.name = "k_spill";
  op.source =
      "extern \"C\" __global__ void __launch_bounds__(1024, 2) k_spill(const float* x, float* y) {\n"
      "  float r[96];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 96; ++i) r[i] = x[threadIdx.x * 96 + i];\n"
      "  float s = 0.f;\n"
      "#pragma unroll\n"
      "  for (int j = 0; j < 96; ++j)\n"
      "#pragma unroll\n"
      "    for (int i = 0; i < 96; ++i) s += r[i] * r[(i + j) % 96];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 96; ++i) y[threadIdx.x * 96 + i] = r[i] * s;\n"
      "}\n";
  const std::string error = test::nvrtc_compile(op, "sm_90");
  EXPECT_NE(error.find("k_spill spills for sm_90"), std::string::npos) << error;
}
#endif

TEST_F(NvrtcBuildTest, ResourcesComeFromPtxas) {
  // 256 floats of static shared memory: ptxas reports exactly 1024 bytes.
  Graph g = cuda_graph("k_smem", R"(extern "C" __global__ void k_smem(const float* x, float* y) {
  __shared__ float s[256];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = s[255 - threadIdx.x];
}
)");
  auto b = build(g, "sm_90");
  ASSERT_TRUE(b) << b.error().render();
  ASSERT_EQ(b->size(), 1u);
  EXPECT_EQ((*b)[0].shared_bytes, 1024);
  EXPECT_GT((*b)[0].registers, 0);
  EXPECT_FALSE((*b)[0].from_cache);
}

TEST_F(NvrtcBuildTest, CorruptOrTruncatedEntriesAreRebuilt) {
  Graph g = lower_to_cuda("nn.RMSNorm(2048)(torch.randn(1,3,2048))");
  auto first = build(g, "sm_90");
  ASSERT_TRUE(first) << first.error().render();
  std::vector<fs::path> cubins = entries(".cubin"), metas = entries(".json");
  ASSERT_FALSE(cubins.empty());
  // Truncate every cubin: the size/checksum in the metadata no longer match.
  for (const fs::path& p : cubins) fs::resize_file(p, fs::file_size(p) / 2);
  auto truncated = build(g, "sm_90");
  ASSERT_TRUE(truncated) << truncated.error().render();
  for (size_t j = 0; j < truncated->size(); ++j) {
    EXPECT_FALSE((*truncated)[j].from_cache) << (*truncated)[j].kernel;
    EXPECT_EQ((*truncated)[j].binary, (*first)[j].binary);
  }
  // Garbage metadata: not JSON at all.
  for (const fs::path& p : metas) std::ofstream(p, std::ios::trunc) << "{ not json";
  auto garbage = build(g, "sm_90");
  ASSERT_TRUE(garbage) << garbage.error().render();
  for (const KernelBuild& k : *garbage) EXPECT_FALSE(k.from_cache) << k.kernel;
  // The rebuilt entries are intact again.
  auto again = build(g, "sm_90");
  ASSERT_TRUE(again) << again.error().render();
  for (const KernelBuild& k : *again) EXPECT_TRUE(k.from_cache) << k.kernel;
  EXPECT_EQ(entries(".json"), metas);  // same keys: the entries were replaced, not added
}

// The cache directory is not trusted: entries that are symlinks to devices, FIFOs (opening one
// for reading would block) or carry out-of-range metadata are ignored and rebuilt.
TEST_F(NvrtcBuildTest, HostileEntriesAreIgnoredWithoutBlockingOrUnboundedReads) {
  Graph g = cuda_graph("k_copy", "extern \"C\" __global__ void k_copy(const float* x, float* y) { y[0] = x[0]; }\n");
  auto first = build(g, "sm_90");
  ASSERT_TRUE(first) << first.error().render();
  std::vector<fs::path> cubins = entries(".cubin"), metas = entries(".json");
  ASSERT_EQ(cubins.size(), 1u);
  ASSERT_EQ(metas.size(), 1u);
  std::ifstream meta_in(metas[0]);
  std::string meta((std::istreambuf_iterator<char>(meta_in)), std::istreambuf_iterator<char>());

  // The cubin is a symlink to /dev/zero: read without bound, it would never end.
  fs::remove(cubins[0]);
  fs::create_symlink("/dev/zero", cubins[0]);
  auto zero = build(g, "sm_90");
  ASSERT_TRUE(zero) << zero.error().render();
  EXPECT_FALSE((*zero)[0].from_cache);
  EXPECT_EQ((*zero)[0].binary, (*first)[0].binary);

  // The metadata is a FIFO with no writer: opening it for reading must not block.
  fs::remove(metas[0]);
  ASSERT_EQ(::mkfifo(metas[0].c_str(), 0600), 0);
  auto fifo = build(g, "sm_90");
  ASSERT_TRUE(fifo) << fifo.error().render();
  EXPECT_FALSE((*fifo)[0].from_cache);

  // A negative register count is corrupt metadata, not a number to print.
  std::string bad = meta;
  size_t at = bad.find("\"registers\": ");
  ASSERT_NE(at, std::string::npos) << bad;
  bad.replace(at, std::string("\"registers\": ").size(), "\"registers\": -");
  fs::remove(metas[0]);
  std::ofstream(metas[0]) << bad;
  auto negative = build(g, "sm_90");
  ASSERT_TRUE(negative) << negative.error().render();
  EXPECT_FALSE((*negative)[0].from_cache);
  EXPECT_GT((*negative)[0].registers, 0);
}

// A cache that cannot be written degrades to compiling without it, with one warning.
TEST_F(NvrtcBuildTest, AnUnwritableCacheCompilesWithAWarning) {
  fs::create_directories(cache_dir_);
  const fs::path file = cache_dir_ / "not_a_directory";
  std::ofstream(file) << "x";
  Graph g = cuda_graph("k_copy", "extern \"C\" __global__ void k_copy(const float* x, float* y) { y[0] = x[0]; }\n");
  auto b = target_->build(g, TargetOptions{.arch = "sm_90", .device = device_, .cache_dir = (file / "cache").string()});
  ASSERT_TRUE(b) << b.error().render();
  EXPECT_FALSE((*b)[0].binary.empty());
  EXPECT_NE((*b)[0].cache_warning.find("compiling without the kernel cache"), std::string::npos)
      << (*b)[0].cache_warning;

  test::CliResult cli = test::run_cli({"compile", "-c", "torch.relu(torch.randn(33))", "--ir", "cuda", "-v",
                                       "--cache-dir", (file / "cache").string()});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.err.find("warning: kernel cache: cannot create directory"), std::string::npos) << cli.err;
}

TEST_F(NvrtcBuildTest, TheKeyCoversTheArchAndTheSource) {
  Graph g = cuda_graph("k_copy", "extern \"C\" __global__ void k_copy(const float* x, float* y) { y[0] = x[0]; }\n");
  ASSERT_TRUE(build(g, "sm_90"));
  auto other_arch = build(g, "sm_80");
  ASSERT_TRUE(other_arch);
  EXPECT_FALSE((*other_arch)[0].from_cache);
  Graph changed = cuda_graph("k_copy", "extern \"C\" __global__ void k_copy(const float* x, float* y) { y[0] = x[1]; }\n");
  auto other_source = build(changed, "sm_90");
  ASSERT_TRUE(other_source);
  EXPECT_FALSE((*other_source)[0].from_cache);
  EXPECT_EQ(entries(".json").size(), 3u);
}

// Nodes sharing a kernel source (the layers of a model) are compiled once: every node gets the
// build, all but the first marked as served from the cache, one cache entry; the progress reports
// count distinct kernels, on the calling thread, ending at all of them.
TEST_F(NvrtcBuildTest, ASharedSourceIsCompiledOnceAndProgressCountsDistinctKernels) {
  const std::string source = "extern \"C\" __global__ void k_copy(const float* x, float* y) { y[0] = x[0]; }\n";
  Graph g = cuda_graph("k_copy", source);
  auto second = std::make_unique<CudaOp>(*g.find("y")->op_as<CudaOp>());
  second->params[0].name = "y";
  second->params[1].name = "z";
  g.add("z", std::move(second), {"y"}, TensorType{{4}, DType::F32});
  g.outputs() = {"z"};
  TargetOptions options{.arch = "sm_90", .device = device_, .cache_dir = cache_dir_.string()};
  std::vector<TargetProgress> reports;
  const std::thread::id caller = std::this_thread::get_id();
  options.progress = [&](const TargetProgress& p) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    reports.push_back(p);
  };
  auto b = target_->build(g, options);
  ASSERT_TRUE(b) << b.error().render();
  ASSERT_EQ(b->size(), 2u);
  EXPECT_EQ((*b)[0].node, "y");
  EXPECT_EQ((*b)[1].node, "z");
  EXPECT_FALSE((*b)[0].from_cache);
  EXPECT_TRUE((*b)[1].from_cache);
  EXPECT_EQ((*b)[1].binary, (*b)[0].binary);
  EXPECT_EQ(entries(".json").size(), 1u);
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back().done, 1.0);
  EXPECT_EQ(reports.back().total, 1.0);
  EXPECT_EQ(reports.back().kernel, "1/1 kernels");
}

TEST_F(NvrtcBuildTest, NvrtcErrorsNameTheKernelAndQuoteTheLine) {
  Graph g = cuda_graph("k_broken", R"(extern "C" __global__ void k_broken(const float* x, float* y) {
  float a = x[0];
  y[0] = a + undefined_name;
}
)");
  auto b = build(g, "sm_90");
  ASSERT_FALSE(b);
  std::string e = b.error().render();
  EXPECT_NE(e.find("at node 'y'"), std::string::npos) << e;
  EXPECT_NE(e.find("kernel k_broken (sm_90)"), std::string::npos) << e;
  EXPECT_NE(e.find("line 3:   y[0] = a + undefined_name;"), std::string::npos) << e;
  EXPECT_NE(e.find("identifier \"undefined_name\" is undefined"), std::string::npos) << e;  // the log
  EXPECT_TRUE(entries(".json").empty());  // failures are not cached
}

TEST_F(NvrtcBuildTest, OnlyCudaIrIsBuilt) {
  Graph g = trace("torch.relu(torch.randn(4))");
  auto b = build(g, "sm_90");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().render().find("target cuda builds CUDA IR"), std::string::npos) << b.error().render();
  std::unique_ptr<Target> sim = host_->registry().make_target("sim");
  ASSERT_NE(sim, nullptr);
  auto none = sim->build(g, TargetOptions{.arch = "sm_90", .device = device_, .cache_dir = ""});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().render().find("target sim does not compile kernels"), std::string::npos);
}

// --emit ptx prints every kernel's PTX for --arch; the PTX joins the cache entry, so a second run
// is served from the cache, and a cubin-only entry is rebuilt once to gain its PTX.
TEST_F(NvrtcBuildTest, EmitPtxWritesEveryKernelsPtxThroughTheCache) {
  const std::string program = "x=torch.randn(8,300); y=torch.randn(300); torch.softmax(x + y, -1) * 2";
  test::CliResult cubin_only = test::run_cli(
      {"compile", "-c", program, "--ir", "cuda", "-v", "--arch", "sm_80", "--cache-dir", cache_dir_.string()});
  ASSERT_EQ(cubin_only.exit_code, 0) << cubin_only.err;
  const std::vector<std::string> args = {"compile", "-c", program, "--emit", "ptx", "-v", "--arch", "sm_80",
                                         "--cache-dir", cache_dir_.string()};
  test::CliResult first = test::run_cli(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find(".target sm_80"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("__global__"), std::string::npos) << "PTX, not CUDA C++";
  const Graph lowered = lower_to_cuda(program);
  for (const Node* n : lowered.nodes()) {
    if (const auto* op = n->op_as<CudaOp>()) {
      EXPECT_NE(first.out.find("// kernel " + op->name + "  sm_80  (node " + n->id() + ")\n"), std::string::npos) << first.out;
      EXPECT_NE(first.out.find(".visible .entry " + op->name + "("), std::string::npos) << first.out;
    }
  }
  EXPECT_NE(first.err.find("(compiled)"), std::string::npos) << first.err;
  test::CliResult second = test::run_cli(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, first.out);
  EXPECT_EQ(second.err.find("(compiled)"), std::string::npos) << second.err;
  EXPECT_EQ(entries(".ptx").size(), entries(".cubin").size());

  test::CliResult wrong_stage = test::run_cli({"compile", "-c", program, "--emit", "ptx", "--ir", "kernel"});
  EXPECT_EQ(wrong_stage.exit_code, 2);
  EXPECT_NE(wrong_stage.err.find("--emit ptx needs the cuda stage"), std::string::npos) << wrong_stage.err;
}

TEST_F(NvrtcBuildTest, CliPrintsOneLinePerKernelCompiledThenCached) {
  const std::vector<std::string> args = {"compile", "-c", "nn.RMSNorm(2048)(torch.randn(1,32,2048))", "--ir",
                                         "cuda", "-v", "--arch", "sm_80", "--cache-dir", cache_dir_.string()};
  test::CliResult first = test::run_cli(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string line = "k_rms_norm_reduce  sm_80  regs ";
  EXPECT_NE(first.err.find(line), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("spills 0 B  (compiled)\n"), std::string::npos) << first.err;
  EXPECT_NE(first.out.find("__global__"), std::string::npos);  // stdout still carries the CUDA IR
  test::CliResult second = test::run_cli(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("spills 0 B  (cached)\n"), std::string::npos) << second.err;
  // Without --cache-dir the cache lives under $XDG_CACHE_HOME/tessera.
  test::TempDir xdg;
  test::CliResult by_env = test::run_cli({"compile", "-c", "torch.relu(torch.randn(33))", "--ir", "cuda", "-v"},
                                         {{"XDG_CACHE_HOME", xdg.path()}});
  ASSERT_EQ(by_env.exit_code, 0) << by_env.err;
  EXPECT_NE(by_env.err.find("(compiled)"), std::string::npos) << by_env.err;
  EXPECT_FALSE(fs::is_empty(fs::path(xdg.path()) / "tessera"));
}

}  // namespace
}  // namespace tessera

// The lower half of the pipeline checked end to end on the CPU: every program of the differential
// corpus is compiled with pipelines/default.yaml down to Kernel IR — once with the heuristics and
// under several random-knob schedules (RandomChoiceSource: a random valid value for every knob of
// every pass) — run on the `sim` target, and compared with the reference evaluator (relative error
// <= 1e-4 as compare_output measures it, like `tessera run`).
// Random schedules are how races, tail bugs and wrong Combine lowering show up. For the matmul-like
// programs (projections, GatedMLP, SDPA) the sampled schedules must also exercise register_tile:
// some of them hold register arrays in Kernel IR, which sim then runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "support/built_plugins.h"
#include "support/nvrtc_check.h"
#include "support/program_corpus.h"
#include "support/sanitizer_build.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/target.h"
#include "tessera/target/warp_access.h"
#include "tessera/support/internal_check.h"
#include "tessera/tune/choice_source.h"

namespace tessera {
namespace {

constexpr int kSampledSchedules = 10;

// Under the sanitizers (about 25 times slower) the matmul, reduction and online-softmax tests
// simulate a third of their sampled schedules (test::sanitizer_count); the tests that count what
// the samples chose compile all of them.
using test::kUnderSanitizers;
constexpr int kSimulatedSchedules = test::sanitizer_count(kSampledSchedules);
// The op corpus under the sanitizers: a third of its programs (test::sanitizer_share), each with 3
// of its 10 sampled schedules: they check the passes and the simulator for memory errors and
// undefined behaviour, while the release half checks every program and schedule against the
// reference (CI's 40-minute budget; docs/sanitizers.md).
constexpr int kCorpusSampledSchedules = kUnderSanitizers ? 3 : kSampledSchedules;
// How many of a program's `schedules` sampled schedules are simulated.
constexpr uint64_t simulated(int schedules) { return static_cast<uint64_t>(test::sanitizer_count(schedules)); }

class RandomKnobsTest : public test::BuiltPluginsTest,
                            public ::testing::WithParamInterface<test::CorpusProgram> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    auto spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
    ASSERT_TRUE(spec) << spec.error().render();
    pipeline_ = std::move(*spec);
    ASSERT_TRUE(validate_pipeline(pipeline_, host_->registry()));
    device_ = h100();
    ASSERT_NE(device_, nullptr);
  }

  // Compiles `text` to Kernel IR (sampling knobs with `seed` when given), simulates it and
  // compares every output with the reference. Failures name the schedule. Returns whether some
  // kernel holds a register array.
  bool check(const std::string& text, std::optional<uint64_t> seed, DType dtype = DType::F32) {
    const std::string schedule = std::string(dtype_short_name(dtype)) + ", " +
                                 (seed ? "sampled schedule seed " + std::to_string(*seed) : "heuristic schedule");
    const Graph torch = trace(text, dtype);
    if (HasFailure()) return false;
    Graph g = torch;
    Status st = lower(g, pipeline_, Dialect::Kernel, device_, seed, /*verify_each=*/true);
    EXPECT_TRUE(st) << schedule << ":\n" << st.error().render();
    if (!st) return false;
    simulate_and_compare(torch, g, schedule, dtype);
    last_lowered_ = g;
    return holds_register_array(g);
  }

  // Compiles `text` to Kernel IR as check() does, without running it (for tests that count what
  // the samples chose while one test per program runs them).
  void compile_only(const std::string& text, std::optional<uint64_t> seed, DType dtype = DType::F32) {
    Graph g = trace(text, dtype);
    if (HasFailure()) return;
    Status st = lower(g, pipeline_, Dialect::Kernel, device_, seed);
    ASSERT_TRUE(st) << text << ", seed " << (seed ? std::to_string(*seed) : "-") << ":\n" << st.error().render();
    last_lowered_ = std::move(g);
  }

  void simulate_and_compare(const Graph& torch, const Graph& g, const std::string& schedule, DType dtype) {
    auto sim = host_->registry().make_target("sim");
    ASSERT_NE(sim, nullptr);
    ValueMap inputs = make_inputs(torch, 7);
    auto expected = evaluate_reference(torch, inputs);
    ASSERT_TRUE(expected) << expected.error().render();
    TargetOptions to;
    to.arch = device_->arch;
    to.device = device_;
    auto ran = sim->execute(g, inputs, to);
    ASSERT_TRUE(ran) << schedule << ":\n" << ran.error().render() << "\n" << print_graph(g);
    for (const std::string& out : torch.outputs()) {
      auto cmp = compare_output(*expected, ran->outputs, out);
      ASSERT_TRUE(cmp) << cmp.error().render();
      EXPECT_TRUE(cmp->within(output_rtol(dtype))) << schedule << ": " << cmp->str() << "\n" << print_graph(g);
    }
  }

  static bool holds_register_array(const Graph& g) {
    struct Finder final : StmtVisitor {
      bool found = false;
      void visit_Init(const Init& s) override { found = found || s.type.is_array(); }
    } finder;
    for (const Node* n : g.nodes())
      if (const auto* k = n->op_as<KernelOp>()) finder.visit(k->body);
    return finder.found;
  }

  // The value of an int knob that leaves the kernel as it is.
  static int64_t off_value(const std::string& knob) {
    return knob == "SPLITK" || knob == "BUFFERS" || knob == "STAGES" || knob == "CLUSTER" || knob == "SPLIT" ||
                   knob == "EPILOGUE_SPLIT"
               ? 1
               : 0;
  }

  // The value `pass`.`knob` was given on some kernel of `g`, or nullopt (also when it is off).
  static std::optional<int64_t> int_knob(const Graph& g, const std::string& pass, const std::string& knob) {
    for (const Node* n : g.nodes())
      for (const KnobChoice& c : n->choices)
        if (c.pass == pass && c.knob == knob)
          if (const auto* v = std::get_if<int64_t>(&c.value); v && *v != off_value(knob)) return *v;
    return std::nullopt;
  }

  // Pins `pass`.`knob` to `value` in every later lowering of this test.
  void pin(const std::string& pass, const std::string& knob, AttrValue value) {
    for (auto& [stage, entries] : pipeline_.stages)
      for (PassEntry& e : entries)
        if (e.name == pass) e.pins.push_back(KnobPin{knob, value, {}});
  }

  // The tolerance outputs of `dtype` are compared with (the reference rounds like PyTorch).
  virtual double output_rtol(DType dtype) const { return default_output_rtol(dtype); }

  PipelineSpec pipeline_;
  const DeviceDesc* device_ = nullptr;
  Graph last_lowered_;  // the Kernel IR of the last successful check
};

// The corpus programs whose kernels register_tile applies to (a THREAD axis indexes the output of
// a reduction), so some sampled TN > 1 must give them register arrays.
bool register_tiled_family(const std::string& name) {
  for (const char* prefix : {"SeedReluMatmulBias", "GatedMLP", "Sdpa", "MatmulShapes", "LinearAndNorms_1"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST_P(RandomKnobsTest, HeuristicScheduleMatchesReference) { check(GetParam().text, std::nullopt); }

TEST_P(RandomKnobsTest, SampledSchedulesMatchReference) {
  int with_arrays = 0;
  for (uint64_t seed = 1; seed <= kCorpusSampledSchedules; ++seed) {
    with_arrays += check(GetParam().text, seed);
    if (HasFailure()) return;
  }
  if (!kUnderSanitizers && register_tiled_family(GetParam().name)) {
    EXPECT_GT(with_arrays, 0) << "no sampled schedule register-tiled " << GetParam().name;
  }
}

// Half-precision storage: 2-byte slabs move by cp.async in groups of 4 to 16 bytes (or synchronously
// where a group's start is not provably aligned) and
// every load and store converts.
TEST_P(RandomKnobsTest, Bf16AndF16SchedulesMatchReference) {
  check(GetParam().text, std::nullopt, DType::BF16);
  check(GetParam().text, 11, DType::F16);
}

// The matmul corpus of the K-slab and split-K passes: odd sizes, GEMV at M = 1, bmm, Linear with
// and without bias, the gated MLP, a residual epilogue, long K with few outputs. Every sampled
// schedule must match the reference, and the samples must exercise both passes: some split K
// across blocks (when K has a split), some cut K into slabs; and some give a thread a 2-D tile of
// outputs (register_tile's TM and TN both > 1).
struct MatmulProgram {
  const char* name;
  const char* text;
  bool has_split;  // K has a power-of-two split of 16 steps or more
};
const MatmulProgram kMatmulPrograms[] = {
    {"OddSizes", "a=torch.randn(33,129); b=torch.randn(129,77); a @ b", false},
    {"GemvAtM1", "x=torch.randn(1,1024); w=torch.randn(1024,96); x @ w", true},
    {"Bmm", "x=torch.randn(2,3,64,96); w=torch.randn(2,3,96,40); torch.matmul(x, w)", true},
    {"LinearBias", "x=torch.randn(5,256); nn.Linear(256,48)(x)", true},
    {"LinearNoBias", "x=torch.randn(5,256); nn.Linear(256,48,bias=False)(x)", true},
    {"GatedMlp", "x=torch.randn(3,64); g=nn.Linear(64,128,bias=False); u=nn.Linear(64,128,bias=False); "
                 "d=nn.Linear(128,64,bias=False); d(F.silu(g(x))*u(x))", true},
    {"ResidualEpilogue", "x=torch.randn(4,128); w=torch.randn(128,128); torch.relu(x @ w) + x", true},
    {"LongKFewOutputs", "x=torch.randn(2,4096); w=torch.randn(4096,8); x @ w", true},
    {"StagedConeDownProjection", "g=torch.randn(16,256); u=torch.randn(16,256); wd=torch.randn(256,64); (F.silu(g) * u) @ wd", true},
};

class MatmulScheduleTest : public RandomKnobsTest {};

// TMA (tma_copy pinned on, on the h100): matmul-shaped programs whose K slabs one box copy moves
// run with tma Stages in every dtype, ring-buffered and software-pipelined by the heuristic, under
// the heuristic schedule and sampled ones, against the reference on the simulator (which checks
// every barrier phase and copy, shared_memory.h).
class TmaScheduleTest : public RandomKnobsTest {
 protected:
  // The SIMT schedules' TMA copies: the bf16/f16 matmuls stay off the tensor cores, whose slabs
  // tma_copy does not move yet.
  void SetUp() override {
    RandomKnobsTest::SetUp();
    pin("use_tensor_cores", "INSTR", AttrValue(std::string("simt")));
  }

  // The TmaLoad statements of the last lowered graph, and its barrier rings of 2 or more slots.
  int tma_loads() const { return count().loads; }
  int barrier_rings() const { return count().rings; }
  // The Smem arrays of the last lowered graph declared with a swizzle.
  int swizzled_arrays() const { return count().swizzled; }

 private:
  struct Counter final : StmtVisitor {
    int loads = 0, rings = 0, swizzled = 0;
    void visit_TmaLoad(const TmaLoad&) override { ++loads; }
    void visit_MbarrierInit(const MbarrierInit& s) override { rings += s.slots > 1; }
    void visit_Smem(const Smem& s) override { swizzled += s.swizzle != SmemSwizzle::None; }
  };
  Counter count() const {
    Counter counter;
    for (const Node* n : last_lowered_.nodes())
      if (const auto* k = n->op_as<KernelOp>()) counter.visit(k->body);
    return counter;
  }
};

constexpr const char* kTmaPrograms[] = {
    "x=torch.randn(64,256); w=torch.randn(256,96); x @ w",
    "nn.Linear(128, 64)(torch.randn(2, 16, 128))",
    "x=torch.randn(2,64,96); w=torch.randn(2,96,64); torch.bmm(x, w)",
    ("import torch.nn.functional as F; x=torch.randn(1,70,64); wg=torch.randn(64,128); wu=torch.randn(64,128); "
     "F.silu(torch.matmul(x,wg))*torch.matmul(x,wu)"),
};

TEST_F(TmaScheduleTest, PinnedTmaSchedulesMatchTheReferenceInEveryDtype) {
  pin("tma_copy", "TMA", AttrValue(true));
  // Under the sanitizers a third of the programs (the first, the fourth): 73 s of ASan time for all.
  for (const char* text : test::sanitizer_share(std::vector<const char*>(std::begin(kTmaPrograms), std::end(kTmaPrograms)))) {
    SCOPED_TRACE(text);
    int with_tma = 0, pipelined = 0;
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      with_tma += tma_loads() > 0;
      pipelined += barrier_rings() > 0;
    }
    // The heuristic rings and pipelines the TMA slabs (double_buffer, pipeline_k_outer) wherever it
    // cuts K into slabs (not the bmm's K of 96 in bf16/f16, which stays one slab).
    EXPECT_GT(pipelined, 0) << "no dtype's heuristic schedule pipelines its TMA slabs";
    for (uint64_t seed = 1; seed <= static_cast<uint64_t>(test::sanitizer_count(4)); ++seed) {
      check(text, seed);
      if (HasFailure()) return;
    }
    EXPECT_EQ(with_tma, 3) << "the heuristic schedule of some dtype copies no slab with TMA";
  }
}

// Swizzled TMA slabs (split_inner_for_swizzle pinned to each swizzle): a block whose warps span two
// rows of the x slab, so the swizzle has conflicts to remove; slabs a whole number of spans wide
// are cut into column blocks. Every dtype, against the reference on the simulator, which writes
// the boxes swizzled as the TMA unit does: a load that XORs wrongly reads another element.
constexpr const char* kSwizzlePrograms[] = {
    "x=torch.randn(64,256); w=torch.randn(256,128); x @ w",
    "x=torch.randn(2,32,128); w=torch.randn(2,128,64); torch.bmm(x, w)",
};

// A row staged in TMA chunks by each of its passes (the max, the sum of exp, the output): the
// three loops fill one chunk buffer one after another, so each loop's fills continue the barrier's
// phase count from the previous loop's. With 3 chunks a pass (an odd count) a loop that restarted
// the count would wait for a phase that had completed (found with a row split across a cluster).
TEST_F(TmaScheduleTest, ChunkedRowPassesContinueTheBarriersPhaseCount) {
  pin("tma_copy", "TMA", AttrValue(true));
  pin("cluster_reduce", "CLUSTER", AttrValue(int64_t{1}));
  pin("split_reduce", "SPLIT", AttrValue(int64_t{1}));
  pin("split_reduce", "EPILOGUE_SPLIT", AttrValue(int64_t{1}));
  pin("cooperative_reduce", "THREADS", AttrValue(int64_t{64}));
  pin("chunk_reduce", "CHUNK", AttrValue(int64_t{256}));
  pin("stage_inputs", "STAGE", AttrValue(std::string("in0")));
  check("torch.softmax(torch.randn(5, 768), dim=-1)", std::nullopt);
}

TEST_F(TmaScheduleTest, SwizzledTmaSlabsMatchTheReferenceInEveryDtype) {
  pin("tma_copy", "TMA", AttrValue(true));
  pin("launch_geometry", "BM", AttrValue(int64_t{32}));
  pin("launch_geometry", "BN", AttrValue(int64_t{64}));
  pin("register_tile", "TM", AttrValue(int64_t{2}));
  pin("register_tile", "TN", AttrValue(int64_t{4}));
  // Under the sanitizers the 128-byte swizzle only (37 s of ASan time for all three).
  for (const char* swizzle : test::sanitizer_share(std::vector<const char*>{"128B", "64B", "32B"})) {
    pin("split_inner_for_swizzle", "SWIZZLE", AttrValue(std::string(swizzle)));
    for (const char* text : kSwizzlePrograms) {
      for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
        SCOPED_TRACE(std::string(text) + " " + swizzle + " " + std::string(dtype_short_name(dtype)));
        check(text, std::nullopt, dtype);
        if (HasFailure()) return;
        EXPECT_GT(swizzled_arrays(), 0) << "no slab was swizzled";
      }
    }
  }
}

// fuse_stage_epilogue: the down projection's A operand `silu(g) * u` over staged g and u slabs is
// computed once per block into a shared slab (a SlabMap), under the heuristic schedule in f32 and
// with TMA copies, against the reference; the sampled schedules run in the corpus. In bf16 and f16
// the cone is a kernel of its own (fuse's tensor-core rule) and the projection runs on the tensor
// cores.
TEST_F(MatmulScheduleTest, StagedConeIsComputedOncePerBlockAndMatchesTheReference) {
  const char* text = "g=torch.randn(32,512); u=torch.randn(32,512); wd=torch.randn(512,128); (F.silu(g) * u) @ wd";
  auto slab_maps = [&] {
    int n = 0;
    for (const Node* node : last_lowered_.nodes())
      if (const auto* k = node->op_as<KernelOp>())
        for (const Stmt& s : k->body)
          if (const auto* sm = s.as<Smem>()) n += sm->name == "g_u_smem";
    return n;
  };
  for (bool tma : {false, true}) {
    pin("tma_copy", "TMA", AttrValue(tma));
    // Under the sanitizers f32 only (20 s of ASan time for the three dtypes).
    for (DType dtype : test::sanitizer_share(std::vector<DType>{DType::F32, DType::BF16, DType::F16})) {
      SCOPED_TRACE(std::string(dtype_short_name(dtype)) + (tma ? ", TMA" : ""));
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      int tensor_core_kernels = 0;
      for (const Node* node : last_lowered_.nodes())
        if (const auto* k = node->op_as<KernelOp>()) tensor_core_kernels += contains_tensor_core_statements(k->body);
      EXPECT_EQ(slab_maps(), dtype == DType::F32 ? 1 : 0) << print_graph(last_lowered_);
      EXPECT_EQ(tensor_core_kernels, dtype == DType::F32 ? 0 : 1) << print_graph(last_lowered_);
    }
  }
}

// Rows staged whole by several TMA boxes (stage_tma_boxes: a first dim over 256 elements cut into
// equal boxes): RMSNorm, softmax and log-softmax rows, in every dtype, against the reference.
constexpr const char* kTmaRowPrograms[] = {
    "nn.RMSNorm(2048)(torch.randn(4, 2048))",
    "torch.softmax(torch.randn(8, 4096), dim=-1)",
    "torch.log_softmax(torch.randn(3, 3072), dim=-1)",
};

TEST_F(TmaScheduleTest, RowsStagedByTmaBoxesMatchTheReferenceInEveryDtype) {
  pin("tma_copy", "TMA", AttrValue(true));
  for (const char* text : kTmaRowPrograms) {
    SCOPED_TRACE(text);
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      EXPECT_GT(tma_loads(), 0) << dtype_short_name(dtype) << ": no row is staged by TMA";
    }
  }
}

#ifdef TESSERA_HAVE_CUDA
// The same schedules as CUDA: every kernel with a TMA copy compiles with NVRTC for sm_90 (and, with
// its copies trapping below sm_90, for sm_80).
TEST_F(TmaScheduleTest, PinnedTmaSchedulesCompileWithNvrtc) {
  pin("tma_copy", "TMA", AttrValue(true));
  int compiled = 0;
  std::vector<const char*> programs(std::begin(kTmaPrograms), std::end(kTmaPrograms));
  programs.insert(programs.end(), std::begin(kTmaRowPrograms), std::end(kTmaRowPrograms));
  for (const char* text : programs) {
    for (DType dtype : {DType::F32, DType::BF16}) {
      Graph g = trace(text, dtype);
      ASSERT_FALSE(HasFailure()) << text;
      Status st = lower(g, pipeline_, Dialect::Cuda, device_);
      ASSERT_TRUE(st) << text << ":\n" << st.error().render();
      for (const Node* n : g.nodes()) {
        const auto* op = n->op_as<CudaOp>();
        if (op == nullptr || op->source.find("cp.async.bulk.tensor") == std::string::npos) continue;
        for (const char* arch : {"sm_90", "sm_80"}) EXPECT_EQ(test::nvrtc_compile(*op, arch), "") << text << " " << arch;
        ++compiled;
      }
    }
  }
  EXPECT_GT(compiled, 0);
  // Swizzled slabs: the XORed loads and the tensor maps' swizzles.
  pin("launch_geometry", "BM", AttrValue(int64_t{32}));
  pin("launch_geometry", "BN", AttrValue(int64_t{64}));
  pin("register_tile", "TN", AttrValue(int64_t{4}));
  pin("split_inner_for_swizzle", "SWIZZLE", AttrValue(std::string("128B")));
  Graph g = trace(kSwizzlePrograms[0], DType::F32);
  ASSERT_FALSE(HasFailure());
  Status st = lower(g, pipeline_, Dialect::Cuda, device_);
  ASSERT_TRUE(st) << st.error().render();
  int swizzled = 0;
  for (const Node* n : g.nodes()) {
    const auto* op = n->op_as<CudaOp>();
    if (op == nullptr || std::none_of(op->params.begin(), op->params.end(), [](const KernelParam& p) {
          return p.kind == ParamKind::TensorMap && p.tensor_map.swizzle == SmemSwizzle::B128;
        }))
      continue;
    EXPECT_EQ(test::nvrtc_compile(*op, "sm_90"), "") << op->source;
    ++swizzled;
  }
  EXPECT_GT(swizzled, 0) << "no kernel has a 128-byte swizzled tensor map";
}
#endif

const MatmulProgram& matmul_program(const std::string& name) {
  for (const MatmulProgram& p : kMatmulPrograms)
    if (name == p.name) return p;
  ADD_FAILURE() << "no matmul program " << name;
  return kMatmulPrograms[0];
}

std::vector<test::CorpusProgram> matmul_corpus() {
  std::vector<test::CorpusProgram> out;
  for (const MatmulProgram& p : kMatmulPrograms) out.push_back({p.name, p.text});
  return out;
}

// One test per program, so that each gets its own time limit (minutes under the sanitizers).
class MatmulScheduleProgramTest : public MatmulScheduleTest {};

// The sampled schedules in two halves, each test under its own time limit.
TEST_P(MatmulScheduleProgramTest, SampledSchedulesMatchReference) {
  const MatmulProgram& p = matmul_program(GetParam().name);
  check(p.text, std::nullopt);
  for (uint64_t seed = 1; seed <= kSimulatedSchedules / 2; ++seed) {
    check(p.text, seed);
    if (HasFailure()) return;
  }
}

TEST_P(MatmulScheduleProgramTest, MoreSampledSchedulesMatchReference) {
  const MatmulProgram& p = matmul_program(GetParam().name);
  for (uint64_t seed = kSimulatedSchedules / 2 + 1; seed <= kSimulatedSchedules; ++seed) {
    check(p.text, seed);
    if (HasFailure()) return;
  }
}

// Seed 22 in f16 samples a schedule of Bmm that takes the simulator 12 s (minutes under the
// sanitizers): 23 samples another.
TEST_P(MatmulScheduleProgramTest, HalfPrecisionSchedulesMatchReference) {
  const MatmulProgram& p = matmul_program(GetParam().name);
  check(p.text, 21, DType::BF16);
  check(p.text, 23, DType::F16);
}

INSTANTIATE_TEST_SUITE_P(Matmuls, MatmulScheduleProgramTest, ::testing::ValuesIn(matmul_corpus()),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

// The samples (compiled here; the tests above run them on the simulator) exercise every matmul
// pass: some cut K into slabs and some split it across blocks (where K has a split), in every
// program; double_buffer and pipeline_k_outer apply wherever a K slab loop stages its operands, so
// several programs get a pipelined K loop (tails included: OddSizes has K = 129); and some thread
// gets a 2-D tile of outputs.
TEST_F(MatmulScheduleTest, SampledSchedulesSplitChunkPipelineAndTileInTwoDimensions) {
  int pipelined_programs = 0;  // programs some schedule ring-buffered and pipelined
  int two_dimensional = 0;     // sampled schedules with TM x TN outputs per thread, both > 1
  for (const MatmulProgram& p : kMatmulPrograms) {
    SCOPED_TRACE(p.name);
    compile_only(p.text, std::nullopt);
    int pipelined = int_knob(last_lowered_, "pipeline_k_outer", "STAGES").value_or(1) > 1;  // the heuristic's too
    int split = 0, chunked = 0;
    for (uint64_t seed = 1; seed <= kSampledSchedules; ++seed) {
      compile_only(p.text, seed);
      if (HasFailure()) return;
      split += int_knob(last_lowered_, "split_matmul_k", "SPLITK").has_value();
      chunked += int_knob(last_lowered_, "chunk_matmul_k", "BK").has_value();
      pipelined += int_knob(last_lowered_, "pipeline_k_outer", "STAGES").has_value();
      two_dimensional += int_knob(last_lowered_, "register_tile", "TM").value_or(1) > 1 &&
                         int_knob(last_lowered_, "register_tile", "TN").value_or(1) > 1;
    }
    EXPECT_GT(chunked, 0) << "no sampled schedule cut K into slabs in " << p.name;
    if (p.has_split) EXPECT_GT(split, 0) << "no sampled schedule split K in " << p.name;
    pipelined_programs += pipelined > 0;
  }
  EXPECT_GE(pipelined_programs, 3) << "too few programs got a sampled pipelined K loop";
  EXPECT_GT(two_dimensional, 0) << "no sampled schedule gave a thread a 2-D tile of outputs";
}

// The acceptance case of the split: a decode step's projection launches a block per SM at least.
TEST_F(MatmulScheduleTest, DecodeProjectionFillsEverySm) {
  check("x=torch.randn(1,4096); w=torch.randn(4096,4096); x @ w", std::nullopt);
  int64_t most_blocks = 0;
  for (const Node* n : last_lowered_.nodes())
    if (const auto* k = n->op_as<KernelOp>()) most_blocks = std::max(most_blocks, k->grid[0] * k->grid[1] * k->grid[2]);
  EXPECT_GE(most_blocks, device_->sm_count);
}

// The reduction corpus of split_reduce: rows of 1, 31, 4097 and 262144 elements, a whole-tensor
// sum of 2^24, softmax with a masked (-inf) tail, max and min, logsumexp, a norm over few rows, and
// a whole-tensor mean fused with a large epilogue. Every sampled schedule must match the reference
// in f32, bf16 and f16, and the samples must split some reductions and some epilogues.
struct ReductionProgram {
  const char* name;
  const char* text;
  int schedules;  // sampled schedules (fewer for the largest programs)
  bool large = false;  // half precision with the heuristic schedule only (a sampled one may take
                       // seconds on the simulator)
};
const ReductionProgram kReductionPrograms[] = {
    {"RowsOf1", "x=torch.randn(8,1); torch.softmax(x, dim=-1)", 4},
    {"RowsOf31", "x=torch.randn(3,31); torch.softmax(x, dim=-1)", 4},
    {"RowsOf4097", "x=torch.randn(2,4097); torch.log_softmax(x, dim=-1)", 6},
    {"MaskedSoftmax", "x=torch.randn(2,9000); torch.softmax(x.masked_fill(torch.arange(9000) >= 3000, float('-inf')), dim=-1)",
     6},
    {"MaxMinusMin", "x=torch.randn(64,300); x.amax() - x.amin()", 6},
    {"Logsumexp", "x=torch.randn(3,20000); torch.logsumexp(x, dim=-1)", 6},
    {"RmsNormFewRows", "x=torch.randn(2,16384); nn.RMSNorm(16384)(x)", 6},
    {"MeanEpilogue", "x=torch.randn(256,256); torch.nn.functional.gelu(x)*2 + x.mean()", 4},
    {"WholeTensorSum2e20", "x=torch.randn(1024,1024); x.sum()", 4},
    {"Softmax262144", "torch.softmax(torch.randn(2, 262144), dim=-1)", 1, true},
    {"WholeTensorSum2e24", "x=torch.randn(4096,4096); x.sum()", 0, true},
};

class SplitReduceTest : public RandomKnobsTest {
 protected:
  // The most blocks any kernel of the last lowered graph launches.
  int64_t most_blocks() const {
    int64_t most = 0;
    for (const Node* n : last_lowered_.nodes())
      if (const auto* k = n->op_as<KernelOp>()) most = std::max(most, k->grid[0] * k->grid[1] * k->grid[2]);
    return most;
  }
};

const ReductionProgram& reduction_program(const std::string& name) {
  for (const ReductionProgram& p : kReductionPrograms)
    if (name == p.name) return p;
  TESSERA_INTERNAL_CHECK(false, "reduction_program: every name comes from kReductionPrograms");
  return kReductionPrograms[0];
}

std::vector<test::CorpusProgram> reduction_corpus() {
  std::vector<test::CorpusProgram> out;
  for (const ReductionProgram& p : kReductionPrograms) out.push_back({p.name, p.text});
  return out;
}

// One test per program, so that each gets its own time limit (the largest take minutes under the
// sanitizers) and they run in parallel.
class SplitReduceProgramTest : public SplitReduceTest {};

TEST_P(SplitReduceProgramTest, SampledSplitsMatchReferenceInEveryDtype) {
  const ReductionProgram& p = reduction_program(GetParam().name);
  check(p.text, std::nullopt);
  for (uint64_t seed = 1; seed <= simulated(p.schedules); ++seed) {
    check(p.text, seed);
    if (HasFailure()) return;
  }
  check(p.text, p.large ? std::nullopt : std::optional<uint64_t>(31), DType::BF16);
  check(p.text, p.large ? std::nullopt : std::optional<uint64_t>(32), DType::F16);
}

INSTANTIATE_TEST_SUITE_P(Reductions, SplitReduceProgramTest, ::testing::ValuesIn(reduction_corpus()),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

// The sampled schedules of the programs above (compiled, not run: the test above runs them) split
// some reductions and some epilogues.
TEST_F(SplitReduceTest, SampledSchedulesSplitReductionsAndEpilogues) {
  int split = 0, epilogue_split = 0, clustered = 0;
  for (const ReductionProgram& p : kReductionPrograms)
    for (uint64_t seed = 1; seed <= static_cast<uint64_t>(p.schedules); ++seed) {
      Graph g = trace(p.text, DType::F32);
      ASSERT_FALSE(HasFailure()) << p.name;
      Status st = lower(g, pipeline_, Dialect::Kernel, device_, seed);
      ASSERT_TRUE(st) << p.name << ":\n" << st.error().render();
      split += int_knob(g, "split_reduce", "SPLIT").value_or(1) > 1;
      epilogue_split += int_knob(g, "split_reduce", "EPILOGUE_SPLIT").value_or(1) > 1;
      clustered += int_knob(g, "cluster_reduce", "CLUSTER").value_or(1) > 1;
    }
  EXPECT_GT(split, 0) << "no sampled schedule split a reduction";
  EXPECT_GT(epilogue_split, 0) << "no sampled schedule split an epilogue";
  // The same programs' rows (of 1, 31, 4097, 262144; whole tensors of 2^20 and 2^24) split across
  // thread-block clusters: the tests above simulate these samples against the reference.
  EXPECT_GT(clustered, 0) << "no sampled schedule split a row across a cluster";
}

// The acceptance cases: each launches at least a block per SM and simulates correctly. The sum
// over 8192 x 8192 and the mean over 4096 x 4096 are compiled at full size and simulated at a
// sixteenth and a quarter of it (same schedule shape; the full sizes take minutes on the
// simulator; the sum over 2^24 elements runs in SplitReduceProgramTest).
TEST_F(SplitReduceTest, LargeReductionsFillEverySm) {
  const char* full[] = {"x=torch.randn(8192,8192); x.sum()",
                        "x=torch.randn(4096,4096); torch.nn.functional.gelu(x)*2 + x.mean()",
                        "torch.softmax(torch.randn(4, 262144), dim=-1)"};
  for (const char* text : full) {
    SCOPED_TRACE(text);
    Graph g = trace(text, DType::F32);
    ASSERT_FALSE(HasFailure());
    ASSERT_TRUE(lower(g, pipeline_, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/false));
    last_lowered_ = g;
    EXPECT_GE(most_blocks(), device_->sm_count);
    for (const Node* n : g.nodes())  // every kernel reading the large input is spread
      if (const auto* k = n->op_as<KernelOp>(); k != nullptr && std::find(n->inputs.begin(), n->inputs.end(), "x") != n->inputs.end())
        EXPECT_GE(k->grid[0] * k->grid[1] * k->grid[2], device_->sm_count) << n->id();
  }
  for (const char* text : {"x=torch.randn(2048,2048); x.sum()",
                           "x=torch.randn(2048,2048); torch.nn.functional.gelu(x)*2 + x.mean()",
                           "torch.softmax(torch.randn(4, 262144), dim=-1)"}) {
    SCOPED_TRACE(text);
    check(text, std::nullopt);
    EXPECT_GE(most_blocks(), device_->sm_count);
  }
}

// The corpus of fuse_online_softmax: softmax, log_softmax and logsumexp over rows of 1, 31, 4097
// and 65536 elements, and masked rows (a masked tail, a masked head, a fully masked row, whose
// softmax is NaN in the reference and in the two-pass kernel alike). Each runs under the heuristic
// schedule and sampled schedules of the default pipeline, and under the heuristic and sampled
// schedules with stage_inputs pinned to `none`, so the rows are read from memory and the pass applies wherever
// the shape allows (its own knob sampled True or False); in f32, bf16 and f16. Where the pass
// applies, some of those schedules must merge the passes. It does not apply to rows of 1 (the one
// element is loaded once, outside the loops) nor to logsumexp (its max is a kernel of its own,
// guarded against infinite maxima, so the sum kernel has no max pass to merge).
struct OnlineSoftmaxProgram {
  const char* name;
  const char* text;
  int schedules;  // sampled schedules of each pipeline
  bool merges;    // some schedule with the rows read from memory merges the passes
};
const OnlineSoftmaxProgram kOnlineSoftmaxPrograms[] = {
    {"SoftmaxRowsOf1", "x=torch.randn(8,1); torch.softmax(x, dim=-1)", 3, false},
    {"LogSoftmaxRowsOf31", "x=torch.randn(3,31); torch.log_softmax(x, dim=-1)", 3, true},
    {"SoftmaxRowsOf4097", "x=torch.randn(2,4097); torch.softmax(x, dim=-1)", 4, true},
    {"LogSoftmaxRowsOf65536", "torch.log_softmax(torch.randn(2, 65536), dim=-1)", 2, true},
    {"LogsumexpRowsOf4097", "x=torch.randn(3,4097); torch.logsumexp(x, dim=-1)", 2, false},
    {"MaskedTail", "x=torch.randn(2,9000); torch.softmax(x.masked_fill(torch.arange(9000) >= 3000, float('-inf')), dim=-1)", 4, true},
    {"MaskedHead", "x=torch.randn(2,9000); torch.log_softmax(x.masked_fill(torch.arange(9000) < 6000, float('-inf')), dim=-1)", 4, true},
    {"FullyMaskedRow", "x=torch.randn(3,5000); torch.softmax(x.masked_fill(torch.arange(3).reshape(3,1) == 1, float('-inf')), dim=-1)", 4, true},
};

class OnlineSoftmaxTest : public RandomKnobsTest {
 protected:

  // Kernels of the last lowered graph that fuse_online_softmax rewrote (its ONLINE knob True).
  int online_kernels() const {
    int count = 0;
    for (const Node* n : last_lowered_.nodes())
      for (const KnobChoice& c : n->choices)
        if (c.pass == "fuse_online_softmax" && c.knob == "ONLINE" && c.value == AttrValue(true)) ++count;
    return count;
  }
  // Whether fuse_online_softmax was asked on some kernel and answered False.
  bool declined_online() const {
    for (const Node* n : last_lowered_.nodes())
      for (const KnobChoice& c : n->choices)
        if (c.pass == "fuse_online_softmax" && c.knob == "ONLINE" && c.value == AttrValue(false)) return true;
    return false;
  }

  // The statements of Kernel IR that read `buffer` from global memory (loads, vector loads,
  // cp.async copies), over every kernel: each is one pass over the elements it reads.
  static int global_reads(const Graph& g, const std::string& buffer) {
    struct Counter final : StmtVisitor {
      std::string buffer;
      int reads = 0;
      void visit_Load(const Load& s) override { reads += s.buffer == buffer; }
      void visit_VectorLoad(const VectorLoad& s) override { reads += s.buffer == buffer; }
      void visit_CpAsyncCopy(const CpAsyncCopy& s) override { reads += s.src == buffer; }
    } counter;
    counter.buffer = buffer;
    for (const Node* n : g.nodes())
      if (const auto* k = n->op_as<KernelOp>()) counter.visit(k->body);
    return counter.reads;
  }
};

const OnlineSoftmaxProgram& online_softmax_program(const std::string& name) {
  for (const OnlineSoftmaxProgram& p : kOnlineSoftmaxPrograms)
    if (name == p.name) return p;
  ADD_FAILURE() << "no online softmax program " << name;
  return kOnlineSoftmaxPrograms[0];
}

std::vector<test::CorpusProgram> online_softmax_corpus() {
  std::vector<test::CorpusProgram> out;
  for (const OnlineSoftmaxProgram& p : kOnlineSoftmaxPrograms) out.push_back({p.name, p.text});
  return out;
}

// One test per program, so that each gets its own time limit (minutes under the sanitizers).
class OnlineSoftmaxProgramTest : public OnlineSoftmaxTest {};

TEST_P(OnlineSoftmaxProgramTest, SampledSchedulesMatchReference) {
  const OnlineSoftmaxProgram& p = online_softmax_program(GetParam().name);
  check(p.text, std::nullopt);
  for (uint64_t seed = 1; seed <= simulated(p.schedules); ++seed) {
    check(p.text, seed);
    if (HasFailure()) return;
  }
}

// The rows read from memory (not staged) in every dtype, and sampled: every schedule matches the
// reference (whether they merge the passes is checked below, compiled only).
TEST_P(OnlineSoftmaxProgramTest, RowsReadFromMemoryMatchReferenceInEveryDtype) {
  const OnlineSoftmaxProgram& p = online_softmax_program(GetParam().name);
  pin("stage_inputs", "STAGE", AttrValue(std::string("none")));
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    check(p.text, std::nullopt, dtype);
    if (HasFailure()) return;
  }
  check(p.text, 41, DType::BF16);
  check(p.text, 42, DType::F16);
}

TEST_P(OnlineSoftmaxProgramTest, SampledRowsReadFromMemoryMatchReference) {
  const OnlineSoftmaxProgram& p = online_softmax_program(GetParam().name);
  pin("stage_inputs", "STAGE", AttrValue(std::string("none")));
  for (uint64_t seed = 1; seed <= simulated(p.schedules); ++seed) {
    check(p.text, seed);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, OnlineSoftmaxProgramTest, ::testing::ValuesIn(online_softmax_corpus()),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

// With the rows read from memory (the schedules the tests above run, compiled here), some schedule
// of each program that allows it merges the max and sum-of-exp passes into one, none of the
// others does, and some sampled schedule keeps the two passes (ONLINE=False).
TEST_F(OnlineSoftmaxTest, RowsReadFromMemoryMergeThePassesWhereTheyCan) {
  pin("stage_inputs", "STAGE", AttrValue(std::string("none")));
  int declined = 0;
  for (const OnlineSoftmaxProgram& p : kOnlineSoftmaxPrograms) {
    SCOPED_TRACE(p.name);
    int program_online = 0;
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      compile_only(p.text, std::nullopt, dtype);
      program_online += online_kernels() > 0;
    }
    for (uint64_t seed = 1; seed <= static_cast<uint64_t>(p.schedules); ++seed) {
      compile_only(p.text, seed);
      if (HasFailure()) return;
      program_online += online_kernels() > 0;
      declined += declined_online();
    }
    compile_only(p.text, 41, DType::BF16);
    program_online += online_kernels() > 0;
    compile_only(p.text, 42, DType::F16);
    program_online += online_kernels() > 0;
    if (p.merges) EXPECT_GT(program_online, 0) << "no schedule merged the passes of " << p.name;
    else EXPECT_EQ(program_online, 0) << "the passes of " << p.name << " were merged";
  }
  EXPECT_GT(declined, 0) << "no sampled schedule kept the two passes";
}

// A fully masked row: the merged kernel gives the two-pass kernel's result (NaN where the
// reference has NaN), element for element, also when a thread sees only masked elements first.
TEST_F(OnlineSoftmaxTest, FullyMaskedRowMatchesTheTwoPassKernel) {
  const std::string text =
      "x=torch.randn(3,5000); torch.log_softmax(x.masked_fill(torch.arange(3).reshape(3,1) != 2, float('-inf')), dim=-1)";
  const Graph torch = trace(text, DType::F32);
  ASSERT_FALSE(HasFailure());
  pin("stage_inputs", "STAGE", AttrValue(std::string("none")));
  ValueMap inputs = make_inputs(torch, 7);
  auto sim = host_->registry().make_target("sim");
  ASSERT_NE(sim, nullptr);
  TargetOptions to;
  to.arch = device_->arch;
  to.device = device_;
  std::map<bool, ValueMap> outputs;
  for (bool online : {false, true}) {
    PipelineSpec saved = pipeline_;
    pin("fuse_online_softmax", "ONLINE", AttrValue(online));
    Graph g = torch;
    ASSERT_TRUE(lower(g, pipeline_, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/true));
    pipeline_ = saved;
    last_lowered_ = g;
    EXPECT_EQ(online_kernels() > 0, online);
    auto ran = sim->execute(g, inputs, to);
    ASSERT_TRUE(ran) << ran.error().render();
    outputs[online] = ran->outputs;
  }
  const std::string out = torch.outputs().at(0);
  const TensorValue& two_pass = outputs[false].at(out);
  const TensorValue& merged = outputs[true].at(out);
  ASSERT_EQ(two_pass.size(), merged.size());
  int nans = 0;
  for (int64_t i = 0; i < two_pass.size(); ++i) {
    const double a = two_pass.data[i], b = merged.data[i];
    nans += std::isnan(a);
    ASSERT_EQ(std::isnan(a), std::isnan(b)) << "element " << i;
    if (!std::isnan(a)) ASSERT_NEAR(a, b, 1e-5 * std::max(1.0, std::abs(a))) << "element " << i;
  }
  EXPECT_EQ(nans, 2 * 5000) << "the two masked rows are NaN";
}

// The acceptance case: softmax over rows of 65536 reads x from memory twice (once for the row's
// normalizer, once for the output), not three times, where the row is not kept on chip. For 1024
// rows the default schedule keeps each row whole and reads it in chunks from memory, where the
// merged pass saves the third read; and so does a schedule of 64 rows that keeps the row whole
// (one block a row: CLUSTER=1, SPLIT=1). For 64 rows the default schedule splits each row across
// a cluster of 4 blocks, each staging its share: the row is read once.
TEST_F(OnlineSoftmaxTest, SoftmaxOf65536ReadsItsRowTwice) {
  for (const auto& [text, reads] : {std::pair{"torch.softmax(torch.randn(64, 65536), dim=-1)", 1},
                                    std::pair{"torch.softmax(torch.randn(1024, 65536), dim=-1)", 2}}) {
    SCOPED_TRACE(text);
    Graph g = trace(text, DType::F32);
    ASSERT_FALSE(HasFailure());
    ASSERT_TRUE(lower(g, pipeline_, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/false));
    EXPECT_EQ(global_reads(g, "x"), reads) << print_graph(g);
  }

  const char* text = "torch.softmax(torch.randn(64, 65536), dim=-1)";
  Graph g;

  pin("cluster_reduce", "CLUSTER", AttrValue(int64_t{1}));
  pin("split_reduce", "SPLIT", AttrValue(int64_t{1}));
  for (bool online : {false, true}) {
    PipelineSpec saved = pipeline_;
    pin("fuse_online_softmax", "ONLINE", AttrValue(online));
    g = trace(text, DType::F32);
    ASSERT_TRUE(lower(g, pipeline_, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/false));
    pipeline_ = saved;
    EXPECT_EQ(global_reads(g, "x"), online ? 2 : 3) << print_graph(g);
  }
}

// fuse_mean_variance: rows whose mean and variance the kernel computes (LayerNorm, torch.var and
// torch.std, a hand-written `((x - mean)**2).mean(-1)`), read from memory so that the two passes
// merge into one pass of shifted sums; rows of 1, 31, 4097 and 65536, a row whose mean is large
// against its spread (where unshifted sums of squares would cancel) and constant rows (whose
// std must be 0, not NaN). Each runs its heuristic schedule in f32, bf16 and f16 and sampled
// schedules in f32 on the simulator against the reference.
struct MeanVarianceProgram {
  const char* name;
  const char* text;
  bool merges;          // the heuristic schedule in f32 with the rows read from memory merges the passes
  bool merges_in_half;  // and so in bf16 and f16: LayerNorm computes its statistics in f32, as
                        // PyTorch's does; torch.var rounds each deviation and square to the
                        // storage type, as eager does (casts between the operations), and keeps
                        // its two passes
};
const MeanVarianceProgram kMeanVariancePrograms[] = {
    {"LayerNormRowsOf65536", "nn.LayerNorm(65536)(torch.randn(2, 65536))", true, true},
    {"LayerNormRowsOf31", "nn.LayerNorm(31)(torch.randn(300, 31))", true, true},
    {"VarRowsOf4097", "x=torch.randn(3, 4097); torch.var(x, dim=-1)", true, false},
    {"StdOfRowsFarFromZero", "x=torch.randn(4, 9000); torch.std(x * 0.1 + 100, dim=-1)", true, false},
    // A row of one element has no row loop left to merge.
    {"HandWrittenVarianceRowsOf1", "x=torch.randn(5, 1); ((x - x.mean(-1, keepdim=True))**2).mean(-1)", false, false},
    {"HandWrittenVarianceRowsOf4097", "x=torch.randn(3, 4097); ((x - x.mean(-1, keepdim=True))**2).mean(-1)", true, false},
    {"StdOfConstantRows", "x=torch.randn(4, 3000); torch.std(x * 0 + 2.5, dim=-1)", true, false},
};

class MeanVarianceTest : public OnlineSoftmaxTest {
 protected:
  // The statements of Kernel IR that read `buffer` from global memory inside a loop, over every
  // kernel: each is one pass over a row (a load outside every loop reads one element).
  static int row_passes(const Graph& g, const std::string& buffer) {
    struct Counter final : StmtVisitor {
      std::string buffer;
      int depth = 0;
      int reads = 0;
      void visit_Loop(const Loop& s) override {
        ++depth;
        StmtVisitor::visit_Loop(s);
        --depth;
      }
      void visit_Load(const Load& s) override { reads += depth > 0 && s.buffer == buffer; }
      void visit_VectorLoad(const VectorLoad& s) override { reads += depth > 0 && s.buffer == buffer; }
      void visit_CpAsyncCopy(const CpAsyncCopy& s) override { reads += depth > 0 && s.src == buffer; }
    } counter;
    counter.buffer = buffer;
    for (const Node* n : g.nodes())
      if (const auto* k = n->op_as<KernelOp>()) counter.visit(k->body);
    return counter.reads;
  }

  // Kernels of the last lowered graph that fuse_mean_variance rewrote (its ONE_PASS knob True).
  int one_pass_kernels() const {
    int count = 0;
    for (const Node* n : last_lowered_.nodes())
      for (const KnobChoice& c : n->choices)
        if (c.pass == "fuse_mean_variance" && c.knob == "ONE_PASS" && c.value == AttrValue(true)) ++count;
    return count;
  }
};

std::vector<test::CorpusProgram> mean_variance_corpus() {
  std::vector<test::CorpusProgram> out;
  for (const MeanVarianceProgram& p : kMeanVariancePrograms) out.push_back({p.name, p.text});
  return test::sanitizer_share(out);
}

class MeanVarianceProgramTest : public MeanVarianceTest {};

TEST_P(MeanVarianceProgramTest, RowsReadFromMemoryMatchReference) {
  const MeanVarianceProgram* program = nullptr;
  for (const MeanVarianceProgram& p : kMeanVariancePrograms)
    if (GetParam().name == p.name) program = &p;
  ASSERT_NE(program, nullptr);
  pin("stage_inputs", "STAGE", AttrValue(std::string("none")));
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    check(program->text, std::nullopt, dtype);
    if (HasFailure()) return;
    EXPECT_EQ(one_pass_kernels() > 0, dtype == DType::F32 ? program->merges : program->merges_in_half)
        << dtype_short_name(dtype);
  }
  for (uint64_t seed = 1; seed <= simulated(3); ++seed) {
    check(program->text, seed);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, MeanVarianceProgramTest, ::testing::ValuesIn(mean_variance_corpus()),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

// The acceptance case: LayerNorm over rows of 65536 not kept on chip reads x from memory twice
// (the statistics, then the output) instead of three times, plus the one element per row the shift
// reads; with ONE_PASS=False it keeps the two statistics passes.
TEST_F(MeanVarianceTest, LayerNormOf65536ReadsItsRowTwice) {
  const char* text = "nn.LayerNorm(65536)(torch.randn(4, 65536))";
  for (bool one_pass : {false, true}) {
    PipelineSpec saved = pipeline_;
    pin("fuse_mean_variance", "ONE_PASS", AttrValue(one_pass));
    Graph g = trace(text, DType::F32);
    ASSERT_FALSE(HasFailure());
    ASSERT_TRUE(lower(g, pipeline_, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/false));
    pipeline_ = saved;
    EXPECT_EQ(row_passes(g, "x"), one_pass ? 2 : 3) << print_graph(g);
  }
}

// cluster_reduce: rows split across the blocks of a thread-block cluster, combined through
// distributed shared memory. Each program runs with every cluster size pinned (2, 4, 8) in f32,
// with 4 in bf16 and f16, and with sampled schedules of clusters of 4, on the simulator against
// the reference: reductions of every combine op (sum, max, the integer sum), a share that does
// not divide the row (guarded), a masked row whose first blocks hold only -inf, LayerNorm (a
// second reduction reading the first's result), a whole-tensor sum (written by block 0).
struct ClusterProgram {
  const char* name;
  const char* text;
  bool half;  // also run in bf16 and f16 (programs of float inputs)
};
const ClusterProgram kClusterPrograms[] = {
    {"RmsNormRows", "nn.RMSNorm(4096)(torch.randn(6, 4096))", true},
    {"SoftmaxRowsOf3000", "torch.softmax(torch.randn(5, 3000), dim=-1)", true},
    {"MaskedLogSoftmaxHead", "x=torch.randn(3, 4000); torch.log_softmax(x.masked_fill(torch.arange(4000) < 3000, float('-inf')), dim=-1)", true},
    {"LayerNormRowsOf1001", "nn.LayerNorm(1001)(torch.randn(3, 1001))", true},
    {"AmaxMinusAmin", "x=torch.randn(4, 2500); x.amax(-1) - x.amin(-1)", true},
    {"WholeTensorSum", "x=torch.randn(256, 300); x.sum()", true},
    {"Int32RowSums", "a=torch.randint(0, 2147483647, (4, 700), dtype=torch.int32); a.sum(-1)", false},
};

class ClusterReduceTest : public OnlineSoftmaxTest {
 protected:
  // The cluster dims of the last lowered graph's kernels that have them.
  std::vector<std::vector<int64_t>> clusters() const {
    std::vector<std::vector<int64_t>> out;
    for (const Node* n : last_lowered_.nodes())
      if (const auto* k = n->op_as<KernelOp>(); k != nullptr && !k->cluster.empty()) out.push_back(k->cluster);
    return out;
  }
};

std::vector<test::CorpusProgram> cluster_corpus() {
  std::vector<test::CorpusProgram> out;
  for (const ClusterProgram& p : kClusterPrograms) out.push_back({p.name, p.text});
  return test::sanitizer_share(out);
}

class ClusterReduceProgramTest : public ClusterReduceTest {};

TEST_P(ClusterReduceProgramTest, EveryClusterSizeMatchesTheReference) {
  const ClusterProgram* program = nullptr;
  for (const ClusterProgram& p : kClusterPrograms)
    if (GetParam().name == p.name) program = &p;
  ASSERT_NE(program, nullptr);
  for (int64_t size : {2, 4, 8}) {
    SCOPED_TRACE("CLUSTER=" + std::to_string(size));
    PipelineSpec saved = pipeline_;
    pin("cluster_reduce", "CLUSTER", AttrValue(size));
    std::vector<DType> dtypes = {DType::F32};
    if (size == 4 && program->half) dtypes.insert(dtypes.end(), {DType::BF16, DType::F16});
    for (DType dtype : dtypes) {
      check(program->text, std::nullopt, dtype);
      if (HasFailure()) return;
      const std::vector<std::vector<int64_t>> dims = clusters();
      ASSERT_EQ(dims.size(), 1u) << "one kernel launched in clusters";
      EXPECT_EQ(dims[0], (std::vector<int64_t>{size, 1, 1}));
    }
    if (size == 4)
      for (uint64_t seed = 1; seed <= simulated(3); ++seed) {
        check(program->text, seed);
        if (HasFailure()) return;
      }
    pipeline_ = saved;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, ClusterReduceProgramTest, ::testing::ValuesIn(cluster_corpus()),
                         [](const auto& info) { return test::corpus_test_name(info.param); });

// The heuristic on an H100 (132 SMs): RMSNorm over 32 rows of 65536 gets clusters of 8 (256
// blocks), each block staging its share of the row, so x is read from memory once; LayerNorm
// over 16 rows of 32768 (which split_reduce cannot split: its variance reads the mean) gets 8
// blocks a row, 128 blocks instead of 16; softmax over 4 rows of 262144 keeps split_reduce's
// two kernels (8 blocks a row would busy only 32 SMs).
TEST_F(ClusterReduceTest, RowsTooFewForTheDeviceAreSplitAcrossClusters) {
  struct Case {
    const char* text;
    int64_t cluster;  // 0: no cluster
    int64_t blocks;   // of the clustered kernel
  };
  for (const Case& c : {Case{"nn.RMSNorm(65536)(torch.randn(32, 65536))", 8, 256},
                        Case{"nn.LayerNorm(32768)(torch.randn(16, 32768))", 8, 128},
                        Case{"torch.softmax(torch.randn(4, 262144), dim=-1)", 0, 0}}) {
    SCOPED_TRACE(c.text);
    compile_only(c.text, std::nullopt);
    if (HasFailure()) return;
    const std::vector<std::vector<int64_t>> dims = clusters();
    if (c.cluster == 0) {
      EXPECT_TRUE(dims.empty());
      continue;
    }
    ASSERT_EQ(dims.size(), 1u);
    EXPECT_EQ(dims[0], (std::vector<int64_t>{c.cluster, 1, 1}));
    for (const Node* n : last_lowered_.nodes())
      if (const auto* k = n->op_as<KernelOp>(); k != nullptr && !k->cluster.empty())
        EXPECT_EQ(k->grid[0] * k->grid[1] * k->grid[2], c.blocks);
    EXPECT_EQ(global_reads(last_lowered_, "x"), 1) << "each block stages its share once";
  }
}

#ifdef TESSERA_HAVE_CUDA
// The cluster exchange compiles with NVRTC for sm_90 (barrier.cluster, mapa), and for sm_80 too
// (guarded: a cluster kernel built for an older architecture traps if launched).
TEST_F(ClusterReduceTest, ClusterKernelsCompileWithNvrtc) {
  pin("cluster_reduce", "CLUSTER", AttrValue(int64_t{4}));
  int compiled = 0;
  for (const ClusterProgram& p : kClusterPrograms) {
    Graph g = trace(p.text, DType::F32);
    ASSERT_FALSE(HasFailure()) << p.text;
    Status st = lower(g, pipeline_, Dialect::Cuda, device_);
    ASSERT_TRUE(st) << p.text << ":\n" << st.error().render();
    for (const Node* n : g.nodes()) {
      const auto* op = n->op_as<CudaOp>();
      if (op == nullptr || op->cluster.empty()) continue;
      EXPECT_NE(op->source.find("barrier.cluster.arrive.release.aligned"), std::string::npos);
      EXPECT_NE(op->source.find("mapa.u64"), std::string::npos);
      for (const char* arch : {"sm_90", "sm_80"}) EXPECT_EQ(test::nvrtc_compile(*op, arch), "") << p.text << " " << arch;
      ++compiled;
    }
  }
  EXPECT_EQ(compiled, static_cast<int>(std::size(kClusterPrograms)));
}
#endif

// The corpus exercises the default pipeline's value passes: counted by the diff blocks the runner
// prints for a pass that changed a kernel, hoist_loop_invariants and eliminate_common_subexpressions
// (in the loop and in the tile stage) each rewrite some program's kernels, so the differential runs
// above check their rewrites against the reference.
class ValuePassCoverageTest : public test::BuiltPluginsTest {};

TEST_F(ValuePassCoverageTest, CorpusProgramsExerciseHoistingAndSubexpressionElimination) {
  ASSERT_TRUE(load_error_.empty()) << load_error_;
  auto pipeline = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
  ASSERT_TRUE(pipeline) << pipeline.error().render();
  std::map<std::string, int> rewritten;  // "<stage>:<pass>" -> corpus programs it changed
  for (const test::CorpusProgram& program : test::differential_corpus()) {
    Graph g = trace(program.text);
    ASSERT_FALSE(HasFailure()) << program.name;
    RunnerOptions options;
    options.stop_after = Dialect::Kernel;
    options.device = h100();
    options.print_diff = {"hoist_loop_invariants", "eliminate_common_subexpressions"};
    std::ostringstream out, err;
    options.out = &out;
    options.err = &err;
    DiagnosticEngine diags;
    Status st = PipelineRunner(host_->registry(), *pipeline, options).run(g, diags);
    ASSERT_TRUE(st) << program.name << ":\n" << st.error().render();
    std::set<std::string> seen;
    std::istringstream lines(out.str());
    for (std::string line; std::getline(lines, line);) {
      // ">>> t:011_hoist_loop_invariants": the stage's letter and the pass, without the position.
      if (line.rfind(">>> ", 0) != 0 || line.size() < 6) continue;
      const size_t underscore = line.find('_');
      if (underscore == std::string::npos) continue;
      seen.insert(line.substr(4, 1) + ":" + line.substr(underscore + 1));
    }
    for (const std::string& key : seen) ++rewritten[key];
  }
  for (const char* key : {"t:hoist_loop_invariants", "l:eliminate_common_subexpressions",
                          "t:eliminate_common_subexpressions"}) {
    EXPECT_GT(rewritten[key], 0) << "no corpus program was rewritten by " << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, RandomKnobsTest, ::testing::ValuesIn(test::sanitizer_share(test::differential_corpus())),
                         [](const auto& info) { return test::corpus_test_name(info.param); });


// use_tensor_cores: bf16/f16 matmuls on mma.sync. The programs cover both B layouts (B[k, n] read
// with ldmatrix.trans, an nn.Linear weight B[n, k] without), a fused epilogue (bias, SiLU, the
// conversion to the output dtype, a residual), a (1, S, H) activation, a batched matmul (its batch
// axes become block axes), a projection split into heads (two N axes), a split-K projection (few
// outputs, long K: each split's K offset a block axis), an o projection reading attention heads
// along K (one head a K slab), a gated MLP (two products of one activation, their accumulators
// combined in the epilogue), causal attention's scores (the mask in the epilogue), M and N tails
// (tiles past the matrix: zero rows in the slabs, guarded outputs; B[k, n] read through
// ldmatrix.trans with N = 20) and shapes whose tiles fit in several ways; every schedule
// (the heuristic, every geometry knob value pinned alone, sampled schedules with INSTR pinned)
// must match the reference in bf16 and f16, with its matmul kernel on the tensor cores.
constexpr const char* kTensorCorePrograms[] = {
    "x=torch.randn(64,128); w=torch.randn(128,64); x @ w",
    "x=torch.randn(32,256); nn.Linear(256,96)(x)",
    "x=torch.randn(48,64); w=torch.randn(64,32); F.silu(x @ w)",
    "x=torch.randn(128,64); nn.Linear(64,128,bias=False)(x)",
    "x=torch.randn(1,64,128); nn.Linear(128,64,bias=False)(x)",
    "q=torch.randn(2,3,32,64); k=torch.randn(2,3,64,32); torch.matmul(q, k)",
    "x=torch.randn(1,32,64); nn.Linear(64,128,bias=False)(x).view(1,32,2,64).transpose(1,2)",
    "x=torch.randn(32,64); w=torch.randn(64,64); x + x @ w",
    "x=torch.randn(32,2048); nn.Linear(2048,64,bias=False)(x)",
    "a=torch.randn(1,2,32,64); nn.Linear(128,64,bias=False)(a.transpose(1,2).reshape(1,32,128))",
    "x=torch.randn(1,32,128); F.silu(nn.Linear(128,64,bias=False)(x)) * nn.Linear(128,64,bias=False)(x)",
    "q=torch.randn(1,2,32,64); k=torch.randn(1,2,32,64); v=torch.randn(1,2,32,64); "
    "F.scaled_dot_product_attention(q,k,v,is_causal=True)",
    "x=torch.randn(100,128); nn.Linear(128,72)(x)",
    "x=torch.randn(40,64); w=torch.randn(64,20); x @ w",
};

// The tensor-core kernels each program above lowers to: one matmul, or attention's two products
// (the scores q k^T and P V, the probabilities rounded to 16 bits).
int tensor_core_products(const char* text) {
  return std::string_view(text).find("scaled_dot_product_attention") != std::string_view::npos ? 2 : 1;
}

class TensorCoreTest : public RandomKnobsTest {
 protected:
  // The tensor-core schedules must match the reference within 2e-2 in bf16 and f16 (tighter than
  // the CLI's bf16 default of 2^-4): their sums differ from the reference's in order only.
  static constexpr double kTensorCoreRtol = 2e-2;
  double output_rtol(DType dtype) const override { return std::min(default_output_rtol(dtype), kTensorCoreRtol); }

  // Kernels of the last lowering whose body `holds` says yes to.
  int kernels_holding(bool (*holds)(const Body&)) const {
    int n = 0;
    for (const Node* node : last_lowered_.nodes())
      if (const auto* k = node->op_as<KernelOp>()) n += holds(k->body);
    return n;
  }
  // Kernels of the last lowering on the tensor cores.
  int mma_kernels() const { return kernels_holding(contains_tensor_core_statements); }
  // `text` in bf16 lowered to CUDA with the test's pipeline and device: the kernels whose source
  // holds `marker` (empty on a failure, which the test then reports).
  std::vector<CudaOp> cuda_kernels_with(const char* text, const std::string& marker) {
    Graph g = trace(text, DType::BF16);
    if (HasFailure()) return {};
    Status st = lower(g, pipeline_, Dialect::Cuda, device_);
    EXPECT_TRUE(st) << text << ":\n" << st.error().render();
    std::vector<CudaOp> kernels;
    for (const Node* n : g.nodes())
      if (const auto* op = n->op_as<CudaOp>(); op != nullptr && op->source.find(marker) != std::string::npos)
        kernels.push_back(*op);
    return kernels;
  }
};

TEST_F(TensorCoreTest, HeuristicSchedulesRunOnTheTensorCoresAndMatchTheReference) {
  for (const char* text : kTensorCorePrograms)
    for (DType dtype : {DType::BF16, DType::F16}) {
      SCOPED_TRACE(std::string(text) + " in " + std::string(dtype_short_name(dtype)));
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      EXPECT_EQ(mma_kernels(), tensor_core_products(text)) << print_graph(last_lowered_);
    }
  // f32 matmuls stay on the SIMT path (mma.sync multiplies 16-bit operands).
  check(kTensorCorePrograms[0], std::nullopt, DType::F32);
  EXPECT_EQ(mma_kernels(), 0);
}

TEST_F(TensorCoreTest, EveryGeometryKnobValueMatchesTheReference) {
  const std::pair<const char*, std::vector<int64_t>> knobs[] = {
      {"WARPS_M", {1, 2, 4}}, {"WARPS_N", {1, 2, 4}}, {"MMA_M", {1, 4}}, {"MMA_N", {1, 2, 8}}};
  const PipelineSpec heuristic = pipeline_;
  for (const auto& [knob, values] : knobs)
    for (int64_t v : test::sanitizer_share(values)) {
      pipeline_ = heuristic;
      pin("use_tensor_cores", knob, AttrValue(v));
      SCOPED_TRACE(std::string(knob) + "=" + std::to_string(v));
      check(kTensorCorePrograms[3], std::nullopt, DType::BF16);
      if (HasFailure()) return;
      EXPECT_EQ(mma_kernels(), 1);
    }
}

// The staged slabs' rows are padded so that every ldmatrix phase (8 rows of 16 bytes) is
// conflict-free: one shared-memory wavefront per 8x8 matrix, in both B layouts.
TEST_F(TensorCoreTest, LdmatrixPhasesAreConflictFree) {
  for (const char* text : {kTensorCorePrograms[0], kTensorCorePrograms[1]}) {
    Graph g = trace(text, DType::BF16);
    ASSERT_FALSE(HasFailure());
    Status st = lower(g, pipeline_, Dialect::Kernel, device_);
    ASSERT_TRUE(st) << st.error().render();
    int phases = 0;
    for (const Node* n : g.nodes()) {
      if (n->op_as<KernelOp>() == nullptr) continue;
      Expected<WarpAccessMap> map = enumerate_warp_accesses(g, *n);
      ASSERT_TRUE(map) << map.error().render();
      for (const WarpAccess& a : map->accesses)
        if (a.stmt == StmtKind::LdMatrix) {
          EXPECT_EQ(bank_wavefronts(a, 32, 4), 1) << text << ": " << a.buffer;
          ++phases;
        }
    }
    EXPECT_GT(phases, 0) << text;
  }
}

// double_buffer rings the tensor-core slabs (the ldmatrix rows name the slot) and
// pipeline_k_outer keeps two slabs in flight.
TEST_F(TensorCoreTest, RingBufferedPipelinedSlabsMatchTheReference) {
  pin("double_buffer", "BUFFERS", AttrValue(int64_t{2}));
  pin("pipeline_k_outer", "STAGES", AttrValue(int64_t{2}));
  for (const char* text : {kTensorCorePrograms[0], kTensorCorePrograms[1]})
    for (DType dtype : {DType::BF16, DType::F16}) {
      SCOPED_TRACE(text);
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      EXPECT_EQ(mma_kernels(), 1);
      EXPECT_EQ(int_knob(last_lowered_, "pipeline_k_outer", "STAGES"), 2) << print_graph(last_lowered_);
    }
}

// stage_epilogue_stores: the tensor-core kernels' 16-bit output tiles leave through shared memory
// in 16-byte stores (store8), by default; with STAGE pinned off they keep their 2-byte stores; both
// match the reference. Planted faults the simulator reports: the copy without the Sync after the
// epilogue (a race on the staged tile), and a staged write moved off its cell (the copy reads a
// cell nobody wrote).
class EpilogueStoresTest : public TensorCoreTest {
 protected:
  // Kernels of the last lowering that store 8 elements at once.
  int staged_kernels() const {
    return kernels_holding([](const Body& b) {
      bool found = false;
      struct Finder final : StmtVisitor {
        bool* found;
        void visit_VectorStore(const VectorStore& v) override { *found = *found || v.values.size() == 8; }
      } finder;
      finder.found = &found;
      finder.visit(b);
      return found;
    });
  }
};

TEST_F(EpilogueStoresTest, TensorCoreTilesLeaveInSixteenByteStores) {
  const PipelineSpec heuristic = pipeline_;
  for (const char* arch : {"sm_90", "sm_90a"}) {
    device_ = devices_->find_by_arch(arch);
    ASSERT_NE(device_, nullptr);
    for (const char* text : {kTensorCorePrograms[1], kTensorCorePrograms[5], kTensorCorePrograms[10], kTensorCorePrograms[12]})
      for (bool stage : {true, false}) {
        SCOPED_TRACE(std::string(text) + " on " + arch + (stage ? "" : ", STAGE=false"));
        pipeline_ = heuristic;
        pin("stage_epilogue_stores", "STAGE", AttrValue(stage));
        check(text, std::nullopt, DType::BF16);
        if (HasFailure()) return;
        EXPECT_EQ(staged_kernels(), stage ? 1 : 0) << print_graph(last_lowered_);
      }
  }
}

TEST_F(EpilogueStoresTest, TheSimulatorCatchesAMissingBarrierAndAMisplacedCell) {
  const char* text = "x=torch.randn(64,128); w=torch.randn(128,64); x @ w";
  check(text, std::nullopt, DType::BF16);
  if (HasFailure()) return;
  ASSERT_EQ(staged_kernels(), 1);
  const std::string printed = print_graph(last_lowered_);
  const size_t copy = printed.find("  Sync()\n  StridedLoop(");
  ASSERT_NE(copy, std::string::npos) << printed;
  const Graph torch = trace(text, DType::BF16);
  auto run = [&](const std::string& changed) {
    Expected<Graph> g = parse_graph(changed, "<test>");
    EXPECT_TRUE(g) << (g ? "" : g.error().render()) << changed;
    auto sim = host_->registry().make_target("sim");
    TargetOptions to;
    to.arch = device_->arch;
    to.device = device_;
    return g ? sim->execute(*g, make_inputs(torch, 7), to) : Expected<TargetRun>(g.error());
  };
  std::string unsynced = printed;
  unsynced.erase(copy, std::string("  Sync()\n").size());
  Expected<TargetRun> raced = run(unsynced);
  ASSERT_FALSE(raced) << unsynced;
  EXPECT_NE(raced.error().render().find("race"), std::string::npos) << raced.error().render();
  // Each staged write one row down: row 0 of the tile is never written (and the last row's
  // writes fall past the tile).
  std::string moved = printed;
  const size_t write = moved.find("    matmul_stage[");
  ASSERT_NE(write, std::string::npos) << printed;
  moved.insert(write + std::string("    matmul_stage[").size(), "1 + ");
  Expected<TargetRun> misplaced = run(moved);
  ASSERT_FALSE(misplaced) << moved;
  EXPECT_NE(misplaced.error().render().find("matmul_stage"), std::string::npos) << misplaced.error().render();
}

// Grouped-query attention with V read where its projection wrote it: `v[0, k, h / 2 * 32 + n]`,
// the two query heads of a KV head reading its columns (an N offset of a batch axis); the
// probabilities are a bf16 kernel, so all five products (q, k, v, the scores, P V) run on the
// tensor cores, mma.sync on the h100 and warpgroups on sm_90a (V MN-major).
TEST_F(TensorCoreTest, GroupedQueryAttentionReadsVWhereItsProjectionWroteIt) {
  const char* text =
      "x=torch.randn(1,64,128); q=nn.Linear(128,128,bias=False)(x).view(1,64,4,32).transpose(1,2); "
      "k=nn.Linear(128,64,bias=False)(x).view(1,64,2,32).transpose(1,2); "
      "v=nn.Linear(128,64,bias=False)(x).view(1,64,2,32).transpose(1,2); "
      "F.scaled_dot_product_attention(q,k,v,is_causal=True,enable_gqa=True)";
  for (const char* arch : {"sm_90", "sm_90a"}) {
    SCOPED_TRACE(arch);
    device_ = devices_->find_by_arch(arch);
    ASSERT_NE(device_, nullptr);
    for (DType dtype : {DType::BF16, DType::F16}) {
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      EXPECT_EQ(mma_kernels(), 5) << print_graph(last_lowered_);
    }
  }
}

// split_matmul_k's partial sums on the tensor cores: each split's K offset is a block axis of the
// schedule, and the combine kernel adds the partials.
TEST_F(TensorCoreTest, SplitKPartialsRunOnTheTensorCores) {
  pin("split_matmul_k", "SPLITK", AttrValue(int64_t{4}));
  for (DType dtype : {DType::BF16, DType::F16}) {
    check("x=torch.randn(32,2048); nn.Linear(2048,64,bias=False)(x)", std::nullopt, dtype);
    if (HasFailure()) return;
    EXPECT_EQ(mma_kernels(), 1) << print_graph(last_lowered_);
    EXPECT_EQ(int_knob(last_lowered_, "split_matmul_k", "SPLITK"), 4);
  }
}

// The earlier passes' sampled knobs (split-K, slab depths that are no multiple of 16) leave some
// of these kernels to the SIMT path; the others sample the geometry knobs.
TEST_F(TensorCoreTest, SampledSchedulesOnTheTensorCoresMatchTheReference) {
  pin("use_tensor_cores", "INSTR", AttrValue(std::string("mma_sync")));
  int on_tensor_cores = 0;
  // Under the sanitizers a third of the programs, a third of the seeds (the release half runs all).
  for (const char* text : test::sanitizer_share(std::vector<const char*>(std::begin(kTensorCorePrograms),
                                                                         std::end(kTensorCorePrograms))))
    for (uint64_t seed = 1; seed <= simulated(6); ++seed) {
      const DType dtype = seed % 2 ? DType::BF16 : DType::F16;
      SCOPED_TRACE(text);
      check(text, seed, dtype);
      if (HasFailure()) return;
      on_tensor_cores += mma_kernels();
    }
  EXPECT_GE(on_tensor_cores, kUnderSanitizers ? 1 : 4);
}

// use_tensor_cores with INSTR = wgmma, on the sm_90a variant of the H100 (`--arch sm_90a`):
// warpgroups multiply K-major slabs (an activation's rows and an nn.Linear weight's) staged in the
// descriptors' interleaved layout. The programs cover one and two warpgroups, a bias, SiLU and a
// residual in the epilogue, a (1, S, H) activation, N = 96 (WGMMA_N 32), a projection split into
// heads, a gated MLP (two products per step, one A slab), causal attention's scores and M and N tails
// (TMA fills the rows past the matrix with zeros; the interleaved slabs' copies write them); every
// schedule must match the reference in bf16 and f16 with its matmul kernel on warpgroup products.
constexpr const char* kWgmmaPrograms[] = {
    "x=torch.randn(64,128); nn.Linear(128,64,bias=False)(x)",
    "x=torch.randn(128,64); nn.Linear(64,128)(x)",
    "x=torch.randn(1,64,128); F.silu(nn.Linear(128,96,bias=False)(x))",
    "x=torch.randn(1,64,64); nn.Linear(64,128,bias=False)(x).view(1,64,2,64).transpose(1,2)",
    "x=torch.randn(64,64); x + nn.Linear(64,64,bias=False)(x)",
    "x=torch.randn(1,64,128); F.silu(nn.Linear(128,64,bias=False)(x)) * nn.Linear(128,64,bias=False)(x)",
    "q=torch.randn(1,2,64,64); k=torch.randn(1,2,64,64); v=torch.randn(1,2,64,64); "
    "F.scaled_dot_product_attention(q,k,v,is_causal=True)",
    "x=torch.randn(1,100,128); nn.Linear(128,72,bias=False)(x)",
};

class WgmmaTest : public TensorCoreTest {
 protected:
  void SetUp() override {
    TensorCoreTest::SetUp();
    device_ = devices_->find_by_arch("sm_90a");
    ASSERT_NE(device_, nullptr);
  }
  // Kernels of the last lowering that run warpgroup products.
  int wgmma_kernels() const { return kernels_holding(contains_warpgroup_products); }
};

TEST_F(WgmmaTest, HeuristicSchedulesRunOnWarpgroupProductsAndMatchTheReference) {
  for (const char* text : kWgmmaPrograms)
    for (DType dtype : {DType::BF16, DType::F16}) {
      SCOPED_TRACE(std::string(text) + " in " + std::string(dtype_short_name(dtype)));
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      EXPECT_EQ(wgmma_kernels(), tensor_core_products(text)) << print_graph(last_lowered_);
    }
}

// Every geometry value, and both slab layouts: the interleaved core matrices the threads copy, the
// 128-byte swizzled rows TMA copies (BK = 64 here), in bf16 and f16.
TEST_F(WgmmaTest, EveryGeometryKnobValueMatchesTheReference) {
  const std::pair<const char*, AttrValue> pins[] = {
      {"WARPGROUPS", int64_t{1}},  {"WARPGROUPS", int64_t{2}},           {"WGMMA_N", int64_t{16}},
      {"WGMMA_N", int64_t{64}},    {"WGMMA_N", int64_t{128}},            {"WGMMA_SLABS", std::string("interleaved")},
      {"WGMMA_SLABS", std::string("swizzle128")}};
  const PipelineSpec heuristic = pipeline_;
  for (const auto& [knob, value] : pins)
    for (DType dtype : {DType::BF16, DType::F16}) {
      pipeline_ = heuristic;
      pin("use_tensor_cores", "INSTR", AttrValue(std::string("wgmma")));
      pin("use_tensor_cores", knob, value);
      SCOPED_TRACE(std::string(knob) + "=" + knob_value_str(value) + " in " + std::string(dtype_short_name(dtype)));
      check(kWgmmaPrograms[1], std::nullopt, dtype);
      if (HasFailure()) return;
      EXPECT_EQ(wgmma_kernels(), 1);
      const bool tma = print_graph(last_lowered_).find("TmaLoad") != std::string::npos;
      if (const auto* layout = std::get_if<std::string>(&value)) EXPECT_EQ(tma, *layout == "swizzle128");
    }
}

// double_buffer rings the slabs the descriptors name (their starts name the slot) and
// pipeline_k_outer keeps two slabs in flight: interleaved slabs of BK = 32, swizzled TMA slabs of
// BK = 64 (x 256 x 256 for four of them).
TEST_F(WgmmaTest, RingBufferedPipelinedSlabsMatchTheReference) {
  pin("double_buffer", "BUFFERS", AttrValue(int64_t{2}));
  pin("pipeline_k_outer", "STAGES", AttrValue(int64_t{2}));
  const PipelineSpec ringed = pipeline_;
  for (const auto& [text, bk] : {std::pair{kWgmmaPrograms[0], int64_t{32}},
                                 std::pair{"x=torch.randn(64,256); nn.Linear(256,64,bias=False)(x)", int64_t{64}}})
    for (DType dtype : {DType::BF16, DType::F16}) {
      pipeline_ = ringed;
      pin("chunk_matmul_k", "BK", AttrValue(bk));
      SCOPED_TRACE(std::string(text) + " BK=" + std::to_string(bk));
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      EXPECT_EQ(wgmma_kernels(), 1);
      EXPECT_EQ(int_knob(last_lowered_, "double_buffer", "BUFFERS"), 2) << print_graph(last_lowered_);
      EXPECT_EQ(int_knob(last_lowered_, "pipeline_k_outer", "STAGES"), 2) << print_graph(last_lowered_);
    }
}

// specialize_warps: a producer warpgroup issues the TMA copies of rings of two and three swizzled
// slabs (BK = 64, four of them) for one and two consumer warpgroups, with a bias, SiLU and a
// residual in the epilogue, and a gated MLP's two Bs; the simulator runs producer and consumers as
// concurrent roles.
constexpr const char* kProducerPrograms[] = {
    "x=torch.randn(128,256); nn.Linear(256,64)(x)",
    "x=torch.randn(1,64,256); F.silu(nn.Linear(256,96,bias=False)(x))",
    "x=torch.randn(64,256); x[:, :64] + nn.Linear(256,64,bias=False)(x)",
    "x=torch.randn(1,64,256); F.silu(nn.Linear(256,64,bias=False)(x)) * nn.Linear(256,64,bias=False)(x)",
    "x=torch.randn(100,256); nn.Linear(256,72)(x)",
};

bool holds_producer_warpgroup(const Body& body) { return contains_stmt_kind(body, StmtKind::SetMaxNReg); }

TEST_F(WgmmaTest, ProducerWarpgroupSchedulesMatchTheReference) {
  const PipelineSpec heuristic = pipeline_;
  const std::pair<const char*, int64_t> cases[] = {
      {kProducerPrograms[0], 2}, {kProducerPrograms[0], 1}, {kProducerPrograms[1], 1}, {kProducerPrograms[2], 1},
      {kProducerPrograms[3], 1}, {kProducerPrograms[4], 1}};
  for (const auto& [text, warpgroups] : cases)
    for (int64_t buffers : {2, 3})
      for (DType dtype : {DType::BF16, DType::F16}) {
        pipeline_ = heuristic;
        pin("use_tensor_cores", "INSTR", AttrValue(std::string("wgmma")));
        pin("use_tensor_cores", "WARPGROUPS", AttrValue(warpgroups));
        pin("use_tensor_cores", "WGMMA_SLABS", AttrValue(std::string("swizzle128")));
        pin("chunk_matmul_k", "BK", AttrValue(int64_t{64}));
        pin("double_buffer", "BUFFERS", AttrValue(buffers));
        pin("specialize_warps", "PRODUCER", AttrValue(std::string("warpgroup")));
        SCOPED_TRACE(std::string(text) + " WARPGROUPS=" + std::to_string(warpgroups) + " BUFFERS=" + std::to_string(buffers) +
                     " in " + std::string(dtype_short_name(dtype)));
        check(text, std::nullopt, dtype);
        if (HasFailure()) return;
        EXPECT_EQ(kernels_holding(holds_producer_warpgroup), 1) << print_graph(last_lowered_);
      }
}

// A B stored K x N (`x @ w`, a batched matmul's second operand) is read MN-major: the
// descriptor's transposed layout (imm-trans-b), in interleaved core matrices of 8 k x 8 columns or
// in 64-column blocks TMA copies in the 128-byte swizzle (WGMMA_N a multiple of 64); with tails.
struct NMajorProgram {
  const char* text;
  int64_t n, k;  // the product's N and K
};
constexpr NMajorProgram kNMajorWgmmaPrograms[] = {
    {"x=torch.randn(64,128); w=torch.randn(128,64); x @ w", 64, 128},
    {"x=torch.randn(128,128); w=torch.randn(128,192); F.silu(x @ w)", 192, 128},
    {"q=torch.randn(2,2,64,64); k=torch.randn(2,2,64,128); torch.matmul(q, k)", 128, 64},
    {"x=torch.randn(100,64); w=torch.randn(64,72); x @ w", 72, 64},
};

TEST_F(WgmmaTest, NMajorOperandsRunOnTransposedDescriptors) {
  const PipelineSpec heuristic = pipeline_;
  const std::pair<std::string, int64_t> layouts[] = {{"interleaved", 8}, {"interleaved", 32}, {"swizzle128", 64}, {"swizzle128", 128}};
  for (const auto& [text, n, k] : kNMajorWgmmaPrograms)
    for (DType dtype : {DType::BF16, DType::F16}) {
      SCOPED_TRACE(std::string(text) + " in " + std::string(dtype_short_name(dtype)));
      pipeline_ = heuristic;
      pin("use_tensor_cores", "INSTR", AttrValue(std::string("wgmma")));
      check(text, std::nullopt, dtype);
      if (HasFailure()) return;
      EXPECT_EQ(wgmma_kernels(), 1) << print_graph(last_lowered_);
      for (const auto& [slabs, wgmma_n] : layouts) {
        if (wgmma_n >= n + 8) continue;  // a tile past N by a whole product is not offered
        SCOPED_TRACE(slabs + " WGMMA_N=" + std::to_string(wgmma_n));
        pin("use_tensor_cores", "WGMMA_SLABS", AttrValue(slabs));
        pin("use_tensor_cores", "WGMMA_N", AttrValue(wgmma_n));
        pin("chunk_matmul_k", "BK", AttrValue(k == 64 ? int64_t{0} : int64_t{64}));  // 64-deep slabs (0: K whole)
        check(text, std::nullopt, dtype);
        if (HasFailure()) return;
        EXPECT_EQ(wgmma_kernels(), 1) << print_graph(last_lowered_);
      }
    }
  // Rows 120 bytes apart (N = 60) are no TMA source: 64 columns a product stay interleaved.
  pipeline_ = heuristic;
  pin("use_tensor_cores", "INSTR", AttrValue(std::string("wgmma")));
  pin("use_tensor_cores", "WGMMA_N", AttrValue(int64_t{64}));
  check("x=torch.randn(64,128); w=torch.randn(128,60); x @ w", std::nullopt, DType::BF16);
  if (HasFailure()) return;
  EXPECT_EQ(wgmma_kernels(), 1) << print_graph(last_lowered_);
  // Fed by a producer warpgroup: the MN-major B slabs are TMA boxes like any other (a ring of
  // both 64-deep slabs of K = 128).
  for (const NMajorProgram& p : {kNMajorWgmmaPrograms[0], kNMajorWgmmaPrograms[1]}) {
    SCOPED_TRACE(std::string(p.text) + " with a producer warpgroup");
    pipeline_ = heuristic;
    pin("use_tensor_cores", "INSTR", AttrValue(std::string("wgmma")));
    pin("use_tensor_cores", "WGMMA_SLABS", AttrValue(std::string("swizzle128")));
    pin("use_tensor_cores", "WGMMA_N", AttrValue(int64_t{64}));
    pin("chunk_matmul_k", "BK", AttrValue(int64_t{64}));
    pin("double_buffer", "BUFFERS", AttrValue(int64_t{2}));
    pin("specialize_warps", "PRODUCER", AttrValue(std::string("warpgroup")));
    check(p.text, std::nullopt, DType::BF16);
    if (HasFailure()) return;
    EXPECT_EQ(kernels_holding(holds_producer_warpgroup), 1) << print_graph(last_lowered_);
  }
  // A device without the sm_90a features runs them on mma.sync.
  pipeline_ = heuristic;
  device_ = h100();
  check(kNMajorWgmmaPrograms[0].text, std::nullopt, DType::BF16);
  EXPECT_EQ(wgmma_kernels(), 0);
  EXPECT_EQ(mma_kernels(), 1);
}

TEST_F(WgmmaTest, SampledSchedulesMatchTheReference) {
  pin("use_tensor_cores", "INSTR", AttrValue(std::string("wgmma")));
  int on_warpgroups = 0;
  std::vector<const char*> programs(std::begin(kWgmmaPrograms), std::end(kWgmmaPrograms));
  for (const NMajorProgram& p : kNMajorWgmmaPrograms) programs.push_back(p.text);
  for (const char* text : test::sanitizer_share(programs))
    for (uint64_t seed = 1; seed <= simulated(3); ++seed) {
      SCOPED_TRACE(text);
      check(text, seed, seed % 2 ? DType::BF16 : DType::F16);
      if (HasFailure()) return;
      on_warpgroups += wgmma_kernels();
    }
  EXPECT_GE(on_warpgroups, 1);
}

// A whole bf16 decoder layer in prefill (the suite's decoder_layer at small sizes: 64 tokens,
// hidden 128, two query heads sharing one KV head): its eight products (q, k, v, the causal scores, P V,
// o, gate/up, down) run on the tensor cores, mma.sync on the h100 and warpgroup products on sm_90a,
// the RMSNorms ahead of them are kernels of their own (fuse's tensor-core rule), and so does P V:
// softmax(scores) is a kernel writing the probabilities in bf16 (fuse's tensor-core rule again),
// V read MN-major on sm_90a; the layer matches the reference.
constexpr const char* kSmallDecoderLayer = R"(import torch
import torch.nn as nn
import torch.nn.functional as F
def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)
class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = nn.RMSNorm(128, eps=1e-05, dtype=torch.bfloat16)
        self.q_proj = nn.Linear(128, 128, bias=False, dtype=torch.bfloat16)
        self.k_proj = nn.Linear(128, 64, bias=False, dtype=torch.bfloat16)
        self.v_proj = nn.Linear(128, 64, bias=False, dtype=torch.bfloat16)
        self.o_proj = nn.Linear(128, 128, bias=False, dtype=torch.bfloat16)
        self.post_attention_layernorm = nn.RMSNorm(128, eps=1e-05, dtype=torch.bfloat16)
        self.gate_proj = nn.Linear(128, 256, bias=False, dtype=torch.bfloat16)
        self.up_proj = nn.Linear(128, 256, bias=False, dtype=torch.bfloat16)
        self.down_proj = nn.Linear(256, 128, bias=False, dtype=torch.bfloat16)
    def forward(self, x, cos, sin):
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(1, 64, 2, 64).transpose(1, 2)
        k = self.k_proj(h).view(1, 64, 1, 64).transpose(1, 2)
        v = self.v_proj(h).view(1, 64, 1, 64).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(1, 64, 128))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))
DecoderLayer()(torch.randn(1, 64, 128, dtype=torch.bfloat16), torch.randn(64, 64, dtype=torch.bfloat16), torch.randn(64, 64, dtype=torch.bfloat16))
)";

TEST_F(WgmmaTest, ADecoderLayerRunsEveryProductOnTheTensorCores) {
  check(kSmallDecoderLayer, std::nullopt, DType::BF16);
  if (HasFailure()) return;
  EXPECT_EQ(wgmma_kernels(), 8) << print_graph(last_lowered_);
  device_ = h100();
  check(kSmallDecoderLayer, std::nullopt, DType::BF16);
  if (HasFailure()) return;
  EXPECT_EQ(mma_kernels(), 8) << print_graph(last_lowered_);
  EXPECT_EQ(wgmma_kernels(), 0);
}

#ifdef TESSERA_HAVE_CUDA
TEST_F(WgmmaTest, WarpgroupKernelsBuildWithNvrtcForSm90a) {
  int built = 0, expected = 0;
  for (const char* text : kWgmmaPrograms) {
    expected += tensor_core_products(text);
    for (const CudaOp& op : cuda_kernels_with(text, "wgmma.mma_async")) {
      EXPECT_EQ(test::nvrtc_compile(op, "sm_90a"), "") << text;
      ++built;
    }
  }
  EXPECT_EQ(built, expected);
  // B stored K x N: the products set imm-trans-b.
  pin("use_tensor_cores", "INSTR", AttrValue(std::string("wgmma")));
  for (const auto& [text, n, k] : kNMajorWgmmaPrograms) {
    const std::vector<CudaOp> ops = cuda_kernels_with(text, "wgmma.mma_async");
    EXPECT_EQ(ops.size(), 1u) << text;
    for (const CudaOp& op : ops) {
      EXPECT_NE(op.source.find("p, 1, 1, 0, 1;"), std::string::npos) << op.source;
      EXPECT_EQ(test::nvrtc_compile(op, "sm_90a"), "") << text;
    }
  }
}
#endif

#ifdef TESSERA_HAVE_CUDA
// The producer warpgroup's kernels: one block per SM (the register pool setmaxnreg rebalances),
// named by __launch_bounds__, and setmaxnreg in both roles.
TEST_F(WgmmaTest, ProducerWarpgroupKernelsBuildWithNvrtcForSm90a) {
  pin("double_buffer", "BUFFERS", AttrValue(int64_t{2}));
  pin("specialize_warps", "PRODUCER", AttrValue(std::string("warpgroup")));
  int built = 0;
  for (const char* text : kProducerPrograms)
    for (const CudaOp& op : cuda_kernels_with(text, "setmaxnreg.inc")) {
      EXPECT_NE(op.source.find("setmaxnreg.dec.sync.aligned.u32 40;"), std::string::npos) << op.source;
      EXPECT_NE(op.source.find(", 1) void"), std::string::npos) << op.source;
      EXPECT_EQ(test::nvrtc_compile(op, "sm_90a"), "") << text;
      ++built;
    }
  EXPECT_EQ(built, static_cast<int>(std::size(kProducerPrograms)));
}

TEST_F(TensorCoreTest, TensorCoreKernelsBuildWithNvrtcForSm80AndSm90) {
  int built = 0;
  int expected = 0;
  for (const char* text : kTensorCorePrograms) {
    expected += tensor_core_products(text);
    for (const CudaOp& op : cuda_kernels_with(text, "mma.sync.aligned")) {
      for (const char* arch : {"sm_80", "sm_90"}) EXPECT_EQ(test::nvrtc_compile(op, arch), "") << text << " " << arch;
      ++built;
    }
  }
  EXPECT_EQ(built, expected);
}
#endif

}  // namespace
}  // namespace tessera

// The analytic cost model (tessera/target/cost_model.h), the warp-address enumeration it is built
// on (target/warp_access.h), its calibration (target/cost_model_calibration.h) and the cost-model
// measurer (tune/cost_model_measurer.h). Programs compile through the default pipeline with the
// built plugins; hand-written Kernel IR checks the warp enumeration and the bank-conflict term.
// Every check compares the model with itself or with counts derived in the comments: none asserts
// a hard-coded latency.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/cli/cli_session.h"
#include "framework/cli/commands.h"
#include "support/built_plugins.h"
#include "support/test_paths.h"
#include "tessera/ir/op.h"
#include "tessera/ir/parser.h"
#include "tessera/target/cost_model.h"
#include "tessera/target/cost_model_calibration.h"
#include "tessera/target/kernel_report.h"
#include "tessera/target/warp_access.h"
#include "tessera/tune/cost_model_measurer.h"

namespace tessera {
namespace {

const DeviceDesc& h100_table_entry() {
  static const DeviceDesc d = [] {
    Expected<DeviceTable> t = DeviceTable::load_file(TESSERA_SOURCE_DIR "/data/devices.yaml");
    EXPECT_TRUE(t) << t.error().render();
    return t ? *t->find("h100") : DeviceDesc{};
  }();
  return d;
}

CostModel default_model() {
  Expected<CostModel> m = CostModel::load(TESSERA_SOURCE_DIR "/data/cost_model.yaml");
  EXPECT_TRUE(m) << m.error().render();
  return m ? *m : CostModel{};
}

Graph parse(const std::string& text) {
  Expected<Graph> g = parse_graph(text, "<test>");
  EXPECT_TRUE(g) << g.error().render();
  return g ? std::move(*g) : Graph();
}

// ---- the warp enumeration on hand-written Kernel IR ------------------------------------------

// 64 threads (2 warps) reading a 64 x 64 f32 matrix along a row (coalesced) and down a column
// (256 B apart), and a 32 x 32 shared array down a column (every lane in bank 0) and along a row.
constexpr const char* kAccesses = R"(x: (64, 64) float32

kernel k_access  grid=(2, 1, 1) block=(64, 1, 1)  inputs: x  outputs: y: (64, 64) float32
  Smem t: f32[32, 32]
  a0 = threadIdx.x
  in0 = load x[0, a0]
  in1 = load x[a0, 0]
  in2 = load t[a0 % 32, 0]
  in3 = load t[0, a0 % 32]
  StridedLoop(a1 = a0; < 256; += 64):
    in4 = load x[a1 / 64, a1 % 64]
  if a0 < 8:
    y[0, a0] = in0

return y
)";

TEST(WarpAccessTest, SectorsAndBankWavefrontsOfHandWrittenAccesses) {
  Graph g = parse(kAccesses);
  const Node* n = g.find("y");
  ASSERT_NE(n, nullptr);
  Expected<WarpAccessMap> map = enumerate_warp_accesses(g, *n);
  ASSERT_TRUE(map) << map.error().render();
  EXPECT_EQ(map->warps_per_block, 2);
  EXPECT_EQ(map->blocks, 2);
  // Per warp: 6 statements, of which the guarded store runs in warp 0 only (lanes 0..7).
  ASSERT_EQ(map->accesses.size(), 11u);
  const WarpAccess& row = map->accesses[0];
  EXPECT_EQ(row.space, MemorySpace::Global);
  EXPECT_EQ(row.active_lanes(), 32);
  EXPECT_TRUE(row.addresses_known());
  EXPECT_EQ(sectors_touched(row), 4) << "32 consecutive floats: 128 B, four 32-byte sectors";
  EXPECT_EQ(unique_bytes(row), 128);
  const WarpAccess& column = map->accesses[1];
  EXPECT_EQ(sectors_touched(column), 32) << "lanes 256 B apart: a sector each";
  EXPECT_EQ(unique_bytes(column), 128);
  const WarpAccess& smem_column = map->accesses[2];
  EXPECT_EQ(smem_column.space, MemorySpace::Shared);
  EXPECT_EQ(bank_wavefronts(smem_column), 32) << "rows of 32 words: every lane in one bank";
  EXPECT_EQ(bank_wavefronts(map->accesses[3]), 1);
  // The strided loop: lanes at their first value a1 = a0, 256 / 64 = 4 trips.
  const WarpAccess& looped = map->accesses[4];
  EXPECT_EQ(looped.executions, 4);
  EXPECT_GE(looped.loop, 0);
  EXPECT_EQ(sectors_touched(looped), 4);
  const WarpAccess& store = map->accesses[5];
  EXPECT_EQ(store.direction, AccessDirection::Write);
  EXPECT_EQ(store.warp, 0);
  EXPECT_EQ(store.active_lanes(), 8);
  EXPECT_EQ(sectors_touched(store), 1);
  // The second warp: lanes 32..63 read the second half of row 0.
  const WarpAccess& second = map->accesses[6];
  EXPECT_EQ(second.warp, 1);
  ASSERT_EQ(second.lanes[0].state, LaneState::Known);
  EXPECT_EQ(second.lanes[0].offset, 32 * 4);
}

// An unrolled loop: a read that does not vary across its iterations is issued once (the compiler
// keeps it in a register), unless the loop writes the buffer it reads.
constexpr const char* kUnrolled = R"(x: (8, 64) float32

kernel k_unrolled  grid=(1, 1, 1) block=(32, 1, 1)  inputs: x  outputs: y: (8, 64) float32
  Smem t: f32[32]
  a0 = threadIdx.x
  for a1 in 0..8:  # free, unroll 8
    in0 = load x[0, a0]
    a2 = a1 * 2
    in1 = load x[a2 / 2, a0]
    y[a1, a0] = in1
  for a3 in 0..4:  # free, unroll 4
    in2 = load t[a0]
    t[a0] = in2
  for a4 in 0..4:  # free
    in3 = load t[a0]

return y
)";

TEST(WarpAccessTest, ReadsInvariantInAnUnrolledLoopAreIssuedOnce) {
  Graph g = parse(kUnrolled);
  Expected<WarpAccessMap> map = enumerate_warp_accesses(g, *g.find("y"));
  ASSERT_TRUE(map) << map.error().render();
  ASSERT_EQ(map->accesses.size(), 6u);
  EXPECT_EQ(map->accesses[0].executions, 1) << "x[0, a0] does not depend on a1";
  EXPECT_EQ(map->accesses[1].executions, 8) << "x[a2 / 2, a0] depends on a1 through a2";
  EXPECT_EQ(map->accesses[2].executions, 8) << "stores are never hoisted";
  EXPECT_EQ(map->accesses[3].executions, 4) << "the loop writes t";
  EXPECT_EQ(map->accesses[5].executions, 4) << "a loop without an unroll mark";
  EXPECT_EQ(map->loops.size(), 3u);
  EXPECT_EQ(map->loops[0].unroll, 8);
}

TEST(WarpAccessTest, UnknownAddressesAndVectorWidths) {
  WarpAccess a;
  a.width_bytes = 16;  // float4 per lane: 512 B for the warp
  a.lanes.resize(32);
  for (int l = 0; l < 32; ++l) a.lanes[l] = LaneAddress{LaneState::Known, l * 16};
  EXPECT_EQ(sectors_touched(a), 16);
  EXPECT_EQ(bank_wavefronts(a), 4) << "a 128-bit access takes four wavefronts without conflicts";
  a.lanes[3] = LaneAddress{LaneState::Unknown, 0};
  EXPECT_FALSE(a.addresses_known());
  // Lane 2 still covers the sector lane 3 shared with it; the unknown lane adds one of its own.
  EXPECT_EQ(sectors_touched(a), 17) << "the unknown lane counts its own sector";
}

// ---- the coefficient file ---------------------------------------------------------------------

TEST(CostModelFileTest, DefaultLoadsAndRoundTrips) {
  Expected<CostModel> m = CostModel::load_default();
  ASSERT_TRUE(m) << m.error().render();
  EXPECT_EQ(m->calibration(), "prior");
  const std::string text = m->to_yaml();
  Expected<CostModel> again = CostModel::parse(text, "<written>");
  ASSERT_TRUE(again) << again.error().render() << "\n" << text;
  for (size_t c = 0; c < kCostCoefficients; ++c)
    EXPECT_EQ(again->coefficient(static_cast<CostCoefficient>(c)), m->coefficient(static_cast<CostCoefficient>(c)));
  EXPECT_EQ(again->to_yaml(), text);
}

TEST(CostModelFileTest, ErrorsNameFileAndLine) {
  const std::string good = default_model().to_yaml();
  struct Case {
    std::string from, to, fragment;
  };
  const std::vector<Case> cases = {
      {"  dram_efficiency:", "  dram_eficiency:", "unknown coefficients key 'dram_eficiency'"},
      {"  sfu_cost: 8", "  sfu_cost: -1", "must be positive"},
      {"  l2_latency_ns: 260", "  l2_latency_ns: fast", "must be a number"},
  };
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tessera_cost_model_test";
  std::filesystem::create_directories(dir);
  for (const Case& c : cases) {
    std::string text = good;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    int line = 1;
    for (size_t i = 0; i < at; ++i) line += text[i] == '\n';
    const std::string path = (dir / "bad.yaml").string();
    std::ofstream(path) << text;
    Expected<CostModel> m = CostModel::load(path);
    ASSERT_FALSE(m) << c.to;
    EXPECT_NE(m.error().message.find(c.fragment), std::string::npos) << m.error().render();
    EXPECT_EQ(m.error().loc.file, path);
    EXPECT_EQ(m.error().loc.line, line) << m.error().render();
  }
  std::string missing = good;
  missing.erase(missing.find("  tensor_efficiency:"), missing.find('\n', missing.find("  tensor_efficiency:")) -
                                                         missing.find("  tensor_efficiency:") + 1);
  Expected<CostModel> m = CostModel::parse(missing, "missing.yaml");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("lacks 'tensor_efficiency'"), std::string::npos) << m.error().render();
  EXPECT_EQ(m.error().loc.file, "missing.yaml");
  std::filesystem::remove_all(dir);
}

// ---- bank conflicts: the same kernel reading its shared array down columns or along rows ------

std::string smem_kernel(const std::string& index) {
  return R"(x: (4096, 32) float32

kernel k_smem  grid=(4096, 1, 1) block=(32, 1, 1)  inputs: x  outputs: y: (4096, 32) float32
  Smem t: f32[32, 32]
  a0 = threadIdx.x
  a1 = blockIdx.x
  in0 = load x[a1, a0]
  acc0 = init(0.0)
  for a2 in 0..1024:
    in1 = load t[)" + index + R"(]
    acc0 <- add(acc0, in1)
  y[a1, a0] = acc0

return y
)";
}

TEST(CostModelTest, BankConflictedSharedLoadsCostMore) {
  const CostModel model = default_model();
  Graph conflicted = parse(smem_kernel("a0, a2 % 32"));
  Graph free = parse(smem_kernel("a2 % 32, a0"));
  Expected<KernelEstimate> slow = model.estimate(conflicted, *conflicted.find("y"), h100_table_entry());
  Expected<KernelEstimate> fast = model.estimate(free, *free.find("y"), h100_table_entry());
  ASSERT_TRUE(slow) << slow.error().render();
  ASSERT_TRUE(fast) << fast.error().render();
  // Column walk: 32 lanes in one bank, 32 wavefronts per load; row walk: 1.
  EXPECT_DOUBLE_EQ(slow->features.smem_wavefronts, 32 * fast->features.smem_wavefronts);
  EXPECT_DOUBLE_EQ(slow->features.smem_ideal_wavefronts, fast->features.smem_ideal_wavefronts);
  EXPECT_GT(slow->latency_us, fast->latency_us);
  EXPECT_EQ(slow->bound, CostTerm::SharedMemory);
}

// ---- compiled programs ----------------------------------------------------------------------

class CostModelProgramTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override { ASSERT_TRUE(load_error_.empty()) << load_error_; }

  static PipelineSpec pipeline(const std::vector<std::pair<std::string, std::string>>& pins = {}) {
    std::ifstream in(test::default_pipeline_path());
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    for (const auto& [pass, pin] : pins) {
      const size_t at = yaml.find(" " + pass + ",");
      EXPECT_NE(at, std::string::npos) << pass;
      if (at != std::string::npos) yaml.replace(at + 1, pass.size(), pass + ": {" + pin + "}");
    }
    Expected<PipelineSpec> p = parse_pipeline(yaml, "<pinned>");
    EXPECT_TRUE(p) << p.error().render();
    return p ? *p : PipelineSpec{};
  }

  // The program compiled to Kernel IR for the H100.
  static Graph kernel_ir(const std::string& program, const PipelineSpec& spec = pipeline()) {
    Graph g = trace(program);
    Status st = lower(g, spec, Dialect::Kernel, h100());
    EXPECT_TRUE(st) << st.error().render();
    return g;
  }

  static std::vector<KernelEstimate> estimates(const Graph& g, int registers = 0) {
    std::vector<KernelEstimate> out;
    const CostModel model = default_model();
    for (const Node* n : g.nodes()) {
      if (!n->op_as<KernelOp>()) continue;
      Expected<KernelEstimate> e = model.estimate(g, *n, *h100(), registers);
      EXPECT_TRUE(e) << e.error().render();
      if (e) out.push_back(*e);
    }
    return out;
  }

  static double total_us(const Graph& g) {
    double us = 0;
    for (const KernelEstimate& e : estimates(g)) us += e.latency_us;
    return us;
  }
};

TEST_F(CostModelProgramTest, NeverBelowTheRooflineBound) {
  for (const std::string& program :
       {std::string("nn.RMSNorm(2048)(torch.randn(1, 32, 2048))"), std::string("torch.softmax(torch.randn(64, 4096), -1)"),
        std::string("torch.randn(512, 256) @ torch.randn(256, 384)"), std::string("torch.exp(torch.randn(1024, 1024))")}) {
    Graph g = kernel_ir(program);
    size_t kernels = 0;
    for (const Node* n : g.nodes()) {
      if (!n->op_as<KernelOp>()) continue;
      ++kernels;
      Expected<KernelReport> r = KernelReport::of(g, *n);
      ASSERT_TRUE(r) << r.error().render();
      Expected<KernelEstimate> e = default_model().estimate(g, *n, *h100());
      ASSERT_TRUE(e) << e.error().render();
      const KernelBound bound = KernelBound::on(*r, *h100(), e->features.registers);
      EXPECT_GE(e->latency_us, bound.bound_us()) << program << ": " << r->kernel;
      EXPECT_GT(e->latency_us, e->launch_us) << program << ": " << r->kernel;
    }
    EXPECT_GT(kernels, 0u) << program;
  }
}

TEST_F(CostModelProgramTest, CoalescedCopyBeatsTransposedCopy) {
  Graph coalesced = kernel_ir("torch.randn(4096, 4096) * 2.0");
  Graph transposed = kernel_ir("torch.randn(4096, 4096).t() * 2.0");
  const std::vector<KernelEstimate> a = estimates(coalesced), b = estimates(transposed);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].features.first_touch_bytes, b[0].features.first_touch_bytes) << "the same bytes, moved differently";
  EXPECT_GT(b[0].features.requested_bytes, 2 * a[0].features.requested_bytes);
  EXPECT_LT(a[0].latency_us, b[0].latency_us);
}

TEST_F(CostModelProgramTest, OneBlockSumIsFarSlowerThanTheSplitSchedule) {
  const std::string program = "torch.randn(8192, 8192).sum()";
  Graph split = kernel_ir(program);
  Graph one_block = kernel_ir(program, pipeline({{"split_reduce", "SPLIT: 1"}}));
  int64_t blocks = 0;
  for (const Node* n : one_block.nodes())
    if (const auto* k = n->op_as<KernelOp>()) blocks += k->grid[0] * k->grid[1] * k->grid[2];
  ASSERT_EQ(blocks, 1) << "SPLIT=1 leaves one block for a full reduction";
  EXPECT_GT(total_us(one_block), 10 * total_us(split));
}

TEST_F(CostModelProgramTest, OccupancyHelpsALatencyBoundKernel) {
  Graph g = kernel_ir("torch.randn(8192, 8192) + 1.0");
  const std::vector<KernelEstimate> many_warps = estimates(g, 32), few_warps = estimates(g, 255);
  ASSERT_EQ(many_warps.size(), 1u);
  ASSERT_EQ(few_warps.size(), 1u);
  EXPECT_GT(many_warps[0].features.blocks_per_sm, few_warps[0].features.blocks_per_sm);
  EXPECT_EQ(few_warps[0].bound, CostTerm::MemoryLatency);
  EXPECT_LT(many_warps[0].latency_us, few_warps[0].latency_us);
}

TEST_F(CostModelProgramTest, MeasurerSumsEveryKernel) {
  Graph g = kernel_ir("torch.softmax(torch.randn(64, 4096), -1) * 3.0 + torch.randn(64, 4096)");
  CostModelMeasurer measurer(default_model(), *h100());
  EXPECT_EQ(measurer.name(), "cost-model");
  EXPECT_EQ(measurer.needs_stage(), Dialect::Kernel);
  const Measurement m = measurer.measure(g);
  ASSERT_TRUE(m.ok) << m.error;
  double sum = 0;
  for (const KernelEstimate& e : estimates(g)) sum += e.latency_us;
  EXPECT_DOUBLE_EQ(m.latency_us, sum);
  EXPECT_EQ(measurer.measure(g).latency_us, m.latency_us) << "deterministic";

  Graph tile = trace("torch.randn(64, 4096) * 3.0");
  ASSERT_TRUE(lower(tile, pipeline(), Dialect::Tile, h100()));
  const Measurement not_lowered = measurer.measure(tile);
  EXPECT_FALSE(not_lowered.ok);
  EXPECT_NE(not_lowered.error.find("not a Kernel IR kernel"), std::string::npos) << not_lowered.error;
}

// ---- calibration ----------------------------------------------------------------------------

TEST_F(CostModelProgramTest, CalibrationRecoversKnownCoefficients) {
  // Features of kernels bound by different terms: memory (elementwise, reductions, one block),
  // latency (few warps), compute (exp-heavy), shared memory (hand-written conflicts).
  const CostModel start = default_model();
  std::vector<KernelFeatures> features;
  auto add = [&](const Graph& g, int registers) {
    for (const Node* n : g.nodes()) {
      if (!n->op_as<KernelOp>()) continue;
      Expected<KernelFeatures> f = start.features(g, *n, *h100(), registers);
      ASSERT_TRUE(f) << f.error().render();
      features.push_back(*f);
    }
  };
  for (const std::string& program :
       {std::string("torch.randn(8192, 8192) + 1.0"), std::string("torch.randn(256, 256) * 2.0"),
        std::string("nn.RMSNorm(2048)(torch.randn(1, 32, 2048))"), std::string("torch.softmax(torch.randn(64, 4096), -1)"),
        std::string("torch.exp(torch.exp(torch.exp(torch.randn(2048, 2048))))"),
        std::string("torch.randn(512, 256) @ torch.randn(256, 384)"), std::string("torch.randn(4096, 4096).t() * 2.0")})
    for (int registers : {32, 128, 255}) add(kernel_ir(program), registers);
  for (const char* index : {"a0, a2 % 32", "a2 % 32, a0"}) {
    Graph g = parse(smem_kernel(index));
    add(g, 0);
  }
  ASSERT_FALSE(features.empty());

  CostModel truth = start;
  truth.set_coefficient(CostCoefficient::LaunchOverheadUs, 3.5);
  truth.set_coefficient(CostCoefficient::DramEfficiency, 0.7);
  truth.set_coefficient(CostCoefficient::L2BandwidthVsDram, 1.5);
  truth.set_coefficient(CostCoefficient::DramLatencyNs, 800);
  truth.set_coefficient(CostCoefficient::SmemEfficiency, 0.6);
  truth.set_coefficient(CostCoefficient::SfuCost, 12);
  std::vector<CalibrationSample> samples;
  for (const KernelFeatures& f : features)
    samples.push_back(CalibrationSample{f.kernel, f, truth.estimate(f).latency_us});

  CalibrationFit fit;
  Expected<CostModel> fitted = calibrate(start, samples, &fit);
  ASSERT_TRUE(fitted) << fitted.error().render();
  EXPECT_EQ(fit.samples, samples.size());
  EXPECT_GT(fit.rms_error_before, 0.05) << "the prior differs from the truth";
  EXPECT_LT(fit.rms_error_after, 1e-6);
  for (CostCoefficient c : {CostCoefficient::LaunchOverheadUs, CostCoefficient::DramEfficiency,
                            CostCoefficient::DramLatencyNs, CostCoefficient::SmemEfficiency}) {
    EXPECT_NE(std::find(fit.fitted.begin(), fit.fitted.end(), c), fit.fitted.end()) << coefficient_key(c);
    EXPECT_NEAR(fitted->coefficient(c) / truth.coefficient(c), 1.0, 1e-4) << coefficient_key(c);
  }
  // Whatever was fitted matches the truth; whatever was kept is the start.
  for (CostCoefficient c : fit.fitted)
    EXPECT_NEAR(fitted->coefficient(c) / truth.coefficient(c), 1.0, 1e-3) << coefficient_key(c);
  for (CostCoefficient c : fit.kept) EXPECT_EQ(fitted->coefficient(c), start.coefficient(c)) << coefficient_key(c);
  // The fitted file reads back as the same model.
  Expected<CostModel> again = CostModel::parse(fitted->to_yaml(), "<fitted>");
  ASSERT_TRUE(again) << again.error().render();
  for (size_t c = 0; c < kCostCoefficients; ++c)
    EXPECT_EQ(again->coefficient(static_cast<CostCoefficient>(c)), fitted->coefficient(static_cast<CostCoefficient>(c)));
}

// The calibrate command on a calibration file whose times the model made under known coefficients:
// it writes a coefficient file that reads back with the fitted values.
TEST_F(CostModelProgramTest, CalibrateCommandFitsACalibrationFile) {
  CostModel truth = default_model();
  truth.set_coefficient(CostCoefficient::LaunchOverheadUs, 4);
  truth.set_coefficient(CostCoefficient::DramEfficiency, 0.6);
  nlohmann::json programs = nlohmann::json::array();
  for (const std::string& program : {std::string("torch.randn(8192, 8192) + 1.0"), std::string("torch.randn(256, 256) * 2.0"),
                                     std::string("torch.softmax(torch.randn(64, 4096), -1)"),
                                     std::string("torch.randn(4096, 4096).t() * 2.0"),
                                     std::string("nn.RMSNorm(2048)(torch.randn(1, 32, 2048))")})
  for (int registers : {32, 255}) {
    Graph g = kernel_ir(program);
    nlohmann::json kernels = nlohmann::json::array();
    for (const Node* n : g.nodes()) {
      if (!n->op_as<KernelOp>()) continue;
      Expected<KernelEstimate> e = truth.estimate(g, *n, *h100(), registers);
      ASSERT_TRUE(e) << e.error().render();
      kernels.push_back({{"node", n->id()}, {"median_us", e->latency_us}, {"registers", registers}});
    }
    programs.push_back({{"program", program}, {"kernels", kernels}});
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tessera_calibrate_command_test";
  std::filesystem::create_directories(dir);
  const std::string results = (dir / "results.json").string();
  std::ofstream(results) << nlohmann::json{{"format", "tessera-calibration"}, {"version", 1}, {"device", "h100"},
                                           {"programs", programs}}.dump(1);
  cli::GlobalFlags flags;
  flags.output = (dir / "fitted.yaml").string();
  ASSERT_EQ(cli::calibrate_cost_model_command(flags, results), 0);
  Expected<CostModel> fitted = CostModel::load(flags.output);
  ASSERT_TRUE(fitted) << fitted.error().render();
  EXPECT_NE(fitted->calibration().find("fitted to"), std::string::npos) << fitted->calibration();
  EXPECT_NEAR(fitted->coefficient(CostCoefficient::LaunchOverheadUs), 4, 1e-3);
  EXPECT_NEAR(fitted->coefficient(CostCoefficient::DramEfficiency), 0.6, 1e-3);

  // A kernel the program does not compile to is an error.
  programs[0]["kernels"][0]["node"] = "no_such_kernel";
  std::ofstream(results) << nlohmann::json{{"format", "tessera-calibration"}, {"version", 1}, {"programs", programs}}.dump();
  EXPECT_EQ(cli::calibrate_cost_model_command(flags, results), 1);
  std::filesystem::remove_all(dir);
}

// The calibrate command on a `tessera bench` output directory: report.json names the suite and
// the device, kernels/<id>.json holds each timed entry's per-kernel medians.
TEST_F(CostModelProgramTest, CalibrateCommandReadsABenchDirectory) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tessera_calibrate_bench_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "kernels");
  struct Entry {
    std::string id, family, program;
  };
  const std::vector<Entry> entries = {{"small-norm", "norm", "nn.RMSNorm(2048)(torch.randn(1, 32, 2048))"},
                                      {"small-softmax", "softmax", "torch.softmax(torch.randn(64, 4096), -1)"}};
  std::ofstream suite(dir / "suite.yaml");
  suite << "version: 1\nentries:\n";
  nlohmann::json report_entries = nlohmann::json::array();
  const CostModel model = default_model();
  size_t kernels_written = 0;
  for (const Entry& e : entries) {
    suite << "  - id: " << e.id << "\n    family: " << e.family << "\n    model: TinyLlama-1.1B\n    phase: prefill\n"
          << "    seq: 32\n    kv: 0\n    dtype: f32\n    tiers: [quick, full]\n    program: |\n      " << e.program << "\n";
    report_entries.push_back({{"id", e.id}});
    Graph g = kernel_ir(e.program);
    nlohmann::json kernels = nlohmann::json::array();
    for (const Node* n : g.nodes()) {
      if (!n->op_as<KernelOp>()) continue;
      Expected<KernelEstimate> est = model.estimate(g, *n, *h100(), 40);
      ASSERT_TRUE(est) << est.error().render();
      kernels.push_back({{"kernel", n->op_as<KernelOp>()->name}, {"node", n->id()}, {"median_us", 1.5 * est->latency_us},
                         {"registers", 40}});
      ++kernels_written;
    }
    std::ofstream(dir / "kernels" / (e.id + ".json")) << nlohmann::json{{"device", "NVIDIA H100"}, {"kernels", kernels}}.dump(1);
  }
  report_entries.push_back({{"id", "not-timed"}});  // no kernels/<id>.json: skipped
  suite.close();
  std::ofstream(dir / "report.json") << nlohmann::json{{"suite", "suite.yaml"},
                                                       {"device", {{"name", "NVIDIA H100"}, {"table_entry", "h100"}}},
                                                       {"entries", report_entries}}.dump(1);
  cli::GlobalFlags flags;
  flags.output = (dir / "fitted.yaml").string();
  ASSERT_EQ(cli::calibrate_cost_model_command(flags, dir.string()), 0);
  Expected<CostModel> fitted = CostModel::load(flags.output);
  ASSERT_TRUE(fitted) << fitted.error().render();
  EXPECT_NE(fitted->calibration().find("fitted to " + std::to_string(kernels_written) + " kernel times"),
            std::string::npos)
      << fitted->calibration();

  // A report whose suite cannot be found is an error.
  std::filesystem::remove(dir / "suite.yaml");
  EXPECT_EQ(cli::calibrate_cost_model_command(flags, dir.string()), 1);
  std::filesystem::remove_all(dir);
}

TEST(CostModelCalibrationTest, RefusesNoSamplesAndNonPositiveTimes) {
  const CostModel start = default_model();
  EXPECT_FALSE(calibrate(start, {}));
  CalibrationSample bad{"k", KernelFeatures{}, 0};
  Expected<CostModel> m = calibrate(start, {bad});
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("'k'"), std::string::npos);
}

}  // namespace
}  // namespace tessera

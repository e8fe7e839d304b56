// Tests of the `sim` target (plugins/targets/sim), loaded through the plugin registry as users
// load it. Hand-built Kernel IR kernels check the CUDA semantics it implements (shared memory,
// barriers, TreeHalve, warp shuffles, cp.async, vector accesses, dtype conversion) against numbers
// computed here independently, and that each kind of bug a schedule can have is reported with the
// kernel, statement, thread and index. A differential test runs the whole corpus through the tile
// passes and materialize and compares the simulation with the reference evaluator.
#include <optional>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <span>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/built_plugins.h"
#include "support/hand_built_program.h"
#include "support/program_corpus.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/loop_interpreter.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/kernel_cost.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

Expr V(const std::string& name) { return Expr::var(name); }
Expr I(int64_t v) { return Expr::int_(v); }
Expr eq(Expr a, Expr b) { return Expr::binary(ExprKind::Eq, std::move(a), std::move(b)); }

// A hand-built Kernel IR program: inputs plus KernelOp nodes.
struct KernelProgramBuilder : test::HandBuiltProgram {
  void kernel(const std::string& id, std::vector<std::string> ins, TensorType type, std::vector<int64_t> grid,
              std::vector<int64_t> block, Body body) {
    auto op = std::make_unique<KernelOp>();
    op->name = "k_" + id;
    op->grid = std::move(grid);
    op->block = std::move(block);
    op->body = std::move(body);
    g.add(id, std::move(op), std::move(ins), type);
  }
};

std::vector<double> iota_data(int64_t n, double scale = 1.0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(std::sin(static_cast<double>(i) * 0.7) * scale);
  return v;
}

class SimTargetTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    target_ = host_->registry().make_target("sim");
    ASSERT_NE(target_, nullptr) << "the sim plugin registers no target 'sim'";
  }

  Expected<TargetRun> run(KernelProgramBuilder& p, const std::string& output) {
    p.g.outputs() = {output};
    return target_->execute(p.g, p.inputs, TargetOptions{});
  }

  // Runs `p` and expects an error whose message holds every one of `parts`.
  void expect_error(KernelProgramBuilder& p, const std::string& output, const std::vector<std::string>& parts) {
    Expected<TargetRun> r = run(p, output);
    ASSERT_FALSE(r) << "expected an error mentioning '" << parts.front() << "'\n" << print_graph(p.g);
    std::string msg = r.error().message;
    for (const std::string& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << "missing '" << part << "' in: " << msg;
    EXPECT_EQ(r.error().node, output);
  }

  std::unique_ptr<Target> target_;
};

TEST_F(SimTargetTest, RegistersAsAnAvailableKernelTarget) {
  EXPECT_EQ(target_->input_dialect(), Dialect::Kernel);
  std::string why;
  EXPECT_TRUE(target_->available(&why)) << why;
}

// Row sums: a strided per-thread loop (bounds differ per lane), a warp-shuffle reduction, one
// partial per warp in shared memory, a barrier and a TreeHalve over the warps' partials.
struct CooperativeSumCase {
  int64_t threads, cols;
};

class SimCooperativeSumTest : public SimTargetTest, public ::testing::WithParamInterface<CooperativeSumCase> {};

TEST_P(SimCooperativeSumTest, ProducesTheRowSums) {
  const auto [threads, cols] = GetParam();
  const int64_t rows = 3, warps = (threads + 31) / 32;
  KernelProgramBuilder p;
  p.input("x", {rows, cols}, iota_data(rows * cols));
  Body body = {Smem{"partial", DType::F32, {warps}}, Let{"a0", V("threadIdx.x")}, Let{"a1", V("blockIdx.x")},
               Init{"acc0", Expr::float_(0.0)},
               StridedLoop{"a2", V("a0"), I(cols), I(threads), LoopRole::Reduce, 0,
                           Body{Load{"in0", "x", {V("a1"), V("a2")}}, Accum{"acc0", CombineFn::Add, V("in0")}}}};
  std::string value = "acc0";
  for (int64_t offset = 16, i = 0; offset >= 1; offset /= 2, ++i) {
    std::string shuffled = "v" + std::to_string(2 * i), sum = "v" + std::to_string(2 * i + 1);
    body.push_back(WarpShuffle{shuffled, V(value), ShuffleMode::Xor, offset, 32});
    body.push_back(Assign{sum, ElementwiseFn::Add, {V(value), V(shuffled)}});
    value = sum;
  }
  body.push_back(Cond{eq(V("a0") % 32, I(0)), Body{Write{"partial", {V("a0") / 32}, V(value)}}, {}});
  body.push_back(Sync{});
  body.push_back(TreeHalve{"partial", V("a0"), warps, CombineFn::Add});
  body.push_back(Cond{eq(V("a0"), I(0)), Body{Load{"in1", "partial", {I(0)}}, Write{"y", {V("a1")}, V("in1")}}, {}});
  p.kernel("y", {"x"}, test::f32({rows}), {rows, 1, 1}, {threads, 1, 1}, body);

  Expected<TargetRun> r = run(p, "y");
  ASSERT_TRUE(r) << r.error().message;
  const TensorValue& y = r->outputs.at("y");
  for (int64_t row = 0; row < rows; ++row) {
    double expected = 0.0;
    for (int64_t c = 0; c < cols; ++c) expected += p.inputs["x"].data[static_cast<size_t>(row * cols + c)];
    EXPECT_NEAR(y.data[static_cast<size_t>(row)], expected, 1e-4 * std::max(1.0, std::fabs(expected))) << "row " << row;
  }
  ASSERT_EQ(r->launches.size(), 1u);
  EXPECT_EQ(r->launches[0].kernel, "k_y");
  EXPECT_EQ(r->launches[0].grid, (std::vector<int64_t>{rows, 1, 1}));
  EXPECT_EQ(r->launches[0].block, (std::vector<int64_t>{threads, 1, 1}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SimCooperativeSumTest,
                         ::testing::Values(CooperativeSumCase{128, 300}, CooperativeSumCase{96, 1000},
                                           CooperativeSumCase{32, 33}));

// With TargetOptions::progress the simulator reports after every block: the work done grows to
// the program's estimated work (KernelCost::program_work) and names the kernel running.
TEST_F(SimTargetTest, ReportsProgressAfterEveryBlockUpToTheEstimatedWork) {
  KernelProgramBuilder p;
  p.input("x", {4, 64}, iota_data(4 * 64));
  Body body = {Let{"a0", V("threadIdx.x")}, Let{"a1", V("blockIdx.x")}, Load{"in0", "x", {V("a1"), V("a0")}},
               Assign{"v0", ElementwiseFn::Mul, {V("in0"), V("in0")}}, Write{"y", {V("a1"), V("a0")}, V("v0")}};
  p.kernel("y", {"x"}, test::f32({4, 64}), {4, 1, 1}, {64, 1, 1}, body);
  p.g.outputs() = {"y"};
  std::vector<TargetProgress> reports;
  TargetOptions options;
  options.progress = [&](const TargetProgress& r) { reports.push_back(r); };
  Expected<TargetRun> r = target_->execute(p.g, p.inputs, options);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(reports.size(), 4u) << "one report per block";
  const double total = KernelCost::program_work(p.g);
  EXPECT_GT(total, 0);
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i].kernel, "k_y");
    EXPECT_DOUBLE_EQ(reports[i].total, total);
    EXPECT_DOUBLE_EQ(reports[i].done, total * static_cast<double>(i + 1) / 4.0);
  }
}

// Each thread writes its own shared slot and reads its neighbour's: correct with a barrier between,
// a race without one.
Body neighbour_body(bool with_sync) {
  Body b = {Smem{"buf", DType::F32, {64}}, Let{"a0", V("threadIdx.x")}, Load{"in0", "x", {V("a0")}},
            Write{"buf", {V("a0")}, V("in0")}};
  if (with_sync) b.push_back(Sync{});
  b.push_back(Load{"in1", "buf", {(V("a0") + 1) % 64}});
  b.push_back(Write{"y", {V("a0")}, V("in1")});
  return b;
}

TEST_F(SimTargetTest, NeighbourExchangeWithABarrierIsCorrect) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1}, neighbour_body(true));
  Expected<TargetRun> r = run(p, "y");
  ASSERT_TRUE(r) << r.error().message;
  for (size_t i = 0; i < 64; ++i)
    EXPECT_EQ(r->outputs.at("y").data[i], static_cast<double>(static_cast<float>(p.inputs["x"].data[(i + 1) % 64])));
}

TEST_F(SimTargetTest, MissingBarrierIsARaceNamingKernelStatementAndThreads) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1}, neighbour_body(false));
  expect_error(p, "y", {"race on buf[1]", "kernel k_y (node y)", "at `in1 = load buf[(a0 + 1) % 64]`",
                        "block (0, 0, 0) thread (0, 0, 0)", "thread (1, 0, 0) wrote it", "buf[a0] = in0"});
}

TEST_F(SimTargetTest, OutOfBoundsGlobalLoadNamesTheIndexAndThread) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Load{"in0", "x", {V("a0") + 1}}, Write{"y", {V("a0")}, V("in0")}});
  expect_error(p, "y", {"global access x[64] is out of bounds", "dimension 0 is outside [0, 64)", "thread (63, 0, 0)",
                        "at `in0 = load x[a0 + 1]`"});
}

TEST_F(SimTargetTest, OutOfBoundsSharedWriteNamesTheDimension) {
  KernelProgramBuilder p;
  p.input("x", {2, 32}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({2, 32}), {1, 1, 1}, {32, 2, 1},
           {Smem{"buf", DType::F32, {2, 16}}, Let{"a0", V("threadIdx.x")}, Let{"a1", V("threadIdx.y")},
            Load{"in0", "x", {V("a1"), V("a0")}}, Write{"buf", {V("a1"), V("a0")}, V("in0")},
            Write{"y", {V("a1"), V("a0")}, V("in0")}});
  expect_error(p, "y", {"shared access buf[0, 16] is out of bounds", "index 16 of dimension 1 is outside [0, 16)",
                        "thread (16, 0, 0)"});
}

TEST_F(SimTargetTest, UninitializedSharedReadIsAnError) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
           {Smem{"buf", DType::F32, {64}}, Let{"a0", V("threadIdx.x")},
            Cond{V("a0") < I(32), Body{Load{"in0", "x", {V("a0")}}, Write{"buf", {V("a0")}, V("in0")}}, {}}, Sync{},
            Load{"in1", "buf", {V("a0")}}, Write{"y", {V("a0")}, V("in1")}});
  expect_error(p, "y", {"reads uninitialized shared element buf[32]", "thread (32, 0, 0)"});
}

TEST_F(SimTargetTest, BarrierInsideADivergentBranchIsDivergence) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Cond{V("a0") < I(40), Body{Sync{}}, {}}, Load{"in0", "x", {V("a0")}},
            Write{"y", {V("a0")}, V("in0")}});
  expect_error(p, "y", {"barrier divergence", "40 of 64 threads", "thread (40, 0, 0)", "at `Sync()`"});
}

// cp.async: thread t copies x[t] into buf[t]; then reads buf[(t + 1) % 64] as `tail` says.
Body cp_async_body(Body tail) {
  Body b = {Smem{"buf", DType::F32, {64}}, Let{"a0", V("threadIdx.x")},
            CpAsyncCopy{"buf", {V("a0")}, "x", {V("a0")}, 4}, CpAsyncCommit{}};
  for (Stmt& s : tail) b.push_back(std::move(s));
  b.push_back(Write{"y", {V("a0")}, V("in0")});
  return b;
}

TEST_F(SimTargetTest, CpAsyncDataIsVisibleAfterWaitAndBarrier) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
           cp_async_body({CpAsyncWait{0}, Sync{}, Load{"in0", "buf", {(V("a0") + 1) % 64}}}));
  Expected<TargetRun> r = run(p, "y");
  ASSERT_TRUE(r) << r.error().message;
  for (size_t i = 0; i < 64; ++i)
    EXPECT_EQ(r->outputs.at("y").data[i], static_cast<double>(static_cast<float>(p.inputs["x"].data[(i + 1) % 64])));
}

TEST_F(SimTargetTest, CpAsyncReadBeforeWaitIsAnError) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1}, cp_async_body({Load{"in0", "buf", {V("a0")}}}));
  expect_error(p, "y", {"read before cp.async wait", "buf[0]", "thread (0, 0, 0)"});
}

TEST_F(SimTargetTest, CpAsyncWaitKeepLeavesTheNewestGroupsInFlight) {
  KernelProgramBuilder p;
  p.input("x", {128}, iota_data(128));
  // Two groups per thread; keep=1 lands only the first (buf[a0]), so reading buf[a0 + 64] fails.
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
           {Smem{"buf", DType::F32, {128}}, Let{"a0", V("threadIdx.x")},
            CpAsyncCopy{"buf", {V("a0")}, "x", {V("a0")}, 4}, CpAsyncCommit{},
            CpAsyncCopy{"buf", {V("a0") + 64}, "x", {V("a0") + 64}, 4}, CpAsyncCommit{}, CpAsyncWait{1},
            Load{"in0", "buf", {V("a0")}}, Load{"in1", "buf", {V("a0") + 64}}, Write{"y", {V("a0")}, V("in1")}});
  expect_error(p, "y", {"read before cp.async wait", "buf[64]", "at `in1 = load buf[a0 + 64]`"});
}

TEST_F(SimTargetTest, CpAsyncDataReadByAnotherThreadWithoutBarrierIsARace) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
           cp_async_body({CpAsyncWait{0}, Load{"in0", "buf", {(V("a0") + 1) % 64}}}));
  expect_error(p, "y", {"race on buf[1]", "thread (1, 0, 0) wrote it", "CpAsyncCopy(buf[a0], x[a0], bytes=4)"});
}

// A ring of two slots pipelined like pipeline_k_outer makes it: slab 0 in the prologue, then each
// step refills slot (k+1) % 2 while slot k % 2 is read (by the neighbouring thread, so barriers
// matter), then a drain. y[t] = sum over slabs k of x[k * 64 + (t + 1) % 64]. `refill_barrier`
// and `keep` break it the two ways a pipeline breaks.
constexpr int64_t kRingSlabs = 4;
Body ring_pipeline_body(bool refill_barrier, int64_t keep) {
  Expr neighbour = (V("a0") + 1) % 64;
  Body steady;
  if (refill_barrier) steady.push_back(Sync{});
  steady.push_back(CpAsyncCopy{"buf", {(V("k") + 1) % 2, V("a0")}, "x", {(V("k") + 1) * 64 + V("a0")}, 4});
  steady.push_back(CpAsyncCommit{});
  steady.push_back(CpAsyncWait{keep});
  steady.push_back(Sync{});
  steady.push_back(Load{"in0", "buf", {V("k") % 2, neighbour}});
  steady.push_back(Accum{"acc0", CombineFn::Add, V("in0")});
  Body drain = {CpAsyncWait{0}, Sync{}, Load{"in1", "buf", {V("k") % 2, neighbour}},
                Accum{"acc0", CombineFn::Add, V("in1")}};
  Smem ring{"buf", DType::F32, {2, 64}};
  ring.slots = 2;
  return {ring, Let{"a0", V("threadIdx.x")},
          CpAsyncCopy{"buf", {I(0), V("a0")}, "x", {V("a0")}, 4}, CpAsyncCommit{},
          Init{"acc0", Expr::float_(0.0)},
          Loop{"k", I(0), I(kRingSlabs - 1), LoopRole::Reduce, 0, steady},
          Loop{"k", I(kRingSlabs - 1), I(kRingSlabs), LoopRole::Reduce, 0, drain},
          Write{"y", {V("a0")}, V("acc0")}};
}

TEST_F(SimTargetTest, RingPipelineWithWaitGroupAndRefillBarrierComputesEverySlab) {
  KernelProgramBuilder p;
  p.input("x", {kRingSlabs * 64}, iota_data(kRingSlabs * 64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1}, ring_pipeline_body(true, 1));
  Expected<TargetRun> r = run(p, "y");
  ASSERT_TRUE(r) << r.error().message;
  for (int64_t t = 0; t < 64; ++t) {
    float sum = 0.0f;
    for (int64_t k = 0; k < kRingSlabs; ++k) sum += static_cast<float>(p.inputs["x"].data[static_cast<size_t>(k * 64 + (t + 1) % 64)]);
    EXPECT_EQ(r->outputs.at("y").data[static_cast<size_t>(t)], static_cast<double>(sum)) << "y[" << t << "]";
  }
}

TEST_F(SimTargetTest, RingSlotRefilledWithoutBarrierAfterItsReadersIsARace) {
  KernelProgramBuilder p;
  p.input("x", {kRingSlabs * 64}, iota_data(kRingSlabs * 64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1}, ring_pipeline_body(false, 1));
  // Step k = 1 refills slot 0, which thread t - 1 read in step 0 with no Sync() since: thread 0's
  // element was read by thread 63.
  expect_error(p, "y", {"kernel k_y", "CpAsyncCopy(buf[(k + 1) % 2, a0]", "thread (0, 0, 0)",
                        "race on buf[0, 0] (slot 0 of the ring)", "thread (63, 0, 0) read it",
                        "refills it with cp.async with no Sync() in between"});
}

TEST_F(SimTargetTest, RingSlotReadBeforeTheWaitThatCoversItsGroupIsAnError) {
  KernelProgramBuilder p;
  p.input("x", {kRingSlabs * 64}, iota_data(kRingSlabs * 64));
  // keep=2 leaves both slabs in flight: slab k has not landed when it is read.
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1}, ring_pipeline_body(true, 2));
  expect_error(p, "y", {"kernel k_y", "read before cp.async wait", "(slot 0 of the ring)", "in0 = load buf[k % 2"});
}

TEST_F(SimTargetTest, TwoThreadsWritingOneGlobalElementIsAConflict) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({32}), {2, 1, 1}, {32, 1, 1},
           {Let{"a0", V("blockIdx.x") * 32 + V("threadIdx.x")}, Load{"in0", "x", {V("a0")}},
            Write{"y", {V("a0") / 2}, V("in0")}});
  expect_error(p, "y", {"global write conflict", "y[0] is also written by block (0, 0, 0) thread (0, 0, 0)",
                        "block (0, 0, 0) thread (1, 0, 0)"});
}

TEST_F(SimTargetTest, WritesAcrossBlocksAreGlobalConflictsToo) {
  KernelProgramBuilder p;
  p.input("x", {32}, iota_data(32));
  p.kernel("y", {"x"}, test::f32({32}), {2, 1, 1}, {32, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Load{"in0", "x", {V("a0")}}, Write{"y", {V("a0")}, V("in0")}});
  expect_error(p, "y", {"global write conflict", "block (1, 0, 0) thread (0, 0, 0)", "also written by block (0, 0, 0)"});
}

TEST_F(SimTargetTest, OutputElementsNeverWrittenAreAnError) {
  KernelProgramBuilder p;
  p.input("x", {64}, iota_data(64));
  p.kernel("y", {"x"}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Cond{V("a0") < I(50), Body{Load{"in0", "x", {V("a0")}}, Write{"y", {V("a0")}, V("in0")}}, {}}});
  expect_error(p, "y", {"output element y[50] is never written", "kernel k_y"});
}

TEST_F(SimTargetTest, WritesConvertToTheOutputDtype) {
  const std::vector<double> x = {1.7, -1.7, 0.1, 2.5, 0.0, -0.4, 1e-8, 3.3};
  for (DType dt : {DType::I32, DType::I64, DType::BF16, DType::F16, DType::Bool}) {
    KernelProgramBuilder p;
    p.input("x", {8}, x);
    p.kernel("y", {"x"}, TensorType{{8}, dt}, {1, 1, 1}, {8, 1, 1},
             {Let{"a0", V("threadIdx.x")}, Load{"in0", "x", {V("a0")}}, Write{"y", {V("a0")}, V("in0")}});
    Expected<TargetRun> r = run(p, "y");
    ASSERT_TRUE(r) << r.error().message;
    const TensorValue& y = r->outputs.at("y");
    EXPECT_EQ(y.type.dtype, dt);
    for (size_t i = 0; i < x.size(); ++i) {
      double f = static_cast<double>(static_cast<float>(x[i]));
      double expected = dt == DType::Bool ? (x[i] != 0.0 ? 1.0 : 0.0) : dtype_is_float(dt) ? round_to_storage(f, dt) : std::trunc(f);
      EXPECT_EQ(y.data[i], expected) << dtype_name(dt) << " element " << i;
    }
  }
}

// Registers are doubles: an int64 written from 2^53 on may have lost bits, so it is refused.
TEST_F(SimTargetTest, Int64WritesFromTwoToThe53AreRefused) {
  KernelProgramBuilder p;
  p.input("x", {4}, {0, 1, 2, 3}, DType::I64);
  p.kernel("y", {"x"}, TensorType{{4}, DType::I64}, {1, 1, 1}, {4, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Load{"in0", "x", {V("a0")}},
            Write{"y", {V("a0")}, V("in0") * I(int64_t{1} << 52) + I(1)}});
  expect_error(p, "y", {"the int64 value 9007199254740992 is not below 2^53", "written to y[2]", "thread (2, 0, 0)"});
}

TEST_F(SimTargetTest, ShuffleModesFollowTheirLaneRules) {
  // Every lane shuffles its own lane number; width 16 splits the warp into two groups.
  struct Case { ShuffleMode mode; int64_t offset; std::vector<std::pair<int, int>> lane_gets; };
  const std::vector<Case> cases = {
      {ShuffleMode::Xor, 1, {{0, 1}, {1, 0}, {17, 16}, {31, 30}}},
      {ShuffleMode::Xor, 16, {{0, 0}, {3, 3}, {20, 20}}},  // the partner is in the other group: own value
      {ShuffleMode::Down, 1, {{0, 1}, {14, 15}, {15, 15}, {16, 17}, {31, 31}}},
      {ShuffleMode::Up, 2, {{0, 0}, {1, 1}, {2, 0}, {16, 16}, {18, 16}, {31, 29}}},
      {ShuffleMode::Idx, 5, {{0, 5}, {15, 5}, {16, 21}, {31, 21}}}};
  for (const Case& c : cases) {
    KernelProgramBuilder p;
    p.kernel("y", {}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
             {Let{"a0", V("threadIdx.x")}, WarpShuffle{"v0", V("a0") % 32, c.mode, c.offset, 16},
              Write{"y", {V("a0")}, V("v0")}});
    Expected<TargetRun> r = run(p, "y");
    ASSERT_TRUE(r) << r.error().message;
    for (auto [lane, gets] : c.lane_gets) {
      EXPECT_EQ(r->outputs.at("y").data[static_cast<size_t>(lane)], gets) << spelling(c.mode) << " " << c.offset << " lane " << lane;
      EXPECT_EQ(r->outputs.at("y").data[static_cast<size_t>(lane + 32)], gets) << spelling(c.mode) << " second warp lane " << lane;
    }
  }
}

TEST_F(SimTargetTest, ShuffleInAPartiallyActiveWarpIsAnError) {
  KernelProgramBuilder p;
  p.kernel("y", {}, test::f32({64}), {1, 1, 1}, {64, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Init{"acc0", Expr::float_(1.0)},
            Cond{V("a0") < I(48), Body{WarpShuffle{"v0", V("acc0"), ShuffleMode::Xor, 1, 32}}, {}},
            Write{"y", {V("a0")}, V("acc0")}});
  expect_error(p, "y", {"WarpShuffle needs all lanes of the warp", "thread (48, 0, 0)"});
}

TEST_F(SimTargetTest, VectorLoadsAndStoresMoveConsecutiveElements) {
  KernelProgramBuilder p;
  p.input("x", {2, 16}, iota_data(32));
  // Each thread reverses its group of four: y[r, 4t + k] = x[r, 4t + 3 - k].
  p.kernel("y", {"x"}, test::f32({2, 16}), {2, 1, 1}, {4, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Let{"a1", V("blockIdx.x")},
            VectorLoad{{"in0", "in1", "in2", "in3"}, "x", {V("a1"), V("a0") * 4}},
            VectorStore{"y", {V("a1"), V("a0") * 4}, {V("in3"), V("in2"), V("in1"), V("in0")}}});
  Expected<TargetRun> r = run(p, "y");
  ASSERT_TRUE(r) << r.error().message;
  for (size_t row = 0; row < 2; ++row)
    for (size_t i = 0; i < 16; ++i)
      EXPECT_EQ(r->outputs.at("y").data[row * 16 + i],
                static_cast<double>(static_cast<float>(p.inputs["x"].data[row * 16 + (i / 4) * 4 + 3 - i % 4])));
}

TEST_F(SimTargetTest, MisalignedVectorAccessIsAnError) {
  KernelProgramBuilder p;
  p.input("x", {20}, iota_data(20));
  p.kernel("y", {"x"}, test::f32({16}), {1, 1, 1}, {4, 1, 1},
           {Let{"a0", V("threadIdx.x")}, VectorLoad{{"in0", "in1", "in2", "in3"}, "x", {V("a0") * 4 + 1}},
            VectorStore{"y", {V("a0") * 4}, {V("in0"), V("in1"), V("in2"), V("in3")}}});
  expect_error(p, "y", {"not a multiple of 4", "thread (0, 0, 0)"});
}

TEST_F(SimTargetTest, NodesOutsideKernelIrAreRejectedByName) {
  KernelProgramBuilder p;
  p.input("x", {4}, iota_data(4));
  auto loop = std::make_unique<LoopOp>();
  loop->name = "merged_y";
  loop->body = {Loop{"a0", I(0), I(4), LoopRole::Free, 0, Body{Load{"in0", "x", {V("a0")}}, Write{"y", {V("a0")}, V("in0")}}}};
  p.g.add("y", std::move(loop), {"x"}, test::f32({4}));
  expect_error(p, "y", {"sim executes Kernel IR; node y is in loop IR"});
}

TEST_F(SimTargetTest, KernelsSeeEarlierKernelsOutputsAndConstants) {
  KernelProgramBuilder p;
  p.input("x", {8}, iota_data(8));
  auto c = std::make_unique<ConstantOp>();
  c->init = "full";
  c->scale = 2.0;
  p.g.add("two", std::move(c), {}, test::f32({8}));
  p.kernel("h", {"x", "two"}, test::f32({8}), {1, 1, 1}, {8, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Load{"in0", "x", {V("a0")}}, Load{"in1", "two", {V("a0")}},
            Assign{"v0", ElementwiseFn::Mul, {V("in0"), V("in1")}}, Write{"h", {V("a0")}, V("v0")}});
  p.kernel("y", {"h"}, test::f32({8}), {1, 1, 1}, {8, 1, 1},
           {Let{"a0", V("threadIdx.x")}, Load{"in0", "h", {I(7) - V("a0")}}, Assign{"v0", ElementwiseFn::Exp, {V("in0")}},
            Write{"y", {V("a0")}, V("v0")}});
  Expected<TargetRun> r = run(p, "y");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->launches.size(), 2u);
  EXPECT_EQ(r->launches[0].node, "h");
  for (size_t i = 0; i < 8; ++i) {
    float h = static_cast<float>(static_cast<float>(p.inputs["x"].data[7 - i]) * 2.0f);
    EXPECT_NEAR(r->outputs.at("y").data[i], std::exp(static_cast<double>(h)), 1e-6 * std::exp(static_cast<double>(h)));
  }
}

// ---- differential: the corpus through the tile passes and materialize -------------------------

// The corpus under the default pipeline and sampled schedules: tests/e2e/random_knobs_test.cpp.

// ---- every elementwise function and combine op: simulator, Loop IR and Tensor IR agree ---------

// Sample operands: every pair of these values (f32-exact), so NaN, infinities, signed zeros and
// overflow of exp meet every other value in every operand position.
std::vector<double> edge_values() {
  const double inf = std::numeric_limits<double>::infinity();
  return {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 100.0, -100.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()};
}

struct EdgeInputs {
  std::vector<double> x, y, c;  // c: the bool condition of `where`
};

EdgeInputs edge_inputs() {
  EdgeInputs in;
  const std::vector<double> v = edge_values();
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = 0; j < v.size(); ++j) {
      in.x.push_back(v[i]);
      in.y.push_back(v[j]);
      in.c.push_back((i + j) % 2 == 0 ? 1.0 : 0.0);
    }
  return in;
}

// Equal as the f32 values the output holds (NaN equals NaN).
bool same_f32(double a, double b) {
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  return (std::isnan(fa) && std::isnan(fb)) || fa == fb;
}

// One program per function: the body `compute` (loads in0 = x, in1 = y, in2 = c, then v0 and a
// write of v0 to `out`) as a Kernel IR kernel (one thread per element) and a Loop IR kernel, and
// the function as a Tensor IR Elementwise node.
struct FnPrograms {
  KernelProgramBuilder kernel, loop, tensor;
};

FnPrograms fn_programs(const Body& compute, int64_t n, DType out_dtype, const ExprList& tensor_args,
                       std::optional<ElementwiseFn> fn) {
  const EdgeInputs in = edge_inputs();
  FnPrograms p;
  for (KernelProgramBuilder* b : {&p.kernel, &p.loop, &p.tensor}) {
    b->input("x", {n}, in.x);
    b->input("y", {n}, in.y);
    b->input("c", {n}, in.c, DType::Bool);
  }
  const TensorType out{{n}, out_dtype};
  Body kernel_body = {Let{"a0", V("threadIdx.x")}};
  kernel_body.insert(kernel_body.end(), compute.begin(), compute.end());
  p.kernel.kernel("out", {"x", "y", "c"}, out, {1, 1, 1}, {n, 1, 1}, kernel_body);
  p.kernel.g.outputs() = {"out"};
  auto loop = std::make_unique<LoopOp>();
  loop->name = "k_out";
  loop->body = {Loop{"a0", I(0), I(n), LoopRole::Free, 0, compute}};
  p.loop.g.add("out", std::move(loop), {"x", "y", "c"}, out);
  p.loop.g.outputs() = {"out"};
  if (fn) {
    auto ew = std::make_unique<ElementwiseOp>();
    ew->fn = *fn;
    ew->args = tensor_args;
    p.tensor.g.add("out", std::move(ew), {"x", "y", "c"}, out);
    p.tensor.g.outputs() = {"out"};
  }
  return p;
}

Body load_operands() {
  return {Load{"in0", "x", {V("a0")}}, Load{"in1", "y", {V("a0")}},
          Load{"in2", "c", {V("a0")}, ValueType::scalar(DType::Bool)}};
}

TEST_F(SimTargetTest, EveryElementwiseFunctionAgreesWithTheInterpreters) {
  const int64_t n = static_cast<int64_t>(edge_inputs().x.size());
  for (const ElementwiseFnInfo& f : kElementwiseFns) {
    SCOPED_TRACE(std::string(f.name));
    ExprList args, tensor_args;
    if (f.fn == ElementwiseFn::Where) {
      args = {Expr::value("in2"), Expr::value("in0"), Expr::value("in1")};
      tensor_args = {V("c"), V("x"), V("y")};
    } else {
      for (size_t i = 0; i < f.arity; ++i) {
        args.push_back(Expr::value(i == 0 ? "in0" : "in1"));
        tensor_args.push_back(V(i == 0 ? "x" : "y"));
      }
    }
    const DType out_dtype = f.result == FnResult::Bool ? DType::Bool : DType::F32;
    Body compute = load_operands();
    compute.push_back(Assign{"v0", f.fn, args, ValueType::scalar(out_dtype)});
    compute.push_back(Write{"out", {V("a0")}, Expr::value("v0")});
    FnPrograms p = fn_programs(compute, n, out_dtype, tensor_args, f.fn);

    Expected<TargetRun> sim = target_->execute(p.kernel.g, p.kernel.inputs, TargetOptions{});
    ASSERT_TRUE(sim) << sim.error().render() << "\n" << print_graph(p.kernel.g);
    Expected<ValueMap> loop = evaluate_loop_ir(p.loop.g, p.loop.inputs);
    ASSERT_TRUE(loop) << loop.error().render();
    Expected<ValueMap> tensor = evaluate_tensor_ir(p.tensor.g, p.tensor.inputs);
    ASSERT_TRUE(tensor) << tensor.error().render();
    const EdgeInputs in = edge_inputs();
    const std::vector<double>& s = sim->outputs.at("out").data;
    const std::vector<double>& l = loop->at("out").data;
    const std::vector<double>& t = tensor->at("out").data;
    for (size_t e = 0; e < s.size(); ++e) {
      const std::vector<double> operands = f.fn == ElementwiseFn::Where ? std::vector<double>{in.c[e], in.x[e], in.y[e]}
                                                                         : std::vector<double>{in.x[e], in.y[e]};
      const double want = apply_elementwise_fn(f.fn, std::span<const double>(operands.data(), f.arity));
      EXPECT_TRUE(same_f32(s[e], want) && same_f32(l[e], want) && same_f32(t[e], want))
          << f.name << "(" << in.x[e] << ", " << in.y[e] << ", c=" << in.c[e] << "): expected " << want << ", sim "
          << s[e] << ", Loop IR " << l[e] << ", Tensor IR " << t[e];
    }
  }
}

TEST_F(SimTargetTest, EveryCombineOpAgreesWithTheLoopInterpreter) {
  const int64_t n = static_cast<int64_t>(edge_inputs().x.size());
  for (const CombineFnInfo& c : kCombineFns) {
    SCOPED_TRACE(std::string(c.name));
    Body compute = load_operands();
    compute.push_back(Init{"acc0", Expr::value("in0")});
    compute.push_back(Accum{"acc0", c.op, Expr::value("in1")});
    compute.push_back(Write{"out", {V("a0")}, Expr::value("acc0")});
    FnPrograms p = fn_programs(compute, n, DType::F32, {}, std::nullopt);
    Expected<TargetRun> sim = target_->execute(p.kernel.g, p.kernel.inputs, TargetOptions{});
    ASSERT_TRUE(sim) << sim.error().render() << "\n" << print_graph(p.kernel.g);
    Expected<ValueMap> loop = evaluate_loop_ir(p.loop.g, p.loop.inputs);
    ASSERT_TRUE(loop) << loop.error().render();
    const EdgeInputs in = edge_inputs();
    const std::vector<double>& s = sim->outputs.at("out").data;
    const std::vector<double>& l = loop->at("out").data;
    for (size_t e = 0; e < s.size(); ++e) {
      const double want = apply_combine_fn(c.op, in.x[e], in.y[e]);
      EXPECT_TRUE(same_f32(s[e], want) && same_f32(l[e], want))
          << c.name << "(" << in.x[e] << ", " << in.y[e] << "): expected " << want << ", sim " << s[e] << ", Loop IR "
          << l[e];
    }
  }
  // NaN propagates through max and min accumulation, as through torch.amax / amin.
  KernelProgramBuilder nan;
  nan.input("x", {2}, {1.0, std::numeric_limits<double>::quiet_NaN()});
  nan.kernel("y", {"x"}, test::f32({1}), {1, 1, 1}, {1, 1, 1},
             {Init{"acc0", Expr::float_(-std::numeric_limits<double>::infinity())},
              Loop{"a0", I(0), I(2), LoopRole::Reduce, 0, {Load{"in0", "x", {V("a0")}}, Accum{"acc0", CombineFn::Max, V("in0")}}},
              Write{"y", {I(0)}, V("acc0")}});
  Expected<TargetRun> r = run(nan, "y");
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_TRUE(std::isnan(r->outputs.at("y").data[0]));
}

}  // namespace
}  // namespace tessera

// Tests of the materialize pass (Tile IR -> Kernel IR) on hand-built TileOp graphs: every error it
// reports (with its message), the Let decodes of the Tile axes, the launch geometry, the lowering of
// a staged, cooperative RMSNorm, and that the result verifies as Kernel IR. Printouts of kernels
// produced by the real tile pipeline are golden tests (tests/golden/materialize/).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "ir_fixtures.h"
#include "support/built_plugins.h"
#include "support/program_corpus.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

using ir_fixtures::flt;
using ir_fixtures::lit;
using ir_fixtures::var;

class MaterializeTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_.name = "testdev";
  }

  Status materialize(Graph& g) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass("materialize");
    if (!pass) return make_error("pass 'materialize' is not registered");
    PassContext ctx("materialize", "k:001_materialize", pass->knobs(), {}, {}, &device_, &diags_);
    return pass->run(g, ctx);
  }

  // x: (rows, cols) -> y: (rows, cols), one TileOp node `y` with `body`.
  static Graph one_tile(Body body, Shape shape = {64, 128}) {
    Graph g;
    ir_fixtures::add_input(g, "x", shape);
    auto op = std::make_unique<TileOp>();
    op->name = "k_y";
    op->body = std::move(body);
    g.add("y", std::move(op), {"x"}, ir_fixtures::f32(shape));
    g.outputs() = {"y"};
    return g;
  }

  static const KernelOp* kernel_of(const Graph& g, const std::string& id = "y") {
    const Node* n = g.find(id);
    return n == nullptr ? nullptr : n->op_as<KernelOp>();
  }

  void expect_error(Graph g, const std::string& part) {
    Status s = materialize(g);
    ASSERT_FALSE(s) << print_graph(g);
    EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("y"), std::string::npos) << "the error names the node: " << s.message();
  }

  DeviceDesc device_{};
  DiagnosticEngine diags_;
};

// A copy kernel: y[a1, a0] = x[a1, a0] for a (128 thread, 64 block) Tile.
Body copy_tile(std::vector<TileAxis> axes, Body extra = {}) {
  Body tile = {Load{"in0", "x", {var("a1"), var("a0")}}, Write{"y", {var("a1"), var("a0")}, var("in0")}};
  tile.insert(tile.begin(), extra.begin(), extra.end());
  return {Tile{std::move(axes), std::move(tile)}};
}

TEST_F(MaterializeTest, RejectsUnboundParallelAxis) {
  expect_error(one_tile(copy_tile({TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 64, AxisBinding::Parallel}})),
               "run launch_geometry before materialize");
}

TEST_F(MaterializeTest, RejectsMoreThreadsThanTheDeviceAllows) {
  device_.max_threads_per_block = 64;
  expect_error(one_tile(copy_tile({TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 64, AxisBinding::Block}})),
               "128 threads per block; device testdev allows at most 64");
}

TEST_F(MaterializeTest, RejectsSharedMemoryAboveThePerBlockLimit) {
  device_.smem_per_block_static = 512;
  device_.smem_per_block = 1024;  // 128 f32 + 4 pad = 528 bytes fit; two rows do not
  Body stage = {Stage{"x_smem", "x", {var("a1"), lit(0)}, {SlabDim{"a2", 2, 0}, SlabDim{"a3", 128, 1}},
                      StageTransport::Sync, 4}};
  expect_error(one_tile(copy_tile({TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 32, AxisBinding::Block}}, stage)),
               "needs 1056 bytes of shared memory; device testdev allows 1024 bytes per block");
}

TEST_F(MaterializeTest, SharedMemoryAboveTheStaticLimitBecomesDynamic) {
  Body stage = {Stage{"x_smem", "x", {var("a1"), lit(0)}, {SlabDim{"a2", 1, 0}, SlabDim{"a3", 128, 1}},
                      StageTransport::Sync, 4}};
  for (int64_t static_limit : {1024, 512}) {
    device_.smem_per_block_static = static_limit;
    device_.smem_per_block = 1024;
    Graph g = one_tile(copy_tile({TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 32, AxisBinding::Block}}, stage));
    Status s = materialize(g);
    ASSERT_TRUE(s) << s.message();
    // 132 f32 = 528 bytes: static arrays within a 1024-byte static limit, one dynamic array past 512.
    EXPECT_EQ(kernel_of(g)->dynamic_smem, static_limit == 512 ? 528 : 0);
    Status verified = verify_graph(g, Dialect::Kernel);
    EXPECT_TRUE(verified) << verified.message();
  }
}

TEST_F(MaterializeTest, RejectsCollectiveUnderThreadDependentCondition) {
  Body extra = {Init{"acc0", flt(0.0)},
                Cond{var("a0") < lit(16), {Combine{"acc0", CombineFn::Add, CombineScope::Block}}, {}}};
  expect_error(one_tile(copy_tile({TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 64, AxisBinding::Block}}, extra)),
               "collective statement `Combine(acc0, op=add)` is under a thread-dependent loop or "
               "condition");
}

TEST_F(MaterializeTest, RejectsCollectiveInsideStridedLoopOverThreads) {
  Body extra = {StridedLoop{"a2", var("a0"), lit(128), lit(128), LoopRole::Free, 0, {AsyncWait{0}}}};
  expect_error(one_tile(copy_tile({TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 64, AxisBinding::Block}}, extra)),
               "collective statement `AsyncWait(keep=0)`");
}

TEST_F(MaterializeTest, CollectiveInsideUniformLoopIsAccepted) {
  // A serial loop over rows (bounds depend on nothing per-thread) may hold a Stage: it refills
  // per iteration, after a Sync that lets the previous iteration's reads finish.
  Body tile = {Loop{"a2", lit(0), lit(2), LoopRole::Free, 0,
                    {Stage{"x_smem", "x", {var("a1") * 2 + var("a2"), lit(0)}, {SlabDim{"a3", 128, 1}},
                           StageTransport::Sync, 0},
                     Load{"in0", "x_smem", {var("a0")}},
                     Write{"y", {var("a1") * 2 + var("a2"), var("a0")}, var("in0")}}}};
  Graph g = one_tile({Tile{{TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 32, AxisBinding::Block}}, tile}});
  ASSERT_TRUE(materialize(g));
  Status v = verify_graph(g, Dialect::Kernel);
  ASSERT_TRUE(v) << v.message() << print_graph(g);
  EXPECT_EQ(print_body(kernel_of(g)->body),
            "Smem x_smem: f32[128]\n"
            "a0 = threadIdx.x\n"
            "a1 = blockIdx.x\n"
            "for a2 in 0..2:  # free\n"
            "  Sync()\n"
            "  StridedLoop(a3 = a0; < 128; += 128):\n"
            "    in0 = load x[a1 * 2 + a2, a3]\n"
            "    x_smem[a3] = in0\n"
            "  Sync()\n"
            "  in1 = load x_smem[a0]\n"
            "  y[a1 * 2 + a2, a0] = in1\n");
}

TEST_F(MaterializeTest, DecodesTwoThreadAxesFirstFastest) {
  Graph g = one_tile(
      {Tile{{TileAxis{"a0", 32, AxisBinding::Thread}, TileAxis{"a1", 8, AxisBinding::Thread}, TileAxis{"a2", 8, AxisBinding::Block},
             TileAxis{"a3", 16, AxisBinding::Block}},
            {Load{"in0", "x", {var("a3") * 4 + var("a1") / 2, (var("a1") % 2) * 64 + var("a2") * 8 + var("a0") / 4}},
             Write{"y", {lit(0), lit(0)}, var("in0")}}}},
      {64, 128});
  ASSERT_TRUE(materialize(g));
  const KernelOp* k = kernel_of(g);
  ASSERT_NE(k, nullptr);
  // Two BLOCK axes: one grid dimension each, the first-listed as x.
  EXPECT_EQ(k->grid, (std::vector<int64_t>{8, 16, 1}));
  EXPECT_EQ(k->block, (std::vector<int64_t>{256, 1, 1}));
  ASSERT_GE(k->body.size(), 4u);
  EXPECT_EQ(print_stmt(k->body[0]), "a0 = threadIdx.x % 32\n");
  EXPECT_EQ(print_stmt(k->body[1]), "a1 = threadIdx.x / 32\n");
  EXPECT_EQ(print_stmt(k->body[2]), "a2 = blockIdx.x\n");
  EXPECT_EQ(print_stmt(k->body[3]), "a3 = blockIdx.y\n");
}

// Four BLOCK axes, or an axis past the y/z limit of 65,535, decode from one linear blockIdx.x.
TEST_F(MaterializeTest, BlockAxesPastTheGridsDimensionsDecodeFromBlockIdxX) {
  for (const std::vector<TileAxis>& blocks :
       {std::vector<TileAxis>{{"a1", 2, AxisBinding::Block}, {"a2", 2, AxisBinding::Block},
                              {"a3", 2, AxisBinding::Block}, {"a4", 2, AxisBinding::Block}},
        std::vector<TileAxis>{{"a1", 2, AxisBinding::Block}, {"a2", 70000, AxisBinding::Block}}}) {
    std::vector<TileAxis> axes = {{"a0", 32, AxisBinding::Thread}};
    axes.insert(axes.end(), blocks.begin(), blocks.end());
    Graph g = one_tile({Tile{axes, {Write{"y", {lit(0), lit(0)}, Expr::float_(1.0)}}}}, {1, 1});
    ASSERT_TRUE(materialize(g));
    const KernelOp* k = kernel_of(g);
    ASSERT_NE(k, nullptr);
    int64_t product = 1;
    for (const TileAxis& a : blocks) product *= a.extent;
    EXPECT_EQ(k->grid, (std::vector<int64_t>{product, 1, 1}));
    EXPECT_EQ(print_stmt(k->body[1]), "a1 = blockIdx.x % 2\n");
  }
}

TEST_F(MaterializeTest, StagedCooperativeRMSNormVerifiesAsKernelIR) {
  Graph g = ir_fixtures::tile_graph();
  Status s = materialize(g);
  ASSERT_TRUE(s) << s.message();
  Status v = verify_graph(g, Dialect::Kernel);
  ASSERT_TRUE(v) << v.message() << print_graph(g);
  const KernelOp* k = kernel_of(g, "rms_norm");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->grid, (std::vector<int64_t>{32, 1, 1}));
  EXPECT_EQ(k->block, (std::vector<int64_t>{256, 1, 1}));
  EXPECT_EQ(g.find("rms_norm")->choices, ir_fixtures::rms_norm_choices()) << "knob record kept";
  EXPECT_EQ(print_body(k->body),
            "Smem x_smem: f32[2048]\n"
            "Smem acc0_smem: f32[8]\n"
            "a0 = threadIdx.x\n"
            "a1 = blockIdx.x\n"
            "v0 = reciprocal(2048)\n"
            "StridedLoop(a2 = a0; < 2048; += 256):\n"
            "  in0 = load x[0, a1, a2]\n"
            "  x_smem[a2] = in0\n"
            "Sync()\n"
            "acc0 = init(0.0)\n"
            "StridedLoop(a3 = a0; < 2048; += 256):  # reduce\n"
            "  in1 = load x_smem[a3]\n"
            "  v1 = mul(in1, in1)\n"
            "  acc0 <- add(acc0, v1)\n"
            "v2 = WarpShuffle(acc0, xor, 16, width=32)\n"
            "acc0 <- add(acc0, v2)\n"
            "v3 = WarpShuffle(acc0, xor, 8, width=32)\n"
            "acc0 <- add(acc0, v3)\n"
            "v4 = WarpShuffle(acc0, xor, 4, width=32)\n"
            "acc0 <- add(acc0, v4)\n"
            "v5 = WarpShuffle(acc0, xor, 2, width=32)\n"
            "acc0 <- add(acc0, v5)\n"
            "v6 = WarpShuffle(acc0, xor, 1, width=32)\n"
            "acc0 <- add(acc0, v6)\n"
            "if a0 % 32 == 0:\n"
            "  acc0_smem[a0 / 32] = acc0\n"
            "Sync()\n"
            "TreeHalve(acc0_smem, tid=a0, n=8, op=add)\n"
            "in2 = load acc0_smem[0]\n"
            "v7 = mul(in2, v0)\n"
            "v8 = add(v7, 1e-06)\n"
            "v9 = rsqrt(v8)\n"
            "StridedLoop(a4 = a0; < 2048; += 256):  # free, unroll 4\n"
            "  in3 = load x_smem[a4]\n"
            "  in4 = load p_weight[a4]\n"
            "  v10 = mul(in3, v9)\n"
            "  v11 = mul(v10, in4)\n"
            "  rms_norm[0, a1, a4] = v11\n");
}

TEST_F(MaterializeTest, AsyncStageGuardsOnlyTheTail) {
  // 100 columns staged in slabs of 64: the second block's slab runs past the row, so the copy is
  // guarded on the column; rows never leave x, so no row guard.
  Body tile = {Stage{"x_smem", "x", {var("a1"), var("a2") * 64}, {SlabDim{"a3", 64, 1}}, StageTransport::Async, 0},
               AsyncWait{0},
               Cond{var("a2") * 64 + var("a0") < lit(100),
                    {Load{"in0", "x_smem", {var("a0")}},
                     Write{"y", {var("a1"), var("a2") * 64 + var("a0")}, var("in0")}},
                    {}}};
  Graph g = one_tile({Tile{{TileAxis{"a0", 64, AxisBinding::Thread}, TileAxis{"a1", 8, AxisBinding::Block},
                            TileAxis{"a2", 2, AxisBinding::Block}},
                           tile}},
                     {8, 100});
  ASSERT_TRUE(materialize(g));
  Status v = verify_graph(g, Dialect::Kernel);
  ASSERT_TRUE(v) << v.message() << print_graph(g);
  EXPECT_EQ(print_body(kernel_of(g)->body),
            "Smem x_smem: f32[64]\n"
            "a0 = threadIdx.x\n"
            "a1 = blockIdx.x\n"
            "a2 = blockIdx.y\n"
            "StridedLoop(a3 = a0; < 16; += 64):\n"
            "  if a2 * 64 + a3 * 4 < 100:\n"
            "    CpAsyncCopy(x_smem[a3 * 4], x[a1, a2 * 64 + a3 * 4], bytes=16)\n"
            "CpAsyncCommit()\n"
            "CpAsyncWait(keep=0)\n"
            "Sync()\n"
            "if a2 * 64 + a0 < 100:\n"
            "  in0 = load x_smem[a0]\n"
            "  y[a1, a2 * 64 + a0] = in0\n");
}

// bf16 slabs: cp.async moves 4 bytes at least, so an async Stage of 2-byte elements copies 8 at a
// time where the slab start is aligned, and one element at a time, synchronously, where it is not
// (the run's wait and Sync are then its barrier).
TEST_F(MaterializeTest, HalfPrecisionAsyncStagesGroupOrFallBackToPlainCopies) {
  for (const auto& [offset, copy] : std::vector<std::pair<int64_t, std::string>>{
           {0, "CpAsyncCopy(x_smem[a3 * 8], x[a1, a2 * 64 + a3 * 8], bytes=16)"},
           {1, "bf16 in0 = load x[a1, a2 * 64 + a3 + 1]\n  x_smem[a3] = in0"}}) {
    Body tile = {Stage{"x_smem", "x", {var("a1"), var("a2") * 64 + lit(offset)}, {SlabDim{"a3", 64, 1}},
                       StageTransport::Async, 0},
                 AsyncWait{0}};
    Graph g;
    g.add("x", std::make_unique<InputOp>(), {}, TensorType{{8, 192}, DType::BF16});
    auto op = std::make_unique<TileOp>();
    op->name = "k_y";
    op->body = {Tile{{TileAxis{"a0", 64, AxisBinding::Thread}, TileAxis{"a1", 8, AxisBinding::Block},
                      TileAxis{"a2", 2, AxisBinding::Block}},
                     tile}};
    g.add("y", std::move(op), {"x"}, ir_fixtures::f32({8, 128}));
    g.outputs() = {"y"};
    ASSERT_TRUE(materialize(g)) << print_graph(g);
    const std::string text = print_body(kernel_of(g)->body);
    EXPECT_NE(text.find(copy), std::string::npos) << "offset " << offset << ":\n" << text;
    if (offset == 1) EXPECT_EQ(text.find("CpAsyncCopy"), std::string::npos) << text;
  }
}

// A copy moves 16 bytes when the row length and the slab start allow it (the first element's
// guard then guards all four), else 8, else one element: 100, 98 and 99 columns of f32.
TEST_F(MaterializeTest, AsyncCopiesAreAsWideAsTheRowsAlignmentAllows) {
  for (const auto& [columns, copy] :
       std::vector<std::pair<int64_t, std::string>>{{100, "CpAsyncCopy(x_smem[a3 * 4], x[a1, a2 * 64 + a3 * 4], bytes=16)"},
                                                    {98, "CpAsyncCopy(x_smem[a3 * 2], x[a1, a2 * 64 + a3 * 2], bytes=8)"},
                                                    {99, "CpAsyncCopy(x_smem[a3], x[a1, a2 * 64 + a3], bytes=4)"}}) {
    Body tile = {Stage{"x_smem", "x", {var("a1"), var("a2") * 64}, {SlabDim{"a3", 64, 1}}, StageTransport::Async, 0},
                 AsyncWait{0},
                 Cond{var("a2") * 64 + var("a0") < lit(columns),
                      {Load{"in0", "x_smem", {var("a0")}},
                       Write{"y", {var("a1"), var("a2") * 64 + var("a0")}, var("in0")}},
                      {}}};
    Graph g = one_tile({Tile{{TileAxis{"a0", 64, AxisBinding::Thread}, TileAxis{"a1", 8, AxisBinding::Block},
                              TileAxis{"a2", 2, AxisBinding::Block}},
                             tile}},
                       {8, columns});
    ASSERT_TRUE(materialize(g));
    const std::string text = print_body(kernel_of(g)->body);
    EXPECT_NE(text.find(copy), std::string::npos) << columns << " columns:\n" << text;
  }
}

// A ring Stage whose slot may leave 0..slots-1 would write past its slab: an error naming it.
TEST_F(MaterializeTest, RejectsARingSlotThatMayLeaveTheRing) {
  auto ring_loop = [](Expr slot) {
    Stage st{"x_smem", "x", {var("a1"), var("a2") * 32}, {SlabDim{"a3", 32, 1}}, StageTransport::Async, 0};
    st.slots = 2;
    st.slot = std::move(slot);
    return Body{Tile{{TileAxis{"a0", 32, AxisBinding::Thread}, TileAxis{"a1", 64, AxisBinding::Block}},
                     {Loop{"a2", lit(0), lit(4), LoopRole::Reduce, 0,
                           {st, AsyncWait{0}, Load{"in0", "x_smem", {var("a2") % 2, var("a0")}},
                            Write{"y", {var("a1"), var("a2") * 32 + var("a0")}, var("in0")}}}}}};
  };
  expect_error(one_tile(ring_loop(var("a2") % 3)), "the slot a2 % 3 may leave the ring's 0..1");
  Graph g = one_tile(ring_loop(var("a2") % 2));
  ASSERT_TRUE(materialize(g));
  const std::string text = print_body(kernel_of(g)->body);
  EXPECT_NE(text.find("Smem x_smem: f32[2, 32] slots=2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("CpAsyncCopy(x_smem[a2 % 2, a3 * 4], x[a1, a2 * 32 + a3 * 4], bytes=16)"), std::string::npos) << text;
  Status v = verify_graph(g, Dialect::Kernel);
  EXPECT_TRUE(v) << v.message();
}

TEST_F(MaterializeTest, SmallBlockCombineUsesPartialWarpShuffles) {
  Body tile = {Init{"acc0", flt(0.0)},
               StridedLoop{"a2", var("a0"), lit(128), lit(8), LoopRole::Reduce, 0,
                           {Load{"in0", "x", {var("a1"), var("a2")}}, Accum{"acc0", CombineFn::Max, var("in0")}}},
               Combine{"acc0", CombineFn::Max, CombineScope::Block},
               Cond{Expr::binary(ExprKind::Eq, var("a0"), lit(0)), {Write{"y", {var("a1"), lit(0)}, var("acc0")}}, {}}};
  Graph g = one_tile({Tile{{TileAxis{"a0", 8, AxisBinding::Thread}, TileAxis{"a1", 64, AxisBinding::Block}}, tile}});
  ASSERT_TRUE(materialize(g));
  Status v = verify_graph(g, Dialect::Kernel);
  ASSERT_TRUE(v) << v.message() << print_graph(g);
  std::string text = print_body(kernel_of(g)->body);
  EXPECT_NE(text.find("v0 = WarpShuffle(acc0, xor, 4, width=8)\nacc0 <- max(acc0, v0)\n"
                      "v1 = WarpShuffle(acc0, xor, 2, width=8)\nacc0 <- max(acc0, v1)\n"
                      "v2 = WarpShuffle(acc0, xor, 1, width=8)\nacc0 <- max(acc0, v2)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Smem"), std::string::npos) << "one partial warp needs no shared memory\n" << text;
}

TEST_F(MaterializeTest, RejectsCombineOverAnOddBlock) {
  Body extra = {Init{"acc0", flt(0.0)}, Combine{"acc0", CombineFn::Add, CombineScope::Block}};
  expect_error(one_tile(copy_tile({TileAxis{"a0", 48, AxisBinding::Thread}, TileAxis{"a1", 64, AxisBinding::Block}}, extra)),
               "over 48 threads");
}

// ---- the differential corpus through the real tile pipeline ----

// Every corpus program through materialize and the simulator: tests/e2e/random_knobs_test.cpp.

}  // namespace
}  // namespace tessera

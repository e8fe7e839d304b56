// The simulator's Tensor Memory Accelerator and mbarriers (plugins/targets/sim: kernel_compiler,
// block_executor, shared_memory): hand-written Kernel IR kernels, parsed from their printout, copy
// boxes with TmaLoad, announce their bytes with MbarrierArrive and wait on the barrier's phase.
// The values are checked against numbers computed here (out-of-bounds fill, element strides, the
// 128-byte swizzle, a two-slot ring whose phases alternate), and each planted pipeline fault (a
// read before the phase completes, a missing arrival, announced bytes no copy moves, a slot refilled
// while it is read, a thread that reads without waiting, a copy left in flight) is reported with
// the kernel, statement, thread and element.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

// x[r, c] = 100 r + c: every element tells where it came from.
std::vector<double> coordinates(int64_t rows, int64_t cols) {
  std::vector<double> v;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v.push_back(static_cast<double>(100 * r + c));
  return v;
}

class SimTmaTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    target_ = host_->registry().make_target("sim");
    ASSERT_NE(target_, nullptr);
  }

  // Parses `text` (a graph with input x of `rows` x `cols` f32 and output y) and runs it.
  Expected<TargetRun> run(const std::string& text, int64_t rows, int64_t cols) {
    Expected<Graph> g = parse_graph(text, "<test>");
    if (!g) return g.error();
    graph_ = std::move(*g);
    ValueMap inputs;
    inputs["x"] = TensorValue(TensorType{{rows, cols}, DType::F32}, coordinates(rows, cols));
    return target_->execute(graph_, inputs, TargetOptions{});
  }

  void expect_error(const std::string& text, int64_t rows, int64_t cols, const std::vector<std::string>& parts) {
    Expected<TargetRun> r = run(text, rows, cols);
    ASSERT_FALSE(r) << "expected an error mentioning '" << parts.front() << "'";
    for (const std::string& part : parts)
      EXPECT_NE(r.error().message.find(part), std::string::npos) << "missing '" << part << "' in: " << r.error().message;
  }

  std::unique_ptr<Target> target_;
  Graph graph_;
};

// One row of x per block: thread 0 announces the row's bytes and starts the copy, every thread
// waits for phase 0 and reads its right neighbour's element.
const char* kRowCopy = R"(x: (8, 64) float32

kernel k_y  grid=(8, 1, 1) block=(64, 1, 1)  inputs: x  outputs: y: (8, 64) float32  params: tmap_x: tensor_map(x, box=(1, 64))
  Smem x_smem: f32[1, 64] align=128
  bar = MbarrierInit(count=1)
  a0 = threadIdx.x
  a1 = blockIdx.x
  if a0 == 0:
    MbarrierArrive(bar, tx=256)
    TmaLoad(x_smem[0, 0], tmap_x, coords=(a1, 0), mbar=bar)
  MbarrierWait(bar, phase=0)
  in0 = load x_smem[0, (a0 + 1) % 64]
  y[a1, a0] = in0

return y
)";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST_F(SimTmaTest, ACopiedBoxIsVisibleAfterItsPhaseCompletes) {
  Expected<TargetRun> r = run(kRowCopy, 8, 64);
  ASSERT_TRUE(r) << r.error().render();
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t c = 0; c < 64; ++c)
      EXPECT_EQ(r->outputs.at("y").data[static_cast<size_t>(row * 64 + c)], 100.0 * row + (c + 1) % 64);
}

TEST_F(SimTmaTest, ABoxPastTheBufferIsFilledWithZerosOrNan) {
  // Blocks read a 2-row box starting at row 2b + 1: the last block's second row is outside x.
  const std::string two_rows = R"(x: (8, 64) float32

kernel k_y  grid=(4, 1, 1) block=(64, 1, 1)  inputs: x  outputs: y: (8, 64) float32  params: tmap_x: tensor_map(x, box=(2, 64)FILL)
  Smem x_smem: f32[2, 64] align=128
  bar = MbarrierInit(count=1)
  a0 = threadIdx.x
  a1 = blockIdx.x
  if a0 == 0:
    MbarrierArrive(bar, tx=512)
    TmaLoad(x_smem[0, 0], tmap_x, coords=(a1 * 2 + 1, 0), mbar=bar)
  MbarrierWait(bar, phase=0)
  in0 = load x_smem[0, a0]
  in1 = load x_smem[1, a0]
  y[a1 * 2, a0] = in0
  y[a1 * 2 + 1, a0] = in1

return y
)";
  for (const char* fill : {"", ", oob=nan"}) {
    Expected<TargetRun> r = run(replaced(two_rows, "FILL", fill), 8, 64);
    ASSERT_TRUE(r) << r.error().render();
    const std::vector<double>& y = r->outputs.at("y").data;
    for (int64_t row = 0; row < 7; ++row) EXPECT_EQ(y[static_cast<size_t>(row * 64 + 5)], 100.0 * (row + 1) + 5);
    if (std::string(fill).empty()) EXPECT_EQ(y[7 * 64 + 5], 0.0);
    else EXPECT_TRUE(std::isnan(y[7 * 64 + 5]));
  }
}

TEST_F(SimTmaTest, ElementStridesTakeEveryOtherElement) {
  Expected<TargetRun> r = run(R"(x: (4, 64) float32

kernel k_y  grid=(4, 1, 1) block=(32, 1, 1)  inputs: x  outputs: y: (4, 32) float32  params: tmap_x: tensor_map(x, box=(1, 64), element_strides=(1, 2))
  Smem x_smem: f32[32] align=128
  bar = MbarrierInit(count=1)
  a0 = threadIdx.x
  a1 = blockIdx.x
  if a0 == 0:
    MbarrierArrive(bar, tx=128)
    TmaLoad(x_smem, tmap_x, coords=(a1, 0), mbar=bar)
  MbarrierWait(bar, phase=0)
  in0 = load x_smem[a0]
  y[a1, a0] = in0

return y
)",
                              4, 64);
  ASSERT_TRUE(r) << r.error().render();
  for (int64_t row = 0; row < 4; ++row)
    for (int64_t c = 0; c < 32; ++c)
      EXPECT_EQ(r->outputs.at("y").data[static_cast<size_t>(row * 32 + c)], 100.0 * row + 2 * c);
}

// An 8 x 32 f32 box (128-byte rows) in the 128-byte swizzle: the 16-byte chunk q of row r lands at
// chunk q ^ r. Reading with the same XOR gives x back; reading plainly gives the permutation.
const char* kSwizzled = R"(x: (8, 32) float32

kernel k_y  grid=(1, 1, 1) block=(32, 1, 1)  inputs: x  outputs: y: (8, 32) float32  params: tmap_x: tensor_map(x, box=(8, 32), swizzle=128B)
  Smem x_smem: f32[8, 32] align=1024 swizzle=128B
  bar = MbarrierInit(count=1)
  a0 = threadIdx.x
  if a0 == 0:
    MbarrierArrive(bar, tx=1024)
    TmaLoad(x_smem, tmap_x, coords=(0, 0), mbar=bar)
  MbarrierWait(bar, phase=0)
  for a1 in 0..8:
    in0 = load x_smem[a1, COLUMN]
    y[a1, a0] = in0

return y
)";

TEST_F(SimTmaTest, TheSwizzleMovesEachChunkToItsXorWithTheRow) {
  Expected<TargetRun> r = run(replaced(kSwizzled, "COLUMN", "(a0 / 4 ^ a1 % 8) * 4 + a0 % 4"), 8, 32);
  ASSERT_TRUE(r) << r.error().render() << "\n" << print_graph(graph_);
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t c = 0; c < 32; ++c) EXPECT_EQ(r->outputs.at("y").data[static_cast<size_t>(row * 32 + c)], 100.0 * row + c);
  r = run(replaced(kSwizzled, "COLUMN", "a0"), 8, 32);
  ASSERT_TRUE(r) << r.error().render();
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t c = 0; c < 32; ++c)
      EXPECT_EQ(r->outputs.at("y").data[static_cast<size_t>(row * 32 + c)], 100.0 * row + ((c / 4) ^ row) * 4 + c % 4);
}

TEST_F(SimTmaTest, ASwizzleTheBufferDoesNotDeclareOrCannotAlignIsRefused) {
  expect_error(replaced(kSwizzled, " align=1024 swizzle=128B", " align=1024"), 8, 32,
               {"kernel k_y", "TmaLoad(x_smem", "128B swizzle", "declared swizzle=none"});
  expect_error(replaced(kSwizzled, "align=1024", "align=128"), 8, 32, {"aligned to 128 bytes", "needs 1024"});
}

// Slabs of 64 elements of x, one per step k, through a two-slot ring: slot k % 2, whose barrier
// completes its phase (k / 2) % 2 when slab k lands.
const char* kRing = R"(x: (6, 64) float32

kernel k_y  grid=(1, 1, 1) block=(64, 1, 1)  inputs: x  outputs: y: (1, 64) float32  params: tmap_x: tensor_map(x, box=(1, 64))
  Smem x_smem: f32[2, 64] slots=2 align=128
  bar = MbarrierInit(count=1, slots=2)
  a0 = threadIdx.x
  acc0 = init(0.0)
  for k in 0..6:
REFILL_BARRIER    if a0 == 0:
      MbarrierArrive(bar[k % 2], tx=256)
      TmaLoad(x_smem[k % 2, 0], tmap_x, coords=(k, 0), mbar=bar[k % 2])
    MbarrierWait(bar[k % 2], phase=PHASE)
    in0 = load x_smem[k % 2, (a0 + 1) % 64]
    acc0 <- add(acc0, in0)
  y[0, a0] = acc0

return y
)";

std::string ring(const std::string& refill_barrier, const std::string& phase) {
  return replaced(replaced(kRing, "REFILL_BARRIER", refill_barrier), "PHASE", phase);
}

TEST_F(SimTmaTest, ATwoSlotRingAlternatesItsPhasesAndSumsEverySlab) {
  Expected<TargetRun> r = run(ring("    Sync()\n", "k / 2 % 2"), 6, 64);
  ASSERT_TRUE(r) << r.error().render();
  for (int64_t t = 0; t < 64; ++t) {
    float sum = 0.0f;
    for (int64_t k = 0; k < 6; ++k) sum += static_cast<float>(100 * k + (t + 1) % 64);
    EXPECT_EQ(r->outputs.at("y").data[static_cast<size_t>(t)], static_cast<double>(sum)) << t;
  }
}

TEST_F(SimTmaTest, PlantedPipelineFaultsAreReported) {
  // Waiting for the wrong parity: at k = 2 slot 0 has completed phase 0 already, so the wait
  // returns at once and the read finds slab 2 still in flight.
  expect_error(ring("    Sync()\n", "0"), 6, 64,
               {"kernel k_y", "at `in0 = load x_smem[k % 2, (a0 + 1) % 64]`", "read before its barrier phase completes",
                "x_smem[0, 1] (slot 0 of the ring) has a TMA copy in flight"});
  // No Sync() before the refill: thread 0 refills slot 0 at k = 2 while thread 63 read it at k = 0.
  expect_error(ring("", "k / 2 % 2"), 6, 64, {"TmaLoad(x_smem[k % 2, 0]", "thread (0, 0, 0)", "race on x_smem[0, 0] (slot 0 of the ring)",
                       "thread (63, 0, 0) read it", "refills it with a TMA copy with no Sync() in between"});
  // A read before the wait.
  expect_error(replaced(kRowCopy, "  MbarrierWait(bar, phase=0)\n  in0 = load x_smem[0, (a0 + 1) % 64]\n",
                        "  in0 = load x_smem[0, (a0 + 1) % 64]\n  MbarrierWait(bar, phase=0)\n"),
               8, 64, {"read before its barrier phase completes", "x_smem[0, 1]", "thread (0, 0, 0)"});
  // No arrival: the phase can never complete.
  expect_error(replaced(kRowCopy, "    MbarrierArrive(bar, tx=256)\n", ""), 8, 64,
               {"at `MbarrierWait(bar, phase=0)`", "cannot complete", "1 of 1 arrivals are missing"});
  // Announced bytes that the copy does not move.
  expect_error(replaced(kRowCopy, "tx=256", "tx=128"), 8, 64,
               {"cannot complete", "announced 128 transaction bytes and its TMA copies move 256"});
  // Only thread 0 waits: the others read data whose phase they never observed.
  expect_error(replaced(kRowCopy, "  MbarrierWait(bar, phase=0)\n", "  if a0 == 0:\n    MbarrierWait(bar, phase=0)\n"), 8, 64,
               {"thread (1, 0, 0)", "which a TMA copy completing on bar wrote, without waiting on that barrier's phase"});
  // Nobody waits: the block ends with the copy in flight.
  expect_error(replaced(replaced(kRowCopy, "  MbarrierWait(bar, phase=0)\n", ""), "  in0 = load x_smem[0, (a0 + 1) % 64]\n  y[a1, a0] = in0\n",
                        "  in0 = load x[a1, a0]\n  y[a1, a0] = in0\n"),
               8, 64, {"block (0, 0, 0)", "ends with a TMA copy into x_smem[0, 0] in flight", "no thread waited on bar"});
  // A barrier slot outside the ring.
  expect_error(replaced(kRowCopy, "MbarrierWait(bar, phase=0)", "MbarrierWait(bar[1], phase=0)"), 8, 64,
               {"barrier slot 1 of 'bar' is outside its 1 slot(s)"});
}

}  // namespace
}  // namespace tessera

// Warp specialization in the simulator (plugins/targets/sim: RoleScheduler, named barriers,
// setmaxnreg, ordering through mbarriers) and the CUDA emitter: a hand-written Kernel IR kernel in
// the shape materialize gives a Tile with a producer warpgroup. Two consumer warpgroups multiply
// x (128 x 256) by an nn.Linear-style w (64 x 256) with wgmma from a ring of two TMA-copied,
// 128-byte swizzled slabs; a producer warpgroup, registers lowered, issues the copies of each slab
// after the consumers freed its slot (bar_empty); the consumers, registers raised, wait for each
// slab, free its slot after their products land, then pass a named barrier of their own before the
// epilogue. The inputs are small multiples of 1/4, so the product is exact. Planted faults are
// reported with the statement: a named barrier with the wrong thread count (too many: the block
// hangs; too few: it completes with part of them), a producer that refills a slot without waiting
// for the consumers to free it, consumers that free a slot while their products still read it, a
// producer waiting for a phase nobody completes (a hang), registers raised past the block's pool,
// a warpgroup-divergent setmaxnreg. The kernel builds with NVRTC for sm_90a.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/nvrtc_check.h"
#include "support/sim_kernel_test.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"

namespace tessera {
namespace {

constexpr int kM = 128, kN = 64, kK = 256;

struct SpecializedKernel {
  std::string consumer_registers = "232";
  std::string producer_registers = "40";
  std::string consumer_barrier = "    NamedBarrier(id=1, threads=256)\n";
  std::string empty_wait = "        MbarrierWait(bar_empty[a7 % 2], phase=(a7 / 2 + 1) % 2)\n";
  bool release_before_wait = false;  // free the slot before WgmmaWait (its products still read it)
  std::string producer_guard = "threadIdx.x == 256";

  std::string text() const {
    const std::string release = "      if threadIdx.x % 128 == 0:\n"
                                "        MbarrierArrive(bar_empty[a4 % 2])\n";
    std::string t =
        "x: (128, 256) bfloat16\n"
        "w: (64, 256) bfloat16\n\n"
        "kernel k_y  grid=(1, 1, 1) block=(384, 1, 1) smem=49152 dynamic  inputs: x, w  outputs: y: (128, 64) float32  params: "
        "tmap_x: tensor_map(x, box=(128, 64), swizzle=128B), tmap_w: tensor_map(w, box=(64, 64), swizzle=128B)\n"
        "  Smem x_smem: bf16[2, 1, 128, 64] slots=2 align=1024 swizzle=128B\n"
        "  Smem w_smem: bf16[2, 1, 64, 64] slots=2 align=1024 swizzle=128B\n"
        "  bar_x_smem = MbarrierInit(count=1, slots=2)\n"
        "  bar_w_smem = MbarrierInit(count=1, slots=2)\n"
        "  bar_empty = MbarrierInit(count=2, slots=2)\n"
        "  a0 = threadIdx.x % 128\n"
        "  a1 = threadIdx.x / 128\n"
        "  if threadIdx.x < 256:\n"
        "    SetMaxNReg(inc, regs=" + consumer_registers + ")\n"
        "    f32[32] acc0 = init(0.0)\n"
        "    for a4 in 0..4:  # reduce\n"
        "      MbarrierWait(bar_w_smem[a4 % 2], phase=a4 / 2 % 2)\n"
        "      MbarrierWait(bar_x_smem[a4 % 2], phase=a4 / 2 % 2)\n"
        "      WgmmaFence()\n"
        "      for a5 in 0..4:  # reduce\n"
        "        acc0 <- wgmma.m64n64k16.bf16(desc(x_smem[a4 % 2, 0, a1 * 64, a5 * 16], lbo=16, sbo=1024, swizzle=128B), "
        "desc(w_smem[a4 % 2, 0, 0, a5 * 16], lbo=16, sbo=1024, swizzle=128B))\n"
        "      WgmmaCommit()\n" +
        (release_before_wait ? release : "") + "      WgmmaWait(keep=0)\n" + (release_before_wait ? "" : release) +
        consumer_barrier +
        "    for a6 in 0..32:  # free, unroll 32\n"
        "      y[a1 * 64 + a0 / 32 * 16 + a0 % 32 / 4 + a6 % 4 / 2 * 8, a6 / 4 * 8 + a0 % 4 * 2 + a6 % 2] = acc0[a6]\n"
        "  else:\n"
        "    SetMaxNReg(dec, regs=" + producer_registers + ")\n"
        "    if " + producer_guard + ":\n"
        "      for a7 in 0..4:\n" +
        empty_wait +
        "        MbarrierArrive(bar_x_smem[a7 % 2], tx=16384)\n"
        "        TmaLoad(x_smem[a7 % 2, 0, 0, 0], tmap_x, coords=(0, a7 * 64), mbar=bar_x_smem[a7 % 2])\n"
        "        MbarrierArrive(bar_w_smem[a7 % 2], tx=8192)\n"
        "        TmaLoad(w_smem[a7 % 2, 0, 0, 0], tmap_w, coords=(0, a7 * 64), mbar=bar_w_smem[a7 % 2])\n"
        "\nreturn y\n";
    return t;
  }
};

double x_at(int r, int c) { return ((r * 7 + c * 3) % 11 - 5) / 4.0; }
double w_at(int n, int k) { return ((k * 5 + n) % 9 - 4) / 2.0; }

class SimWarpSpecializationTest : public test::SimKernelTest {
 protected:
  Expected<TargetRun> run(const SpecializedKernel& k) {
    std::vector<double> x, w;
    for (int r = 0; r < kM; ++r)
      for (int c = 0; c < kK; ++c) x.push_back(x_at(r, c));
    for (int r = 0; r < kN; ++r)
      for (int c = 0; c < kK; ++c) w.push_back(w_at(r, c));
    ValueMap inputs;
    inputs["x"] = TensorValue(TensorType{{kM, kK}, DType::BF16}, x);
    inputs["w"] = TensorValue(TensorType{{kN, kK}, DType::BF16}, w);
    return run_printout(k.text(), inputs);
  }
  void expect_error(const SpecializedKernel& k, const std::vector<std::string>& parts) {
    expect_error_parts(run(k), parts, k.text());
  }
};

TEST_F(SimWarpSpecializationTest, ProducerAndConsumersComputeTheExactProduct) {
  SpecializedKernel k;
  Status verified = verify_printout(k.text());
  ASSERT_TRUE(verified) << verified.error().render() << "\n" << k.text();
  Expected<TargetRun> r = run(k);
  ASSERT_TRUE(r) << r.error().render() << "\n" << k.text();
  const TensorValue& y = r->outputs.at("y");
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n) {
      double want = 0;
      for (int c = 0; c < kK; ++c) want += x_at(m, c) * w_at(n, c);
      ASSERT_EQ(y.data[static_cast<size_t>(m * kN + n)], want) << "y[" << m << ", " << n << "]";
    }
}

TEST_F(SimWarpSpecializationTest, TheKernelPrintsAsItParses) {
  SpecializedKernel k;
  Expected<Graph> g = parse_graph(k.text(), "<test>");
  ASSERT_TRUE(g) << g.error().render();
  const std::string printed = print_graph(*g);
  for (const char* line : {"SetMaxNReg(inc, regs=232)", "SetMaxNReg(dec, regs=40)", "NamedBarrier(id=1, threads=256)"})
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\n" << printed;
  Expected<Graph> again = parse_graph(printed, "<printed>");
  ASSERT_TRUE(again) << again.error().render();
  EXPECT_EQ(print_graph(*again), printed);
}

// A named barrier told to expect every thread of the block: the producer never arrives.
TEST_F(SimWarpSpecializationTest, ANamedBarrierExpectingMoreThreadsThanArriveHangs) {
  SpecializedKernel k;
  k.consumer_barrier = "    NamedBarrier(id=1, threads=384)\n";
  expect_error(k, {"NamedBarrier(id=1, threads=384)", "waits at named barrier 1 for 384 threads, but only 256 arrive",
                   "wrong thread count", "would hang"});
}

TEST_F(SimWarpSpecializationTest, ANamedBarrierExpectingFewerThreadsThanArriveIsReported) {
  SpecializedKernel k;
  k.consumer_barrier = "    NamedBarrier(id=1, threads=128)\n";
  expect_error(k, {"NamedBarrier(id=1, threads=128)", "256 threads arrive at named barrier 1, which expects 128",
                   "wrong thread count"});
}

// Without its wait on bar_empty the producer runs ahead and starts slab 2 in slot 0 before any
// consumer waited for slab 0 there (on the GPU slab 2 would overwrite slab 0 under its readers).
TEST_F(SimWarpSpecializationTest, ARefillWithoutWaitingForTheConsumersIsReported) {
  SpecializedKernel k;
  k.empty_wait = "";
  expect_error(k, {"MbarrierArrive(bar_x_smem[a7 % 2], tx=16384)", "thread (256, 0, 0)",
                   "arrives on bar_x_smem[0] after all 1 arrivals of its current phase"});
}

// Freeing the slot before WgmmaWait: the products read the slab until the wait, after the
// arrival the producer's refill is ordered by, so the refill races with them.
TEST_F(SimWarpSpecializationTest, FreeingASlotWhileItsProductsReadItIsARace) {
  SpecializedKernel k;
  k.release_before_wait = true;
  expect_error(k, {"TmaLoad(x_smem[a7 % 2, 0, 0, 0]", "race on x_smem[0, 0, 0, 0] (slot 0 of the ring)",
                   "thread (0, 0, 0) read it", "no barrier ordering it first"});
}

// Waiting for the phase of parity 0 of a fresh bar_empty: it needs the consumers' arrivals, which
// need the slab the producer has not issued.
TEST_F(SimWarpSpecializationTest, AProducerWaitingForAPhaseNobodyCompletesHangs) {
  SpecializedKernel k;
  k.empty_wait = "        MbarrierWait(bar_empty[a7 % 2], phase=a7 / 2 % 2)\n";
  expect_error(k, {"MbarrierWait(bar_empty[a7 % 2], phase=a7 / 2 % 2)", "thread (256, 0, 0)", "cannot complete",
                   "2 of 2 arrivals are missing"});
}

// 2 x 128 x 240 + 128 x 40 registers exceed the 384 x 168 the block holds.
TEST_F(SimWarpSpecializationTest, RaisingRegistersPastTheBlocksPoolHangs) {
  SpecializedKernel k;
  k.consumer_registers = "240";
  expect_error(k, {"SetMaxNReg(inc, regs=240)", "needs 9216 more registers", "pool of 64512",
                   "168 per thread at launch", "wait forever"});
}

TEST_F(SimWarpSpecializationTest, AWarpgroupDivergentSetMaxNRegIsReported) {
  SpecializedKernel k;
  k.producer_registers = "40";
  std::string text = k.text();
  // Only the producer's first warp lowers its registers.
  const std::string dec = "    SetMaxNReg(dec, regs=40)\n";
  text.replace(text.find(dec), dec.size(), "    if threadIdx.x < 288:\n      SetMaxNReg(dec, regs=40)\n");
  ValueMap inputs;
  inputs["x"] = TensorValue(TensorType{{kM, kK}, DType::BF16}, std::vector<double>(kM * kK, 0.5));
  inputs["w"] = TensorValue(TensorType{{kN, kK}, DType::BF16}, std::vector<double>(kN * kK, 0.5));
  expect_error_parts(run_printout(text, inputs), {"SetMaxNReg(dec, regs=40)", "warpgroup-divergent setmaxnreg"}, text);
}

TEST_F(SimWarpSpecializationTest, BadCountsAreRefusedBeforeTheRun) {
  for (const auto& [line, part] : {std::pair{"    NamedBarrier(id=0, threads=256)\n", "id is 1 to 15"},
                                   std::pair{"    NamedBarrier(id=1, threads=100)\n", "multiple of 32"}}) {
    SpecializedKernel k;
    k.consumer_barrier = line;
    Status verified = verify_printout(k.text());
    ASSERT_FALSE(verified) << line;
    EXPECT_NE(verified.error().message.find(part), std::string::npos) << verified.error().message;
  }
  SpecializedKernel k;
  k.consumer_registers = "236";
  Status verified = verify_printout(k.text());
  ASSERT_FALSE(verified);
  EXPECT_NE(verified.error().message.find("multiple of 8 registers from 24 to 256"), std::string::npos)
      << verified.error().message;
}

TEST_F(SimWarpSpecializationTest, TheKernelEmitsBarSyncAndSetMaxNRegForOneBlockPerSm) {
  SpecializedKernel k;
  Expected<Graph> g = parse_graph(k.text(), "<test>");
  ASSERT_TRUE(g) << g.error().render();
  Expected<CudaOp> op = emit_last_kernel(*g);
  ASSERT_TRUE(op) << op.error().render();
  for (const char* text : {"__launch_bounds__(384, 1)", "bar.sync 1, 256;", "setmaxnreg.inc.sync.aligned.u32 232;",
                           "setmaxnreg.dec.sync.aligned.u32 40;"})
    EXPECT_NE(op->source.find(text), std::string::npos) << text << "\n" << op->source;
#ifdef TESSERA_HAVE_CUDA
  EXPECT_EQ(test::nvrtc_compile(*op, "sm_90a"), "");
#endif
}

}  // namespace
}  // namespace tessera

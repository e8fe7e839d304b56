// The warpgroup tensor-core statements (WgmmaMma, WgmmaFence, WgmmaCommit, WgmmaWait) in the
// simulator (plugins/targets/sim) and the CUDA emitter: hand-written Kernel IR kernels, parsed from
// their printout, in which one warpgroup stages x (64 x K) and an nn.Linear-style weight w (N x K)
// in shared memory, K-major (or a K x N weight, MN-major), in the layout a descriptor describes (the interleaved 8 x 8 core
// matrices without a swizzle, or 128-byte rows in the 128-byte swizzle), multiplies them with
// wgmma.m64nNk16 into f32 accumulators and writes y = x w^T out in the accumulator layout. The
// inputs are small multiples of 1/4, so every product and sum is exact: the outputs equal the
// product only if the descriptor addressing and the accumulator layout are the PTX ISA's. Planted
// faults are reported with the kernel and statement: the accumulator read before the WgmmaWait that
// completes its group, a product without a WgmmaFence after the accumulator's Init, a descriptor in
// another swizzle than its buffer's rows, a start past a swizzle atom's first row, a warpgroup-
// divergent product, a block ending with a product in flight, staging without a Sync. The kernels
// build with NVRTC for sm_90a.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/sim_kernel_test.h"
#include "support/nvrtc_check.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/kernel_cost.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

// y (64 x n, f32) = x (64 x k) @ w (n x k)^T in one block of one warpgroup.
struct WgmmaKernel {
  std::string dtype = "bf16";
  int n = 32;
  bool swizzled = false;             // 128-byte swizzle (k = 64), else no swizzle (k = 32)
  bool mn_major = false;             // w stored k x n and staged MN-major (n a multiple of 64 swizzled)
  std::string b_major = "mn";        // the B descriptor's major when mn_major (a planted "k" misreads it)
  std::string sync = "  Sync()\n";   // between staging and the products
  std::string fence = "  WgmmaFence()\n";
  std::string wait = "  WgmmaWait(keep=0)\n";
  std::string commit = "  WgmmaCommit()\n";
  std::string a_swizzle;             // the A descriptor's swizzle (default: the buffer's)
  std::string a_start;               // the A descriptor's start index (default: the k step's)
  std::string guard;                 // a condition around the product (a planted divergence)
  bool epilogue_before_wait = false;
  bool epilogue = true;

  int k() const { return swizzled ? 64 : 32; }

  // The Smem declaration and the staged element (r, c) of an operand of `rows` rows.
  std::string smem(const std::string& name, int rows) const {
    if (swizzled) return "  Smem " + name + ": " + dtype + "[" + std::to_string(rows) + ", 64] align=1024 swizzle=128B\n";
    return "  Smem " + name + ": " + dtype + "[" + std::to_string(rows / 8) + ", 4, 8, 8]\n";
  }
  // The staged position of element (r, c): 128-byte rows with 16-byte chunk c / 8 XORed with r % 8,
  // or core matrix (r / 8, c / 8), row r % 8, column c % 8.
  std::string slot(const std::string& r, const std::string& c) const {
    if (swizzled) return "[" + r + ", ((" + c + ") / 8 ^ (" + r + ") % 8) * 8 + (" + c + ") % 8]";
    return "[(" + r + ") / 8, (" + c + ") / 8, (" + r + ") % 8, (" + c + ") % 8]";
  }
  // B's Smem declaration and the staged element (k, n) of an MN-major B: [n / 64 * 64 + k] rows of 64
  // n (128-byte swizzle: blocks of 64 columns, each k x 64), or core matrix (n / 8, k / 8), row
  // k % 8, column n % 8.
  std::string b_smem_mn() const {
    if (swizzled) return "  Smem b_smem: " + dtype + "[" + std::to_string(n / 64 * 64) + ", 64] align=1024 swizzle=128B\n";
    return "  Smem b_smem: " + dtype + "[" + std::to_string(n / 8) + ", 4, 8, 8]\n";
  }
  std::string b_slot_mn(const std::string& k, const std::string& c) const {
    if (swizzled) {
      const std::string r = "(" + c + ") / 64 * 64 + " + k;
      return "[" + r + ", ((" + c + ") % 64 / 8 ^ (" + r + ") % 8) * 8 + (" + c + ") % 8]";
    }
    return "[(" + c + ") / 8, (" + k + ") / 8, (" + k + ") % 8, (" + c + ") % 8]";
  }
  std::string b_desc_mn() const {
    const std::string major = b_major == "k" ? ")" : ", major=" + b_major + ")";
    if (swizzled) return "desc(b_smem[a3 * 16, 0], lbo=8192, sbo=1024, swizzle=128B" + major;
    return "desc(b_smem[0, a3 * 2, 0, 0], lbo=128, sbo=512, swizzle=none" + major;
  }
  // The descriptor of the k step a3's operand in `name`.
  std::string desc(const std::string& name, const std::string& start, const std::string& swizzle) const {
    if (swizzled) return "desc(" + name + "[" + (start.empty() ? "0, a3 * 16" : start) + "], lbo=16, sbo=1024, swizzle=" +
                         (swizzle.empty() ? "128B" : swizzle) + ")";
    return "desc(" + name + "[" + (start.empty() ? "0, a3 * 2, 0, 0" : start) + "], lbo=128, sbo=512, swizzle=" +
           (swizzle.empty() ? "none" : swizzle) + ")";
  }

  std::string text() const {
    const std::string torch_dtype = dtype == "bf16" ? "bfloat16" : "float16";
    const std::string ks = std::to_string(k()), ns = std::to_string(n), regs = std::to_string(n / 2);
    const std::string e = "(a1 * 128 + a0)";
    const std::string w_shape = mn_major ? ks + ", " + ns : ns + ", " + ks;
    std::string body = "x: (64, " + ks + ") " + torch_dtype + "\nw: (" + w_shape + ") " + torch_dtype + "\n\n" +
                       "kernel k_y  grid=(1, 1, 1) block=(128, 1, 1)  inputs: x, w  outputs: y: (64, " + ns +
                       ") float32\n" + smem("a_smem", 64) + (mn_major ? b_smem_mn() : smem("b_smem", n)) +
                       "  a0 = threadIdx.x\n"
                       "  for a1 in 0.." + std::to_string(64 * k() / 128) + ":\n"
                       "    " + dtype + " in0 = load x[" + e + " / " + ks + ", " + e + " % " + ks + "]\n"
                       "    a_smem" + slot(e + " / " + ks, e + " % " + ks) + " = in0\n"
                       "  for a1 in 0.." + std::to_string(n * k() / 128) + ":\n" +
                       (mn_major ? "    " + dtype + " in1 = load w[" + e + " / " + ns + ", " + e + " % " + ns + "]\n"
                                   "    b_smem" + b_slot_mn(e + " / " + ns, e + " % " + ns) + " = in1\n"
                                 : "    " + dtype + " in1 = load w[" + e + " / " + ks + ", " + e + " % " + ks + "]\n"
                                   "    b_smem" + slot(e + " / " + ks, e + " % " + ks) + " = in1\n") +
                       sync +
                       "  f32[" + regs + "] acc0 = init(0.0)\n" + fence +
                       "  for a3 in 0.." + std::to_string(k() / 16) + ":\n";
    const std::string product = "acc0 <- wgmma.m64n" + ns + "k16." + dtype + "(" + desc("a_smem", a_start, a_swizzle) +
                                ", " + (mn_major ? b_desc_mn() : desc("b_smem", "", "")) + ")\n";
    body += guard.empty() ? "    " + product : "    if " + guard + ":\n      " + product;
    const std::string out = "  for a4 in 0.." + regs + ":  # unroll " + regs + "\n"
                            "    y[a0 / 32 * 16 + a0 % 32 / 4 + a4 % 4 / 2 * 8, a4 / 4 * 8 + a0 % 4 * 2 + a4 % 2] = acc0[a4]\n";
    body += commit;
    if (epilogue && epilogue_before_wait) body += out;
    body += wait;
    if (epilogue && !epilogue_before_wait) body += out;
    return body + "\nreturn y\n";
  }
};

double x_at(int r, int c) { return ((r * 7 + c * 3) % 11 - 5) / 4.0; }
double w_at(int n, int k) { return ((k * 5 + n) % 9 - 4) / 2.0; }

class SimWgmmaTest : public test::SimKernelTest {
 protected:
  Expected<TargetRun> run(const WgmmaKernel& k) {
    const DType dt = k.dtype == "bf16" ? DType::BF16 : DType::F16;
    std::vector<double> x, w;
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < k.k(); ++c) x.push_back(x_at(r, c));
    if (k.mn_major) {
      for (int c = 0; c < k.k(); ++c)
        for (int r = 0; r < k.n; ++r) w.push_back(w_at(r, c));
    } else {
      for (int r = 0; r < k.n; ++r)
        for (int c = 0; c < k.k(); ++c) w.push_back(w_at(r, c));
    }
    ValueMap inputs;
    inputs["x"] = TensorValue(TensorType{{64, k.k()}, dt}, x);
    inputs["w"] = k.mn_major ? TensorValue(TensorType{{k.k(), k.n}, dt}, w) : TensorValue(TensorType{{k.n, k.k()}, dt}, w);
    return run_printout(k.text(), inputs);
  }

  void expect_exact_product(const WgmmaKernel& k) {
    Status verified = verify_printout(k.text());
    ASSERT_TRUE(verified) << verified.error().render() << "\n" << k.text();
    Expected<TargetRun> r = run(k);
    ASSERT_TRUE(r) << r.error().render() << "\n" << k.text();
    const TensorValue& y = r->outputs.at("y");
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < k.n; ++n) {
        double want = 0;
        for (int c = 0; c < k.k(); ++c) want += x_at(m, c) * w_at(n, c);
        ASSERT_EQ(y.data[static_cast<size_t>(m * k.n + n)], want) << "y[" << m << ", " << n << "]";
      }
  }

  void expect_error(const WgmmaKernel& k, const std::vector<std::string>& parts) {
    expect_error_parts(run(k), parts, k.text());
  }
};

TEST_F(SimWgmmaTest, ProductsFollowThePtxLayoutsWithAndWithoutTheSwizzle) {
  for (const char* dtype : {"bf16", "f16"})
    for (bool swizzled : {false, true})
      for (int n : {8, 32, 256}) {
        SCOPED_TRACE(std::string(dtype) + (swizzled ? " 128B" : " none") + " n=" + std::to_string(n));
        WgmmaKernel kernel;
        kernel.dtype = dtype;
        kernel.swizzled = swizzled;
        kernel.n = n;
        expect_exact_product(kernel);
      }
}

// B stored k x n (a `x @ w` weight) and staged MN-major: the descriptor's transposed layout
// (imm-trans-b), interleaved core matrices of 8 k x 8 n or 64-column blocks in the 128-byte
// swizzle, whose lbo and sbo trade places (PTX ISA, wgmma "Strides"). Read as K-major, the same
// bytes give another product.
TEST_F(SimWgmmaTest, AnMnMajorBFollowsThePtxLayoutsWithAndWithoutTheSwizzle) {
  for (const char* dtype : {"bf16", "f16"})
    for (bool swizzled : {false, true})
      for (int n : swizzled ? std::vector<int>{64, 256} : std::vector<int>{8, 32, 256}) {
        SCOPED_TRACE(std::string(dtype) + (swizzled ? " 128B" : " none") + " n=" + std::to_string(n));
        WgmmaKernel kernel;
        kernel.dtype = dtype;
        kernel.swizzled = swizzled;
        kernel.mn_major = true;
        kernel.n = n;
        expect_exact_product(kernel);
      }
  WgmmaKernel misread;
  misread.mn_major = true;
  misread.b_major = "k";
  Expected<TargetRun> r = run(misread);
  ASSERT_TRUE(r) << r.error().render();
  int wrong = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < misread.n; ++n) {
      double want = 0;
      for (int c = 0; c < misread.k(); ++c) want += x_at(m, c) * w_at(n, c);
      wrong += r->outputs.at("y").data[static_cast<size_t>(m * misread.n + n)] != want;
    }
  EXPECT_GT(wrong, 64 * misread.n / 2);
}

// Products into one accumulator run in order: two groups in flight, the first completed by
// WgmmaWait(keep=1) while the second is still out, then both.
TEST_F(SimWgmmaTest, GroupsCompleteInOrderAndChainTheirAccumulator) {
  WgmmaKernel k;
  k.commit = "";
  std::string text = k.text();
  const std::string loop = "  for a3 in 0..2:\n";
  const size_t at = text.find(loop);
  ASSERT_NE(at, std::string::npos);
  // Commit after each k step: two groups; wait for the older one first, then for both.
  text.replace(text.find("swizzle=none))\n", at) + 15, 0, "    WgmmaCommit()\n");
  text.replace(text.find("  WgmmaWait(keep=0)\n"), 0, "  WgmmaWait(keep=1)\n");
  Expected<Graph> g = parse_graph(text, "<test>");
  ASSERT_TRUE(g) << g.error().render() << "\n" << text;
  ValueMap inputs;
  std::vector<double> x, w;
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 32; ++c) x.push_back(x_at(r, c));
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) w.push_back(w_at(r, c));
  inputs["x"] = TensorValue(TensorType{{64, 32}, DType::BF16}, x);
  inputs["w"] = TensorValue(TensorType{{32, 32}, DType::BF16}, w);
  Expected<TargetRun> r = target_->execute(*g, inputs, TargetOptions{});
  ASSERT_TRUE(r) << r.error().render() << "\n" << text;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 32; ++n) {
      double want = 0;
      for (int c = 0; c < 32; ++c) want += x_at(m, c) * w_at(n, c);
      ASSERT_EQ(r->outputs.at("y").data[static_cast<size_t>(m * 32 + n)], want) << "y[" << m << ", " << n << "]";
    }
}

TEST_F(SimWgmmaTest, TheKernelPrintsAsItParsesAndCountsTensorCoreFlops) {
  WgmmaKernel k;
  k.swizzled = true;
  Expected<Graph> g = parse_graph(k.text(), "<test>");
  ASSERT_TRUE(g) << g.error().render();
  const std::string printed = print_graph(*g);
  EXPECT_NE(printed.find("acc0 <- wgmma.m64n32k16.bf16(desc(a_smem[0, a3 * 16], lbo=16, sbo=1024, swizzle=128B), "
                         "desc(b_smem[0, a3 * 16], lbo=16, sbo=1024, swizzle=128B))"),
            std::string::npos)
      << printed;
  for (const char* line : {"WgmmaFence()", "WgmmaCommit()", "WgmmaWait(keep=0)"})
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\n" << printed;
  Expected<Graph> again = parse_graph(printed, "<printed>");
  ASSERT_TRUE(again) << again.error().render();
  EXPECT_EQ(print_graph(*again), printed);
  WgmmaKernel mn;
  mn.mn_major = true;
  Expected<Graph> transposed = parse_graph(mn.text(), "<test>");
  ASSERT_TRUE(transposed) << transposed.error().render();
  const std::string mn_printed = print_graph(*transposed);
  EXPECT_NE(mn_printed.find("desc(b_smem[0, a3 * 2, 0, 0], lbo=128, sbo=512, swizzle=none, major=mn))"), std::string::npos)
      << mn_printed;
  Expected<Graph> mn_again = parse_graph(mn_printed, "<printed>");
  ASSERT_TRUE(mn_again) << mn_again.error().render();
  EXPECT_EQ(print_graph(*mn_again), mn_printed);
  // 128 threads x 4 k steps x 2 * 64 * 32 * 16 / 128 FLOPs per thread: the product's 2 * 64 * 32 * 64.
  EXPECT_EQ(KernelCost::of(*g, *g->find("y")).tensor_flops, 2.0 * 64 * 32 * 64);
}

TEST_F(SimWgmmaTest, ReadingTheAccumulatorBeforeItsWaitIsReported) {
  WgmmaKernel k;
  k.epilogue_before_wait = true;
  expect_error(k, {"k_y", "reads acc0[0]", "wgmma.m64n32k16.bf16", "is in flight into it", "no WgmmaWait has completed its group"});
  WgmmaKernel uncommitted;
  uncommitted.commit = "";
  uncommitted.epilogue_before_wait = true;
  expect_error(uncommitted, {"reads acc0[0]", "it is not even committed"});
  WgmmaKernel kept;
  kept.wait = "  WgmmaWait(keep=1)\n";  // the only group may stay in flight
  expect_error(kept, {"reads acc0[0]", "in flight"});
}

TEST_F(SimWgmmaTest, AProductWithoutAFenceAfterTheInitIsReported) {
  WgmmaKernel k;
  k.fence = "";
  expect_error(k, {"k_y", "reads the accumulator acc0[0]", "since the warpgroup's last WgmmaFence()"});
}

TEST_F(SimWgmmaTest, ADescriptorInAnotherSwizzleThanItsRowsIsReported) {
  WgmmaKernel k;
  k.swizzled = true;
  k.a_swizzle = "64B";
  expect_error(k, {"k_y", "the A descriptor reads 'a_smem' as swizzle=64B", "laid out in swizzle=128B"});
}

TEST_F(SimWgmmaTest, ASwizzledStartPastTheAtomsFirstRowIsReported) {
  WgmmaKernel k;
  k.swizzled = true;
  k.a_start = "1, a3 * 16";  // row 1: byte 128 of the 1024-byte atom
  expect_error(k, {"k_y", "the A descriptor's start a_smem[1, 0]", "past its first row"});
}

TEST_F(SimWgmmaTest, AWarpgroupDivergentProductIsReported) {
  WgmmaKernel k;
  k.guard = "a0 < 64";
  expect_error(k, {"k_y", "warpgroup-divergent wgmma.mma_async", "64 of the warpgroup's 128 threads"});
}

TEST_F(SimWgmmaTest, ABlockEndingWithAProductInFlightIsReported) {
  WgmmaKernel k;
  k.wait = "";
  k.epilogue = false;
  expect_error(k, {"k_y", "the block ends with this wgmma.mma_async in flight"});
}

TEST_F(SimWgmmaTest, ProductsWithoutASyncAfterStagingRace) {
  WgmmaKernel k;
  k.sync = "";
  expect_error(k, {"k_y", "wgmma", "race"});
}

TEST_F(SimWgmmaTest, TheVerifierChecksShapesAccumulatorsAndDescriptors) {
  auto verify = [](const std::string& text) -> std::string {
    Expected<Graph> g = parse_graph(text, "<test>");
    if (!g) return g.error().message;
    Status st = verify_graph(*g, Dialect::Kernel);
    return st ? "" : st.error().message;
  };
  const std::string text = WgmmaKernel{}.text();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return verify(t);
  };
  EXPECT_NE(replaced("f32[16] acc0", "f32[8] acc0").find("wgmma.m64n32k16's accumulator needs 16 elements per thread"),
            std::string::npos)
      << replaced("f32[16] acc0", "f32[8] acc0");
  EXPECT_NE(replaced("m64n32k16", "m64n12k16").find("N must be a multiple of 8 from 8 to 256"), std::string::npos);
  EXPECT_NE(replaced("lbo=128, sbo=512", "lbo=100, sbo=512").find("lbo=100: a descriptor stride is a positive multiple of 16"),
            std::string::npos);
  EXPECT_NE(replaced("wgmma.m64n32k16.bf16", "wgmma.m64n32k16.f16").find("reads its A operand from a_smem (bf16)"),
            std::string::npos);
  EXPECT_NE(replaced("WgmmaWait(keep=0)", "WgmmaWait(keep=9)").find("keeps 0 to 7 groups"), std::string::npos);
}

#ifdef TESSERA_HAVE_CUDA
// The products are emitted under the sm_90a feature macro; this compiles only where it is defined.
TEST_F(SimWgmmaTest, TheEmittedKernelBuildsWithNvrtcForSm90a) {
  CudaOp probe;
  probe.name = "k_probe";
  probe.source = "#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n#error sm_90a features missing\n#endif\n"
                 "extern \"C\" __global__ void k_probe() {}\n";
  ASSERT_EQ(test::nvrtc_compile(probe, "sm_90a"), "");
  for (const char* dtype : {"bf16", "f16"})
    for (bool swizzled : {false, true})
      for (bool mn_major : {false, true}) {
        WgmmaKernel kernel;
        kernel.dtype = dtype;
        kernel.swizzled = swizzled;
        kernel.mn_major = mn_major;
        kernel.n = 64;
        Expected<Graph> g = parse_graph(kernel.text(), "<test>");
        ASSERT_TRUE(g) << g.error().render();
        Expected<CudaOp> op = emit_last_kernel(*g);
        ASSERT_TRUE(op) << op.error().render();
        EXPECT_NE(op->source.find(std::string("wgmma.mma_async.sync.aligned.m64n64k16.f32.") + dtype + "." + dtype),
                  std::string::npos)
            << op->source;
        for (const char* line : {"wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 0"})
          EXPECT_NE(op->source.find(line), std::string::npos) << line;
        // imm-trans-a 0 (A K-major), imm-trans-b 1 for an MN-major B.
        EXPECT_NE(op->source.find(mn_major ? "p, 1, 1, 0, 1;" : "p, 1, 1, 0, 0;"), std::string::npos) << op->source;
        // sm_90a compiles the products; sm_90 and sm_80 the trap beside them.
        for (const char* arch : {"sm_90a", "sm_90", "sm_80"})
          EXPECT_EQ(test::nvrtc_compile(*op, arch), "") << dtype << " " << arch << (mn_major ? " MN-major" : "");
      }
}
#endif

}  // namespace
}  // namespace tessera

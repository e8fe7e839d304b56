// The tensor-core statements in the simulator (plugins/targets/sim) and the CUDA emitter:
// hand-written Kernel IR kernels, parsed from their printout, that stage bf16/f16 tiles of A and B
// in shared memory, load fragments with ldmatrix (B with .trans) and multiply them with
// mma.m16n8k16 / m16n8k8 into f32 accumulators, then write the accumulators out in the PTX C
// layout. The inputs are small multiples of 1/4, so every product and every sum is exact in f32:
// the outputs must equal A·B exactly, which they can only if each layout (ldmatrix's
// distribution, mma's A, B and C fragments) is the PTX ISA's. Planted faults are reported with
// the kernel and statement: a warp-divergent mma, a misaligned ldmatrix row, a race on the staged
// tile (no Sync), a block whose last warp is partial; a fragment no ldmatrix wrote poisons the
// output. The same kernels build with NVRTC for sm_80 and sm_90.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
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
#include "tessera/target/warp_access.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

// y (32 x 16, f32) = x (32 x 32) @ w (32 x 16), one warp per block computing 16 rows: x's rows
// and all of w are staged in shared memory, then for each of the K / k steps the warp loads one A
// fragment (ldmatrix.x4 for k = 16, .x2 for k = 8) and one B fragment per 8 output columns
// (ldmatrix.x2.trans / .x1.trans) and multiplies. `dtype` is bf16 or f16.
struct MmaKernel {
  std::string dtype = "bf16";
  int k = 16;                       // the mma shape's K: 16 or 8
  std::string sync = "  Sync()\n";  // between staging and the fragment loads
  std::string a_column = "a0 / 16 * 8";  // the A row's column within a k step (x4: lanes 16-31 name columns 8..15)
  std::string mma_guard;            // a condition around the mma (a planted divergence)
  int threads = 32;
  bool load_a = true;

  std::string text() const {
    const std::string torch_dtype = dtype == "bf16" ? "bfloat16" : "float16";
    const std::string steps = std::to_string(32 / k), kk = std::to_string(k);
    const std::string a_count = k == 16 ? "x4" : "x2", b_count = k == 16 ? "x2" : "x1";
    const std::string a_col = k == 16 ? a_column : "0";
    const std::string mma = "acc0[a5] <- mma.m16n8k" + kk + "." + dtype + "(frag0, frag1[a5])\n";
    std::string body = "x: (32, 32) " + torch_dtype + "\nw: (32, 16) " + torch_dtype + "\n\n" +
                       "kernel k_y  grid=(2, 1, 1) block=(" + std::to_string(threads) +
                       ", 1, 1)  inputs: x, w  outputs: y: (32, 16) float32\n"
                       "  Smem a_smem: " + dtype + "[16, 32]\n"
                       "  Smem b_smem: " + dtype + "[32, 16]\n"
                       "  a0 = threadIdx.x\n"
                       "  a1 = blockIdx.x\n"
                       "  if a0 < 32:\n"
                       "    for a2 in 0..16:\n"
                       "      " + dtype + " in0 = load x[a1 * 16 + a2, a0]\n"
                       "      a_smem[a2, a0] = in0\n"
                       "      " + dtype + " in1 = load w[a0, a2]\n"
                       "      b_smem[a0, a2] = in1\n" +
                       sync +
                       "  f32[2][4] acc0 = init(0.0)\n"
                       "  " + dtype + "[" + std::to_string(k / 2) + "] frag0 = fragment()\n"
                       "  " + dtype + "[2][" + std::to_string(k / 4) + "] frag1 = fragment()\n"
                       "  for a3 in 0.." + steps + ":\n";
    if (load_a) body += "    frag0 = ldmatrix." + a_count + "(a_smem[a0 % 16, a3 * " + kk + " + " + a_col + "])\n";
    body += "    for a5 in 0..2:  # unroll 2\n"
            "      frag1[a5] = ldmatrix." + b_count + ".trans(b_smem[a3 * " + kk + " + a0 % " + kk + ", a5 * 8])\n"
            "    for a5 in 0..2:  # unroll 2\n";
    body += mma_guard.empty() ? "      " + mma : "      if " + mma_guard + ":\n        " + mma;
    body += "  for a5 in 0..2:  # unroll 2\n"
            "    for a6 in 0..4:  # unroll 4\n"
            "      y[a1 * 16 + a0 / 4 + a6 / 2 * 8, a5 * 8 + a0 % 4 * 2 + a6 % 2] = acc0[a5, a6]\n"
            "\nreturn y\n";
    return body;
  }
};

double x_at(int r, int c) { return ((r * 7 + c * 3) % 11 - 5) / 4.0; }
double w_at(int k, int n) { return ((k * 5 + n) % 9 - 4) / 2.0; }

class SimMmaTest : public test::SimKernelTest {
 protected:
  Expected<TargetRun> run(const MmaKernel& k) {
    const DType dt = k.dtype == "bf16" ? DType::BF16 : DType::F16;
    std::vector<double> x, w;
    for (int r = 0; r < 32; ++r)
      for (int c = 0; c < 32; ++c) x.push_back(x_at(r, c));
    for (int r = 0; r < 32; ++r)
      for (int c = 0; c < 16; ++c) w.push_back(w_at(r, c));
    ValueMap inputs;
    inputs["x"] = TensorValue(TensorType{{32, 32}, dt}, x);
    inputs["w"] = TensorValue(TensorType{{32, 16}, dt}, w);
    return run_printout(k.text(), inputs);
  }

  void expect_exact_product(const MmaKernel& k) {
    Status verified = verify_printout(k.text());
    ASSERT_TRUE(verified) << verified.error().render() << "\n" << k.text();
    Expected<TargetRun> r = run(k);
    ASSERT_TRUE(r) << r.error().render();
    const TensorValue& y = r->outputs.at("y");
    for (int m = 0; m < 32; ++m)
      for (int n = 0; n < 16; ++n) {
        double want = 0;
        for (int c = 0; c < 32; ++c) want += x_at(m, c) * w_at(c, n);
        ASSERT_EQ(y.data[static_cast<size_t>(m * 16 + n)], want) << "y[" << m << ", " << n << "]";
      }
  }

  void expect_error(const MmaKernel& k, const std::vector<std::string>& parts) { expect_error_parts(run(k), parts); }
};

TEST_F(SimMmaTest, LdmatrixAndMmaFollowThePtxLayoutsInBothDtypesAndShapes) {
  for (const char* dtype : {"bf16", "f16"})
    for (int k : {16, 8}) {
      SCOPED_TRACE(std::string(dtype) + " k=" + std::to_string(k));
      MmaKernel kernel;
      kernel.dtype = dtype;
      kernel.k = k;
      expect_exact_product(kernel);
    }
}

TEST_F(SimMmaTest, TheKernelPrintsAsItParsesAndCountsTensorCoreFlops) {
  Expected<Graph> g = parse_graph(MmaKernel{}.text(), "<test>");
  ASSERT_TRUE(g) << g.error().render();
  const std::string printed = print_graph(*g);
  EXPECT_NE(printed.find("frag0 = ldmatrix.x4(a_smem[a0 % 16, a3 * 16 + a0 / 16 * 8])"), std::string::npos) << printed;
  EXPECT_NE(printed.find("frag1[a5] = ldmatrix.x2.trans(b_smem[a3 * 16 + a0 % 16, a5 * 8])"), std::string::npos) << printed;
  EXPECT_NE(printed.find("acc0[a5] <- mma.m16n8k16.bf16(frag0, frag1[a5])"), std::string::npos) << printed;
  EXPECT_NE(printed.find("bf16[8] frag0 = fragment()"), std::string::npos) << printed;
  Expected<Graph> again = parse_graph(printed, "<printed>");
  ASSERT_TRUE(again) << again.error().render();
  EXPECT_EQ(print_graph(*again), printed);
  // 2 blocks x 32 threads x 2 k steps x 2 mma, each 2 * 16 * 8 * 16 / 32 FLOPs per thread: the
  // 2 * 32 * 16 * 32 FLOPs of the product.
  const KernelCost cost = KernelCost::of(*g, *g->find("y"));
  EXPECT_EQ(cost.tensor_flops, 2.0 * 32 * 16 * 32);
}

// The cost model's shared-memory term: each 8x8 matrix of an ldmatrix is one phase of 8 rows of 16
// bytes. A's rows are 64 bytes apart (bf16[16, 32]): rows 0, 2, 4, 6 share banks, 4 wavefronts a
// matrix; B's are 32 bytes apart (bf16[32, 16]): 2 wavefronts.
TEST_F(SimMmaTest, LdmatrixRowsCountTheirBankConflicts) {
  Expected<Graph> g = parse_graph(MmaKernel{}.text(), "<test>");
  ASSERT_TRUE(g) << g.error().render();
  Expected<WarpAccessMap> map = enumerate_warp_accesses(*g, *g->find("y"));
  ASSERT_TRUE(map) << map.error().render();
  std::map<std::string, std::vector<int64_t>> wavefronts;
  for (const WarpAccess& a : map->accesses)
    if (a.stmt == StmtKind::LdMatrix && a.warp == 0) wavefronts[a.buffer].push_back(bank_wavefronts(a, 32, 4));
  // One access per matrix of each ldmatrix statement (the loops' trips count as its executions).
  EXPECT_EQ(wavefronts["a_smem"], std::vector<int64_t>(4, 4));
  EXPECT_EQ(wavefronts["b_smem"], std::vector<int64_t>(2, 2));
}

TEST_F(SimMmaTest, AWarpDivergentMmaIsReported) {
  MmaKernel k;
  k.mma_guard = "a0 < 16";
  expect_error(k, {"k_y", "mma.m16n8k16.bf16(frag0, frag1[a5])", "warp-divergent mma", "16 of the warp's 32 threads"});
}

TEST_F(SimMmaTest, AMisalignedLdmatrixRowIsReported) {
  MmaKernel k;
  k.a_column = "a0 / 16 * 4";  // lanes 16-31 name columns 4.. of a step: 8 bytes off
  expect_error(k, {"k_y", "ldmatrix.x4", "is not 16-byte aligned"});
}

TEST_F(SimMmaTest, LdmatrixWithoutASyncAfterStagingRaces) {
  MmaKernel k;
  k.sync = "";
  expect_error(k, {"k_y", "ldmatrix", "race"});
}

TEST_F(SimMmaTest, APartialWarpCannotRunATensorCoreInstruction) {
  MmaKernel k;
  k.threads = 48;  // the second warp has 16 threads
  expect_error(k, {"k_y", "needs a whole warp", "16 threads"});
}

TEST_F(SimMmaTest, AFragmentNoLdmatrixWrotePoisonsTheOutput) {
  MmaKernel k;
  k.load_a = false;
  Expected<TargetRun> r = run(k);
  ASSERT_TRUE(r) << r.error().render();
  for (double v : r->outputs.at("y").data) EXPECT_TRUE(std::isnan(v));
}

TEST_F(SimMmaTest, TheVerifierChecksFragmentSlicesAndDtypes) {
  auto verify = [](const std::string& text) -> std::string {
    Expected<Graph> g = parse_graph(text, "<test>");
    if (!g) return g.error().message;
    Status st = verify_graph(*g, Dialect::Kernel);
    return st ? "" : st.error().message;
  };
  MmaKernel k;
  std::string wrong_count = k.text();
  wrong_count.replace(wrong_count.find("ldmatrix.x4"), 11, "ldmatrix.x2");
  EXPECT_NE(verify(wrong_count).find("ldmatrix.x2 needs 4 elements per thread, but the slice of frag0 (bf16[8]) holds 8"),
            std::string::npos)
      << verify(wrong_count);
  std::string wrong_dtype = k.text();
  wrong_dtype.replace(wrong_dtype.find("mma.m16n8k16.bf16"), 17, "mma.m16n8k16.f16");
  EXPECT_NE(verify(wrong_dtype).find("reads its A operand from frag0 (bf16[8])"), std::string::npos) << verify(wrong_dtype);
  std::string f32_fragment = k.text();
  f32_fragment.replace(f32_fragment.find("bf16[8] frag0"), 13, "f32[8] frag0");
  EXPECT_NE(verify(f32_fragment).find("operand fragments hold bf16 or f16"), std::string::npos) << verify(f32_fragment);
}

#ifdef TESSERA_HAVE_CUDA
TEST_F(SimMmaTest, TheEmittedKernelBuildsWithNvrtcForSm80AndSm90) {
  for (const char* dtype : {"bf16", "f16"})
    for (int k : {16, 8}) {
      MmaKernel kernel;
      kernel.dtype = dtype;
      kernel.k = k;
      Expected<Graph> g = parse_graph(kernel.text(), "<test>");
      ASSERT_TRUE(g) << g.error().render();
      Expected<CudaOp> op = emit_last_kernel(*g);
      ASSERT_TRUE(op) << op.error().render();
      EXPECT_NE(op->source.find("mma.sync.aligned.m16n8k" + std::to_string(k) + ".row.col.f32." + dtype + "." + dtype + ".f32"),
                std::string::npos)
          << op->source;
      EXPECT_NE(op->source.find(k == 16 ? "ldmatrix.sync.aligned.m8n8.x4.shared.b16" : "ldmatrix.sync.aligned.m8n8.x2.shared.b16"),
                std::string::npos);
      for (const char* arch : {"sm_80", "sm_90"}) EXPECT_EQ(test::nvrtc_compile(*op, arch), "") << dtype << " k=" << k << " " << arch;
    }
}
#endif

}  // namespace
}  // namespace tessera

// KernelReport and KernelBound (tessera/target/kernel_report.h) on printed Kernel IR whose figures
// are counted by hand in the comments, and the report's warnings and side-by-side layout
// (framework/cli/kernel_report_text.h). The CLI's report is checked by the goldens in
// tests/golden/kernel_report and by tests/e2e/cli_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include "framework/cli/kernel_report_text.h"
#include "tessera/ir/parser.h"
#include "tessera/target/device.h"
#include "tessera/target/kernel_report.h"

namespace tessera {
namespace {

KernelReport report_of(const std::string& text, const std::string& node) {
  Expected<Graph> g = parse_graph(text, "<test>");
  EXPECT_TRUE(g) << g.error().render();
  if (!g) return {};
  const Node* n = g->find(node);
  EXPECT_NE(n, nullptr);
  Expected<KernelReport> r = KernelReport::of(*g, *n);
  EXPECT_TRUE(r) << r.error().render();
  return r ? *r : KernelReport{};
}

double flops_of(const KernelReport& r, const std::string& kind) {
  for (const FlopCount& f : r.flops_by_kind)
    if (f.kind == kind) return f.count;
  return 0;
}

const DeviceDesc& h100() {
  static const DeviceDesc d = [] {
    Expected<DeviceTable> t = DeviceTable::load_file(TESSERA_SOURCE_DIR "/data/devices.yaml");
    EXPECT_TRUE(t) << t.error().render();
    return *t->find("h100");
  }();
  return d;
}

// RMSNorm over (1, 32, 2048) as the default pipeline's kernel stage prints it
// (tests/golden/e2e/rms_norm_kernel.txt): one block per row, 256 threads.
constexpr const char* kRmsNorm = R"(x: (1, 32, 2048) float32
p_weight: (2048,) float32 = param weight  # randn seed=9545380779529795853

kernel k_rms_norm_reduce  grid=(32, 1, 1) block=(256, 1, 1)  inputs: x, p_weight  outputs: rms_norm: (1, 32, 2048) float32
  Smem x_smem: f32[2048]
  Smem acc0_smem: f32[8]
  a0 = threadIdx.x
  a1 = blockIdx.x
  StridedLoop(a2 = a0; < 2048; += 256):
    CpAsyncCopy(x_smem[a2], x[0, a1, a2], bytes=4)
  CpAsyncCommit()
  CpAsyncWait(keep=0)
  Sync()
  acc0 = init(0.0)
  StridedLoop(a3 = a0; < 2048; += 256):  # reduce
    in0 = load x_smem[a3]
    v0 = mul(in0, in0)
    acc0 <- add(acc0, v0)
  v1 = WarpShuffle(acc0, xor, 16, width=32)
  acc0 <- add(acc0, v1)
  v2 = WarpShuffle(acc0, xor, 8, width=32)
  acc0 <- add(acc0, v2)
  v3 = WarpShuffle(acc0, xor, 4, width=32)
  acc0 <- add(acc0, v3)
  v4 = WarpShuffle(acc0, xor, 2, width=32)
  acc0 <- add(acc0, v4)
  v5 = WarpShuffle(acc0, xor, 1, width=32)
  acc0 <- add(acc0, v5)
  if a0 % 32 == 0:
    acc0_smem[a0 / 32] = acc0
  Sync()
  TreeHalve(acc0_smem, tid=a0, n=8, op=add)
  in1 = load acc0_smem[0]
  v6 = mul(in1, 0.00048828125)
  v7 = add(v6, 1.1920928955078125e-07)
  v8 = rsqrt(v7)
  StridedLoop(a4 = a0; < 2048; += 256):  # free
    in2 = load x_smem[a4]
    v9 = mul(in2, v8)
    in3 = load p_weight[a4]
    v10 = mul(v9, in3)
    rms_norm[0, a1, a4] = v10

return rms_norm
)";

TEST(KernelReportTest, RmsNormBytesAndFlopsCountedByHand) {
  const KernelReport r = report_of(kRmsNorm, "rms_norm");
  EXPECT_EQ(r.kernel, "k_rms_norm_reduce");
  EXPECT_EQ(r.blocks(), 32);
  EXPECT_EQ(r.threads_per_block(), 256);
  // x_smem 2048 x 4 = 8192 B at offset 0, acc0_smem 8 x 4 = 32 B at 8192: 8224 B, static.
  EXPECT_EQ(r.static_smem, 8224);
  EXPECT_EQ(r.dynamic_smem, 0);
  // x: 32 x 2048 f32 = 262,144 B, all copied; p_weight 2048 x 4 = 8,192 B; rms_norm 262,144 B.
  ASSERT_EQ(r.buffers.size(), 3u);
  EXPECT_EQ(r.buffers[0].touched_bytes(), 262144);
  EXPECT_EQ(r.buffers[1].touched_bytes(), 8192);
  EXPECT_EQ(r.buffers[2].touched_bytes(), 262144);
  EXPECT_TRUE(r.buffers[2].written);
  EXPECT_EQ(r.bytes, 532480);
  // An input, a constant and the program's output: all in the minimum.
  EXPECT_EQ(r.min_bytes, 532480);
  // Per block (256 threads): the reduce loop runs 2048 iterations (mul + add); five shuffle steps
  // add on every thread (5 x 256 = 1280 adds); TreeHalve of 8 slots combines 7 times; every thread
  // computes the scale (mul, add, rsqrt: 256 each); the epilogue runs 2048 iterations of two muls.
  //   mul   = 2048 + 256 + 4096 = 6400      x 32 blocks = 204,800
  //   add   = 2048 + 1280 + 7 + 256 = 3591  x 32 blocks = 114,912
  //   rsqrt = 256                           x 32 blocks =   8,192
  EXPECT_EQ(flops_of(r, "mul"), 204800);
  EXPECT_EQ(flops_of(r, "add"), 114912);
  EXPECT_EQ(flops_of(r, "rsqrt"), 8192);
  EXPECT_EQ(r.flops, 327904);
  EXPECT_TRUE(r.flops_exact);
  ASSERT_EQ(r.flops_by_kind.size(), 3u);
  EXPECT_EQ(r.flops_by_kind[0].kind, "mul") << "kinds in first-seen order";
}

TEST(KernelReportTest, RmsNormOnH100) {
  const KernelReport r = report_of(kRmsNorm, "rms_norm");
  // 32 registers: a warp takes 32 x 32 = 1024 (a multiple of the 256 unit), a block of 8 warps
  // 8192, so 65536 / 8192 = 8 blocks; smem 8224 + 1024 reserved = 9248 B, 233472 / 9248 = 25;
  // threads 2048 / 256 = 8; the device's limit is 32.
  const KernelBound b = KernelBound::on(r, h100(), 32);
  EXPECT_EQ(b.by_registers, 8);
  EXPECT_EQ(b.smem_per_block, 9248);
  EXPECT_EQ(b.by_smem, 25);
  EXPECT_EQ(b.by_threads, 8);
  EXPECT_EQ(b.by_block_limit, 32);
  EXPECT_EQ(b.blocks_per_sm, 8);
  EXPECT_DOUBLE_EQ(b.first_wave_sms, 32.0 / 132.0);
  // 532,480 B at 3350 GB/s; 327,904 FLOPs at 66.9 TFLOP/s.
  EXPECT_DOUBLE_EQ(b.dram_us, 532480 / 3350e3);
  EXPECT_DOUBLE_EQ(b.compute_us, 327904 / 66.9e6);
  EXPECT_TRUE(b.memory_bound());
  EXPECT_DOUBLE_EQ(b.bound_us(), b.dram_us);
  // 128 registers: 4096 per warp, 32768 per block: 2 blocks, now the binding limit.
  EXPECT_EQ(KernelBound::on(r, h100(), 128).blocks_per_sm, 2);
  // Unknown registers: that limit is left out.
  const KernelBound unknown = KernelBound::on(r, h100(), 0);
  EXPECT_EQ(unknown.by_registers, 0);
  EXPECT_EQ(unknown.blocks_per_sm, 8);
}

TEST(KernelReportTest, ABlockThatDoesNotFitHasNoBlocksPerSm) {
  KernelReport r = report_of(kRmsNorm, "rms_norm");
  r.dynamic_smem = h100().smem_per_block + 16;
  EXPECT_EQ(KernelBound::on(r, h100(), 32).blocks_per_sm, 0);
  EXPECT_EQ(KernelBound::on(r, h100(), 32).first_wave_sms, 0);
}

// Every other column of x's first 1024 (x[a1, 2 * a2 + 1], a2 < 512) is read: 512 of each row's
// 2048 elements; the exp runs only where a2 < 300 (a condition on the loop variable: enumerated).
constexpr const char* kPartial = R"(x: (4, 2048) float32

kernel k_part  grid=(4, 1, 1) block=(256, 1, 1)  inputs: x  outputs: y: (4, 512) float32
  a0 = threadIdx.x
  a1 = blockIdx.x
  StridedLoop(a2 = a0; < 512; += 256):
    in0 = load x[a1, a2 * 2 + 1]
    if a2 < 300:
      v0 = exp(in0)
    y[a1, a2] = in0

return y
)";

TEST(KernelReportTest, PartialStridedReadsAndConditionsAreCountedExactly) {
  const KernelReport r = report_of(kPartial, "y");
  // x: 4 rows x 512 odd columns = 2048 elements = 8,192 B of its 32,768; y: 2048 x 4 = 8,192 B.
  ASSERT_EQ(r.buffers.size(), 2u);
  EXPECT_EQ(r.buffers[0].touched, 2048);
  EXPECT_EQ(r.buffers[0].elements, 8192);
  EXPECT_EQ(r.bytes, 16384);
  EXPECT_EQ(r.min_bytes, 16384);
  // exp: 4 blocks x 300 iterations.
  EXPECT_EQ(flops_of(r, "exp"), 1200);
  EXPECT_TRUE(r.flops_exact);
}

// Two overlapping windows of each row, x[a1, a2] and x[a1, a2 + 512] for a2 < 1024: the union is
// columns 0..1535 (1536 per row), not 2048; the data-dependent condition makes the FLOPs an upper
// bound. y is an intermediate (not a program output): outside the minimum.
constexpr const char* kOverlap = R"(x: (2, 2048) float32

kernel k_overlap  grid=(2, 1, 1) block=(1024, 1, 1)  inputs: x  outputs: y: (2, 1024) float32
  a0 = threadIdx.x
  a1 = blockIdx.x
  in0 = load x[a1, a0]
  in1 = load x[a1, a0 + 512]
  v0 = add(in0, in1)
  if v0 < 0.5:
    v1 = neg(v0)
  y[a1, a0] = v0

kernel k_use  grid=(1, 1, 1) block=(1, 1, 1)  inputs: y  outputs: z: (1,) float32
  in0 = load y[0, 0]
  z[0] = in0

return z
)";

TEST(KernelReportTest, OverlappingAccessesCountOnceAndDataConditionsAreUpperBounds) {
  const KernelReport r = report_of(kOverlap, "y");
  EXPECT_EQ(r.buffers[0].touched, 2 * 1536);
  // y: 2 x 1024 x 4 = 8,192 B moved, an intermediate (z is the program's output).
  EXPECT_FALSE(r.buffers[1].in_minimum);
  EXPECT_EQ(r.bytes, 2 * 1536 * 4 + 8192);
  EXPECT_EQ(r.min_bytes, 2 * 1536 * 4);
  EXPECT_EQ(flops_of(r, "add"), 2048);
  EXPECT_EQ(flops_of(r, "neg"), 2048) << "both branches counted";
  EXPECT_FALSE(r.flops_exact);
  // The second kernel reads one element of the intermediate and writes the output.
  const KernelReport use = report_of(kOverlap, "z");
  EXPECT_EQ(use.bytes, 8);
  EXPECT_EQ(use.min_bytes, 4);
}

TEST(KernelReportTest, OfProgramReportsEveryKernelInGraphOrder) {
  Expected<Graph> g = parse_graph(kOverlap, "<test>");
  ASSERT_TRUE(g) << g.error().render();
  auto all = KernelReport::of_program(*g);
  ASSERT_TRUE(all) << all.error().render();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].kernel, "k_overlap");
  EXPECT_EQ((*all)[1].kernel, "k_use");
  auto bad = KernelReport::of(*g, *g->find("x"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "kernel report: node 'x' is not a Kernel IR kernel");
}

// An elementwise kernel over 4097 x 4097 with a tail guard: 69,649 blocks of 256 threads, 17.8 M
// threads, too many to enumerate, but the guard reads only a1 = blockIdx.x % 17 and a0: the axes
// decoded from blockIdx.x (17 x 4097 values, each combination once) are enumerated instead of it.
constexpr const char* kTail = R"(x: (4097, 4097) float32

kernel k_mul  grid=(69649, 1, 1) block=(256, 1, 1)  inputs: x  outputs: mul: (4097, 4097) float32
  a0 = threadIdx.x
  a1 = blockIdx.x % 17
  a2 = blockIdx.x / 17
  if a1 * 256 + a0 < 4097:
    in0 = load x[a2, a1 * 256 + a0]
    v0 = mul(in0, 2.0)
    mul[a2, a1 * 256 + a0] = v0

return mul
)";

TEST(KernelReportTest, TailGuardsOverDecodedBlockAxesAreExact) {
  const KernelReport r = report_of(kTail, "mul");
  // One mul per element: 4097 x 4097 = 16,785,409 (not 17 x 256 x 4097 = 17,830,144).
  EXPECT_EQ(flops_of(r, "mul"), 16785409);
  EXPECT_TRUE(r.flops_exact);
  // x read and mul written once: 2 x 16,785,409 x 4 B.
  EXPECT_EQ(r.bytes, 134283272);
}

// A TMA copy of one row (box (1, 64)) at rows 0, 2, 4, 6, and stores of the even and the odd
// columns of each output row: x is read on 4 of its 8 rows (1,024 B), y written whole (1,024 B).
constexpr const char* kTma = R"(x: (8, 64) float32

kernel k_tma  grid=(4, 1, 1) block=(32, 1, 1)  inputs: x  outputs: y: (4, 64) float32  params: tmap_x: tensor_map(x, box=(1, 64))
  Smem x_smem: f32[64]
  bar0 = MbarrierInit(count=1)
  a0 = threadIdx.x
  a1 = blockIdx.x
  TmaLoad(x_smem, tmap_x, coords=(a1 * 2, 0), mbar=bar0)
  MbarrierWait(bar0, phase=0)
  in0 = load x_smem[a0 * 2]
  in1 = load x_smem[a0 * 2 + 1]
  y[a1, a0 * 2] = in0
  y[a1, a0 * 2 + 1] = in1

return y
)";

TEST(KernelReportTest, TmaBoxesAndInterleavedStoresAreCountedOnce) {
  const KernelReport r = report_of(kTma, "y");
  ASSERT_EQ(r.buffers.size(), 2u);
  EXPECT_EQ(r.buffers[0].touched, 4 * 64);
  EXPECT_EQ(r.buffers[1].touched, 4 * 64);
  EXPECT_EQ(r.bytes, 2048);
  EXPECT_TRUE(r.flops_by_kind.empty());
}

KernelReport synthetic(int64_t blocks, int64_t bytes, int64_t min_bytes) {
  KernelReport r;
  r.kernel = "k";
  r.node = "n";
  r.grid = {blocks, 1, 1};
  r.block = {256, 1, 1};
  r.bytes = bytes;
  r.min_bytes = min_bytes;
  return r;
}

TEST(KernelReportTest, WarningsForFewBlocksAndForMovingTwiceTheMinimum) {
  using cli::kernel_report_warnings;
  // More than 1 MB on one block of a 132-SM device.
  EXPECT_EQ(kernel_report_warnings(synthetic(1, 2000000, 2000000), h100()),
            (std::vector<std::string>{"moves 2,000,000 B on 1 block, fewer than the 132 SMs"}));
  // As many blocks as SMs, or under 1 MB: no warning.
  EXPECT_TRUE(kernel_report_warnings(synthetic(132, 2000000, 2000000), h100()).empty());
  EXPECT_TRUE(kernel_report_warnings(synthetic(1, 1000000, 1000000), h100()).empty());
  // More than twice the minimum (and more than 1 MB).
  EXPECT_EQ(kernel_report_warnings(synthetic(200, 3000000, 1000000), h100()),
            (std::vector<std::string>{"moves 3,000,000 B, more than twice its minimum 1,000,000 B"}));
  EXPECT_TRUE(kernel_report_warnings(synthetic(200, 2000000, 1000000), h100()).empty()) << "exactly twice";
  EXPECT_TRUE(kernel_report_warnings(synthetic(200, 900000, 1000), h100()).empty()) << "a tiny kernel";
}

// The decode RMSNorm as cooperative_reduce once scheduled it: the epilogue's outer size-1 loop was
// strided over the threads, so thread 0 scaled all 4096 columns (35 us on an H200 against a
// roofline bound of 0.01 us). Its busiest thread runs 4096 x 2 multiplies plus its share of the
// reduction; the fixed schedule spreads them, and no warning appears.
constexpr const char* kSerialEpilogue = R"(x: (1, 1, 4096) float32
p_weight: (4096,) float32

kernel k_rms_norm_reduce  grid=(1, 1, 1) block=(256, 1, 1)  inputs: x, p_weight  outputs: rms_norm: (1, 1, 4096) float32
  Smem acc0_smem: f32[8]
  a0 = threadIdx.x
  acc0 = init(0.0)
  StridedLoop(a1 = a0; < 4096; += 256):  # reduce
    in0 = load x[0, 0, a1]
    v0 = mul(in0, in0)
    acc0 <- add(acc0, v0)
  if a0 % 32 == 0:
    acc0_smem[a0 / 32] = acc0
  Sync()
  TreeHalve(acc0_smem, tid=a0, n=8, op=add)
  in1 = load acc0_smem[0]
  v1 = rsqrt(in1)
  StridedLoop(a2 = a0; < 1; += 256):  # free
    for a3 in 0..4096:  # free
      in2 = load x[0, 0, a3]
      v2 = mul(in2, v1)
      in3 = load p_weight[a3]
      v3 = mul(v2, in3)
      rms_norm[0, 0, a3] = v3

return rms_norm
)";

TEST(KernelReportTest, ABusiestThreadFarAboveTheAverageIsWarnedAbout) {
  const KernelReport serial = report_of(kSerialEpilogue, "rms_norm");
  // Thread 0: 16 reduce steps of 2, 3 tree halvings, the rsqrt, then 4096 columns of 2 multiplies.
  EXPECT_EQ(serial.busiest_thread_flops, 16 * 2 + 3 + 1 + 4096 * 2);
  const std::vector<std::string> warnings = cli::kernel_report_warnings(serial, h100());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("its busiest thread runs 8,228 FLOPs"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("the work is not spread over the block"), std::string::npos) << warnings[0];

  std::string spread = kSerialEpilogue;
  const std::string from = "  StridedLoop(a2 = a0; < 1; += 256):  # free\n    for a3 in 0..4096:  # free\n";
  const std::string to = "  StridedLoop(a3 = a0; < 4096; += 256):  # free\n    for a2 in 0..1:  # free\n";
  ASSERT_NE(spread.find(from), std::string::npos);
  spread.replace(spread.find(from), from.size(), to);
  const KernelReport fixed = report_of(spread, "rms_norm");
  EXPECT_EQ(fixed.busiest_thread_flops, 16 * 2 + 3 + 1 + 16 * 2);
  EXPECT_TRUE(cli::kernel_report_warnings(fixed, h100()).empty());
  // The RMSNorm of the other tests: every thread does its share.
  EXPECT_TRUE(cli::kernel_report_warnings(report_of(kRmsNorm, "rms_norm"), h100()).empty());
}

TEST(KernelReportTest, SideBySidePairsKernelsAndTotals) {
  const std::vector<cli::ReportBlock> a = {{"head A"}, {"k1", "  x"}, {"total A"}};
  const std::vector<cli::ReportBlock> b = {{"head B"}, {"k1", "  yy", "  z"}, {"k2"}, {"total B"}};
  EXPECT_EQ(cli::side_by_side(a, b),
            "head A   | head B\n"
            "k1       | k1\n"
            "  x      |   yy\n"
            "         |   z\n"
            "         | k2\n"
            "total A  | total B\n");
}

}  // namespace
}  // namespace tessera

// The simulator's thread-block clusters (plugins/targets/sim: kernel_compiler, block_executor,
// shared_memory): hand-written Kernel IR kernels, parsed from their printout, whose blocks read
// each other's shared memory (DsmemLoad) between ClusterSyncs. The values are checked against
// numbers computed here (every block of a cluster sums the row parts of all its blocks), and each
// planted fault is reported with the kernel, statement, block and element: a remote read with no
// ClusterSync after the write (the reader may run first), a write after a remote read in the same
// phase, a remote read after the kernel's last ClusterSync (the owner may have exited), a rank
// outside the cluster, a remote read of an element never written, and DSMEM in a kernel launched
// without cluster dims or a ClusterSync under a condition (refused before running).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "support/sim_kernel_test.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/verifier.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

class SimClusterTest : public test::SimKernelTest {
 protected:
  // Runs `text` (a graph with input x: (2, 64) f32, x[r, c] = 100 r + c, and output y).
  Expected<TargetRun> run(const std::string& text) {
    std::vector<double> x;
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 64; ++c) x.push_back(100.0 * r + c);
    ValueMap inputs;
    inputs["x"] = TensorValue(TensorType{{2, 64}, DType::F32}, x);
    return run_printout(text, inputs);
  }

  void expect_error(const std::string& text, const std::vector<std::string>& parts) { expect_error_parts(run(text), parts); }
};

// One row of x per cluster of 4 blocks of 16 threads: block b of the cluster sums its 16 elements
// (thread 0 serially, into a one-slot Smem), the cluster waits, and every thread of every block
// adds the 4 slots in rank order; y[row, c] = x[row, c] + the row's sum.
std::string row_sum_kernel(const std::string& between, const std::string& after_read, const std::string& end,
                           const std::string& cluster = " cluster=(4, 1, 1)") {
  return R"(x: (2, 64) float32

kernel k_y  grid=(8, 1, 1) block=(16, 1, 1))" + cluster + R"(  inputs: x  outputs: y: (2, 64) float32
  Smem part: f32[1]
  a0 = threadIdx.x
  a1 = blockIdx.x % 4
  a2 = blockIdx.x / 4
  if a0 == 0:
    acc0 = init(0.0)
    for a3 in 0..16:
      in0 = load x[a2, a1 * 16 + a3]
      acc0 <- add(acc0, in0)
    part[0] = acc0
)" + between + R"(  acc1 = init(0.0)
  for a4 in 0..4:
    in1 = DsmemLoad(part[0], rank=a4)
    acc1 <- add(acc1, in1)
)" + after_read + R"(  in2 = load x[a2, a1 * 16 + a0]
  v0 = add(in2, acc1)
  y[a2, a1 * 16 + a0] = v0
)" + end + R"(
return y
)";
}

TEST_F(SimClusterTest, BlocksOfAClusterReadEachOthersSharedMemory) {
  Expected<TargetRun> r = run(row_sum_kernel("  ClusterSync()\n", "", "  ClusterSync()\n"));
  ASSERT_TRUE(r) << r.error().render();
  const TensorValue& y = r->outputs.at("y");
  for (int row = 0; row < 2; ++row) {
    double sum = 0;
    for (int c = 0; c < 64; ++c) sum += 100.0 * row + c;
    for (int c = 0; c < 64; ++c) EXPECT_EQ(y.data[static_cast<size_t>(row * 64 + c)], 100.0 * row + c + sum) << row << ", " << c;
  }
}

TEST_F(SimClusterTest, ARemoteReadWithoutAClusterSyncAfterTheWriteIsARace) {
  expect_error(row_sum_kernel("", "", "  ClusterSync()\n"),
               {"k_y", "DsmemLoad(part[0], rank=a4)", "race on part[0]", "no ClusterSync() in between",
                "the block of rank"});
}

TEST_F(SimClusterTest, AWriteAfterARemoteReadInTheSamePhaseIsARace) {
  expect_error(row_sum_kernel("  ClusterSync()\n", "  part[0] = acc1\n", "  ClusterSync()\n"),
               {"k_y", "part[0] = acc1", "race on part[0]", "reads it (DsmemLoad)", "no ClusterSync() in between"});
}

TEST_F(SimClusterTest, ARemoteReadAfterTheLastClusterSyncMayOutliveItsBlock) {
  expect_error(row_sum_kernel("  ClusterSync()\n", "", ""), {"k_y", "DsmemLoad", "may have exited"});
}

TEST_F(SimClusterTest, ARankOutsideTheClusterIsAnError) {
  std::string text = row_sum_kernel("  ClusterSync()\n", "", "  ClusterSync()\n");
  text.replace(text.find("for a4 in 0..4"), 14, "for a4 in 0..5");
  expect_error(text, {"k_y", "rank 4", "not a block of the cluster (ranks 0..3)"});
}

TEST_F(SimClusterTest, ARemoteReadOfAnElementNeverWrittenIsAnError) {
  std::string text = row_sum_kernel("  ClusterSync()\n", "", "  ClusterSync()\n");
  text.replace(text.find("    part[0] = acc0\n"), 19, "");
  expect_error(text, {"k_y", "uninitialized shared element part[0] of another block"});
}

// Refused by the simulator before it runs, and by the graph verifier.
TEST_F(SimClusterTest, DistributedSharedMemoryNeedsClusterDimsAndTopLevelClusterSyncs) {
  const std::string unclustered = row_sum_kernel("  ClusterSync()\n", "", "  ClusterSync()\n", "");
  const std::string nested = row_sum_kernel("  if a0 < 16:\n    ClusterSync()\n", "", "  ClusterSync()\n");
  expect_error(unclustered, {"k_y", "ClusterSync()", "launched without cluster dims"});
  expect_error(nested, {"k_y", "ClusterSync()", "must stand at the top level of the kernel body"});
  for (const auto& [text, message] : {std::pair{unclustered, "is not launched with cluster dims"},
                                      std::pair{nested, "ClusterSync is nested in a loop or condition"}}) {
    Expected<Graph> g = parse_graph(text, "<test>");
    ASSERT_TRUE(g) << g.error().render();
    Status st = verify_graph(*g, Dialect::Kernel);
    ASSERT_FALSE(st) << text;
    EXPECT_NE(st.error().message.find(message), std::string::npos) << st.error().message;
  }
}

}  // namespace
}  // namespace tessera

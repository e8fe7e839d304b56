// RoPE as every decoder layer writes it, `q * cos + rotate_half(q) * sin` with rotate_half's
// torch.cat((-x2, x1), dim=-1), through the default pipeline to Kernel IR: one kernel per output,
// no intermediate buffer (no materialized `cat`), so the program moves its minimum bytes (the
// static kernel report, tessera/target/kernel_report.h). The cat fuses by fuse's SELECT RULE
// (plugins/passes/fuse/fuse.cpp); the values are checked against the reference by the differential
// corpus (RopeRotateHalfTwoOutputs in tests/support/program_corpus.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench_suite.h"
#include "support/built_plugins.h"
#include "support/test_paths.h"
#include "tessera/pass/pipeline.h"
#include "tessera/target/kernel_report.h"

namespace tessera {
namespace {

const char* kRope =
    "def rotate_half(x):\n    x1 = x[..., : x.shape[-1] // 2]\n    x2 = x[..., x.shape[-1] // 2 :]\n"
    "    return torch.cat((-x2, x1), dim=-1)\n"
    "q = torch.randn(1, 32, 128, 128); cos = torch.randn(128, 128); sin = torch.randn(128, 128)\n"
    "q * cos + rotate_half(q) * sin";

class RopeFusionTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    auto spec = load_pipeline_file(test::default_pipeline_path());
    ASSERT_TRUE(spec) << spec.error().render();
    pipeline_ = std::move(*spec);
    ASSERT_NE(h100(), nullptr);
  }

  // Lowers `text` to Kernel IR and checks: one kernel per program output, each computing an output,
  // every buffer a kernel touches a program input or output, and (for one output) the whole
  // program at its minimum bytes.
  void expect_one_kernel_per_output(const std::string& name, const std::string& text) {
    Graph g = trace(text);
    ASSERT_FALSE(HasFailure()) << name;
    Status st = lower(g, pipeline_, Dialect::Kernel, h100());
    ASSERT_TRUE(st) << name << ":\n" << st.error().render();
    auto reports = KernelReport::of_program(g);
    ASSERT_TRUE(reports) << name << ":\n" << reports.error().render();
    const std::vector<std::string>& outputs = g.outputs();
    EXPECT_EQ(reports->size(), outputs.size()) << name;
    for (const KernelReport& r : *reports) {
      EXPECT_NE(std::find(outputs.begin(), outputs.end(), r.node), outputs.end())
          << name << ": kernel " << r.kernel << " computes the intermediate " << r.node;
      for (const BufferTraffic& t : r.buffers)
        EXPECT_TRUE(t.in_minimum) << name << ": kernel " << r.kernel << " moves the intermediate " << t.buffer;
      if (outputs.size() == 1) EXPECT_EQ(r.bytes, r.min_bytes) << name << ": " << r.kernel;
    }
    for (const Node* n : g.nodes()) EXPECT_EQ(n->id().rfind("cat", 0), std::string::npos) << name << ": " << n->id();
  }

  PipelineSpec pipeline_;
};

TEST_F(RopeFusionTest, RotateHalfRopeIsOneKernelAtTheMinimumBytes) {
  expect_one_kernel_per_output("rope-f32", kRope);
  const std::string bf16 =
      "def rotate_half(x):\n    x1 = x[..., : x.shape[-1] // 2]\n    x2 = x[..., x.shape[-1] // 2 :]\n"
      "    return torch.cat((-x2, x1), dim=-1)\n"
      "q = torch.randn(1, 32, 128, 128, dtype=torch.bfloat16); cos = torch.randn(128, 128, dtype=torch.bfloat16); "
      "sin = torch.randn(128, 128, dtype=torch.bfloat16)\n"
      "q * cos + rotate_half(q) * sin";
  expect_one_kernel_per_output("rope-bf16", bf16);
}

// Every `*-rope` entry of the benchmark suite: the (q_embed, k_embed) module, one kernel each.
TEST_F(RopeFusionTest, EverySuiteRopeEntryIsOneKernelPerOutput) {
  auto suite = cli::load_suite(TESSERA_SOURCE_DIR "/bench/suite.yaml");
  ASSERT_TRUE(suite) << suite.error().render();
  int count = 0;
  for (const cli::SuiteEntry& e : suite->entries) {
    if (e.id.size() < 5 || e.id.compare(e.id.size() - 5, 5, "-rope") != 0) continue;
    ++count;
    expect_one_kernel_per_output(e.id, e.program);
    if (HasFailure()) return;
  }
  EXPECT_GT(count, 0) << "the suite has no -rope entries";
}

}  // namespace
}  // namespace tessera

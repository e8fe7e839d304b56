// Models of N decoder-style blocks (tests/support/decoder_blocks.h), the programs of the compile
// scaling benchmark: they compile to CUDA source, the output is the same bytes for any number of
// kernel-pass threads (also under sampled knobs, which run one at a time), the compiled kernels
// compute the reference's values on the simulator, and fused kernels do not grow with the depth of
// the model (fuse's per-consumer recompute bound: the residual stream is not recomputed whole in
// every kernel that reads it).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "support/built_plugins.h"
#include "support/decoder_blocks.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

class DecoderBlocksTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    auto spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
    ASSERT_TRUE(spec) << spec.error().render();
    pipeline_ = std::move(*spec);
    ASSERT_TRUE(validate_pipeline(pipeline_, host_->registry()));
    ASSERT_NE(h100(), nullptr);
  }

  struct Compiled {
    std::string ir, diffs;  // the printed result; the -vv diff blocks
    size_t kernels = 0;
  };

  // Compiles `program` to `stop` with `threads` kernel-pass threads, knobs sampled with `seed`
  // when given.
  Compiled compile(const std::string& program, Dialect stop, int threads, std::optional<uint64_t> seed = {}) {
    Compiled c;
    Graph g = trace(program);
    PipelineSpec spec = pipeline_;
    spec.threads = threads;
    std::unique_ptr<RandomChoiceSource> sampler;
    if (seed) sampler = std::make_unique<RandomChoiceSource>(*seed);
    RunnerOptions options;
    options.stop_after = stop;
    options.device = h100();
    options.tuner = sampler.get();
    options.verbosity = 2;
    std::ostringstream out, err;
    options.out = &out;
    options.err = &err;
    DiagnosticEngine diags;
    Status st = PipelineRunner(host_->registry(), spec, options).run(g, diags);
    EXPECT_TRUE(st) << st.message();
    c.ir = print_graph(g);
    c.diffs = out.str();
    for (const Node* n : g.nodes()) c.kernels += n->dialect() == stop;
    return c;
  }

  PipelineSpec pipeline_;
};

TEST_F(DecoderBlocksTest, CompilesToCudaSourceTheSameForAnyThreadCount) {
  const std::string program = test::decoder_blocks_program(6);
  Compiled one = compile(program, Dialect::Cuda, 1);
  ASSERT_FALSE(HasFailure());
  // Per block: each residual add with the matmul it adds (RMSNorm and the first Linear fused in
  // front), and the gated MLP's product with the gate and up matmuls; the rest fuses.
  EXPECT_EQ(one.kernels, 6u * 3u);
  EXPECT_NE(one.ir.find("extern \"C\" __global__"), std::string::npos);
  for (int threads : {2, 4, 7}) {
    Compiled many = compile(program, Dialect::Cuda, threads);
    EXPECT_EQ(many.ir, one.ir) << threads << " threads";
    EXPECT_EQ(many.diffs, one.diffs) << threads << " threads";  // diffs, skips and their order
  }
}

// Sampled knobs are asked for in graph order whatever the thread count: the same seed, the same
// schedule.
TEST_F(DecoderBlocksTest, SampledKnobsGiveTheSameScheduleForAnyThreadCount) {
  const std::string program = test::decoder_blocks_program(2);
  Compiled one = compile(program, Dialect::Kernel, 1, 5);
  Compiled four = compile(program, Dialect::Kernel, 4, 5);
  EXPECT_EQ(four.ir, one.ir);
  EXPECT_NE(one.ir.find("(sampled)"), std::string::npos);
}

TEST_F(DecoderBlocksTest, MatchesTheReferenceOnTheSimulator) {
  const std::string program = test::decoder_blocks_program(3, {32, 48, 4});
  const Graph torch = trace(program);
  Graph g = torch;
  PipelineSpec spec = pipeline_;
  spec.threads = 3;
  Status st = lower(g, spec, Dialect::Kernel, h100());
  ASSERT_TRUE(st) << st.message();
  auto sim = host_->registry().make_target("sim");
  ASSERT_NE(sim, nullptr);
  ValueMap inputs = make_inputs(torch, 7);
  auto expected = evaluate_reference(torch, inputs);
  ASSERT_TRUE(expected) << expected.error().render();
  TargetOptions to;
  to.arch = h100()->arch;
  to.device = h100();
  auto ran = sim->execute(g, inputs, to);
  ASSERT_TRUE(ran) << ran.error().render();
  for (const std::string& out : torch.outputs()) {
    auto cmp = compare_output(*expected, ran->outputs, out);
    ASSERT_TRUE(cmp) << cmp.error().render();
    EXPECT_TRUE(cmp->within(default_output_rtol(DType::F32))) << cmp->str();
  }
}

// The longest Loop IR kernel of a 12-block model is no longer than the longest of a 4-block one.
TEST_F(DecoderBlocksTest, FusedKernelsDoNotGrowWithDepth) {
  auto longest_kernel = [&](int blocks) {
    Graph g = trace(test::decoder_blocks_program(blocks));
    Status st = lower(g, pipeline_, Dialect::Loop, h100());
    EXPECT_TRUE(st) << st.message();
    size_t longest = 0;
    for (const Node* n : g.nodes()) {
      if (n->dialect() != Dialect::Loop) continue;
      std::string text = print_node(g, *n);
      longest = std::max<size_t>(longest, std::count(text.begin(), text.end(), '\n'));
    }
    return longest;
  };
  const size_t shallow = longest_kernel(4);
  EXPECT_GT(shallow, 0u);
  EXPECT_EQ(longest_kernel(12), shallow);
}

}  // namespace
}  // namespace tessera

// A fixture for simulator tests of hand-written Kernel IR (tests/unit/sim_*_test.cpp): the sim
// target, a graph printout run on it, and the check that a run failed naming what it should.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"

namespace tessera::test {

class SimKernelTest : public BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    target_ = host_->registry().make_target("sim");
    ASSERT_NE(target_, nullptr);
  }

  // Parses `text` (a graph printout) into graph_ and runs it on the simulator with `inputs`.
  Expected<TargetRun> run_printout(const std::string& text, const ValueMap& inputs) {
    Expected<Graph> g = parse_graph(text, "<test>");
    if (!g) return g.error();
    graph_ = std::move(*g);
    return target_->execute(graph_, inputs, TargetOptions{});
  }

  // Whether `text` (a graph printout) parses and verifies as Kernel IR.
  static Status verify_printout(const std::string& text) {
    Expected<Graph> g = parse_graph(text, "<test>");
    if (!g) return g.error();
    return verify_graph(*g, Dialect::Kernel);
  }

  // Runs the emit_cuda pass over `g` (Kernel IR, for the H100) and returns its last node's CUDA op.
  Expected<CudaOp> emit_last_kernel(Graph& g) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass("emit_cuda");
    if (pass == nullptr) return make_error("the emit_cuda pass is not registered");
    DiagnosticEngine diags;
    PassContext ctx("emit_cuda", "c:001_emit_cuda", pass->knobs(), {}, {}, h100(), &diags);
    TESSERA_TRY(pass->run(g, ctx));
    const auto* op = g.nodes().back()->op_as<CudaOp>();
    if (op == nullptr) return make_error("emit_cuda left the last node without a CudaOp");
    return *op;
  }

  // That `r` failed with an error whose message and notes hold every one of `parts`.
  static void expect_error_parts(const Expected<TargetRun>& r, const std::vector<std::string>& parts,
                                 const std::string& context = "") {
    ASSERT_FALSE(r) << "expected an error mentioning '" << parts.front() << "'\n" << context;
    const std::string rendered = r.error().render();
    for (const std::string& part : parts)
      EXPECT_NE(rendered.find(part), std::string::npos) << "missing '" << part << "' in: " << rendered;
  }

  std::unique_ptr<Target> target_;
  Graph graph_;
};

}  // namespace tessera::test

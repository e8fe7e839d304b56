// A test fixture base for tests that reach plugins the way users do: through a PluginHost that
// loads the plugin directory beside the test binary (the build's, or a bundle's) once per test suite.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/tune/choice_source.h"
#include "support/test_paths.h"

namespace tessera::test {

class BuiltPluginsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    host_ = std::make_unique<PluginHost>();
    Status s = host_->load_directory(plugin_dir());
    load_error_ = s ? "" : s.message();
    Expected<DeviceTable> table = DeviceTable::load_default();
    if (table) {
      devices_ = std::make_unique<DeviceTable>(std::move(*table));
    } else if (load_error_.empty()) {
      load_error_ = table.error().render();
    }
  }
  static void TearDownTestSuite() {
    host_.reset();
    devices_.reset();
  }

  // Runs `pipeline` on `g` up to `stop` for `device`, every knob not pinned sampled with `seed` when
  // given (as `--sample-knobs` does), the IR verified after every pass when `verify_each`. Pass
  // printouts and notes are discarded.
  static Status lower(Graph& g, const PipelineSpec& pipeline, Dialect stop, const DeviceDesc* device,
                      std::optional<uint64_t> seed = std::nullopt, bool verify_each = false) {
    std::unique_ptr<RandomChoiceSource> sampler;
    if (seed) sampler = std::make_unique<RandomChoiceSource>(*seed);
    RunnerOptions options;
    options.stop_after = stop;
    options.device = device;
    options.tuner = sampler.get();
    options.verify_each = verify_each;
    std::ostringstream sink;
    options.out = &sink;
    options.err = &sink;
    DiagnosticEngine diags;
    return PipelineRunner(host_->registry(), pipeline, options).run(g, diags);
  }

  // The H100 of data/devices.yaml: the device the pass and target tests schedule for.
  static const DeviceDesc* h100() { return devices_ ? devices_->find("h100") : nullptr; }

  // Traces a torch_expr program into Torch IR, its tensors in `dtype` (an empty graph and a test
  // failure when it fails).
  static Graph trace(const std::string& text, DType dtype = DType::F32) {
    std::unique_ptr<Frontend> frontend = host_->registry().make_frontend("torch_expr");
    EXPECT_NE(frontend, nullptr);
    if (!frontend) return Graph();
    FrontendOptions options;
    options.dtype = dtype;
    Expected<Graph> g = frontend->import(FrontendInput{text, "<-c>"}, options);
    if (!g) {
      ADD_FAILURE() << "program failed to trace:\n" << text << "\n" << g.error().render();
      return Graph();
    }
    return std::move(*g);
  }

  inline static std::unique_ptr<PluginHost> host_;
  inline static std::unique_ptr<DeviceTable> devices_;
  inline static std::string load_error_;  // why loading failed ("" when it did not)
};

// A fixture for tests of the `-c` frontend itself: programs that must trace, and programs that must
// fail with a diagnostic.
class TorchExprFrontendTest : public BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    frontend_ = host_->registry().make_frontend("torch_expr");
    ASSERT_NE(frontend_, nullptr) << "the torch_expr plugin did not register its frontend";
  }

  Expected<Graph> import(const std::string& text, FrontendOptions options = {}) {
    return frontend_->import(FrontendInput{text, "<-c>"}, options);
  }

  // Imports a program that must trace; the failure message shows the rendered diagnostic.
  Graph trace(const std::string& text, FrontendOptions options = {}) {
    Expected<Graph> g = import(text, options);
    if (!g) {
      ADD_FAILURE() << "program failed to trace:\n" << text << "\n" << g.error().render();
      return Graph();
    }
    return std::move(*g);
  }

  // Imports a program that must fail.
  Diagnostic fail(const std::string& text) {
    Expected<Graph> g = import(text);
    if (g) {
      ADD_FAILURE() << "program traced but should have failed:\n" << text << "\n" << print_graph(*g);
      return Diagnostic();
    }
    return g.error();
  }

  // A program the frontend refuses (PyTorch refuses it too): the message holds `fragment` and
  // points at line:col of the source line it shows.
  void expect_refused(const std::string& text, const std::string& fragment, int line, int col) {
    Diagnostic d = fail(text);
    EXPECT_NE(d.message.find(fragment), std::string::npos) << text << "\nmessage: " << d.message
                                                           << "\nexpected: " << fragment;
    EXPECT_EQ(d.loc.line, line) << text << "\n" << d.render();
    EXPECT_EQ(d.loc.col, col) << text << "\n" << d.render();
    EXPECT_FALSE(d.source_line.empty()) << text << "\n" << d.render();
  }

  // The type of the program's only output.
  TensorType output_type(const std::string& text) {
    Graph g = trace(text);
    if (g.outputs().size() != 1) {
      ADD_FAILURE() << text << ": expected one output";
      return {};
    }
    return g.find(g.outputs()[0])->type;
  }

  std::unique_ptr<Frontend> frontend_;
};

}  // namespace tessera::test

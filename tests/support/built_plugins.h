// A test fixture base for tests that reach plugins the way users do: through a PluginHost that
// loads the build's plugin directory once per test suite.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera::test {

class BuiltPluginsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    host_ = std::make_unique<PluginHost>();
    Status s = host_->load_directory(TESSERA_BUILD_DIR "/lib/tessera/plugins");
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

  // The H100 of data/devices.yaml: the device the pass and target tests schedule for.
  static const DeviceDesc* h100() { return devices_ ? devices_->find("h100") : nullptr; }

  // Traces a torch_expr program into Torch IR (an empty graph and a test failure when it fails).
  static Graph trace(const std::string& text) {
    std::unique_ptr<Frontend> frontend = host_->registry().make_frontend("torch_expr");
    EXPECT_NE(frontend, nullptr);
    if (!frontend) return Graph();
    Expected<Graph> g = frontend->import(FrontendInput{text, "<-c>"}, {});
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

}  // namespace tessera::test

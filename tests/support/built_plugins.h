// A test fixture base for tests that reach plugins the way users do: through a PluginHost that
// loads the build's plugin directory once per test suite.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tessera/plugin/plugin_host.h"

namespace tessera::test {

class BuiltPluginsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    host_ = std::make_unique<PluginHost>();
    Status s = host_->load_directory(TESSERA_BUILD_DIR "/lib/tessera/plugins");
    load_error_ = s ? "" : s.message();
  }
  static void TearDownTestSuite() { host_.reset(); }

  inline static std::unique_ptr<PluginHost> host_;
  inline static std::string load_error_;  // why loading failed ("" when it did not)
};

}  // namespace tessera::test

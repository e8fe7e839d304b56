#include "support/test_paths.h"

#include <filesystem>

#include "tessera/support/install_paths.h"

namespace tessera::test {

namespace fs = std::filesystem;

std::string test_root() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return TESSERA_BUILD_DIR;
  return exe.parent_path().parent_path().string();
}

std::string cli_path() { return (fs::path(test_root()) / "bin" / "tessera").string(); }

std::string plugin_dir() { return (fs::path(test_root()) / "lib" / "tessera" / "plugins").string(); }

std::string default_pipeline_path() {
  Expected<std::string> found = find_data_file("pipelines/default.yaml");
  return found ? *found : std::string(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
}

}  // namespace tessera::test

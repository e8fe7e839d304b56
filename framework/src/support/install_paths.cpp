// Run-time lookup of Tessera's plugin directory and data files, relative to libtessera.so.
#include "tessera/support/install_paths.h"

#include <boost/dll/runtime_symbol_info.hpp>

#include <filesystem>

namespace tessera {

namespace fs = std::filesystem;

std::string library_directory() {
  // The file this function was loaded from is libtessera.so itself.
  std::error_code ec;
  fs::path library = boost::dll::this_line_location(ec);
  if (ec || library.empty()) return ".";
  fs::path canonical = fs::weakly_canonical(library, ec);
  return (ec ? library : canonical).parent_path().string();
}

std::string builtin_plugin_directory() { return (fs::path(library_directory()) / TESSERA_PLUGIN_SUBDIR).string(); }

Expected<std::string> find_data_file(const std::string& relative) {
  // Data files are named in the source tree by their role: devices.yaml lives in data/, pipelines
  // in pipelines/; in build and install trees both are under share/tessera/.
  const fs::path share = fs::path(library_directory()) / ".." / "share" / "tessera";
  const fs::path source = fs::path(TESSERA_SOURCE_DIR);
  std::vector<fs::path> candidates = {share / relative, source / relative, source / "data" / relative};
  std::string tried;
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec).string();
    tried += "\n  " + c.lexically_normal().string();
  }
  return make_error("cannot find Tessera data file '" + relative + "'; looked in:" + tried);
}

}  // namespace tessera

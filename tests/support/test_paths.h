// Where the test binary finds the CLI, the plugins and the data files at run time: relative to
// the test binary itself (`<root>/bin/tessera_tests`), so the same binary runs in the build tree
// and in a bundle copied to a GPU machine (scripts/bundle.sh), where the build paths compiled into
// TESSERA_BUILD_DIR do not exist.
#pragma once

#include <string>

namespace tessera::test {

// The directory above the test binary's bin/: the build tree, or the bundle's root.
std::string test_root();
// `<root>/bin/tessera`.
std::string cli_path();
// `<root>/lib/tessera/plugins`.
std::string plugin_dir();
// The default pipeline as the CLI finds it (share/tessera/pipelines/default.yaml beside
// libtessera), so tests lower with exactly what `tessera run` uses.
std::string default_pipeline_path();

}  // namespace tessera::test

// Where Tessera's files live at run time. The build tree mirrors the install tree
// (bin/, lib/libtessera.so, lib/tessera/plugins/, share/tessera/), so everything is found relative to
// the directory of libtessera.so itself, whichever tree it runs from.
#pragma once

#include <string>

#include "tessera/support/status.h"

namespace tessera {

// Directory containing libtessera.so.
std::string library_directory();

// <libdir>/tessera/plugins: the built-in plugin directory.
std::string builtin_plugin_directory();

// Finds `relative` (e.g. "pipelines/default.yaml", "devices.yaml") under <libdir>/../share/tessera,
// falling back to the source tree's data for uninstalled builds. Error names every place tried.
Expected<std::string> find_data_file(const std::string& relative);

}  // namespace tessera

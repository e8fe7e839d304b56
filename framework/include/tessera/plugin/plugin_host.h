// PluginHost: finds, loads (Boost.DLL) and keeps plugins, and owns the Registry they fill.
//
// Search order (later directories do not override earlier names: a duplicate name is an error):
//   1. the build's plugin directory (when running from a build tree),
//   2. the install plugin directory (<prefix>/lib/tessera/plugins),
//   3. each directory of TESSERA_PLUGIN_PATH (colon-separated; read by the CLI, passed in here),
//   4. files given with --plugin FILE,
//   5. files named under `plugins:` in the pipeline YAML.
// A directory contributes every `*.so` file in it, in sorted order. Loaded libraries stay loaded
// until the host is destroyed at process exit, after every object they created.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/plugin/registry.h"
#include "tessera/support/status.h"

namespace tessera {

class PluginHost {
 public:
  PluginHost();
  ~PluginHost();
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Loads every plugin file in `dir` (a missing directory is not an error: it is skipped), in
  // sorted order, stopping at the first file that fails to load.
  Status load_directory(const std::string& dir);
  // Loads one plugin file. Errors: file not found; not a Tessera plugin (no entry symbol);
  // api_version mismatch (names the file and both versions); a name already registered (names
  // both files). `origin` (e.g. a YAML location) is attached to the diagnostic when valid.
  // Loading a file whose canonical path this host already loaded is a no-op that succeeds (the
  // same plugin is often reachable twice: plugin directory and --plugin); a different file that
  // registers an already-registered name is the duplicate error. A refused plugin registers
  // nothing.
  Status load_file(const std::string& path, const SourceLoc& origin = {});

  Registry& registry() { return registry_; }
  const Registry& registry() const { return registry_; }
  const std::vector<std::string>& loaded_files() const { return files_; }

  // The default directories (1 and 2 above) for the running executable.
  static std::vector<std::string> default_directories();

 private:
  struct Libraries;
  std::unique_ptr<Libraries> libs_;  // declared first: destroyed after registry_
  Registry registry_;
  std::vector<std::string> files_;
};

}  // namespace tessera

// PluginHost: finds plugin files, loads them with Boost.DLL, checks their descriptor and lets them
// fill the host's Registry. Every failure becomes a Diagnostic naming the file; nothing a plugin
// file contains (garbage bytes, a wrong API version, an exception from its register function) can
// crash the host. Loaded libraries are kept until the host dies, after the registry (whose
// factories point into them).
#include "tessera/plugin/plugin_host.h"

#include <dlfcn.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <set>
#include <system_error>

#include <boost/dll/shared_library.hpp>

#include "tessera/plugin/plugin.h"
#include "tessera/support/install_paths.h"

namespace tessera {

namespace fs = std::filesystem;

struct PluginHost::Libraries {
  std::vector<boost::dll::shared_library> libraries;
  std::set<std::string> canonical_paths;  // files already loaded by this host
};

PluginHost::PluginHost() : libs_(std::make_unique<Libraries>()) {}

PluginHost::~PluginHost() = default;

namespace {

Diagnostic located(Diagnostic d, const SourceLoc& origin) {
  if (origin.valid()) d.at(origin);
  return d;
}

// dlopen's own explanation, which Boost.DLL leaves in dlerror() after a failed load, without the
// "<file>: " prefix glibc puts in front (the caller's message already names the file).
std::string loader_reason(const std::string& file, const std::error_code& ec) {
  const char* raw = ::dlerror();
  if (raw == nullptr) return ec.message();
  std::string reason = raw;
  const std::string prefix = file + ": ";
  if (reason.rfind(prefix, 0) == 0) reason.erase(0, prefix.size());
  return reason;
}

}  // namespace

Status PluginHost::load_directory(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::ok();  // documented: a missing directory is skipped
  if (!fs::is_directory(dir, ec)) return make_error("plugin directory " + dir + " is not a directory");

  std::vector<std::string> files;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return make_error("cannot list plugin directory " + dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return make_error("cannot list plugin directory " + dir + ": " + ec.message());
    const fs::path& p = it->path();
    std::error_code type_ec;
    if (p.extension() == ".so" && fs::is_regular_file(p, type_ec)) files.push_back(p.string());
  }
  std::sort(files.begin(), files.end());  // directory order is not deterministic
  for (const std::string& file : files) TESSERA_TRY(load_file(file));
  return Status::ok();
}

Status PluginHost::load_file(const std::string& path, const SourceLoc& origin) {
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::is_directory(path, ec))
    return located(make_error("plugin file not found: " + path), origin);
  fs::path canonical = fs::canonical(path, ec);
  if (ec) return located(make_error("cannot resolve plugin path " + path + ": " + ec.message()), origin);
  const std::string file = canonical.string();
  // Loading the same file twice is a no-op (e.g. both in the plugin directory and under --plugin).
  if (libs_->canonical_paths.count(file)) return Status::ok();

  try {
    boost::dll::shared_library library;
    std::error_code load_ec;
    ::dlerror();  // clear any stale message so loader_reason reports this load
    library.load(canonical, load_ec,
                 boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    if (load_ec || !library.is_loaded())
      return located(make_error("cannot load plugin " + file + ": " + loader_reason(file, load_ec)), origin);

    if (!library.has(TESSERA_PLUGIN_ENTRY_SYMBOL)) {
      return located(make_error(file + " is not a Tessera plugin: it does not export '" +
                                TESSERA_PLUGIN_ENTRY_SYMBOL + "'"),
                     origin);
    }
    auto& entry = library.get<const PluginDescriptor*()>(TESSERA_PLUGIN_ENTRY_SYMBOL);
    const PluginDescriptor* descriptor = entry();
    if (descriptor == nullptr)
      return located(make_error(file + ": plugin entry point returned no descriptor"), origin);
    if (descriptor->api_version != kPluginApiVersion) {
      return located(make_error(file + ": plugin API version " +
                                std::to_string(descriptor->api_version) +
                                " does not match host API version " +
                                std::to_string(kPluginApiVersion)),
                     origin);
    }
    if (descriptor->name == nullptr || descriptor->version == nullptr ||
        descriptor->register_fn == nullptr) {
      return located(make_error(file + ": plugin descriptor lacks a name, version or register function"),
                     origin);
    }

    registry_.begin_plugin(PluginRecord{file, descriptor->name, descriptor->version, {}});
    try {
      descriptor->register_fn(registry_);
    } catch (const std::exception& e) {
      registry_.abort_plugin();
      libs_->libraries.push_back(std::move(library));  // its code may still be referenced
      return located(make_error(file + ": plugin registration failed: " + e.what()), origin);
    } catch (...) {
      registry_.abort_plugin();
      libs_->libraries.push_back(std::move(library));
      return located(make_error(file + ": plugin registration failed with an unknown exception"), origin);
    }
    Status registered = registry_.end_plugin();
    // Once register_fn ran the library stays loaded even if it was refused: objects it created
    // (statics, std::function targets) may run its code until the process ends.
    libs_->libraries.push_back(std::move(library));
    if (!registered) return located(std::move(registered).error(), origin);

    libs_->canonical_paths.insert(file);
    files_.push_back(file);
    return Status::ok();
  } catch (const std::exception& e) {
    // Boost.DLL reports some failures (e.g. an unreadable symbol) by throwing.
    return located(make_error("cannot load plugin " + file + ": " + e.what()), origin);
  }
}

std::vector<std::string> PluginHost::default_directories() {
  // Build and install trees both keep plugins in <libdir>/tessera/plugins next to libtessera.so.
  return {builtin_plugin_directory()};
}

}  // namespace tessera

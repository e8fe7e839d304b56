// Registry: the factories of one process's loaded plugins, by name. Owned by a PluginHost (never
// global), so two compilations in one process can use different plugin sets.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/support/status.h"

namespace tessera {

class Pass;
class Frontend;
class Target;
class Tuner;

using PassFactory = std::function<std::unique_ptr<Pass>()>;
using FrontendFactory = std::function<std::unique_ptr<Frontend>()>;
using TargetFactory = std::function<std::unique_ptr<Target>()>;
using TunerFactory = std::function<std::unique_ptr<Tuner>()>;

enum class ComponentKind { Pass, Frontend, Target, Tuner };
std::string_view component_kind_name(ComponentKind k);  // "pass", "frontend", "target", "tuner"

// What a plugin registered, for `tessera plugins`.
struct PluginRecord {
  std::string file;     // absolute path of the .so ("<builtin>" for in-process registration)
  std::string name;
  std::string version;
  std::vector<std::pair<ComponentKind, std::string>> components;
};

class Registry {
 public:
  void add_pass(const std::string& name, PassFactory f);
  void add_frontend(const std::string& name, FrontendFactory f);
  void add_target(const std::string& name, TargetFactory f);
  void add_tuner(const std::string& name, TunerFactory f);

  // nullptr when unknown.
  std::unique_ptr<Pass> make_pass(const std::string& name) const;
  std::unique_ptr<Frontend> make_frontend(const std::string& name) const;
  std::unique_ptr<Target> make_target(const std::string& name) const;
  std::unique_ptr<Tuner> make_tuner(const std::string& name) const;

  bool has(ComponentKind kind, const std::string& name) const;
  std::vector<std::string> names(ComponentKind kind) const;  // sorted
  // The file of the plugin that registered `name` ("" if unknown).
  std::string owner(ComponentKind kind, const std::string& name) const;

  const std::vector<PluginRecord>& plugins() const { return plugins_; }

  // Used by the loader: registrations between begin_plugin and end_plugin are attributed to that
  // plugin. end_plugin returns the first conflict (a name already registered by another file),
  // naming both files; a conflicting plugin is withdrawn entirely (its record and every name it
  // registered), so a refused plugin contributes nothing.
  void begin_plugin(PluginRecord record);
  Status end_plugin();
  // Withdraws every registration since begin_plugin (used when a plugin's register function fails).
  void abort_plugin();

 private:
  struct Entry {
    std::string owner;
    std::shared_ptr<void> factory;  // the std::function for its kind
  };
  void add(ComponentKind kind, const std::string& name, std::shared_ptr<void> factory);
  const Entry* lookup(ComponentKind kind, const std::string& name) const;
  PluginRecord& builtin_record();
  void withdraw_current_plugin();

  std::map<std::pair<ComponentKind, std::string>, Entry> entries_;
  std::vector<PluginRecord> plugins_;
  std::optional<Diagnostic> pending_conflict_;
  bool in_plugin_ = false;
};

}  // namespace tessera

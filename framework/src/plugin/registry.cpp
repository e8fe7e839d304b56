// Registry: the name -> factory tables that plugins fill, with the file that registered each name.
//
// Loading a plugin is all-or-nothing: registrations between begin_plugin and end_plugin are staged
// on the registry as they arrive and, when the plugin conflicts with a name already owned by another
// file (or aborts), every registration of that plugin is withdrawn again, so a refused plugin
// contributes nothing. Registrations made outside begin/end are in-process ("<builtin>") ones;
// their first conflict is kept and returned by the next end_plugin().
#include "tessera/plugin/registry.h"

#include <algorithm>

#include "tessera/frontend/frontend.h"
#include "tessera/pass/pass.h"
#include "tessera/target/target.h"
#include "tessera/tune/tuner.h"
#include "tessera/support/internal_check.h"

namespace tessera {

namespace {

constexpr const char* kBuiltinFile = "<builtin>";

template <class Factory>
auto invoke_factory(const std::shared_ptr<void>& erased) {
  const auto* factory = static_cast<const Factory*>(erased.get());
  return (*factory) ? (*factory)() : nullptr;
}

}  // namespace

std::string_view component_kind_name(ComponentKind k) {
  switch (k) {
    case ComponentKind::Pass: return "pass";
    case ComponentKind::Frontend: return "frontend";
    case ComponentKind::Target: return "target";
    case ComponentKind::Tuner: return "tuner";
  }
  return "component";
}

void Registry::add_pass(const std::string& name, PassFactory f) {
  add(ComponentKind::Pass, name, std::make_shared<PassFactory>(std::move(f)));
}
void Registry::add_frontend(const std::string& name, FrontendFactory f) {
  add(ComponentKind::Frontend, name, std::make_shared<FrontendFactory>(std::move(f)));
}
void Registry::add_target(const std::string& name, TargetFactory f) {
  add(ComponentKind::Target, name, std::make_shared<TargetFactory>(std::move(f)));
}
void Registry::add_tuner(const std::string& name, TunerFactory f) {
  add(ComponentKind::Tuner, name, std::make_shared<TunerFactory>(std::move(f)));
}

std::unique_ptr<Pass> Registry::make_pass(const std::string& name) const {
  const Entry* e = lookup(ComponentKind::Pass, name);
  return e ? invoke_factory<PassFactory>(e->factory) : nullptr;
}
std::unique_ptr<Frontend> Registry::make_frontend(const std::string& name) const {
  const Entry* e = lookup(ComponentKind::Frontend, name);
  return e ? invoke_factory<FrontendFactory>(e->factory) : nullptr;
}
std::unique_ptr<Target> Registry::make_target(const std::string& name) const {
  const Entry* e = lookup(ComponentKind::Target, name);
  return e ? invoke_factory<TargetFactory>(e->factory) : nullptr;
}
std::unique_ptr<Tuner> Registry::make_tuner(const std::string& name) const {
  const Entry* e = lookup(ComponentKind::Tuner, name);
  return e ? invoke_factory<TunerFactory>(e->factory) : nullptr;
}

bool Registry::has(ComponentKind kind, const std::string& name) const {
  return lookup(kind, name) != nullptr;
}

std::vector<std::string> Registry::names(ComponentKind kind) const {
  // entries_ is ordered by (kind, name), so the names of one kind come out sorted.
  std::vector<std::string> out;
  for (const auto& [key, entry] : entries_)
    if (key.first == kind) out.push_back(key.second);
  return out;
}

std::string Registry::owner(ComponentKind kind, const std::string& name) const {
  const Entry* e = lookup(kind, name);
  return e ? e->owner : std::string();
}

void Registry::begin_plugin(PluginRecord record) {
  TESSERA_INTERNAL_CHECK(!in_plugin_, "Registry::begin_plugin is not called again before end_plugin");
  record.components.clear();
  plugins_.push_back(std::move(record));
  in_plugin_ = true;
}

void Registry::withdraw_current_plugin() {
  // Only the current plugin's own registrations are withdrawn; a conflicting one never entered.
  const PluginRecord& record = plugins_.back();
  for (const auto& [kind, name] : record.components) {
    auto it = entries_.find({kind, name});
    if (it != entries_.end() && it->second.owner == record.file) entries_.erase(it);
  }
  plugins_.pop_back();
}

Status Registry::end_plugin() {
  std::optional<Diagnostic> conflict = std::move(pending_conflict_);
  pending_conflict_.reset();
  if (in_plugin_) {
    in_plugin_ = false;
    if (conflict) withdraw_current_plugin();
  }
  if (conflict) return *conflict;
  return Status::ok();
}

void Registry::abort_plugin() {
  if (!in_plugin_) return;
  in_plugin_ = false;
  pending_conflict_.reset();
  withdraw_current_plugin();
}

PluginRecord& Registry::builtin_record() {
  auto it = std::find_if(plugins_.begin(), plugins_.end(),
                         [](const PluginRecord& r) { return r.file == kBuiltinFile; });
  if (it != plugins_.end()) return *it;
  return plugins_.emplace_back(PluginRecord{kBuiltinFile, kBuiltinFile, TESSERA_VERSION, {}});
}

void Registry::add(ComponentKind kind, const std::string& name, std::shared_ptr<void> factory) {
  PluginRecord& record = in_plugin_ ? plugins_.back() : builtin_record();

  auto key = std::make_pair(kind, name);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    if (!pending_conflict_) {
      std::string what = std::string(component_kind_name(kind)) + " '" + name + "'";
      pending_conflict_ = make_error(
          it->second.owner == record.file
              ? what + " registered twice by " + record.file
              : what + " registered by both " + it->second.owner + " and " + record.file);
    }
    return;  // the first registration keeps the name
  }
  entries_.emplace(std::move(key), Entry{record.file, std::move(factory)});
  record.components.emplace_back(kind, name);
}

const Registry::Entry* Registry::lookup(ComponentKind kind, const std::string& name) const {
  auto it = entries_.find({kind, name});
  return it == entries_.end() ? nullptr : &it->second;
}

}  // namespace tessera

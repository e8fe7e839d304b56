// `tessera plugins` and `tessera passes`: what is loaded, what it registers, and every knob.
#include <iostream>
#include <sstream>

#include "cli_session.h"
#include "commands.h"
#include "tessera/frontend/frontend.h"
#include "tessera/pass/pass.h"
#include "tessera/target/target.h"
#include "tessera/tune/tuner.h"

namespace tessera::cli {

namespace {

std::string stage_list(const Pass& p) {
  std::string s;
  for (Dialect d : p.stages()) s += (s.empty() ? "" : ", ") + std::string(dialect_name(d));
  return s;
}

// One pass: its stages, summary and knobs, indented by `indent`.
void describe_pass(std::ostream& os, const Registry& r, const std::string& name, const std::string& indent) {
  auto pass = r.make_pass(name);
  if (!pass) return;
  os << indent << "pass " << name << "  [" << stage_list(*pass) << "]  " << pass->summary() << "\n";
  auto knobs = pass->knobs();
  if (knobs.empty()) os << indent << "  knobs: none\n";
  for (const auto& k : knobs) os << indent << "  knob " << describe_knob(k) << "\n";
}

std::string component_summary(const Registry& r, ComponentKind kind, const std::string& name) {
  switch (kind) {
    case ComponentKind::Frontend: if (auto f = r.make_frontend(name)) return std::string(f->summary()); break;
    case ComponentKind::Target: if (auto t = r.make_target(name)) return std::string(t->summary()); break;
    case ComponentKind::Tuner: if (auto t = r.make_tuner(name)) return std::string(t->summary()); break;
    case ComponentKind::Pass: break;
  }
  return {};
}

// Both listings take only the global flags and print what the loaded plugins register; `list`
// writes the listing for the registry.
int list_registry(int argc, char** argv, int first, const std::string& command,
                  void (*list)(std::ostream&, const Registry&)) {
  GlobalFlags flags;
  po::options_description desc("tessera " + command + " options");
  add_global_options(desc, flags);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, {}, vm, "tessera " + command + " [--plugin FILE]")) return *code;
  auto session = open_session(flags, std::cerr, /*need_pipeline=*/false);
  if (!session) return kExitError;
  std::ostringstream os;
  list(os, session->host.registry());
  return emit_output(flags, os.str(), std::cerr);
}

void list_plugins(std::ostream& os, const Registry& r) {
  for (const auto& p : r.plugins()) {
    os << "plugin " << p.name << " " << p.version << "  (" << p.file << ")\n";
    for (const auto& [kind, name] : p.components) {
      if (kind == ComponentKind::Pass) {
        describe_pass(os, r, name, "  ");
      } else {
        os << "  " << component_kind_name(kind) << " " << name << "  " << component_summary(r, kind, name) << "\n";
      }
    }
  }
  if (r.plugins().empty()) os << "no plugins loaded\n";
}

void list_passes(std::ostream& os, const Registry& r) {
  for (const auto& name : r.names(ComponentKind::Pass)) describe_pass(os, r, name, "");
}

}  // namespace

int plugins_command(int argc, char** argv, int first) { return list_registry(argc, argv, first, "plugins", list_plugins); }

int passes_command(int argc, char** argv, int first) { return list_registry(argc, argv, first, "passes", list_passes); }

}  // namespace tessera::cli

// `tessera run` and `tessera tune`: need a target (run) or a tuner (tune) plugin. Until those are
// installed they say so in one line and exit 2.
#include <iostream>

#include "cli_session.h"
#include "commands.h"
#include "compile_program.h"

namespace tessera::cli {

namespace {

// Parses the subcommand's flags and reports, in one line, which required plugin is missing.
int needs_component(int argc, char** argv, int first, const char* command, ComponentKind kind,
                    const std::string& wanted, const std::string& lands_with) {
  GlobalFlags flags;
  ProgramSource src;
  std::string target = wanted;
  po::options_description desc(std::string("tessera ") + command + " options");
  add_program_options(desc, src);
  if (kind == ComponentKind::Target) {
    desc.add_options()
        ("target", po::value(&target)->value_name("auto|sim|cuda"), "where to run (default auto: cuda when a GPU is present, else sim)")
        ("bench", "time the kernels");
  } else {
    desc.add_options()("tune-db", po::value<std::string>()->value_name("FILE"), "tuning database");
  }
  add_global_options(desc, flags);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, {}, vm, std::string("tessera ") + command + " -c EXPR [options]")) return *code;
  auto session = open_session(flags, std::cerr);
  if (!session) return kExitError;
  const auto& r = session->host.registry();
  bool have = kind == ComponentKind::Target ? (target == "auto" ? !r.names(kind).empty() : r.has(kind, target))
                                            : r.has(kind, session->pipeline.tuner.name);
  if (!have) {
    std::string which = kind == ComponentKind::Target ? target : session->pipeline.tuner.name;
    std::cerr << "error: tessera " << command << ": no " << component_kind_name(kind) << " plugin "
              << (which == "auto" ? std::string("(sim or cuda)") : "'" + which + "'") << " is installed yet ("
              << lands_with << ")\n";
    return kExitUsage;
  }
  std::cerr << "error: tessera " << command << ": this build's host cannot drive the installed "
            << component_kind_name(kind) << " plugins yet\n";
  return kExitUsage;
}

}  // namespace

int run_command(int argc, char** argv, int first) {
  return needs_component(argc, argv, first, "run", ComponentKind::Target, "auto",
                         "the sim and cuda targets come with Kernel IR");
}

int tune_command(int argc, char** argv, int first) {
  return needs_component(argc, argv, first, "tune", ComponentKind::Tuner, "mcts",
                         "the mcts tuner comes after the CUDA target");
}

}  // namespace tessera::cli

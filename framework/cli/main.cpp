// tessera: the command-line driver. `tessera <command> [options]`; see docs/cli.md.
#include <cstring>
#include <iostream>
#include <string>

#include "commands.h"
#include "tessera/plugin/plugin.h"

namespace {

constexpr const char* kUsage = R"(usage: tessera <command> [options]

commands:
  compile   compile a program and print the IR of a stage (--ir torch|tensor|loop|tile|kernel|cuda)
  run       compile and run a program on a target, checking it against the reference
  tune      autotune a program's schedule knobs
  db        list, show, export, import and merge tuning databases
  ab        compile one program with two pipelines and compare the results
  plugins   list loaded plugins, what they register, and every pass's knobs
  passes    list the available passes and their knobs
  bench     run the benchmark suite on the GPU and compare it with PyTorch

`tessera <command> --help` describes a command's options.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera::cli;
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (cmd == "--version") {
    std::cout << "tessera " << TESSERA_VERSION << " (plugin API " << tessera::kPluginApiVersion << ")\n";
    return 0;
  }
  if (cmd == "compile") return compile_command(argc, argv, 2);
  if (cmd == "run") return run_command(argc, argv, 2);
  if (cmd == "tune") return tune_command(argc, argv, 2);
  if (cmd == "db") return db_command(argc, argv, 2);
  if (cmd == "ab") return ab_command(argc, argv, 2);
  if (cmd == "plugins") return plugins_command(argc, argv, 2);
  if (cmd == "passes") return passes_command(argc, argv, 2);
  if (cmd == "bench") return bench_command(argc, argv, 2);
  if (cmd == "measure-worker") return measure_worker_command(argc, argv, 2);
  std::cerr << "error: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}

// The `tessera` subcommands. Each takes the arguments after its name and returns the exit code.
#pragma once

#include <string>
#include <vector>

namespace tessera::cli {

int compile_command(int argc, char** argv, int first);
int run_command(int argc, char** argv, int first);
int tune_command(int argc, char** argv, int first);
int ab_command(int argc, char** argv, int first);
int plugins_command(int argc, char** argv, int first);
int passes_command(int argc, char** argv, int first);

// `tessera bench`: the suite against PyTorch (bench_command.cpp).
int bench_command(int argc, char** argv, int first);

// `tessera db`: list, show, export, import and merge tuning databases (db_command.cpp).
int db_command(int argc, char** argv, int first);

}  // namespace tessera::cli

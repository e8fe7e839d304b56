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

// `tessera measure-worker DIR`: the GPU measurer's worker process (measure_worker_command.cpp);
// run by `tessera tune`, not by hand, so not in the usage text.
int measure_worker_command(int argc, char** argv, int first);

}  // namespace tessera::cli

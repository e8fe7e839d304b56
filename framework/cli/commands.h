// The `tessera` subcommands. Each takes the arguments after its name and returns the exit code.
#pragma once

#include <string>
#include <vector>

namespace tessera::cli {

struct GlobalFlags;

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
// `tessera tune --calibrate RESULTS -o FILE` (calibrate_command.cpp): fits the cost model's
// coefficients to the kernel times of RESULTS (a `tessera bench` output directory or report.json,
// or a calibration file; docs/cost-model.md) and writes them in data/cost_model.yaml's format to
// flags.output (stdout when empty). `suite` overrides the suite file a bench report names.
int calibrate_cost_model_command(const GlobalFlags& flags, const std::string& results, const std::string& suite = "");
// `tessera measure-worker DIR`: the GPU measurer's worker process (measure_worker_command.cpp);
// run by `tessera tune`, not by hand, so not in the usage text.
int measure_worker_command(int argc, char** argv, int first);

}  // namespace tessera::cli

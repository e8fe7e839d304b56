// Running a compiled program on a target: what `tessera run` and `tessera bench` share — picking
// the target, the host-memory bound of the reference check, lowering to the target's input
// dialect, the target options and the per-output check.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_session.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"

namespace tessera::cli {

// Picks the target: a named one must be installed and available; `auto` prefers cuda and falls
// back to sim with a one-line notice. Returns nullptr after printing why (prefixed with
// `command`, e.g. "tessera run") and setting `exit_code`.
std::unique_ptr<Target> pick_target(const Registry& r, const std::string& wanted, const std::string& command,
                                    int& exit_code);

// "1.5 GB" and the like.
std::string format_bytes(double bytes);

// Host memory the check needs before anything is allocated: the reference evaluator holds every
// tensor of the program as doubles, and the target's buffers (the simulator's, or the cuda
// target's host copies) hold as much again. A program beyond `limit_bytes` is refused up front with
// the figures, instead of dying in an allocation.
Status check_host_memory(const Graph& g, double limit_bytes);
// Half the machine's physical memory, the default --memory-limit.
double default_memory_limit();

// Whether the pipeline reaches the target's input dialect; prints why not (prefixed with `command`).
bool pipeline_reaches_target(const Session& s, const Target& target, const std::string& command, std::ostream& err);

// Runs the session's pipeline on `graph` up to the target's input dialect. With `kernel_ir`, keeps
// a copy of the Kernel IR stage there (what --bench counts bytes and flops in); an on_stage_end
// callback in `options` still runs. Diagnostics of the passes go to `err`.
Status lower_for_target(const Session& s, const Target& target, RunnerOptions options, Graph& graph,
                        Graph* kernel_ir, std::ostream& err);

// The target options of a run: --arch when given, else the GPU's own arch (`gpu`: what the caller's
// Target::query_device() returned, queried once since it opens the driver), else the device
// description's.
TargetOptions target_options(const Session& s, const std::optional<DeviceDesc>& gpu, const std::string& arch_flag,
                             const std::string& cache_dir_flag);

// One output compared with the reference.
struct OutputCheck {
  std::string name;
  std::string missing_from;  // "reference" or "target run" when the output is missing from one
  double max_abs_error = 0, max_rel_error = 0, rtol = 0;
  DType precision = DType::F32;  // the narrowest float dtype on the output's path (output_tolerance)
  int64_t elements = 0;
  bool ok = false;
};

// Compares every output of `g` in `actual` with `expected`, each with the tolerance its path in
// `reference_graph` (the Torch IR the reference evaluated) gives it (output_tolerance); rtol > 0
// overrides that tolerance's rtol.
Expected<std::vector<OutputCheck>> check_outputs(const Graph& g, const Graph& reference_graph, const ValueMap& expected,
                                                 const ValueMap& actual, double rtol);

}  // namespace tessera::cli

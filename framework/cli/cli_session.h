// What every `tessera` subcommand shares: the global flags, the plugin host, the pipeline and the
// device description. Built once per command invocation (no globals).
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "tessera/ir/type.h"
#include "tessera/pass/pipeline.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/support/status.h"
#include "tessera/target/device.h"

namespace tessera::cli {

namespace po = boost::program_options;

// Process exit codes shared by all subcommands.
enum ExitCode : int { kExitOk = 0, kExitError = 1, kExitUsage = 2 };

struct GlobalFlags {
  std::string pipeline;               // --pipeline FILE ("" = the default pipeline)
  std::string arch;                   // --arch sm_XX
  std::string device;                 // --device NAME
  std::string dtype = "f32";          // --dtype
  int threads = 0;                    // --threads N (0 = the pipeline's)
  std::vector<std::string> plugins;   // --plugin FILE (repeatable)
  std::vector<std::string> knobs;     // --knob PASS.KNOB=VALUE (repeatable): pins over the pipeline's
  std::string output;                 // -o FILE
  int verbosity = 0;                  // -v / -vv
};

// Adds the global flags to a subcommand's option set.
void add_global_options(po::options_description& desc, GlobalFlags& flags);

// Removes -v / -vv / --verbose from argv (counting them) so that program_options sees the rest.
std::vector<std::string> strip_verbosity(int argc, char** argv, int first, int& verbosity);

// Parses `args` against `desc` (and positional `pos`). On --help prints usage and returns kExitOk
// through `exit_code`; on a usage error prints it and returns kExitUsage. nullopt = continue.
std::optional<int> parse_command_line(const std::vector<std::string>& args, const po::options_description& desc,
                                      const po::positional_options_description& pos, po::variables_map& vm,
                                      const std::string& usage);

// Everything loaded for one invocation.
class TuningReplay;

struct Session {
  PluginHost host;
  PipelineSpec pipeline;
  DeviceTable devices;
  const DeviceDesc* device = nullptr;
  // Whether --device, --arch or the pipeline named the device; when none did, a command that runs
  // on a GPU compiles for the GPU present (adopt_gpu_device).
  bool device_named = false;
  DType dtype = DType::F32;
  // --tune-db FILE: the tuned decisions every lowering of this invocation replays (tuning_replay.h).
  std::shared_ptr<TuningReplay> tuning_replay;
};

// Loads plugins (built-in dir, TESSERA_PLUGIN_PATH, --plugin, the pipeline's `plugins:`), the
// pipeline (validated), the device table and the selected device. Errors are printed to `err`.
// Returns nullptr on failure.
std::unique_ptr<Session> open_session(const GlobalFlags& flags, std::ostream& err, bool need_pipeline = true);

// The device table's entry for a GPU the driver names `driver_name` ("NVIDIA H100 80GB HBM3"):
// the one whose short name appears in it, ignoring case, spaces and dashes; nullptr when none does.
const DeviceDesc* device_for_driver_name(const DeviceTable& table, const std::string& driver_name);

// A command about to run on the GPU the driver names `driver_name` compiles for that GPU's table
// entry unless the device was named (Session::device_named): heuristics and tuning records then
// describe the GPU the kernels run on, not the default H100. A GPU missing from the table keeps
// the session's device and prints a note to `err` saying so.
void adopt_gpu_device(Session& s, const std::string& driver_name, std::ostream& err);

// Writes `text` to -o FILE or stdout.
int emit_output(const GlobalFlags& flags, const std::string& text, std::ostream& err);

// Prints a diagnostic to `err` and returns kExitError.
int report(std::ostream& err, const Diagnostic& d);

// The kernel cache directory: --cache-dir, else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera
// ("" when none of them is known: builds then skip the cache).
std::string default_cache_dir(const std::string& flag);

}  // namespace tessera::cli

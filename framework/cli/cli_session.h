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
  DType dtype = DType::F32;
  // --tune-db FILE: the tuned decisions every lowering of this invocation replays (tuning_replay.h).
  std::shared_ptr<TuningReplay> tuning_replay;
};

// Loads plugins (built-in dir, TESSERA_PLUGIN_PATH, --plugin, the pipeline's `plugins:`), the
// pipeline (validated), the device table and the selected device. Errors are printed to `err`.
// Returns nullptr on failure.
std::unique_ptr<Session> open_session(const GlobalFlags& flags, std::ostream& err, bool need_pipeline = true);

// Writes `text` to -o FILE or stdout.
int emit_output(const GlobalFlags& flags, const std::string& text, std::ostream& err);

// Prints a diagnostic to `err` and returns kExitError.
int report(std::ostream& err, const Diagnostic& d);

// The kernel cache directory: --cache-dir, else $XDG_CACHE_HOME/tessera, else ~/.cache/tessera
// ("" when none of them is known: builds then skip the cache).
std::string default_cache_dir(const std::string& flag);

}  // namespace tessera::cli

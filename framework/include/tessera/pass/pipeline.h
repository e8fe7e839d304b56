// PipelineSpec: a YAML pipeline file, parsed and typed.
//
//   name: default
//   plugins: [path/to/libmy_pass.so]          # optional extra plugins
//   stages:
//     torch:  [canonicalize]
//     tile:
//       - launch_geometry: {BN: 128}          # pinned knob; `auto` or omitted = heuristic/tuner
//   target: {name: cuda, arch: sm_90, device: h100}
//   tuner:  {name: mcts, patience: 60}
//   threads: 4                                # kernel pass applications at once (default 1)
//
// Parsing happens in two steps: parse_pipeline checks the YAML and its shape (unknown keys, wrong
// node kinds); validate_pipeline checks it against the loaded plugins (unknown pass, pass in the
// wrong stage, unknown knob, ill-typed value). Every error carries file:line:col.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tessera/ir/op.h"
#include "tessera/pass/pass_context.h"
#include "tessera/support/status.h"

namespace tessera {

class Registry;

struct PassEntry {
  std::string name;
  std::vector<KnobPin> pins;
  SourceLoc loc;
  // Knobs written as `auto`: not pinned, kept only so validation can reject a misspelled name.
  std::vector<std::pair<std::string, SourceLoc>> auto_knobs;
};

struct TargetSpec {
  std::string name = "cuda";
  std::string arch;    // empty = the GPU present, else the default arch of the target
  std::string device;  // device description name (h100, ...); empty = from arch / the GPU present
  SourceLoc loc;
};

struct TunerSpec {
  std::string name = "mcts";
  std::vector<KnobPin> options;  // validated by the tuner plugin when it runs
  SourceLoc loc;
};

struct PipelineSpec {
  std::string name;
  std::string file;  // where it was read from ("<builtin>" when not from a file)
  std::vector<std::string> plugins;  // resolved relative to the file's directory
  std::vector<SourceLoc> plugin_locs;
  std::map<Dialect, std::vector<PassEntry>> stages;  // keys: Torch .. Cuda, never Core
  TargetSpec target;
  TunerSpec tuner;
  // How many nodes a kernel pass rewrites at once. The output is the same for any value.
  int threads = 1;
  std::string source_text;  // the YAML text, so validation errors can show the offending line

  // The furthest stage with at least one pass (Torch when none).
  Dialect last_stage() const;
};

// Stage marker letters: g torch(graph), d tensor(decompose), l loop, t tile, k kernel, c cuda.
char stage_letter(Dialect stage);
// "t:007_stage_inputs" for the 7th pass of the tile stage (1-based).
std::string pass_marker(Dialect stage, size_t position, const std::string& pass_name);

Expected<PipelineSpec> parse_pipeline(const std::string& yaml_text, const std::string& file);
Expected<PipelineSpec> load_pipeline_file(const std::string& path);
Status validate_pipeline(const PipelineSpec& spec, const Registry& registry);

// Pins a knob from the command line: `assignment` is PASS.KNOB=VALUE, VALUE spelled as in a
// pipeline file (true, 4, 'in0,in1', [1, 2]), read by the same reader. Every entry of PASS in
// `spec` gets the pin, replacing one of the same knob. Errors name the assignment (`--knob ...:`):
// not of that form, a value the file syntax refuses, or a pipeline without PASS. Whether the knob
// exists and takes the value is validate_pipeline's check, as for a pin in the file.
Status pin_knob(PipelineSpec& spec, const std::string& assignment);

// The effective pipeline as YAML: every pass with every knob (pinned values, or `auto`), the
// target and tuner with defaults filled in. Parses back to an equal spec.
std::string print_pipeline(const PipelineSpec& spec, const Registry& registry);

// Equality of the meaningful content (ignores source locations).
bool same_pipeline(const PipelineSpec& a, const PipelineSpec& b);

}  // namespace tessera

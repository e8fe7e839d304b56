// PipelineRunner: runs a validated pipeline's stages, in order, on a graph.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pipeline.h"
#include "tessera/support/status.h"

namespace tessera {

class Registry;
class ChoiceSource;

struct RunnerOptions {
  Dialect stop_after = Dialect::Torch;  // run stages up to and including this one
  // Skip the stages up to and including this one (a tuning task enters at the tile stage with its
  // kernel already fused).
  std::optional<Dialect> start_after;
  bool time_passes = false;             // per-pass wall time table on `err`
  bool print_ir_after_all = false;
  std::set<std::string> print_ir_after;  // pass names
  std::set<std::string> print_diff;      // pass names whose -vv diff blocks print at any verbosity
  bool verify_each = false;             // verify after every pass (always after every stage)
  std::string dump_dir;                 // every stage as NN_stage.txt + NN_stage.json
  std::string reproducer_dir;           // where failure reproducers go ("" = dump_dir or temp dir)
  int verbosity = 0;                    // 1: one line per pass; 2: diffs per application
  const DeviceDesc* device = nullptr;   // required
  ChoiceSource* tuner = nullptr;
  ChoiceSource* replay = nullptr;
  // Called with each stage's result once it verifies (e.g. to keep the Kernel IR a later stage
  // lowers further).
  std::function<void(Dialect stage, const Graph& g)> on_stage_end;
  std::ostream* out = nullptr;          // IR printouts and diffs (stdout)
  std::ostream* err = nullptr;          // timings and notes (stderr)
};

class PipelineRunner {
 public:
  PipelineRunner(const Registry& registry, const PipelineSpec& spec, RunnerOptions options);

  // Runs every stage up to options.stop_after. On a pass failure the returned diagnostic names the
  // pass marker and node, shows the IR around the failure, and names the reproducer written
  // (input graph JSON + effective pipeline YAML). Kernel passes apply to up to `threads` nodes at
  // once (the pipeline's setting); the result is the same for any count.
  Status run(Graph& g, DiagnosticEngine& diags);

 private:
  struct Timing {
    std::string marker;
    double ms;
  };
  // The stages in order; with `stop_before` (a pass marker) stops right before that pass and
  // prints, dumps and verifies nothing. `input` is what rebuild_input replays from.
  Status run_stages(Graph& g, DiagnosticEngine& diags, const std::string* stop_before, const Graph* input,
                    std::vector<Timing>* timings) const;
  // The input of the pass at `marker`, by replaying the pipeline from `input` up to it.
  Graph rebuild_input(const std::string& marker, const Graph* input) const;
  // Decorates a pass failure (marker, node IR) and writes the reproducer named in its notes.
  Status fail(Diagnostic d, const std::string& marker, const Graph& input) const;

  const Registry& registry_;
  const PipelineSpec& spec_;
  RunnerOptions opts_;
};

}  // namespace tessera

// PassContext: everything a pass may consult while it runs, handed to it by the pipeline runner.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/knob.h"
#include "tessera/support/status.h"
#include "tessera/target/device.h"

namespace tessera {

class ChoiceSource;

// A value pinned in the pipeline YAML for one knob of one pass entry.
struct KnobPin {
  std::string knob;
  AttrValue value;
  SourceLoc loc;  // where it was written, for errors
};

class PassContext {
 public:
  struct Sources {
    ChoiceSource* tuner = nullptr;   // the tuner's current trajectory (or a random sampler)
    ChoiceSource* replay = nullptr;  // a tuning-database replay
  };

  PassContext(std::string pass_name, std::string marker, std::vector<KnobSpec> knobs,
              std::vector<KnobPin> pins, Sources sources, const DeviceDesc* device,
              DiagnosticEngine* diags);

  std::string_view pass_name() const { return pass_name_; }
  // The pipeline position marker, e.g. "t:007_stage_inputs".
  std::string_view marker() const { return marker_; }
  // The device the schedule is for. Heuristics read numbers from here, never hard-code them.
  const DeviceDesc& device() const { return *device_; }
  // The graph the pass runs on, for lookups (input types, users); set by whoever runs the pass.
  // For a KernelPass it is the graph as it was before the pass.
  const Graph& graph() const { return *graph_; }
  void set_graph(const Graph* g) { graph_ = g; }

  // Decides `knob` for `node`, in this order: the pinned YAML value (which must be among
  // `candidates`), the tuner's trajectory, the tuning-database replay, then `heuristic`.
  // Records the choice on the node (node.choices) and returns it. Sources are asked by the
  // decision's key (tune/decision.h): the node's kernel_structural_hash when this context first
  // asks about it, this pass, the knob, and how many times this context asked it on the node.
  Expected<AttrValue> choose(std::string_view knob, Node& node, const std::vector<AttrValue>& candidates,
                             const AttrValue& heuristic);
  Expected<int64_t> choose_int(std::string_view knob, Node& node, const std::vector<int64_t>& candidates,
                               int64_t heuristic);
  Expected<bool> choose_bool(std::string_view knob, Node& node, bool heuristic);

  // Records that the pass declined to rewrite `node` (printed at -vv as "--- <marker> skipped at
  // <node>: <reason>").
  void skip(const Node& node, std::string reason);
  struct Skip {
    std::string node, reason;
  };
  const std::vector<Skip>& skips() const { return skips_; }

  // An error already naming this pass and `node`.
  Diagnostic error_at(const Node& node, std::string message) const;
  DiagnosticEngine& diagnostics() { return *diags_; }

  // A context for one application of a KernelPass: the same pass, pins, sources, device and
  // graph, with its own skips and diagnostics, which join() appends to this context's (the
  // runner joins in graph order, so the result does not depend on which thread ran what).
  PassContext fork() const;
  void join(const PassContext& application);

 private:
  std::string pass_name_, marker_;
  std::vector<KnobSpec> knobs_;
  std::vector<KnobPin> pins_;
  Sources sources_;
  const DeviceDesc* device_;
  DiagnosticEngine* diags_;
  std::vector<Skip> skips_;
  const Graph* graph_ = nullptr;
  std::shared_ptr<DiagnosticEngine> own_diags_;  // a fork's diagnostics, until joined
  // Decision keys: each node's hash at this context's first ask about it, and the asks so far per
  // (node, knob) (the next ask's ordinal).
  std::map<std::string, uint64_t> kernel_hashes_;
  std::map<std::pair<std::string, std::string>, int> asks_;
};

}  // namespace tessera

// PipelineTrialRunner: one tuning trial of one task — the task's kernel compiled from the tile
// stage on through the pipeline with the trial's decisions, then measured.
//
// The trial's decisions reach the passes through TrialChoiceSource, attached as the runner's tuner
// source: a decision the trial fixes gets its value (when it is still among the candidates, which
// may depend on earlier decisions), any other gets the rollout's, and every decision asked is
// logged with its candidates and heuristic, so the tuner learns the tree as it goes.
#pragma once

#include <map>
#include <mutex>

#include "tessera/ir/graph.h"
#include "tessera/pass/pipeline.h"
#include "tessera/target/device.h"
#include "tessera/tune/choice_source.h"
#include "tessera/tune/measurer.h"
#include "tessera/tune/tuner.h"

namespace tessera {

class Registry;

class TrialChoiceSource final : public ChoiceSource {
 public:
  explicit TrialChoiceSource(const TrialSpec& spec) : spec_(spec) {}
  std::string_view name() const override { return "tuner"; }
  std::optional<AttrValue> choose(const ChoiceRequest& request) override;
  // The decisions asked, each once, in pipeline order; those with one candidate (no choice) left out.
  std::vector<DecisionPoint> decisions() const;

 private:
  const TrialSpec& spec_;
  mutable std::mutex mutex_;
  std::map<DecisionKey, DecisionPoint> asked_;
};

// Pipeline order of two pass markers ("t:007_stage_inputs" before "k:001_materialize").
bool marker_before(const std::string& a, const std::string& b);

class PipelineTrialRunner final : public TrialRunner {
 public:
  // `task_graph` is a TuningTaskGraph's graph (Loop IR). With `prior` (the cost model, when
  // `measurer` is another), estimate() scores trials with it. Everything referenced must outlive
  // the runner.
  PipelineTrialRunner(const Registry& registry, const PipelineSpec& pipeline, const DeviceDesc& device,
                      const Graph& task_graph, Measurer& measurer, Measurer* prior = nullptr);
  TrialResult run(const TrialSpec& spec) override;
  std::optional<double> estimate(const TrialSpec& spec) override;

 private:
  // The trial compiled with `spec` through `stage`, its decisions logged in `source`.
  Status compile(const TrialSpec& spec, Dialect stage, TrialChoiceSource& source, Graph& g) const;

  const Registry& registry_;
  const PipelineSpec& pipeline_;
  const DeviceDesc& device_;
  const Graph& task_graph_;
  Measurer& measurer_;
  Measurer* prior_;
};

}  // namespace tessera

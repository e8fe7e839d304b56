// One tuning trial: compile a task's kernel with the trial's decisions, measure it (see
// pipeline_trial_runner.h).
#include "pipeline_trial_runner.h"

#include <algorithm>
#include <sstream>

#include "tessera/pass/runner.h"

namespace tessera {

std::optional<AttrValue> TrialChoiceSource::choose(const ChoiceRequest& request) {
  const std::vector<AttrValue>& candidates = request.candidates;
  AttrValue chosen = request.heuristic;
  auto fixed = spec_.fixed.find(request.key);
  if (fixed != spec_.fixed.end() &&
      std::find(candidates.begin(), candidates.end(), fixed->second) != candidates.end()) {
    chosen = fixed->second;
  } else if (spec_.rollout_seed != 0 && !candidates.empty()) {
    chosen = candidates[RandomChoiceSource::draw(spec_.rollout_seed, request.key, candidates.size())];
  } else if (!candidates.empty() && std::find(candidates.begin(), candidates.end(), chosen) == candidates.end()) {
    chosen = candidates.front();  // a heuristic outside its own candidates: the pass would refuse it too
  }
  std::lock_guard<std::mutex> lock(mutex_);
  asked_.try_emplace(request.key, DecisionPoint{request.key, request.node.id(), std::string(request.marker), candidates,
                                                request.heuristic, chosen});
  return chosen;
}

bool marker_before(const std::string& a, const std::string& b) {
  // Dialects are declared in lowering order.
  auto stage_of = [](const std::string& m) {
    for (Dialect d : {Dialect::Torch, Dialect::Tensor, Dialect::Loop, Dialect::Tile, Dialect::Kernel, Dialect::Cuda})
      if (!m.empty() && m[0] == stage_letter(d)) return static_cast<int>(d);
    return static_cast<int>(Dialect::Cuda) + 1;
  };
  const size_t sa = stage_of(a), sb = stage_of(b);
  if (sa != sb) return sa < sb;
  return a < b;  // same stage: the zero-padded position, then the name
}

std::vector<DecisionPoint> TrialChoiceSource::decisions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<DecisionPoint> out;
  for (const auto& [key, point] : asked_)
    if (point.candidates.size() > 1) out.push_back(point);
  std::stable_sort(out.begin(), out.end(), [](const DecisionPoint& x, const DecisionPoint& y) {
    if (x.marker != y.marker) return marker_before(x.marker, y.marker);
    return x.key < y.key;
  });
  return out;
}

PipelineTrialRunner::PipelineTrialRunner(const Registry& registry, const PipelineSpec& pipeline,
                                         const DeviceDesc& device, const Graph& task_graph, Measurer& measurer,
                                         Measurer* prior)
    : registry_(registry),
      pipeline_(pipeline),
      device_(device),
      task_graph_(task_graph),
      measurer_(measurer),
      prior_(prior) {}

Status PipelineTrialRunner::compile(const TrialSpec& spec, Dialect stage, TrialChoiceSource& source, Graph& g) const {
  g = task_graph_;
  RunnerOptions options;
  options.start_after = Dialect::Loop;
  options.stop_after = stage;
  options.device = &device_;
  options.tuner = &source;
  std::ostringstream sink;
  options.out = &sink;
  options.err = &sink;
  DiagnosticEngine diags;
  return PipelineRunner(registry_, pipeline_, options).run(g, diags);
}

TrialResult PipelineTrialRunner::run(const TrialSpec& spec) {
  TrialChoiceSource source(spec);
  Graph g;
  Status st = compile(spec, measurer_.needs_stage(), source, g);
  TrialResult result;
  result.decisions = source.decisions();
  if (!st) {
    result.error = "compile failed: " + st.error().render();
    while (!result.error.empty() && result.error.back() == '\n') result.error.pop_back();
    return result;
  }
  Measurement m = measurer_.measure(g);
  result.ok = m.ok;
  result.latency_us = m.latency_us;
  result.error = m.error;
  return result;
}

std::optional<double> PipelineTrialRunner::estimate(const TrialSpec& spec) {
  if (prior_ == nullptr) return std::nullopt;
  TrialChoiceSource source(spec);
  Graph g;
  if (!compile(spec, prior_->needs_stage(), source, g)) return std::nullopt;
  Measurement m = prior_->measure(g);
  if (!m.ok) return std::nullopt;
  return m.latency_us;
}

}  // namespace tessera

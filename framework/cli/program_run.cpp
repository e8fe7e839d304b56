// Running a compiled program on a target (see program_run.h): shared by `tessera run` and
// `tessera bench`.
#include "program_run.h"

#include "tuning_replay.h"

#include <cstdio>
#include <iostream>

#include <unistd.h>

#include "tessera/eval/reference_evaluator.h"

namespace tessera::cli {

std::unique_ptr<Target> pick_target(const Registry& r, const std::string& wanted, const std::string& command,
                                    int& exit_code) {
  if (wanted != "auto") {
    if (!r.has(ComponentKind::Target, wanted)) {
      auto names = r.names(ComponentKind::Target);
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      std::cerr << "error: " << command << ": no target plugin '" << wanted << "' is installed (installed: "
                << (list.empty() ? "none" : list) << ")\n";
      exit_code = kExitUsage;
      return nullptr;
    }
    auto t = r.make_target(wanted);
    std::string why;
    if (!t->available(&why)) {
      std::cerr << "error: " << command << ": target '" << wanted << "' cannot run here: " << why << "\n";
      exit_code = kExitError;
      return nullptr;
    }
    return t;
  }
  std::string why = "no cuda target plugin is installed";
  if (r.has(ComponentKind::Target, "cuda")) {
    auto t = r.make_target("cuda");
    if (t->available(&why)) return t;
  }
  if (!r.has(ComponentKind::Target, "sim")) {
    std::cerr << "error: " << command << ": no usable target (" << why << ", and no sim target plugin is installed)\n";
    exit_code = kExitUsage;
    return nullptr;
  }
  std::cerr << "note: running on the sim target (" << why << ")\n";
  return r.make_target("sim");
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

Status check_host_memory(const Graph& g, double limit_bytes) {
  double total = 0, largest = 0;
  std::string largest_id;
  for (const Node* n : g.nodes()) {
    const double bytes = static_cast<double>(num_elements(n->type.shape)) * sizeof(double);
    total += 2 * bytes;
    if (bytes > largest) {
      largest = bytes;
      largest_id = n->id();
    }
  }
  if (total <= limit_bytes) return Status::ok();
  return make_error("the check needs about " + format_bytes(total) + " of host memory (tensor '" + largest_id +
                    "' alone needs " + format_bytes(largest) + " as doubles); the limit is " +
                    format_bytes(limit_bytes) + " (--memory-limit GB)");
}

double default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 8.0 * (1 << 30);
  return static_cast<double>(pages) * static_cast<double>(page) / 2;
}

bool pipeline_reaches_target(const Session& s, const Target& target, const std::string& command, std::ostream& err) {
  const Dialect stop = target.input_dialect();
  auto stage_passes = s.pipeline.stages.find(stop);
  if (stop != Dialect::Torch && (stage_passes == s.pipeline.stages.end() || stage_passes->second.empty())) {
    err << "error: " << command << ": target '" << target.name() << "' runs " << dialect_name(stop)
        << " IR, but pipeline '" << s.pipeline.name << "' has no passes for that stage\n";
    return false;
  }
  return true;
}

Status lower_for_target(const Session& s, const Target& target, RunnerOptions options, Graph& graph,
                        Graph* kernel_ir, std::ostream& err) {
  options.stop_after = target.input_dialect();
  options.device = s.device;
  if (s.tuning_replay) s.tuning_replay->attach(options);
  if (kernel_ir)
    options.on_stage_end = [kernel_ir, previous = options.on_stage_end](Dialect stage, const Graph& g) {
      if (previous) previous(stage, g);
      if (stage == Dialect::Kernel) *kernel_ir = g;
    };
  DiagnosticEngine diags;
  PipelineRunner runner(s.host.registry(), s.pipeline, options);
  Status st = runner.run(graph, diags);
  err << diags.render_all();
  return st;
}

TargetOptions target_options(const Session& s, const std::optional<DeviceDesc>& gpu, const std::string& arch_flag,
                             const std::string& cache_dir_flag) {
  TargetOptions to;
  to.arch = arch_flag.empty() ? s.device->arch : arch_flag;
  to.device = s.device;
  to.cache_dir = default_cache_dir(cache_dir_flag);
  if (arch_flag.empty() && gpu) to.arch = gpu->arch;  // the GPU's own arch
  return to;
}

Expected<std::vector<OutputCheck>> check_outputs(const Graph& g, const Graph& reference_graph, const ValueMap& expected,
                                                 const ValueMap& actual, double rtol) {
  std::vector<OutputCheck> checks;
  for (const std::string& name : g.outputs()) {
    OutputCheck c;
    c.name = name;
    OutputTolerance tolerance = output_tolerance(reference_graph, name);
    // Integer and bool outputs are compared exactly, whatever --rtol says (rtol 0 prints "exact").
    if (tolerance.rtol > 0 && rtol > 0) tolerance.rtol = rtol;
    c.rtol = tolerance.rtol;
    c.precision = tolerance.precision;
    if (!expected.count(name) || !actual.count(name)) {
      c.missing_from = !expected.count(name) ? "reference" : "target run";
      checks.push_back(c);
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(ValueComparison cmp, compare_output(expected, actual, name, tolerance));
    c.max_abs_error = cmp.max_abs_error;
    c.max_rel_error = cmp.max_rel_error;
    c.elements = cmp.elements;
    c.ok = cmp.within(c.rtol);
    checks.push_back(c);
  }
  return checks;
}

}  // namespace tessera::cli

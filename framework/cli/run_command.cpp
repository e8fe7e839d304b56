// `tessera run`: compile a program through the pipeline, run it on a target with seeded inputs, and
// check every output against the reference evaluator. `tessera tune` still reports that no tuner
// plugin is installed.
//
// Exit codes: 0 every output within tolerance, 1 an output outside it or a target error, 2 a
// usage or compile error (the program never ran).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli_session.h"
#include "commands.h"
#include "compile_program.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"
#include "tessera/tune/choice_source.h"

namespace tessera::cli {

namespace {

std::string format_error(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string int_tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}


// Picks the target: a named one must be installed and available; `auto` prefers cuda and falls
// back to sim with a one-line notice. Returns nullptr after printing why.
std::unique_ptr<Target> pick_target(const Registry& r, const std::string& wanted, int& exit_code) {
  if (wanted != "auto") {
    if (!r.has(ComponentKind::Target, wanted)) {
      auto names = r.names(ComponentKind::Target);
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      std::cerr << "error: tessera run: no target plugin '" << wanted << "' is installed (installed: "
                << (list.empty() ? "none" : list) << ")\n";
      exit_code = kExitUsage;
      return nullptr;
    }
    auto t = r.make_target(wanted);
    std::string why;
    if (!t->available(&why)) {
      std::cerr << "error: tessera run: target '" << wanted << "' cannot run here: " << why << "\n";
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
    std::cerr << "error: tessera run: no usable target (" << why << ", and no sim target plugin is installed)\n";
    exit_code = kExitUsage;
    return nullptr;
  }
  std::cerr << "note: running on the sim target (" << why << ")\n";
  return r.make_target("sim");
}

int needs_tuner(int argc, char** argv, int first) {
  GlobalFlags flags;
  ProgramSource src;
  po::options_description desc("tessera tune options");
  add_program_options(desc, src);
  desc.add_options()("tune-db", po::value<std::string>()->value_name("FILE"), "tuning database");
  add_global_options(desc, flags);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, {}, vm, "tessera tune -c EXPR [options]")) return *code;
  auto session = open_session(flags, std::cerr);
  if (!session) return kExitError;
  const std::string& tuner = session->pipeline.tuner.name;
  if (!session->host.registry().has(ComponentKind::Tuner, tuner)) {
    std::cerr << "error: tessera tune: no tuner plugin '" << tuner
              << "' is installed yet (the mcts tuner comes after the CUDA target)\n";
    return kExitUsage;
  }
  std::cerr << "error: tessera tune: this build's host cannot drive the installed tuner plugins yet\n";
  return kExitUsage;
}

}  // namespace

int run_command(int argc, char** argv, int first) {
  GlobalFlags flags;
  ProgramSource src;
  std::string target_name = "auto";
  uint64_t seed = 0;
  uint64_t sample_seed = 0;
  double rtol = 0;
  po::options_description desc("tessera run options");
  add_program_options(desc, src);
  desc.add_options()
      ("target", po::value(&target_name)->value_name("auto|sim|cuda"), "where to run (default auto: cuda when a GPU is present, else sim)")
      ("seed", po::value(&seed)->value_name("N"), "seed of the random input data (default 0)")
      ("sample-knobs", po::value(&sample_seed)->value_name("SEED"), "pick a random valid value for every knob not pinned in the pipeline (seeded)")
      ("rtol", po::value(&rtol)->value_name("R"), "relative tolerance (default: 1e-4 for f32, 2e-2 f16, 1e-1 bf16)")
      ("bench", "time the kernels (needs the cuda target)")
      ("time-passes", "print the time spent in each pass (stderr)")
      ("verify-each", "run the IR verifier after every pass");
  add_global_options(desc, flags);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, {}, vm, "tessera run -c EXPR [--target auto|sim|cuda] [options]")) return *code;

  auto session = open_session(flags, std::cerr);
  if (!session) return kExitError;
  int exit_code = kExitOk;
  auto target = pick_target(session->host.registry(), target_name, exit_code);
  if (!target) return exit_code;
  if (vm.count("bench") && target->name() != "cuda") {
    std::cerr << "error: tessera run --bench: timing needs the cuda target; '" << target->name()
              << "' checks results only\n";
    return kExitUsage;
  }
  Dialect stop = target->input_dialect();
  auto stage_passes = session->pipeline.stages.find(stop);
  if (stop != Dialect::Torch &&
      (stage_passes == session->pipeline.stages.end() || stage_passes->second.empty())) {
    std::cerr << "error: tessera run: target '" << target->name() << "' runs "
              << dialect_name(stop) << " IR, but pipeline '" << session->pipeline.name
              << "' has no passes for that stage\n";
    return kExitUsage;
  }

  auto graph = load_program(*session, src, std::cerr);
  if (!graph) return kExitUsage;
  if (graph->stage() > Dialect::Torch) {
    std::cerr << "error: tessera run: the program is already in " << dialect_name(graph->stage())
              << " IR; run needs Torch IR to compute the reference it checks against\n";
    return kExitUsage;
  }
  const Graph reference_graph = *graph;

  std::unique_ptr<RandomChoiceSource> sampler;
  if (vm.count("sample-knobs")) sampler = std::make_unique<RandomChoiceSource>(sample_seed);
  RunnerOptions ro;
  ro.stop_after = stop;
  ro.time_passes = vm.count("time-passes") > 0;
  ro.verify_each = vm.count("verify-each") > 0;
  ro.verbosity = flags.verbosity;
  ro.device = session->device;
  ro.tuner = sampler.get();
  ro.out = &std::cerr;  // stdout carries the result table only
  ro.err = &std::cerr;
  DiagnosticEngine diags;
  PipelineRunner runner(session->host.registry(), session->pipeline, ro);
  Status st = runner.run(*graph, diags);
  std::cerr << diags.render_all();
  if (!st) {
    report(std::cerr, st.error());
    return kExitUsage;
  }

  ValueMap inputs = make_inputs(reference_graph, seed);
  auto expected = evaluate_reference(reference_graph, inputs);
  if (!expected) return report(std::cerr, expected.error());

  TargetOptions to;
  to.arch = flags.arch.empty() ? session->device->arch : flags.arch;
  to.device = session->device;
  auto ran = target->execute(*graph, inputs, to);
  if (!ran) return report(std::cerr, ran.error());

  std::ostringstream out;
  out << "target: " << target->name() << "  device: " << session->device->name << " (" << to.arch
      << ")  inputs: seed " << seed;
  if (sampler) out << "  knobs: sampled (seed " << sample_seed << ")";
  out << "\n";
  out << "kernels (" << ran->launches.size() << "):\n";
  for (const KernelLaunch& k : ran->launches) {
    out << "  " << k.kernel << "  grid=" << int_tuple(k.grid) << " block=" << int_tuple(k.block)
        << "  -> " << k.node << "\n";
  }
  out << "outputs:\n";
  bool all_ok = true;
  for (const std::string& name : graph->outputs()) {
    auto e = expected->find(name);
    const Node* node = graph->find(name);
    double tol = rtol > 0 ? rtol : default_output_rtol(node ? node->type.dtype : DType::F32);
    if (e == expected->end() || !ran->outputs.count(name)) {
      out << "  " << name << "  missing from the " << (e == expected->end() ? "reference" : "target run") << "\n";
      all_ok = false;
      continue;
    }
    auto cmp = compare_output(*expected, ran->outputs, name);
    if (!cmp) return report(std::cerr, cmp.error());
    bool ok = cmp->within(tol);
    all_ok = all_ok && ok;
    out << "  " << name << "  max abs err " << format_error(cmp->max_abs_error) << "  max rel err "
        << format_error(cmp->max_rel_error) << "  (" << cmp->elements << " elements, rtol "
        << format_error(tol) << ")  " << (ok ? "ok" : "MISMATCH") << "\n";
  }
  int written = emit_output(flags, out.str(), std::cerr);
  if (written != kExitOk) return written;
  return all_ok ? kExitOk : kExitError;
}

int tune_command(int argc, char** argv, int first) { return needs_tuner(argc, argv, first); }

}  // namespace tessera::cli

// `tessera run`: compile a program through the pipeline, run it on a target with seeded inputs, and
// check every output against the reference evaluator. `--bench` then times every kernel on the
// target (cuda) and prints a per-kernel table (and `--json FILE`); `--save-io FILE` writes the
// run's inputs, parameters and outputs as safetensors (run_io_file.h); `--profile` re-runs the
// command under Nsight Compute when `ncu` is on PATH; `--tune-db FILE` replays tuned decisions.
//
// Exit codes: 0 every output within tolerance, 1 an output outside it or a target error, 2 a
// usage or compile error (the program never ran).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

#include "cli_session.h"
#include "commands.h"
#include "tuning_replay.h"
#include "compile_program.h"
#include "external_command.h"
#include "kernel_report_text.h"
#include "kernel_timing_table.h"
#include "program_run.h"
#include "progress_line.h"
#include "run_io_file.h"
#include "tessera/target/kernel_cost.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"
#include "tessera/tune/choice_source.h"

namespace tessera::cli {

namespace {

// The simulator's default work bound (--sim-work-limit), and its typical speed on this kind of
// machine (30 to 50 M units/s: a 1024x1024x1024 f32 matmul, 2.2e9 units, in about a minute).
constexpr double kDefaultSimWorkLimit = 1e10;
constexpr double kSimWorkPerSecond = 3e7;

// "2.7e+08" -> "270 M", "1.4e+11" -> "137 G".
std::string format_work(double units) {
  char buf[32];
  if (units >= 1e9) std::snprintf(buf, sizeof buf, units >= 1e11 ? "%.0f G" : "%.1f G", units / 1e9);
  else std::snprintf(buf, sizeof buf, "%.0f M", units / 1e6);
  return buf;
}

// An estimate for people: "40 s", "46 min", "3.8 hours".
std::string format_duration(double seconds) {
  char buf[32];
  if (seconds < 120) std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  else if (seconds < 7200) std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  else std::snprintf(buf, sizeof buf, "%.1f hours", seconds / 3600);
  return buf;
}

std::string format_error(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Re-runs this `tessera run` command (without the timing flags) under Nsight Compute.
int profile_with_ncu(int argc, char** argv) {
  const std::string ncu = find_on_path("ncu");
  if (ncu.empty()) {
    std::cerr << "note: tessera run --profile: ncu was not found on PATH; nothing profiled\n";
    return kExitOk;
  }
  std::error_code ec;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) self = argv[0];
  std::string cmd = shell_quote(ncu) +
                    " --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed " +
                    shell_quote(self);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--profile" || a == "--bench" || a == "--graphs" || a == "--flush-l2") continue;
    if (a == "--json" || a == "--iterations") {
      ++i;
      continue;
    }
    if (a.rfind("--json=", 0) == 0 || a.rfind("--iterations=", 0) == 0) continue;
    cmd += " " + shell_quote(a);
  }
  std::cout.flush();
  std::cerr << "profiling: " << cmd << "\n";
  const int rc = std::system(cmd.c_str());
  return rc == 0 ? kExitOk : kExitError;
}

// ", as f16" when an output's tolerance comes from a narrower dtype on its path than its own.
std::string precision_note(const Graph& g, const OutputCheck& c) {
  const Node* n = g.find(c.name);
  if (c.rtol == 0 || !n || n->type.dtype == c.precision) return "";
  return ", as " + std::string(dtype_short_name(c.precision));
}

// --check-intermediates: walks the launches in order and reports the first kernel whose output
// buffer differs from the reference beyond tolerance (--rtol, else ten times the node's output
// tolerance, output_tolerance in the Torch IR `reference_graph`), with its IR. Returns kExitError
// after reporting one, kExitOk when all agree.
int report_first_divergence(const Graph& g, const Graph& reference_graph, const ValueMap& expected,
                            const TargetRun& ran, double rtol) {
  size_t checked = 0;
  for (const KernelLaunch& k : ran.launches) {
    const Node* n = g.find(k.node);
    if (!n || !expected.count(k.node) || !ran.outputs.count(k.node)) continue;
    const OutputTolerance tolerance = output_tolerance(reference_graph, k.node);
    Expected<ValueComparison> cmp = compare_output(expected, ran.outputs, k.node, tolerance);
    if (!cmp) return report(std::cerr, cmp.error());
    ++checked;
    // Rounding differences compound along the program, so an intermediate buffer gets ten times
    // the tolerance of an output (--rtol sets both); a wrong kernel is off by far more.
    const double tol = rtol > 0 ? rtol : 10 * tolerance.rtol;
    if (cmp->within(tol)) continue;
    std::cerr << "error: tessera run --check-intermediates: kernel " << k.kernel << " (launch " << checked
              << ", output '" << k.node << "') diverges from the reference: " << cmp->str() << " (rtol "
              << format_error(tol) << "); every kernel before it agrees. Its IR:\n"
              << print_node(g, *n);
    return kExitError;
  }
  std::cerr << "note: --check-intermediates: the outputs of all " << checked
            << " kernels with a reference value agree with the reference\n";
  return kExitOk;
}


}  // namespace

int run_command(int argc, char** argv, int first) {
  GlobalFlags flags;
  ProgramSource src;
  std::string target_name = "auto";
  uint64_t seed = 0;
  uint64_t sample_seed = 0;
  double rtol = 0;
  double memory_limit_gb = 0;
  double sim_work_limit_g = kDefaultSimWorkLimit / 1e9;
  std::string cache_dir;
  po::options_description desc("tessera run options");
  add_program_options(desc, src);
  desc.add_options()
      ("target", po::value(&target_name)->value_name("auto|sim|cuda"), "where to run (default auto: cuda when a GPU is present, else sim)")
      ("seed", po::value(&seed)->value_name("N"), "seed of the random input data (default 0)")
      ("sample-knobs", po::value(&sample_seed)->value_name("SEED"), "pick a random valid value for every knob not pinned in the pipeline (seeded)")
      ("rtol", po::value(&rtol)->value_name("R"), "relative tolerance (default: by the narrowest float dtype on the output's path: 1e-4 f32, 2^-7 f16, 2^-4 bf16, 1e-9 f64)")
      ("cache-dir", po::value(&cache_dir)->value_name("DIR"), "kernel cache of the cuda target (default $XDG_CACHE_HOME/tessera or ~/.cache/tessera)")
      ("memory-limit", po::value(&memory_limit_gb)->value_name("GB"), "host memory the reference and the target's buffers may use (default: half the physical memory)")
      ("sim-work-limit", po::value(&sim_work_limit_g)->value_name("G"), "--target sim: the most estimated work (10^9 operations and 4-byte words moved) to simulate (default 10)")
      ("bench", "time the kernels (needs the cuda target) and print a per-kernel table")
      ("iterations", po::value<int>()->value_name("N"), "--bench: timed runs per kernel after warm-up (default 50)")
      ("graphs", "--bench: time the whole program replayed as a CUDA graph")
      ("flush-l2", "--bench: overwrite a buffer of twice the L2 size before every timed run")
      ("json", po::value<std::string>()->value_name("FILE"), "--bench: also write the table as JSON to FILE")
      ("save-io", po::value<std::string>()->value_name("FILE"), "write every input, parameter and output of the run to FILE (safetensors)")
      ("profile", "re-run the command under Nsight Compute (ncu) when it is on PATH")
      ("time-passes", "print the time spent in each pass (stderr)")
      ("verify-each", "run the IR verifier after every pass")
      ("check-intermediates", "compare every kernel's output buffer with the reference, in launch order, and name the first that diverges (with its IR)");
  add_model_options(desc, src.model);
  std::string tune_db;
  add_tune_db_option(desc, tune_db);
  add_global_options(desc, flags);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, model_positional(), vm,
                                     "tessera run -c EXPR [--target auto|sim|cuda] [options]\n"
                                     "       tessera run MODEL [--layer N] [--seq-len S | --decode --cache-len C] [options]"))
    return *code;

  for (const char* flag : {"iterations", "graphs", "flush-l2", "json"})
    if (vm.count(flag) && !vm.count("bench")) {
      std::cerr << "error: tessera run --" << flag << " only applies with --bench\n";
      return kExitUsage;
    }
  if (vm.count("iterations") && vm["iterations"].as<int>() < 1) {
    std::cerr << "error: tessera run --iterations must be at least 1\n";
    return kExitUsage;
  }
  auto session = open_session(flags, std::cerr);
  if (!session) return kExitError;
  int exit_code = kExitOk;
  auto target = pick_target(session->host.registry(), target_name, "tessera run", exit_code);
  if (!target) return exit_code;
  const std::optional<DeviceDesc> gpu = target->query_device();  // opens the driver: once
  if (gpu) adopt_gpu_device(*session, gpu->name, std::cerr);
  if (!open_tuning_replay(*session, tune_db, std::cerr)) return kExitError;
  if (vm.count("bench") && target->name() != "cuda") {
    std::cerr << "error: tessera run --bench: timing needs the cuda target; '" << target->name()
              << "' checks results only\n";
    return kExitUsage;
  }
  if (!pipeline_reaches_target(*session, *target, "tessera run", std::cerr)) return kExitUsage;

  auto graph = load_program(*session, src, std::cerr);
  if (!graph) return kExitUsage;
  if (graph->stage() > Dialect::Torch) {
    std::cerr << "error: tessera run: the program is already in " << dialect_name(graph->stage())
              << " IR; run needs Torch IR to compute the reference it checks against\n";
    return kExitUsage;
  }
  const Graph reference_graph = *graph;
  if (vm.count("memory-limit") && !(memory_limit_gb > 0)) {
    std::cerr << "error: tessera run --memory-limit must be a positive number of GB\n";
    return kExitUsage;
  }
  if (Status mem = check_host_memory(reference_graph, vm.count("memory-limit") ? memory_limit_gb * (1 << 30)
                                                                               : default_memory_limit());
      !mem) {
    std::cerr << "error: tessera run: " << mem.error().message << "\n";
    return kExitError;
  }

  std::unique_ptr<RandomChoiceSource> sampler;
  if (vm.count("sample-knobs")) sampler = std::make_unique<RandomChoiceSource>(sample_seed);
  RunnerOptions ro;
  ro.time_passes = vm.count("time-passes") > 0;
  ro.verify_each = vm.count("verify-each") > 0;
  ro.verbosity = flags.verbosity;
  ro.tuner = sampler.get();
  ro.out = &std::cerr;  // stdout carries the result table only
  ro.err = &std::cerr;
  // -v: the static kernel report, computed once from the Kernel IR as the pipeline passes it.
  std::optional<Expected<std::vector<KernelReport>>> kernel_reports;
  if (flags.verbosity >= 1)
    ro.on_stage_end = [&kernel_reports](Dialect stage, const Graph& g) {
      if (stage == Dialect::Kernel) kernel_reports = KernelReport::of_program(g);
    };
  // --bench counts each kernel's bytes and flops in its Kernel IR body: keep that stage's graph.
  Graph kernel_ir;
  if (Status st = lower_for_target(*session, *target, ro, *graph, vm.count("bench") ? &kernel_ir : nullptr, std::cerr);
      !st) {
    report(std::cerr, st.error());
    return kExitUsage;
  }
  if (session->tuning_replay) std::cerr << session->tuning_replay->summary();

  // The simulator (and the reference beside it) runs at tens of millions of operations a second:
  // refuse at once what would take hours, saying how long and how to allow it.
  if (target->name() == "sim") {
    if (!(sim_work_limit_g > 0)) {
      std::cerr << "error: tessera run --sim-work-limit must be a positive number (10^9 units)\n";
      return kExitUsage;
    }
    const double work = KernelCost::program_work(*graph);
    if (work > sim_work_limit_g * 1e9) {
      std::cerr << "error: tessera run: simulating this program is about " << format_work(work)
                << " of work (operations plus 4-byte words moved), about " << format_duration(work / kSimWorkPerSecond)
                << " at the simulator's typical " << format_work(kSimWorkPerSecond)
                << "/s; the limit is " << format_work(sim_work_limit_g * 1e9)
                << " (--sim-work-limit G raises it; --target cuda runs it on a GPU)\n";
      return kExitError;
    }
  }

  TargetOptions to = target_options(*session, gpu, flags.arch, cache_dir);
  if (kernel_reports) {
    if (!*kernel_reports) return report(std::cerr, kernel_reports->error());
    // The registers come from compiling the kernels (the cache makes the run's own build free);
    // a target that compiles nothing ahead (sim) leaves them unknown, as does a failed build,
    // which the run itself then reports.
    KernelRegisters registers;
    if (auto built = target->build(*graph, to))
      for (const KernelBuild& k : *built) registers[k.kernel] = k.registers;
    std::cerr << kernel_report_text(**kernel_reports, *session->device, registers);
  }

  ValueMap inputs = make_inputs(reference_graph, seed);
  auto expected = evaluate_reference(reference_graph, inputs);
  if (!expected) return report(std::cerr, expected.error());

  ProgressLine progress(std::cerr, isatty(STDERR_FILENO) != 0, std::string(target->name()));
  to.progress = [&progress](const TargetProgress& p) {
    progress.update(p.kernel, p.total > 0 ? p.done / p.total : 0.0);
  };
  // --check-intermediates: every kernel's buffer becomes an output of the run, so the target
  // returns it; the reference evaluator already computes every Torch IR node, and a kernel keeps
  // the id of the node whose value it computes.
  const bool check_intermediates = vm.count("check-intermediates") > 0;
  const std::vector<std::string> program_outputs = graph->outputs();
  if (check_intermediates)
    for (const Node* n : graph->nodes())
      if (n->dialect() > Dialect::Core && std::find(graph->outputs().begin(), graph->outputs().end(), n->id()) ==
                                              graph->outputs().end())
        graph->outputs().push_back(n->id());
  auto ran = target->execute(*graph, inputs, to);
  progress.finish();
  if (check_intermediates) {
    graph->outputs() = program_outputs;
    if (!ran) return report(std::cerr, ran.error());
    if (int code = report_first_divergence(*graph, reference_graph, *expected, *ran, rtol); code != kExitOk) return code;
  }
  if (!ran) return report(std::cerr, ran.error());
  for (const std::string& w : ran->warnings) std::cerr << "warning: " << w << "\n";

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
  auto checks = check_outputs(*graph, reference_graph, *expected, ran->outputs, rtol);
  if (!checks) return report(std::cerr, checks.error());
  bool all_ok = true;
  for (const OutputCheck& c : *checks) {
    all_ok = all_ok && c.ok;
    if (!c.missing_from.empty()) {
      out << "  " << c.name << "  missing from the " << c.missing_from << "\n";
      continue;
    }
    out << "  " << c.name << "  max abs err " << format_error(c.max_abs_error) << "  max rel err "
        << format_error(c.max_rel_error) << "  (" << c.elements << " elements, "
        << (c.rtol == 0 ? std::string("exact") : "rtol " + format_error(c.rtol)) << precision_note(*graph, c) << ")  "
        << (c.ok ? "ok" : "MISMATCH")
        << "\n";
  }
  if (vm.count("save-io")) {
    const std::string path = vm["save-io"].as<std::string>();
    std::optional<std::string> text = src.model.model.empty() ? program_text(src, std::cerr) : src.model.frontend_text();
    if (!text) return kExitError;
    const std::string& program = *text;
    if (Status saved = save_run_io(path, reference_graph, inputs, ran->outputs, program); !saved) {
      std::cerr << "error: tessera run --save-io: " << saved.error().render();
      return kExitError;
    }
  }
  if (vm.count("bench")) {
    BenchOptions bo;
    if (vm.count("iterations")) bo.iterations = vm["iterations"].as<int>();
    bo.use_graphs = vm.count("graphs") > 0;
    bo.flush_l2 = vm.count("flush-l2") > 0;
    auto timed = target->bench(*graph, inputs, to, bo);
    if (!timed) return report(std::cerr, timed.error());
    const std::vector<BenchRow> rows = bench_rows(*timed, kernel_ir);
    out << bench_table(*timed, rows);
    if (vm.count("json")) {
      std::ofstream f(vm["json"].as<std::string>());
      f << bench_json(*timed, rows);
      if (!f) {
        std::cerr << "error: tessera run --json: cannot write " << vm["json"].as<std::string>() << "\n";
        return kExitError;
      }
    }
  }
  int written = emit_output(flags, out.str(), std::cerr);
  if (written != kExitOk) return written;
  if (vm.count("profile")) {
    if (int rc = profile_with_ncu(argc, argv); rc != kExitOk) return rc;
  }
  return all_ok ? kExitOk : kExitError;
}


}  // namespace tessera::cli

// `tessera compile`: run the pipeline up to a stage and print that stage's IR.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "cli_session.h"
#include "commands.h"
#include "tuning_replay.h"
#include "compile_program.h"
#include "kernel_report_text.h"
#include "model_summary.h"
#include "progress_line.h"
#include "tessera/ir/printer.h"
#include "tessera/target/target.h"
#include "tessera/ir/serialize.h"
#include "tessera/tune/choice_source.h"

namespace tessera::cli {

namespace {

// `--ir cuda -v` / `--emit ptx` / `--emit report`: compiles every kernel with the cuda target
// (NVRTC, through the cache, each distinct source once); with -v prints one line per distinct
// kernel to stderr; with `ptx` collects each kernel's PTX (once per distinct kernel); `registers`
// gets each kernel's registers per thread (the static report's register limit). A long build shows a progress line
// on stderr (see ProgressLine): on a terminal after half a second, elsewhere after two seconds.
int build_kernels(const Session& session, const Graph& g, const std::string& cache_dir_flag, int verbosity,
                  std::string* ptx, KernelRegisters* registers) {
  std::unique_ptr<Target> target = session.host.registry().make_target("cuda");
  if (!target) {
    std::cerr << "error: --ir cuda -v compiles the kernels with the cuda target, which is not loaded\n";
    return kExitError;
  }
  TargetOptions to;
  to.arch = session.pipeline.target.arch.empty() ? session.device->arch : session.pipeline.target.arch;
  to.device = session.device;
  to.cache_dir = default_cache_dir(cache_dir_flag);
  to.want_ptx = ptx != nullptr;
  const bool terminal = isatty(STDERR_FILENO) != 0;
  ProgressLine progress(std::cerr, terminal, "nvrtc", terminal ? 0.5 : 2.0);
  to.progress = [&progress](const TargetProgress& p) {
    progress.update(p.kernel, p.total > 0 ? p.done / p.total : 0.0);
  };
  auto built = target->build(g, to);
  progress.finish();
  if (!built) return report(std::cerr, built.error());
  for (const KernelBuild& k : *built)
    if (!k.cache_warning.empty()) {
      std::cerr << "warning: " << k.cache_warning << "\n";
      break;
    }
  // Nodes that share a kernel (the same name and source: the layers of a model) are listed with
  // the first of them.
  std::map<std::string, std::string> first_node;  // kernel name -> the first node using it
  std::map<std::string, int> uses;
  for (const KernelBuild& k : *built) {
    first_node.emplace(k.kernel, k.node);
    ++uses[k.kernel];
    if (registers) (*registers)[k.kernel] = k.registers;
  }
  for (const KernelBuild& k : *built) {
    const std::string& first = first_node.at(k.kernel);
    if (ptx) {
      *ptx += "// kernel " + k.kernel + "  " + k.arch + "  (node " + k.node + ")";
      *ptx += first == k.node ? "\n" + k.ptx + "\n" : ": the PTX of node " + first + "\n";
    }
    if (verbosity < 1 || first != k.node) continue;
    std::cerr << k.kernel << "  " << k.arch << "  regs " << k.registers << "  smem " << k.shared_bytes
              << " B  spills " << (k.spill_store_bytes + k.spill_load_bytes) << " B  ("
              << (k.from_cache ? "cached" : "compiled") << ")";
    if (const int n = uses.at(k.kernel); n > 1) std::cerr << "  shared by " << n << " nodes";
    std::cerr << "\n";
  }
  return kExitOk;
}

// The static report of every kernel (computed when the pipeline finished the kernel stage; nothing
// when it did not run): the text, or an error.
Expected<std::string> kernel_report_of(const Session& session,
                                       const std::optional<Expected<std::vector<KernelReport>>>& reports,
                                       const KernelRegisters& registers) {
  if (!reports) return std::string();
  if (!*reports) return reports->error();
  return kernel_report_text(**reports, *session.device, registers);
}

}  // namespace

int compile_command(int argc, char** argv, int first) {
  GlobalFlags flags;
  ProgramSource src;
  std::string ir, emit = "text", dump_dir, cache_dir;
  std::vector<std::string> print_after, print_diff;
  uint64_t sample_seed = 0;
  po::options_description desc("tessera compile options");
  add_program_options(desc, src);
  desc.add_options()
      ("ir", po::value(&ir)->value_name("STAGE"), "stop after STAGE and print it: torch|tensor|loop|tile|kernel|cuda (default: the pipeline's last stage)")
      ("emit", po::value(&emit)->value_name("text|json|ptx|report"), "print the IR as text (default) or graph JSON, or (with the cuda stage) every kernel's PTX from NVRTC, or (kernel or cuda stage) the static kernel report")
      ("print-pipeline", "print the effective pipeline (defaults filled in) as YAML and exit")
      ("time-passes", "print the time spent in each pass (stderr)")
      ("print-ir-after", po::value(&print_after)->value_name("PASS")->composing(), "print the IR after every application of PASS")
      ("print-ir-after-all", "print the IR after every pass")
      ("print-diff", po::value(&print_diff)->value_name("PASS")->composing(), "print the diff of every application of PASS (its -vv block alone)")
      ("verify-each", "run the IR verifier after every pass")
      ("sample-knobs", po::value(&sample_seed)->value_name("SEED"), "pick a random valid value for every knob not pinned in the pipeline (seeded)")
      ("dump-dir", po::value(&dump_dir)->value_name("DIR"), "write every stage to DIR as text and JSON")
      ("cache-dir", po::value(&cache_dir)->value_name("DIR"), "kernel cache for --ir cuda -v (default $XDG_CACHE_HOME/tessera or ~/.cache/tessera)");
  add_model_options(desc, src.model);
  std::string tune_db;
  add_tune_db_option(desc, tune_db);
  add_global_options(desc, flags);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, model_positional(), vm,
                                     "tessera compile -c EXPR [--ir STAGE] [options]\n"
                                     "       tessera compile MODEL [--layer N] [--seq-len S | --decode --cache-len C] [--ir STAGE] [options]"))
    return *code;
  if (emit != "text" && emit != "json" && emit != "ptx" && emit != "report") {
    std::cerr << "error: --emit must be 'text', 'json', 'ptx' or 'report', got '" << emit << "'\n";
    return kExitUsage;
  }

  auto session = open_session(flags, std::cerr);
  if (!session) return kExitError;
  if (!open_tuning_replay(*session, tune_db, std::cerr)) return kExitError;
  if (vm.count("print-pipeline")) return emit_output(flags, print_pipeline(session->pipeline, session->host.registry()), std::cerr);

  auto stop = resolve_stop_stage(*session, ir, std::cerr);
  if (!stop) return kExitUsage;
  if (emit == "report" && *stop < Dialect::Kernel) {
    std::cerr << "error: --emit report needs the kernel or cuda stage (the report is of Kernel IR kernels); the "
                 "compile stops at "
              << dialect_name(*stop) << "\n";
    return kExitUsage;
  }
  const auto started = std::chrono::steady_clock::now();
  auto graph = load_program(*session, src, std::cerr);
  if (!graph) return kExitError;
  // A whole model prints a summary unless a stage or a format is asked for.
  const bool model_summary = !src.model.model.empty() && ir.empty() && !vm.count("emit");
  ModelSummary summary;
  if (model_summary) count_model(*graph, summary);

  RunnerOptions ro;
  ro.stop_after = *stop;
  ro.time_passes = vm.count("time-passes") > 0;
  ro.print_ir_after_all = vm.count("print-ir-after-all") > 0;
  ro.print_ir_after = {print_after.begin(), print_after.end()};
  ro.print_diff = {print_diff.begin(), print_diff.end()};
  ro.verify_each = vm.count("verify-each") > 0;
  ro.dump_dir = dump_dir;
  ro.verbosity = flags.verbosity;
  ro.device = session->device;
  // -v and --emit report: the static kernel report, computed once from the Kernel IR as the
  // pipeline passes it.
  std::optional<Expected<std::vector<KernelReport>>> kernel_reports;
  if ((flags.verbosity >= 1 || emit == "report") && *stop >= Dialect::Kernel)
    ro.on_stage_end = [&kernel_reports](Dialect stage, const Graph& g) {
      if (stage == Dialect::Kernel) kernel_reports = KernelReport::of_program(g);
    };
  std::unique_ptr<RandomChoiceSource> sampler;
  if (vm.count("sample-knobs")) sampler = std::make_unique<RandomChoiceSource>(sample_seed);
  ro.tuner = sampler.get();
  ro.out = &std::cout;
  ro.err = &std::cerr;
  for (const auto* names : {&print_after, &print_diff}) {
    for (const auto& p : *names) {
      if (!session->host.registry().has(ComponentKind::Pass, p)) {
        std::cerr << "error: " << (names == &print_after ? "--print-ir-after" : "--print-diff")
                  << ": unknown pass '" << p << "'\n";
        return kExitUsage;
      }
    }
  }
  if (session->tuning_replay) session->tuning_replay->attach(ro);
  DiagnosticEngine diags;
  PipelineRunner runner(session->host.registry(), session->pipeline, ro);
  Status st = runner.run(*graph, diags);
  std::cerr << diags.render_all();
  if (session->tuning_replay) std::cerr << session->tuning_replay->summary();
  if (!st) return report(std::cerr, st.error());
  if (model_summary) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    count_kernels(*graph, summary);
    KernelRegisters registers;
    if (*stop == Dialect::Cuda && flags.verbosity >= 1)
      if (int code = build_kernels(*session, *graph, cache_dir, flags.verbosity, nullptr, &registers); code != kExitOk)
        return code;
    auto text = kernel_report_of(*session, kernel_reports, registers);
    if (!text) return report(std::cerr, text.error());
    std::cerr << *text;
    return emit_output(flags, print_model_summary(src.model.model, std::string(dialect_name(*stop)), summary, seconds),
                       std::cerr);
  }
  if (emit == "ptx" && *stop != Dialect::Cuda) {
    std::cerr << "error: --emit ptx needs the cuda stage (--ir cuda, or a pipeline that ends there)\n";
    return kExitUsage;
  }
  KernelRegisters registers;
  if (*stop == Dialect::Cuda && (flags.verbosity >= 1 || emit == "ptx" || emit == "report")) {
    std::string ptx;
    if (int code = build_kernels(*session, *graph, cache_dir, flags.verbosity, emit == "ptx" ? &ptx : nullptr,
                                 &registers);
        code != kExitOk)
      return code;
    if (emit == "ptx") return emit_output(flags, ptx, std::cerr);
  }
  auto kernel_report = kernel_report_of(*session, kernel_reports, registers);
  if (!kernel_report) return report(std::cerr, kernel_report.error());
  if (emit == "report") return emit_output(flags, *kernel_report, std::cerr);
  std::cerr << *kernel_report;
  return emit_output(flags, emit == "json" ? graph_to_json_text(*graph) : print_graph(*graph), std::cerr);
}

}  // namespace tessera::cli

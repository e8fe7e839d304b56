// `tessera ab A.yaml B.yaml -c EXPR`: compile one program with two pipelines and show how the
// results differ (a unified diff of the printed IR at the same stage), and, when both reach Kernel
// IR, their static kernel reports side by side (kernel_report_text.h; no GPU needed).
//
// `--bench` times both on the GPU instead: each side is compiled to CUDA IR, loaded once through
// the cuda plugin's timing extension (plugins/targets/cuda/timing_extension.h), run once and its
// outputs checked against the reference evaluator (as `tessera run` does), warmed up, then timed
// in interleaved whole-program runs A, B, A, B, ... (so drift and clock changes hit both sides
// alike). The report gives each side's median and the latency ratio B/A with a bootstrap 95%
// interval and a verdict (ab_stats.h), then each kernel timed alone beside its static report.
// Without a GPU it says so and exits 1.
//
// Exit codes: 0 compared, 1 a target error, a mismatching output or no GPU, 2 a usage or compile
// error. Tests: tests/e2e/cli_test.cpp (IR diff), tests/unit/ab_stats_test.cpp,
// tests/unit/kernel_bench_test.cpp (--bench without a GPU).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "ab_stats.h"
#include "cli_session.h"
#include "commands.h"
#include "compile_program.h"
#include "kernel_report_text.h"
#include "plugins/targets/cuda/timing_extension.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/printer.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/unified_diff.h"
#include "tessera/target/target.h"

namespace tessera::cli {

namespace {

// One pipeline's compile for the IR comparison: the printed IR and, when the pipeline reaches
// Kernel IR, the static kernel report on its device.
struct CompiledSide {
  std::string ir;
  std::optional<std::vector<KernelReport>> reports;
  KernelRegisters registers;  // from NVRTC when the side reaches CUDA IR and it is available
  DeviceDesc device;
};

// Compiles with one pipeline file; prints errors.
std::optional<CompiledSide> compile_with(const std::string& pipeline, GlobalFlags flags, const ProgramSource& src,
                                         const std::string& ir, const std::string& cache_dir) {
  flags.pipeline = pipeline;
  auto session = open_session(flags, std::cerr);
  if (!session) return std::nullopt;
  auto stop = resolve_stop_stage(*session, ir, std::cerr);
  if (!stop) return std::nullopt;
  auto graph = load_program(*session, src, std::cerr);
  if (!graph) return std::nullopt;
  CompiledSide side;
  side.device = *session->device;
  std::optional<Expected<std::vector<KernelReport>>> reports;
  RunnerOptions ro;
  ro.stop_after = *stop;
  ro.device = session->device;
  ro.err = &std::cerr;
  ro.on_stage_end = [&reports](Dialect stage, const Graph& g) {
    if (stage == Dialect::Kernel) reports = KernelReport::of_program(g);
  };
  DiagnosticEngine diags;
  Status st = PipelineRunner(session->host.registry(), session->pipeline, ro).run(*graph, diags);
  std::cerr << diags.render_all();
  if (!st) {
    report(std::cerr, st.error());
    return std::nullopt;
  }
  if (reports) {
    if (!*reports) {
      report(std::cerr, reports->error());
      return std::nullopt;
    }
    side.reports = std::move(**reports);
  }
  // Registers per thread from NVRTC (no GPU needed); without it the report leaves them unknown.
  if (*stop == Dialect::Cuda)
    if (std::unique_ptr<Target> cuda = session->host.registry().make_target("cuda")) {
      TargetOptions to;
      to.arch = session->pipeline.target.arch.empty() ? session->device->arch : session->pipeline.target.arch;
      to.device = session->device;
      to.cache_dir = default_cache_dir(cache_dir);
      if (auto built = cuda->build(*graph, to))
        for (const KernelBuild& k : *built) side.registers[k.kernel] = k.registers;
    }
  side.ir = print_graph(*graph);
  return side;
}

struct BenchFlags {
  int iterations = 200;
  uint64_t seed = 0;
  double rtol = 0;
  std::string cache_dir;
};

// One side of `ab --bench`: its pipeline's session (which keeps the plugins loaded while the
// program lives), the program loaded on the GPU and the result of its check.
struct BenchSide {
  std::string pipeline;
  std::unique_ptr<Session> session;
  std::unique_ptr<TimedProgram> program;
  std::string check;  // one line per output
  bool outputs_ok = true;
  int warmup = 0;
  std::vector<double> runs_us;
  std::vector<KernelReport> reports;  // the static report of its Kernel IR
  KernelTimes kernel_us;              // each kernel's median, timed alone
};

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Compiles the program with `side.pipeline` to CUDA IR, loads it on the GPU, runs it once and
// compares its outputs with the reference. Returns an exit code on failure (after printing why).
std::optional<int> prepare_side(BenchSide& side, GlobalFlags flags, const ProgramSource& src, const BenchFlags& bench) {
  flags.pipeline = side.pipeline;
  side.session = open_session(flags, std::cerr);
  if (!side.session) return kExitError;
  Session& s = *side.session;
  const Registry& registry = s.host.registry();
  if (!registry.has(ComponentKind::Target, "cuda")) {
    std::cerr << "error: tessera ab --bench: no cuda target plugin is installed\n";
    return kExitUsage;
  }
  if (std::string why; !registry.make_target("cuda")->available(&why)) {
    std::cerr << "error: tessera ab --bench needs a GPU: " << why << "\n";
    return kExitError;
  }
  auto stages = s.pipeline.stages.find(Dialect::Cuda);
  if (stages == s.pipeline.stages.end() || stages->second.empty()) {
    std::cerr << "error: tessera ab --bench: pipeline '" << s.pipeline.name << "' (" << side.pipeline
              << ") has no passes for the cuda stage\n";
    return kExitUsage;
  }
  auto graph = load_program(s, src, std::cerr);
  if (!graph) return kExitUsage;
  if (graph->stage() > Dialect::Torch) {
    std::cerr << "error: tessera ab --bench: the program is already in " << dialect_name(graph->stage())
              << " IR; the check needs Torch IR to compute the reference\n";
    return kExitUsage;
  }
  const Graph reference_graph = *graph;
  std::optional<Expected<std::vector<KernelReport>>> reports;
  RunnerOptions ro;
  ro.stop_after = Dialect::Cuda;
  ro.device = s.device;
  ro.out = &std::cerr;
  ro.err = &std::cerr;
  ro.on_stage_end = [&reports](Dialect stage, const Graph& g) {
    if (stage == Dialect::Kernel) reports = KernelReport::of_program(g);
  };
  DiagnosticEngine diags;
  Status st = PipelineRunner(registry, s.pipeline, ro).run(*graph, diags);
  std::cerr << diags.render_all();
  if (!st) {
    report(std::cerr, st.error());
    return kExitUsage;
  }
  if (reports) {
    if (!*reports) return report(std::cerr, reports->error());
    side.reports = std::move(**reports);
  }

  const ValueMap inputs = make_inputs(reference_graph, bench.seed);
  auto expected = evaluate_reference(reference_graph, inputs);
  if (!expected) return report(std::cerr, expected.error());
  auto extension = find_timing_extension(registry);
  if (!extension) return report(std::cerr, extension.error());
  TargetOptions to;
  to.arch = flags.arch;  // empty: the GPU's own
  to.device = s.device;
  to.cache_dir = default_cache_dir(bench.cache_dir);
  auto program = (*extension)->open(*graph, inputs, to, TimingOptions{});
  if (!program) return report(std::cerr, program.error());
  side.program = std::move(*program);
  for (const std::string& w : side.program->warnings()) std::cerr << "warning: " << w << "\n";

  // The first run is checked, as `tessera run` checks its one run.
  if (auto first = side.program->time_program(); !first) return report(std::cerr, first.error());
  auto outputs = side.program->outputs();
  if (!outputs) return report(std::cerr, outputs.error());
  std::ostringstream check;
  for (const std::string& name : graph->outputs()) {
    const OutputTolerance tolerance = output_tolerance(reference_graph, name);
    const double tol = bench.rtol > 0 && tolerance.rtol > 0 ? bench.rtol : tolerance.rtol;
    auto cmp = compare_output(*expected, *outputs, name, tolerance);
    if (!cmp) return report(std::cerr, cmp.error());
    const bool ok = cmp->within(tol);
    side.outputs_ok = side.outputs_ok && ok;
    check << "     " << name << "  max rel err " << short_number(cmp->max_rel_error) << " (rtol " << short_number(tol)
          << ")  " << (ok ? "ok" : "MISMATCH") << "\n";
  }
  side.check = check.str();
  return std::nullopt;
}

int ab_bench(const std::string& a, const std::string& b, const GlobalFlags& flags, const ProgramSource& src,
             const BenchFlags& bench) {
  BenchSide sides[2];
  sides[0].pipeline = a;
  sides[1].pipeline = b;
  for (BenchSide& side : sides)
    if (auto code = prepare_side(side, flags, src, bench)) return *code;

  std::ostringstream os;
  const TimedProgram& pa = *sides[0].program;
  os << "ab --bench: " << pa.device().full_name << " (" << pa.device().arch << "), " << bench.iterations
     << " interleaved whole-program runs per side after warm-up, inputs: seed " << bench.seed << "\n";
  const char* letter[2] = {"A", "B"};
  auto describe = [&](int i, const std::string& timing) {
    const BenchSide& side = sides[i];
    const size_t kernels = side.program->kernels().size();
    os << "  " << letter[i] << "  " << side.pipeline << "  (" << kernels << (kernels == 1 ? " kernel)" : " kernels)") << timing
       << "\n"
       << side.check;
  };
  if (!sides[0].outputs_ok || !sides[1].outputs_ok) {
    describe(0, "");
    describe(1, "");
    os << "  not timed: an output does not match the reference\n";
    const int written = emit_output(flags, os.str(), std::cerr);
    return written != kExitOk ? written : kExitError;
  }

  for (BenchSide& side : sides) {
    auto warm = side.program->warm_up_program(/*max_runs=*/200);
    if (!warm) return report(std::cerr, warm.error());
    side.warmup = *warm;
  }
  for (int i = 0; i < bench.iterations; ++i)
    for (BenchSide& side : sides) {
      auto us = side.program->time_program();
      if (!us) return report(std::cerr, us.error());
      side.runs_us.push_back(*us);
    }
  auto cmp = compare_latencies(sides[0].runs_us, sides[1].runs_us);
  if (!cmp) return report(std::cerr, cmp.error());
  describe(0, "  median " + fixed(cmp->median_a, 2) + " us  (" + std::to_string(sides[0].warmup) + " warm-up runs)");
  describe(1, "  median " + fixed(cmp->median_b, 2) + " us  (" + std::to_string(sides[1].warmup) + " warm-up runs)");
  const BootstrapOptions boot;
  os << "  B/A latency ratio " << fixed(cmp->ratio, 3) << "  95% CI [" << fixed(cmp->ci_low, 3) << ", "
     << fixed(cmp->ci_high, 3) << "]  (bootstrap of the ratio of medians: " << boot.resamples
     << " paired resamples, seed " << boot.seed << ")\n";
  os << "  verdict: " << ab_verdict_text(cmp->verdict) << "\n";

  // Each kernel timed alone (warmed up, then as many runs as the program had), beside its static
  // report; the registers are the compiled kernels' own.
  std::vector<ReportBlock> blocks[2];
  for (int i = 0; i < 2; ++i) {
    BenchSide& side = sides[i];
    const std::vector<KernelTiming>& kernels = side.program->kernels();
    KernelRegisters registers;
    for (size_t k = 0; k < kernels.size(); ++k) {
      registers[kernels[k].kernel] = kernels[k].registers;
      if (side.kernel_us.count(kernels[k].kernel)) continue;
      if (auto warm = side.program->warm_up_kernel(k, /*max_runs=*/200); !warm) return report(std::cerr, warm.error());
      std::vector<double> runs;
      for (int r = 0; r < bench.iterations; ++r) {
        auto us = side.program->time_kernel(k);
        if (!us) return report(std::cerr, us.error());
        runs.push_back(*us);
      }
      std::sort(runs.begin(), runs.end());
      side.kernel_us[kernels[k].kernel] = runs[runs.size() / 2];
    }
    blocks[i] = kernel_report_blocks(side.reports, *side.session->device, registers, &side.kernel_us);
  }
  os << "\n# static kernel report with each kernel timed alone: A (left) | B (right)\n";
  os << side_by_side(blocks[0], blocks[1]);
  return emit_output(flags, os.str(), std::cerr);
}

}  // namespace

int ab_command(int argc, char** argv, int first) {
  GlobalFlags flags;
  ProgramSource src;
  BenchFlags bench;
  std::string a, b, ir;
  po::options_description desc("tessera ab options");
  add_program_options(desc, src);
  desc.add_options()
      ("a", po::value(&a)->required()->value_name("A.yaml"), "first pipeline")
      ("b", po::value(&b)->required()->value_name("B.yaml"), "second pipeline")
      ("ir", po::value(&ir)->value_name("STAGE"), "compare at STAGE (default: each pipeline's last stage)")
      ("bench", "time both on the GPU (interleaved whole-program runs) instead of comparing IR")
      ("iterations", po::value(&bench.iterations)->value_name("N"), "--bench: timed runs per side after warm-up (default 200)")
      ("seed", po::value(&bench.seed)->value_name("N"), "--bench: seed of the random input data (default 0)")
      ("rtol", po::value(&bench.rtol)->value_name("R"), "--bench: relative tolerance of the output check (default: by dtype, as run)")
      ("cache-dir", po::value(&bench.cache_dir)->value_name("DIR"), "kernel cache (default as run): --bench, and the registers of the static report at the cuda stage");
  add_global_options(desc, flags);
  po::positional_options_description pos;
  pos.add("a", 1).add("b", 1);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, pos, vm, "tessera ab A.yaml B.yaml -c EXPR [--ir STAGE | --bench]")) return *code;

  if (vm.count("bench")) {
    if (vm.count("ir")) {
      std::cerr << "error: tessera ab: --ir compares IR; --bench times the compiled programs: give one of them\n";
      return kExitUsage;
    }
    if (bench.iterations < 2) {
      std::cerr << "error: tessera ab --iterations must be at least 2\n";
      return kExitUsage;
    }
    return ab_bench(a, b, flags, src, bench);
  }
  for (const char* flag : {"iterations", "seed", "rtol"})
    if (vm.count(flag)) {
      std::cerr << "error: tessera ab --" << flag << " only applies with --bench\n";
      return kExitUsage;
    }

  auto ta = compile_with(a, flags, src, ir, bench.cache_dir);
  if (!ta) return kExitError;
  auto tb = compile_with(b, flags, src, ir, bench.cache_dir);
  if (!tb) return kExitError;
  std::ostringstream os;
  os << "--- " << a << "\n+++ " << b << "\n";
  std::string diff = unified_diff(ta->ir, tb->ir);
  if (diff.empty()) os << "# the two pipelines produce identical IR\n";
  os << diff;
  // Both reach Kernel IR: their static kernel reports side by side.
  if (ta->reports && tb->reports) {
    os << "\n# static kernel report: A (left) | B (right)\n";
    os << side_by_side(kernel_report_blocks(*ta->reports, ta->device, ta->registers),
                       kernel_report_blocks(*tb->reports, tb->device, tb->registers));
  }
  return emit_output(flags, os.str(), std::cerr);
}

}  // namespace tessera::cli

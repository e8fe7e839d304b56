// tessera_kernel_bench: Google Benchmark of the kernels Tessera generates, on the GPU.
//
//   tessera_kernel_bench [-c EXPR]... [--suite FILE [--tier T] [--entries ID,...]]
//                        [--pipeline FILE] [--arch sm_XX] [--device NAME] [--plugin FILE]
//                        [--flush-l2] [--cache-dir DIR] [--seed N] [--benchmark_* flags]
//
// Every program (-c EXPR, or a suite entry) is compiled through the pipeline to CUDA IR; each of
// its kernels becomes one benchmark named `<entry id>/<kernel>` (`expr-<hash>/<kernel>` for -c,
// the hash being FNV-1a of the expression). A benchmark times single launches of its kernel with
// CUDA events (UseManualTime: every iteration's time is one launch's event time), after a warm-up
// until the time is stable, and reports bytes_per_second and flops_per_second from the Kernel IR's
// count of the kernel's work (KernelCost). Programs are loaded on the GPU lazily, one at a time
// (the one the running benchmark needs), through the cuda plugin's timing extension
// (plugins/targets/cuda/timing_extension.h), with inputs from the seeded generator of `tessera run`,
// and run once whole before any of its kernels is timed alone.
// Arguments this program does not know go to benchmark::Initialize, so --benchmark_filter,
// --benchmark_format=json, --benchmark_repetitions, ... work as usual.
//
// Without a GPU every benchmark is skipped with "no CUDA device: <the driver's reason>" and the
// exit status is 0 (Google Benchmark's convention for skips). A program that does not compile is
// an error before anything runs (exit 2); a kernel that fails on the GPU is skipped with the
// driver's message and makes the exit status 1.
// Tests: bench/check_kernel_bench.cmake (ctest kernel_bench_*), tests/unit/kernel_bench_test.cpp.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_session.h"
#include "compile_program.h"
#include "bench_suite.h"
#include "plugins/targets/cuda/driver_api.h"
#include "plugins/targets/cuda/timing_extension.h"
#include "tessera/eval/constant_data.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/kernel_cost.h"
#include "tessera/target/target.h"

namespace {

using namespace tessera;

constexpr const char* kUsage = R"(usage: tessera_kernel_bench [-c EXPR]... [--suite FILE [--tier T] [--entries ID,...]]
                            [--pipeline FILE] [--arch sm_XX] [--device NAME] [--plugin FILE]
                            [--flush-l2] [--cache-dir DIR] [--seed N] [--benchmark_* flags]

Benchmarks every kernel of the given programs on the GPU, one benchmark per kernel named
<entry id>/<kernel> (expr-<hash>/<kernel> for -c). Without a GPU every benchmark is skipped with
the reason. Google Benchmark's own flags follow.
)";

struct Args {
  std::vector<std::string> exprs;
  std::string suite, tier, cache_dir;
  std::vector<std::string> entries;
  cli::GlobalFlags flags;
  bool flush_l2 = false;
  uint64_t seed = 0;
  std::vector<char*> rest;  // argv[0] and everything for Google Benchmark
};

// Takes this program's flags out of argv (`--flag VALUE` or `--flag=VALUE`); the rest is Google
// Benchmark's. Returns an error message for a flag without its value or a bad number.
std::optional<std::string> parse_args(int argc, char** argv, Args& a) {
  a.rest.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string name = arg, value;
    bool inline_value = false;
    if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
      name = arg.substr(0, arg.find('='));
      value = arg.substr(arg.find('=') + 1);
      inline_value = true;
    }
    static const std::set<std::string> kValued = {"-c", "--suite", "--tier", "--entries", "--pipeline", "--arch",
                                                  "--device", "--cache-dir", "--seed", "--plugin"};
    if (name == "--flush-l2" && !inline_value) {
      a.flush_l2 = true;
      continue;
    }
    if (!kValued.count(name)) {
      a.rest.push_back(argv[i]);
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) return name + " needs a value";
      value = argv[++i];
    }
    if (name == "-c") a.exprs.push_back(value);
    else if (name == "--suite") a.suite = value;
    else if (name == "--tier") a.tier = value;
    else if (name == "--entries") for (std::string& id : tessera::cli::split_entry_ids(value)) a.entries.push_back(id);
    else if (name == "--pipeline") a.flags.pipeline = value;
    else if (name == "--arch") a.flags.arch = value;
    else if (name == "--device") a.flags.device = value;
    else if (name == "--cache-dir") a.cache_dir = value;
    else if (name == "--plugin") a.flags.plugins.push_back(value);
    else if (name == "--seed") {
      try {
        size_t used = 0;
        a.seed = std::stoull(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        return "--seed needs a non-negative integer, got '" + value + "'";
      }
    }
  }
  if (a.suite.empty() && (!a.tier.empty() || !a.entries.empty())) return "--tier and --entries select from a --suite FILE";
  return std::nullopt;
}

std::string expr_name(const std::string& expr) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : expr) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "expr-%08llx", static_cast<unsigned long long>(h & 0xffffffffull));
  return buf;
}

// One kernel to benchmark.
struct KernelEntry {
  std::string node, name;
  KernelCost cost;
};

// One program, compiled to CUDA IR; loaded on the GPU only while its benchmarks run.
struct Program {
  std::string name;
  Graph torch_ir;  // for the seeded inputs
  Graph cuda_ir;
  std::vector<KernelEntry> kernels;
};

// Runs the benchmarks: keeps at most one program loaded (the last one asked for), remembers a
// program that failed to load so its other kernels report the same error, and counts failures.
class Bench {
 public:
  Bench(std::vector<Program> programs, const TimingExtension* ext, std::string no_device, TargetOptions options,
        TimingOptions timing, uint64_t seed)
      : programs_(std::move(programs)), ext_(ext), no_device_(std::move(no_device)), options_(std::move(options)),
        timing_(timing), seed_(seed) {}

  const std::vector<Program>& programs() const { return programs_; }
  int failures() const { return failures_; }

  void run(benchmark::State& state, size_t p, size_t k) {
    if (!no_device_.empty()) {
      state.SkipWithError(no_device_.c_str());
      return;
    }
    const KernelEntry& kernel = programs_[p].kernels[k];
    std::string error;
    TimedProgram* program = load(p, error);
    size_t index = 0;
    if (program) {
      const auto& ks = program->kernels();
      while (index < ks.size() && ks[index].node != kernel.node) ++index;
      if (index == ks.size()) error = "the loaded program has no kernel for node " + kernel.node;
    }
    if (error.empty() && !warmed_[index]) {
      if (Expected<int> w = program->warm_up_kernel(index, /*max_runs=*/200); !w)
        error = w.error().message;
      else
        warmed_[index] = true;
    }
    if (!error.empty()) {
      fail(state, error);
      return;
    }
    for (auto _ : state) {
      Expected<double> us = program->time_kernel(index);
      if (!us) {
        fail(state, us.error().message);
        break;
      }
      state.SetIterationTime(*us * 1e-6);
    }
    const KernelTiming& t = program->kernels()[index];
    state.counters["bytes_per_second"] =
        benchmark::Counter(static_cast<double>(kernel.cost.bytes), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["flops_per_second"] =
        benchmark::Counter(kernel.cost.flops, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel("grid " + dims(t.grid) + " block " + dims(t.block) + " regs " + std::to_string(t.registers));
  }

 private:
  static std::string dims(const std::vector<int64_t>& v) {
    std::string s;
    for (int64_t d : v) s += (s.empty() ? "" : "x") + std::to_string(d);
    return s;
  }

  void fail(benchmark::State& state, const std::string& message) {
    ++failures_;
    state.SkipWithError(message.c_str());
  }

  TimedProgram* load(size_t p, std::string& error) {
    if (load_errors_.count(p)) {
      error = load_errors_[p];
      return nullptr;
    }
    if (loaded_ && loaded_index_ == p) return loaded_.get();
    loaded_.reset();  // frees the previous program's device memory first
    const Program& program = programs_[p];
    const ValueMap inputs = make_inputs(program.torch_ir, seed_);
    Expected<std::unique_ptr<TimedProgram>> opened = ext_->open(program.cuda_ir, inputs, options_, timing_);
    if (!opened) {
      error = load_errors_[p] = program.name + ": " + opened.error().message;
      return nullptr;
    }
    // One run of the whole program first: a kernel timed alone then reads buffers its program
    // computed, not uninitialized memory (which could hold NaNs or, in an index buffer, addresses
    // out of bounds).
    if (Expected<double> first = (*opened)->time_program(); !first) {
      error = load_errors_[p] = program.name + ": " + first.error().message;
      return nullptr;
    }
    loaded_ = std::move(*opened);
    loaded_index_ = p;
    warmed_.assign(loaded_->kernels().size(), false);
    for (const std::string& w : loaded_->warnings()) std::cerr << "warning: " << w << "\n";
    return loaded_.get();
  }

  std::vector<Program> programs_;
  const TimingExtension* ext_;
  std::string no_device_;  // "no CUDA device: <reason>" when there is none
  TargetOptions options_;
  TimingOptions timing_;
  uint64_t seed_;
  std::unique_ptr<TimedProgram> loaded_;
  size_t loaded_index_ = 0;
  std::vector<bool> warmed_;
  std::map<size_t, std::string> load_errors_;
  int failures_ = 0;
};

// Compiles `source` to CUDA IR with the session's pipeline, keeping each kernel's cost from the
// Kernel IR. Errors are printed.
std::optional<Program> compile(cli::Session& s, const std::string& name, const std::string& source) {
  cli::ProgramSource src;
  src.expr = source;
  std::ostringstream err;
  auto graph = cli::load_program(s, src, err);
  if (!graph) {
    std::cerr << "error: " << name << ": " << err.str();
    return std::nullopt;
  }
  Program p;
  p.name = name;
  p.torch_ir = *graph;
  Graph kernel_ir;
  RunnerOptions ro;
  ro.stop_after = Dialect::Cuda;
  ro.device = s.device;
  ro.out = &std::cerr;
  ro.err = &std::cerr;
  ro.on_stage_end = [&kernel_ir](Dialect stage, const Graph& g) {
    if (stage == Dialect::Kernel) kernel_ir = g;
  };
  DiagnosticEngine diags;
  Status st = PipelineRunner(s.host.registry(), s.pipeline, ro).run(*graph, diags);
  std::cerr << diags.render_all();
  if (!st) {
    std::cerr << "error: " << name << ": ";
    cli::report(std::cerr, st.error());
    return std::nullopt;
  }
  p.cuda_ir = std::move(*graph);
  std::set<std::string> names;
  for (const Node* n : p.cuda_ir.nodes()) {
    const auto* op = n->op_as<CudaOp>();
    if (!op) continue;
    KernelEntry k;
    k.node = n->id();
    k.name = names.insert(op->name).second ? op->name : op->name + "." + n->id();  // names stay unique
    if (const Node* kn = kernel_ir.find(n->id())) k.cost = KernelCost::of(kernel_ir, *kn);
    p.kernels.push_back(std::move(k));
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") std::cout << kUsage << "\n";
  Args args;
  if (auto bad = parse_args(argc, argv, args)) {
    std::cerr << "error: tessera_kernel_bench: " << *bad << "\n" << kUsage;
    return 2;
  }
  int bench_argc = static_cast<int>(args.rest.size());
  args.rest.push_back(nullptr);
  benchmark::Initialize(&bench_argc, args.rest.data());
  if (benchmark::ReportUnrecognizedArguments(bench_argc, args.rest.data())) return 2;

  // The programs, in order: -c expressions, then the suite's selected entries.
  std::vector<std::pair<std::string, std::string>> sources;  // name, program text
  std::set<std::string> seen;
  for (const std::string& e : args.exprs)
    if (seen.insert(e).second) sources.emplace_back(expr_name(e), e);
  if (!args.suite.empty()) {
    // The suite reader of `tessera bench` (framework/cli/bench_suite.h): the same checks, the
    // same selection; every entry is in the full tier.
    Expected<cli::Suite> suite = cli::load_suite(args.suite);
    if (!suite) {
      std::cerr << suite.error().render();
      return 2;
    }
    auto selected = cli::select_entries(*suite, args.tier.empty() ? "full" : args.tier, args.entries);
    if (!selected) {
      std::cerr << selected.error().render();
      return 2;
    }
    for (const cli::SuiteEntry* e : *selected) sources.emplace_back(e->id, e->program);
  }
  if (sources.empty()) {
    std::cerr << "error: tessera_kernel_bench: nothing to benchmark: give -c EXPR or --suite FILE\n" << kUsage;
    return 2;
  }

  auto session = cli::open_session(args.flags, std::cerr);
  if (!session) return 2;
  const Registry& registry = session->host.registry();
  std::vector<Program> programs;
  for (const auto& [name, text] : sources) {
    std::optional<Program> p = compile(*session, name, text);
    if (!p) return 2;
    programs.push_back(std::move(*p));
  }

  // The device: its absence is every benchmark's skip reason.
  std::string no_device;
  const TimingExtension* ext = nullptr;
  if (!registry.has(ComponentKind::Target, "cuda")) {
    no_device = "no CUDA device: no cuda target plugin is installed";
  } else if (std::string why; !registry.make_target("cuda")->available(&why)) {
    const std::string prefix = kNoCudaPrefix;
    no_device = "no CUDA device: " + (why.rfind(prefix, 0) == 0 ? why.substr(prefix.size()) : why);
  } else {
    auto found = find_timing_extension(registry);
    if (!found) {
      std::cerr << "error: tessera_kernel_bench: " << found.error().message << "\n";
      return 1;
    }
    ext = *found;
  }
  TargetOptions options;
  options.arch = args.flags.arch;  // empty: the GPU's own
  options.device = session->device;
  options.cache_dir = cli::default_cache_dir(args.cache_dir);
  TimingOptions timing;
  timing.flush_l2 = args.flush_l2;
  Bench bench(std::move(programs), ext, no_device, options, timing, args.seed);

  for (size_t p = 0; p < bench.programs().size(); ++p)
    for (size_t k = 0; k < bench.programs()[p].kernels.size(); ++k) {
      const std::string name = bench.programs()[p].name + "/" + bench.programs()[p].kernels[k].name;
      benchmark::RegisterBenchmark(name.c_str(), [&bench, p, k](benchmark::State& state) { bench.run(state, p, k); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return bench.failures() > 0 ? 1 : 0;
}

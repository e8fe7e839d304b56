// `tessera run`: compile a program through the pipeline, run it on a target with seeded inputs, and
// check every output against the reference evaluator. `--bench` then times every kernel on the
// target (cuda) and prints a per-kernel table (and `--json FILE`); `--profile` re-runs the command
// under Nsight Compute when `ncu` is on PATH. `tessera tune` still reports that no tuner plugin is
// installed.
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
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli_session.h"
#include "commands.h"
#include "compile_program.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/printer.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/kernel_cost.h"
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


std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// One row of the --bench table: a kernel's timing with the work the Kernel IR says it does.
struct BenchRow {
  const KernelTiming* t;
  KernelCost cost;
  double share = 0;  // of the sum of the kernels' medians
  double gbps() const { return t->median_us > 0 ? static_cast<double>(cost.bytes) / (t->median_us * 1e3) : 0; }
  double gflops() const { return t->median_us > 0 ? cost.flops / (t->median_us * 1e3) : 0; }
};

std::vector<BenchRow> bench_rows(const BenchReport& r, const Graph& kernel_ir) {
  double total = 0;
  for (const KernelTiming& t : r.kernels) total += t.median_us;
  std::vector<BenchRow> rows;
  for (const KernelTiming& t : r.kernels) {
    BenchRow row{&t, {}, total > 0 ? t.median_us / total : 0};
    if (const Node* n = kernel_ir.find(t.node)) row.cost = KernelCost::of(kernel_ir, *n);
    rows.push_back(row);
  }
  return rows;
}

std::string bench_table(const BenchReport& r, const std::vector<BenchRow>& rows) {
  std::ostringstream out;
  out << "bench: " << r.device << "  (median of CUDA-event timings after warm-up"
      << (r.flushed_l2 ? ", L2 flushed before every run" : "") << ")\n";
  out << "  kernel                              us(med)    min      max   share  grid            block           smem   regs    GB/s  GFLOP/s\n";
  for (const BenchRow& row : rows) {
    const KernelTiming& t = *row.t;
    char line[512];
    std::snprintf(line, sizeof line, "  %-32s %9.2f %8.2f %8.2f %6.1f%%  %-15s %-15s %6lld %5d %8.1f %8.1f\n",
                  t.kernel.c_str(), t.median_us, t.min_us, t.max_us, row.share * 100, int_tuple(t.grid).c_str(),
                  int_tuple(t.block).c_str(), static_cast<long long>(t.static_smem + t.dynamic_smem), t.registers,
                  row.gbps(), row.gflops());
    out << line;
  }
  out << "  program" << (r.used_graphs ? " (CUDA graph)" : " (kernels back to back)") << ": " << fixed(r.program_median_us, 2)
      << " us median, " << fixed(r.program_min_us, 2) << " min, " << fixed(r.program_max_us, 2) << " max\n";
  return out.str();
}

std::string bench_json(const BenchReport& r, const std::vector<BenchRow>& rows) {
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const BenchRow& row : rows) {
    const KernelTiming& t = *row.t;
    kernels.push_back({{"kernel", t.kernel}, {"node", t.node}, {"median_us", t.median_us}, {"min_us", t.min_us},
                       {"max_us", t.max_us}, {"share", row.share}, {"grid", t.grid}, {"block", t.block},
                       {"static_smem", t.static_smem}, {"dynamic_smem", t.dynamic_smem},
                       {"registers", t.registers}, {"bytes", row.cost.bytes}, {"flops", row.cost.flops},
                       {"gb_per_s", row.gbps()}, {"gflop_per_s", row.gflops()}, {"warmup_runs", t.warmup_runs}});
  }
  nlohmann::ordered_json doc = {
      {"device", r.device},
      {"cuda_graph", r.used_graphs},
      {"l2_flush", r.flushed_l2},
      {"program_us", {{"median", r.program_median_us}, {"min", r.program_min_us}, {"max", r.program_max_us}}},
      {"kernels", std::move(kernels)}};
  return doc.dump(2) + "\n";
}

// The first `ncu` on PATH, or "".
std::string find_on_path(const std::string& exe) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::filesystem::path p = std::filesystem::path(dirs.substr(start, end - start)) / exe;
    std::error_code ec;
    if (end > start && std::filesystem::is_regular_file(p, ec)) return p.string();
    start = end + 1;
  }
  return "";
}

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
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

// Host memory the check needs before anything is allocated: the reference evaluator holds every
// tensor of the program as doubles, and the target's buffers (the simulator's, or the cuda
// target's host copies) hold as much again. A program beyond `limit_bytes` is refused up front with
// the figures, instead of dying in an allocation.
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
      largest_id = n->id;
    }
  }
  if (total <= limit_bytes) return Status::ok();
  return make_error("the check needs about " + format_bytes(total) + " of host memory (tensor '" + largest_id +
                    "' alone needs " + format_bytes(largest) + " as doubles); the limit is " +
                    format_bytes(limit_bytes) + " (--memory-limit GB)");
}

// Half the machine's physical memory, the default --memory-limit.
double default_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 8.0 * (1 << 30);
  return static_cast<double>(pages) * static_cast<double>(page) / 2;
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
  double memory_limit_gb = 0;
  std::string cache_dir;
  po::options_description desc("tessera run options");
  add_program_options(desc, src);
  desc.add_options()
      ("target", po::value(&target_name)->value_name("auto|sim|cuda"), "where to run (default auto: cuda when a GPU is present, else sim)")
      ("seed", po::value(&seed)->value_name("N"), "seed of the random input data (default 0)")
      ("sample-knobs", po::value(&sample_seed)->value_name("SEED"), "pick a random valid value for every knob not pinned in the pipeline (seeded)")
      ("rtol", po::value(&rtol)->value_name("R"), "relative tolerance (default: 1e-4 for f32, 2e-2 f16, 1e-1 bf16)")
      ("cache-dir", po::value(&cache_dir)->value_name("DIR"), "kernel cache of the cuda target (default $XDG_CACHE_HOME/tessera or ~/.cache/tessera)")
      ("memory-limit", po::value(&memory_limit_gb)->value_name("GB"), "host memory the reference and the target's buffers may use (default: half the physical memory)")
      ("bench", "time the kernels (needs the cuda target) and print a per-kernel table")
      ("iterations", po::value<int>()->value_name("N"), "--bench: timed runs per kernel after warm-up (default 50)")
      ("graphs", "--bench: time the whole program replayed as a CUDA graph")
      ("flush-l2", "--bench: overwrite a buffer of twice the L2 size before every timed run")
      ("json", po::value<std::string>()->value_name("FILE"), "--bench: also write the table as JSON to FILE")
      ("profile", "re-run the command under Nsight Compute (ncu) when it is on PATH")
      ("time-passes", "print the time spent in each pass (stderr)")
      ("verify-each", "run the IR verifier after every pass");
  add_global_options(desc, flags);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, {}, vm, "tessera run -c EXPR [--target auto|sim|cuda] [options]")) return *code;

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
  ro.stop_after = stop;
  ro.time_passes = vm.count("time-passes") > 0;
  ro.verify_each = vm.count("verify-each") > 0;
  ro.verbosity = flags.verbosity;
  ro.device = session->device;
  ro.tuner = sampler.get();
  ro.out = &std::cerr;  // stdout carries the result table only
  ro.err = &std::cerr;
  // --bench counts each kernel's bytes and flops in its Kernel IR body: keep that stage's graph.
  Graph kernel_ir;
  if (vm.count("bench"))
    ro.on_stage_end = [&kernel_ir](Dialect stage, const Graph& g) {
      if (stage == Dialect::Kernel) kernel_ir = g;
    };
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
  to.cache_dir = default_cache_dir(cache_dir);
  if (flags.arch.empty())
    if (std::optional<DeviceDesc> hw = target->query_device()) to.arch = hw->arch;  // the GPU's own arch
  auto ran = target->execute(*graph, inputs, to);
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

int tune_command(int argc, char** argv, int first) { return needs_tuner(argc, argv, first); }

}  // namespace tessera::cli

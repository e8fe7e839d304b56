// `tessera bench`: runs the benchmark suite (bench/suite.yaml, see bench_suite.h) on the cuda
// target and compares every entry with PyTorch.
//
// Per selected entry: compile it (frontend, pipeline, NVRTC), run it once on seeded inputs and
// check its outputs against the reference evaluator — unless the reference's work is beyond
// --reference-limit, in which case the output check is PyTorch's, from the saved IO — write the
// run's inputs, parameters and outputs to <out>/io/<id>.safetensors (run_io_file.h), and time it
// as `tessera run --bench --graphs --flush-l2` does (the whole program replayed as a CUDA graph,
// L2 flushed before every run). The parameters are generated once per entry (add_constants) and
// the program is loaded once for its checked run and its timing. A progress line per entry goes
// to stderr, and report.json / report.md are rewritten after every entry. The PyTorch baseline
// script (bench/pytorch_baseline.py) runs on the entries that ran — after every --baseline-every
// entries, or once after the last — and each IO file is deleted once it has read it (--keep-io
// keeps them). At the end the report is written again with speedup.png when matplotlib is there
// (bench_report.h).
//
// `--dry-run` needs no GPU: it compiles every entry to CUDA and through NVRTC for --arch (default:
// the device's, sm_90 for the default h100) and prints each entry's kernels and launch shapes.
//
// Exit codes: 0 every entry ran and passed its checks (dry run: compiled); 1 an entry failed or
// mismatched, the suite is invalid, or there is no GPU; 2 a usage error.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench_report.h"
#include "bench_suite.h"
#include "cli_session.h"
#include "commands.h"
#include "tuning_replay.h"
#include "compile_program.h"
#include "external_command.h"
#include "kernel_timing_table.h"
#include "program_run.h"
#include "progress_line.h"
#include "run_io_file.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/support/atomic_file.h"
#include "tessera/support/install_paths.h"
#include "tessera/target/kernel_cost.h"

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct BenchFlags {
  std::string suite;
  std::string tier = "quick";
  std::string entries;
  std::string out;
  std::string baseline_mode = "default";
  std::string baseline_script;
  std::string cache_dir;
  std::string target = "cuda";
  int iterations = 50;
  double reference_limit_gflop = 0.25;
  double memory_limit_gb = 0;
  double io_limit_gb = 16;
  int baseline_every = 0;  // run the baseline after every N measured entries (0: once, at the end)
  bool keep_io = false;
  bool dry_run = false;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }


std::string first_line(const std::string& s) {
  size_t start = s.find_first_not_of('\n');
  if (start == std::string::npos) return "";
  const size_t nl = s.find('\n', start);
  return s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// "bench: [3/30] <id>: <what>  (elapsed 0:42, ETA 3:10)" on stderr, one line per finished entry.
class Progress {
 public:
  Progress(std::string verb, size_t total) : verb_(std::move(verb)), total_(total), start_(Clock::now()) {}
  void done(const std::string& id, const std::string& what) {
    ++done_;
    const double elapsed = seconds_since(start_);
    const double eta = done_ < total_ ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0;
    std::cerr << verb_ << ": [" << done_ << "/" << total_ << "] " << id << ": " << what << "  (elapsed "
              << clock_text(elapsed) << ", ETA " << clock_text(eta) << ")\n";
  }
  double elapsed() const { return seconds_since(start_); }

 private:
  std::string verb_;
  size_t total_, done_ = 0;
  Clock::time_point start_;
};

// One entry's program, compiled to the target's input dialect.
struct CompiledEntry {
  Graph torch;      // the Torch IR (the reference and --save-io read it)
  Graph lowered;    // CUDA IR
  Graph kernel_ir;  // the Kernel IR stage (bytes and flops per kernel)
};

Expected<CompiledEntry> compile_entry(Session& s, const Target& target, const SuiteEntry& e) {
  ProgramSource src;
  src.expr = e.program;
  src.label = "<" + e.id + ">";
  std::ostringstream err;
  auto graph = load_program(s, src, err);
  if (!graph) return make_error(err.str().empty() ? "the program does not compile" : err.str());
  CompiledEntry c;
  c.torch = *graph;
  RunnerOptions ro;
  ro.out = &err;
  ro.err = &err;
  Status st = lower_for_target(s, target, ro, *graph, &c.kernel_ir, err);
  if (!st) return make_error(err.str() + st.error().render());
  c.lowered = std::move(*graph);
  return c;
}

// ---- --dry-run

int dry_run(Session& s, Target& target, const std::vector<const SuiteEntry*>& entries, const TargetOptions& to) {
  Progress progress("bench --dry-run", entries.size());
  std::vector<std::string> failed;
  size_t kernels = 0;
  std::ostream& out = std::cout;
  for (const SuiteEntry* e : entries) {
    auto compiled = compile_entry(s, target, *e);
    Expected<std::vector<KernelBuild>> builds =
        compiled ? target.build(compiled->lowered, to) : Expected<std::vector<KernelBuild>>(compiled.error());
    if (!builds) {
      const std::string why = builds.error().render();
      out << e->id << "  FAILED: " << first_line(why) << "\n";
      std::cerr << "error: entry '" << e->id << "' (" << s.pipeline.name << ", " << to.arch << "):\n" << why;
      out.flush();
      failed.push_back(e->id);
      progress.done(e->id, "FAILED");
      continue;
    }
    out << e->id << "  " << e->family << " " << e->dtype << "  " << builds->size()
        << (builds->size() == 1 ? " kernel" : " kernels") << "\n";
    for (const KernelBuild& b : *builds) {
      const Node* n = compiled->lowered.find(b.node);
      const CudaOp* op = n ? n->op_as<CudaOp>() : nullptr;
      out << "  " << b.kernel << "  grid=" << (op ? int_tuple(op->grid) : "?") << " block="
          << (op ? int_tuple(op->block) : "?") << " smem=" << (op ? op->dynamic_smem : 0) + b.shared_bytes
          << " B  regs " << b.registers << "  -> " << b.node << (b.from_cache ? "  (cached)" : "") << "\n";
    }
    out.flush();
    kernels += builds->size();
    progress.done(e->id, std::to_string(builds->size()) + (builds->size() == 1 ? " kernel" : " kernels"));
  }
  if (!failed.empty()) {
    std::string list;
    for (const std::string& id : failed) list += (list.empty() ? "" : ", ") + id;
    std::cerr << "error: tessera bench --dry-run: " << failed.size() << " of " << entries.size()
              << " entries failed to compile for " << to.arch << ": " << list << "\n";
    return kExitError;
  }
  std::cerr << "dry run: " << entries.size() << " entries, " << kernels << " kernels compiled for " << to.arch
            << " in " << fmt(progress.elapsed(), 1) << " s\n";
  return kExitOk;
}

// ---- the measured run

// The reference evaluator's work, estimated as the kernels' operations (it does them in double).
double reference_flops(const Graph& kernel_ir) {
  double flops = 0;
  for (const Node* n : kernel_ir.nodes())
    if (n->op_as<KernelOp>()) {
      const KernelCost cost = KernelCost::of(kernel_ir, *n);
      flops += cost.flops + cost.tensor_flops;
    }
  return flops;
}

std::string format_error(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Without `timing` (the sim target) the entry is compiled, run, checked and its IO saved, not timed.
TesseraResult measure_entry(Session& s, Target& target, const SuiteEntry& e, const TargetOptions& to,
                            const BenchFlags& flags, const fs::path& out_dir, bool timing) {
  TesseraResult r;
  r.id = e.id;
  r.family = e.family;
  r.model = e.model;
  r.phase = e.phase;
  r.dtype = e.dtype;
  r.seq = e.seq;
  r.kv = e.kv;
  auto fail = [&](const std::string& stage, const Diagnostic& d) {
    r.error = stage + ": " + first_line(d.render());
    std::cerr << "error: entry '" << e.id << "': " << stage << ":\n" << d.render();
    return r;
  };

  const Clock::time_point t0 = Clock::now();
  auto compiled = compile_entry(s, target, e);
  if (!compiled) return fail("compile", compiled.error());
  if (timing) {
    auto builds = target.build(compiled->lowered, to);  // NVRTC now, so compile_s covers it
    if (!builds) return fail("NVRTC", builds.error());
    r.kernels = static_cast<int>(builds->size());
    for (const KernelBuild& b : *builds) r.kernels_from_cache += b.from_cache;
  } else {
    for (const Node* n : compiled->kernel_ir.nodes()) r.kernels += n->op_as<KernelOp>() != nullptr;
  }
  r.compile_s = seconds_since(t0);

  ValueMap inputs = make_inputs(compiled->torch, 0);
  const double mem_limit = flags.memory_limit_gb > 0 ? flags.memory_limit_gb * (1 << 30) : default_memory_limit();
  const Status fits_in_memory = check_host_memory(compiled->torch, mem_limit);
  // The parameters, generated once for the reference, the run, --save-io and the timing, when the
  // host can hold them (else each of those streams them from the generator itself).
  Clock::time_point t = Clock::now();
  if (fits_in_memory)
    if (Status st = add_constants(compiled->torch, inputs); !st) return fail("parameters", st.error());
  r.params_s = seconds_since(t);
  t = Clock::now();
  // The reference check, unless its work or memory is too big to wait for here.
  std::optional<ValueMap> expected;
  const double ref_gflop = reference_flops(compiled->kernel_ir) / 1e9;
  if (ref_gflop > flags.reference_limit_gflop) {
    r.check = "skipped";
    r.check_detail = "the reference would evaluate about " + fmt(ref_gflop, 1) + " GFLOP in double precision (limit " +
                     format_error(flags.reference_limit_gflop) + ", --reference-limit); the output check is PyTorch's";
  } else if (!fits_in_memory) {
    r.check = "skipped";
    r.check_detail = fits_in_memory.error().message + "; the output check is PyTorch's";
  } else {
    auto ref = evaluate_reference(compiled->torch, inputs);
    if (!ref) return fail("reference", ref.error());
    expected = std::move(*ref);
  }

  r.reference_s = seconds_since(t);
  t = Clock::now();
  // On the cuda target one load serves the checked run and the timing (BenchOptions::outputs).
  ValueMap outputs;
  std::optional<BenchReport> timed;
  if (timing) {
    BenchOptions bo;
    bo.iterations = flags.iterations;
    bo.use_graphs = true;
    bo.flush_l2 = true;
    bo.outputs = true;
    auto bench = target.bench(compiled->lowered, inputs, to, bo);
    if (!bench) return fail("run", bench.error());
    outputs = std::move(bench->outputs);
    timed = std::move(*bench);
  } else {
    auto ran = target.execute(compiled->lowered, inputs, to);
    if (!ran) return fail("run", ran.error());
    outputs = std::move(ran->outputs);
  }
  r.run_s = seconds_since(t);
  if (expected) {
    auto checks = check_outputs(compiled->lowered, compiled->torch, *expected, outputs, 0);
    if (!checks) return fail("check", checks.error());
    r.check = "pass";
    double worst = -1;
    for (const OutputCheck& c : *checks) {
      if (!c.ok) r.check = "fail";
      const std::string d = c.missing_from.empty() ? c.name + ": max rel err " + format_error(c.max_rel_error) +
                                                         " (rtol " + format_error(c.rtol) + ")"
                                                   : c.name + " missing from the " + c.missing_from;
      if (!c.missing_from.empty() || c.max_rel_error > worst) {
        worst = c.missing_from.empty() ? c.max_rel_error : INFINITY;
        r.check_detail = d;
      }
    }
  }
  const fs::path io = out_dir / "io" / (e.id + ".safetensors");
  t = Clock::now();
  if (Status saved = save_run_io(io.string(), compiled->torch, inputs, outputs, e.program); !saved)
    return fail("--save-io", saved.error());
  r.save_io_s = seconds_since(t);
  r.ran = true;
  double kernel_flops = 0;
  for (const Node* n : compiled->kernel_ir.nodes())
    if (n->op_as<KernelOp>()) {
      const KernelCost cost = KernelCost::of(compiled->kernel_ir, *n);
      r.bytes += static_cast<double>(cost.bytes);
      kernel_flops += cost.flops + cost.tensor_flops;
    }
  r.flops = e.flops ? *e.flops : kernel_flops;
  r.flops_source = e.flops ? "suite" : "kernel IR";
  if (!timed) return r;

  const std::vector<BenchRow> rows = bench_rows(*timed, compiled->kernel_ir);
  r.tessera_us = timed->program_median_us;
  r.timed = true;
  r.graphs_unavailable = timed->graphs_unavailable;
  std::ofstream(out_dir / "kernels" / (e.id + ".json")) << bench_json(*timed, rows);
  return r;
}

// How the baseline script is run: python3 and the script, or why it cannot be.
struct BaselineCommand {
  std::string python, script;
  std::string unavailable;  // why not ("" when it can run)
};

BaselineCommand find_baseline(const BenchFlags& flags) {
  BaselineCommand c;
  c.python = find_on_path("python3");
  if (c.python.empty()) {
    c.unavailable = "python3 is not on PATH";
    return c;
  }
  c.script = flags.baseline_script;
  std::error_code ec;
  if (c.script.empty()) {
    const fs::path beside = fs::path(flags.suite).parent_path() / "pytorch_baseline.py";
    if (fs::is_regular_file(beside, ec)) c.script = beside.string();
    else if (auto found = find_data_file("bench/pytorch_baseline.py")) c.script = *found;
  }
  if (c.script.empty() || !fs::is_regular_file(c.script, ec))
    c.unavailable = "the baseline script " + (c.script.empty() ? std::string("bench/pytorch_baseline.py") : c.script) +
                    " was not found (--baseline-script FILE)";
  return c;
}

// One run of the baseline script over `ids` (their IO files are in <out>/io). Batch 1 writes
// baseline.json and baseline.log, batch k baseline-k.json and baseline-k.log.
Baseline run_baseline_batch(const BenchFlags& flags, const BaselineCommand& cmd, const std::vector<std::string>& ids,
                            const fs::path& out_dir, int batch) {
  Baseline b;
  b.mode = flags.baseline_mode;
  std::string id_list;
  for (const std::string& id : ids) id_list += (id_list.empty() ? "" : ",") + id;
  const std::string suffix = batch == 1 ? "" : "-" + std::to_string(batch);
  const fs::path json = out_dir / ("baseline" + suffix + ".json"), log = out_dir / ("baseline" + suffix + ".log");
  std::cerr << "bench: running the PyTorch baseline on " << ids.size() << " entries (" << cmd.script
            << ", torch.compile mode " << flags.baseline_mode << "); its log: " << log.string() << "\n";
  const int rc = run_external({cmd.python, cmd.script, "--suite", flags.suite, "--tier", flags.tier, "--entries", id_list,
                               "--io-dir", (out_dir / "io").string(), "--mode", flags.baseline_mode, "--iterations",
                               std::to_string(flags.iterations), "--out", json.string()},
                              log.string(), log.string());
  const std::string gist = last_line_of_file(log.string());
  if (rc != 0) {
    b.reason = rc == 2 ? "the baseline measured nothing (" + gist + ")"
                       : "the baseline script failed with exit code " + std::to_string(rc) + (gist.empty() ? "" : ": " + gist);
    return b;
  }
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parse_baseline_json(text.str(), flags.baseline_mode);
  if (!parsed) {
    b.reason = json.string() + ": " + parsed.error().message;
    return b;
  }
  return *parsed;
}

// The baseline of the whole run, from its batches.
class BaselineRuns {
 public:
  int batches() const { return batches_; }
  void add(const Baseline& batch) {
    ++batches_;
    if (!batch.available) {
      failures_.push_back(batch.reason);
      return;
    }
    if (!merged_.available) {
      std::map<std::string, BaselineResult> earlier = std::move(merged_.entries);
      merged_ = batch;
      merged_.entries.insert(earlier.begin(), earlier.end());
    } else {
      merged_.entries.insert(batch.entries.begin(), batch.entries.end());
    }
  }
  Baseline result(const std::string& unavailable) const {
    Baseline b = merged_;
    if (!unavailable.empty()) {
      b.reason = unavailable;
    } else if (batches_ == 0) {
      b.reason = "no entry ran in Tessera";
    } else if (!b.available) {
      b.reason = failures_.front();
      if (failures_.size() > 1) b.reason += " (and in " + std::to_string(failures_.size() - 1) + " more batches)";
    } else {
      for (const std::string& f : failures_) b.notes.push_back("one batch of entries has no PyTorch numbers: " + f);
    }
    return b;
  }

 private:
  Baseline merged_;
  std::vector<std::string> failures_;
  int batches_ = 0;
};

std::string today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string command_line(int argc, char** argv) {
  std::string s = "tessera";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    s += " " + (a.find_first_of(" '\"$\\") == std::string::npos ? a : shell_quote(a));
  }
  return s;
}

// Writes report.json and report.md, each whole (write_file_atomically), so a run killed at any
// moment leaves the last complete report.
Status write_report_files(const ReportContext& ctx, const std::vector<TesseraResult>& rows, const Baseline& baseline,
                          const fs::path& out_dir) {
  const ReportFiles files = write_bench_report(ctx, rows, baseline);
  TESSERA_TRY(write_file_atomically(out_dir / "report.json", files.json));
  return write_file_atomically(out_dir / "report.md", files.markdown);
}

// Writes the final report with the plot (when matplotlib is there), which needs report.json first.
Status write_report(ReportContext ctx, const std::vector<TesseraResult>& rows, const Baseline& baseline,
                    const fs::path& out_dir) {
  TESSERA_TRY(write_report_files(ctx, rows, baseline, out_dir));
  const std::string python = find_on_path("python3");
  auto plot_script = find_data_file("bench/plot_speedup.py");
  if (python.empty()) {
    ctx.plot_note = "python3 is not on PATH";
  } else if (!plot_script) {
    ctx.plot_note = "bench/plot_speedup.py was not found";
  } else {
    const fs::path log = out_dir / "plot.log";
    const int rc = run_external({python, *plot_script, (out_dir / "report.json").string(), (out_dir / "speedup.png").string()},
                                log.string(), log.string());
    if (rc == 0) {
      ctx.plot_file = "speedup.png";
    } else {
      const std::string gist = last_line_of_file(log.string());
      ctx.plot_note = rc == 3   ? "matplotlib is not installed"
                      : rc == 4 ? "there are no speedups to plot (no PyTorch times)"
                                : "the plot script failed (" + gist + ")";
    }
  }
  return write_report_files(ctx, rows, baseline, out_dir);
}

}  // namespace

int bench_command(int argc, char** argv, int first) {
  GlobalFlags global;
  BenchFlags flags;
  po::options_description desc("tessera bench options");
  desc.add_options()
      ("suite", po::value(&flags.suite)->value_name("FILE"), "the suite file (bench/suite.yaml)")
      ("tier", po::value(&flags.tier)->value_name("quick|full"), "which entries: quick (default) or full")
      ("entries", po::value(&flags.entries)->value_name("ID,..."), "only these entries (of the tier)")
      ("out", po::value(&flags.out)->value_name("DIR"), "where the report goes (default <suite dir>/results/<gpu>-<date>)")
      ("dry-run", "compile every entry to CUDA and with NVRTC for --arch (no GPU needed); print what would run")
      ("baseline-mode", po::value(&flags.baseline_mode)->value_name("default|max-autotune|none"), "torch.compile mode of the PyTorch baseline (default: default; none: eager PyTorch only)")
      ("baseline-script", po::value(&flags.baseline_script)->value_name("FILE"), "the PyTorch baseline script (default: pytorch_baseline.py beside the suite)")
      ("iterations", po::value(&flags.iterations)->value_name("N"), "timed runs after warm-up (default 50)")
      ("reference-limit", po::value(&flags.reference_limit_gflop)->value_name("GFLOP"), "skip the reference check of entries whose reference work exceeds this (default 0.25); PyTorch checks them")
      ("io-limit", po::value(&flags.io_limit_gb)->value_name("GB"), "disk the entries' IO files may take before the baseline runs on them and they are deleted (default 16)")
      ("baseline-every", po::value(&flags.baseline_every)->value_name("N"), "run the PyTorch baseline after every N measured entries (default 0: once, after the last)")
      ("keep-io", "keep the entries' IO files after the baseline has read them (default: deleted)")
      ("memory-limit", po::value(&flags.memory_limit_gb)->value_name("GB"), "host memory the reference check may use (default: half the physical memory)")
      ("cache-dir", po::value(&flags.cache_dir)->value_name("DIR"), "kernel cache of the cuda target (default $XDG_CACHE_HOME/tessera or ~/.cache/tessera)")
      ("target", po::value(&flags.target)->value_name("cuda|sim"), "cuda (default) runs and times every entry; sim only runs and checks them on the CPU simulator (no timing, no GPU)");
  std::string tune_db;
  add_tune_db_option(desc, tune_db);
  add_global_options(desc, global);
  auto args = strip_verbosity(argc, argv, first, global.verbosity);
  po::variables_map vm;
  const std::string usage =
      "tessera bench --suite bench/suite.yaml [--tier quick|full] [--entries ID,...] [--out DIR] [--dry-run] "
      "[--baseline-mode default|max-autotune]";
  if (auto code = parse_command_line(args, desc, {}, vm, usage)) return *code;
  flags.dry_run = vm.count("dry-run") > 0;
  flags.keep_io = vm.count("keep-io") > 0;
  if (flags.suite.empty()) {
    std::cerr << "error: tessera bench: give the suite file: --suite bench/suite.yaml\n";
    return kExitUsage;
  }
  if (flags.tier != "quick" && flags.tier != "full") {
    std::cerr << "error: tessera bench --tier must be quick or full, got '" << flags.tier << "'\n";
    return kExitUsage;
  }
  if (flags.baseline_mode != "default" && flags.baseline_mode != "max-autotune" && flags.baseline_mode != "none") {
    std::cerr << "error: tessera bench --baseline-mode must be default, max-autotune or none, got '"
              << flags.baseline_mode << "'\n";
    return kExitUsage;
  }
  if (flags.baseline_every < 0) {
    std::cerr << "error: tessera bench --baseline-every must be >= 0\n";
    return kExitUsage;
  }
  if (flags.target != "cuda" && flags.target != "sim") {
    std::cerr << "error: tessera bench --target must be cuda or sim, got '" << flags.target << "'\n";
    return kExitUsage;
  }
  if (flags.dry_run && flags.target != "cuda") {
    std::cerr << "error: tessera bench --dry-run compiles for the cuda target; --target sim does not apply\n";
    return kExitUsage;
  }
  if (flags.iterations < 1) {
    std::cerr << "error: tessera bench --iterations must be at least 1\n";
    return kExitUsage;
  }
  if (!(flags.reference_limit_gflop >= 0) || !(flags.io_limit_gb >= 0) ||
      (vm.count("memory-limit") && !(flags.memory_limit_gb > 0))) {
    std::cerr << "error: tessera bench: --reference-limit and --io-limit must be >= 0 and --memory-limit > 0\n";
    return kExitUsage;
  }

  auto suite = load_suite(flags.suite);
  if (!suite) return report(std::cerr, suite.error());
  auto selected = select_entries(*suite, flags.tier, split_entry_ids(flags.entries));
  if (!selected) {
    report(std::cerr, selected.error());
    return kExitUsage;
  }

  auto session = open_session(global, std::cerr);
  if (!session) return kExitError;
  const Registry& registry = session->host.registry();
  if (!registry.has(ComponentKind::Target, "cuda")) {
    std::cerr << "error: tessera bench: the cuda target plugin is not installed\n";
    return kExitUsage;
  }
  std::unique_ptr<Target> target = registry.make_target("cuda");
  if (!pipeline_reaches_target(*session, *target, "tessera bench", std::cerr)) return kExitUsage;

  if (flags.dry_run) {
    if (!open_tuning_replay(*session, tune_db, std::cerr)) return kExitError;
    TargetOptions to;
    to.arch = global.arch.empty() ? session->device->arch : global.arch;
    to.device = session->device;
    to.cache_dir = default_cache_dir(flags.cache_dir);
    return dry_run(*session, *target, *selected, to);
  }

  const bool timing = flags.target == "cuda";
  if (!timing) {
    int exit_code = kExitOk;
    target = pick_target(registry, flags.target, "tessera bench", exit_code);
    if (!target) return exit_code;
    if (!pipeline_reaches_target(*session, *target, "tessera bench", std::cerr)) return kExitUsage;
  } else if (std::string why; !target->available(&why)) {
    std::cerr << "error: tessera bench needs a GPU: " << why << " (--dry-run compiles the suite without one)\n";
    return kExitError;
  }
  const std::optional<DeviceDesc> hw = target->query_device();
  if (timing && hw) adopt_gpu_device(*session, hw->name, std::cerr);  // compile for the GPU that times it
  if (!open_tuning_replay(*session, tune_db, std::cerr)) return kExitError;
  const TargetOptions to = target_options(*session, hw, global.arch, flags.cache_dir);
  const std::string driver_name =
      hw ? hw->name : flags.target + " target (" + session->device->name + "'s description)";
  // The peaks: --device when given, else the table's entry for this GPU, else the session's device.
  const DeviceDesc* peaks = !global.device.empty() || !timing ? session->device
                                                              : device_for_driver_name(session->devices, driver_name);
  if (!peaks) {
    std::cerr << "note: tessera bench: '" << driver_name << "' is not in data/devices.yaml; percentages use "
              << session->device->name << "'s peaks (--device NAME)\n";
    peaks = session->device;
  }

  fs::path out_dir = flags.out;
  if (out_dir.empty()) {
    const std::string gpu = timing ? peaks->name : flags.target;
    out_dir = fs::path(flags.suite).parent_path() / "results" / (gpu + "-" + today());
  }
  std::error_code ec;
  fs::create_directories(out_dir / "io", ec);
  if (!ec && timing) fs::create_directories(out_dir / "kernels", ec);
  if (ec) {
    std::cerr << "error: tessera bench: cannot create " << out_dir.string() << ": " << ec.message() << "\n";
    return kExitError;
  }

  std::cerr << "bench: " << selected->size() << " entries of " << flags.suite << " (" << flags.tier << ") on "
            << driver_name << " (" << to.arch << "); results in " << out_dir.string() << "\n";
  // The baseline reads every entry's IO file; a file is deleted once it has been read (unless
  // --keep-io, or there is no baseline to read it). The baseline runs on the pending files after
  // every --baseline-every entries, when they pass --io-limit (the full suite's files would fill a
  // disk), and after the last entry.
  const BaselineCommand baseline_cmd = find_baseline(flags);
  BaselineRuns baseline_runs;
  std::vector<std::string> pending;
  double pending_bytes = 0;
  size_t deleted_io = 0;
  bool deleted_over_limit = false;
  auto run_pending_baseline = [&](bool over_io_limit) {
    if (pending.empty()) return;
    if (baseline_cmd.unavailable.empty())
      baseline_runs.add(run_baseline_batch(flags, baseline_cmd, pending, out_dir, baseline_runs.batches() + 1));
    if (over_io_limit || (!flags.keep_io && baseline_cmd.unavailable.empty())) {
      for (const std::string& id : pending) fs::remove(out_dir / "io" / (id + ".safetensors"), ec);
      deleted_io += pending.size();
      deleted_over_limit = deleted_over_limit || over_io_limit;
    }
    pending.clear();
    pending_bytes = 0;
  };

  ReportContext ctx;
  ctx.title_device = driver_name;
  ctx.peaks = *peaks;
  ctx.date = today();
  ctx.command = command_line(argc, argv);
  ctx.suite_file = flags.suite;
  ctx.tier = flags.tier;
  ctx.tessera_version = TESSERA_VERSION;
  ctx.timing = timing ? "whole program replayed as a CUDA graph, L2 flushed before every run, median of " +
                            std::to_string(flags.iterations) + " timed runs after warm-up; pipeline " +
                            session->pipeline.name + ", kernels built for " + to.arch
                      : "not timed: run and checked on the " + flags.target + " target (pipeline " +
                            session->pipeline.name + ")";
  auto io_note = [&] {
    ReportContext c = ctx;
    if (deleted_io > 0)
      c.notes.push_back("the IO files of " + std::to_string(deleted_io) + " entries were deleted once the baseline had read them" +
                        (deleted_over_limit ? " (--io-limit " + format_error(flags.io_limit_gb) + " GB)" : " (--keep-io keeps them)"));
    return c;
  };

  Progress progress("bench", selected->size());
  std::vector<TesseraResult> rows;
  for (const SuiteEntry* e : *selected) {
    rows.push_back(measure_entry(*session, *target, *e, to, flags, out_dir, timing));
    const TesseraResult& r = rows.back();
    const std::string host = "; host s: compile " + fmt(r.compile_s, 1) + ", params " + fmt(r.params_s, 1) +
                             ", reference " + fmt(r.reference_s, 1) + ", run " + fmt(r.run_s, 1) + ", io " +
                             fmt(r.save_io_s, 1);
    // On the cuda target an entry that ran was timed: its run is the timing's first (measure_entry).
    progress.done(e->id, !r.ran     ? std::string("FAILED")
                         : r.timed ? fmt(r.tessera_us, 2) + " us, check " + r.check + host
                                   : "check " + r.check + ", not timed" + host);
    if (r.ran) {
      pending.push_back(r.id);
      pending_bytes += static_cast<double>(fs::file_size(out_dir / "io" / (r.id + ".safetensors"), ec));
      if (pending_bytes > flags.io_limit_gb * (1 << 30)) run_pending_baseline(true);
      else if (flags.baseline_every > 0 && pending.size() >= static_cast<size_t>(flags.baseline_every))
        run_pending_baseline(false);
    }
    // The report so far, after every entry: a run cut short keeps what it measured.
    Baseline so_far = baseline_runs.result(baseline_cmd.unavailable);
    if (baseline_runs.batches() == 0 && baseline_cmd.unavailable.empty())
      so_far.reason = "not run yet (it runs on the measured entries' IO files" +
                      std::string(flags.baseline_every > 0 ? ", every " + std::to_string(flags.baseline_every) + " entries)" : ", after the last entry)");
    if (Status st = write_report_files(io_note(), rows, so_far, out_dir); !st) return report(std::cerr, st.error());
  }
  run_pending_baseline(false);
  const Baseline baseline = baseline_runs.result(baseline_cmd.unavailable);
  if (!baseline.available) std::cerr << "note: tessera bench: PyTorch baseline n/a: " << baseline.reason << "\n";

  if (Status st = write_report(io_note(), rows, baseline, out_dir); !st) return report(std::cerr, st.error());
  std::cout << "report: " << (out_dir / "report.md").string() << "\n";

  bool all_ok = true;
  for (const TesseraResult& r : rows) all_ok = all_ok && r.ran && r.error.empty() && r.check != "fail";
  for (const auto& [id, b] : baseline.entries) all_ok = all_ok && b.check != "fail";
  return all_ok ? kExitOk : kExitError;
}

}  // namespace tessera::cli

// `tessera tune`: tunes a program's schedule knobs with the pipeline's tuner plugin and records the
// best decisions per kernel in a tuning database (docs/tuning.md). The program runs to the end of
// the loop stage once; each distinct kernel is then a task, compiled alone from the tile stage on
// for every trial and scored by the measurer; `compile`/`run`/`bench --tune-db` replay the result.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <mutex>
#include <thread>

#include "bench_suite.h"
#include "cli_session.h"
#include "commands.h"
#include "compile_program.h"
#include "progress_line.h"
#include "tuning_replay.h"
#include "../src/tune/pipeline_trial_runner.h"
#include "../src/tune/program_tuning.h"
#include "../src/tune/tuning_task.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/cost_model.h"
#include "tessera/tune/cost_model_measurer.h"
#include "../src/tune/gpu_measurer.h"
#include "tessera/tune/tuner.h"
#include "tessera/tune/tuning_db.h"

namespace tessera::cli {

namespace {

std::string format_us(double us) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(us < 10 ? 2 : 1) << us << " us";
  return s.str();
}

std::string format_speedup(double heuristic, double best) {
  if (!(heuristic > 0) || !(best > 0)) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << heuristic / best << "x";
  return s.str();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// "3/8" -> (3, 8); false when malformed or out of range.
bool parse_shard(const std::string& text, int& index, int& count) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  try {
    size_t used = 0;
    index = std::stoi(text.substr(0, slash), &used);
    if (used != slash) return false;
    count = std::stoi(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) return false;
  } catch (const std::exception&) {
    return false;
  }
  return count >= 1 && index >= 0 && index < count;
}

// The decisions of a trial, node by node (a split adds a partial kernel whose knobs are decided
// too): "matmul: split_matmul_k.SPLITK=2 ... | matmul_splitk: launch_geometry.BN=128 ...".
std::string decisions_text(const std::vector<DecisionPoint>& decisions) {
  std::vector<std::string> nodes;
  for (const DecisionPoint& d : decisions)
    if (std::find(nodes.begin(), nodes.end(), d.node) == nodes.end()) nodes.push_back(d.node);
  std::string s;
  for (const std::string& node : nodes) {
    if (!s.empty()) s += " | ";
    s += node + ":";
    for (const DecisionPoint& d : decisions) {
      if (d.node != node) continue;
      s += " " + d.key.pass + "." + d.key.knob + (d.key.ordinal ? "#" + std::to_string(d.key.ordinal) : "") + "=" +
           knob_value_str(d.chosen);
    }
  }
  return s.empty() ? "(no choices)" : s;
}

// Prints progress and writes each finished task to the database.
class TuneReporter final : public TuningObserver {
 public:
  TuneReporter(const Session& session, TuningDb& db, std::string measurer, size_t tasks, int64_t budget, int verbosity)
      : session_(session), db_(db), measurer_(std::move(measurer)), tasks_(tasks), budget_(budget),
        verbosity_(verbosity), progress_(std::cerr, isatty(STDERR_FILENO) != 0, "tune") {}

  void on_trial(const TaskOutcome& task, const TrialResult& trial) override {
    ++trials_;
    if (verbosity_ >= 1) {
      progress_.finish();
      std::cerr << "  trial " << task.trials << " " << task.task.name << ": "
                << (trial.ok ? format_us(trial.latency_us) : "failed (" + first_line(trial.error) + ")") << "  "
                << decisions_text(trial.decisions) << "\n";
    }
    std::ostringstream what;
    what << task.task.name << " trial " << task.trials << "/" << task.budget << ", best "
         << (task.best.found ? format_us(task.best.latency_us) : "-") << " ("
         << format_speedup(task.heuristic_us, task.best.latency_us) << "), " << trials_ << "/" << budget_
         << " trials";
    progress_.update(what.str(), budget_ > 0 ? static_cast<double>(trials_) / budget_ : 0);
  }

  void on_task_done(const TaskOutcome& task) override {
    progress_.finish();
    ++done_;
    std::cerr << "tune: [" << done_ << "/" << tasks_ << "] " << task.task.name << " (x" << task.task.weight << "): "
              << task.trials << " trials";
    if (task.failed) std::cerr << " (" << task.failed << " failed)";
    if (task.best.found) {
      std::cerr << ", best " << format_us(task.best.latency_us) << ", heuristic "
                << (task.heuristic_us > 0 ? format_us(task.heuristic_us) : "failed") << ", "
                << format_speedup(task.heuristic_us, task.best.latency_us);
    } else {
      std::cerr << ", no schedule compiled and measured (the first failure: " << first_line(task.first_error) << ")";
      ++unmeasured_;
    }
    std::cerr << ", elapsed " << clock_text(seconds()) << "\n";
    if (!task.best.found) return;
    TuningRecord r;
    r.key = session_tuning_key(session_, task.task.hash);
    r.kernel_name = task.task.name;
    r.decisions = task.best.decisions;
    r.latency_us = task.best.latency_us;
    r.heuristic_latency_us = task.heuristic_us;
    r.measurer = measurer_;
    r.trials = task.trials;
    r.date = utc_now();
    if (Status st = db_.put(r); !st && write_error_.empty()) write_error_ = st.error().render();
    weighted_best_ += static_cast<double>(task.task.weight) * task.best.latency_us;
    if (task.heuristic_us > 0) weighted_heuristic_ += static_cast<double>(task.task.weight) * task.heuristic_us;
    else weighted_heuristic_ += static_cast<double>(task.task.weight) * task.best.latency_us;
  }

  const std::string& write_error() const { return write_error_; }
  size_t unmeasured() const { return unmeasured_; }
  int64_t trials() const { return trials_; }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  double weighted_best() const { return weighted_best_; }
  double weighted_heuristic() const { return weighted_heuristic_; }

 private:
  static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

  const Session& session_;
  TuningDb& db_;
  std::string measurer_;
  size_t tasks_;
  int64_t budget_;
  int verbosity_;
  ProgressLine progress_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int64_t trials_ = 0;
  size_t done_ = 0, unmeasured_ = 0;
  double weighted_best_ = 0, weighted_heuristic_ = 0;
  std::string write_error_;
};

}  // namespace

int tune_command(int argc, char** argv, int first) {
  GlobalFlags flags;
  ProgramSource src;
  std::string db_path = "tessera-tune.db";
  std::string shard = "0/1";
  std::string measurer_name = "cost-model";
  std::string calibrate;
  std::string suite_path, suite_tier = "quick", suite_entries;
  double gpu_timeout_s = 30;
  int gpu_iterations = 20;
  TuningBudget budget;
  po::options_description desc("tessera tune options");
  add_program_options(desc, src);
  desc.add_options()
      ("tune-db", po::value(&db_path)->value_name("FILE"), "the tuning database to add the results to (created if missing; default tessera-tune.db)")
      ("trials", po::value(&budget.trials)->value_name("N"), "trials over all the program's tasks (default 64 per task), split by weight")
      ("min-trials", po::value(&budget.min_trials_per_task)->value_name("N"), "trials each task gets at least (default 8)")
      ("patience", po::value(&budget.patience)->value_name("N"), "stop a task after N trials without improvement (default: the pipeline's tuner patience, else never)")
      ("time-budget", po::value(&budget.time_budget_s)->value_name("S"), "stop every task after S seconds of tuning")
      ("seed", po::value(&budget.seed)->value_name("N"), "the search's seed (default 1)")
      ("jobs", po::value(&budget.jobs)->value_name("N"), "tasks searched at once, on threads (default: the CPU count; the gpu measurer compiles candidates in parallel and runs them on the GPU one at a time); with a deterministic measurer the results are the same for any N")
      ("shard", po::value(&shard)->value_name("I/N"), "tune only every N-th task from the I-th (0-based), for tuning on several machines; merge the databases with `tessera db merge`")
      ("measurer", po::value(&measurer_name)->value_name("cost-model|gpu"), "how trials are scored: cost-model (the analytic model of docs/cost-model.md, the default) or gpu (each candidate checked against the reference, then timed on the GPU in a worker process; docs/tuning-gpu-measurer.md)")
      ("gpu-timeout", po::value(&gpu_timeout_s)->value_name("S"), "--measurer gpu: kill a candidate's worker after S seconds, a failed trial (default 30)")
      ("iterations", po::value(&gpu_iterations)->value_name("N"), "--measurer gpu: timed runs per candidate after warm-up (default 20)")
      ("suite", po::value(&suite_path)->value_name("FILE"), "tune the programs of a benchmark suite (bench/suite.yaml) instead of one program: the distinct kernels of every selected entry, each tuned once")
      ("tier", po::value(&suite_tier)->value_name("quick|full"), "--suite: the entries of this tier (default quick)")
      ("entries", po::value(&suite_entries)->value_name("ID,..."), "--suite: only these entries")
      ("calibrate", po::value(&calibrate)->value_name("RESULTS"), "fit the cost model's coefficients to GPU measurements instead of tuning (writes -o FILE)");
  add_model_options(desc, src.model);
  add_global_options(desc, flags);
  auto args = strip_verbosity(argc, argv, first, flags.verbosity);
  po::variables_map vm;
  if (auto code = parse_command_line(args, desc, model_positional(), vm,
                                     "tessera tune -c EXPR [--tune-db FILE] [--trials N] [options]\n"
                                     "       tessera tune --suite FILE [--tier quick|full] [--entries ID,...] [options]\n"
                                     "       tessera tune MODEL [--layer N] [--seq-len S | --decode --cache-len C] [options]\n"
                                     "       tessera tune --calibrate RESULTS -o FILE"))
    return *code;
  if (!calibrate.empty()) return calibrate_cost_model_command(flags, calibrate);

  if (!suite_path.empty() && (!src.expr.empty() || !src.file.empty() || !src.from_ir.empty() || !src.model.model.empty())) {
    std::cerr << "error: tessera tune --suite tunes the suite's programs; give it or a program (-c, -f, --from-ir, MODEL), not both\n";
    return kExitUsage;
  }
  if (suite_path.empty() && (vm.count("tier") || vm.count("entries"))) {
    std::cerr << "error: tessera tune: --tier and --entries select entries of --suite FILE\n";
    return kExitUsage;
  }
  if (!parse_shard(shard, budget.shard_index, budget.shard_count)) {
    std::cerr << "error: tessera tune --shard must be I/N with 0 <= I < N, got '" << shard << "'\n";
    return kExitUsage;
  }
  if (measurer_name != "cost-model" && measurer_name != "gpu") {
    std::cerr << "error: tessera tune --measurer must be cost-model or gpu, got '" << measurer_name << "'\n";
    return kExitUsage;
  }
  if (!(gpu_timeout_s > 0) || gpu_iterations < 1) {
    std::cerr << "error: tessera tune: --gpu-timeout must be positive and --iterations at least 1\n";
    return kExitUsage;
  }
  if (vm.count("trials") && budget.trials < 1) {
    std::cerr << "error: tessera tune --trials must be at least 1\n";
    return kExitUsage;
  }
  if (vm.count("jobs") && budget.jobs < 1) {
    std::cerr << "error: tessera tune --jobs must be at least 1\n";
    return kExitUsage;
  }
  if (!vm.count("jobs")) budget.jobs = std::max(1u, std::thread::hardware_concurrency());
  if (budget.min_trials_per_task < 1 || budget.patience < 0 || budget.time_budget_s < 0) {
    std::cerr << "error: tessera tune: --min-trials must be at least 1, --patience and --time-budget not negative\n";
    return kExitUsage;
  }

  auto session = open_session(flags, std::cerr);
  if (!session) return kExitError;
  const std::string& tuner_name = session->pipeline.tuner.name;
  std::unique_ptr<Tuner> tuner = session->host.registry().make_tuner(tuner_name);
  if (!tuner) {
    std::cerr << "error: tessera tune: no tuner plugin '" << tuner_name << "' is loaded (the pipeline's `tuner:` names it";
    if (session->pipeline.tuner.loc.valid()) std::cerr << " at " << session->pipeline.tuner.loc.str();
    std::cerr << ")\n";
    return kExitUsage;
  }
  // The budget options of the pipeline's `tuner:` section (patience, max_trials: per task) are the
  // host's, unless the command line says otherwise; the other options belong to the tuner plugin.
  std::vector<KnobPin> tuner_options;
  for (const KnobPin& pin : session->pipeline.tuner.options) {
    const bool is_int = std::holds_alternative<int64_t>(pin.value);
    if (pin.knob == "patience" && is_int) {
      if (!vm.count("patience")) budget.patience = std::get<int64_t>(pin.value);
      continue;
    }
    if (pin.knob == "max_trials" && is_int) {
      budget.max_trials_per_task = std::get<int64_t>(pin.value);
      continue;
    }
    tuner_options.push_back(pin);
  }

  // The measurer: one cost model for every task, or one GPU measurer per task (it holds the
  // task's reference), made when the task's search starts.
  std::unique_ptr<CostModelMeasurer> cost_model;
  std::unique_ptr<CostModelMeasurer> prior;  // with --measurer gpu: the cost model ranks untried values
  std::vector<std::unique_ptr<GpuMeasurer>> gpu_measurers;
  GpuMeasurerOptions gpu_options;
  std::mutex gpu_lock;
  std::unique_ptr<Target> gpu_compiler;
  if (measurer_name == "cost-model") {
    Expected<CostModel> model = CostModel::load_default();
    if (!model) return report(std::cerr, model.error());
    cost_model = std::make_unique<CostModelMeasurer>(std::move(*model), *session->device);
  } else {
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) {
      std::cerr << "error: tessera tune --measurer gpu: cannot find the tessera binary to run as the worker: "
                << ec.message() << "\n";
      return kExitError;
    }
    gpu_options.worker_command = {self, "measure-worker"};
    for (const std::string& plugin : flags.plugins) {
      gpu_options.worker_command.push_back("--plugin");
      gpu_options.worker_command.push_back(plugin);
    }
    gpu_options.timeout_s = gpu_timeout_s;
    gpu_options.iterations = gpu_iterations;
    gpu_options.seed = budget.seed;
    Expected<GpuDeviceInfo> gpu = GpuMeasurer::probe(gpu_options);
    if (!gpu) {
      std::cerr << "error: tessera tune --measurer gpu: " << gpu.error().message
                << " (without a GPU, tune with --measurer cost-model)\n";
      return kExitError;
    }
    gpu_options.arch = flags.arch.empty() ? gpu->arch : flags.arch;
    adopt_gpu_device(*session, gpu->name, std::cerr);  // tasks compile for, and records name, the GPU measured
    Expected<CostModel> model = CostModel::load_default();
    if (!model) return report(std::cerr, model.error());
    prior = std::make_unique<CostModelMeasurer>(std::move(*model), *session->device);
    gpu_compiler = session->host.registry().make_target("cuda");
    gpu_options.compiler = gpu_compiler.get();
    gpu_options.gpu_lock = &gpu_lock;
    std::cerr << "tune: measuring on " << gpu->name << " (" << gpu->arch << ")\n";
  }
  const std::string measurer_label = cost_model ? std::string(cost_model->name()) : "gpu";

  // One program's tasks: the program to the end of the loop stage, then its distinct kernels.
  auto tasks_of = [&](const ProgramSource& program) -> std::optional<std::vector<TuningTaskGraph>> {
    auto graph = load_program(*session, program, std::cerr);
    if (!graph) return std::nullopt;
    if (graph->stage() > Dialect::Loop) {
      std::cerr << "error: tessera tune: the program is already in " << dialect_name(graph->stage())
                << " IR; tuning starts from the kernels as they enter the tile stage\n";
      return std::nullopt;
    }
    RunnerOptions ro;
    ro.stop_after = Dialect::Loop;
    ro.device = session->device;
    ro.verbosity = 0;
    std::ostringstream sink;
    ro.out = &sink;
    ro.err = &std::cerr;
    DiagnosticEngine diags;
    if (Status st = PipelineRunner(session->host.registry(), session->pipeline, ro).run(*graph, diags); !st) {
      std::cerr << diags.render_all();
      report(std::cerr, st.error());
      return std::nullopt;
    }
    Expected<std::vector<TuningTaskGraph>> found = extract_tuning_tasks(*graph);
    if (!found) {
      report(std::cerr, found.error());
      return std::nullopt;
    }
    return std::move(*found);
  };
  std::optional<std::vector<TuningTaskGraph>> tasks;
  if (suite_path.empty()) {
    tasks = tasks_of(src);
    if (!tasks) return kExitUsage;
  } else {
    // A suite: every entry's tasks, a kernel several entries share tuned once with their weights
    // summed (the records replay for every entry: they are keyed by the kernel, not the program).
    Expected<Suite> suite = load_suite(suite_path);
    if (!suite) return report(std::cerr, suite.error());
    Expected<std::vector<const SuiteEntry*>> selected = select_entries(*suite, suite_tier, split_entry_ids(suite_entries));
    if (!selected) {
      report(std::cerr, selected.error());
      return kExitUsage;
    }
    tasks.emplace();
    for (const SuiteEntry* e : *selected) {
      ProgramSource program;
      program.expr = e->program;
      program.label = "<" + e->id + ">";
      std::optional<std::vector<TuningTaskGraph>> found = tasks_of(program);
      if (!found) {
        std::cerr << "error: tessera tune --suite: entry '" << e->id << "' does not compile (above)\n";
        return kExitUsage;
      }
      for (TuningTaskGraph& t : *found) {
        auto same = std::find_if(tasks->begin(), tasks->end(),
                                 [&](const TuningTaskGraph& o) { return o.task.hash == t.task.hash; });
        if (same != tasks->end()) {
          same->task.weight += t.task.weight;
          continue;
        }
        t.task.name = e->id + "/" + t.task.name;
        tasks->push_back(std::move(t));
      }
    }
  }
  if (tasks->empty()) {
    std::cerr << "error: tessera tune: the program has no kernels to tune\n";
    return kExitUsage;
  }

  Expected<TuningDb> db = TuningDb::open(db_path, /*create=*/true);
  if (!db) return report(std::cerr, db.error());

  std::vector<TuneTask> task_list;
  for (const TuningTaskGraph& t : *tasks) task_list.push_back(t.task);
  const std::vector<int64_t> shares = split_trial_budget(task_list, budget);
  int64_t shard_budget = 0;
  size_t shard_tasks = 0;
  for (size_t i = 0; i < shares.size(); ++i)
    if (in_shard(i, budget.shard_index, budget.shard_count)) {
      shard_budget += shares[i];
      ++shard_tasks;
    }
  int64_t kernels = 0;
  for (const TuneTask& t : task_list) kernels += t.weight;
  std::cerr << "tune: " << kernels << " kernels, " << task_list.size() << " distinct";
  if (budget.shard_count > 1)
    std::cerr << ", shard " << budget.shard_index << "/" << budget.shard_count << " tunes " << shard_tasks;
  std::cerr << "; " << shard_budget << " trials at most (" << tuner->name() << ", " << measurer_label << ", "
            << session->device->name << ")\n";

  TuneReporter reporter(*session, *db, measurer_label, shard_tasks, shard_budget, flags.verbosity);
  auto measurer_for = [&](size_t i) -> Measurer& {
    if (cost_model) return *cost_model;
    gpu_measurers.push_back(std::make_unique<GpuMeasurer>(gpu_options, (*tasks)[i].graph));
    return *gpu_measurers.back();
  };
  TrialRunnerFactory runners = [&](size_t i) -> std::unique_ptr<TrialRunner> {
    return std::make_unique<PipelineTrialRunner>(session->host.registry(), session->pipeline, *session->device,
                                                 (*tasks)[i].graph, measurer_for(i), prior.get());
  };
  Expected<std::vector<TaskOutcome>> outcomes =
      tune_program(*tuner, task_list, runners, budget, tuner_options, reporter);
  if (!outcomes) return report(std::cerr, outcomes.error());
  if (!reporter.write_error().empty()) {
    std::cerr << reporter.write_error();
    return kExitError;
  }
  if (reporter.unmeasured() > 0) {
    std::cerr << "error: tessera tune: no schedule of " << reporter.unmeasured() << " of " << shard_tasks
              << " tasks compiled and measured (see each task's first failure above; -v lists every trial)\n";
    return kExitError;
  }
  std::cerr << "tune: " << reporter.trials() << " trials in " << clock_text(reporter.seconds()) << "; the program's kernels "
            << format_us(reporter.weighted_heuristic()) << " -> " << format_us(reporter.weighted_best()) << " ("
            << format_speedup(reporter.weighted_heuristic(), reporter.weighted_best()) << ", " << measurer_label
            << "); recorded in " << db_path << "\n";
  return kExitOk;
}

}  // namespace tessera::cli

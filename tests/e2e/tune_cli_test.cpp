// `tessera tune` end to end with the cost model: progress lines, the database it writes, replay
// by `compile --tune-db` (byte-identical, every tuned decision marked "(tuned)"), shards merging to
// the unsharded result, records of another device reported and not used, and usage errors.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "support/cli_runner.h"

namespace {

using tessera::test::CliResult;
using tessera::test::run_cli;
using tessera::test::TempDir;

constexpr const char* kRmsNorm = "nn.RMSNorm(2048)(torch.randn(1,32,2048))";
// Two distinct kernels (a matmul and a softmax), so two shards have a task each.
constexpr const char* kTwoKernels = "x=torch.randn(64,256); w=torch.randn(256,128); torch.softmax(x@w, dim=-1)";

// The JSON export without its "date" fields (they say when, not what).
std::string without_dates(const std::string& json) {
  return std::regex_replace(json, std::regex("\"date\": *\"[^\"]*\",?"), "");
}

TEST(TuneCli, TunesRmsNormAndCompileReplaysItByteIdentically) {
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  CliResult tune = run_cli({"tune", "-c", kRmsNorm, "--tune-db", db, "--trials", "24"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  EXPECT_NE(tune.err.find("tune: 1 kernels, 1 distinct; 24 trials at most (mcts, cost-model, h100)"), std::string::npos)
      << tune.err;
  EXPECT_TRUE(std::regex_search(tune.err, std::regex("tune: \\[1/1\\] rms_norm \\(x1\\): [0-9]+ trials, best [0-9.]+ us, "
                                                     "heuristic [0-9.]+ us, [0-9.]+x, elapsed")))
      << tune.err;
  EXPECT_NE(tune.err.find("recorded in " + db), std::string::npos) << tune.err;

  CliResult list = run_cli({"db", "list", db});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("rms_norm  cost-model"), std::string::npos) << list.out;

  CliResult a = run_cli({"compile", "-c", kRmsNorm, "--tune-db", db, "--ir", "kernel"});
  CliResult b = run_cli({"compile", "-c", kRmsNorm, "--tune-db", db, "--ir", "kernel"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.err.find("note: --tune-db " + db + ": tuned decisions for 1 of 1 kernels (1 of 1 distinct)"),
            std::string::npos)
      << a.err;
  // Every decision the tuner could make is replayed; only knobs with one candidate stay heuristic.
  std::smatch knobs;
  ASSERT_TRUE(std::regex_search(a.out, knobs, std::regex("# knobs: ([^\n]*)"))) << a.out;
  EXPECT_NE(knobs[1].str().find("(tuned)"), std::string::npos) << knobs[1];
  // The tuned schedule runs correctly on the simulator.
  CliResult run = run_cli({"run", "-c", kRmsNorm, "--tune-db", db, "--target", "sim"});
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
}

// A model's layers share their kernels: one task per distinct kernel, weighted by the layers, and
// the replay covers every layer's kernels.
TEST(TuneCli, AModelTunesEachDistinctKernelOnce) {
  TempDir dir;
  const std::string db = dir.path() + "/m.db";
  CliResult tune =
      run_cli({"tune", "Qwen/Qwen2.5-0.5B", "--seq-len", "4", "--tune-db", db, "--trials", "2", "--min-trials", "2"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  std::smatch header;
  ASSERT_TRUE(std::regex_search(tune.err, header, std::regex("tune: ([0-9]+) kernels, ([0-9]+) distinct"))) << tune.err;
  const int kernels = std::stoi(header[1]), distinct = std::stoi(header[2]);
  EXPECT_GE(kernels, 24 * distinct / 2) << tune.err;  // 24 layers share most kernels
  EXPECT_LT(distinct, 30) << tune.err;
  EXPECT_NE(tune.err.find("tune: [" + std::to_string(distinct) + "/" + std::to_string(distinct) + "] "),
            std::string::npos)
      << tune.err;
  EXPECT_TRUE(std::regex_search(tune.err, std::regex("\\(x24\\): "))) << tune.err;
  CliResult compile = run_cli({"compile", "Qwen/Qwen2.5-0.5B", "--seq-len", "4", "--tune-db", db});
  ASSERT_EQ(compile.exit_code, 0) << compile.err;
  EXPECT_NE(compile.err.find("tuned decisions for " + std::to_string(kernels) + " of " + std::to_string(kernels) +
                             " kernels (" + std::to_string(distinct) + " of " + std::to_string(distinct) + " distinct)"),
            std::string::npos)
      << compile.err;
}

// A suite's entries share kernels: one task per distinct kernel over every selected entry, named
// after the first entry that has it, weighted by all of them; --entries selects.
TEST(TuneCli, ASuiteTunesEachSharedKernelOnce) {
  TempDir dir;
  auto entry = [](const std::string& id, const std::string& family, const std::string& program) {
    return "  - id: " + id + "\n    family: " + family +
           "\n    model: TinyLlama-1.1B\n    phase: prefill\n    seq: 32\n    kv: 0\n    dtype: f32\n"
           "    tiers: [quick, full]\n    program: |\n      " + program + "\n";
  };
  const std::string suite =
      dir.write("suite.yaml", "version: 1\nentries:\n" + entry("a-norm", "norm", kRmsNorm) +
                                  entry("b-norm", "norm", kRmsNorm) +
                                  entry("c-softmax", "softmax", "torch.softmax(torch.randn(8, 512), dim=-1)"));
  const std::string db = dir.path() + "/s.db";
  CliResult tune = run_cli({"tune", "--suite", suite, "--tune-db", db, "--trials", "16"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  EXPECT_NE(tune.err.find("tune: 3 kernels, 2 distinct;"), std::string::npos) << tune.err;
  EXPECT_NE(tune.err.find("] a-norm/rms_norm (x2): "), std::string::npos) << tune.err;
  EXPECT_NE(tune.err.find("] c-softmax/softmax (x1): "), std::string::npos) << tune.err;
  CliResult list = run_cli({"db", "list", db});
  EXPECT_NE(list.out.find("a-norm/rms_norm"), std::string::npos) << list.out;
  // The second entry's kernel replays the first entry's record.
  CliResult compile = run_cli({"compile", "-c", kRmsNorm, "--tune-db", db});
  EXPECT_NE(compile.err.find("tuned decisions for 1 of 1 kernels"), std::string::npos) << compile.err;

  CliResult one = run_cli({"tune", "--suite", suite, "--entries", "c-softmax", "--tune-db", dir.path() + "/c.db",
                           "--trials", "8"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.err.find("tune: 1 kernels, 1 distinct;"), std::string::npos) << one.err;

  CliResult both = run_cli({"tune", "--suite", suite, "-c", kRmsNorm, "--tune-db", db});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("give it or a program"), std::string::npos) << both.err;
  CliResult unknown = run_cli({"tune", "--suite", suite, "--entries", "d-nothing", "--tune-db", db});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("d-nothing"), std::string::npos) << unknown.err;
}

TEST(TuneCli, VerboseListsEveryTrialWithItsDecisions) {
  TempDir dir;
  CliResult tune =
      run_cli({"tune", "-c", kRmsNorm, "--tune-db", dir.path() + "/t.db", "--trials", "8", "--min-trials", "8", "-v"});
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  EXPECT_TRUE(std::regex_search(tune.err, std::regex("  trial 1 rms_norm: [0-9.]+ us  rms_norm: [a-z_]+\\.[A-Z_]+=")))
      << tune.err;
  EXPECT_NE(tune.err.find("  trial 8 rms_norm: "), std::string::npos) << tune.err;
}

TEST(TuneCli, ShardsMergeToTheUnshardedDatabase) {
  TempDir dir;
  const std::vector<std::string> common = {"-c", kTwoKernels, "--trials", "24", "--seed", "7"};
  auto tune = [&](const std::string& db, const std::string& shard) {
    std::vector<std::string> args = {"tune", "--tune-db", db, "--shard", shard};
    args.insert(args.end(), common.begin(), common.end());
    CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  };
  CliResult s0 = tune(dir.path() + "/s0.db", "0/2");
  tune(dir.path() + "/s1.db", "1/2");
  tune(dir.path() + "/all.db", "0/1");
  EXPECT_NE(s0.err.find("shard 0/2 tunes 1"), std::string::npos) << s0.err;
  CliResult merge = run_cli({"db", "merge", dir.path() + "/s0.db", dir.path() + "/s1.db", "-o", dir.path() + "/m.db"});
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  CliResult merged = run_cli({"db", "export", dir.path() + "/m.db"});
  CliResult whole = run_cli({"db", "export", dir.path() + "/all.db"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_NE(whole.out.find("\"records\""), std::string::npos);
  EXPECT_EQ(without_dates(merged.out), without_dates(whole.out));
}

// Tasks searched on several threads give the same records as one after another.
TEST(TuneCli, JobsDoNotChangeTheResult) {
  TempDir dir;
  auto tune = [&](const std::string& db, const std::string& jobs) {
    CliResult r = run_cli({"tune", "-c", kTwoKernels, "--tune-db", db, "--trials", "24", "--seed", "3", "--jobs", jobs});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return run_cli({"db", "export", db}).out;
  };
  const std::string one = tune(dir.path() + "/one.db", "1");
  const std::string three = tune(dir.path() + "/three.db", "3");
  EXPECT_NE(one.find("\"records\""), std::string::npos);
  EXPECT_EQ(without_dates(one), without_dates(three));
}

// A spent time budget stops the searches; every task still gets its heuristic trial and a record.
TEST(TuneCli, ASpentTimeBudgetStillRecordsEveryTask) {
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  CliResult r = run_cli({"tune", "-c", kTwoKernels, "--tune-db", db, "--trials", "400", "--time-budget", "0.000001"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tune: [1/2] "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tune: [2/2] "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("): 1 trials, best "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tune: 2 trials in "), std::string::npos) << r.err;
  CliResult list = run_cli({"db", "list", db});
  EXPECT_NE(list.out.find("matmul"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("softmax"), std::string::npos) << list.out;
}

TEST(TuneCli, RecordsOfAnotherDeviceAreReportedNotUsed) {
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  ASSERT_EQ(run_cli({"tune", "-c", kRmsNorm, "--tune-db", db, "--trials", "8"}).exit_code, 0);
  CliResult other = run_cli({"compile", "-c", kRmsNorm, "--tune-db", db, "--device", "a100", "--ir", "kernel"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.err.find("tuned decisions for 0 of 1 kernels"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("not used: tuned for h100 (sm_90), this compile is for a100 (sm_80)"), std::string::npos)
      << other.err;
  EXPECT_EQ(other.out.find("(tuned)"), std::string::npos) << other.out;
}

TEST(TuneCli, UsageErrorsExitTwoAndNameTheProblem) {
  TempDir dir;
  const std::string db = dir.path() + "/t.db";
  CliResult shard = run_cli({"tune", "-c", kRmsNorm, "--tune-db", db, "--shard", "2/2"});
  EXPECT_EQ(shard.exit_code, 2);
  EXPECT_NE(shard.err.find("--shard must be I/N with 0 <= I < N, got '2/2'"), std::string::npos) << shard.err;
  CliResult measurer = run_cli({"tune", "-c", kRmsNorm, "--tune-db", db, "--measurer", "stopwatch"});
  EXPECT_EQ(measurer.exit_code, 2);
  EXPECT_NE(measurer.err.find("--measurer"), std::string::npos) << measurer.err;
  CliResult trials = run_cli({"tune", "-c", kRmsNorm, "--tune-db", db, "--trials", "0"});
  EXPECT_EQ(trials.exit_code, 2);
  CliResult missing = run_cli({"compile", "-c", kRmsNorm, "--tune-db", dir.path() + "/none.db"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("none.db: no such file"), std::string::npos) << missing.err;
  CliResult garbage_db = run_cli({"compile", "-c", kRmsNorm, "--tune-db", dir.write("junk.db", "not a database")});
  EXPECT_EQ(garbage_db.exit_code, 1);
  EXPECT_NE(garbage_db.err.find("junk.db"), std::string::npos) << garbage_db.err;
}

}  // namespace

#if TESSERA_HAVE_CUDA && defined(TESSERA_FAKE_CUDA_DIR)
namespace {

// The GPU measurer driven through the stand-in driver (tests/support/fake_cuda), which runs no
// kernel: outputs stay zero, so a candidate computing anything else is discarded as wrong, and
// one computing zeros is checked and timed (1 us per launch).
std::map<std::string, std::string> fake_driver_env() { return {{"LD_LIBRARY_PATH", TESSERA_FAKE_CUDA_DIR}}; }

TEST(TuneCli, GpuMeasurerDiscardsWrongCandidatesAndSaysWhy) {
  TempDir dir;
  CliResult r = run_cli({"tune", "-c", "x=torch.randn(64,64); x+1", "--tune-db", dir.path() + "/g.db", "--measurer",
                         "gpu", "--trials", "4", "--min-trials", "4"},
                        fake_driver_env());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("tune: measuring on Fake GPU"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no schedule compiled and measured (the first failure: wrong result: add"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("error: tessera tune: no schedule of 1 of 1 tasks compiled and measured"), std::string::npos)
      << r.err;
}

TEST(TuneCli, GpuMeasurerRecordsCheckedAndTimedCandidates) {
  TempDir dir;
  const std::string db = dir.path() + "/g.db";
  CliResult r = run_cli(
      {"tune", "-c", "x=torch.randn(64,64); x*0", "--tune-db", db, "--measurer", "gpu", "--trials", "4", "--min-trials", "4"},
      fake_driver_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CliResult list = run_cli({"db", "list", db});
  EXPECT_NE(list.out.find(" gpu "), std::string::npos) << list.out;
}

TEST(TuneCli, GpuMeasurerWithoutADriverStopsBeforeTuning) {
  TempDir dir;
  CliResult r = run_cli({"tune", "-c", kRmsNorm, "--tune-db", dir.path() + "/g.db", "--measurer", "gpu"},
                        {{"LD_LIBRARY_PATH", dir.path()}});
  if (r.exit_code == 0) GTEST_SKIP() << "a CUDA driver is installed here";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error: tessera tune --measurer gpu: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tune with --measurer cost-model"), std::string::npos) << r.err;
}

}  // namespace
#endif  // TESSERA_HAVE_CUDA && TESSERA_FAKE_CUDA_DIR

namespace {

// docs/tuning.md's first example block: each `$ tessera ...` command's lines must appear, in order,
// in what the command prints (stderr, then stdout), the elapsed times aside; "..." elides lines.
TEST(TuneCli, DocsShowTheOutputOfTheCli) {
  const std::string doc = tessera::test::read_file(TESSERA_SOURCE_DIR "/docs/tuning.md");
  const size_t start = doc.find("```text\n$ tessera tune");
  ASSERT_NE(start, std::string::npos) << "docs/tuning.md lost its tune example";
  const size_t end = doc.find("```\n", start + 8);
  std::istringstream block(doc.substr(start + 8, end - start - 8));
  struct Command {
    std::string line;
    std::vector<std::string> expected;
  };
  std::vector<Command> commands;
  for (std::string line; std::getline(block, line);) {
    if (line.rfind("$ tessera ", 0) == 0) commands.push_back({line.substr(10), {}});
    else if (!commands.empty() && line != "...") commands.back().expected.push_back(line);
  }
  ASSERT_EQ(commands.size(), 2u);
  auto mask = [](const std::string& s) {
    return std::regex_replace(s, std::regex("(elapsed|in) [0-9]+:[0-9]+"), "$1 T");
  };
  TempDir dir;
  for (const Command& c : commands) {
    // The doc's commands, split as a shell would (they quote only the program).
    std::vector<std::string> args;
    std::regex word("\"([^\"]*)\"|(\\S+)");
    for (auto it = std::sregex_iterator(c.line.begin(), c.line.end(), word); it != std::sregex_iterator(); ++it)
      args.push_back((*it)[1].matched ? (*it)[1].str() : (*it)[2].str());
    CliResult r = run_cli(args, {}, dir.path());
    ASSERT_EQ(r.exit_code, 0) << c.line << "\n" << r.err;
    std::istringstream printed(r.err + r.out);
    size_t next = 0;
    for (std::string line; std::getline(printed, line) && next < c.expected.size();)
      if (mask(line) == mask(c.expected[next])) ++next;
    EXPECT_EQ(next, c.expected.size()) << c.line << ": the doc's line\n  " << (next < c.expected.size() ? c.expected[next] : "")
                                       << "\nis not in what the CLI printed:\n" << r.err << r.out;
  }
}

}  // namespace

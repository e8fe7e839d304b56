// `tessera db` end to end: list, show, export, import and merge on databases the test writes with
// the library, usage errors, failures that leave no output file, and the listing that
// docs/tuning-database.md shows.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/cli_runner.h"
#include "tessera/tune/tuning_db.h"

namespace fs = std::filesystem;
using tessera::Decision;
using tessera::DecisionKey;
using tessera::TuningDb;
using tessera::TuningKey;
using tessera::TuningRecord;
using tessera::test::read_file;
using tessera::test::run_cli;
using tessera::test::TempDir;

namespace {

TuningRecord record(uint64_t kernel, double latency_us, const std::string& measurer = "cost-model") {
  TuningRecord r;
  r.key = TuningKey{kernel, "h100", "sm_90", "0.1.0", 0xabcdef0123456789ull};
  r.kernel_name = "k_kernel_" + std::to_string(kernel);
  r.decisions = {Decision{DecisionKey{kernel, "launch_geometry", "BN", 0}, int64_t{128}},
                 Decision{DecisionKey{kernel, "stage_inputs", "STAGE", 0}, std::string("128")},
                 Decision{DecisionKey{kernel, "split_reduce", "SPLIT", 1}, int64_t{4}},
                 Decision{DecisionKey{kernel + 1, "vectorize_loads", "WIDTH", 0}, int64_t{2}}};
  r.latency_us = latency_us;
  r.heuristic_latency_us = 2 * latency_us;
  r.measurer = measurer;
  r.trials = 12;
  r.date = "2025-06-01T12:00:00Z";
  return r;
}

// A database at dir/name holding `records`.
std::string make_db(const TempDir& dir, const std::string& name, const std::vector<TuningRecord>& records) {
  const std::string path = dir.path() + "/" + name;
  auto db = TuningDb::open(path, true);
  EXPECT_TRUE(db) << db.error().render();
  if (db) EXPECT_TRUE(db->put_all(records));
  return path;
}

std::vector<TuningRecord> records_of(const std::string& path) {
  auto db = TuningDb::open(path, false);
  EXPECT_TRUE(db) << db.error().render();
  if (!db) return {};
  auto all = db->all();
  EXPECT_TRUE(all) << all.error().render();
  return all ? *all : std::vector<TuningRecord>{};
}

TEST(DbCli, ListPrintsOneAlignedLinePerRecord) {
  TempDir dir;
  const std::string db = make_db(dir, "a.db", {record(2, 12.5), record(1, 3.25, "gpu"), record(1, 4)});
  auto r = run_cli({"db", "list", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string key1 = "0000000000000001/h100/sm_90/0.1.0/abcdef0123456789";
  const std::string key2 = "0000000000000002/h100/sm_90/0.1.0/abcdef0123456789";
  EXPECT_EQ(r.out,
            "key                                                 kernel      measurer    latency (us)  heuristic (us)  speedup  trials  date\n" +
                key1 + "  k_kernel_1  cost-model          4.00            8.00    2.00x      12  2025-06-01T12:00:00Z\n" + key1 +
                "  k_kernel_1  gpu                 3.25            6.50    2.00x      12  2025-06-01T12:00:00Z\n" + key2 +
                "  k_kernel_2  cost-model         12.50           25.00    2.00x      12  2025-06-01T12:00:00Z\n");
  EXPECT_EQ(run_cli({"db", "list", db}).out, r.out);
}

TEST(DbCli, ShowPrintsTheRecordWithOneLinePerDecision) {
  TempDir dir;
  const std::string db = make_db(dir, "a.db", {record(1, 4), record(1, 3.25, "gpu"), record(2, 1)});
  const std::string key = "0000000000000001/h100/sm_90/0.1.0/abcdef0123456789";
  auto r = run_cli({"db", "show", db, key});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string cost_model_record =
      "record " + key +
      "\n"
      "  kernel     k_kernel_1\n"
      "  measurer   cost-model\n"
      "  latency    4.00 us\n"
      "  heuristic  8.00 us (speedup 2.00x)\n"
      "  trials     12\n"
      "  date       2025-06-01T12:00:00Z\n"
      "  decisions  4\n"
      "    launch_geometry.BN = 128\n"
      "    stage_inputs.STAGE = \"128\"\n"
      "    split_reduce.SPLIT#1 = 4\n"
      "    vectorize_loads.WIDTH@0000000000000002 = 2\n";
  EXPECT_EQ(r.out.substr(0, cost_model_record.size()), cost_model_record) << r.out;
  EXPECT_NE(r.out.find("\n\nrecord " + key + "\n  kernel     k_kernel_1\n  measurer   gpu\n"), std::string::npos) << r.out;
  // A kernel hash alone shows the kernel's every record.
  EXPECT_EQ(run_cli({"db", "show", db, "1"}).out, r.out);

  r = run_cli({"db", "show", db, "0000000000000003/h100/sm_90/0.1.0/abcdef0123456789"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: tessera db show: no record of key 0000000000000003/h100/sm_90/0.1.0/abcdef0123456789 in '" + db + "'\n");
  r = run_cli({"db", "show", db, "not-a-key"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: tessera db show: 'not-a-key' is not a key", 0), 0u) << r.err;
}

TEST(DbCli, ExportThenImportGivesTheSameRecords) {
  TempDir dir;
  const std::vector<TuningRecord> records = {record(1, 4), record(2, 1, "gpu")};
  const std::string db = make_db(dir, "a.db", records);
  auto exported = run_cli({"db", "export", db});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  auto parsed = TuningDb::from_json(exported.out, "stdout");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(*parsed, records_of(db));

  const std::string json = dir.write("x.json", exported.out);
  const std::string copy = dir.path() + "/copy.db";
  auto r = run_cli({"db", "import", json, "-o", copy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(records_of(copy), records_of(db));
  EXPECT_EQ(run_cli({"db", "export", copy}).out, exported.out);
  // -o writes the JSON to a file.
  ASSERT_EQ(run_cli({"db", "export", copy, "-o", dir.path() + "/y.json"}).exit_code, 0);
  EXPECT_EQ(read_file(dir.path() + "/y.json"), exported.out);

  // Into an existing database: added, the faster record per key kept.
  const std::string existing = make_db(dir, "existing.db", {record(1, 2), record(3, 5)});
  r = run_cli({"db", "import", json, "-o", existing});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(records_of(existing), (std::vector<TuningRecord>{record(1, 2), record(2, 1, "gpu"), record(3, 5)}));
}

TEST(DbCli, MergeKeepsTheFastestAndIgnoresInputOrder) {
  TempDir dir;
  TuningRecord slow_1 = record(1, 9), fast_1 = record(1, 4);
  fast_1.trials = 30;
  const std::string a = make_db(dir, "a.db", {slow_1, record(2, 1), record(5, 5, "gpu")});
  const std::string b = make_db(dir, "b.db", {fast_1, record(2, 3)});
  const std::string c = make_db(dir, "c.db", {record(4, 7)});
  auto r = run_cli({"db", "merge", a, b, c, "-o", dir.path() + "/abc.db"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"db", "merge", c, b, a, "-o", dir.path() + "/cba.db"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<TuningRecord> expected = {fast_1, record(2, 1), record(4, 7), record(5, 5, "gpu")};
  EXPECT_EQ(records_of(dir.path() + "/abc.db"), expected);
  EXPECT_EQ(run_cli({"db", "export", dir.path() + "/abc.db"}).out, run_cli({"db", "export", dir.path() + "/cba.db"}).out);
  // Only the databases are left: no temporary files, no logs of closed databases.
  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(dir.path())) files.push_back(f.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"a.db", "abc.db", "b.db", "c.db", "cba.db"}));
}

TEST(DbCli, FailuresLeaveNoOutputAndNameTheFile) {
  TempDir dir;
  const std::string a = make_db(dir, "a.db", {record(1, 4)});
  const std::string garbage = dir.write("garbage.db", std::string(2048, 'g'));
  const std::string out = dir.path() + "/out.db";
  auto r = run_cli({"db", "merge", a, garbage, "-o", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, garbage + ": error: not an SQLite database, so not a tuning database\n");
  EXPECT_FALSE(fs::exists(out));

  const std::string bad_json = dir.write("bad.json", R"({"format": "tessera-tuning-db", "version": 1, "records": [{"kernel": 5}]})");
  r = run_cli({"db", "import", bad_json, "-o", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind(bad_json + ": error: records[0]: missing field 'device'", 0), 0u) << r.err;
  EXPECT_FALSE(fs::exists(out));

  r = run_cli({"db", "list", dir.path() + "/missing.db"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, dir.path() + "/missing.db: error: no such tuning database (the file does not exist)\n");
  EXPECT_FALSE(fs::exists(dir.path() + "/missing.db"));
}

TEST(DbCli, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"db"}, {"db", "frobnicate"}, {"db", "list"}, {"db", "merge", "a.db"}, {"db", "import", "x.json"},
           {"db", "list", "--bogus", "a.db"}}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("usage: tessera db"), std::string::npos) << r.err;
  }
  auto r = run_cli({"db", "merge", "a.db"});
  EXPECT_EQ(r.err, "error: tessera db merge: -o OUT.db names the database to write\n"
                   "usage: tessera db merge A.db B.db ... -o OUT.db (see --help)\n");
  EXPECT_EQ(run_cli({"db", "--help"}).exit_code, 0);
  EXPECT_EQ(run_cli({"db", "list", "--help"}).exit_code, 0);
}

// The text of the fenced block that follows the line `after` in `doc`.
std::string block_after(const std::string& doc, const std::string& after) {
  std::istringstream is(doc);
  std::string line, block;
  bool found = false;
  while (std::getline(is, line)) {
    if (!found) {
      found = line == after;
      continue;
    }
    if (line.rfind("```", 0) == 0) break;
    block += line + "\n";
  }
  return block;
}

// docs/tuning-database.md shows `db list` and `db show` of examples/tuning/shared.json imported:
// the CLI's output, byte for byte.
TEST(DbCli, DocsShowTheOutputOfTheCli) {
  TempDir dir;
  const std::string doc = read_file(std::string(TESSERA_SOURCE_DIR) + "/docs/tuning-database.md");
  auto r = run_cli({"db", "import", "examples/tuning/shared.json", "-o", dir.path() + "/t.db"}, {}, TESSERA_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"db", "list", "t.db"}, {}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(block_after(doc, "$ tessera db list t.db"), r.out);
  const std::string show = "$ tessera db show t.db ";
  const size_t at = doc.find(show);
  ASSERT_NE(at, std::string::npos);
  const std::string key = doc.substr(at + show.size(), doc.find('\n', at) - at - show.size());
  r = run_cli({"db", "show", "t.db", key}, {}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(block_after(doc, show + key), r.out);
}

}  // namespace

// The tuning database (tune/tuning_db.h): records round-trip through the SQLite file and the JSON
// export with their decision values' types intact, put keeps the faster record, bad files and
// bad JSON are errors that name the file and the field, and a writer killed with SIGKILL in the
// middle of its writes leaves a database that checks, reads back whole and takes new writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "support/cli_runner.h"
#include "tessera/tune/tuning_db.h"

namespace {

using tessera::AttrValue;
using tessera::Decision;
using tessera::DecisionKey;
using tessera::TuningDb;
using tessera::TuningKey;
using tessera::TuningRecord;
using tessera::test::TempDir;

TuningKey key_of(uint64_t kernel, const std::string& device = "h100") {
  return TuningKey{kernel, device, "sm_90", "0.1.0", 0xfeedface12345678ull};
}

Decision decision(uint64_t kernel, const std::string& pass, const std::string& knob, AttrValue value, int ordinal = 0) {
  return Decision{DecisionKey{kernel, pass, knob, ordinal}, std::move(value)};
}

TuningRecord record(uint64_t kernel, double latency_us, const std::string& measurer = "cost-model") {
  TuningRecord r;
  r.key = key_of(kernel);
  r.kernel_name = "k_" + std::to_string(kernel);
  r.decisions = {decision(kernel, "launch_geometry", "BN", int64_t{128}),
                 decision(kernel, "cooperative_reduce", "THREADS", int64_t{256}, 1)};
  r.latency_us = latency_us;
  r.heuristic_latency_us = latency_us * 1.5;
  r.measurer = measurer;
  r.trials = 17;
  r.date = "2025-01-02T03:04:05Z";
  return r;
}

// Values of every type, and strings that read like other types (knob_value_str quotes them).
std::vector<Decision> tricky_decisions(uint64_t kernel) {
  return {decision(kernel, "p", "INT", int64_t{128}),
          decision(kernel, "p", "INT_TEXT", std::string("128")),
          decision(kernel, "p", "NEG", int64_t{-3}),
          decision(kernel, "p", "FLOAT", 0.5),
          decision(kernel, "p", "WHOLE_FLOAT", 1.0),
          decision(kernel, "p", "FLOAT_TEXT", std::string("1e3")),
          decision(kernel, "p", "BOOL", true),
          decision(kernel, "p", "BOOL_TEXT", std::string("false")),
          decision(kernel, "p", "AUTO_TEXT", std::string("auto")),
          decision(kernel, "p", "WORD", std::string("tanh")),
          decision(kernel, "p", "EMPTY", std::string()),
          decision(kernel, "p", "PUNCTUATED", std::string("a,b: \"c\" [d]\n#e\\")),
          decision(kernel, "p", "LIST", std::vector<int64_t>{1, -2, 3}),
          decision(kernel, "p", "EMPTY_LIST", std::vector<int64_t>{}),
          decision(kernel + 1, "other_pass", "X", int64_t{7}, 2)};
}

std::string db_path(const TempDir& dir, const std::string& name = "t.db") { return dir.path() + "/" + name; }

TEST(TuningKey, PrintsAndParsesBack) {
  const TuningKey k = key_of(0x9f3c0a1b2c3d4e5full);
  EXPECT_EQ(k.str(), "9f3c0a1b2c3d4e5f/h100/sm_90/0.1.0/feedface12345678");
  TuningKey back;
  ASSERT_TRUE(TuningKey::parse(k.str(), back));
  EXPECT_EQ(back, k);
  for (const char* bad : {"", "9f3c/h100/sm_90/0.1.0", "9f3c/h100/sm_90/0.1.0/12/", "xyz/h100/sm_90/0.1.0/12",
                          "9f3c/h100/sm_90/0.1.0/12345678901234567", "9f3c//sm_90/0.1.0/12", "9f3c/h100/sm_90/0.1.0/12/x"})
    EXPECT_FALSE(TuningKey::parse(bad, back)) << bad;
}

TEST(TuningDb, PutGetAndAllRoundTrip) {
  TempDir dir;
  auto db = TuningDb::open(db_path(dir), /*create=*/true);
  ASSERT_TRUE(db) << db.error().render();
  TuningRecord a = record(3, 10), b = record(1, 20), c = record(2, 30), gpu = record(1, 25, "gpu");
  b.decisions = tricky_decisions(1);
  for (const TuningRecord& r : {a, b, c, gpu}) ASSERT_TRUE(db->put(r)) << db->put(r).message();

  auto got = db->get(b.key, "cost-model");
  ASSERT_TRUE(got) << got.error().render();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, b);
  // Any measurer: the fastest.
  got = db->get(b.key);
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ((*got)->measurer, "cost-model");
  got = db->get(b.key, "gpu");
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ(**got, gpu);
  got = db->get(key_of(1, "a100"));
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->has_value());

  auto all = db->all();
  ASSERT_TRUE(all) << all.error().render();
  EXPECT_EQ(*all, (std::vector<TuningRecord>{b, gpu, c, a}));  // by key, then measurer

  auto kernel1 = db->find_kernel(1);
  ASSERT_TRUE(kernel1);
  EXPECT_EQ(*kernel1, (std::vector<TuningRecord>{b, gpu}));

  // Reopened from the file: the same records.
  auto again = TuningDb::open(db_path(dir), /*create=*/false);
  ASSERT_TRUE(again) << again.error().render();
  auto reread = again->all();
  ASSERT_TRUE(reread);
  EXPECT_EQ(*reread, *all);
}

TEST(TuningDb, DecisionValuesKeepTheirTypes) {
  TempDir dir;
  auto db = TuningDb::open(db_path(dir), true);
  ASSERT_TRUE(db) << db.error().render();
  TuningRecord r = record(5, 1);
  r.decisions = tricky_decisions(5);
  ASSERT_TRUE(db->put(r));
  auto got = db->get(r.key);
  ASSERT_TRUE(got && got->has_value());
  const std::vector<Decision>& ds = (*got)->decisions;
  ASSERT_EQ(ds.size(), r.decisions.size());
  for (size_t i = 0; i < ds.size(); ++i) {
    EXPECT_EQ(ds[i].key, r.decisions[i].key) << i;
    EXPECT_EQ(ds[i].value.index(), r.decisions[i].value.index()) << ds[i].key.str();
    EXPECT_EQ(ds[i].value, r.decisions[i].value) << ds[i].key.str();
  }
  // The stored text: "128" the string is quoted, 128 the integer is not.
  const std::string json = TuningDb::to_json({r});
  EXPECT_NE(json.find(R"("knob": "INT",)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("value": "128")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("value": "\"128\"")"), std::string::npos) << json;
}

TEST(TuningDb, PutKeepsTheFasterRecordPerKeyAndMeasurer) {
  TempDir dir;
  auto db = TuningDb::open(db_path(dir), true);
  ASSERT_TRUE(db);
  TuningRecord first = record(1, 10);
  ASSERT_TRUE(db->put(first));
  TuningRecord slower = record(1, 12);
  slower.trials = 99;
  ASSERT_TRUE(db->put(slower));
  EXPECT_EQ(**db->get(first.key), first);

  TuningRecord tie = record(1, 10);
  tie.trials = 5;
  ASSERT_TRUE(db->put(tie));
  EXPECT_EQ(**db->get(first.key), first) << "a tie keeps the stored record";

  TuningRecord faster = record(1, 8);
  faster.decisions = {decision(1, "launch_geometry", "BN", int64_t{64})};
  ASSERT_TRUE(db->put(faster));
  EXPECT_EQ(**db->get(first.key), faster);

  // Another measurer's record is kept beside it, even when slower.
  TuningRecord gpu = record(1, 50, "gpu");
  ASSERT_TRUE(db->put(gpu));
  EXPECT_EQ(**db->get(first.key, "gpu"), gpu);
  EXPECT_EQ(db->all()->size(), 2u);
}

TEST(TuningDb, PutRefusesRecordsThatWouldNotReadBack) {
  TempDir dir;
  auto db = TuningDb::open(db_path(dir), true);
  ASSERT_TRUE(db);
  TuningRecord slash = record(1, 10);
  slash.key.device = "h100/x";
  tessera::Status s = db->put(slash);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("device must be"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(db_path(dir)), std::string::npos) << s.message();
  TuningRecord nan = record(1, std::nan(""));
  s = db->put(nan);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("latency_us must be a positive number, got nan"), std::string::npos) << s.message();
  // put_all applies all or nothing.
  ASSERT_FALSE(db->put_all({record(2, 1), nan}));
  EXPECT_TRUE(db->all()->empty());
}

TEST(TuningDb, JsonExportImportRoundTrip) {
  TuningRecord a = record(2, 10), b = record(1, 3.25, "gpu");
  a.decisions = tricky_decisions(2);
  const std::string json = TuningDb::to_json({b, a});
  EXPECT_NE(json.find(R"("format": "tessera-tuning-db")"), std::string::npos) << json;
  auto back = TuningDb::from_json(json, "x.json");
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_EQ(*back, (std::vector<TuningRecord>{b, a}));
  EXPECT_EQ(TuningDb::to_json(*back), json);

  // Through a database and out again: the same text.
  TempDir dir;
  auto db = TuningDb::open(db_path(dir), true);
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->put_all(*back));
  EXPECT_EQ(TuningDb::to_json(*db->all()), json);
}

TEST(TuningDb, MergingIsOrderIndependent) {
  std::vector<TuningRecord> shard_a = {record(1, 10), record(2, 7), record(3, 4, "gpu")};
  std::vector<TuningRecord> shard_b = {record(1, 9), record(2, 8), record(4, 1)};
  shard_b[0].trials = 3;
  TempDir dir;
  auto ab = TuningDb::open(db_path(dir, "ab.db"), true);
  auto ba = TuningDb::open(db_path(dir, "ba.db"), true);
  ASSERT_TRUE(ab && ba);
  ASSERT_TRUE(ab->put_all(shard_a));
  ASSERT_TRUE(ab->put_all(shard_b));
  ASSERT_TRUE(ba->put_all(shard_b));
  ASSERT_TRUE(ba->put_all(shard_a));
  EXPECT_EQ(*ab->all(), *ba->all());
  EXPECT_EQ(*ab->all(), (std::vector<TuningRecord>{shard_b[0], shard_a[1], shard_a[2], shard_b[2]}));
}

// Runs one SQL statement on `path` with the SQLite API directly (what a foreign tool would do).
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(TuningDb, OpenErrorsNameTheFile) {
  TempDir dir;
  const std::string missing = db_path(dir, "missing.db");
  auto db = TuningDb::open(missing, /*create=*/false);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().render(), missing + ": error: no such tuning database (the file does not exist)\n");

  const std::string garbage = dir.write("garbage.db", std::string(4096, 'x'));
  db = TuningDb::open(garbage, false);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().render(), garbage + ": error: not an SQLite database, so not a tuning database\n");
  EXPECT_EQ(tessera::test::read_file(garbage), std::string(4096, 'x')) << "left untouched";

  const std::string empty = dir.write("empty.db", "");
  db = TuningDb::open(empty, false);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().render().find(empty + ": error: an empty file"), std::string::npos) << db.error().render();

  const std::string foreign = db_path(dir, "foreign.db");
  raw_sql(foreign, "CREATE TABLE notes (text TEXT)");
  db = TuningDb::open(foreign, true);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().render().find(foreign + ": error: an SQLite database, but not a tuning database"), std::string::npos)
      << db.error().render();

  const std::string future = db_path(dir, "future.db");
  ASSERT_TRUE(TuningDb::open(future, true));
  raw_sql(future, "PRAGMA user_version = 7");
  db = TuningDb::open(future, false);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().render(),
            future + ": error: a tuning database of schema version 7; this Tessera reads version 1\n");

  db = TuningDb::open(dir.path() + "/no/such/dir/t.db", true);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().render().find("/no/such/dir/t.db: error: cannot open or create"), std::string::npos)
      << db.error().render();
}

TEST(TuningDb, BadRowsAreErrorsNamingTheRecord) {
  TempDir dir;
  const std::string path = db_path(dir);
  {
    auto db = TuningDb::open(path, true);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->put(record(1, 10)));
  }
  raw_sql(path, R"(UPDATE records SET decisions = '[{"pass": "p", "knob": "K", "ordinal": 0, "kernel": "1", "value": "{a: 1}"}]')");
  auto db = TuningDb::open(path, false);
  ASSERT_TRUE(db);
  auto all = db->all();
  ASSERT_FALSE(all);
  EXPECT_EQ(all.error().render(), path + ": error: record 0000000000000001/h100/sm_90/0.1.0/feedface12345678 (cost-model): "
                                         "decisions[0].value: '{a: 1}' is not a knob value (true, 128, 0.5, tanh, \"128\", [1, 2])\n");
}

// Each case: JSON text, and the message from_json gives.
TEST(TuningDb, MalformedJsonNamesTheRecordAndField) {
  const std::string good = TuningDb::to_json({record(1, 10), record(2, 20)});
  auto replaced = [&](const std::string& from, const std::string& to, int occurrence = 0) {
    std::string s = good;
    size_t at = s.find(from);
    for (int i = 0; i < occurrence; ++i) at = s.find(from, at + 1);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {replaced(R"("latency_us": 20.0)", R"("latency_us": "fast")"),
       "records[1].latency_us: must be a number, got string \"fast\""},
      {replaced(R"("trials": 17)", R"("trials": 1.5)", 1), "records[1].trials: must be an integer, got number 1.5"},
      {replaced(R"("kernel": "0000000000000002")", R"("kernel": "xyz")"),
       "records[1].kernel: must be a hash of 1 to 16 hex digits, got 'xyz'"},
      {replaced(R"("value": "128")", R"("value": "[[1]]")"),
       "records[0].decisions[0].value: '[[1]]' is not a knob value (true, 128, 0.5, tanh, \"128\", [1, 2])"},
      {replaced(R"("ordinal": 1)", R"("ordinal": -1)"), "records[0].decisions[1].ordinal: must be from 0 to 2147483647, got -1"},
      {replaced(R"("date")", R"("dates")"), "records[0].dates: unknown field (expected kernel, device, compute_capability, "
                                            "version, pipeline, measurer, kernel_name, latency_us, heuristic_latency_us, "
                                            "trials, date, decisions)"},
      {replaced(R"("measurer": "cost-model",)", "", 1), "records[1]: missing field 'measurer'"},
      {replaced(R"("device": "h100")", R"("device": "")"),
       "records[0]: device must be a non-empty word without '/', spaces or control characters, got ''"},
      {replaced(R"("format": "tessera-tuning-db")", R"("format": "other")"),
       "not a tuning-database export: \"format\" must be \"tessera-tuning-db\""},
      {replaced(R"("version": 1)", R"("version": 2)"), "format version 2; this Tessera reads version 1"},
      {"[1, 2]", "a tuning-database export must be a JSON object"},
      {std::string(100, '[') + std::string(100, ']'), "JSON nested deeper than 8 levels, deeper than the tuning-database format"},
  };
  for (const Case& c : cases) {
    auto r = TuningDb::from_json(c.text, "shared.json");
    ASSERT_FALSE(r) << c.message;
    EXPECT_EQ(r.error().render(), "shared.json: error: " + c.message + "\n");
  }
  // A syntax error is located.
  auto r = TuningDb::from_json("{\n  \"format\": ,\n}", "shared.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().render().rfind("shared.json:2:13: error: invalid JSON: ", 0), 0u) << r.error().render();
}

// A record whose content follows from `i`, so the reader can tell a whole record from a torn one:
// i decisions, the last one long enough to spill the row over several database pages.
TuningRecord crash_record(uint64_t i) {
  TuningRecord r = record(i, static_cast<double>(i));
  r.decisions.clear();
  for (uint64_t d = 0; d < 1 + i % 7; ++d)
    r.decisions.push_back(decision(i, "pass" + std::to_string(d), "K", static_cast<int64_t>(i * 100 + d)));
  r.decisions.push_back(decision(i, "stage_inputs", "STAGE", std::string(3000 + i % 1000, static_cast<char>('a' + i % 26))));
  r.trials = static_cast<int64_t>(r.decisions.size());
  return r;
}

// Kills the writer process however the test ends.
struct ChildGuard {
  pid_t pid;
  ~ChildGuard() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

TEST(TuningDbCrash, WriterKilledMidWriteLeavesAUsableDatabase) {
  TempDir dir;
  const std::string path = db_path(dir);
  ASSERT_TRUE(TuningDb::open(path, true));

  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child writes forever, one transaction per record, until it is killed.
    auto db = TuningDb::open(path, false);
    if (!db) _exit(3);
    for (uint64_t i = 1;; ++i)
      if (!db->put(crash_record(i))) _exit(4);
  }
  ChildGuard guard{pid};

  // Wait until the child has committed a few records, reading while it writes.
  size_t committed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (committed < 25 && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the writer stopped by itself, exit " << WEXITSTATUS(status);
    auto db = TuningDb::open(path, false);
    ASSERT_TRUE(db) << db.error().render();
    auto all = db->all();
    ASSERT_TRUE(all) << all.error().render();
    committed = all->size();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(committed, 25u) << "the writer committed too little in 30 s";
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  guard.pid = 0;
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer ended before it was killed";

  // The file checks.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* check = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &check, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(check), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(check, 0)), "ok");
  sqlite3_finalize(check);
  sqlite3_close(raw);

  // Every committed record reads back whole: records 1..n, each exactly as written.
  auto db = TuningDb::open(path, false);
  ASSERT_TRUE(db) << db.error().render();
  auto all = db->all();
  ASSERT_TRUE(all) << all.error().render();
  ASSERT_GE(all->size(), committed);
  for (size_t i = 0; i < all->size(); ++i) {
    const TuningRecord expected = crash_record(i + 1);
    ASSERT_EQ((*all)[i], expected) << "record " << i + 1 << " of " << all->size();
    EXPECT_EQ((*all)[i].decisions.size(), static_cast<size_t>((*all)[i].trials));
  }

  // And it takes new writes.
  const TuningRecord next = record(1u << 30, 1);
  ASSERT_TRUE(db->put(next));
  auto got = db->get(next.key);
  ASSERT_TRUE(got && got->has_value());
  EXPECT_EQ(**got, next);
}

}  // namespace

// TuningDb: the tuning database on SQLite, and its JSON export format.
//
// One table, one row per (key, measurer), the decisions a JSON array in a column. The file is
// marked as ours by PRAGMA application_id and versioned by PRAGMA user_version, so opening another
// SQLite file, or one of another schema version, is an error naming it, and it is never touched.
// The journal is a write-ahead log and every write is one BEGIN IMMEDIATE transaction: a process
// killed at any point leaves the last committed state, and the busy timeout lets the shards of a
// tuning job write to one file. synchronous=FULL: a commit also survives a power loss; writes are
// rare (a task's new best), so the fsync per commit costs nothing that matters.
// docs/tuning-database.md describes the schema; tests: tests/unit/tuning_db_test.cpp.
#include "tessera/tune/tuning_db.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "tuning_record_json.h"

namespace tessera {

namespace {

constexpr int kSchemaVersion = 1;
// PRAGMA application_id: "TSDB", the mark of a Tessera tuning database.
constexpr int kApplicationId = 0x54534442;
// How long a write waits for another process's transaction (a shard writing the same file).
constexpr int kBusyTimeoutMs = 10000;
constexpr const char* kJsonFormat = "tessera-tuning-db";
constexpr int kJsonFormatVersion = 1;

// The hashes are stored as hash_hex text (fixed width, so their text order is their numeric
// order, and the file reads well in the sqlite3 shell).
constexpr const char* kCreateSchema = R"sql(
CREATE TABLE records (
  kernel TEXT NOT NULL,
  device TEXT NOT NULL,
  compute_capability TEXT NOT NULL,
  version TEXT NOT NULL,
  pipeline TEXT NOT NULL,
  measurer TEXT NOT NULL,
  kernel_name TEXT NOT NULL,
  latency_us REAL NOT NULL,
  heuristic_latency_us REAL NOT NULL,
  trials INTEGER NOT NULL,
  date TEXT NOT NULL,
  decisions TEXT NOT NULL,
  PRIMARY KEY (kernel, device, compute_capability, version, pipeline, measurer)
) WITHOUT ROWID;
)sql";

constexpr const char* kRecordColumns =
    "kernel, device, compute_capability, version, pipeline, measurer, kernel_name, latency_us, "
    "heuristic_latency_us, trials, date, decisions";
constexpr const char* kKeyOrder = " ORDER BY kernel, device, compute_capability, version, pipeline, measurer";

// Keeps the stored row unless the new one is strictly faster (ties keep the stored one).
constexpr const char* kUpsertFaster = R"sql(
INSERT INTO records (kernel, device, compute_capability, version, pipeline, measurer, kernel_name,
                     latency_us, heuristic_latency_us, trials, date, decisions)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
ON CONFLICT (kernel, device, compute_capability, version, pipeline, measurer) DO UPDATE SET
  kernel_name = excluded.kernel_name, latency_us = excluded.latency_us,
  heuristic_latency_us = excluded.heuristic_latency_us, trials = excluded.trials, date = excluded.date,
  decisions = excluded.decisions
WHERE excluded.latency_us < records.latency_us
)sql";

Diagnostic file_error(const std::string& path, std::string message) {
  Diagnostic d = make_error(std::move(message));
  d.loc.file = path;
  return d;
}

Diagnostic sqlite_error(sqlite3* db, const std::string& path, const std::string& doing) {
  // SQLite finds out on the first read of a file that it is not one of its own.
  if (db && sqlite3_errcode(db) == SQLITE_NOTADB) return file_error(path, "not an SQLite database, so not a tuning database");
  return file_error(path, doing + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

// A prepared statement, finalized when it goes out of scope.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path) : db_(db), path_(path) {}
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Status prepare(const std::string& sql) {
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
      return sqlite_error(db_, path_, "cannot read the tuning database");
    return Status::ok();
  }
  void bind(int i, const std::string& text) { sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT); }
  void bind(int i, double d) { sqlite3_bind_double(stmt_, i, d); }
  void bind(int i, int64_t n) { sqlite3_bind_int64(stmt_, i, n); }
  // SQLITE_ROW or SQLITE_DONE, else an error.
  Expected<int> step(const std::string& doing) {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) return rc;
    return sqlite_error(db_, path_, doing);
  }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

Status exec(sqlite3* db, const std::string& path, const std::string& sql, const std::string& doing) {
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK) return Status::ok();
  return sqlite_error(db, path, doing);
}

// One pragma's integer value.
Expected<int64_t> pragma_int(sqlite3* db, const std::string& path, const std::string& pragma) {
  Statement s(db, path);
  TESSERA_TRY(s.prepare("PRAGMA " + pragma));
  TESSERA_ASSIGN_OR_RETURN(int row, s.step("cannot read the database header"));
  return row == SQLITE_ROW ? s.integer(0) : 0;
}

// BEGIN IMMEDIATE (the write lock taken at once, so two writers wait on the busy timeout instead
// of failing on upgrade); rolled back unless committed.
class WriteTransaction {
 public:
  WriteTransaction(sqlite3* db, const std::string& path) : db_(db), path_(path) {}
  ~WriteTransaction() {
    if (open_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  Status begin() {
    TESSERA_TRY(exec(db_, path_, "BEGIN IMMEDIATE", "cannot write to the tuning database"));
    open_ = true;
    return Status::ok();
  }
  Status commit() {
    TESSERA_TRY(exec(db_, path_, "COMMIT", "cannot commit to the tuning database"));
    open_ = false;
    return Status::ok();
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool open_ = false;
};

std::string where_of(const TuningRecord& r) { return "record " + r.key.str() + " (" + r.measurer + ")"; }

Expected<TuningRecord> read_record(const Statement& s, const std::string& path) {
  TuningRecord r;
  const std::string kernel = s.text(0), pipeline = s.text(4);
  r.key.device = s.text(1);
  r.key.compute_capability = s.text(2);
  r.key.version = s.text(3);
  r.measurer = s.text(5);
  const std::string where = "record " + kernel + "/" + r.key.device + "/" + r.key.compute_capability + "/" +
                            r.key.version + "/" + pipeline + " (" + r.measurer + ")";
  if (!parse_hash_hex(kernel, r.key.kernel) || !parse_hash_hex(pipeline, r.key.pipeline))
    return file_error(path, where + ": the kernel and pipeline must be hashes in hex");
  r.kernel_name = s.text(6);
  r.latency_us = s.real(7);
  r.heuristic_latency_us = s.real(8);
  r.trials = s.integer(9);
  r.date = s.text(10);
  TESSERA_ASSIGN_OR_RETURN(TuningJson decisions, parse_tuning_json(s.text(11), path));
  TESSERA_ASSIGN_OR_RETURN(r.decisions, decisions_from_json(decisions, path, where + ": decisions"));
  TESSERA_TRY(check_tuning_record(r, path, where));
  return r;
}

// The rows a query selects (its parameters bound by `bind`), in key order.
template <class Bind>
Expected<std::vector<TuningRecord>> select_records(sqlite3* db, const std::string& path, const std::string& sql,
                                                   Bind bind) {
  Statement s(db, path);
  TESSERA_TRY(s.prepare(sql));
  bind(s);
  std::vector<TuningRecord> out;
  for (;;) {
    TESSERA_ASSIGN_OR_RETURN(int rc, s.step("cannot read the tuning database"));
    if (rc == SQLITE_DONE) break;
    TESSERA_ASSIGN_OR_RETURN(TuningRecord r, read_record(s, path));
    out.push_back(std::move(r));
  }
  return out;
}

bool key_then_measurer_less(const TuningRecord& a, const TuningRecord& b) {
  return std::tie(a.key, a.measurer) < std::tie(b.key, b.measurer);
}

}  // namespace

struct TuningDb::Impl {
  std::string path;
  sqlite3* db = nullptr;
  ~Impl() { sqlite3_close_v2(db); }

  Status upsert(const TuningRecord& r) {
    Statement s(db, path);
    TESSERA_TRY(s.prepare(kUpsertFaster));
    s.bind(1, hash_hex(r.key.kernel));
    s.bind(2, r.key.device);
    s.bind(3, r.key.compute_capability);
    s.bind(4, r.key.version);
    s.bind(5, hash_hex(r.key.pipeline));
    s.bind(6, r.measurer);
    s.bind(7, r.kernel_name);
    s.bind(8, r.latency_us);
    s.bind(9, r.heuristic_latency_us);
    s.bind(10, r.trials);
    s.bind(11, r.date);
    s.bind(12, decisions_to_json(r.decisions).dump(-1, ' ', false, TuningJson::error_handler_t::replace));
    return s.step("cannot write " + where_of(r)).status();
  }

  // The journal mode persists in the file; setting it again is a no-op.
  Status use_write_ahead_log() {
    Statement wal(db, path);
    TESSERA_TRY(wal.prepare("PRAGMA journal_mode = WAL"));
    TESSERA_ASSIGN_OR_RETURN(int row, wal.step("cannot switch the tuning database to a write-ahead log"));
    if (row != SQLITE_ROW || wal.text(0) != "wal")
      return file_error(path, "cannot switch the tuning database to a write-ahead log (journal mode '" + wal.text(0) + "')");
    return Status::ok();
  }

  // A file just created (or empty): the schema, its version and our mark, in one transaction
  // (another process may be creating the same file: whoever is second finds it done).
  Status create_schema() {
    WriteTransaction t(db, path);
    TESSERA_TRY(t.begin());
    TESSERA_ASSIGN_OR_RETURN(int64_t app, pragma_int(db, path, "application_id"));
    if (app == 0) {
      TESSERA_TRY(exec(db, path, kCreateSchema, "cannot create the tuning database"));
      TESSERA_TRY(exec(db, path, "PRAGMA application_id = " + std::to_string(kApplicationId),
                       "cannot create the tuning database"));
      TESSERA_TRY(exec(db, path, "PRAGMA user_version = " + std::to_string(kSchemaVersion),
                       "cannot create the tuning database"));
    }
    return t.commit();
  }
};

Expected<TuningDb> TuningDb::open(const std::string& path, bool create) {
  std::error_code ec;
  if (!create && !std::filesystem::exists(path, ec))
    return file_error(path, "no such tuning database (the file does not exist)");
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &impl->db, flags, nullptr) != SQLITE_OK)
    return sqlite_error(impl->db, path, create ? "cannot open or create the tuning database" : "cannot open the tuning database");
  sqlite3_busy_timeout(impl->db, kBusyTimeoutMs);
  sqlite3* db = impl->db;

  // What the file is, read before anything is written to it.
  TESSERA_ASSIGN_OR_RETURN(int64_t app, pragma_int(db, path, "application_id"));
  TESSERA_ASSIGN_OR_RETURN(int64_t version, pragma_int(db, path, "user_version"));
  TESSERA_ASSIGN_OR_RETURN(int64_t objects, pragma_int(db, path, "schema_version"));
  const bool fresh = app == 0 && version == 0 && objects == 0;
  if (fresh && !create) return file_error(path, "an empty file, not a tuning database");
  if (!fresh && app != kApplicationId)
    return file_error(path, "an SQLite database, but not a tuning database (application_id " + std::to_string(app) + ")");
  if (!fresh && version != kSchemaVersion)
    return file_error(path, "a tuning database of schema version " + std::to_string(version) + "; this Tessera reads version " +
                                std::to_string(kSchemaVersion));

  TESSERA_TRY(impl->use_write_ahead_log());
  TESSERA_TRY(exec(db, path, "PRAGMA synchronous = FULL", "cannot set up the tuning database"));
  if (fresh) TESSERA_TRY(impl->create_schema());
  return TuningDb(std::move(impl));
}

TuningDb::TuningDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningDb::TuningDb(TuningDb&&) noexcept = default;
TuningDb& TuningDb::operator=(TuningDb&&) noexcept = default;
TuningDb::~TuningDb() = default;

const std::string& TuningDb::path() const { return impl_->path; }

Status TuningDb::put(const TuningRecord& r) { return put_all({r}); }

Status TuningDb::put_all(const std::vector<TuningRecord>& records) {
  for (const TuningRecord& r : records) TESSERA_TRY(check_tuning_record(r, impl_->path, where_of(r)));
  WriteTransaction t(impl_->db, impl_->path);
  TESSERA_TRY(t.begin());
  for (const TuningRecord& r : records) TESSERA_TRY(impl_->upsert(r));
  return t.commit();
}

Expected<std::optional<TuningRecord>> TuningDb::get(const TuningKey& key, const std::string& measurer) const {
  std::string sql = std::string("SELECT ") + kRecordColumns +
                    " FROM records WHERE kernel = ?1 AND device = ?2 AND compute_capability = ?3 AND version = ?4 "
                    "AND pipeline = ?5";
  if (!measurer.empty()) sql += " AND measurer = ?6";
  sql += " ORDER BY latency_us, measurer LIMIT 1";
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> found, select_records(impl_->db, impl_->path, sql, [&](Statement& s) {
                             s.bind(1, hash_hex(key.kernel));
                             s.bind(2, key.device);
                             s.bind(3, key.compute_capability);
                             s.bind(4, key.version);
                             s.bind(5, hash_hex(key.pipeline));
                             if (!measurer.empty()) s.bind(6, measurer);
                           }));
  if (found.empty()) return std::optional<TuningRecord>();
  return std::optional<TuningRecord>(std::move(found.front()));
}

Expected<std::vector<TuningRecord>> TuningDb::find_kernel(uint64_t kernel) const {
  const std::string sql = std::string("SELECT ") + kRecordColumns + " FROM records WHERE kernel = ?1" + kKeyOrder;
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> found,
                           select_records(impl_->db, impl_->path, sql, [&](Statement& s) { s.bind(1, hash_hex(kernel)); }));
  std::stable_sort(found.begin(), found.end(), key_then_measurer_less);
  return found;
}

Expected<std::vector<TuningRecord>> TuningDb::all() const {
  const std::string sql = std::string("SELECT ") + kRecordColumns + " FROM records" + kKeyOrder;
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> found,
                           select_records(impl_->db, impl_->path, sql, [](Statement&) {}));
  // SQL's text order is already the key order (fixed-width hex, byte-wise text); sorting again
  // keeps the promise even for a file written by hand.
  std::stable_sort(found.begin(), found.end(), key_then_measurer_less);
  return found;
}

std::string TuningDb::to_json(const std::vector<TuningRecord>& records) {
  TuningJson doc = {{"format", kJsonFormat}, {"version", kJsonFormatVersion}, {"records", TuningJson::array()}};
  for (const TuningRecord& r : records) doc["records"].push_back(record_to_json(r));
  return doc.dump(2, ' ', false, TuningJson::error_handler_t::replace) + "\n";
}

Expected<std::vector<TuningRecord>> TuningDb::from_json(const std::string& text, const std::string& source_name) {
  TESSERA_ASSIGN_OR_RETURN(TuningJson doc, parse_tuning_json(text, source_name));
  if (!doc.is_object()) return file_error(source_name, "a tuning-database export must be a JSON object");
  for (const auto& item : doc.items())
    if (item.key() != "format" && item.key() != "version" && item.key() != "records")
      return file_error(source_name, "unknown field '" + item.key() + "' (expected format, version, records)");
  if (!doc.contains("format") || doc["format"] != kJsonFormat)
    return file_error(source_name, std::string("not a tuning-database export: \"format\" must be \"") + kJsonFormat + "\"");
  if (!doc.contains("version") || !doc["version"].is_number_integer())
    return file_error(source_name, "\"version\" must be the format's version, an integer");
  if (doc["version"] != kJsonFormatVersion)
    return file_error(source_name, "format version " + doc["version"].dump() + "; this Tessera reads version " +
                                       std::to_string(kJsonFormatVersion));
  if (!doc.contains("records") || !doc["records"].is_array())
    return file_error(source_name, "\"records\" must be a JSON array");
  std::vector<TuningRecord> out;
  const TuningJson& records = doc["records"];
  for (size_t i = 0; i < records.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(TuningRecord r, record_from_json(records[i], source_name, "records[" + std::to_string(i) + "]"));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tessera

// TuningDb: the tuning database, an SQLite file (WAL journal, every write one transaction, so a
// process killed mid-write leaves the last committed state) of the best decisions known per
// kernel. docs/tuning-database.md describes the schema and the `tessera db` commands.
//
// A record is keyed by the kernel (its structural hash at the tile stage's entry), the device and
// its compute capability, the Tessera version and the pipeline (the hash of the effective
// pipeline's stages), so a replay never applies decisions tuned for another device, version or
// pipeline: the host looks up by kernel and reports the records it could not use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/support/status.h"
#include "tessera/tune/decision.h"

namespace tessera {

struct TuningKey {
  uint64_t kernel = 0;
  std::string device;              // "h100"
  std::string compute_capability;  // "sm_90"
  std::string version;             // TESSERA_VERSION
  uint64_t pipeline = 0;
  // "KERNEL/DEVICE/CC/VERSION/PIPELINE", hashes in hash_hex: how `db list` prints a key and
  // `db show` reads one back (parse: false when the text is not of that form).
  std::string str() const;
  static bool parse(const std::string& text, TuningKey& out);
  friend auto operator<=>(const TuningKey&, const TuningKey&) = default;
  friend bool operator==(const TuningKey&, const TuningKey&) = default;
};

struct TuningRecord {
  TuningKey key;
  std::string kernel_name;        // the task's first kernel, for listings
  std::vector<Decision> decisions;
  double latency_us = 0;          // the best trial's
  double heuristic_latency_us = 0;  // the heuristic schedule's, by the same measurer
  std::string measurer;           // "cost-model", "gpu"
  int64_t trials = 0;
  std::string date;               // ISO 8601 UTC, when recorded
  friend bool operator==(const TuningRecord&, const TuningRecord&) = default;
};

class TuningDb {
 public:
  // Opens (and with `create`, creates) the database at `path`. Errors name the file: not an
  // SQLite database, a schema of another version, cannot be created.
  static Expected<TuningDb> open(const std::string& path, bool create);
  TuningDb(TuningDb&&) noexcept;
  TuningDb& operator=(TuningDb&&) noexcept;
  ~TuningDb();

  const std::string& path() const;

  // Stores `r` in one transaction unless a record with the same key and measurer is at least as
  // fast (ties keep the stored one, so merging is order-independent for distinct latencies).
  Status put(const TuningRecord& r);
  // put() of every record, all in one transaction: either all are applied or none (import, merge).
  Status put_all(const std::vector<TuningRecord>& records);
  // The record for `key` (the fastest by the given measurer; any measurer when empty).
  Expected<std::optional<TuningRecord>> get(const TuningKey& key, const std::string& measurer = "") const;
  // Every record of one kernel, any device, version or pipeline (for reporting mismatches).
  Expected<std::vector<TuningRecord>> find_kernel(uint64_t kernel) const;
  // Every record, ordered by key then measurer.
  Expected<std::vector<TuningRecord>> all() const;

  // JSON (an object with "format": "tessera-tuning-db", "version", "records": [...]), the records
  // in all()'s order; from_json accepts what to_json writes and errors name the record and field.
  static std::string to_json(const std::vector<TuningRecord>& records);
  static Expected<std::vector<TuningRecord>> from_json(const std::string& text, const std::string& source_name);

 private:
  struct Impl;
  explicit TuningDb(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

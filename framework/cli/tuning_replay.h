// `--tune-db FILE` on compile, run and bench: the tuning database's decisions replayed for the
// session's device, compute capability, Tessera version and pipeline, and a note saying which
// kernels they covered and which records were not used (tuned for another device, version or
// pipeline: reported, never applied).
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_session.h"
#include "tessera/pass/runner.h"
#include "tessera/tune/tuning_db.h"
#include "../src/tune/tuned_choice_source.h"

namespace tessera::cli {

// The hash of the pipeline's stages as the tuning database keys them: every pass and every knob
// pin, not the target, tuner or thread count.
uint64_t tuning_pipeline_hash(const Session& s);
// The database key of kernel `kernel` compiled by this session.
TuningKey session_tuning_key(const Session& s, uint64_t kernel);

// Adds --tune-db FILE to a command's options.
void add_tune_db_option(po::options_description& desc, std::string& path);
// With `path` non-empty, opens the database into s.tuning_replay; false after printing the error.
bool open_tuning_replay(Session& s, const std::string& path, std::ostream& err);

class TuningReplay {
 public:
  // Opens `path` (it must exist) and keeps the records that match the session. nullopt after
  // printing the error to `err`.
  static std::optional<TuningReplay> open(const Session& s, const std::string& path, std::ostream& err);

  // Attaches the replay to `ro` and counts, when the loop stage ends, the kernels it covers.
  void attach(RunnerOptions& ro);
  // "note: --tune-db t.db: tuned decisions for 28 of 30 kernels (2 of 3 distinct) ..." and a line
  // per record of a compiled kernel that was not used, with why.
  std::string summary() const;

 private:
  std::string path_;
  TuningKey session_key_;
  std::shared_ptr<TunedChoiceSource> source_;
  // Built once when the database is opened, read by every attach (bench attaches per entry).
  struct Index {
    std::set<uint64_t> tuned;                                    // kernels the replay answers for
    std::map<uint64_t, std::vector<TuningRecord>> other_records;  // by kernel: another device, version or pipeline
  };
  std::shared_ptr<const Index> index_;
  // Filled when the loop stage ends.
  struct Coverage {
    int kernels = 0, covered = 0;
    std::set<uint64_t> distinct, distinct_covered;  // kernel hashes
    // Records of compiled kernels that were not used: by record key, the first kernel, how many
    // kernels it would have covered, and why not.
    struct Unused {
      std::string kernel;
      int kernels = 0;
      std::string why;
    };
    std::map<std::string, Unused> unused;
  };
  std::shared_ptr<Coverage> coverage_ = std::make_shared<Coverage>();
};

}  // namespace tessera::cli

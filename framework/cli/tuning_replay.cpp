// Replaying a tuning database on compile, run and bench (see tuning_replay.h).
#include "tuning_replay.h"

#include <filesystem>
#include <map>
#include <ostream>
#include <set>

#include "../src/tune/tuning_task.h"

namespace tessera::cli {

uint64_t tuning_pipeline_hash(const Session& s) {
  PipelineSpec stages_only;
  stages_only.stages = s.pipeline.stages;
  return hash_text(print_pipeline(stages_only, s.host.registry()));
}

TuningKey session_tuning_key(const Session& s, uint64_t kernel) {
  return TuningKey{kernel, s.device->name, s.device->arch, TESSERA_VERSION, tuning_pipeline_hash(s)};
}

void add_tune_db_option(po::options_description& desc, std::string& path) {
  desc.add_options()("tune-db", po::value(&path)->value_name("FILE"),
                     "replay the best decisions a tuning database (`tessera tune`) holds for this device, version and pipeline");
}

bool open_tuning_replay(Session& s, const std::string& path, std::ostream& err) {
  if (path.empty()) return true;
  std::optional<TuningReplay> replay = TuningReplay::open(s, path, err);
  if (!replay) return false;
  s.tuning_replay = std::make_shared<TuningReplay>(std::move(*replay));
  return true;
}

std::optional<TuningReplay> TuningReplay::open(const Session& s, const std::string& path, std::ostream& err) {
  if (!std::filesystem::exists(path)) {
    err << "error: --tune-db " << path << ": no such file (create one with `tessera tune ... --tune-db " << path
        << "`)\n";
    return std::nullopt;
  }
  Expected<TuningDb> db = TuningDb::open(path, /*create=*/false);
  if (!db) {
    report(err, db.error());
    return std::nullopt;
  }
  Expected<std::vector<TuningRecord>> all = db->all();
  if (!all) {
    report(err, all.error());
    return std::nullopt;
  }
  TuningReplay r;
  r.path_ = path;
  r.session_key_ = session_tuning_key(s, 0);
  auto index = std::make_shared<Index>();
  std::vector<TuningRecord> matching;
  for (TuningRecord& rec : *all) {
    TuningKey k = rec.key;
    k.kernel = 0;
    if (k == r.session_key_) {
      index->tuned.insert(rec.key.kernel);
      matching.push_back(std::move(rec));
    } else {
      index->other_records[rec.key.kernel].push_back(std::move(rec));
    }
  }
  r.source_ = std::make_shared<TunedChoiceSource>(matching);
  r.index_ = std::move(index);
  return r;
}

void TuningReplay::attach(RunnerOptions& ro) {
  ro.replay = source_.get();
  auto previous = ro.on_stage_end;
  auto coverage = coverage_;
  const TuningKey session = session_key_;
  std::shared_ptr<const Index> index = index_;
  ro.on_stage_end = [previous, coverage, index, session](Dialect stage, const Graph& g) {
    if (previous) previous(stage, g);
    if (stage != Dialect::Loop) return;
    Expected<std::vector<std::pair<std::string, uint64_t>>> hashes = kernel_task_hashes(g);
    if (!hashes) return;
    for (const auto& [id, h] : *hashes) {
      ++coverage->kernels;
      coverage->distinct.insert(h);
      if (index->tuned.count(h)) {
        ++coverage->covered;
        coverage->distinct_covered.insert(h);
        continue;
      }
      auto it = index->other_records.find(h);
      if (it == index->other_records.end()) continue;
      for (const TuningRecord& rec : it->second) {
        std::string why;
        if (rec.key.device != session.device || rec.key.compute_capability != session.compute_capability)
          why = "tuned for " + rec.key.device + " (" + rec.key.compute_capability + "), this compile is for " +
                session.device + " (" + session.compute_capability + ")";
        else if (rec.key.version != session.version)
          why = "tuned by Tessera " + rec.key.version + ", this is " + session.version;
        else
          why = "tuned with another pipeline (" + hash_hex(rec.key.pipeline) + ", this one is " +
                hash_hex(session.pipeline) + ")";
        Coverage::Unused& u = coverage->unused[rec.key.str() + " " + rec.measurer];
        if (u.kernels++ == 0) {
          u.kernel = id;
          u.why = why;
        }
      }
    }
  };
}

std::string TuningReplay::summary() const {
  std::string s = "note: --tune-db " + path_ + ": tuned decisions for " + std::to_string(coverage_->covered) + " of " +
                  std::to_string(coverage_->kernels) + " kernels (" + std::to_string(coverage_->distinct_covered.size()) +
                  " of " + std::to_string(coverage_->distinct.size()) + " distinct)\n";
  for (const auto& [record, u] : coverage_->unused) {
    s += "note: --tune-db " + path_ + ": record " + record + " (kernel '" + u.kernel + "'";
    if (u.kernels > 1) s += " and " + std::to_string(u.kernels - 1) + " more";
    s += ") not used: " + u.why + "\n";
  }
  return s;
}

}  // namespace tessera::cli

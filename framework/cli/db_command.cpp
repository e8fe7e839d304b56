// `tessera db`: the tuning database from the command line (docs/tuning-database.md).
//   db list FILE                  one aligned line per record
//   db show FILE KEY              a record (or every record of a kernel hash) with its decisions
//   db export FILE [-o X.json]    the records as JSON
//   db import X.json -o FILE      JSON records into a database
//   db merge A.db B.db ... -o OUT the fastest record per (key, measurer) of every input
// import and merge add to an existing FILE/OUT in one transaction; a new one is written under a
// temporary name and renamed into place, so a failure never leaves half a database.
// Tests: tests/e2e/db_cli_test.cpp.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <tuple>

#include "cli_session.h"
#include "commands.h"
#include "tessera/pass/knob.h"
#include "tessera/support/atomic_file.h"
#include "tessera/tune/tuning_db.h"

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kDbUsage =
    "tessera db list FILE\n"
    "       tessera db show FILE KEY\n"
    "       tessera db export FILE [-o X.json]\n"
    "       tessera db import X.json -o FILE\n"
    "       tessera db merge A.db B.db ... -o OUT.db";

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A heuristic latency of 0 means the heuristic schedule was not measured.
std::string heuristic_text(const TuningRecord& r) { return r.heuristic_latency_us > 0 ? fixed(r.heuristic_latency_us, 2) : "-"; }
std::string speedup_text(const TuningRecord& r) {
  return r.heuristic_latency_us > 0 ? fixed(r.heuristic_latency_us / r.latency_us, 2) + "x" : "-";
}
std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

// Columns padded to their widest cell; `right` marks the numeric ones. No trailing blanks.
std::string aligned_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> width(right.size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c) line += "  ";
      line += right[c] ? pad + row[c] : row[c] + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string list_text(const std::vector<TuningRecord>& records) {
  std::vector<std::vector<std::string>> rows = {
      {"key", "kernel", "measurer", "latency (us)", "heuristic (us)", "speedup", "trials", "date"}};
  for (const TuningRecord& r : records)
    rows.push_back({r.key.str(), or_dash(r.kernel_name), r.measurer, fixed(r.latency_us, 2), heuristic_text(r),
                    speedup_text(r), std::to_string(r.trials), or_dash(r.date)});
  return aligned_table(rows, {false, false, false, true, true, true, true, false});
}

// `pass.KNOB` (with `#ORDINAL` past the first ask, and `@KERNEL` when the decision shapes another
// kernel than the record's) = value.
std::string decision_line(const Decision& d, uint64_t record_kernel) {
  std::string name = d.key.pass + "." + d.key.knob;
  if (d.key.ordinal != 0) name += "#" + std::to_string(d.key.ordinal);
  if (d.key.kernel != record_kernel) name += "@" + hash_hex(d.key.kernel);
  return name + " = " + knob_value_str(d.value);
}

std::string show_text(const std::vector<TuningRecord>& records) {
  std::string out;
  for (const TuningRecord& r : records) {
    if (!out.empty()) out += "\n";
    out += "record " + r.key.str() + "\n";
    out += "  kernel     " + or_dash(r.kernel_name) + "\n";
    out += "  measurer   " + r.measurer + "\n";
    out += "  latency    " + fixed(r.latency_us, 2) + " us\n";
    out += "  heuristic  " + (r.heuristic_latency_us > 0 ? heuristic_text(r) + " us (speedup " + speedup_text(r) + ")" : "-") + "\n";
    out += "  trials     " + std::to_string(r.trials) + "\n";
    out += "  date       " + or_dash(r.date) + "\n";
    out += "  decisions  " + std::to_string(r.decisions.size()) + "\n";
    for (const Decision& d : r.decisions) out += "    " + decision_line(d, r.key.kernel) + "\n";
  }
  return out;
}

// The one record per (key, measurer) a merge keeps: the fastest; among equally fast ones the
// first by date and then by JSON text, so the result does not depend on the order of the inputs.
std::vector<TuningRecord> fastest_per_key(std::vector<TuningRecord> records) {
  const auto better = [](const TuningRecord& a, const TuningRecord& b) {
    if (a.latency_us != b.latency_us) return a.latency_us < b.latency_us;
    if (a.date != b.date) return a.date < b.date;
    return TuningDb::to_json({a}) < TuningDb::to_json({b});
  };
  std::map<std::pair<TuningKey, std::string>, TuningRecord> best;
  for (TuningRecord& r : records) {
    auto key = std::make_pair(r.key, r.measurer);
    auto it = best.find(key);
    if (it == best.end()) best.emplace(std::move(key), std::move(r));
    else if (better(r, it->second)) it->second = std::move(r);
  }
  std::vector<TuningRecord> out;
  for (auto& [key, r] : best) out.push_back(std::move(r));
  return out;
}

// Removes a database file and the log files SQLite keeps beside it.
void remove_database_files(const fs::path& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path.string() + suffix, ec);
}

// Adds `records` to the database `out`: into an existing one in one transaction (the faster record
// per key kept); a new one is built under a temporary name and renamed into place, so a failure
// leaves no file.
int write_records(const std::string& out, const std::vector<TuningRecord>& records, const std::string& command) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    Expected<TuningDb> db = TuningDb::open(out, /*create=*/false);
    if (!db) return report(std::cerr, db.error());
    if (Status s = db->put_all(records); !s) return report(std::cerr, s.error());
    return kExitOk;
  }
  // A log beside a missing database would be replayed into the new file: refuse rather than guess.
  for (const char* suffix : {"-wal", "-journal"})
    if (fs::exists(out + suffix, ec)) {
      std::cerr << "error: tessera db " << command << ": '" << out << suffix << "' exists but '" << out
                << "' does not; remove the stale log first\n";
      return kExitError;
    }
  const fs::path target(out);
  const fs::path tmp = target.parent_path() / (target.filename().string() + ".partial." + std::to_string(::getpid()));
  remove_database_files(tmp);
  {
    Expected<TuningDb> db = TuningDb::open(tmp.string(), /*create=*/true);
    if (!db) {
      remove_database_files(tmp);
      std::cerr << "error: tessera db " << command << ": cannot create '" << out << "'\n";
      return report(std::cerr, db.error());
    }
    if (Status s = db->put_all(records); !s) {
      remove_database_files(tmp);
      return report(std::cerr, s.error());
    }
  }  // closed: SQLite checkpoints the log into the file and removes it
  fs::rename(tmp, target, ec);
  if (ec) {
    remove_database_files(tmp);
    std::cerr << "error: tessera db " << command << ": cannot rename the new database into '" << out << "': " << ec.message()
              << "\n";
    return kExitError;
  }
  return kExitOk;
}

Expected<std::vector<TuningRecord>> read_all(const std::string& path) {
  Expected<TuningDb> db = TuningDb::open(path, /*create=*/false);
  if (!db) return db.error();
  return db->all();
}

struct DbArgs {
  std::vector<std::string> files;
  std::string output;
};

// Parses one subcommand's arguments: positional files and -o. nullopt = go on.
std::optional<int> parse_db_args(const std::vector<std::string>& args, const std::string& usage, const std::string& output_help,
                                 DbArgs& out) {
  po::options_description desc("tessera db options");
  desc.add_options()
      ("file", po::value(&out.files)->value_name("FILE"), "input files")
      ("output,o", po::value(&out.output)->value_name("FILE"), output_help.c_str())
      ("help,h", "show this help");
  po::positional_options_description pos;
  pos.add("file", -1);
  po::variables_map vm;
  return parse_command_line(args, desc, pos, vm, usage);
}

int usage_error(const std::string& command, const std::string& message, const std::string& usage) {
  std::cerr << "error: tessera db " << command << ": " << message << "\nusage: " << usage << " (see --help)\n";
  return kExitUsage;
}

int db_list(const std::vector<std::string>& args) {
  const std::string usage = "tessera db list FILE";
  DbArgs a;
  if (auto code = parse_db_args(args, usage, "write the listing to FILE instead of stdout", a)) return *code;
  if (a.files.size() != 1) return usage_error("list", "expected one database file", usage);
  auto records = read_all(a.files[0]);
  if (!records) return report(std::cerr, records.error());
  GlobalFlags out;
  out.output = a.output;
  return emit_output(out, list_text(*records), std::cerr);
}

int db_show(const std::vector<std::string>& args) {
  const std::string usage = "tessera db show FILE KEY";
  DbArgs a;
  if (auto code = parse_db_args(args, usage, "write the record to FILE instead of stdout", a)) return *code;
  if (a.files.size() != 2) return usage_error("show", "expected a database file and a key", usage);
  const std::string& file = a.files[0];
  const std::string& key_text = a.files[1];
  TuningKey key;
  uint64_t kernel = 0;
  const bool whole_key = TuningKey::parse(key_text, key);
  if (!whole_key && !parse_hash_hex(key_text, kernel))
    return usage_error("show", "'" + key_text + "' is not a key (KERNEL/DEVICE/CC/VERSION/PIPELINE, as `db list` prints it) or a kernel hash",
                       usage);
  Expected<TuningDb> db = TuningDb::open(file, /*create=*/false);
  if (!db) return report(std::cerr, db.error());
  auto found = db->find_kernel(whole_key ? key.kernel : kernel);
  if (!found) return report(std::cerr, found.error());
  if (whole_key) std::erase_if(*found, [&](const TuningRecord& r) { return r.key != key; });
  if (found->empty()) {
    std::cerr << "error: tessera db show: no record of " << (whole_key ? "key " : "kernel ") << key_text << " in '" << file
              << "'\n";
    return kExitError;
  }
  GlobalFlags out;
  out.output = a.output;
  return emit_output(out, show_text(*found), std::cerr);
}

int db_export(const std::vector<std::string>& args) {
  const std::string usage = "tessera db export FILE [-o X.json]";
  DbArgs a;
  if (auto code = parse_db_args(args, usage, "write the JSON to FILE instead of stdout", a)) return *code;
  if (a.files.size() != 1) return usage_error("export", "expected one database file", usage);
  auto records = read_all(a.files[0]);
  if (!records) return report(std::cerr, records.error());
  const std::string json = TuningDb::to_json(*records);
  if (a.output.empty()) {
    std::cout << json;
    return kExitOk;
  }
  if (Status s = write_file_atomically(a.output, json); !s) return report(std::cerr, s.error());
  return kExitOk;
}

int db_import(const std::vector<std::string>& args) {
  const std::string usage = "tessera db import X.json -o FILE";
  DbArgs a;
  if (auto code = parse_db_args(args, usage, "the database to add the records to (created when missing)", a)) return *code;
  if (a.files.size() != 1) return usage_error("import", "expected one JSON file", usage);
  if (a.output.empty()) return usage_error("import", "-o FILE names the database to import into", usage);
  std::ifstream in(a.files[0], std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    std::cerr << "error: tessera db import: cannot read '" << a.files[0] << "'\n";
    return kExitError;
  }
  auto records = TuningDb::from_json(text.str(), a.files[0]);
  if (!records) return report(std::cerr, records.error());
  return write_records(a.output, fastest_per_key(std::move(*records)), "import");
}

int db_merge(const std::vector<std::string>& args) {
  const std::string usage = "tessera db merge A.db B.db ... -o OUT.db";
  DbArgs a;
  if (auto code = parse_db_args(args, usage, "the database to merge into (created when missing)", a)) return *code;
  if (a.files.empty()) return usage_error("merge", "expected one or more databases to merge", usage);
  if (a.output.empty()) return usage_error("merge", "-o OUT.db names the database to write", usage);
  std::vector<TuningRecord> records;
  for (const std::string& file : a.files) {
    auto some = read_all(file);
    if (!some) return report(std::cerr, some.error());
    records.insert(records.end(), std::make_move_iterator(some->begin()), std::make_move_iterator(some->end()));
  }
  return write_records(a.output, fastest_per_key(std::move(records)), "merge");
}

}  // namespace

int db_command(int argc, char** argv, int first) {
  const std::string sub = first < argc ? argv[first] : "";
  std::vector<std::string> args(argv + std::min(first + 1, argc), argv + argc);
  if (sub == "list") return db_list(args);
  if (sub == "show") return db_show(args);
  if (sub == "export") return db_export(args);
  if (sub == "import") return db_import(args);
  if (sub == "merge") return db_merge(args);
  if (sub == "--help" || sub == "-h") {
    std::cout << "usage: " << kDbUsage << "\n";
    return kExitOk;
  }
  if (sub.empty()) std::cerr << "error: tessera db: expected a subcommand (list, show, export, import, merge)\n";
  else std::cerr << "error: tessera db: unknown subcommand '" << sub << "' (expected list, show, export, import, merge)\n";
  std::cerr << "usage: " << kDbUsage << "\n";
  return kExitUsage;
}

}  // namespace tessera::cli

// Reading the suite file for tessera_kernel_bench (see kernel_bench_suite.h).
#include "kernel_bench_suite.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace tessera {

namespace {

Diagnostic at(const std::string& path, const YAML::Node& n, const std::string& message) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return make_error(path + ": " + message);
  return make_error(path + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + message);
}

bool valid_id(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

}  // namespace

Expected<std::vector<SuiteEntry>> parse_suite(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return make_error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap()) return make_error(path + ": a suite file is a mapping with `version` and `entries`");
  const YAML::Node version = root["version"];
  if (!version || !version.IsScalar() || version.Scalar() != "1")
    return version ? at(path, version, "unsupported suite version (expected 1)")
                   : make_error(path + ": no `version` (expected version: 1)");
  const YAML::Node list = root["entries"];
  if (!list || !list.IsSequence()) return make_error(path + ": no `entries` list");
  std::vector<SuiteEntry> entries;
  std::set<std::string> seen;
  for (const YAML::Node& e : list) {
    if (!e.IsMap()) return at(path, e, "an entry is a mapping");
    SuiteEntry entry;
    const YAML::Node id = e["id"], tiers = e["tiers"], program = e["program"];
    if (!id || !id.IsScalar() || !valid_id(id.Scalar())) return at(path, id ? id : e, "an entry needs an id of [a-z0-9_.-]+");
    entry.id = id.Scalar();
    if (!seen.insert(entry.id).second) return at(path, id, "duplicate entry id '" + entry.id + "'");
    if (!tiers || !tiers.IsSequence()) return at(path, tiers ? tiers : e, "entry '" + entry.id + "' needs a `tiers` list");
    for (const YAML::Node& t : tiers) {
      if (!t.IsScalar()) return at(path, t, "entry '" + entry.id + "': a tier is a name");
      entry.tiers.push_back(t.Scalar());
    }
    if (!program || !program.IsScalar() || program.Scalar().find_first_not_of(" \t\r\n") == std::string::npos)
      return at(path, program ? program : e, "entry '" + entry.id + "' needs a `program`");
    entry.program = program.Scalar();
    entries.push_back(std::move(entry));
  }
  return entries;
}

Expected<std::vector<SuiteEntry>> read_suite_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("cannot read suite file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_suite(ss.str(), path);
}

Expected<std::vector<SuiteEntry>> select_suite_entries(const std::vector<SuiteEntry>& entries,
                                                       const std::string& tier, const std::vector<std::string>& ids) {
  auto in_tier = [&](const SuiteEntry& e) {
    return tier.empty() || std::find(e.tiers.begin(), e.tiers.end(), tier) != e.tiers.end();
  };
  for (const std::string& id : ids) {
    auto it = std::find_if(entries.begin(), entries.end(), [&](const SuiteEntry& e) { return e.id == id; });
    if (it == entries.end()) return make_error("the suite has no entry '" + id + "'");
    if (!in_tier(*it)) return make_error("entry '" + id + "' is not in tier '" + tier + "'");
  }
  std::vector<SuiteEntry> selected;
  for (const SuiteEntry& e : entries)
    if (in_tier(e) && (ids.empty() || std::find(ids.begin(), ids.end(), e.id) != ids.end())) selected.push_back(e);
  if (selected.empty() && !tier.empty()) return make_error("no entry of the suite is in tier '" + tier + "'");
  return selected;
}

}  // namespace tessera

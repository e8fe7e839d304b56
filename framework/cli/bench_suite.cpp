// Reading and validating the benchmark suite file (see bench_suite.h).
#include "bench_suite.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "tessera/support/spelling.h"

namespace tessera::cli {

namespace {

const std::vector<std::string> kPhases = {"prefill", "decode"};
const std::vector<std::string> kDtypes = {"f32", "bf16"};
const std::vector<std::string> kTiers = {"quick", "full"};
const std::vector<std::string> kEntryKeys = {"id",    "family", "model", "phase",   "seq",
                                             "kv",    "dtype",  "tiers", "flops",   "program"};
const std::vector<std::string> kRequiredKeys = {"id", "family", "model", "phase", "seq",
                                                "kv", "dtype",  "tiers", "program"};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "nothing";
}

bool valid_id(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

class SuiteReader {
 public:
  SuiteReader(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  Expected<Suite> read() {
    std::vector<YAML::Node> documents;
    try {
      documents = YAML::LoadAll(text_);
    } catch (const YAML::Exception& e) {
      return error(loc_of_mark(e.mark, 1), "invalid YAML: " + e.msg);
    }
    if (documents.size() > 1)
      return error(loc_of(documents[1]), "a suite file holds one YAML document; this one has " +
                                             std::to_string(documents.size()));
    try {
      return read_top(documents.empty() ? YAML::Node() : documents.front());
    } catch (const YAML::Exception& e) {
      return error(loc_of_mark(e.mark, 1), "cannot read the suite: " + e.msg);
    }
  }

 private:
  SourceLoc loc_of_mark(const YAML::Mark& m, int length) const {
    SourceLoc l;
    l.file = file_;
    if (m.line >= 0 && m.column >= 0) {
      l.line = m.line + 1;
      l.col = m.column + 1;
    }
    l.length = std::max(1, length);
    return l;
  }

  SourceLoc loc_of(const YAML::Node& n) const {
    const int length = n.IsScalar() && n.Scalar().find('\n') == std::string::npos ? static_cast<int>(n.Scalar().size()) : 1;
    return loc_of_mark(n.Mark(), length);
  }

  // A null value (`key:`) has no useful mark of its own: point at its key instead.
  SourceLoc loc_of_value(const YAML::Node& key, const YAML::Node& value) const {
    return value.IsNull() || value.Mark().line < 0 ? loc_of(key) : loc_of(value);
  }

  Diagnostic error(const SourceLoc& l, std::string message) const {
    Diagnostic d = make_error(std::move(message));
    d.at(l, source_line_of(text_, l.line));
    return d;
  }

  Status check_keys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& where) const {
    std::map<std::string, SourceLoc> seen;
    for (auto kv : map) {
      const YAML::Node& key = kv.first;
      if (!key.IsScalar()) return error(loc_of(key), "keys " + where + " must be names, got " + kind_of(key));
      const std::string& k = key.Scalar();
      if (auto dup = seen.find(k); dup != seen.end())
        return error(loc_of(key), "duplicate key '" + k + "' " + where).note("first given at " + dup->second.str());
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        Diagnostic d = error(loc_of(key), "unknown key '" + k + "' " + where + " (expected " + join(allowed) + ")");
        if (auto near = closest_spelling(k, allowed)) d.note("did you mean '" + *near + "'?");
        return d;
      }
      seen.emplace(k, loc_of(key));
    }
    return Status::ok();
  }

  Expected<Suite> read_top(const YAML::Node& root) {
    Suite suite;
    suite.file = file_;
    if (!root.IsDefined() || root.IsNull()) {
      SourceLoc l;
      l.file = file_;
      return error(l, "empty suite file (expected a map with `version: 1` and `entries:`)");
    }
    if (!root.IsMap()) return error(loc_of(root), "a suite file is a map (keys: version, entries), got " + kind_of(root));
    TESSERA_TRY(check_keys(root, {"version", "entries"}, "at the top level"));
    YAML::Node version_key, entries_key;
    for (auto kv : root) {
      if (kv.first.Scalar() == "version") version_key.reset(kv.first);
      else entries_key.reset(kv.first);
    }
    const YAML::Node version = root["version"], entries = root["entries"];
    if (!version.IsDefined()) return error(loc_of(root), "missing key 'version' (the format's version, 1)");
    if (!version.IsScalar() || version.Scalar() != "1")
      return error(loc_of_value(version_key, version), "unsupported suite version " + kind_of(version) + " (this Tessera reads version 1)");
    suite.version = 1;
    if (!entries.IsDefined()) return error(loc_of(root), "missing key 'entries' (a list of benchmark entries)");
    if (!entries.IsSequence() || entries.size() == 0)
      return error(loc_of_value(entries_key, entries), "'entries' must be a non-empty list, got " + kind_of(entries));
    std::map<std::string, SourceLoc> ids;
    for (const YAML::Node& item : entries) {
      TESSERA_ASSIGN_OR_RETURN(SuiteEntry e, read_entry(item));
      if (auto dup = ids.find(e.id); dup != ids.end())
        return error(loc_of(item["id"]), "duplicate entry id '" + e.id + "'").note("first given at " + dup->second.str());
      ids.emplace(e.id, loc_of(item["id"]));
      suite.entries.push_back(std::move(e));
    }
    return suite;
  }

  Expected<std::string> one_of(const YAML::Node& key, const YAML::Node& value, const std::vector<std::string>& allowed,
                               const std::string& what) const {
    if (!value.IsScalar() || std::find(allowed.begin(), allowed.end(), value.Scalar()) == allowed.end()) {
      Diagnostic d = error(loc_of_value(key, value), what + " must be one of " + join(allowed) + ", got " + kind_of(value));
      if (value.IsScalar())
        if (auto near = closest_spelling(value.Scalar(), allowed)) d.note("did you mean '" + *near + "'?");
      return d;
    }
    return value.Scalar();
  }

  Expected<int64_t> non_negative_int(const YAML::Node& key, const YAML::Node& value, const std::string& what) const {
    int64_t v = -1;
    if (!value.IsScalar() || !YAML::convert<int64_t>::decode(value, v) || v < 0 || value.Tag() == "!")
      return error(loc_of_value(key, value), what + " must be a non-negative integer, got " + kind_of(value));
    return v;
  }

  Expected<SuiteEntry> read_entry(const YAML::Node& item) {
    if (!item.IsMap()) return error(loc_of(item), "an entry is a map (keys: " + join(kEntryKeys) + "), got " + kind_of(item));
    TESSERA_TRY(check_keys(item, kEntryKeys, "in an entry"));
    SuiteEntry e;
    e.line = item.Mark().line + 1;
    for (const std::string& k : kRequiredKeys)
      if (!item[k].IsDefined()) {
        const std::string id = item["id"].IsScalar() ? " '" + item["id"].Scalar() + "'" : "";
        return error(loc_of(item), "entry" + id + " has no '" + k + "'");
      }
    for (auto kv : item) {
      const YAML::Node& key = kv.first;
      const YAML::Node& value = kv.second;
      const std::string& k = key.Scalar();
      if (k == "id") {
        if (!value.IsScalar() || !valid_id(value.Scalar()))
          return error(loc_of_value(key, value), "an entry id is a non-empty name of a-z, 0-9, '_', '.', '-', got " + kind_of(value));
        e.id = value.Scalar();
      } else if (k == "family") {
        TESSERA_ASSIGN_OR_RETURN(e.family, one_of(key, value, suite_families(), "family"));
      } else if (k == "model") {
        TESSERA_ASSIGN_OR_RETURN(e.model, one_of(key, value, suite_models(), "model"));
      } else if (k == "phase") {
        TESSERA_ASSIGN_OR_RETURN(e.phase, one_of(key, value, kPhases, "phase"));
      } else if (k == "dtype") {
        TESSERA_ASSIGN_OR_RETURN(e.dtype, one_of(key, value, kDtypes, "dtype"));
      } else if (k == "seq") {
        TESSERA_ASSIGN_OR_RETURN(e.seq, non_negative_int(key, value, "seq"));
        if (e.seq < 1) return error(loc_of_value(key, value), "seq (query tokens) must be at least 1");
      } else if (k == "kv") {
        TESSERA_ASSIGN_OR_RETURN(e.kv, non_negative_int(key, value, "kv"));
      } else if (k == "tiers") {
        if (!value.IsSequence() || value.size() == 0)
          return error(loc_of_value(key, value), "tiers must be a non-empty list of quick, full, got " + kind_of(value));
        for (const YAML::Node& t : value) {
          TESSERA_ASSIGN_OR_RETURN(std::string tier, one_of(key, t, kTiers, "a tier"));
          if (std::find(e.tiers.begin(), e.tiers.end(), tier) != e.tiers.end())
            return error(loc_of(t), "tier '" + tier + "' is listed twice");
          e.tiers.push_back(tier);
        }
        if (std::find(e.tiers.begin(), e.tiers.end(), "full") == e.tiers.end())
          return error(loc_of_value(key, value), "every entry is in the full tier: tiers must list full");
      } else if (k == "flops") {
        double f = -1;
        if (!value.IsScalar() || !YAML::convert<double>::decode(value, f) || !(f >= 0) || value.Tag() == "!")
          return error(loc_of_value(key, value), "flops must be a non-negative number, got " + kind_of(value));
        e.flops = f;
      } else if (k == "program") {
        if (!value.IsScalar() || value.Scalar().find_first_not_of(" \t\r\n") == std::string::npos)
          return error(loc_of_value(key, value), "program must be the program's text (a `|` block), got " + kind_of(value));
        e.program = value.Scalar();
      }
    }
    const YAML::Node kv_value = item["kv"];
    if (e.phase == "prefill" && e.kv != 0)
      return error(loc_of(kv_value), "entry '" + e.id + "': a prefill entry has kv: 0, got " + std::to_string(e.kv));
    if (e.phase == "decode" && e.kv == 0)
      return error(loc_of(kv_value), "entry '" + e.id + "': a decode entry attends kv > 0 cached positions");
    if (e.phase == "decode" && e.seq != 1)
      return error(loc_of(item["seq"]), "entry '" + e.id + "': a decode entry has seq: 1, got " + std::to_string(e.seq));
    return e;
  }

  const std::string& text_;
  const std::string& file_;
};

}  // namespace

bool SuiteEntry::in_tier(const std::string& tier) const {
  return std::find(tiers.begin(), tiers.end(), tier) != tiers.end();
}

const std::vector<std::string>& suite_families() {
  static const std::vector<std::string> families = {"norm", "softmax", "elementwise", "projection",
                                                    "attention", "mlp", "layer"};
  return families;
}

const std::vector<std::string>& suite_models() {
  static const std::vector<std::string> models = {"TinyLlama-1.1B", "Qwen2.5-7B", "Llama-3-8B"};
  return models;
}

Expected<Suite> parse_suite(const std::string& yaml_text, const std::string& file) {
  return SuiteReader(yaml_text, file).read();
}

Expected<Suite> load_suite(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    Diagnostic d = make_error("cannot read the suite file");
    d.loc.file = path;
    return d;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_suite(ss.str(), path);
}

Expected<std::vector<const SuiteEntry*>> select_entries(const Suite& suite, const std::string& tier,
                                                        const std::vector<std::string>& ids) {
  if (std::find(kTiers.begin(), kTiers.end(), tier) == kTiers.end())
    return make_error("unknown tier '" + tier + "' (expected quick or full)");
  std::vector<const SuiteEntry*> selected;
  if (ids.empty()) {
    for (const SuiteEntry& e : suite.entries)
      if (e.in_tier(tier)) selected.push_back(&e);
    if (selected.empty()) return make_error(suite.file + ": no entry is in the " + tier + " tier");
    return selected;
  }
  std::vector<std::string> all_ids;
  for (const SuiteEntry& e : suite.entries) all_ids.push_back(e.id);
  std::set<std::string> wanted;
  for (const std::string& id : ids) {
    auto it = std::find_if(suite.entries.begin(), suite.entries.end(), [&](const SuiteEntry& e) { return e.id == id; });
    if (it == suite.entries.end()) {
      Diagnostic d = make_error(suite.file + " has no entry '" + id + "'");
      if (auto near = closest_spelling(id, all_ids)) d.note("did you mean '" + *near + "'?");
      return d;
    }
    if (!it->in_tier(tier))
      return make_error("entry '" + id + "' is not in the " + tier + " tier (its tiers: " + join(it->tiers) + ")");
    if (!wanted.insert(id).second) return make_error("entry '" + id + "' is named twice in --entries");
  }
  for (const SuiteEntry& e : suite.entries)  // file order, whatever the order of --entries
    if (wanted.count(e.id)) selected.push_back(&e);
  return selected;
}

std::vector<std::string> split_entry_ids(const std::string& s) {
  std::vector<std::string> ids;
  std::stringstream ss(s);
  std::string id;
  while (std::getline(ss, id, ','))
    if (!id.empty()) ids.push_back(id);
  return ids;
}

}  // namespace tessera::cli

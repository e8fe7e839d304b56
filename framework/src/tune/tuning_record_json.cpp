// Tuning records as JSON: writing them, reading them back with every field checked (errors name
// the source, the record and the field), and the checks a record passes before it is stored.
// A decision's value is its knob_value_str spelling (the pipeline YAML's), read back the way the
// pipeline parser reads a knob value, so "128" the string and 128 the integer stay apart.
// Tests: tests/unit/tuning_db_test.cpp.
#include "tuning_record_json.h"

#include <cmath>
#include <set>

#include <yaml-cpp/yaml.h>

#include "tessera/pass/knob.h"

namespace tessera {

namespace {

Diagnostic error_in(const std::string& source, const std::string& where, const std::string& message) {
  Diagnostic d = make_error(where + ": " + message);
  d.loc.file = source;
  return d;
}

// A key field or measurer prints as one word of `db list` and one part of a key.
bool is_key_word(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '/' || u <= 0x20 || u == 0x7f) return false;
  }
  return true;
}

bool has_control_characters(const std::string& s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

std::string number_str(double d) {
  TuningJson j = d;
  return j.dump();  // nan and inf dump as null: say so in words
}

std::string finite_str(double d) { return std::isfinite(d) ? number_str(d) : (std::isnan(d) ? "nan" : "inf"); }

// Reads a knob_value_str spelling back: YAML's reading of the text, typed as the pipeline parser
// types a knob value (a quoted scalar is a string, a plain one is typed by its content, a flow
// list holds integers). nullopt when the text is not a value.
std::optional<AttrValue> knob_value_from_text(const std::string& text) {
  if (text.empty()) return std::nullopt;
  // A value nests no deeper than a list of integers: refuse deeper text before YAML builds it.
  if ((text.front() == '[' || text.front() == '{') && text.find_first_of("[]{}", 1) != text.size() - 1)
    return std::nullopt;
  try {
    YAML::Node node = YAML::Load(text);
    const auto quoted = [](const YAML::Node& n) { return n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str"; };
    if (node.IsScalar()) {
      if (quoted(node)) return AttrValue(node.Scalar());
      return parse_knob_value(node.Scalar());  // nullopt for `auto`, which is no value
    }
    if (node.IsSequence()) {
      std::vector<int64_t> ints;
      for (const YAML::Node& element : node) {
        if (!element.IsScalar() || quoted(element)) return std::nullopt;
        std::optional<AttrValue> v = parse_knob_value(element.Scalar());
        if (!v || !std::holds_alternative<int64_t>(*v)) return std::nullopt;
        ints.push_back(std::get<int64_t>(*v));
      }
      return AttrValue(std::move(ints));
    }
  } catch (const YAML::Exception&) {
  }
  return std::nullopt;
}

// Field access with errors that name the field: `where` is the object's path ("records[3]").
class ObjectReader {
 public:
  ObjectReader(const TuningJson& j, const std::string& source, std::string where)
      : j_(j), source_(source), where_(std::move(where)) {}

  // The object has exactly `fields` (a misspelt field would otherwise be silently dropped).
  Status expect_fields(std::initializer_list<const char*> fields) const {
    if (!j_.is_object()) return error_in(source_, where_, "must be a JSON object, got " + kind(j_));
    std::set<std::string> known(fields.begin(), fields.end());
    for (const auto& item : j_.items())
      if (!known.count(item.key()))
        return error_in(source_, where_ + "." + item.key(), "unknown field (expected " + join(fields) + ")");
    for (const char* f : fields)
      if (!j_.contains(f)) return error_in(source_, where_, "missing field '" + std::string(f) + "'");
    return Status::ok();
  }

  Expected<std::string> string(const char* f) const {
    const TuningJson& v = j_.at(f);
    if (!v.is_string()) return field_error(f, "must be a string, got " + kind(v));
    return v.get<std::string>();
  }
  Expected<double> number(const char* f) const {
    const TuningJson& v = j_.at(f);
    if (!v.is_number()) return field_error(f, "must be a number, got " + kind(v));
    return v.get<double>();
  }
  Expected<int64_t> integer(const char* f) const {
    const TuningJson& v = j_.at(f);
    if (!v.is_number_integer()) return field_error(f, "must be an integer, got " + kind(v));
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return field_error(f, "is out of range: " + v.dump());
    return v.get<int64_t>();
  }
  Expected<uint64_t> hash(const char* f) const {
    TESSERA_ASSIGN_OR_RETURN(std::string text, string(f));
    uint64_t h = 0;
    if (!parse_hash_hex(text, h)) return field_error(f, "must be a hash of 1 to 16 hex digits, got '" + text + "'");
    return h;
  }

  Diagnostic field_error(const char* f, const std::string& message) const {
    return error_in(source_, where_ + "." + f, message);
  }

 private:
  static std::string kind(const TuningJson& v) {
    std::string text = v.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return std::string(v.type_name()) + " " + text;
  }
  static std::string join(std::initializer_list<const char*> fields) {
    std::string s;
    for (const char* f : fields) s += (s.empty() ? "" : ", ") + std::string(f);
    return s;
  }

  const TuningJson& j_;
  const std::string& source_;
  std::string where_;
};

}  // namespace

Expected<TuningJson> parse_tuning_json(const std::string& text, const std::string& source) {
  // The export format nests a few levels (document, records, a record, its decisions, a
  // decision); anything deeper is discarded by the callback instead of being built, and reported.
  constexpr int kMaxDepth = 8;
  bool too_deep = false;
  TuningJson j;
  try {
    j = TuningJson::parse(text, [&](int depth, TuningJson::parse_event_t, TuningJson&) {
      if (depth > kMaxDepth) too_deep = true;
      return !too_deep;
    });
  } catch (const TuningJson::parse_error& ex) {
    // ex.byte is the 1-based offset of the byte where parsing failed.
    const SourceLoc loc = source_loc_at(text, source, ex.byte > 0 ? ex.byte - 1 : 0);
    std::string what = ex.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column 2: ".
    if (size_t colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    Diagnostic d = make_error("invalid JSON: " + what);
    d.at(loc, source_line_of(text, loc.line));
    return d;
  }
  if (too_deep) {
    Diagnostic d = make_error("JSON nested deeper than " + std::to_string(kMaxDepth) +
                              " levels, deeper than the tuning-database format");
    d.loc.file = source;
    return d;
  }
  return j;
}

Status check_tuning_record(const TuningRecord& r, const std::string& source, const std::string& where) {
  const auto word = [&](const std::string& field, const std::string& value) -> Status {
    if (is_key_word(value)) return Status::ok();
    return error_in(source, where, field + " must be a non-empty word without '/', spaces or control characters, got '" +
                                       value + "'");
  };
  TESSERA_TRY(word("device", r.key.device));
  TESSERA_TRY(word("compute_capability", r.key.compute_capability));
  TESSERA_TRY(word("version", r.key.version));
  TESSERA_TRY(word("measurer", r.measurer));
  if (has_control_characters(r.kernel_name)) return error_in(source, where, "kernel_name holds control characters");
  if (has_control_characters(r.date)) return error_in(source, where, "date holds control characters");
  if (!std::isfinite(r.latency_us) || r.latency_us <= 0)
    return error_in(source, where, "latency_us must be a positive number, got " + finite_str(r.latency_us));
  if (!std::isfinite(r.heuristic_latency_us) || r.heuristic_latency_us < 0)
    return error_in(source, where,
                    "heuristic_latency_us must be a number, 0 or more, got " + finite_str(r.heuristic_latency_us));
  if (r.trials < 0) return error_in(source, where, "trials must be 0 or more, got " + std::to_string(r.trials));
  for (size_t i = 0; i < r.decisions.size(); ++i) {
    const DecisionKey& k = r.decisions[i].key;
    if (k.pass.empty() || k.knob.empty() || k.ordinal < 0 || has_control_characters(k.pass) ||
        has_control_characters(k.knob))
      return error_in(source, where + ".decisions[" + std::to_string(i) + "]",
                      "a decision needs a pass and a knob (printable names) and an ordinal of 0 or more, got '" +
                          k.str() + "'");
  }
  return Status::ok();
}

TuningJson decisions_to_json(const std::vector<Decision>& decisions) {
  TuningJson out = TuningJson::array();
  for (const Decision& d : decisions) {
    out.push_back({{"pass", d.key.pass},
                   {"knob", d.key.knob},
                   {"ordinal", d.key.ordinal},
                   {"kernel", hash_hex(d.key.kernel)},
                   {"value", knob_value_str(d.value)}});
  }
  return out;
}

Expected<std::vector<Decision>> decisions_from_json(const TuningJson& j, const std::string& source,
                                                   const std::string& where) {
  if (!j.is_array()) return error_in(source, where, "must be a JSON array of decisions, got " + std::string(j.type_name()));
  std::vector<Decision> out;
  for (size_t i = 0; i < j.size(); ++i) {
    ObjectReader in(j[i], source, where + "[" + std::to_string(i) + "]");
    TESSERA_TRY(in.expect_fields({"pass", "knob", "ordinal", "kernel", "value"}));
    Decision d;
    TESSERA_ASSIGN_OR_RETURN(d.key.pass, in.string("pass"));
    TESSERA_ASSIGN_OR_RETURN(d.key.knob, in.string("knob"));
    TESSERA_ASSIGN_OR_RETURN(int64_t ordinal, in.integer("ordinal"));
    if (ordinal < 0 || ordinal > INT32_MAX)
      return in.field_error("ordinal", "must be from 0 to " + std::to_string(INT32_MAX) + ", got " + std::to_string(ordinal));
    d.key.ordinal = static_cast<int>(ordinal);
    TESSERA_ASSIGN_OR_RETURN(d.key.kernel, in.hash("kernel"));
    TESSERA_ASSIGN_OR_RETURN(std::string value, in.string("value"));
    std::optional<AttrValue> v = knob_value_from_text(value);
    if (!v)
      return in.field_error("value", "'" + value + "' is not a knob value (true, 128, 0.5, tanh, \"128\", [1, 2])");
    d.value = std::move(*v);
    out.push_back(std::move(d));
  }
  return out;
}

TuningJson record_to_json(const TuningRecord& r) {
  return TuningJson{{"kernel", hash_hex(r.key.kernel)},
                    {"device", r.key.device},
                    {"compute_capability", r.key.compute_capability},
                    {"version", r.key.version},
                    {"pipeline", hash_hex(r.key.pipeline)},
                    {"measurer", r.measurer},
                    {"kernel_name", r.kernel_name},
                    {"latency_us", r.latency_us},
                    {"heuristic_latency_us", r.heuristic_latency_us},
                    {"trials", r.trials},
                    {"date", r.date},
                    {"decisions", decisions_to_json(r.decisions)}};
}

Expected<TuningRecord> record_from_json(const TuningJson& j, const std::string& source, const std::string& where) {
  ObjectReader in(j, source, where);
  TESSERA_TRY(in.expect_fields({"kernel", "device", "compute_capability", "version", "pipeline", "measurer",
                                "kernel_name", "latency_us", "heuristic_latency_us", "trials", "date", "decisions"}));
  TuningRecord r;
  TESSERA_ASSIGN_OR_RETURN(r.key.kernel, in.hash("kernel"));
  TESSERA_ASSIGN_OR_RETURN(r.key.device, in.string("device"));
  TESSERA_ASSIGN_OR_RETURN(r.key.compute_capability, in.string("compute_capability"));
  TESSERA_ASSIGN_OR_RETURN(r.key.version, in.string("version"));
  TESSERA_ASSIGN_OR_RETURN(r.key.pipeline, in.hash("pipeline"));
  TESSERA_ASSIGN_OR_RETURN(r.measurer, in.string("measurer"));
  TESSERA_ASSIGN_OR_RETURN(r.kernel_name, in.string("kernel_name"));
  TESSERA_ASSIGN_OR_RETURN(r.latency_us, in.number("latency_us"));
  TESSERA_ASSIGN_OR_RETURN(r.heuristic_latency_us, in.number("heuristic_latency_us"));
  TESSERA_ASSIGN_OR_RETURN(r.trials, in.integer("trials"));
  TESSERA_ASSIGN_OR_RETURN(r.date, in.string("date"));
  TESSERA_ASSIGN_OR_RETURN(r.decisions, decisions_from_json(j.at("decisions"), source, where + ".decisions"));
  TESSERA_TRY(check_tuning_record(r, source, where));
  return r;
}

}  // namespace tessera

// Pipeline files: reads the YAML into a typed PipelineSpec (shape errors with file:line:col),
// validates it against the loaded plugins, and prints the effective pipeline back as YAML.
#include "tessera/pass/pipeline.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "tessera/pass/pass.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/spelling.h"
#include "tessera/target/device.h"
#include "tessera/tune/tuner.h"

namespace tessera {

namespace {

constexpr std::array<Dialect, 6> kStages = {Dialect::Torch, Dialect::Tensor, Dialect::Loop,
                                            Dialect::Tile,  Dialect::Kernel, Dialect::Cuda};
const std::vector<std::string> kTopLevelKeys = {"name", "plugins", "stages", "target", "tuner", "threads"};
// More threads than this is a typo, not a machine.
constexpr int kMaxThreads = 1024;
const std::vector<std::string> kTargetKeys = {"name", "arch", "device"};
constexpr std::string_view kDefaultTarget = "cuda";
constexpr std::string_view kDefaultArch = "sm_90";
constexpr std::string_view kDefaultTuner = "mcts";

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += sep;
    s += items[i];
  }
  return s;
}

std::vector<std::string> stage_names() {
  std::vector<std::string> names;
  for (Dialect d : kStages) names.emplace_back(dialect_name(d));
  return names;
}

// " (did you mean 'x'?)" for the closest known name, only when it is close; "" otherwise.
std::string did_you_mean(std::string_view wrong, const std::vector<std::string>& known) {
  auto best = closest_spelling(wrong, known);
  return best ? " (did you mean '" + *best + "'?)" : std::string();
}

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: return "a scalar ('" + n.Scalar() + "')";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "nothing";
}

// Quoted scalars ("128", '128') and explicit !!str are strings whatever their content.
bool is_quoted_or_str(const YAML::Node& n) { return n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str"; }

std::string str_scalar(std::string_view s) { return knob_value_str(AttrValue(std::string(s))); }

// A pipeline nests a few levels (stages, passes, knobs, a knob's list); deeper text is a mistake
// or an attack, reported at the collection that passes the limit before the tree is built.
constexpr int kMaxPipelineYamlDepth = 64;

// Checks the event stream of a text before YAML::LoadAll builds its tree:
// - where each YAML document starts. yaml-cpp (0.7) never consumes a ',' that stands outside a
//   flow collection ("," or "- 1\n,"): it ends an empty document there and starts the next one at
//   the same place, so YAML::LoadAll loops forever, allocating. A document that starts where the
//   previous one started is that stuck token.
// - how deeply collections nest: past kMaxPipelineYamlDepth, the collection that passes it. (The
//   parser's own guard, far deeper, would say only "bad file".)
class YamlShapeCheck final : public YAML::EventHandler {
 public:
  struct TooDeep {
    YAML::Mark mark;
  };
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    enter(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    enter(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  // Thrown out of the parser (which is exception-safe: its own errors are exceptions) to stop at once.
  void enter(const YAML::Mark& mark) {
    if (++depth_ > kMaxPipelineYamlDepth) throw TooDeep{mark};
  }
  int depth_ = 0;
};

struct YamlShapeProblem {
  YAML::Mark mark;
  std::string message;
};

// The first shape problem of the text (see YamlShapeCheck), if it has one. Parse errors are left
// to YAML::LoadAll, which reports them.
std::optional<YamlShapeProblem> yaml_shape_problem(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  YamlShapeCheck check;
  try {
    while (parser.HandleNextDocument(check)) {
      const size_t n = check.starts.size();
      if (n >= 2 && check.starts[n - 1].pos == check.starts[n - 2].pos)
        return YamlShapeProblem{check.starts[n - 1],
                                "invalid YAML: unexpected ',' outside a flow collection ([...] or {...})"};
    }
  } catch (const YamlShapeCheck::TooDeep& deep) {
    return YamlShapeProblem{deep.mark, "invalid YAML: lists and maps nested deeper than " +
                                           std::to_string(kMaxPipelineYamlDepth) +
                                           " levels (a pipeline needs a handful)"};
  }
  return std::nullopt;
}

// Reads one pipeline file's YAML tree into a PipelineSpec, stopping at the first shape error.
class PipelineReader {
 public:
  PipelineReader(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  Expected<PipelineSpec> read() {
    std::vector<YAML::Node> documents;
    try {
      if (std::optional<YamlShapeProblem> problem = yaml_shape_problem(text_))
        return error(loc_of_mark(problem->mark, 1), problem->message);
      documents = YAML::LoadAll(text_);
    } catch (const YAML::ParserException& e) {
      return error(loc_of_mark(e.mark, 1), "invalid YAML: " + e.msg);
    } catch (const YAML::Exception& e) {
      return error(loc_of_mark(e.mark, 1), "invalid YAML: " + e.msg);
    }
    if (documents.size() > 1) {
      return error(loc_of(documents[1]), "a pipeline file holds one YAML document; this one has " +
                                             std::to_string(documents.size()));
    }
    try {
      return read_top(documents.empty() ? YAML::Node() : documents.front());
    } catch (const YAML::Exception& e) {
      // Node accessors only throw on misuse we guard against; report rather than crash if one does.
      return error(loc_of_mark(e.mark, 1), "internal error while reading the pipeline: " + e.msg);
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
    int length = 1;
    if (n.IsScalar()) length = static_cast<int>(n.Scalar().size()) + (n.Tag() == "!" ? 2 : 0);
    return loc_of_mark(n.Mark(), length);
  }

  // A null value (`key:`) has no useful mark of its own: point at its key instead.
  SourceLoc loc_of_value(const YAML::Node& key, const YAML::Node& value) const {
    return value.IsNull() || value.Mark().line < 0 ? loc_of(key) : loc_of(value);
  }

  // From the start of `key` to the end of `value` when both sit on one line.
  SourceLoc loc_of_pair(const YAML::Node& key, const YAML::Node& value) const {
    SourceLoc l = loc_of(key);
    if (value.IsScalar() && value.Mark().line == key.Mark().line && value.Mark().column > key.Mark().column) {
      SourceLoc v = loc_of(value);
      l.length = v.col + v.length - l.col;
    }
    return l;
  }

  Diagnostic error(const SourceLoc& l, std::string message) const {
    Diagnostic d = make_error(std::move(message));
    d.at(l, source_line_of(text_, l.line));
    return d;
  }

  // The keys of a map, checked to be plain scalars and unique.
  Status check_keys(const YAML::Node& map, std::string_view where) const {
    std::vector<std::pair<std::string, SourceLoc>> seen;
    for (auto kv : map) {
      const YAML::Node& key = kv.first;
      if (!key.IsScalar()) return error(loc_of(key), "keys " + std::string(where) + " must be names, got " + kind_of(key));
      auto dup = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == key.Scalar(); });
      if (dup != seen.end()) {
        return error(loc_of(key), "duplicate key '" + key.Scalar() + "' " + std::string(where))
            .note("first given at " + dup->second.str());
      }
      seen.emplace_back(key.Scalar(), loc_of(key));
    }
    return Status::ok();
  }

  Expected<PipelineSpec> read_top(const YAML::Node& root) {
    PipelineSpec spec;
    spec.file = file_;
    spec.source_text = text_;
    if (root.IsNull() || !root.IsDefined()) {
      SourceLoc l;
      l.file = file_;
      return error(l, "empty pipeline file (expected a map with at least `name:` and `stages:`)");
    }
    if (!root.IsMap()) {
      return error(loc_of(root), "a pipeline file is a map (keys: " + join(kTopLevelKeys) + "), got " + kind_of(root));
    }
    TESSERA_TRY(check_keys(root, "at the top level"));
    bool has_name = false;
    for (auto kv : root) {
      const YAML::Node& key = kv.first;
      const YAML::Node& value = kv.second;
      const std::string& k = key.Scalar();
      if (k == "name") {
        if (!value.IsScalar() || value.Scalar().empty())
          return error(loc_of_value(key, value), "'name' must be a non-empty string, got " + kind_of(value));
        spec.name = value.Scalar();
        has_name = true;
      } else if (k == "plugins") {
        TESSERA_TRY(read_plugins(key, value, spec));
      } else if (k == "stages") {
        TESSERA_TRY(read_stages(key, value, spec));
      } else if (k == "target") {
        TESSERA_TRY(read_target(key, value, spec.target));
      } else if (k == "tuner") {
        TESSERA_TRY(read_tuner(key, value, spec.tuner));
      } else if (k == "threads") {
        TESSERA_TRY(read_threads(key, value, spec));
      } else {
        return error(loc_of(key), "unknown top-level key '" + k + "'" + did_you_mean(k, kTopLevelKeys))
            .note("top-level keys: " + join(kTopLevelKeys));
      }
    }
    if (!has_name) {
      return error(loc_of(root), "missing required key 'name'");
    }
    return spec;
  }

  // Relative plugin paths are relative to the YAML file, made absolute so the spec means the same
  // wherever it is printed and read back.
  std::string resolve_plugin_path(const std::string& written) const {
    if (file_.empty() || file_.front() == '<') return written;
    std::filesystem::path p(written);
    if (p.is_relative()) p = std::filesystem::path(file_).parent_path() / p;
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(p, ec);
    return (ec ? p : abs).lexically_normal().string();
  }

  Status read_threads(const YAML::Node& key, const YAML::Node& value, PipelineSpec& spec) {
    std::optional<AttrValue> v;
    if (value.IsScalar() && !is_quoted_or_str(value)) v = parse_knob_value(value.Scalar());
    const int64_t* n = v ? std::get_if<int64_t>(&*v) : nullptr;
    if (n == nullptr || *n < 1 || *n > kMaxThreads)
      return error(loc_of_value(key, value), "'threads' must be an integer from 1 to " + std::to_string(kMaxThreads) +
                                                 ", got " + kind_of(value));
    spec.threads = static_cast<int>(*n);
    return Status::ok();
  }

  Status read_plugins(const YAML::Node& key, const YAML::Node& value, PipelineSpec& spec) {
    if (value.IsNull()) return Status::ok();
    if (!value.IsSequence())
      return error(loc_of_value(key, value), "'plugins' must be a list of plugin files, got " + kind_of(value));
    for (const YAML::Node& item : value) {
      if (!item.IsScalar() || item.Scalar().empty())
        return error(loc_of(item.IsNull() ? value : item), "each entry of 'plugins' must be a file path, got " + kind_of(item));
      spec.plugins.push_back(resolve_plugin_path(item.Scalar()));
      spec.plugin_locs.push_back(loc_of(item));
    }
    return Status::ok();
  }

  Status read_stages(const YAML::Node& key, const YAML::Node& value, PipelineSpec& spec) {
    if (value.IsNull()) return Status::ok();
    if (!value.IsMap())
      return error(loc_of_value(key, value), "'stages' must be a map from stage name to a list of passes, got " + kind_of(value));
    for (auto kv : value) {
      const YAML::Node& stage_key = kv.first;
      const YAML::Node& list = kv.second;
      if (!stage_key.IsScalar()) return error(loc_of(stage_key), "stage names must be names, got " + kind_of(stage_key));
      const std::string& name = stage_key.Scalar();
      std::optional<Dialect> stage = parse_dialect(name);
      if (!stage || std::find(kStages.begin(), kStages.end(), *stage) == kStages.end()) {
        return error(loc_of(stage_key), "unknown stage '" + name + "'" + did_you_mean(name, stage_names()))
            .note("stages, in the order they run: " + join(stage_names()));
      }
      if (spec.stages.count(*stage)) {
        return error(loc_of(stage_key), "stage '" + name + "' appears twice in 'stages'");
      }
      std::vector<PassEntry>& entries = spec.stages[*stage];
      if (list.IsNull()) continue;  // `tile:` alone: a stage with no passes
      if (!list.IsSequence())
        return error(loc_of_value(stage_key, list), "the passes of stage '" + name + "' must be a list, got " + kind_of(list));
      for (const YAML::Node& item : list) {
        Expected<PassEntry> entry = read_pass_entry(item, list, name);
        if (!entry) return entry.status();
        entries.push_back(std::move(*entry));
      }
    }
    return Status::ok();
  }

  Expected<PassEntry> read_pass_entry(const YAML::Node& item, const YAML::Node& list, const std::string& stage) {
    PassEntry entry;
    if (item.IsScalar()) {
      if (item.Scalar().empty()) return error(loc_of(item), "empty pass name in stage '" + stage + "'");
      entry.name = item.Scalar();
      entry.loc = loc_of(item);
      return entry;
    }
    if (item.IsMap() && item.size() == 1) {
      auto kv = *item.begin();
      const YAML::Node& name = kv.first;
      const YAML::Node& knobs = kv.second;
      if (!name.IsScalar() || name.Scalar().empty())
        return error(loc_of(name), "a pass name must be a name, got " + kind_of(name));
      entry.name = name.Scalar();
      entry.loc = loc_of(name);
      if (knobs.IsNull()) return entry;
      if (!knobs.IsMap()) {
        return error(loc_of_value(name, knobs), "the knobs of pass '" + entry.name +
                                                    "' must be a map {KNOB: value, ...}, got " + kind_of(knobs));
      }
      TESSERA_TRY(check_keys(knobs, "in the knobs of pass '" + entry.name + "'"));
      for (auto knob_kv : knobs) {
        TESSERA_TRY(read_knob(knob_kv.first, knob_kv.second, entry));
      }
      return entry;
    }
    if (item.IsMap()) {
      std::vector<std::string> keys;
      for (auto kv : item) keys.push_back("'" + (kv.first.IsScalar() ? kv.first.Scalar() : std::string("?")) + "'");
      Diagnostic d = error(loc_of(item), "a pass entry is `name` or `name: {KNOB: value, ...}`, but this one has " +
                                             std::to_string(keys.size()) + " keys (" + join(keys) + ")");
      if (!keys.empty()) {
        d.note("to pin knobs, indent them under the pass name or write `- " + keys.front().substr(1, keys.front().size() - 2) +
               ": {KNOB: value}`");
      }
      return d;
    }
    const YAML::Node& where = item.IsNull() || item.Mark().line < 0 ? list : item;
    return error(loc_of(where), "a pass entry in stage '" + stage + "' must be a pass name or `name: {KNOB: value}`, got " +
                                    kind_of(item));
  }

  // A knob or tuner-option value: a scalar typed by content, or a list of integers.
  // nullopt means `auto` (not pinned).
  Expected<std::optional<AttrValue>> read_value(const YAML::Node& key, const YAML::Node& value,
                                                const std::string& what) {
    if (value.IsScalar()) {
      if (is_quoted_or_str(value)) return std::optional<AttrValue>(AttrValue(value.Scalar()));
      return parse_knob_value(value.Scalar());
    }
    if (value.IsSequence()) {
      std::vector<int64_t> ints;
      for (const YAML::Node& element : value) {
        std::optional<AttrValue> v;
        if (element.IsScalar() && !is_quoted_or_str(element)) v = parse_knob_value(element.Scalar());
        if (!v || !std::holds_alternative<int64_t>(*v)) {
          return error(loc_of(element.IsNull() ? value : element),
                       what + ": a list value holds integers only, got " + kind_of(element));
        }
        ints.push_back(std::get<int64_t>(*v));
      }
      return std::optional<AttrValue>(AttrValue(std::move(ints)));
    }
    if (value.IsNull()) return error(loc_of_value(key, value), what + " has no value (write a value, or `auto`)");
    return error(loc_of(value), what + " must be a value or a list of integers, got " + kind_of(value));
  }

  Status read_knob(const YAML::Node& key, const YAML::Node& value, PassEntry& entry) {
    const std::string& knob = key.Scalar();
    Expected<std::optional<AttrValue>> v =
        read_value(key, value, "knob '" + knob + "' of pass '" + entry.name + "'");
    if (!v) return v.status();
    if (!*v) {
      entry.auto_knobs.emplace_back(knob, loc_of(key));
    } else {
      entry.pins.push_back(KnobPin{knob, std::move(**v), loc_of_pair(key, value)});
    }
    return Status::ok();
  }

  Status read_target(const YAML::Node& key, const YAML::Node& value, TargetSpec& target) {
    target.loc = loc_of(key);
    if (value.IsNull()) return Status::ok();
    if (!value.IsMap())
      return error(loc_of_value(key, value), "'target' must be a map {name, arch, device}, got " + kind_of(value));
    TESSERA_TRY(check_keys(value, "in 'target'"));
    for (auto kv : value) {
      const std::string& k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (std::find(kTargetKeys.begin(), kTargetKeys.end(), k) == kTargetKeys.end()) {
        return error(loc_of(kv.first), "unknown key '" + k + "' in 'target'" + did_you_mean(k, kTargetKeys))
            .note("target keys: " + join(kTargetKeys));
      }
      if (!v.IsScalar()) return error(loc_of_value(kv.first, v), "target '" + k + "' must be a name, got " + kind_of(v));
      if (k == "name") {
        target.name = v.Scalar();
      } else if (k == "arch") {
        if (!v.Scalar().empty() && !is_known_arch(v.Scalar())) {
          return error(loc_of(v), "unknown arch '" + v.Scalar() + "' in 'target'" + did_you_mean(v.Scalar(), known_archs()))
              .note("known archs: " + join(known_archs()));
        }
        target.arch = v.Scalar();
      } else {
        target.device = v.Scalar();
      }
    }
    return Status::ok();
  }

  Status read_tuner(const YAML::Node& key, const YAML::Node& value, TunerSpec& tuner) {
    tuner.loc = loc_of(key);
    if (value.IsNull()) return Status::ok();
    if (!value.IsMap())
      return error(loc_of_value(key, value), "'tuner' must be a map {name, OPTION: value, ...}, got " + kind_of(value));
    TESSERA_TRY(check_keys(value, "in 'tuner'"));
    for (auto kv : value) {
      const std::string& k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (k == "name") {
        if (!v.IsScalar() || v.Scalar().empty())
          return error(loc_of_value(kv.first, v), "tuner 'name' must be a non-empty name, got " + kind_of(v));
        tuner.name = v.Scalar();
        continue;
      }
      Expected<std::optional<AttrValue>> option = read_value(kv.first, v, "tuner option '" + k + "'");
      if (!option) return option.status();
      if (*option) tuner.options.push_back(KnobPin{k, std::move(**option), loc_of_pair(kv.first, v)});
    }
    return Status::ok();
  }

  const std::string& text_;
  const std::string& file_;
};

// Checks pinned values and `auto` names against a knob schema (a pass's knobs or a tuner's options).
class KnobChecker {
 public:
  KnobChecker(const PipelineSpec& spec, std::string owner_kind, std::string owner, const std::vector<KnobSpec>& knobs)
      : spec_(spec), owner_kind_(std::move(owner_kind)), owner_(std::move(owner)), knobs_(knobs) {}

  Status check_name(const std::string& knob, const SourceLoc& loc) const {
    if (find(knob)) return Status::ok();
    std::vector<std::string> names;
    for (const KnobSpec& k : knobs_) names.push_back(k.name);
    std::string noun = owner_kind_ == "pass" ? "knob" : "option";
    Diagnostic d = error(loc, "unknown " + noun + " '" + knob + "' of " + owner_kind_ + " '" + owner_ + "'" +
                                  did_you_mean(knob, names));
    d.note(names.empty() ? owner_kind_ + " '" + owner_ + "' has no " + noun + "s"
                         : noun + "s of '" + owner_ + "': " + join(names));
    return d;
  }

  Status check_pin(const KnobPin& pin) const {
    TESSERA_TRY(check_name(pin.knob, pin.loc));
    const KnobSpec& k = *find(pin.knob);
    std::string what = (owner_kind_ == "pass" ? "knob '" : "option '") + pin.knob + "' of " + owner_kind_ + " '" + owner_ + "'";
    if (!knob_value_has_type(pin.value, k.type)) {
      return error(pin.loc, what + " expects " + std::string(knob_type_name(k.type)) + ", got '" +
                                knob_value_str(pin.value) + "'");
    }
    if (!k.candidates.empty()) {
      AttrValue typed = pin.value;
      if (k.type == KnobType::Float && std::holds_alternative<int64_t>(typed))
        typed = static_cast<double>(std::get<int64_t>(typed));
      if (std::find(k.candidates.begin(), k.candidates.end(), typed) == k.candidates.end()) {
        std::vector<std::string> values;
        for (const AttrValue& c : k.candidates) values.push_back(knob_value_str(c));
        return error(pin.loc, what + " must be one of " + join(values) + "; got '" + knob_value_str(pin.value) + "'");
      }
    }
    return Status::ok();
  }

 private:
  const KnobSpec* find(const std::string& name) const {
    auto it = std::find_if(knobs_.begin(), knobs_.end(), [&](const KnobSpec& k) { return k.name == name; });
    return it == knobs_.end() ? nullptr : &*it;
  }
  Diagnostic error(const SourceLoc& loc, std::string message) const {
    Diagnostic d = make_error(std::move(message));
    d.at(loc, source_line_of(spec_.source_text, loc.line));
    return d;
  }

  const PipelineSpec& spec_;
  std::string owner_kind_, owner_;
  const std::vector<KnobSpec>& knobs_;
};

Diagnostic spec_error(const PipelineSpec& spec, const SourceLoc& loc, std::string message) {
  Diagnostic d = make_error(std::move(message));
  d.at(loc, source_line_of(spec.source_text, loc.line));
  return d;
}

Status validate_entry(const PipelineSpec& spec, Dialect stage, const PassEntry& entry, const Registry& registry) {
  std::unique_ptr<Pass> pass = registry.make_pass(entry.name);
  if (!pass) {
    Diagnostic d = spec_error(spec, entry.loc,
                              "unknown pass '" + entry.name + "'" + did_you_mean(entry.name, registry.names(ComponentKind::Pass)));
    d.note("`tessera passes` lists the passes of the loaded plugins");
    return d;
  }
  std::vector<Dialect> stages = pass->stages();
  if (std::find(stages.begin(), stages.end(), stage) == stages.end()) {
    std::vector<std::string> names;
    for (Dialect d : stages) names.emplace_back(dialect_name(d));
    return spec_error(spec, entry.loc, "pass '" + entry.name + "' cannot run in stage '" +
                                           std::string(dialect_name(stage)) + "' (it runs in: " + join(names) + ")");
  }
  std::vector<KnobSpec> knobs = pass->knobs();
  KnobChecker checker(spec, "pass", entry.name, knobs);
  for (const KnobPin& pin : entry.pins) TESSERA_TRY(checker.check_pin(pin));
  for (const auto& [knob, loc] : entry.auto_knobs) TESSERA_TRY(checker.check_name(knob, loc));
  return Status::ok();
}

struct EffectiveTarget {
  std::string name, arch, device;
};

// Defaults filled in: target cuda, arch sm_90, and the H100 for sm_90 (other archs leave the
// device to whoever reads the device table).
EffectiveTarget effective_target(const TargetSpec& t) {
  EffectiveTarget e{t.name.empty() ? std::string(kDefaultTarget) : t.name,
                    t.arch.empty() ? std::string(kDefaultArch) : t.arch, t.device};
  if (e.device.empty() && e.arch == kDefaultArch) e.device = "h100";
  return e;
}

std::string effective_tuner_name(const TunerSpec& t) { return t.name.empty() ? std::string(kDefaultTuner) : t.name; }

// "BN: int in {32, 64, 128}, default heuristic"
std::string knob_comment(const KnobSpec& k) {
  std::string s = k.name + ": " + std::string(knob_type_name(k.type));
  if (!k.candidates.empty()) {
    s += " in {";
    for (size_t i = 0; i < k.candidates.size(); ++i) {
      if (i) s += ", ";
      s += knob_value_str(k.candidates[i]);
    }
    s += "}";
  }
  s += ", default " + (k.default_value ? knob_value_str(*k.default_value) : std::string("heuristic"));
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';  // a comment must stay on its line
  return s;
}

struct PrintedEntry {
  std::string text, comment;
};

PrintedEntry print_entry(const PassEntry& entry, const Registry& registry) {
  std::unique_ptr<Pass> pass = registry.make_pass(entry.name);
  std::vector<KnobSpec> knobs = pass ? pass->knobs() : std::vector<KnobSpec>{};
  std::vector<std::string> fields, comments;
  std::vector<bool> printed(entry.pins.size(), false);
  for (const KnobSpec& k : knobs) {
    std::string value = "auto";
    for (size_t i = 0; i < entry.pins.size(); ++i) {
      if (entry.pins[i].knob == k.name && !printed[i]) {
        value = knob_value_str(entry.pins[i].value);
        printed[i] = true;
        break;
      }
    }
    fields.push_back(str_scalar(k.name) + ": " + value);
    comments.push_back(knob_comment(k));
  }
  // Pins the pass does not declare (an unvalidated spec) are kept, so nothing is silently lost.
  for (size_t i = 0; i < entry.pins.size(); ++i) {
    if (!printed[i]) fields.push_back(str_scalar(entry.pins[i].knob) + ": " + knob_value_str(entry.pins[i].value));
  }
  PrintedEntry out;
  out.text = "- " + str_scalar(entry.name);
  if (!fields.empty()) out.text += ": {" + join(fields) + "}";
  if (!pass) {
    out.comment = "not a registered pass";
  } else {
    out.comment = join(comments, "; ");
  }
  return out;
}

bool same_value(const AttrValue& a, const AttrValue& b) {
  // Compared by spelling so that NaN equals NaN and 1 (int) differs from 1.0 (float).
  return knob_value_str(a) == knob_value_str(b);
}

// Order-insensitive: a YAML map's key order carries no meaning.
bool same_pins(std::vector<KnobPin> a, std::vector<KnobPin> b) {
  if (a.size() != b.size()) return false;
  auto by_knob = [](const KnobPin& x, const KnobPin& y) { return x.knob < y.knob; };
  std::stable_sort(a.begin(), a.end(), by_knob);
  std::stable_sort(b.begin(), b.end(), by_knob);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].knob != b[i].knob || !same_value(a[i].value, b[i].value)) return false;
  }
  return true;
}

std::vector<std::pair<Dialect, const std::vector<PassEntry>*>> nonempty_stages(const PipelineSpec& s) {
  std::vector<std::pair<Dialect, const std::vector<PassEntry>*>> out;
  for (const auto& [stage, entries] : s.stages)
    if (!entries.empty()) out.emplace_back(stage, &entries);
  return out;
}

}  // namespace

Dialect PipelineSpec::last_stage() const {
  Dialect last = Dialect::Torch;
  for (const auto& [stage, entries] : stages)
    if (!entries.empty() && stage > last) last = stage;
  return last;
}

char stage_letter(Dialect stage) {
  switch (stage) {
    case Dialect::Torch: return 'g';
    case Dialect::Tensor: return 'd';
    case Dialect::Loop: return 'l';
    case Dialect::Tile: return 't';
    case Dialect::Kernel: return 'k';
    case Dialect::Cuda: return 'c';
    case Dialect::Core: break;
  }
  return '?';  // Core is not a pipeline stage
}

std::string pass_marker(Dialect stage, size_t position, const std::string& pass_name) {
  char number[32];
  std::snprintf(number, sizeof number, "%03zu", position);
  return std::string(1, stage_letter(stage)) + ":" + number + "_" + pass_name;
}

Expected<PipelineSpec> parse_pipeline(const std::string& yaml_text, const std::string& file) {
  return PipelineReader(yaml_text, file).read();
}

Status pin_knob(PipelineSpec& spec, const std::string& assignment) {
  const std::string where = "--knob " + assignment;
  auto bad = [&](const std::string& why) { return make_error(where + ": " + why); };
  const size_t dot = assignment.find('.'), eq = assignment.find('=');
  if (dot == std::string::npos || eq == std::string::npos || dot == 0 || eq <= dot + 1 || eq + 1 == assignment.size())
    return bad("expected PASS.KNOB=VALUE (for example tma_copy.TMA=true)");
  const std::string pass = assignment.substr(0, dot), knob = assignment.substr(dot + 1, eq - dot - 1);
  // The value as a pipeline file spells it, read by the pipeline reader itself.
  Expected<PipelineSpec> one = parse_pipeline(
      "name: knob\nstages:\n  tile:\n    - " + pass + ": {" + knob + ": " + assignment.substr(eq + 1) + "}\n", where);
  if (!one) return bad(one.error().message);
  const std::vector<PassEntry>& entries = one->stages[Dialect::Tile];
  if (entries.size() != 1 || entries[0].pins.size() != 1 || entries[0].name != pass || entries[0].pins[0].knob != knob)
    return bad("expected PASS.KNOB=VALUE with one value (`auto` pins nothing)");
  KnobPin pin = entries[0].pins[0];
  pin.loc = SourceLoc{where, 0, 0, 1};  // not a line of the pipeline file
  bool found = false;
  for (auto& [stage, stage_entries] : spec.stages)
    for (PassEntry& e : stage_entries) {
      if (e.name != pass) continue;
      std::erase_if(e.pins, [&](const KnobPin& p) { return p.knob == knob; });
      e.pins.push_back(pin);
      found = true;
    }
  if (!found) return bad("pipeline '" + spec.name + "' has no pass '" + pass + "'");
  return Status::ok();
}

Expected<PipelineSpec> load_pipeline_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return make_error("cannot read pipeline file '" + path + "': no such file");
  if (!std::filesystem::is_regular_file(path, ec))
    return make_error("cannot read pipeline file '" + path + "': not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) return make_error("cannot read pipeline file '" + path + "'");
  return parse_pipeline(text.str(), path);
}

Status validate_pipeline(const PipelineSpec& spec, const Registry& registry) {
  for (Dialect stage : kStages) {
    auto it = spec.stages.find(stage);
    if (it == spec.stages.end()) continue;
    for (const PassEntry& entry : it->second) TESSERA_TRY(validate_entry(spec, stage, entry, registry));
  }
  for (const auto& [stage, entries] : spec.stages) {
    if (std::find(kStages.begin(), kStages.end(), stage) == kStages.end() && !entries.empty())
      return spec_error(spec, entries.front().loc, "'" + std::string(dialect_name(stage)) + "' is not a pipeline stage");
  }
  if (!spec.target.arch.empty() && !is_known_arch(spec.target.arch)) {
    return spec_error(spec, spec.target.loc, "unknown arch '" + spec.target.arch + "' in 'target'" +
                                                 did_you_mean(spec.target.arch, known_archs()))
        .note("known archs: " + join(known_archs()));
  }
  // The tuner's options are checked only when its plugin is loaded: compiling needs no tuner.
  if (std::unique_ptr<Tuner> tuner = registry.make_tuner(effective_tuner_name(spec.tuner))) {
    std::vector<KnobSpec> options = tuner->options();
    KnobChecker checker(spec, "tuner", effective_tuner_name(spec.tuner), options);
    for (const KnobPin& pin : spec.tuner.options) TESSERA_TRY(checker.check_pin(pin));
  }
  return Status::ok();
}

std::string print_pipeline(const PipelineSpec& spec, const Registry& registry) {
  std::string out =
      "# Effective pipeline: every knob of every pass is listed, pinned or `auto` (the tuner or the\n"
      "# pass's heuristic decides).\n";
  out += "name: " + str_scalar(spec.name) + "\n";
  if (!spec.plugins.empty()) {
    out += "plugins:\n";
    for (const std::string& p : spec.plugins) out += "  - " + str_scalar(p) + "\n";
  }
  // Entries first, so the knob comments can line up in one column.
  std::vector<std::pair<Dialect, std::vector<PrintedEntry>>> stages;
  size_t width = 0;
  for (const auto& [stage, entries] : spec.stages) {
    std::vector<PrintedEntry> printed;
    for (const PassEntry& e : entries) {
      printed.push_back(print_entry(e, registry));
      if (!printed.back().comment.empty()) width = std::max(width, printed.back().text.size());
    }
    stages.emplace_back(stage, std::move(printed));
  }
  if (stages.empty()) {
    out += "stages: {}\n";
  } else {
    out += "stages:\n";
    for (const auto& [stage, printed] : stages) {
      out += "  " + std::string(dialect_name(stage)) + ":";
      if (printed.empty()) {
        out += " []\n";
        continue;
      }
      out += "\n";
      for (const PrintedEntry& e : printed) {
        std::string line = "    " + e.text;
        if (!e.comment.empty()) line += std::string(width - e.text.size() + 2, ' ') + "# " + e.comment;
        out += line + "\n";
      }
    }
  }
  EffectiveTarget target = effective_target(spec.target);
  out += "target: {name: " + str_scalar(target.name) + ", arch: " + str_scalar(target.arch);
  if (!target.device.empty()) out += ", device: " + str_scalar(target.device);
  out += "}\n";

  const std::string tuner_name = effective_tuner_name(spec.tuner);
  std::vector<std::string> fields = {"name: " + str_scalar(tuner_name)};
  for (const KnobPin& o : spec.tuner.options) fields.push_back(str_scalar(o.knob) + ": " + knob_value_str(o.value));
  if (std::unique_ptr<Tuner> tuner = registry.make_tuner(tuner_name)) {
    for (const KnobSpec& k : tuner->options()) {
      bool pinned = std::any_of(spec.tuner.options.begin(), spec.tuner.options.end(),
                                [&](const KnobPin& o) { return o.knob == k.name; });
      if (!pinned && k.name != "name") fields.push_back(str_scalar(k.name) + ": auto");
    }
  }
  out += "tuner: {" + join(fields) + "}\n";
  out += "threads: " + std::to_string(spec.threads) + "\n";
  return out;
}

bool same_pipeline(const PipelineSpec& a, const PipelineSpec& b) {
  if (a.name != b.name || a.plugins != b.plugins || a.threads != b.threads) return false;
  auto sa = nonempty_stages(a), sb = nonempty_stages(b);
  if (sa.size() != sb.size()) return false;
  for (size_t i = 0; i < sa.size(); ++i) {
    if (sa[i].first != sb[i].first || sa[i].second->size() != sb[i].second->size()) return false;
    for (size_t j = 0; j < sa[i].second->size(); ++j) {
      const PassEntry& ea = (*sa[i].second)[j];
      const PassEntry& eb = (*sb[i].second)[j];
      if (ea.name != eb.name || !same_pins(ea.pins, eb.pins)) return false;
    }
  }
  EffectiveTarget ta = effective_target(a.target), tb = effective_target(b.target);
  if (ta.name != tb.name || ta.arch != tb.arch || ta.device != tb.device) return false;
  return effective_tuner_name(a.tuner) == effective_tuner_name(b.tuner) && same_pins(a.tuner.options, b.tuner.options);
}

}  // namespace tessera

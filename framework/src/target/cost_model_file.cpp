// The cost model's coefficient file (data/cost_model.yaml): parsing with every key checked
// (unknown, missing, duplicate, non-positive values are errors at file:line:col) and writing the
// same format back, byte-identical for the same coefficients. The model itself: cost_model.cpp.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "tessera/support/install_paths.h"
#include "tessera/target/cost_model.h"

namespace tessera {
namespace {

constexpr CostCoefficient kAllCoefficients[] = {
    CostCoefficient::LaunchOverheadUs, CostCoefficient::DramEfficiency, CostCoefficient::L2BandwidthVsDram,
    CostCoefficient::DramLatencyNs,    CostCoefficient::L2LatencyNs,    CostCoefficient::SmemEfficiency,
    CostCoefficient::Fp32Efficiency,   CostCoefficient::SfuCost,        CostCoefficient::TensorEfficiency,
    CostCoefficient::IssueLatencyCycles};

// The comment the file carries after each coefficient.
std::string_view coefficient_comment(CostCoefficient c) {
  switch (c) {
    case CostCoefficient::LaunchOverheadUs: return "per kernel: launch and CUDA-event overhead";
    case CostCoefficient::DramEfficiency: return "of peak DRAM bandwidth a saturating kernel reaches";
    case CostCoefficient::L2BandwidthVsDram: return "L2 bandwidth as a multiple of DRAM bandwidth";
    case CostCoefficient::DramLatencyNs: return "a DRAM round trip under load";
    case CostCoefficient::L2LatencyNs: return "an L2 hit's round trip";
    case CostCoefficient::SmemEfficiency: return "of one shared-memory wavefront per SM per cycle";
    case CostCoefficient::Fp32Efficiency: return "of peak FP32 (SIMT) throughput";
    case CostCoefficient::SfuCost: return "FP32 issue slots per SFU-class op: 128 FP32 lanes vs 16 SFUs per SM";
    case CostCoefficient::TensorEfficiency: return "of peak tensor-core throughput; unused until Kernel IR has MMA ops";
    case CostCoefficient::IssueLatencyCycles: return "cycles between a warp's dependent instructions";
  }
  return "";
}

struct PriorSpec {
  const char* key;
  double CostPriors::*member;
  const char* comment;
};
constexpr PriorSpec kPriorSpecs[] = {
    {"l2_usable_fraction", &CostPriors::l2_usable_fraction, "of l2_bytes that re-read data can occupy"},
    {"register_base", &CostPriors::register_base,
     "registers per thread besides register arrays (estimate when not compiled)"},
    {"registers_per_array_element", &CostPriors::registers_per_array_element, "per 32-bit register-array element"},
    {"unroll_when_unmarked", &CostPriors::unroll_when_unmarked, "iterations in flight of a loop without an unroll mark"},
};

// Shortest decimal that reads back the same double, so a written file round-trips exactly.
std::string number(double v) {
  char buf[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

class YamlErrors {
 public:
  YamlErrors(const std::string& text, const std::string& file) : text_(text), file_(file) {}
  Diagnostic at(const YAML::Mark& mark, std::string message) const {
    Diagnostic d = make_error(std::move(message));
    SourceLoc loc;
    loc.file = file_;
    if (mark.line >= 0) {
      loc.line = mark.line + 1;
      loc.col = mark.column + 1;
      d.at(loc, source_line_of(text_, loc.line));
    } else {
      d.at(loc);
    }
    return d;
  }
  Diagnostic at(const YAML::Node& node, std::string message) const { return at(node.Mark(), std::move(message)); }

 private:
  const std::string& text_;
  const std::string& file_;
};

Expected<double> positive_number(const YAML::Node& value, const std::string& key, const YamlErrors& errors) {
  double v = 0;
  if (!value.IsScalar() || !YAML::convert<double>::decode(value, v) || !std::isfinite(v))
    return errors.at(value, "cost model '" + key + "' must be a number");
  if (v <= 0) return errors.at(value, "cost model '" + key + "' must be positive, got " + value.Scalar());
  return v;
}

// Reads a mapping of `key: number` whose keys are `known`; every known key must be given.
Status read_numbers(const YAML::Node& map, const std::string& section, const std::vector<std::string>& known,
                    const YamlErrors& errors, std::map<std::string, double>& out) {
  if (!map.IsMap()) return errors.at(map, "cost model '" + section + "' must be a mapping");
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  for (const auto& kv : map) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    if (std::find(known.begin(), known.end(), key) == known.end())
      return errors.at(kv.first, "unknown " + section + " key '" + key + "' (known: " + list + ")");
    if (out.count(key)) return errors.at(kv.first, section + " key '" + key + "' is given twice");
    TESSERA_ASSIGN_OR_RETURN(double v, positive_number(kv.second, key, errors));
    out[key] = v;
  }
  for (const std::string& k : known)
    if (!out.count(k)) return errors.at(map, "cost model " + section + " lacks '" + k + "'");
  return Status::ok();
}

}  // namespace

Expected<CostModel> CostModel::parse(const std::string& yaml_text, const std::string& file) {
  YamlErrors errors(yaml_text, file);
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root.IsMap()) {
      Diagnostic d = make_error("cost model " + file + " must be a mapping (version, calibration, coefficients, priors)");
      d.at(SourceLoc{file, 1, 1, 1}, source_line_of(yaml_text, 1));
      return d;
    }
    CostModel model;
    std::map<std::string, YAML::Node> sections;
    for (const auto& kv : root) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      if (key != "version" && key != "calibration" && key != "coefficients" && key != "priors")
        return errors.at(kv.first, "unknown key '" + key + "' (expected version, calibration, coefficients, priors)");
      if (sections.count(key)) return errors.at(kv.first, "key '" + key + "' is given twice");
      sections[key] = kv.second;
    }
    for (const char* required : {"version", "coefficients", "priors"}) {
      if (sections.count(required)) continue;
      Diagnostic d = make_error("cost model " + file + " lacks '" + required + "'");
      d.at(SourceLoc{file, 1, 1, 1}, source_line_of(yaml_text, 1));
      return d;
    }
    int version = 0;
    if (!sections["version"].IsScalar() || !YAML::convert<int>::decode(sections["version"], version) || version != 1)
      return errors.at(sections["version"], "unsupported cost model version (this Tessera reads version 1)");
    if (sections.count("calibration")) {
      if (!sections["calibration"].IsScalar()) return errors.at(sections["calibration"], "'calibration' must be text");
      model.calibration_ = sections["calibration"].Scalar();
    }
    std::vector<std::string> coefficient_keys;
    for (CostCoefficient c : kAllCoefficients) coefficient_keys.emplace_back(coefficient_key(c));
    std::map<std::string, double> values;
    TESSERA_TRY(read_numbers(sections["coefficients"], "coefficients", coefficient_keys, errors, values));
    for (CostCoefficient c : kAllCoefficients) model.set_coefficient(c, values.at(std::string(coefficient_key(c))));
    std::vector<std::string> prior_keys;
    for (const PriorSpec& p : kPriorSpecs) prior_keys.emplace_back(p.key);
    std::map<std::string, double> priors;
    TESSERA_TRY(read_numbers(sections["priors"], "priors", prior_keys, errors, priors));
    for (const PriorSpec& p : kPriorSpecs) model.priors_.*p.member = priors.at(p.key);
    if (model.priors_.l2_usable_fraction > 1)
      return errors.at(sections["priors"]["l2_usable_fraction"], "cost model 'l2_usable_fraction' must be at most 1");
    return model;
  } catch (const YAML::Exception& e) {
    return errors.at(e.mark, e.msg);
  }
}

Expected<CostModel> CostModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read cost model " + path + ": file not found or unreadable");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error("cannot read cost model " + path + ": read error");
  return parse(text.str(), path);
}

Expected<CostModel> CostModel::load_default() {
  auto path = find_data_file("cost_model.yaml");
  if (!path) return path.error();
  return load(*path);
}

std::string CostModel::to_yaml() const {
  std::ostringstream out;
  out << "# The analytic cost model's coefficients (docs/cost-model.md). A value is a prior until calibrated\n"
         "# on a GPU (`tessera tune --calibrate RESULTS -o FILE`); `calibration:` says what this file holds.\n";
  out << "version: 1\n";
  // The note is quoted as a YAML string so that any text reads back unchanged.
  out << "calibration: " << YAML::Dump(YAML::Node(calibration_)) << "\n";
  out << "coefficients:\n";
  for (CostCoefficient c : kAllCoefficients) {
    std::string line = "  " + std::string(coefficient_key(c)) + ": " + number(coefficient(c));
    line.resize(std::max<size_t>(line.size() + 2, 32), ' ');
    out << line << "# " << coefficient_comment(c) << "\n";
  }
  out << "priors:\n";
  for (const PriorSpec& p : kPriorSpecs) {
    std::string line = "  " + std::string(p.key) + ": " + number(priors_.*p.member);
    line.resize(std::max<size_t>(line.size() + 2, 35), ' ');
    out << line << "# " << p.comment << "\n";
  }
  return out.str();
}

}  // namespace tessera

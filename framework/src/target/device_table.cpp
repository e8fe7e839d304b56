// DeviceTable: reads the device descriptions (data/devices.yaml) that schedule heuristics and the
// cost model consult, validating every field (known keys, types, positive sizes, known arch) and
// reporting problems with file:line:col. Also the list of CUDA architectures Tessera knows.
#include "tessera/target/device.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>
#include <variant>

#include "tessera/support/install_paths.h"

namespace tessera {

namespace {

namespace fs = std::filesystem;

using FieldPtr = std::variant<std::string DeviceDesc::*, int DeviceDesc::*, int64_t DeviceDesc::*,
                              double DeviceDesc::*>;

struct FieldSpec {
  const char* key;
  FieldPtr member;
  bool required;  // fields without a safe default must be given: a 0 would mislead heuristics
};

const std::vector<FieldSpec>& field_specs() {
  static const std::vector<FieldSpec> specs = {
      {"name", &DeviceDesc::name, true},
      {"full_name", &DeviceDesc::full_name, true},
      {"arch", &DeviceDesc::arch, true},
      {"sm_count", &DeviceDesc::sm_count, true},
      {"smem_per_block", &DeviceDesc::smem_per_block, true},
      {"smem_per_block_static", &DeviceDesc::smem_per_block_static, false},
      {"smem_per_sm", &DeviceDesc::smem_per_sm, true},
      {"regs_per_sm", &DeviceDesc::regs_per_sm, true},
      {"max_threads_per_block", &DeviceDesc::max_threads_per_block, false},
      {"max_threads_per_sm", &DeviceDesc::max_threads_per_sm, false},
      {"max_blocks_per_sm", &DeviceDesc::max_blocks_per_sm, true},
      {"smem_reserved_per_block", &DeviceDesc::smem_reserved_per_block, false},
      {"reg_alloc_unit", &DeviceDesc::reg_alloc_unit, false},
      {"warp_size", &DeviceDesc::warp_size, false},
      {"l2_bytes", &DeviceDesc::l2_bytes, true},
      {"dram_gbps", &DeviceDesc::dram_gbps, true},
      {"fp32_tflops", &DeviceDesc::fp32_tflops, true},
      {"tensor_tflops_bf16", &DeviceDesc::tensor_tflops_bf16, true},
      {"clock_mhz", &DeviceDesc::clock_mhz, false},
  };
  return specs;
}

std::string known_field_list() {
  std::string out;
  for (const FieldSpec& f : field_specs()) out += (out.empty() ? "" : ", ") + std::string(f.key);
  return out;
}

// Builds diagnostics located in the YAML text being parsed.
class YamlErrors {
 public:
  YamlErrors(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  SourceLoc loc_of(const YAML::Mark& mark) const {
    SourceLoc loc;
    loc.file = file_;
    if (mark.line >= 0) {
      loc.line = mark.line + 1;
      loc.col = mark.column + 1;
    }
    return loc;
  }
  Diagnostic at(const YAML::Mark& mark, std::string message) const {
    Diagnostic d = make_error(std::move(message));
    SourceLoc loc = loc_of(mark);
    if (loc.valid()) {
      d.at(loc, source_line_of(text_, loc.line));
    } else {
      d.at(loc);
    }
    return d;
  }
  Diagnostic at(const YAML::Node& node, std::string message) const {
    return at(node.Mark(), std::move(message));
  }

 private:
  const std::string& text_;
  const std::string& file_;
};

Status read_field(const FieldSpec& spec, const YAML::Node& value, const YamlErrors& errors,
                  DeviceDesc& out) {
  const std::string key = spec.key;
  if (!value.IsScalar()) return errors.at(value, "device field '" + key + "' must be a scalar");
  const std::string& text = value.Scalar();
  return std::visit(
      [&](auto member) -> Status {
        using T = std::remove_reference_t<decltype(out.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (text.empty()) return errors.at(value, "device field '" + key + "' must not be empty");
          out.*member = text;
        } else if constexpr (std::is_same_v<T, double>) {
          double v = 0;
          if (!YAML::convert<double>::decode(value, v) || !std::isfinite(v))
            return errors.at(value, "device field '" + key + "' must be a number, got '" + text + "'");
          if (v <= 0) return errors.at(value, "device field '" + key + "' must be positive, got " + text);
          out.*member = v;
        } else {
          int64_t v = 0;
          if (!YAML::convert<int64_t>::decode(value, v))
            return errors.at(value, "device field '" + key + "' must be an integer, got '" + text + "'");
          if (v <= 0) return errors.at(value, "device field '" + key + "' must be positive, got " + text);
          if (v > std::numeric_limits<T>::max())
            return errors.at(value, "device field '" + key + "' is too large: " + text);
          out.*member = static_cast<T>(v);
        }
        return Status::ok();
      },
      spec.member);
}

Expected<DeviceDesc> read_device(const YAML::Node& entry, const YamlErrors& errors) {
  if (!entry.IsMap())
    return errors.at(entry, "each device must be a mapping of fields (" + known_field_list() + ")");
  DeviceDesc desc;
  std::map<std::string, YAML::Mark> seen;
  for (const auto& kv : entry) {
    const YAML::Node& key = kv.first;
    const std::string name = key.IsScalar() ? key.Scalar() : std::string();
    const FieldSpec* spec = nullptr;
    for (const FieldSpec& f : field_specs())
      if (name == f.key) spec = &f;
    if (spec == nullptr)
      return errors.at(key, "unknown device field '" + name + "' (known: " + known_field_list() + ")");
    if (auto [it, fresh] = seen.emplace(name, key.Mark()); !fresh)
      return errors.at(key, "device field '" + name + "' is given twice");
    TESSERA_TRY(read_field(*spec, kv.second, errors, desc));
  }
  for (const FieldSpec& f : field_specs()) {
    if (f.required && !seen.count(f.key)) {
      std::string who = desc.name.empty() ? std::string("a device") : "device '" + desc.name + "'";
      return errors.at(entry, who + " lacks the required field '" + f.key + "'");
    }
  }
  if (!is_known_arch(desc.arch)) {
    std::string known;
    for (const std::string& a : known_archs()) known += (known.empty() ? "" : ", ") + a;
    return errors.at(entry["arch"], "unknown architecture '" + desc.arch + "' (known: " + known + ")");
  }
  if (desc.smem_per_block > desc.smem_per_sm)
    return errors.at(entry["smem_per_block"],
                     "device '" + desc.name + "': smem_per_block exceeds smem_per_sm");
  desc.features = arch_features(desc.arch);
  return desc;
}

}  // namespace

Expected<DeviceTable> DeviceTable::parse(const std::string& yaml_text, const std::string& file) {
  YamlErrors errors(yaml_text, file);
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root.IsMap()) {
      Diagnostic d = make_error("device table " + file + " must be a mapping with a 'devices' list");
      d.at(SourceLoc{file, 1, 1, 1}, source_line_of(yaml_text, 1));
      return d;
    }
    YAML::Node list;
    for (const auto& kv : root) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      if (key != "devices") return errors.at(kv.first, "unknown key '" + key + "' (expected 'devices')");
      list = kv.second;
    }
    if (!list.IsDefined() || !list.IsSequence()) {
      if (list.IsDefined()) return errors.at(list, "'devices' must be a list of devices");
      Diagnostic d = make_error("device table " + file + " has no 'devices' list");
      d.at(SourceLoc{file, 1, 1, 1}, source_line_of(yaml_text, 1));
      return d;
    }

    DeviceTable table;
    std::map<std::string, SourceLoc> first_seen;
    for (const YAML::Node& entry : list) {
      TESSERA_ASSIGN_OR_RETURN(DeviceDesc desc, read_device(entry, errors));
      SourceLoc here = errors.loc_of(entry["name"].Mark());
      if (auto [it, fresh] = first_seen.emplace(desc.name, here); !fresh) {
        return errors.at(entry["name"], "device '" + desc.name + "' is defined twice (first at " +
                                            it->second.str() + ")");
      }
      table.devices_.push_back(std::move(desc));
    }
    // Arch-specific variants (sm_90a) of the first device of their base arch (sm_90) that no
    // entry lists itself.
    for (const std::string& arch : known_archs()) {
      if (arch.back() != 'a' || table.find_by_arch(arch) != nullptr) continue;
      const std::string base = arch.substr(0, arch.size() - 1);
      for (const DeviceDesc& d : table.devices_)
        if (d.arch == base) {
          DeviceDesc variant = d;
          variant.arch = arch;
          variant.features = arch_features(arch);
          table.variants_.push_back(std::move(variant));
          break;
        }
    }
    return table;
  } catch (const YAML::Exception& e) {
    // yaml-cpp reports syntax errors (and any misuse) by throwing; they stop here.
    return errors.at(e.mark, e.msg);
  }
}

Expected<DeviceTable> DeviceTable::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read device table " + path + ": file not found or unreadable");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error("cannot read device table " + path + ": read error");
  return parse(text.str(), path);
}

Expected<DeviceTable> DeviceTable::load_default() {
  // The copy next to libtessera (build or install tree) first, the source tree's data/ after.
  auto path = find_data_file("devices.yaml");
  if (!path) return path.error();
  return load_file(*path);
}

const DeviceDesc* DeviceTable::find(const std::string& name) const {
  for (const DeviceDesc& d : devices_)
    if (d.name == name) return &d;
  return nullptr;
}

const DeviceDesc* DeviceTable::find_by_arch(const std::string& arch) const {
  for (const DeviceDesc& d : devices_)
    if (d.arch == arch) return &d;
  for (const DeviceDesc& d : variants_)
    if (d.arch == arch) return &d;
  return nullptr;
}

namespace {

// Every known arch and what it can do: the one list known_archs and arch_features read. Thread-
// block clusters and TMA from compute capability 9.0 (CUDA programming guide); mma.sync of bf16
// (m16n8k16, m16n8k8) and ldmatrix from sm_80 (PTX ISA); wgmma only in the arch-specific sm_90a
// (PTX ISA: "requires sm_90a").
struct ArchEntry {
  std::string_view arch;
  ArchFeatures features;
};
constexpr ArchFeatures kAmpere{.cp_async = true, .mma_sync = true};
constexpr ArchFeatures kHopperAndLater{.cp_async = true, .mma_sync = true, .tma = true, .clusters = true};
constexpr ArchEntry kArchs[] = {
    {"sm_80", kAmpere},
    {"sm_86", kAmpere},
    {"sm_89", kAmpere},
    {"sm_90", kHopperAndLater},
    {"sm_90a", {.cp_async = true, .mma_sync = true, .tma = true, .clusters = true, .wgmma = true}},
    {"sm_100", kHopperAndLater},
    {"sm_120", kHopperAndLater},
};

}  // namespace

const std::vector<std::string>& known_archs() {
  static const std::vector<std::string> archs = [] {
    std::vector<std::string> out;
    for (const ArchEntry& e : kArchs) out.emplace_back(e.arch);
    return out;
  }();
  return archs;
}

ArchFeatures arch_features(const std::string& arch) {
  for (const ArchEntry& e : kArchs)
    if (e.arch == arch) return e.features;
  return {};
}

std::optional<int> arch_number(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return std::nullopt;
  int value = 0;
  const char* first = arch.data() + 3;
  const char* last = arch.data() + arch.size();
  auto [end, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || end == first) return std::nullopt;
  return value;
}

bool is_known_arch(const std::string& arch) {
  for (const std::string& a : known_archs())
    if (a == arch) return true;
  return false;
}

}  // namespace tessera

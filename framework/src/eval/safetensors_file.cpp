// SafetensorsFile: reading and writing the safetensors format (see safetensors_file.h).
// Tests: tests/unit/safetensors_file_test.cpp.
#include "safetensors_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tessera {

namespace {

constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeName {
  DType dtype;
  std::string_view name;
};
constexpr DTypeName kDTypeNames[] = {{DType::F32, "F32"}, {DType::F16, "F16"}, {DType::BF16, "BF16"},
                                     {DType::I32, "I32"}, {DType::I64, "I64"}, {DType::Bool, "BOOL"},
                                     {DType::F64, "F64"}};
// The format's other dtypes: named in the error so the reader can tell "unsupported" from "garbage".
constexpr std::string_view kOtherFormatDTypes[] = {"U8", "I8", "U16", "I16", "U32", "U64",
                                                   "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3",
                                                   "F6_E3M2", "C64"};

Diagnostic file_error(const std::string& source, std::string message) {
  Diagnostic d = make_error(std::move(message));
  d.loc.file = source;
  return d;
}

// Byte count of `shape` x `width`, or nullopt when it does not fit in 63 bits.
std::optional<uint64_t> checked_byte_count(const std::vector<int64_t>& shape, int width) {
  uint64_t n = static_cast<uint64_t>(width);
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > kMax / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

// The deepest nesting of [ and { outside strings, stopping as soon as it passes `limit`; where it
// passed it goes to `at`. Run before the JSON parser so a hostile header cannot make it build a
// deep tree.
bool nesting_within(std::string_view text, int limit, size_t& at) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > limit) {
        at = i;
        return false;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

void put_u64_le(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xffu));
}

uint64_t get_u64_le(std::string_view in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[static_cast<size_t>(i)]);
  return v;
}

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// IEEE binary16 bits -> double (exact: every half value is a double).
double half_bits_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) v = std::ldexp(static_cast<double>(mantissa), -24);
  else if (exponent == 31) v = mantissa == 0 ? INFINITY : NAN;
  else v = std::ldexp(static_cast<double>(mantissa | 0x400), exponent - 25);
  return sign ? -v : v;
}

// One header entry, checked: exactly dtype, shape and data_offsets, well typed.
Expected<SafetensorsTensor> parse_entry(const std::string& name, const nlohmann::json& entry, uint64_t data_bytes,
                                        const std::string& source, const SafetensorsLimits& limits,
                                        std::pair<uint64_t, uint64_t>& offsets) {
  const std::string where = "tensor " + in_quotes(name) + ": ";
  if (!entry.is_object()) return file_error(source, where + "its header entry is not a JSON object");
  for (const auto& [key, value] : entry.items()) {
    (void)value;
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      return file_error(source, where + "unknown key " + in_quotes(key) + " (expected dtype, shape, data_offsets)");
  }
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key)) return file_error(source, where + "missing key " + in_quotes(key));

  SafetensorsTensor t;
  t.name = name;
  const nlohmann::json& dtype = entry["dtype"];
  if (!dtype.is_string()) return file_error(source, where + "dtype is not a string");
  const std::string dtype_text = dtype.get<std::string>();
  const auto known = std::find_if(std::begin(kDTypeNames), std::end(kDTypeNames),
                                  [&](const DTypeName& d) { return d.name == dtype_text; });
  if (known == std::end(kDTypeNames)) {
    const bool other = std::find(std::begin(kOtherFormatDTypes), std::end(kOtherFormatDTypes), dtype_text) !=
                       std::end(kOtherFormatDTypes);
    return file_error(source, where + "dtype " + in_quotes(dtype_text) +
                                  (other ? " is not one Tessera reads" : " is not a safetensors dtype") +
                                  " (Tessera reads F32, F16, BF16, I32, I64, BOOL, F64)");
  }
  t.dtype = known->dtype;

  const nlohmann::json& shape = entry["shape"];
  if (!shape.is_array()) return file_error(source, where + "shape is not a JSON array");
  if (shape.size() > static_cast<size_t>(limits.max_rank))
    return file_error(source, where + "shape has " + std::to_string(shape.size()) + " dimensions, more than " +
                                  std::to_string(limits.max_rank));
  for (size_t i = 0; i < shape.size(); ++i) {
    const nlohmann::json& d = shape[i];
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return file_error(source, where + "shape[" + std::to_string(i) + "] is " + d.dump() +
                                    ", not a non-negative integer");
    t.shape.push_back(d.get<int64_t>());
  }

  const nlohmann::json& offs = entry["data_offsets"];
  if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
    return file_error(source, where + "data_offsets is " + offs.dump() + ", not [begin, end] of two non-negative integers");
  const uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
  if (begin > end)
    return file_error(source, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                                  "] end before they begin");
  if (end > data_bytes)
    return file_error(source, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                                  "] reach past the data section of " + std::to_string(data_bytes) + " bytes");
  const std::optional<uint64_t> expected = checked_byte_count(t.shape, dtype_bytes(t.dtype));
  if (!expected)
    return file_error(source, where + "shape " + shape.dump() + " of " + dtype_text + " is too large to address");
  if (*expected != end - begin)
    return file_error(source, where + "shape " + shape.dump() + " of " + dtype_text + " holds " +
                                  std::to_string(*expected) + " bytes, but data_offsets [" + std::to_string(begin) +
                                  ", " + std::to_string(end) + "] span " + std::to_string(end - begin));
  offsets = {begin, end};
  return t;
}

}  // namespace

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  for (const SafetensorsTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string_view safetensors_dtype_name(DType dtype) {
  for (const DTypeName& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  return "?";
}

Expected<std::string> encode_safetensors(const SafetensorsFile& file) {
  std::vector<const SafetensorsTensor*> by_name;
  std::set<std::string> names;
  for (const SafetensorsTensor& t : file.tensors) {
    if (t.name == kMetadataKey) return make_error("safetensors: a tensor cannot be named " + in_quotes(t.name));
    if (!names.insert(t.name).second) return make_error("safetensors: two tensors are named " + in_quotes(t.name));
    const std::optional<uint64_t> n = checked_byte_count(t.shape, dtype_bytes(t.dtype));
    if (!n || *n != t.bytes.size())
      return make_error("safetensors: tensor " + in_quotes(t.name) + " has " + std::to_string(t.bytes.size()) +
                        " bytes, which is not what its shape of " + std::string(safetensors_dtype_name(t.dtype)) +
                        " holds");
    by_name.push_back(&t);
  }
  std::sort(by_name.begin(), by_name.end(),
            [](const SafetensorsTensor* a, const SafetensorsTensor* b) { return a->name < b->name; });
  // Data order: widest element first, so each tensor starts at a multiple of its element size.
  std::vector<const SafetensorsTensor*> data_order = by_name;
  std::stable_sort(data_order.begin(), data_order.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
    return dtype_bytes(a->dtype) > dtype_bytes(b->dtype);
  });
  std::map<const SafetensorsTensor*, std::pair<uint64_t, uint64_t>> offsets;
  uint64_t at = 0;
  for (const SafetensorsTensor* t : data_order) {
    offsets[t] = {at, at + t->bytes.size()};
    at += t->bytes.size();
  }

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!file.metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : file.metadata) meta[k] = v;  // std::map: sorted keys
    header[std::string(kMetadataKey)] = std::move(meta);
  }
  for (const SafetensorsTensor* t : by_name) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = std::string(safetensors_dtype_name(t->dtype));
    entry["shape"] = t->shape;
    entry["data_offsets"] = {offsets[t].first, offsets[t].second};
    header[t->name] = std::move(entry);
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    return make_error(std::string("safetensors: a tensor name or metadata string is not valid UTF-8 (") + e.what() + ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // the format allows trailing spaces in the header

  std::string out;
  out.reserve(8 + text.size() + at);
  put_u64_le(out, text.size());
  out += text;
  for (const SafetensorsTensor* t : data_order) out += t->bytes;
  return out;
}

Expected<SafetensorsView> decode_safetensors_view(std::string_view bytes, const std::string& source,
                                                 const SafetensorsLimits& limits) {
  if (bytes.size() < 8)
    return file_error(source, "not a safetensors file: " + std::to_string(bytes.size()) +
                                  " bytes, shorter than the 8-byte header length");
  const uint64_t header_bytes = get_u64_le(bytes.substr(0, 8));
  if (header_bytes > limits.max_header_bytes)
    return file_error(source, "header length " + std::to_string(header_bytes) + " exceeds the limit of " +
                                  std::to_string(limits.max_header_bytes) + " bytes");
  if (header_bytes > bytes.size() - 8)
    return file_error(source, "header length " + std::to_string(header_bytes) + " reaches past the end of the " +
                                  std::to_string(bytes.size()) + "-byte file");
  const std::string_view header = bytes.substr(8, header_bytes);
  if (header.empty() || header[0] != '{')
    return file_error(source, "header byte 8: the JSON header must start with '{'");
  size_t deep_at = 0;
  if (!nesting_within(header, limits.max_json_depth, deep_at))
    return file_error(source, "header byte " + std::to_string(8 + deep_at) + ": JSON nested deeper than " +
                                  std::to_string(limits.max_json_depth) + " levels");

  // Duplicate keys would silently keep one value: the callback sees every key of every object.
  std::vector<std::set<std::string>> keys_per_object;
  std::string duplicate;
  auto on_event = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) keys_per_object.emplace_back();
    else if (event == E::object_end && !keys_per_object.empty()) keys_per_object.pop_back();
    else if (event == E::key && !keys_per_object.empty() && duplicate.empty() &&
             !keys_per_object.back().insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(header.begin(), header.end(), on_event);
  } catch (const nlohmann::json::parse_error& e) {
    return file_error(source, "header byte " + std::to_string(8 + (e.byte > 0 ? e.byte - 1 : 0)) +
                                  ": the header is not valid JSON (" + e.what() + ")");
  } catch (const nlohmann::json::out_of_range& e) {
    // A number too large for a double ("1E400"): nlohmann names the number, not its byte.
    const std::string what = e.what();
    const size_t quote = what.find("parsing '");
    const std::string number =
        quote == std::string::npos ? std::string() : what.substr(quote + 9, what.rfind('\'') - (quote + 9));
    const size_t at = number.empty() ? std::string_view::npos : header.find(number);
    return file_error(source, (at == std::string_view::npos ? std::string("header") : "header byte " + std::to_string(8 + at)) +
                                  ": the header is not valid JSON (" + what + ")");
  }
  if (!duplicate.empty()) return file_error(source, "header: key " + in_quotes(duplicate) + " appears twice in one object");
  if (!doc.is_object()) return file_error(source, "header: the JSON header is not an object");

  SafetensorsView view;
  view.source = source;
  const uint64_t data_bytes = bytes.size() - 8 - header_bytes;
  const std::string_view data = bytes.substr(8 + header_bytes);
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, std::string>> spans;  // ((begin, end), name)
  for (const auto& [key, value] : doc.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) return file_error(source, "header: __metadata__ is not a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          return file_error(source, "header: __metadata__ value of " + in_quotes(mk) + " is " + mv.dump() + ", not a string");
        view.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    std::pair<uint64_t, uint64_t> span;
    TESSERA_ASSIGN_OR_RETURN(SafetensorsTensor t, parse_entry(key, value, data_bytes, source, limits, span));
    spans.push_back({span, t.name});
    view.tensors.push_back(SafetensorsTensorView{std::move(t.name), t.dtype, std::move(t.shape),
                                                 data.substr(span.first, span.second - span.first)});
  }
  // The tensors must tile the data section: no gap, no overlap, nothing after the last one.
  std::sort(spans.begin(), spans.end());
  uint64_t covered = 0;
  std::string previous;
  for (const auto& [span, name] : spans) {
    if (span.first < covered)
      return file_error(source, "tensor " + in_quotes(name) + ": data_offsets [" + std::to_string(span.first) + ", " +
                                    std::to_string(span.second) + "] overlap tensor " + in_quotes(previous));
    if (span.first > covered)
      return file_error(source, "tensor " + in_quotes(name) + ": data_offsets begin at " + std::to_string(span.first) +
                                    ", leaving bytes " + std::to_string(covered) + ".." + std::to_string(span.first) +
                                    " of the data section unused");
    covered = span.second;
    previous = name;
  }
  if (covered != data_bytes)
    return file_error(source, "the data section has " + std::to_string(data_bytes) + " bytes, but the tensors cover " +
                                  std::to_string(covered));
  std::sort(view.tensors.begin(), view.tensors.end(),
            [](const SafetensorsTensorView& a, const SafetensorsTensorView& b) { return a.name < b.name; });
  return view;
}

Expected<SafetensorsFile> decode_safetensors(std::string_view bytes, const std::string& source,
                                             const SafetensorsLimits& limits) {
  TESSERA_ASSIGN_OR_RETURN(SafetensorsView view, decode_safetensors_view(bytes, source, limits));
  SafetensorsFile file;
  file.metadata = std::move(view.metadata);
  for (SafetensorsTensorView& t : view.tensors)
    file.tensors.push_back(SafetensorsTensor{std::move(t.name), t.dtype, std::move(t.shape), std::string(t.bytes)});
  return file;
}

const SafetensorsTensorView* SafetensorsView::find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const SafetensorsTensorView& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

Status safetensors_values_into(const SafetensorsTensorView& tensor, int64_t first, std::span<double> out,
                               const std::string& source) {
  const size_t width = static_cast<size_t>(dtype_bytes(tensor.dtype));
  if (width == 0 || tensor.bytes.size() % width != 0)
    return file_error(source, "tensor " + in_quotes(tensor.name) + ": " + std::to_string(tensor.bytes.size()) +
                                  " bytes are not whole " + std::string(safetensors_dtype_name(tensor.dtype)) +
                                  " elements");
  const size_t count = tensor.bytes.size() / width;
  if (first < 0 || static_cast<size_t>(first) > count || out.size() > count - static_cast<size_t>(first))
    return file_error(source, "tensor " + in_quotes(tensor.name) + ": elements " + std::to_string(first) + ".." +
                                  std::to_string(first + static_cast<int64_t>(out.size())) + " are outside its " +
                                  std::to_string(count));
  const auto* p = reinterpret_cast<const unsigned char*>(tensor.bytes.data()) + static_cast<size_t>(first) * width;
  auto le = [&](size_t i, size_t n) {
    uint64_t v = 0;
    for (size_t b = n; b-- > 0;) v = (v << 8) | p[i * n + b];
    return v;
  };
  for (size_t i = 0; i < out.size(); ++i) {
    switch (tensor.dtype) {
      case DType::F32: out[i] = std::bit_cast<float>(static_cast<uint32_t>(le(i, 4))); break;
      case DType::F16: out[i] = half_bits_to_double(static_cast<uint16_t>(le(i, 2))); break;
      case DType::BF16: out[i] = std::bit_cast<float>(static_cast<uint32_t>(le(i, 2)) << 16); break;
      case DType::I32: out[i] = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(le(i, 4)))); break;
      case DType::I64: {
        const auto v = static_cast<int64_t>(le(i, 8));
        out[i] = static_cast<double>(v);
        // Values are doubles past this point: an int64 that does not fit one exactly is refused.
        if (!inexact_integer_reason(out[i], DType::I64).empty())
          return file_error(source, "tensor " + in_quotes(tensor.name) + ": element " +
                                        std::to_string(first + static_cast<int64_t>(i)) + " is " + std::to_string(v) +
                                        ", not below 2^53 in magnitude; Tessera holds int64 values exactly only there");
        break;
      }
      case DType::Bool: out[i] = p[i] != 0 ? 1.0 : 0.0; break;
      case DType::F64: out[i] = std::bit_cast<double>(static_cast<uint64_t>(le(i, 8))); break;
    }
  }
  return Status::ok();
}

Expected<std::vector<double>> safetensors_values(const SafetensorsTensorView& tensor, const std::string& source) {
  const size_t width = static_cast<size_t>(dtype_bytes(tensor.dtype));
  std::vector<double> out(width == 0 ? 0 : tensor.bytes.size() / width);
  TESSERA_TRY(safetensors_values_into(tensor, 0, out, source));
  return out;
}

// ---- MappedSafetensors --------------------------------------------------------------------------

struct MappedSafetensors::Mapping {
  void* address = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (address != nullptr && address != MAP_FAILED) ::munmap(address, size);
  }
};

Expected<MappedSafetensors> MappedSafetensors::open(const std::string& path, const SafetensorsLimits& limits) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return file_error(path, std::string("cannot open the file: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return file_error(path, "not a regular file");
  }
  const FileStamp stamp{static_cast<int64_t>(st.st_size),
                        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + static_cast<int64_t>(st.st_mtim.tv_nsec)};
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(st.st_size);
  if (mapping->size > 0) {
    mapping->address = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping->address == MAP_FAILED) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return file_error(path, "cannot map the file into memory: " + why);
    }
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  const std::string_view bytes(static_cast<const char*>(mapping->address), mapping->size);
  TESSERA_ASSIGN_OR_RETURN(SafetensorsView view, decode_safetensors_view(bytes, path, limits));
  MappedSafetensors mapped;
  mapped.mapping_ = std::move(mapping);
  mapped.view_ = std::move(view);
  mapped.stamp_ = stamp;
  return mapped;
}

Status write_safetensors_file(const std::string& path, const SafetensorsFile& file) {
  TESSERA_ASSIGN_OR_RETURN(std::string bytes, encode_safetensors(file));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return file_error(path, "cannot write the file");
  return Status::ok();
}

Expected<SafetensorsFile> read_safetensors_file(const std::string& path, const SafetensorsLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return file_error(path, "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return file_error(path, "cannot read the file");
  return decode_safetensors(text.str(), path, limits);
}

}  // namespace tessera

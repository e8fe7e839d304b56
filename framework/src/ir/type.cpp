// Element types and tensor types: dtype spellings, sizes and the printed form of shapes.
#include "tessera/ir/type.h"
#include "tessera/support/internal_check.h"


namespace tessera {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::Bool: return "bool";
    case DType::F64: return "float64";
  }
  TESSERA_INTERNAL_CHECK(false, "a DType value is one of the declared dtypes");
}

std::string_view dtype_short_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::Bool: return "bool";
    case DType::F64: return "f64";
  }
  TESSERA_INTERNAL_CHECK(false, "a DType value is one of the declared dtypes");
}

std::optional<DType> parse_dtype(std::string_view s) {
  static constexpr DType kAll[] = {DType::F32, DType::F16, DType::BF16,
                                   DType::I32, DType::I64, DType::Bool, DType::F64};
  for (DType t : kAll) {
    if (s == dtype_name(t) || s == dtype_short_name(t)) return t;
  }
  return std::nullopt;
}

std::string_view dtype_cuda_name(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::Bool: return "bool";
    case DType::F64: return "double";
  }
  TESSERA_INTERNAL_CHECK(false, "a DType value is one of the declared dtypes");
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::Bool: return 1;
    case DType::F64: return 8;
  }
  TESSERA_INTERNAL_CHECK(false, "a DType value is one of the declared dtypes");
}

bool dtype_is_float(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

int64_t num_elements(const Shape& s) {
  int64_t n = 1;  // a scalar (rank 0) holds one element
  for (const Dim& d : s) n *= d.value();
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(s[i].value());
  }
  // Python writes a one-element tuple with a trailing comma: (7,)
  if (s.size() == 1) out += ",";
  out += ")";
  return out;
}

std::string TensorType::str() const {
  std::string out = shape_str(shape);
  out += ' ';
  out += dtype_name(dtype);
  return out;
}

int64_t ValueType::array_elements() const {
  int64_t n = 1;
  for (int64_t d : array) n *= d;
  return n;
}

std::string ValueType::str() const {
  std::string s(dtype_short_name(dtype));
  if (lanes != 1) s += "x" + std::to_string(lanes);
  for (int64_t d : array) s += "[" + std::to_string(d) + "]";
  return s;
}

std::optional<ValueType> parse_value_type(std::string_view s) {
  ValueType t;
  size_t bracket = s.find('[');
  std::string_view head = s.substr(0, bracket);
  if (head.size() > 2 && head.substr(head.size() - 2) == "x2" &&
      (head.substr(0, head.size() - 2) == "f16" || head.substr(0, head.size() - 2) == "bf16")) {
    t.lanes = 2;
    head = head.substr(0, head.size() - 2);
  }
  std::optional<DType> d = parse_dtype(head);
  if (!d) return std::nullopt;
  t.dtype = *d;
  while (bracket != std::string_view::npos && bracket < s.size()) {
    size_t close = s.find(']', bracket);
    if (close == std::string_view::npos || close == bracket + 1) return std::nullopt;
    int64_t extent = 0;
    for (size_t i = bracket + 1; i < close; ++i) {
      if (s[i] < '0' || s[i] > '9' || extent > (int64_t{1} << 40)) return std::nullopt;
      extent = extent * 10 + (s[i] - '0');
    }
    if (extent <= 0) return std::nullopt;
    t.array.push_back(extent);
    bracket = close + 1;
    if (bracket < s.size() && s[bracket] != '[') return std::nullopt;
  }
  return t;
}

}  // namespace tessera

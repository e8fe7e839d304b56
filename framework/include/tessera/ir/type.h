// Element types, dimensions and tensor types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// F64 comes last so that the older values keep their numbers.
enum class DType : uint8_t { F32, F16, BF16, I32, I64, Bool, F64 };

std::string_view dtype_name(DType t);          // "float32", "float16", "bfloat16", "int32", "int64", "bool", "float64"
std::string_view dtype_short_name(DType t);    // "f32", "f16", "bf16", "i32", "i64", "bool", "f64"
std::optional<DType> parse_dtype(std::string_view s);  // accepts both spellings
std::string_view dtype_cuda_name(DType t);     // "float", "__half", "__nv_bfloat16", "int", "long long", "bool", "double"
int dtype_bytes(DType t);
bool dtype_is_float(DType t);

// One dimension of a shape. Static sizes only today; the class exists so that symbolic sizes
// (a named size such as "seq") can be added without changing every signature that takes a shape.
class Dim {
 public:
  constexpr Dim(int64_t size = 0) : size_(size) {}  // NOLINT: a size converts implicitly
  constexpr bool is_static() const { return true; }
  constexpr int64_t value() const { return size_; }
  friend constexpr bool operator==(Dim a, Dim b) { return a.size_ == b.size_; }

 private:
  int64_t size_;
};

using Shape = std::vector<Dim>;

int64_t num_elements(const Shape& s);
std::string shape_str(const Shape& s);  // "(16, 64)"; "()" for scalars; "(7,)" like Python

struct TensorType {
  Shape shape;
  DType dtype = DType::F32;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t dim(int64_t i) const { return shape[static_cast<size_t>(i)].value(); }
  std::string str() const;  // "(16, 64) float32"
  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
};

// The type of an SSA value or register local in Loop/Tile/Kernel IR (tensors use TensorType).
//
// A scalar element type plus two optional refinements:
//   - `lanes == 2`: a packed pair in one 32-bit register (f16x2, bf16x2); only for F16/BF16.
//     Tensors never hold packed elements, which is why this lives here and not in DType.
//   - `array`: a register array of that element (`f32[4][8]`), indexed by constants or unrolled
//     loop axes (docs/ir.md "Register arrays").
// Fragment kinds for tensor cores (mma.sync A/B/C layouts, wgmma accumulators) are meant to be added
// as a further refinement field here, so consumers that only ask element()/is_array() stay as they are.
struct ValueType {
  DType dtype = DType::F32;
  int64_t lanes = 1;
  std::vector<int64_t> array;

  static ValueType scalar(DType t) { return ValueType{t, 1, {}}; }
  bool is_array() const { return !array.empty(); }
  bool is_packed() const { return lanes != 1; }
  bool is_scalar() const { return !is_array() && !is_packed(); }
  int64_t array_elements() const;  // 1 for a non-array
  // The type of one array element (the type itself for a non-array).
  ValueType element() const { return ValueType{dtype, lanes, {}}; }
  std::string str() const;  // "f32", "bf16x2", "f32[4][8]"
  friend bool operator==(const ValueType& a, const ValueType& b) {
    return a.dtype == b.dtype && a.lanes == b.lanes && a.array == b.array;
  }
};

// Parses the printed form of ValueType::str(); nullopt for anything else.
std::optional<ValueType> parse_value_type(std::string_view s);

}  // namespace tessera

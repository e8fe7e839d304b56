// Element types, dimensions and tensor types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

enum class DType : uint8_t { F32, F16, BF16, I32, I64, Bool };

std::string_view dtype_name(DType t);          // "float32", "float16", "bfloat16", "int32", "int64", "bool"
std::string_view dtype_short_name(DType t);    // "f32", "f16", "bf16", "i32", "i64", "bool"
std::optional<DType> parse_dtype(std::string_view s);  // accepts both spellings
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

}  // namespace tessera

// TensorValue and the row-major index helpers shared by the CPU evaluators.
#include "tessera/eval/tensor_value.h"
#include "tessera/support/internal_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tessera {

TensorValue TensorValue::filled(TensorType t, double fill) {
  std::vector<double> d(static_cast<size_t>(num_elements(t.shape)), fill);
  return TensorValue(std::move(t), std::move(d));
}

double TensorValue::at(const std::vector<int64_t>& index) const {
  TESSERA_INTERNAL_CHECK(static_cast<int64_t>(index.size()) == rank(), "TensorValue::at is given one index per dimension");
  return data[static_cast<size_t>(flat_offset(index, row_major_strides(type.shape)))];
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i].value();
  return strides;
}

int64_t flat_offset(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i) off += index[i] * strides[i];
  return off;
}

std::vector<int64_t> unflatten_index(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t n = shape[i].value();
    if (n > 0) {
      index[i] = flat % n;
      flat /= n;
    }
  }
  return index;
}

bool next_index(std::vector<int64_t>& index, const Shape& shape) {
  for (size_t i = index.size(); i-- > 0;) {
    if (++index[i] < shape[i].value()) return true;
    index[i] = 0;
  }
  return false;
}

namespace {

// Rounds a finite `v` to `bits` significant bits (ties to even), with `min_exp` the exponent of the
// smallest normal number and `max_finite` the largest finite value of the format.
double round_to_bits(double v, int bits, int min_exp, double max_finite) {
  if (!std::isfinite(v) || v == 0.0) return v;
  int e = 0;
  std::frexp(v, &e);                       // v = m * 2^e, 0.5 <= |m| < 1
  const int quantum_exp = std::max(e, min_exp + 1) - bits;  // below min normal: fixed quantum
  double r = std::ldexp(std::nearbyint(std::ldexp(v, -quantum_exp)), quantum_exp);
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, v);
  return r;
}

}  // namespace

double round_to_storage(double v, DType dtype) {
  switch (dtype) {
    case DType::F32: return std::isfinite(v) ? static_cast<double>(static_cast<float>(v)) : v;
    case DType::F64: return v;  // the evaluators' own precision
    case DType::F16: return round_to_bits(v, 11, -14, 65504.0);
    case DType::BF16: return round_to_bits(static_cast<double>(static_cast<float>(v)), 8, -126, 3.3895313892515355e38);
    case DType::I32: case DType::I64: case DType::Bool: return conform_to_dtype(v, dtype);
  }
  TESSERA_UNREACHABLE("a DType value is one of the declared dtypes");
}

double conform_to_dtype(double v, DType dtype) {
  switch (dtype) {
    case DType::Bool: return v != 0.0 ? 1.0 : 0.0;
    case DType::I32: {
      // int32 arithmetic wraps around (two's complement), as in PyTorch and CUDA.
      if (!std::isfinite(v)) return v;
      const double t = std::trunc(v);
      if (t >= -2147483648.0 && t < 2147483648.0) return t;
      return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(
          static_cast<int64_t>(std::fmod(t, 4294967296.0))))));
    }
    case DType::I64: return std::isfinite(v) ? std::trunc(v) : v;
    case DType::F32: case DType::F16: case DType::BF16: case DType::F64: return v;
  }
  TESSERA_UNREACHABLE("a DType value is one of the declared dtypes");
}

std::string inexact_integer_reason(double v, DType dtype) {
  if (dtype != DType::I64 || !(std::fabs(v) >= kExactIntegerLimit)) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", v);
  return std::string("the int64 value ") + text +
         " is not below 2^53 in magnitude, where integers held as doubles stop being exact (the CPU "
         "evaluators and the simulator compute in doubles; the cuda target computes int64 exactly)";
}

}  // namespace tessera

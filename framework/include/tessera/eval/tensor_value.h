// TensorValue: a concrete tensor for the CPU evaluators (reference evaluator, Tensor IR
// interpreter, later the Loop IR interpreter and the simulator), plus the row-major index helpers
// they all need.
//
// Elements are stored as double whatever the dtype: the evaluators compute in double precision, and
// integer / bool tensors hold exact small integers (bool as 0 / 1).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/ir/type.h"

namespace tessera {

struct TensorValue {
  TensorType type;
  std::vector<double> data;  // row-major, num_elements(type.shape) entries

  TensorValue() = default;
  TensorValue(TensorType t, std::vector<double> d) : type(std::move(t)), data(std::move(d)) {}
  // A tensor of `t` filled with `fill`.
  static TensorValue filled(TensorType t, double fill = 0.0);

  int64_t rank() const { return type.rank(); }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  // Element at multi-index `index` (one entry per dimension).
  double at(const std::vector<int64_t>& index) const;
};

// Values by node id: what evaluators take as inputs and return for every node.
using ValueMap = std::map<std::string, TensorValue>;

// Row-major strides of `shape` (the last dimension has stride 1).
std::vector<int64_t> row_major_strides(const Shape& shape);
// Flat offset of `index` under `strides`.
int64_t flat_offset(const std::vector<int64_t>& index, const std::vector<int64_t>& strides);
// Multi-index of flat position `flat` in `shape`.
std::vector<int64_t> unflatten_index(int64_t flat, const Shape& shape);
// Advances `index` to the next row-major position in `shape`; false after the last one.
bool next_index(std::vector<int64_t>& index, const Shape& shape);

// Rounds `v` to what `dtype` can hold in the evaluators' model: integers truncate toward zero,
// bool is 0 or 1, floating types stay double (the evaluators do not model f32 rounding).
double conform_to_dtype(double v, DType dtype);

// Values are doubles in the CPU evaluators and the simulator, so an integer is exact there only
// below 2^53 in magnitude: past it an int64 result may already have lost bits (2^53 + 1 reads as
// 2^53). The frontend refuses such literals; the evaluators refuse such results rather than answer
// wrongly. The cuda target computes int64 natively and has no such limit.
inline constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53
// Why `v`, a value of `dtype`, cannot be trusted (an int64 at or past kExactIntegerLimit), else "".
std::string inexact_integer_reason(double v, DType dtype);

// The value a buffer of `dtype` holds on the GPU: f32 rounds to float, f16 and bf16 to their
// nearest representable value (ties to even; overflow to infinity), integers and bool as
// conform_to_dtype. What the simulator stores, so it matches the storage of the CUDA target.
double round_to_storage(double v, DType dtype);

}  // namespace tessera

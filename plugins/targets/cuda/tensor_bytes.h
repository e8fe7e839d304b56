// TensorBytes: a TensorValue (doubles) <-> the bytes its dtype stores on the device: f32 float,
// f16 / bf16 by bit conversion with round-to-nearest-even, i32, i64, bool as one uint8 (0 or 1).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tessera/eval/tensor_value.h"
#include "tessera/support/status.h"

namespace tessera {

class TensorBytes {
 public:
  static std::string encode(const TensorValue& v);
  // `values` (a window of a tensor, row-major) as `dtype`'s bytes, as encode does.
  static std::string encode(std::span<const double> values, DType dtype);
  // An error when `bytes` does not hold exactly the elements of `type`.
  static Expected<TensorValue> decode(const std::string& bytes, const TensorType& type);

  static uint16_t f16_bits(float f);   // round to nearest even; overflow to inf; NaN stays NaN
  static float from_f16_bits(uint16_t h);
  static uint16_t bf16_bits(float f);  // round to nearest even; NaN stays NaN
  static float from_bf16_bits(uint16_t h);
};

}  // namespace tessera

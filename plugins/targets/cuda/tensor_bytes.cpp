// TensorBytes: host-side conversion of tensor values to and from device bytes (see tensor_bytes.h).
// Tests: tests/unit/cuda_runtime_test.cpp (f16 / bf16 round trips, rounding ties, subnormals).
#include "tensor_bytes.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace tessera {

uint16_t TensorBytes::f16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (abs < 0x38800000u) {  // below 2^-14: a half subnormal, in units of 2^-24
    const uint32_t e = abs >> 23;
    if (e < 102) return static_cast<uint16_t>(sign);
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t h = (abs - 0x38000000u) >> 13;  // rebias the exponent (127 -> 15), keep 10 mantissa bits
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

float TensorBytes::from_f16_bits(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t TensorBytes::bf16_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float TensorBytes::from_bf16_bits(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

namespace {
template <class T>
void put(std::string& out, size_t i, T v) {
  std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}
template <class T>
T get(const std::string& in, size_t i) {
  T v;
  std::memcpy(&v, in.data() + i * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

std::string TensorBytes::encode(const TensorValue& v) { return encode(v.data, v.type.dtype); }

std::string TensorBytes::encode(std::span<const double> values, DType dt) {
  std::string out(values.size() * static_cast<size_t>(dtype_bytes(dt)), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const double d = values[i];
    switch (dt) {
      case DType::F32: put(out, i, static_cast<float>(d)); break;
      case DType::F16: put(out, i, f16_bits(static_cast<float>(d))); break;
      case DType::BF16: put(out, i, bf16_bits(static_cast<float>(d))); break;
      case DType::I32: put(out, i, static_cast<int32_t>(d)); break;
      case DType::I64: put(out, i, static_cast<int64_t>(d)); break;
      case DType::Bool: put(out, i, static_cast<uint8_t>(d != 0.0)); break;
      case DType::F64: put(out, i, d); break;
    }
  }
  return out;
}

Expected<TensorValue> TensorBytes::decode(const std::string& bytes, const TensorType& type) {
  const size_t n = static_cast<size_t>(num_elements(type.shape));
  const size_t width = static_cast<size_t>(dtype_bytes(type.dtype));
  if (bytes.size() != n * width)
    return make_error("device buffer of " + type.str() + " holds " + std::to_string(bytes.size()) +
                      " bytes, expected " + std::to_string(n * width));
  TensorValue v = TensorValue::filled(type);
  for (size_t i = 0; i < n; ++i) {
    switch (type.dtype) {
      case DType::F32: v.data[i] = get<float>(bytes, i); break;
      case DType::F16: v.data[i] = from_f16_bits(get<uint16_t>(bytes, i)); break;
      case DType::BF16: v.data[i] = from_bf16_bits(get<uint16_t>(bytes, i)); break;
      case DType::I32: v.data[i] = get<int32_t>(bytes, i); break;
      case DType::I64: v.data[i] = static_cast<double>(get<int64_t>(bytes, i)); break;
      case DType::Bool: v.data[i] = get<uint8_t>(bytes, i) != 0 ? 1.0 : 0.0; break;
      case DType::F64: v.data[i] = get<double>(bytes, i); break;
    }
  }
  return v;
}

}  // namespace tessera

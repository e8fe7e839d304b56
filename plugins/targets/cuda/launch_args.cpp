// LaunchArgs and TensorMapEncoding: see launch_args.h.
#include "launch_args.h"

#include <cmath>
#include <cstring>
#include <variant>

namespace tessera {

namespace {

Diagnostic param_error(const KernelParam& p, const std::string& problem) {
  return make_error("kernel argument " + p.str() + ": " + problem);
}

// The scalar's bytes in its parameter's type.
Expected<std::vector<unsigned char>> scalar_bytes(const KernelParam& p, const ScalarValue& v) {
  auto bytes_of = [](const auto& x) {
    std::vector<unsigned char> out(sizeof x);
    std::memcpy(out.data(), &x, sizeof x);
    return out;
  };
  if (p.dtype == DType::F32) {
    const double d = std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(std::get<int64_t>(v));
    return bytes_of(static_cast<float>(d));
  }
  if (!std::holds_alternative<int64_t>(v)) return param_error(p, "needs an integer value");
  const int64_t i = std::get<int64_t>(v);
  if (p.range && !p.range->contains(i))
    return param_error(p, "the value " + std::to_string(i) + " is outside its declared range");
  if (p.dtype == DType::I64) return bytes_of(i);
  if (p.dtype != DType::I32) return param_error(p, "scalars are i32, i64 or f32");
  if (i < INT32_MIN || i > INT32_MAX) return param_error(p, std::to_string(i) + " does not fit in i32");
  return bytes_of(static_cast<int32_t>(i));
}

}  // namespace

Expected<LaunchArgs> LaunchArgs::pack(const std::vector<KernelParam>& params, const LaunchArgValues& values) {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<size_t> aligns;
  for (const KernelParam& p : params) {
    switch (p.kind) {
      case ParamKind::Buffer: {
        auto it = values.buffers.find(p.name);
        if (it == values.buffers.end()) return param_error(p, "no device buffer");
        std::vector<unsigned char> b(sizeof(uint64_t));
        std::memcpy(b.data(), &it->second, sizeof(uint64_t));
        bytes.push_back(std::move(b));
        aligns.push_back(alignof(uint64_t));
        break;
      }
      case ParamKind::Scalar: {
        auto it = values.scalars.find(p.name);
        if (it == values.scalars.end()) return param_error(p, "no value given");
        TESSERA_ASSIGN_OR_RETURN(std::vector<unsigned char> b, scalar_bytes(p, it->second));
        aligns.push_back(b.size());
        bytes.push_back(std::move(b));
        break;
      }
      case ParamKind::TensorMap: {
        auto it = values.tensor_maps.find(p.name);
        if (it == values.tensor_maps.end()) return param_error(p, "no encoded tensor map");
        std::vector<unsigned char> b(sizeof(TensorMapBytes));
        std::memcpy(b.data(), it->second.opaque.data(), sizeof(TensorMapBytes));
        bytes.push_back(std::move(b));
        aligns.push_back(alignof(TensorMapBytes));
        break;
      }
    }
  }
  LaunchArgs args;
  size_t end = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const size_t offset = (end + aligns[i] - 1) / aligns[i] * aligns[i];
    args.slots_.push_back(ArgSlot{offset, bytes[i].size(), aligns[i]});
    end = offset + bytes[i].size();
  }
  args.size_ = end;
  args.storage_.resize((end + sizeof(Chunk) - 1) / sizeof(Chunk));
  auto* base = reinterpret_cast<unsigned char*>(args.storage_.data());
  for (size_t i = 0; i < bytes.size(); ++i) std::memcpy(base + args.slots_[i].offset, bytes[i].data(), bytes[i].size());
  return args;
}

void** LaunchArgs::kernel_params() {
  pointers_.clear();
  auto* base = reinterpret_cast<unsigned char*>(storage_.data());
  for (const ArgSlot& s : slots_) pointers_.push_back(base + s.offset);
  return pointers_.data();
}

Expected<TensorMapEncoding> encode_tensor_map(const KernelParam& param, const TensorType& buffer, uint64_t address) {
  const TensorMapSpec& spec = param.tensor_map;
  const size_t rank = buffer.shape.size();
  if (rank < 1 || rank > 5) return param_error(param, "a tensor map covers a buffer of rank 1 to 5");
  if (spec.box.size() != rank) return param_error(param, "the box needs one size per dimension of the buffer");
  TensorMapEncoding e;
  switch (buffer.dtype) {
    case DType::F32: e.data_type = TensorMapEncoding::DataType::Float32; break;
    case DType::F16: e.data_type = TensorMapEncoding::DataType::Float16; break;
    case DType::BF16: e.data_type = TensorMapEncoding::DataType::BFloat16; break;
    case DType::I32: e.data_type = TensorMapEncoding::DataType::Int32; break;
    case DType::I64: e.data_type = TensorMapEncoding::DataType::Int64; break;
    case DType::Bool: e.data_type = TensorMapEncoding::DataType::UInt8; break;
    case DType::F64: e.data_type = TensorMapEncoding::DataType::Float64; break;
  }
  const uint64_t elem = static_cast<uint64_t>(dtype_bytes(buffer.dtype));
  if (!spec.element_strides.empty() && spec.element_strides.size() != rank)
    return param_error(param, "element_strides needs one stride per dimension of the buffer");
  if (spec.oob_fill == TensorMapOobFill::Nan && !dtype_is_float(buffer.dtype))
    return param_error(param, "the NaN fill needs a floating-point buffer, not " +
                                  std::string(dtype_short_name(buffer.dtype)));
  if (address % 16 != 0) return param_error(param, "the buffer's address is not 16-byte aligned");
  e.rank = static_cast<uint32_t>(rank);
  e.address = address;
  e.swizzle = spec.swizzle;
  e.oob_fill = spec.oob_fill;
  uint64_t stride = elem;
  for (size_t k = 0; k < rank; ++k) {
    const size_t d = rank - 1 - k;  // innermost first
    const int64_t size = buffer.dim(static_cast<int64_t>(d));
    const int64_t box = spec.box[d];
    if (box < 1 || box > 256 || box > size)
      return param_error(param, "box dimension " + std::to_string(d) + " must be in 1..min(256, " +
                                    std::to_string(size) + ")");
    e.global_dim.push_back(static_cast<uint64_t>(size));
    e.box_dim.push_back(static_cast<uint32_t>(box));
    const int64_t element_stride = spec.element_stride(d);
    if (element_stride < 1 || element_stride > 8)
      return param_error(param, "the element stride of dimension " + std::to_string(d) + " (" +
                                    std::to_string(element_stride) + ") is not in 1..8");
    e.element_strides.push_back(static_cast<uint32_t>(element_stride));
    if (k > 0) {
      if (stride % 16 != 0)
        return param_error(param, "the stride of dimension " + std::to_string(d) + " (" + std::to_string(stride) +
                                      " bytes) is not a multiple of 16");
      e.global_strides.push_back(stride);
    }
    stride *= static_cast<uint64_t>(size);
  }
  const uint64_t inner = e.box_dim[0] * elem;
  if (inner % 16 != 0)
    return param_error(param, "the box's inner row (" + std::to_string(inner) + " bytes) is not a multiple of 16");
  if (const int64_t span = swizzle_span_bytes(spec.swizzle); span > 0 && inner > static_cast<uint64_t>(span))
    return param_error(param, "the box's inner row (" + std::to_string(inner) + " bytes) is wider than its " +
                                  std::string(spelling(spec.swizzle)) + " swizzle's " + std::to_string(span) +
                                  "-byte span");
  return e;
}

}  // namespace tessera

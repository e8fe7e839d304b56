// LaunchArgs: the argument block of one kernel launch, laid out from the kernel's typed params
// (CudaOp::params) the way cuLaunchKernel's kernelParams wants it: one pointer per argument, each
// pointing at the argument's bytes. TensorMapEncoding: the arguments of cuTensorMapEncodeTiled for
// a tensor-map param (dims, box, element strides, swizzle and out-of-bounds fill). Both are plain data without the driver, so they are unit-tested on machines
// without a GPU (tests/unit/cuda_runtime_test.cpp). Private to the cuda plugin.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/ir/kernel_abi.h"
#include "tessera/support/status.h"
#include "tessera/target/target.h"

namespace tessera {

// A CUtensorMap's bytes: 128, opaque, 64-byte aligned (cuda.h's CUtensorMap).
struct alignas(64) TensorMapBytes {
  std::array<uint64_t, 16> opaque{};
};

// What a launch's arguments are made of.
struct LaunchArgValues {
  std::map<std::string, uint64_t> buffers;            // device address by buffer name
  ScalarArgs scalars;                                 // by scalar parameter name
  std::map<std::string, TensorMapBytes> tensor_maps;  // encoded descriptors by parameter name
};

// Where one argument lives in the block.
struct ArgSlot {
  size_t offset = 0;
  size_t size = 0;
  size_t align = 0;
};

class LaunchArgs {
 public:
  // Each argument at the next offset aligned to its type (8-byte pointers and i64, 4-byte i32 and
  // f32, 64-byte tensor maps: the kernel parameter ABI), holding: a buffer's device address, a
  // scalar converted to its parameter's type (an i32 that does not fit, a non-integer value for an
  // integer, or a value outside the declared range is an error), a tensor map's 128 bytes.
  // Errors name the parameter; a value missing from `values` is one.
  static Expected<LaunchArgs> pack(const std::vector<KernelParam>& params, const LaunchArgValues& values);

  const std::vector<ArgSlot>& slots() const { return slots_; }
  size_t size() const { return size_; }
  const unsigned char* data() const { return reinterpret_cast<const unsigned char*>(storage_.data()); }
  // kernelParams for cuLaunchKernel / cuLaunchKernelEx: valid while this object lives unmoved.
  void** kernel_params();

 private:
  struct alignas(64) Chunk {
    unsigned char bytes[64];
  };
  std::vector<Chunk> storage_;  // 64-byte aligned, so every slot is aligned in memory too
  std::vector<ArgSlot> slots_;
  std::vector<void*> pointers_;
  size_t size_ = 0;
};

// cuTensorMapEncodeTiled's arguments for a tensor map over a row-major buffer of type `buffer`
// at `address`, in the driver's order: innermost dimension first. The interleave and L2 promotion
// are always NONE.
struct TensorMapEncoding {
  enum class DataType { Float32, Float16, BFloat16, Int32, Int64, UInt8, Float64 };
  DataType data_type = DataType::Float32;
  uint32_t rank = 0;
  uint64_t address = 0;
  std::vector<uint64_t> global_dim;      // elements per dimension, innermost first
  std::vector<uint64_t> global_strides;  // bytes, for dimensions 1..rank-1 (rank - 1 entries)
  std::vector<uint32_t> box_dim;         // innermost first
  std::vector<uint32_t> element_strides; // innermost first, 1..8 (the spec's, reversed; all 1 when it has none)
  // The spec's swizzle: CU_TENSOR_MAP_SWIZZLE_NONE / _32B / _64B / _128B.
  SmemSwizzle swizzle = SmemSwizzle::None;
  // The spec's fill: Zero is CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (the driver fills zeros), Nan is
  // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA.
  TensorMapOobFill oob_fill = TensorMapOobFill::Zero;
};

// Checks what the driver requires (rank 1..5, box dims 1..256 within the buffer, element strides
// 1..8, one per dimension, 16-byte aligned address and strides, inner box row a multiple of 16
// bytes and, with a swizzle, at most the swizzle's span of 32/64/128 bytes, the NaN fill only for
// a floating-point buffer) and errors naming the parameter.
Expected<TensorMapEncoding> encode_tensor_map(const KernelParam& param, const TensorType& buffer, uint64_t address);

}  // namespace tessera

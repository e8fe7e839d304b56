// The kernel ABI: typed parameters of Kernel IR and CUDA IR kernels, and the layout of dynamic
// shared memory (docs/ir.md "Kernel parameters and launch").
//
// A kernel's parameters, in argument order, are its buffers (the node's inputs, each once, in
// input order, read-only; then the node's output, written) followed by the parameters the KernelOp
// declares itself: scalars (i32, i64, f32 values passed by value; the body names them as Vars) and
// tensor maps (a `const __grid_constant__ CUtensorMap` the host builds from a global buffer and a
// box before the launch; TmaLoad names it). Buffers are implied by the node so that the graph's
// dataflow stays the one source of truth; CudaOp stores the whole list (its source is fixed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/expr.h"
#include "tessera/ir/stmt.h"
#include "tessera/ir/type.h"
#include "tessera/support/status.h"

namespace tessera {

class Graph;
struct Node;

enum class ParamKind : uint8_t { Buffer, Scalar, TensorMap };

std::string_view param_kind_name(ParamKind k);  // "buffer", "scalar", "tensor_map"
std::optional<ParamKind> parse_param_kind(std::string_view s);

// What a TMA copy writes for the box's elements outside the buffer: zeros, or NaN (the driver's
// "NaN request zero FMA" fill; float buffers only).
enum class TensorMapOobFill : uint8_t { Zero, Nan };
std::string_view oob_fill_name(TensorMapOobFill f);  // "zero", "nan"
std::optional<TensorMapOobFill> parse_oob_fill(std::string_view s);

// The host-side description of a tensor map: which global buffer it covers and the box (tile) one
// TMA copy moves, outermost dimension first like the buffer's shape. The launch owns it: the
// runtime encodes it (cuTensorMapEncodeTiled) with the buffer's address before every launch.
// The box lands in shared memory row-major, ceil(box[d] / element_strides[d]) elements along each
// dimension, in `swizzle`: with a 32/64/128-byte swizzle, the 16-byte chunk c of each 128-byte
// line r of the box lands at chunk c ^ (r % 2, 4 or 8) (the consumer's loads XOR to match), and
// the inner box row is at most the swizzle span.
struct TensorMapSpec {
  std::string buffer;
  std::vector<int64_t> box;
  SmemSwizzle swizzle = SmemSwizzle::None;
  TensorMapOobFill oob_fill = TensorMapOobFill::Zero;
  std::vector<int64_t> element_strides;  // per dimension, 1..8, outermost first; empty: all 1
  // The stride of dimension `d` (1 when element_strides is empty).
  int64_t element_stride(size_t d) const { return element_strides.empty() ? 1 : element_strides[d]; }
  // The elements one copy writes to shared memory (the box with its element strides applied).
  int64_t smem_elements() const;
  bool operator==(const TensorMapSpec&) const = default;
};

struct KernelParam {
  std::string name;
  ParamKind kind = ParamKind::Buffer;
  // Buffer: element type. Scalar: i32, i64 or f32. Tensor map: the covered buffer's element type.
  DType dtype = DType::F32;
  bool written = false;             // buffer: the kernel writes it (else `const`)
  std::optional<Interval> range;    // integer scalar: declared values [lo, hi] (else unknown)
  TensorMapSpec tensor_map;         // tensor map only

  // "x: const f32*", "y: f32*", "pos: i32 in [0, 2047]", "scale: f32",
  // "tmap_x: tensor_map(x, box=(1, 64))", "tmap_w: tensor_map(w, box=(64, 32), swizzle=128B, oob=nan,
  // element_strides=(1, 2))" (fields at their defaults are left out).
  std::string str() const;
  bool operator==(const KernelParam&) const = default;
};

// Whether `t` may be a scalar parameter's type (i32, i64, f32).
bool is_scalar_param_type(DType t);

// The full signature of a Kernel IR node: its buffers (inputs once each, in input order, const;
// then its output, written; dtypes from the graph) followed by the KernelOp's own params.
// Errors name the node when it is not a KernelOp or an input is not a node of `g`.
Expected<std::vector<KernelParam>> kernel_signature(const Graph& g, const Node& node);

// ---- shared memory ---------------------------------------------------------------------------

// Where one Smem array of a kernel lives in its shared memory.
struct SmemSlot {
  std::string name;
  int64_t offset = 0;  // bytes from the start of the kernel's dynamic shared memory
  int64_t bytes = 0;
};

// The top-level Smem statements of `body` in order, each at the next offset aligned to its `align`:
// how a kernel with dynamic shared memory carves its one `extern __shared__` array (and how the
// static arrays of any kernel add up). Nested Smem statements are not Kernel IR and are ignored.
std::vector<SmemSlot> smem_layout(const Body& body);
// The end of the last slot (0 without Smem): the bytes a kernel's shared memory needs, the
// alignment padding between slots included. The dynamic buffer itself is declared with the
// largest alignment of its slots, so offsets aligned here are aligned addresses.
int64_t smem_layout_bytes(const Body& body);
// The most bytes an array of `bytes` at `align` adds to a kernel's smem_layout wherever it falls
// among the others: its size rounded up to kSmemAlign plus the padding its alignment may need
// (align - kSmemAlign). Passes that budget shared memory before the layout exists (Tile IR) sum
// this, so their sums bound the layout's bytes.
int64_t smem_footprint_bytes(int64_t bytes, int64_t align);
// The largest `align` of the top-level Smem arrays (kSmemAlign without any): the alignment the
// dynamic shared buffer is declared with.
int64_t smem_layout_align(const Body& body);

}  // namespace tessera

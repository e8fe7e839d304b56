// Shape and dtype inference with PyTorch semantics: broadcasting, matmul (1-D and batched
// cases), reductions, reshape with -1, dimension wrapping and type promotion. Errors carry only a
// message; the caller locates them at the call that caused them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/ir/type.h"
#include "tessera/support/status.h"

namespace tessera::torch_expr {

// The sizes of `s` as plain integers.
std::vector<int64_t> dims_of(const Shape& s);

// Wraps a possibly negative dim into [0, rank). `rank` 0 accepts -1 and 0, like PyTorch.
Expected<int64_t> normalize_dim(int64_t dim, int64_t rank);

// PyTorch broadcasting of two shapes; the error names both shapes and the clashing dimension.
Expected<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// torch.matmul's result shape, including the 1-D promotions and batch broadcasting.
Expected<Shape> matmul_shape(const Shape& a, const Shape& b);

// The shape after reducing `dims` (already normalized, distinct).
Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim);

// Normalizes and checks reduction dims: an empty list means every dim.
Expected<std::vector<int64_t>> normalize_reduction_dims(const std::vector<int64_t>& dims, int64_t rank);

// The target shape of reshape/view: resolves one -1 and checks the element count.
Expected<Shape> reshape_shape(const Shape& input, const std::vector<int64_t>& requested);

// Type promotion of two tensors (bool < integer < floating; f16 with bf16 gives f32).
DType promote_types(DType a, DType b);

// Promotion of a tensor with a Python scalar: the tensor's dtype unless the scalar is of a higher
// category (a float scalar with an integer tensor gives `default_float`).
DType promote_with_scalar(DType tensor, bool scalar_is_float, bool scalar_is_int, DType default_float);

// PyTorch's result_type over tensor operands: dimensioned tensors decide the dtype; 0-dim tensors
// (like Python scalars) only when they are of a higher category (bool < integer < floating), so
// `randn(3, dtype=float16) + randn(())` is float16 and `ones(3, dtype=int32) + ones((), dtype=int64)`
// int32, while `ones(3, dtype=int64) + randn(())` is float32.
class TensorResultType {
 public:
  void add(const TensorType& t);
  // The promoted dtype of everything added; nullopt when nothing was.
  std::optional<DType> result() const;

 private:
  std::optional<DType> dimensioned_, zero_dim_;
};

}  // namespace tessera::torch_expr

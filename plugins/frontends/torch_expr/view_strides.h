// ViewStrides: the strides PyTorch gives the views a program makes, so that `.view()` accepts and
// refuses what PyTorch does. transpose, permute, expand, slice, unsqueeze and a reshape that can be
// a view point into their input's storage with strides of their own; an elementwise op's result is
// dense in the dim order of its first operand of the output's shape (PyTorch's TensorIterator keeps
// a transposed input's layout: `(x.t() * 2).view(-1)` fails there too); every other op (and a
// reshape where no view is possible: a copy) makes a row-major tensor. Only nodes whose strides
// are not row-major are recorded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/attr.h"
#include "tessera/ir/type.h"

namespace tessera::torch_expr {

// The strides of a `new_shape` view of a tensor of `old_shape` and `old_strides`, or nullopt when
// no view exists (ATen's computeStride, the rule of Tensor.view).
std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& old_shape,
                                                 const std::vector<int64_t>& old_strides,
                                                 const std::vector<int64_t>& new_shape);

class ViewStrides {
 public:
  // A tensor operand of a node: its id and shape.
  struct Operand {
    std::string node;
    std::vector<int64_t> shape;
  };
  // Records the strides of `node` of `out_shape`, the result of Torch IR `target` with `attrs` on
  // the tensor `inputs`.
  void record(const std::string& node, const std::vector<int64_t>& out_shape, const std::string& target,
              const Attrs& attrs, const std::vector<Operand>& inputs);
  // `node` is a fresh row-major copy (x.contiguous() emits a reshape that is not a view).
  void make_contiguous(const std::string& node) { strides_.erase(node); }
  // The strides of `node` (row-major unless recorded).
  std::vector<int64_t> strides(const std::string& node, const std::vector<int64_t>& shape) const;
  // Whether `node` is contiguous (Tensor.is_contiguous: size-1 dims do not count).
  bool contiguous(const std::string& node, const std::vector<int64_t>& shape) const;

 private:
  std::map<std::string, std::vector<int64_t>> strides_;
};

}  // namespace tessera::torch_expr

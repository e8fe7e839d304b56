// ViewStrides (see view_strides.h): the stride rules of PyTorch's view ops.
#include "view_strides.h"
#include "elementwise_target.h"

#include <algorithm>
#include <utility>

#include "tessera/ir/elementwise_fn.h"

namespace tessera::torch_expr {
namespace {

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

bool is_contiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

}  // namespace

std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& old_shape,
                                                 const std::vector<int64_t>& old_strides,
                                                 const std::vector<int64_t>& new_shape) {
  std::vector<int64_t> out(new_shape.size(), 1);
  if (old_shape.empty()) return out;
  // Walks the old dims from the innermost in chunks of dims that are contiguous with each other;
  // each chunk must be exactly covered by consecutive new dims.
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[static_cast<size_t>(d)];
    if (d == 0 || (old_shape[static_cast<size_t>(d - 1)] != 1 &&
                   old_strides[static_cast<size_t>(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[static_cast<size_t>(view_d)] == 1)) {
        out[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= new_shape[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[static_cast<size_t>(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

std::vector<int64_t> ViewStrides::strides(const std::string& node, const std::vector<int64_t>& shape) const {
  auto it = strides_.find(node);
  return it == strides_.end() ? row_major(shape) : it->second;
}

bool ViewStrides::contiguous(const std::string& node, const std::vector<int64_t>& shape) const {
  return is_contiguous(shape, strides(node, shape));
}

// Elementwise targets (their results follow their operands' layout).
bool is_elementwise(const std::string& target) {
  if (target == "cast" || target == "gelu" || target == "silu") return true;
  const ElementwiseFnInfo* fn = elementwise_target(target);
  return fn && fn->torch != TorchForm::None;
}

// Dense strides of `shape` with its dims laid out in the order of `like`'s strides (largest first;
// ties keep dim order): what TensorIterator allocates for a result.
std::vector<int64_t> dense_like(const std::vector<int64_t>& shape, const std::vector<int64_t>& like) {
  std::vector<size_t> order(shape.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return like[a] > like[b]; });
  std::vector<int64_t> out(shape.size(), 1);
  int64_t stride = 1;
  for (size_t k = order.size(); k-- > 0;) {
    out[order[k]] = stride;
    stride *= shape[order[k]];
  }
  return out;
}

void ViewStrides::record(const std::string& node, const std::vector<int64_t>& out_shape, const std::string& target,
                         const Attrs& attrs, const std::vector<Operand>& inputs) {
  if (is_elementwise(target)) {
    // The first operand of the output's shape without stretched (stride 0) dims decides.
    for (const Operand& o : inputs) {
      if (o.shape != out_shape) continue;
      const std::vector<int64_t> s = strides(o.node, o.shape);
      bool overlapping = false;
      for (size_t d = 0; d < s.size(); ++d) overlapping = overlapping || (s[d] == 0 && o.shape[d] > 1);
      if (overlapping) continue;
      std::vector<int64_t> out = dense_like(out_shape, s);
      if (!is_contiguous(out_shape, out)) strides_[node] = std::move(out);
      return;
    }
    return;
  }
  if (inputs.size() != 1) return;
  const std::vector<int64_t>& in_shape = inputs[0].shape;
  const std::vector<int64_t> in = strides(inputs[0].node, in_shape);
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  auto normalized = [](int64_t d, int64_t r) { return d < 0 ? d + r : d; };
  std::optional<std::vector<int64_t>> out;
  if (target == "transpose" && rank > 0) {
    out = in;
    std::swap((*out)[static_cast<size_t>(normalized(attrs.get_int("dim0", 0), rank))],
              (*out)[static_cast<size_t>(normalized(attrs.get_int("dim1", 0), rank))]);
  } else if (target == "permute") {
    const auto* dims = std::get_if<std::vector<int64_t>>(attrs.find("dims"));
    if (!dims || dims->size() != in.size()) return;
    out.emplace();
    for (int64_t d : *dims) out->push_back(in[static_cast<size_t>(d)]);
  } else if (target == "expand") {
    out = std::vector<int64_t>(out_shape.size(), 0);
    const size_t lead = out_shape.size() - in_shape.size();
    for (size_t i = 0; i < in_shape.size(); ++i)
      (*out)[lead + i] = in_shape[i] == 1 && out_shape[lead + i] != 1 ? 0 : in[i];
  } else if (target == "slice") {
    out = in;
    (*out)[static_cast<size_t>(attrs.get_int("dim", 0))] *= attrs.get_int("step", 1);
  } else if (target == "unsqueeze") {
    const int64_t d = normalized(attrs.get_int("dim", 0), rank + 1);
    out = in;
    const int64_t stride = d >= rank ? 1 : in_shape[static_cast<size_t>(d)] * in[static_cast<size_t>(d)];
    out->insert(out->begin() + d, stride);
  } else if (target == "reshape") {
    out = view_strides(in_shape, in, out_shape);  // no view: reshape copies into a fresh tensor
  }
  if (out && !is_contiguous(out_shape, *out)) strides_[node] = std::move(*out);
}

}  // namespace tessera::torch_expr

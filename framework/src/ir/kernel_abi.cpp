// The kernel ABI: parameter printing, the full signature of a Kernel IR node, and the shared
// memory layout (see kernel_abi.h).
#include "tessera/ir/kernel_abi.h"

#include <algorithm>
#include <set>

#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"

namespace tessera {

std::string_view param_kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::Buffer: return "buffer";
    case ParamKind::Scalar: return "scalar";
    case ParamKind::TensorMap: return "tensor_map";
  }
  return "buffer";
}

std::optional<ParamKind> parse_param_kind(std::string_view s) {
  for (ParamKind k : {ParamKind::Buffer, ParamKind::Scalar, ParamKind::TensorMap})
    if (param_kind_name(k) == s) return k;
  return std::nullopt;
}

bool is_scalar_param_type(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::F32; }

std::string_view oob_fill_name(TensorMapOobFill f) {
  switch (f) {
    case TensorMapOobFill::Zero: return "zero";
    case TensorMapOobFill::Nan: return "nan";
  }
  return "zero";
}

std::optional<TensorMapOobFill> parse_oob_fill(std::string_view s) {
  for (TensorMapOobFill f : {TensorMapOobFill::Zero, TensorMapOobFill::Nan})
    if (oob_fill_name(f) == s) return f;
  return std::nullopt;
}

int64_t TensorMapSpec::smem_elements() const {
  int64_t n = 1;
  for (size_t d = 0; d < box.size(); ++d) n *= (box[d] + element_stride(d) - 1) / element_stride(d);
  return n;
}

std::string KernelParam::str() const {
  std::string dtype_text(dtype_short_name(dtype));
  switch (kind) {
    case ParamKind::Buffer: return name + ": " + (written ? "" : "const ") + dtype_text + "*";
    case ParamKind::Scalar: {
      std::string text = name + ": " + dtype_text;
      if (range) text += " in [" + std::to_string(range->lo) + ", " + std::to_string(range->hi) + "]";
      return text;
    }
    case ParamKind::TensorMap: {
      auto tuple = [](const std::vector<int64_t>& v) {
        std::string t;
        for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
        return "(" + t + ")";
      };
      std::string text = name + ": tensor_map(" + tensor_map.buffer + ", box=" + tuple(tensor_map.box);
      if (tensor_map.swizzle != SmemSwizzle::None) text += ", swizzle=" + std::string(spelling(tensor_map.swizzle));
      if (tensor_map.oob_fill != TensorMapOobFill::Zero) text += ", oob=" + std::string(oob_fill_name(tensor_map.oob_fill));
      if (!tensor_map.element_strides.empty()) text += ", element_strides=" + tuple(tensor_map.element_strides);
      return text + ")";
    }
  }
  return name;
}

Expected<std::vector<KernelParam>> kernel_signature(const Graph& g, const Node& node) {
  const auto* op = node.op_as<KernelOp>();
  if (op == nullptr) return make_error("node is not a Kernel IR node").at_node(node.id());
  std::vector<KernelParam> params;
  std::set<std::string> seen;
  auto add_buffer = [&](const std::string& id, bool written) -> Status {
    if (!seen.insert(id).second) return Status::ok();  // an input listed twice is one argument
    const Node* n = g.find(id);
    if (n == nullptr) return make_error("buffer '" + id + "' is not a node of the graph").at_node(node.id());
    KernelParam p;
    p.name = id;
    p.kind = ParamKind::Buffer;
    p.dtype = n->type.dtype;
    p.written = written;
    params.push_back(std::move(p));
    return Status::ok();
  };
  for (const std::string& in : node.inputs) TESSERA_TRY(add_buffer(in, false));
  TESSERA_TRY(add_buffer(node.id(), true));
  params.insert(params.end(), op->params.begin(), op->params.end());
  return params;
}

std::vector<SmemSlot> smem_layout(const Body& body) {
  std::vector<SmemSlot> slots;
  int64_t end = 0;
  for (const Stmt& s : body) {
    const auto* sm = s.as<Smem>();
    if (sm == nullptr) continue;
    int64_t elems = 1;
    for (int64_t d : sm->shape) elems *= d;
    // A verified align is a power of two in [kSmemAlign, kSmemMaxAlign]; clamp so an unverified
    // body still gets a well-formed layout.
    const int64_t align = std::clamp<int64_t>(sm->align, kSmemAlign, kSmemMaxAlign);
    const int64_t offset = (end + align - 1) / align * align;
    slots.push_back(SmemSlot{sm->name, offset, elems * dtype_bytes(sm->dtype)});
    end = offset + slots.back().bytes;
  }
  return slots;
}

int64_t smem_footprint_bytes(int64_t bytes, int64_t align) {
  // Each term is a multiple of kSmemAlign, so the next array starts at most align - kSmemAlign
  // past the sum so far: the sums bound the layout by induction.
  const int64_t a = std::clamp<int64_t>(align, kSmemAlign, kSmemMaxAlign);
  return (bytes + kSmemAlign - 1) / kSmemAlign * kSmemAlign + (a - kSmemAlign);
}

int64_t smem_layout_align(const Body& body) {
  int64_t align = kSmemAlign;
  for (const Stmt& s : body)
    if (const auto* sm = s.as<Smem>()) align = std::max(align, std::clamp<int64_t>(sm->align, kSmemAlign, kSmemMaxAlign));
  return align;
}

int64_t smem_layout_bytes(const Body& body) {
  std::vector<SmemSlot> slots = smem_layout(body);
  return slots.empty() ? 0 : slots.back().offset + slots.back().bytes;
}

}  // namespace tessera

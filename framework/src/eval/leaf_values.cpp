// Input and constant node values for the CPU evaluators.
#include "leaf_values.h"

#include "tessera/eval/constant_data.h"

namespace tessera {

Expected<std::optional<TensorValue>> leaf_value(const Node& node, const ValueMap& inputs) {
  if (node.op_as<InputOp>()) {
    auto it = inputs.find(node.id());
    if (it == inputs.end()) return make_error("no value given for input '" + node.id() + "'").at_node(node.id());
    if (it->second.type.shape != node.type.shape ||
        static_cast<int64_t>(it->second.data.size()) != num_elements(node.type.shape))
      return make_error("input '" + node.id() + "' was given a value of shape " + shape_str(it->second.type.shape) +
                        " (" + std::to_string(it->second.data.size()) + " elements) but has type " + node.type.str())
          .at_node(node.id());
    TensorValue v = it->second;
    v.type = node.type;
    return std::optional<TensorValue>(std::move(v));
  }
  if (const auto* op = node.op_as<ConstantOp>()) {
    TESSERA_ASSIGN_OR_RETURN(TensorValue v, constant_value(node, *op, inputs));
    return std::optional<TensorValue>(std::move(v));
  }
  return std::optional<TensorValue>();
}

Expected<const TensorValue*> operand_value(const Node& node, size_t i, const ValueMap& values) {
  if (i >= node.inputs.size())
    return make_error("node '" + node.id() + "' needs at least " + std::to_string(i + 1) + " input(s), has " +
                      std::to_string(node.inputs.size()))
        .at_node(node.id());
  auto it = values.find(node.inputs[i]);
  if (it == values.end())
    return make_error("input '" + node.inputs[i] + "' of node '" + node.id() + "' has no value").at_node(node.id());
  return &it->second;
}

Expected<ValueMap> evaluate_in_order(const Graph& graph, const ValueMap& inputs,
                                     const std::function<Expected<TensorValue>(const Node&, const ValueMap&)>& compute) {
  ValueMap values;
  for (const Node* n : graph.nodes()) {
    TESSERA_ASSIGN_OR_RETURN(std::optional<TensorValue> leaf, leaf_value(*n, inputs));
    if (leaf) {
      values.emplace(n->id(), std::move(*leaf));
      continue;
    }
    Expected<TensorValue> v = compute(*n, values);
    if (!v) return std::move(v).error();
    // An int64 result past 2^53 may have lost bits already: refuse it rather than answer wrongly.
    if (v->type.dtype == DType::I64)
      for (double e : v->data)
        if (std::string why = inexact_integer_reason(e, DType::I64); !why.empty())
          return make_error("node '" + n->id() + "': " + why).at_node(n->id());
    values.emplace(n->id(), std::move(*v));
  }
  return values;
}

}  // namespace tessera

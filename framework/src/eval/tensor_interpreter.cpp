// evaluate_tensor_ir: runs a Tensor IR graph on the CPU. IndexMap and Elementwise expressions are
// compiled once per node (variables resolved to slots) and evaluated per output element.
#include <cmath>
#include <optional>

#include "compiled_expr.h"
#include "tessera/ir/elementwise_fn.h"
#include "leaf_values.h"
#include "tessera/eval/reference_evaluator.h"

namespace tessera {
namespace {

using eval::CompiledExpr;
using eval::Scalar;
using eval::eval_expr;

// Slot environment: slot names with whether their values are integers.
struct SlotTable {
  std::vector<std::string> names;
  std::vector<bool> is_int;
  int find(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return static_cast<int>(i);
    return -1;
  }
};

Expected<CompiledExpr> compile_expr(const Expr& e, const SlotTable& slots) {
  std::string unbound;
  auto c = eval::compile_expr(e, [&](const std::string& name) { return slots.find(name); }, unbound);
  if (c) return std::move(*c);
  if (unbound.empty()) return make_error("an expression is undefined");
  return make_error("expression '" + e.str() + "' uses unknown name '" + unbound + "'");
}

Diagnostic node_error(const Node& n, const std::string& message) {
  return make_error(n.id() + ": " + message).at_node(n.id());
}

std::string index_str(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

Expected<TensorValue> run_elementwise(const Node& n, const ElementwiseOp& op, const ValueMap& values) {
  SlotTable slots;
  std::vector<const TensorValue*> operands;
  const int64_t count = num_elements(n.type.shape);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(const TensorValue* v, operand_value(n, i, values));
    if (v->type.shape != n.type.shape && v->size() != 1)
      return node_error(n, "operand '" + n.inputs[i] + "' has shape " + shape_str(v->type.shape) +
                               " but elementwise operands must already have the output shape " + shape_str(n.type.shape));
    slots.names.push_back(n.inputs[i]);
    slots.is_int.push_back(!dtype_is_float(v->type.dtype));
    operands.push_back(v);
  }
  std::vector<CompiledExpr> args;
  for (const Expr& a : op.args) {
    if (!a.defined()) return node_error(n, "elementwise argument is undefined");
    Expected<CompiledExpr> c = compile_expr(a, slots);
    if (!c) return node_error(n, c.error().message);
    args.push_back(std::move(*c));
  }
  if (Status arity = check_arity(op.fn, args.size()); !arity.is_ok()) return node_error(n, arity.error().message);
  const ElementwiseFn fn = op.fn;

  TensorValue out = TensorValue::filled(n.type);
  std::vector<Scalar> env(operands.size());
  std::vector<double> arg_values(args.size());
  bool fault = false;
  for (int64_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < operands.size(); ++k) {
      env[k] = {operands[k]->data[static_cast<size_t>(operands[k]->size() == 1 ? 0 : i)], slots.is_int[k]};
      // An f64 result reads narrower float operands as stored (as the reference evaluator does).
      if (n.type.dtype == DType::F64) env[k].v = round_to_storage(env[k].v, operands[k]->type.dtype);
    }
    for (size_t k = 0; k < args.size(); ++k) arg_values[k] = eval_expr(args[k], env, fault).v;
    if (!dtype_is_float(n.type.dtype) && is_integer_division_by_zero(fn, arg_values))
      return node_error(n, std::string(name_of(fn)) + ": integer division by zero (PyTorch raises ZeroDivisionError)");
    out.data[static_cast<size_t>(i)] = conform_to_dtype(apply_elementwise_fn(fn, arg_values), n.type.dtype);
  }
  if (fault) return node_error(n, "integer division or modulo by zero in an argument");
  return out;
}

Expected<TensorValue> run_reduce(const Node& n, const ReduceOp& op, const ValueMap& values) {
  TESSERA_ASSIGN_OR_RETURN(const TensorValue* in, operand_value(n, 0, values));
  const int64_t rank = in->rank();
  int64_t axis = op.axis < 0 ? op.axis + rank : op.axis;
  if (axis < 0 || axis >= rank)
    return node_error(n, "reduce axis " + std::to_string(op.axis) + " is out of range for input of shape " +
                             shape_str(in->type.shape));
  Shape expected = in->type.shape;
  if (op.keepdim) {
    expected[static_cast<size_t>(axis)] = Dim(1);
  } else {
    expected.erase(expected.begin() + axis);
  }
  if (expected != n.type.shape)
    return node_error(n, "reducing " + shape_str(in->type.shape) + " over axis " + std::to_string(op.axis) +
                             " gives " + shape_str(expected) + ", but the node's type is " + n.type.str());
  double init = 0.0;
  switch (op.fn) {
    case CombineFn::Add: init = 0.0; break;
    case CombineFn::Mul: init = 1.0; break;
    case CombineFn::Max: init = -INFINITY; break;
    case CombineFn::Min: init = INFINITY; break;
  }

  const int64_t extent = in->type.dim(axis);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= in->type.dim(d);
  const int64_t outer = in->size() / std::max<int64_t>(1, extent * inner);
  TensorValue out = TensorValue::filled(n.type, init);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t r = 0; r < extent; ++r) {
      for (int64_t i = 0; i < inner; ++i) {
        double x = in->data[static_cast<size_t>((o * extent + r) * inner + i)];
        double& acc = out.data[static_cast<size_t>(o * inner + i)];
        acc = apply_combine_fn(op.fn, acc, x);  // max/min propagate NaN
      }
    }
  }
  for (double& v : out.data) v = conform_to_dtype(v, n.type.dtype);
  return out;
}

Expected<TensorValue> run_index_map(const Node& n, const IndexMapOp& op, const ValueMap& values) {
  if (static_cast<int64_t>(op.coords.size()) != n.type.rank())
    return node_error(n, "index map names " + std::to_string(op.coords.size()) + " coordinates but the output has rank " +
                             std::to_string(n.type.rank()));
  if (op.sources.empty()) return node_error(n, "index map has no sources");
  SlotTable slots;
  for (const std::string& c : op.coords) {
    slots.names.push_back(c);
    slots.is_int.push_back(true);
  }
  struct CompiledSource {
    const TensorValue* buffer = nullptr;
    std::vector<int64_t> strides;
    std::vector<CompiledExpr> index;
    std::optional<CompiledExpr> value;
    std::optional<CompiledExpr> predicate;
  };
  std::vector<CompiledSource> sources;
  for (const IndexMapSource& src : op.sources) {
    CompiledSource cs;
    auto compile = [&](const Expr& e) -> Expected<CompiledExpr> {
      Expected<CompiledExpr> c = compile_expr(e, slots);
      if (!c) return node_error(n, c.error().message);
      return c;
    };
    if (src.predicate.defined()) {
      TESSERA_ASSIGN_OR_RETURN(CompiledExpr p, compile(src.predicate));
      cs.predicate = std::move(p);
    }
    if (src.buffer.empty()) {
      if (!src.value.defined()) return node_error(n, "index map source has neither a buffer nor a value");
      TESSERA_ASSIGN_OR_RETURN(CompiledExpr v, compile(src.value));
      cs.value = std::move(v);
    } else {
      auto it = values.find(src.buffer);
      if (it == values.end()) return node_error(n, "index map reads '" + src.buffer + "', which has no value");
      cs.buffer = &it->second;
      if (static_cast<int64_t>(src.index.size()) != cs.buffer->rank())
        return node_error(n, "index map reads '" + src.buffer + "' with " + std::to_string(src.index.size()) +
                                 " index expression(s) but it has rank " + std::to_string(cs.buffer->rank()));
      cs.strides = row_major_strides(cs.buffer->type.shape);
      for (const Expr& e : src.index) {
        TESSERA_ASSIGN_OR_RETURN(CompiledExpr c, compile(e));
        cs.index.push_back(std::move(c));
      }
    }
    sources.push_back(std::move(cs));
  }

  TensorValue out = TensorValue::filled(n.type);
  std::vector<int64_t> coord(op.coords.size(), 0);
  std::vector<Scalar> env(op.coords.size());
  std::vector<int64_t> src_index;
  bool fault = false;
  const int64_t count = out.size();
  for (int64_t flat = 0; flat < count; ++flat, next_index(coord, n.type.shape)) {
    for (size_t k = 0; k < coord.size(); ++k) env[k] = {static_cast<double>(coord[k]), true};
    const CompiledSource* chosen = nullptr;
    for (const CompiledSource& cs : sources) {
      if (!cs.predicate || eval_expr(*cs.predicate, env, fault).v != 0.0) {
        chosen = &cs;
        break;
      }
    }
    if (!chosen) return node_error(n, "no index map source applies at output " + index_str(coord));
    double v;
    if (!chosen->buffer) {
      v = eval_expr(*chosen->value, env, fault).v;
    } else {
      src_index.assign(chosen->index.size(), 0);
      for (size_t d = 0; d < chosen->index.size(); ++d) {
        double x = eval_expr(chosen->index[d], env, fault).v;
        int64_t extent = chosen->buffer->type.dim(static_cast<int64_t>(d));
        if (!(x >= 0 && x < static_cast<double>(extent)) || x != std::floor(x)) {
          src_index[d] = static_cast<int64_t>(x);
          return node_error(n, "output " + index_str(coord) + " reads out of bounds: index " + std::to_string(x) +
                                   " of dimension " + std::to_string(d) + " (size " + std::to_string(extent) + ")");
        }
        src_index[d] = static_cast<int64_t>(x);
      }
      v = chosen->buffer->data[static_cast<size_t>(flat_offset(src_index, chosen->strides))];
    }
    out.data[static_cast<size_t>(flat)] = conform_to_dtype(v, n.type.dtype);
  }
  if (fault) return node_error(n, "integer division or modulo by zero in an index expression");
  return out;
}

Expected<TensorValue> run_gather(const Node& n, const GatherOp& op, const ValueMap& values) {
  TESSERA_ASSIGN_OR_RETURN(const TensorValue* table, operand_value(n, 0, values));
  TESSERA_ASSIGN_OR_RETURN(const TensorValue* ids, operand_value(n, 1, values));
  const int64_t rank = table->rank();
  int64_t axis = op.axis < 0 ? op.axis + rank : op.axis;
  if (axis < 0 || axis >= rank)
    return node_error(n, "gather axis " + std::to_string(op.axis) + " is out of range for table of shape " +
                             shape_str(table->type.shape));
  Shape expected(table->type.shape.begin(), table->type.shape.begin() + axis);
  expected.insert(expected.end(), ids->type.shape.begin(), ids->type.shape.end());
  expected.insert(expected.end(), table->type.shape.begin() + axis + 1, table->type.shape.end());
  if (expected != n.type.shape)
    return node_error(n, "gathering " + shape_str(table->type.shape) + " by ids " + shape_str(ids->type.shape) +
                             " along axis " + std::to_string(op.axis) + " gives " + shape_str(expected) +
                             ", but the node's type is " + n.type.str());
  const int64_t extent = table->type.dim(axis);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= table->type.dim(d);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= table->type.dim(d);
  TensorValue out = TensorValue::filled(n.type);
  size_t pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < ids->size(); ++k) {
      double id = ids->data[static_cast<size_t>(k)];
      if (!(id >= 0 && id < static_cast<double>(extent)))
        return node_error(n, "id " + std::to_string(static_cast<int64_t>(id)) + " at position " + std::to_string(k) +
                                 " is out of range for a table dimension of size " + std::to_string(extent));
      int64_t row = static_cast<int64_t>(id);
      for (int64_t i = 0; i < inner; ++i)
        out.data[pos++] = table->data[static_cast<size_t>((o * extent + row) * inner + i)];
    }
  }
  return out;
}

}  // namespace

Expected<ValueMap> evaluate_tensor_ir(const Graph& graph, const ValueMap& inputs) {
  return evaluate_in_order(graph, inputs, [](const Node& n, const ValueMap& values) -> Expected<TensorValue> {
    if (const auto* op = n.op_as<ElementwiseOp>()) return run_elementwise(n, *op, values);
    if (const auto* op = n.op_as<ReduceOp>()) return run_reduce(n, *op, values);
    if (const auto* op = n.op_as<IndexMapOp>()) return run_index_map(n, *op, values);
    if (const auto* op = n.op_as<GatherOp>()) return run_gather(n, *op, values);
    return node_error(n, "the Tensor IR interpreter cannot run a " + std::string(n.op ? n.op->kind() : "null") +
                             " node (only input, constant, elementwise, reduce, index_map and gather)");
  });
}

}  // namespace tessera

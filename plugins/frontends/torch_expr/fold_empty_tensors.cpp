// See fold_empty_tensors.h.
#include "fold_empty_tensors.h"

#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shape_inference.h"

namespace tessera::torch_expr {
namespace {

Diagnostic error_at(const Node& n, const SourceText& source, std::string message) {
  Diagnostic d = make_error(std::move(message));
  d.at(n.loc, n.loc.valid() ? source.line(n.loc.line) : std::string());
  return d;
}

// The node becomes a constant of its own type: every element is `value`.
void become_full(Node& n, double value) {
  auto op = std::make_unique<TorchOp>();
  op->target = "full";
  op->attrs.set("value", value);
  n.op = std::move(op);
  n.inputs = std::vector<std::string>{};
}

// The node becomes `x` broadcast to its own shape (a copy when the shapes are equal).
void become_broadcast_of(Node& n, const Graph& g, const std::string& x) {
  auto op = std::make_unique<TorchOp>();
  const bool same_shape = g.find(x)->type.shape == n.type.shape;
  op->target = same_shape ? "reshape" : "expand";
  op->attrs.set("shape", dims_of(n.type.shape));
  n.op = std::move(op);
  n.inputs = std::vector<std::string>{x};
}

}  // namespace

bool is_empty_tensor(const TensorType& type) {
  for (const Dim& d : type.shape)
    if (d.value() == 0) return true;
  return false;
}

Status fold_empty_tensors(Graph& graph, const SourceText& source) {
  for (const std::string& out : graph.outputs()) {
    const Node* n = graph.find(out);
    if (n && is_empty_tensor(n->type))
      return error_at(*n, source, "the program's output '" + n->id() + "' is an empty tensor of shape " +
                                      shape_str(n->type.shape) +
                                      ": Tessera compiles no zero-size outputs (empty values inside the program "
                                      "are supported)");
  }
  for (Node* n : graph.nodes()) {
    if (is_empty_tensor(n->type)) continue;
    std::vector<std::string> kept;
    for (const std::string& in : n->inputs)
      if (!is_empty_tensor(graph.find(in)->type)) kept.push_back(in);
    if (kept.size() == n->inputs.size()) continue;
    auto* op = n->op_as<TorchOp>();
    const std::string target = op ? op->target : std::string(n->op->kind());
    if (target == "cat") {
      if (kept.size() == 1) {
        become_broadcast_of(*n, graph, kept.front());
      } else {
        n->inputs = kept;
      }
    } else if (target == "sum" || target == "matmul") {
      become_full(*n, 0.0);
    } else if (target == "mean") {
      become_full(*n, std::numeric_limits<double>::quiet_NaN());
    } else if (target == "linear") {
      // x (..., 0) and weight (out, 0): every output is the bias (or 0).
      if (n->inputs.size() == 3) {
        become_broadcast_of(*n, graph, n->inputs[2]);
      } else {
        become_full(*n, 0.0);
      }
    } else if (target == "scaled_dot_product_attention" && kept.size() == 1) {
      // q is not empty, k and v have no positions (S = 0); an empty E with positions is refused below.
      const TensorType& k = graph.find(n->inputs[1])->type;
      if (k.rank() < 2 || k.dim(k.rank() - 2) != 0)
        return error_at(*n, source, "scaled_dot_product_attention with an empty embedding dimension is not supported");
      become_full(*n, 0.0);
    } else {
      std::string empty;
      for (const std::string& in : n->inputs)
        if (is_empty_tensor(graph.find(in)->type)) empty = in;
      return error_at(*n, source, target + " reads the empty tensor '" + empty + "' of shape " +
                                      shape_str(graph.find(empty)->type.shape) + " but its result " +
                                      shape_str(n->type.shape) + " is not empty: this is not supported");
    }
  }
  return Status::ok();
}

}  // namespace tessera::torch_expr

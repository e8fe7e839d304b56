// Graph and Node: value semantics (a copy deep-copies every op), editing, lookup and the stage;
// also the dialect names of op.h, which graphs, printers and pipelines all share.
//
// Nodes live in a vector in topological order. Lookups are linear scans on purpose: node ids are
// public and passes may rename them, so a side index could go stale; graphs are small enough
// (a full decoder is a few thousand nodes) that a scan is not the bottleneck.
#include "tessera/ir/graph.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace tessera {
namespace {

// Renames the UseBuffer fields (loads, writes, copies, ...) of a kernel body that name `from`.
// Expr Vars are left alone: inside a body they name axes and values, never graph buffers.
class BufferRenamer final : public StmtMutator {
 public:
  BufferRenamer(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}

#define TESSERA_X(K)                                       \
  Stmt mutate_##K(const K& s, const Stmt& self) override { \
    Stmt rewritten = StmtMutator::mutate_##K(s, self);     \
    return rename_buffers(*rewritten.as<K>(), rewritten);  \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X

 private:
  template <class K>
  Stmt rename_buffers(const K& s, const Stmt& self) {
    K copy = s;
    bool changed = false;
    K::reflect(copy, [&](const char*, auto& field, FieldRole role) {
      if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::string>) {
        if (role == FieldRole::UseBuffer && field == from_) {
          field = to_;
          changed = true;
        }
      }
    });
    return changed ? Stmt(std::move(copy)) : self;
  }

  std::string from_, to_;
};

// Rewrites the references an op makes to the buffer `from` by name (positional references
// through Node::inputs are handled by the caller).
void rename_buffer_in_op(Op& op, const std::string& from, const std::string& to) {
  const std::map<std::string, Expr> var_map{{from, Expr::var(to)}};
  if (auto* ew = dynamic_cast<ElementwiseOp*>(&op)) {
    for (Expr& arg : ew->args) arg = substitute(arg, var_map);
  } else if (auto* im = dynamic_cast<IndexMapOp*>(&op)) {
    for (IndexMapSource& src : im->sources) {
      if (src.buffer == from) src.buffer = to;
    }
  } else if (auto* kernel = dynamic_cast<KernelLikeOp*>(&op)) {
    BufferRenamer renamer(from, to);
    kernel->body = renamer.mutate_body(kernel->body);
    if (auto* k = dynamic_cast<KernelOp*>(&op)) {
      for (KernelParam& p : k->params)
        if (p.kind == ParamKind::TensorMap && p.tensor_map.buffer == from) p.tensor_map.buffer = to;
    }
  } else if (auto* cuda = dynamic_cast<CudaOp*>(&op)) {
    for (KernelParam& p : cuda->params) {
      if (p.kind == ParamKind::Buffer && p.name == from) p.name = to;
      if (p.kind == ParamKind::TensorMap && p.tensor_map.buffer == from) p.tensor_map.buffer = to;
    }
  }
}

}  // namespace

// ---- Dialect names (declared in op.h) ------------------------------------------------------

std::string_view dialect_name(Dialect d) {
  switch (d) {
    case Dialect::Core: return "core";
    case Dialect::Torch: return "torch";
    case Dialect::Tensor: return "tensor";
    case Dialect::Loop: return "loop";
    case Dialect::Tile: return "tile";
    case Dialect::Kernel: return "kernel";
    case Dialect::Cuda: return "cuda";
  }
  return "?";
}

std::optional<Dialect> parse_dialect(std::string_view s) {
  for (Dialect d : {Dialect::Core, Dialect::Torch, Dialect::Tensor, Dialect::Loop, Dialect::Tile,
                    Dialect::Kernel, Dialect::Cuda}) {
    if (s == dialect_name(d)) return d;
  }
  return std::nullopt;
}

// ---- Node ------------------------------------------------------------------------------------

Node::Node(const Node& o)
    : id(o.id),
      op(o.op ? o.op->clone() : nullptr),
      inputs(o.inputs),
      type(o.type),
      loc(o.loc),
      choices(o.choices) {}

Node& Node::operator=(const Node& o) {
  if (this != &o) *this = Node(o);  // copy, then move-assign
  return *this;
}

// ---- Graph -----------------------------------------------------------------------------------

Graph::Graph(const Graph& o) : outputs_(o.outputs_) {
  nodes_.reserve(o.nodes_.size());
  for (const auto& n : o.nodes_) nodes_.push_back(std::make_unique<Node>(*n));
}

Graph& Graph::operator=(const Graph& o) {
  if (this != &o) *this = Graph(o);
  return *this;
}

Node& Graph::add(std::string id, std::unique_ptr<Op> op, std::vector<std::string> inputs,
                 TensorType type) {
  assert(!contains(id) && "Graph::add: duplicate id (use unique_id)");
  auto node = std::make_unique<Node>();
  node->id = std::move(id);
  node->op = std::move(op);
  node->inputs = std::move(inputs);
  node->type = std::move(type);
  nodes_.push_back(std::move(node));
  return *nodes_.back();
}

Node& Graph::insert_before(std::string_view before, std::string id, std::unique_ptr<Op> op,
                           std::vector<std::string> inputs, TensorType type) {
  assert(!contains(id) && "Graph::insert_before: duplicate id (use unique_id)");
  auto pos =
      std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n->id == before; });
  assert(pos != nodes_.end() && "Graph::insert_before: no such node");
  auto node = std::make_unique<Node>();
  node->id = std::move(id);
  node->op = std::move(op);
  node->inputs = std::move(inputs);
  node->type = std::move(type);
  return **nodes_.insert(pos, std::move(node));  // at the end when `before` is missing
}

void Graph::erase(std::string_view id) {
  std::erase_if(nodes_, [&](const auto& n) { return n->id == id; });
}

// Beyond Node::inputs and the outputs, ops that name their inputs (elementwise args, index-map
// sources, kernel bodies, CUDA argument lists) are rewritten too, so the graph stays consistent.
void Graph::replace_uses(std::string_view from, const std::string& to) {
  const std::string from_id(from);
  for (auto& node : nodes_) {
    bool uses = false;
    for (std::string& input : node->inputs) {
      if (input == from_id) {
        input = to;
        uses = true;
      }
    }
    if (uses && node->op) rename_buffer_in_op(*node->op, from_id, to);
  }
  std::replace(outputs_.begin(), outputs_.end(), from_id, to);
}

Node* Graph::find(std::string_view id) {
  for (auto& n : nodes_) {
    if (n->id == id) return n.get();
  }
  return nullptr;
}

const Node* Graph::find(std::string_view id) const {
  for (const auto& n : nodes_) {
    if (n->id == id) return n.get();
  }
  return nullptr;
}

std::string Graph::unique_id(std::string_view base) const {
  std::string candidate(base);
  for (int suffix = 1; contains(candidate); ++suffix) {
    candidate = std::string(base) + "_" + std::to_string(suffix);
  }
  return candidate;
}

std::vector<Node*> Graph::nodes() {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<const Node*> Graph::nodes() const {
  std::vector<const Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<std::string> Graph::users(std::string_view id) const {
  std::vector<std::string> out;
  for (const auto& n : nodes_) {
    if (std::find(n->inputs.begin(), n->inputs.end(), id) != n->inputs.end()) out.push_back(n->id);
  }
  return out;
}

// Dialect is declared in lowering order, so the most lowered dialect is the largest.
Dialect Graph::stage() const {
  Dialect most_lowered = Dialect::Core;
  for (const auto& n : nodes_) {
    if (n->op && n->op->dialect() > most_lowered) most_lowered = n->op->dialect();
  }
  return most_lowered;
}

}  // namespace tessera

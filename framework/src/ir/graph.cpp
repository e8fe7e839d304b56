// Graph and Node: value semantics (a copy deep-copies every op), editing, lookup and the stage;
// also the dialect names of op.h, which graphs, printers and pipelines all share.
//
// Nodes live in a linked list in topological order, so splicing and erasing never move the
// others. Beside it the GraphStore keeps what makes every edit and lookup independent of the graph's
// size: an id -> node index, the use lists (for each id, the nodes whose inputs name it) and, per
// id prefix, the first free numeric suffix for unique_id. Node::inputs reports its edits to the
// store; a node's id never changes while it is in a graph.
#include "tessera/ir/graph.h"
#include "tessera/support/internal_check.h"

#include <algorithm>
#include <charconv>
#include <list>
#include <map>
#include <unordered_map>

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
        if (field_role_traits(role).refers_to_buffer && field == from_) {
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

// ---- GraphStore -----------------------------------------------------------------------------

namespace detail {

// Heterogeneous lookup, so a string_view finds a std::string key without a copy.
struct IdHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using IdMap = std::unordered_map<std::string, V, IdHash, std::equal_to<>>;

struct GraphStore {
  // Order keys are spaced this far apart when appended or renumbered; insert_before takes the
  // midpoint of its neighbours' keys and renumbers everything when two keys touch.
  static constexpr uint64_t kOrderGap = uint64_t{1} << 32;

  std::list<Node> nodes;
  IdMap<std::list<Node>::iterator> by_id;
  // used id -> its users, each with the number of its input slots naming the id. A map, not a
  // list: removing one user of a value with N users (the pieces of a split) costs O(1), not O(N).
  IdMap<std::unordered_map<Node*, int>> uses;
  IdMap<int64_t> first_free_suffix;    // base -> smallest k >= 1 with base_k not a node (if > 1)

  Node* find(std::string_view id) {
    auto it = by_id.find(id);
    return it == by_id.end() ? nullptr : &*it->second;
  }
  bool contains(std::string_view id) { return by_id.find(id) != by_id.end(); }

  // Puts `node` before `pos` (end() appends), indexes it and records its uses.
  Node& place(std::list<Node>::iterator pos, Node&& node) {
    auto it = nodes.insert(pos, std::move(node));
    Node& n = *it;
    n.order_ = order_between(it);
    by_id.emplace(n.id_, it);
    n.inputs.store_ = this;
    n.inputs.node_ = &n;
    add_uses(n);
    on_id_taken(n.id_);
    return n;
  }

  void remove(std::list<Node>::iterator it) {
    remove_uses(*it);
    std::string id = it->id_;
    by_id.erase(id);
    nodes.erase(it);
    on_id_freed(id);
  }

  void add_uses(Node& n) {
    for (const std::string& in : n.inputs.ids_) {
      auto it = uses.find(in);
      if (it == uses.end()) it = uses.emplace(in, std::unordered_map<Node*, int>{}).first;
      ++it->second[&n];
    }
  }

  void remove_uses(Node& n) {
    for (const std::string& in : n.inputs.ids_) {
      auto it = uses.find(in);
      if (it == uses.end()) continue;
      std::unordered_map<Node*, int>& users = it->second;
      auto pos = users.find(&n);
      if (pos != users.end() && --pos->second == 0) users.erase(pos);
      if (users.empty()) uses.erase(it);
    }
  }

  void set_inputs(Node& n, std::vector<std::string> ids) {
    remove_uses(n);
    n.inputs.ids_ = std::move(ids);
    add_uses(n);
  }

  std::vector<Node*> users_of(std::string_view id) const {
    auto it = uses.find(id);
    if (it == uses.end()) return {};
    std::vector<Node*> users;
    users.reserve(it->second.size());
    for (const auto& [user, slots] : it->second) users.push_back(user);
    std::sort(users.begin(), users.end(), [](const Node* a, const Node* b) { return a->order_ < b->order_; });
    return users;
  }

  // ---- order keys ----

  uint64_t order_between(std::list<Node>::iterator it) {
    const uint64_t before = it == nodes.begin() ? 0 : std::prev(it)->order_;
    auto next = std::next(it);
    if (next == nodes.end()) return before + kOrderGap;
    if (next->order_ - before >= 2) return before + (next->order_ - before) / 2;
    renumber();  // numbers `it` too: it is in the list already
    return it->order_;
  }

  void renumber() {
    uint64_t key = 0;
    for (Node& n : nodes) n.order_ = key += kOrderGap;
  }

  // ---- unique ids: `base_k` names, k in decimal without leading zeros ----

  static bool split_suffix(std::string_view id, std::string_view& base, int64_t& k) {
    size_t underscore = id.rfind('_');
    if (underscore == std::string_view::npos || underscore == 0 || underscore + 1 >= id.size()) return false;
    std::string_view digits = id.substr(underscore + 1);
    if (digits.front() == '0' || digits.size() > 18) return false;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
    if (ec != std::errc() || end != digits.data() + digits.size()) return false;
    base = id.substr(0, underscore);
    return true;
  }

  static std::string suffixed(std::string_view base, int64_t k) {
    return std::string(base) + "_" + std::to_string(k);
  }

  int64_t free_suffix(std::string_view base) const {
    auto it = first_free_suffix.find(base);
    return it == first_free_suffix.end() ? 1 : it->second;
  }

  void on_id_taken(std::string_view id) {
    std::string_view base;
    int64_t k = 0;
    if (!split_suffix(id, base, k) || k != free_suffix(base)) return;
    while (contains(suffixed(base, k))) ++k;
    first_free_suffix.insert_or_assign(std::string(base), k);
  }

  void on_id_freed(std::string_view id) {
    std::string_view base;
    int64_t k = 0;
    if (!split_suffix(id, base, k) || k >= free_suffix(base)) return;
    if (k == 1) {
      first_free_suffix.erase(first_free_suffix.find(base));
    } else {
      first_free_suffix.insert_or_assign(std::string(base), k);
    }
  }
};

}  // namespace detail

// ---- NodeInputs ------------------------------------------------------------------------------

NodeInputs& NodeInputs::operator=(std::vector<std::string> ids) {
  if (store_) {
    store_->set_inputs(*node_, std::move(ids));
  } else {
    ids_ = std::move(ids);
  }
  return *this;
}

void NodeInputs::push_back(std::string id) {
  std::vector<std::string> ids = ids_;
  ids.push_back(std::move(id));
  *this = std::move(ids);
}

// ---- Node ------------------------------------------------------------------------------------

Node::Node(const Node& o)
    : id_(o.id_),
      op(o.op ? o.op->clone() : nullptr),
      inputs(o.inputs),
      type(o.type),
      loc(o.loc),
      choices(o.choices) {}

Node::Node(Node&& o) noexcept
    : id_(std::move(o.id_)),
      op(std::move(o.op)),
      inputs(std::move(o.inputs)),
      type(std::move(o.type)),
      loc(std::move(o.loc)),
      choices(std::move(o.choices)) {}

Node& Node::operator=(const Node& o) {
  if (this != &o) *this = Node(o);  // copy, then move-assign
  return *this;
}

// A node in a graph keeps its place; its inputs are assigned through the graph.
Node& Node::operator=(Node&& o) noexcept {
  if (this == &o) return *this;
  TESSERA_INTERNAL_CHECK(!inputs.in_graph() || id_ == o.id_, "a node in a graph keeps its id");
  id_ = std::move(o.id_);
  op = std::move(o.op);
  inputs = std::move(o.inputs);
  type = std::move(o.type);
  loc = std::move(o.loc);
  choices = std::move(o.choices);
  return *this;
}

void Node::set_id(std::string id) {
  TESSERA_INTERNAL_CHECK(!inputs.in_graph(), "a node in a graph keeps its id (Node::set_id renames copies only)");
  id_ = std::move(id);
}

// ---- Graph -----------------------------------------------------------------------------------

Graph::Graph() : store_(std::make_unique<detail::GraphStore>()) {}
Graph::~Graph() = default;

Graph::Graph(const Graph& o) : Graph() {
  if (o.store_) {
    for (const Node& n : o.store_->nodes) store_->place(store_->nodes.end(), Node(n));
  }
  outputs_ = o.outputs_;
}

Graph& Graph::operator=(const Graph& o) {
  if (this != &o) *this = Graph(o);
  return *this;
}

// The store moves as one heap object, so the nodes' pointers to it stay valid.
Graph::Graph(Graph&& o) noexcept : store_(std::move(o.store_)), outputs_(std::move(o.outputs_)) {}

Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    store_ = std::move(o.store_);
    outputs_ = std::move(o.outputs_);
  }
  return *this;
}

detail::GraphStore& Graph::store() {
  if (!store_) store_ = std::make_unique<detail::GraphStore>();
  return *store_;
}

namespace {

Node make_node(std::string id, std::unique_ptr<Op> op, std::vector<std::string> inputs, TensorType type) {
  Node node;
  node.set_id(std::move(id));
  node.op = std::move(op);
  node.inputs = std::move(inputs);
  node.type = std::move(type);
  return node;
}

}  // namespace

Node& Graph::add(std::string id, std::unique_ptr<Op> op, std::vector<std::string> inputs,
                 TensorType type) {
  TESSERA_INTERNAL_CHECK(!contains(id), "Graph::add is given an id new to the graph (unique_id makes one)");
  for (const std::string& in : inputs)
    TESSERA_INTERNAL_CHECK(contains(in), "Graph::add is given inputs that are nodes of the graph already");
  detail::GraphStore& s = store();
  return s.place(s.nodes.end(), make_node(std::move(id), std::move(op), std::move(inputs), std::move(type)));
}

Expected<Node*> Graph::insert_before(std::string_view before, std::string id, std::unique_ptr<Op> op,
                                     std::vector<std::string> inputs, TensorType type) {
  detail::GraphStore& s = store();
  auto pos = s.by_id.find(before);
  if (pos == s.by_id.end()) {
    Diagnostic d = make_error("cannot insert node '" + id + "' before '" + std::string(before) + "': no such node");
    return d.at_node(std::string(before));
  }
  if (s.contains(id)) {
    Diagnostic d = make_error("cannot insert node '" + id + "': the id is taken (use unique_id)");
    return d.at_node(id);
  }
  return &s.place(pos->second, make_node(std::move(id), std::move(op), std::move(inputs), std::move(type)));
}

Status Graph::erase(std::string_view id_view) {
  const std::string id(id_view);  // the view may point into the node being erased
  detail::GraphStore& s = store();
  auto pos = s.by_id.find(id);
  if (pos == s.by_id.end()) return make_error("cannot erase node '" + id + "': no such node");
  if (s.uses.find(id) != s.uses.end()) {  // only the message sorts the users
    Diagnostic d = make_error("cannot erase node '" + id + "': node '" + s.users_of(id).front()->id() + "' still uses it");
    return d.at_node(id);
  }
  if (std::find(outputs_.begin(), outputs_.end(), id) != outputs_.end()) {
    Diagnostic d = make_error("cannot erase node '" + id + "': it is a program output");
    return d.at_node(id);
  }
  s.remove(pos->second);
  return Status::ok();
}

// Beyond Node::inputs and the outputs, ops that name their inputs (elementwise args, index-map
// sources, kernel bodies, CUDA argument lists) are rewritten too, so the graph stays consistent.
void Graph::replace_uses(std::string_view from_view, const std::string& to) {
  const std::string from(from_view);
  if (from == to) return;
  detail::GraphStore& s = store();
  for (Node* user : s.users_of(from)) {
    std::vector<std::string> ids = user->inputs.ids();
    std::replace(ids.begin(), ids.end(), from, to);
    s.set_inputs(*user, std::move(ids));
    if (user->op) rename_buffer_in_op(*user->op, from, to);
  }
  std::replace(outputs_.begin(), outputs_.end(), from, to);
}

Node* Graph::find(std::string_view id) { return store_ ? store_->find(id) : nullptr; }

const Node* Graph::find(std::string_view id) const { return store_ ? store_->find(id) : nullptr; }

std::string Graph::unique_id(std::string_view base) const {
  if (!contains(base)) return std::string(base);
  int64_t k = store_->free_suffix(base);
  std::string candidate = detail::GraphStore::suffixed(base, k);
  while (contains(candidate)) candidate = detail::GraphStore::suffixed(base, ++k);
  return candidate;
}

std::vector<Node*> Graph::nodes() {
  std::vector<Node*> out;
  if (!store_) return out;
  out.reserve(store_->nodes.size());
  for (Node& n : store_->nodes) out.push_back(&n);
  return out;
}

std::vector<const Node*> Graph::nodes() const {
  std::vector<const Node*> out;
  if (!store_) return out;
  out.reserve(store_->nodes.size());
  for (const Node& n : store_->nodes) out.push_back(&n);
  return out;
}

size_t Graph::size() const { return store_ ? store_->nodes.size() : 0; }

std::vector<std::string> Graph::users(std::string_view id) const {
  std::vector<std::string> out;
  if (!store_) return out;
  for (const Node* n : store_->users_of(id)) out.push_back(n->id());
  return out;
}

bool Graph::has_users(std::string_view id) const {
  return store_ && store_->uses.find(id) != store_->uses.end();
}

// Dialect is declared in lowering order, so the most lowered dialect is the largest.
Dialect Graph::stage() const {
  Dialect most_lowered = Dialect::Core;
  if (!store_) return most_lowered;
  for (const Node& n : store_->nodes) {
    if (n.op && n.op->dialect() > most_lowered) most_lowered = n.op->dialect();
  }
  return most_lowered;
}

}  // namespace tessera

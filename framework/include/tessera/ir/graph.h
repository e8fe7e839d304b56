// Graph and Node: the one container for programs at every stage.
//
// A node has an id (also the name of the buffer it produces), an op, the ids of its input nodes and
// its output TensorType. Nodes are kept in a topological order: a node's inputs come before it.
// A Graph is a value: copying it deep-copies every op.
//
// Whole models are thousands of nodes, so the graph indexes them: find(), contains(), users(),
// insert_before() and erase() take constant time (users(): proportional to the users), and
// unique_id() constant amortized time. The index follows every edit made through the Graph and
// through Node::inputs; a node's id is fixed once the node is in a graph.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/attr.h"
#include "tessera/ir/op.h"
#include "tessera/ir/type.h"
#include "tessera/support/diagnostics.h"
#include "tessera/support/status.h"

namespace tessera {

struct Node;
namespace detail {
struct GraphStore;  // the nodes of a Graph and their index (graph.cpp)
}

// One schedule decision recorded on the node it shaped (see PassContext::choose).
struct KnobChoice {
  std::string pass;    // "launch_geometry"
  std::string knob;    // "BN"
  AttrValue value;
  std::string source;  // pinned | tuner | replay | heuristic | sampled
  friend bool operator==(const KnobChoice& a, const KnobChoice& b) {
    return a.pass == b.pass && a.knob == b.knob && a.value == b.value && a.source == b.source;
  }
};

// The ids of a node's inputs. It reads like a `const std::vector<std::string>&`; assigning it or
// push_back() on a node that is in a graph also updates that graph's use lists. A copy belongs to
// no graph.
class NodeInputs {
 public:
  using value_type = std::string;
  using const_iterator = std::vector<std::string>::const_iterator;
  using iterator = const_iterator;

  NodeInputs() = default;
  explicit NodeInputs(std::vector<std::string> ids) : ids_(std::move(ids)) {}
  NodeInputs(const NodeInputs& o) : ids_(o.ids_) {}
  NodeInputs(NodeInputs&& o) noexcept : ids_(std::move(o.ids_)) {}
  NodeInputs& operator=(const NodeInputs& o) { return *this = std::vector<std::string>(o.ids_); }
  NodeInputs& operator=(NodeInputs&& o) { return *this = std::move(o.ids_); }
  NodeInputs& operator=(std::vector<std::string> ids);
  void push_back(std::string id);

  const std::vector<std::string>& ids() const { return ids_; }
  operator const std::vector<std::string>&() const { return ids_; }  // NOLINT: reads as the vector
  const_iterator begin() const { return ids_.begin(); }
  const_iterator end() const { return ids_.end(); }
  size_t size() const { return ids_.size(); }
  bool empty() const { return ids_.empty(); }
  // True while the node that holds these inputs is part of a graph (assignments go through it).
  bool in_graph() const { return store_ != nullptr; }
  const std::string& operator[](size_t i) const { return ids_[i]; }
  const std::string& front() const { return ids_.front(); }
  const std::string& back() const { return ids_.back(); }

  friend bool operator==(const NodeInputs& a, const NodeInputs& b) { return a.ids_ == b.ids_; }
  friend bool operator==(const NodeInputs& a, const std::vector<std::string>& b) { return a.ids_ == b; }

 private:
  friend struct detail::GraphStore;
  std::vector<std::string> ids_;
  detail::GraphStore* store_ = nullptr;  // the graph that owns the node, if any
  Node* node_ = nullptr;
};

struct Node {
 private:
  std::string id_;

 public:
  // The node's id, also its buffer's name. Set by Graph::add / insert_before and fixed from then
  // on: the graph indexes nodes by it, so it has no setter (a copy may be renamed, set_id).
  const std::string& id() const { return id_; }
  // Renames a node that is in no graph (a copy); a node in a graph keeps its id (checked).
  void set_id(std::string id);

  std::unique_ptr<Op> op;
  NodeInputs inputs;
  TensorType type;
  SourceLoc loc;                    // where the frontend created it, if known
  std::vector<KnobChoice> choices;

  Node() = default;
  Node(const Node& o);  // a copy belongs to no graph
  Node& operator=(const Node& o);
  Node(Node&& o) noexcept;
  Node& operator=(Node&& o) noexcept;

  Dialect dialect() const { return op->dialect(); }
  template <class T> T* op_as() { return dynamic_cast<T*>(op.get()); }
  template <class T> const T* op_as() const { return dynamic_cast<const T*>(op.get()); }

 private:
  friend struct detail::GraphStore;
  friend class Graph;
  uint64_t order_ = 0;  // increases along the graph's order (see GraphStore)
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph& o);
  Graph& operator=(const Graph& o);
  Graph(Graph&& o) noexcept;
  Graph& operator=(Graph&& o) noexcept;

  // Appends a node. The id must be new (see unique_id) and every input must already exist.
  Node& add(std::string id, std::unique_ptr<Op> op, std::vector<std::string> inputs, TensorType type);
  // Inserts a node right before `before`, for passes that splice fragments. An error when
  // `before` is not a node or `id` is taken.
  Expected<Node*> insert_before(std::string_view before, std::string id, std::unique_ptr<Op> op,
                                std::vector<std::string> inputs, TensorType type);
  // Removes a node. An error (and nothing changes) when there is no such node, a node still
  // uses it, or it is a program output.
  Status erase(std::string_view id);
  // Makes every reference to `from` (inputs and outputs) point to `to`.
  void replace_uses(std::string_view from, const std::string& to);

  Node* find(std::string_view id);
  const Node* find(std::string_view id) const;
  bool contains(std::string_view id) const { return find(id) != nullptr; }

  // `base` if free, else the first free of base_1, base_2, ...
  std::string unique_id(std::string_view base) const;

  // The nodes in graph order (a snapshot: editing the graph does not change the vector).
  std::vector<Node*> nodes();
  std::vector<const Node*> nodes() const;
  size_t size() const;

  // Ids of the nodes whose values the program returns, in order.
  std::vector<std::string>& outputs() { return outputs_; }
  const std::vector<std::string>& outputs() const { return outputs_; }

  // Ids of the nodes that consume `id`, in graph order, each once.
  std::vector<std::string> users(std::string_view id) const;
  bool has_users(std::string_view id) const;

  // The most lowered dialect present (Core if only inputs/constants).
  Dialect stage() const;

 private:
  detail::GraphStore& store();
  std::unique_ptr<detail::GraphStore> store_;  // null only in a moved-from graph
  std::vector<std::string> outputs_;
};

}  // namespace tessera

// Graph and Node: the one container for programs at every stage.
//
// A node has an id (also the name of the buffer it produces), an op, the ids of its input nodes and
// its output TensorType. Nodes are kept in a topological order: a node's inputs come before it.
// A Graph is a value: copying it deep-copies every op (so a pass may snapshot and compare).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/attr.h"
#include "tessera/ir/op.h"
#include "tessera/ir/type.h"
#include "tessera/support/diagnostics.h"

namespace tessera {

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

struct Node {
  std::string id;
  std::unique_ptr<Op> op;
  std::vector<std::string> inputs;
  TensorType type;
  SourceLoc loc;                    // where the frontend created it, if known
  std::vector<KnobChoice> choices;

  Node() = default;
  Node(const Node& o);
  Node& operator=(const Node& o);
  Node(Node&&) noexcept = default;
  Node& operator=(Node&&) noexcept = default;

  Dialect dialect() const { return op->dialect(); }
  template <class T> T* op_as() { return dynamic_cast<T*>(op.get()); }
  template <class T> const T* op_as() const { return dynamic_cast<const T*>(op.get()); }
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph& o);
  Graph& operator=(const Graph& o);
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;

  // Appends a node. The id must be new (see unique_id) and every input must already exist.
  Node& add(std::string id, std::unique_ptr<Op> op, std::vector<std::string> inputs, TensorType type);
  // Inserts a node right before `before` (which must exist), for passes that splice fragments.
  Node& insert_before(std::string_view before, std::string id, std::unique_ptr<Op> op,
                      std::vector<std::string> inputs, TensorType type);
  // Removes a node; no remaining node or output may refer to it.
  void erase(std::string_view id);
  // Makes every reference to `from` (inputs and outputs) point to `to`.
  void replace_uses(std::string_view from, const std::string& to);

  Node* find(std::string_view id);
  const Node* find(std::string_view id) const;
  bool contains(std::string_view id) const { return find(id) != nullptr; }

  // `base` if free, else base_1, base_2, ...
  std::string unique_id(std::string_view base) const;

  std::vector<Node*> nodes();
  std::vector<const Node*> nodes() const;
  size_t size() const { return nodes_.size(); }

  // Ids of the nodes whose values the program returns, in order.
  std::vector<std::string>& outputs() { return outputs_; }
  const std::vector<std::string>& outputs() const { return outputs_; }

  // Ids of the nodes that consume `id`.
  std::vector<std::string> users(std::string_view id) const;

  // The most lowered dialect present (Core if only inputs/constants).
  Dialect stage() const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::string> outputs_;
};

}  // namespace tessera

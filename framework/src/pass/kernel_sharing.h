// Kernels equal up to their buffer names (the layers of a model: the same kernels reading each
// layer's weights and activations) are scheduled once. The pipeline runner groups the nodes a
// KernelPass applies to by that structure, applies the pass to the first node of each group (its
// representative) and gives every other member the representative's result with the member's own
// buffer names: the member's kernel reads its own (per-layer) buffers, and after emit_cuda it
// carries the representative's CUDA source, so the cuda target compiles it once.
//
// "Equal up to buffer names": same op kind, same statements, expressions, launch geometry and
// parameters, same recorded knob choices, same output type, and inputs of the same types and kinds
// at the same positions, where the graph buffers the node names (its inputs and its own id) are
// compared by their position in the node's signature wherever they appear in a name (a kernel
// name `k_l3_q_reduce`, a staged copy `p_l3_w_smem`); knob values name roles, never buffers
// (STAGE='in1' names an input by position), and are compared and handed on as they are. This
// relies on what Tessera's kernel passes do and docs/plugins.md asks of every KernelPass: it reads
// the graph only through the types of the node's buffers, and a buffer's name is only a name
// (renaming an input renames the result). docs/architecture.md ("Kernels shared across layers")
// has the rest.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/ir/graph.h"

namespace tessera {

// For each of `kernels` (nodes of `g` in graph order), the index of the first of them that is equal
// to it up to buffer names (its own index when none before it is). Nodes that are not Loop, Tile
// or Kernel IR kernels are their own group.
std::vector<size_t> group_equal_kernels(const Graph& g, const std::vector<const Node*>& kernels);

// The graph buffers a kernel node names, by position: its inputs (each once, in order), then its
// id; and where they appear in a name.
class KernelBufferNames {
 public:
  explicit KernelBufferNames(const Node& n);

  size_t size() const { return names_.size(); }
  const std::string& operator[](size_t i) const { return names_[i]; }
  std::optional<size_t> position(const std::string& name) const;

  // Calls literal(char) or buffer(position) for `text`, left to right. A buffer is found where its
  // name fills whole name parts: a part begins at the start of the text or after '_' or a
  // character that cannot be in a name, and ends likewise (`l3_q` is found in `k_l3_q_reduce` and
  // `l3_q[a0]`, not in `l3_qk`); the longest buffer name wins (`l3_q_rot` before `l3_q`).
  template <class Literal, class Buffer>
  void scan(std::string_view text, Literal&& literal, Buffer&& buffer) const;

 private:
  void add(const std::string& name);

  std::vector<std::string> names_;
  std::unordered_map<std::string, size_t> index_;
  size_t longest_ = 0;
};

// The grouping of group_equal_kernels kept across a run of kernel passes: the members of a group
// take their representative's result, so they stay equal to it and the grouping holds until a
// whole-graph pass rewrites the graph (or a member is rewritten on its own); invalidate() then.
class KernelGroups {
 public:
  // The representative of each of `kernels` (as group_equal_kernels returns it), from the kept
  // grouping when there is one, else computed and kept.
  std::vector<size_t> representatives(const Graph& g, const std::vector<const Node*>& kernels);
  void invalidate() { valid_ = false; }

 private:
  bool valid_ = false;
  std::unordered_map<std::string, std::string> representative_;  // node id -> its representative's
};

// Renames the graph buffers of a representative's names to a member's: built from the two nodes
// before the pass (their inputs and ids, position by position).
class BufferRenaming {
 public:
  BufferRenaming(const Node& representative, const Node& member);
  // `text` with every representative buffer name that appears in it as a name part replaced by
  // the member's buffer at the same position.
  std::string rename(const std::string& text) const;
  // `rewritten` (the representative after the pass) as the member: the op and type with the
  // member's buffers, the knob choices as they are, the member's id and source location. False
  // when the pass gave the representative an input that is none of its buffers (the member then
  // needs the pass itself).
  bool apply(const Node& rewritten, Node& member) const;

 private:
  KernelBufferNames from_;
  KernelBufferNames to_;
};

// ---- implementation of the template ----

namespace kernel_sharing_detail {
inline bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
inline bool begins_part(std::string_view s, size_t i) { return i == 0 || s[i - 1] == '_' || !is_name_char(s[i - 1]); }
inline bool ends_part(std::string_view s, size_t j) { return j == s.size() || s[j] == '_' || !is_name_char(s[j]); }
}  // namespace kernel_sharing_detail

template <class Literal, class Buffer>
void KernelBufferNames::scan(std::string_view text, Literal&& literal, Buffer&& buffer) const {
  using namespace kernel_sharing_detail;
  std::string part;
  size_t i = 0;
  while (i < text.size()) {
    if (begins_part(text, i) && is_name_char(text[i])) {
      bool found = false;
      for (size_t j = std::min(text.size(), i + longest_); j > i; --j) {
        if (!ends_part(text, j)) continue;
        part.assign(text.substr(i, j - i));
        auto it = index_.find(part);
        if (it == index_.end()) continue;
        buffer(it->second);
        i = j;
        found = true;
        break;
      }
      if (found) continue;
    }
    literal(text[i]);
    ++i;
  }
}

}  // namespace tessera

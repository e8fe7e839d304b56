// The graph edit of split_matmul_k and split_reduce (tessera/pass/split_kernel.h).
#include "tessera/pass/split_kernel.h"

#include <memory>
#include <utility>
#include <vector>

#include "tessera/ir/op.h"
#include "tessera/ir/stmt_effects.h"

namespace tessera {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// `name` with its first occurrence of `id` as whole name parts (bounded by '_' or the ends)
// replaced by `replacement`; `name + "_" + replacement` when it has none.
std::string rename_part(const std::string& name, const std::string& id, const std::string& replacement) {
  for (size_t at = name.find(id); at != std::string::npos; at = name.find(id, at + 1)) {
    const size_t end = at + id.size();
    const bool starts = at == 0 || !is_name_char(name[at - 1]);
    const bool ends = end == name.size() || !is_name_char(name[end]);
    if (starts && ends) return name.substr(0, at) + replacement + name.substr(end);
  }
  return name + "_" + replacement;
}

}  // namespace

Status split_tile_kernel(Graph& g, Node& n, const std::string& partial_id, Tile partial, const TensorType& partial_type,
                         Tile combine) {
  const auto* kernel = n.op_as<TileOp>();
  if (kernel == nullptr) return make_error("split_tile_kernel: node " + n.id() + " is not a Tile IR kernel");
  auto part_op = std::make_unique<TileOp>(*kernel);
  part_op->name = rename_part(kernel->name, n.id(), partial_id);
  part_op->body = canonicalize_names(Body{Stmt(std::move(partial))});
  std::vector<std::string> part_inputs = read_buffers(part_op->body);
  auto combine_op = std::make_unique<TileOp>(*kernel);
  combine_op->name = kernel->name + "_combine";
  combine_op->body = canonicalize_names(Body{Stmt(std::move(combine))});
  std::vector<std::string> combine_inputs = read_buffers(combine_op->body);
  std::vector<KnobChoice> choices = n.choices;
  const std::string id = n.id();
  TESSERA_ASSIGN_OR_RETURN(Node * part_node,
                           g.insert_before(id, partial_id, std::move(part_op), std::move(part_inputs), partial_type));
  part_node->choices = std::move(choices);
  Node& combined = *g.find(id);  // insert_before may move nodes: look it up again
  combined.op = std::move(combine_op);
  combined.inputs = std::move(combine_inputs);
  return Status::ok();
}

}  // namespace tessera

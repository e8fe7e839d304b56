// Verifiers: one per dialect, run between passes by `--verify-each` and after every stage.
//
// verify_graph checks the structure shared by all stages (unique ids, inputs defined before use,
// outputs exist, sane types) and then that every compute node belongs to `expected` and satisfies
// that dialect's rules: e.g. Loop IR bodies use only Loop IR statements, bind every name before
// using it and write only their own output; Tile IR adds Tile/Stage/...; Kernel IR has no Tile
// statements left. Errors name the node (and the statement, printed).
#pragma once

#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera {

Status verify_graph(const Graph& g, Dialect expected);

// Cross-checks the graph's own bookkeeping against its nodes: every node is found by its id, and
// the use lists name exactly the nodes whose inputs name each id. The graph keeps these in step
// itself; `--verify-each` runs this after every pass to catch a bug there early.
Status verify_graph_index(const Graph& g);

// Checks one kernel body against the statement kinds allowed in `d` (Loop, Tile or Kernel), and
// that names are bound before use. `node_id` names the node in diagnostics.
Status verify_body(const Body& body, Dialect d, const std::string& node_id);

}  // namespace tessera

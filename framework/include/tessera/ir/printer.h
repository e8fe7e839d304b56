// Printing graphs: the main debugging surface. Deterministic: same graph, same bytes.
#pragma once

#include <string>

#include "tessera/ir/graph.h"

namespace tessera {

// The whole graph: a header listing inputs and constants, then every compute node in order in
// its dialect's form (see op.h), then `return out0, out1`.
std::string print_graph(const Graph& g);

// One compute node in its dialect's form (what `-vv` diffs compare before/after a pass).
std::string print_node(const Graph& g, const Node& n);

// The signature line of inputs/constants: `x: (16, 64) float32` / `p_weight = param up.weight ...`.
std::string print_value_decl(const Node& n);

}  // namespace tessera

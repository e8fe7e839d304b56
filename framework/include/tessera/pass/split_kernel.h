// Splitting a Tile kernel in two: the passes that spread one kernel's reduction over more blocks
// (split_matmul_k, split_reduce) add a node computing partial results and turn the kernel into the
// combine that reads them. This is the graph edit they share.
#pragma once

#include <string>

#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera {

// Adds a node `partial_id` before Tile kernel node `n`, computing `partial` into a buffer of
// `partial_type`, and makes `n` compute `combine` (which reads that buffer) under the kernel name
// `<n's kernel name>_combine`. The partial kernel's name is n's with n's id replaced by
// `partial_id` (`k_l3_q_reduce` -> `k_l3_q_splitk_reduce`): it names its own node, so the layers'
// partial kernels stay equal up to buffer names and are scheduled (and compiled) once. Both
// kernels keep `n`'s kernel attributes; the partial node takes
// `n`'s recorded knob choices. Each node's inputs become the buffers its body loads; both bodies
// are named canonically. `n` must be a TileOp node of `g` and `partial_id` a new id (an error
// naming the node otherwise).
Status split_tile_kernel(Graph& g, Node& n, const std::string& partial_id, Tile partial, const TensorType& partial_type,
                         Tile combine);

}  // namespace tessera

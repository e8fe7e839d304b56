// BlockExecutor: runs a compiled kernel (KernelProgram) for one block at a time, all threads of
// the block together as lane vectors under an active mask (never thread by thread). Loops whose
// bounds differ per lane run while any lane is active; Cond splits the mask; Sync and TreeHalve
// need the whole block active; WarpShuffle needs every lane of each participating warp.
// launch_kernel runs every block of the grid and checks the launch-wide rules (two threads
// writing one global element; output elements the kernel never writes).
#pragma once

#include <functional>
#include <vector>

#include "kernel_program.h"
#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera::sim {

// Runs `program` (compiled from `op`, the op of `node`) over its whole grid. `globals` holds the
// kernel's buffers; the one with is_output is written.
// `after_block(blocks_done, blocks)` is called after every block (may be empty).
Status launch_kernel(const Node& node, const KernelOp& op, const KernelProgram& program,
                     std::vector<GlobalBuffer>& globals,
                     const std::function<void(int64_t, int64_t)>& after_block = {});

}  // namespace tessera::sim

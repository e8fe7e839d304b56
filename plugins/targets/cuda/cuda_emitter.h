// CudaEmitter: renders one Kernel IR node (KernelOp) as a complete CUDA C++ translation unit.
// Used by the emit_cuda pass (emit_cuda_pass.cpp); private to the cuda plugin.
#pragma once

#include <cstdint>

#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"
#include "tessera/support/status.h"

namespace tessera {

// Device limits the emitted kernel must respect (read from the DeviceDesc; 0 = unchecked).
struct CudaEmitLimits {
  int64_t static_smem_bytes = 0;
  int64_t max_threads_per_block = 0;
};

// The CudaOp for `node` (whose op is a KernelOp) of `g`: source, grid, block, dynamic_smem = 0 and
// args = the node's input buffers in input order, then its output. An error names the node and,
// where one is at fault, the statement.
Expected<CudaOp> emit_cuda_kernel(const Graph& g, const Node& node, const CudaEmitLimits& limits);

}  // namespace tessera

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
  int64_t static_smem_bytes = 0;      // static __shared__ arrays (smem_per_block_static)
  int64_t max_threads_per_block = 0;
  int64_t max_smem_bytes = 0;         // dynamic shared memory, opt-in maximum (smem_per_block)
};

// The CudaOp for `node` (whose op is a KernelOp) of `g`: source, grid, block, cluster,
// dynamic_smem (the KernelOp's: its Smem arrays are then carved from one extern __shared__ array)
// and params = kernel_signature (buffers: the node's inputs, then its output; then its scalars and
// tensor maps). An error names the node and, where one is at fault, the statement.
Expected<CudaOp> emit_cuda_kernel(const Graph& g, const Node& node, const CudaEmitLimits& limits);

}  // namespace tessera

// emit_cuda: renders every Kernel IR node as CUDA C++.
//
// Rewrites: each KernelOp node becomes a CudaOp with the same id, inputs and type: the kernel's
// complete translation unit (`extern "C" __global__ __launch_bounds__(T) void k_name(const float*
// __restrict__ x, ..., float* __restrict__ out, int pos, const __grid_constant__ CUtensorMap tmap)`,
// see cuda_emitter_stmts.cpp for the exact spelling of every statement), its grid, block and cluster,
// its dynamic_smem (0: static __shared__ arrays; else one extern __shared__ array the Smem arrays
// are carved from), and params = kernel_signature: the node's input buffers in input order, its
// output, then the KernelOp's scalar and tensor-map parameters.
// Accepts: a graph whose compute nodes are Kernel IR (CudaOp nodes are left alone, so running it
// twice is running it once). TMA copies and mbarriers become sm_90 PTX (cuda_emitter_ptx.cpp;
// `__trap()` below sm_90). A node of another dialect, a Tile IR statement, an unknown function
// or op are errors naming the node and the statement; so is static shared memory beyond the device's smem_per_block_static, dynamic shared
// memory beyond its smem_per_block, or a block beyond its max_threads_per_block.
// Guarantees: the source has exactly the semantics of docs/ir.md "Kernel IR" (the sim target is
// the oracle) and compiles with NVRTC for sm_80 and newer; the output is deterministic. No knobs.
// Tests: tests/unit/cuda_emitter_test.cpp (exact text, NVRTC compiles), tests/golden/emit_cuda/.
#include "emit_cuda_pass.h"

#include <memory>
#include <string>

#include "cuda_emitter.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pass_context.h"

namespace tessera {
namespace {

class EmitCudaPass final : public KernelPass {
 public:
  std::string_view name() const override { return "emit_cuda"; }
  std::string_view summary() const override {
    return "renders every Kernel IR node as a CUDA C++ kernel (CudaOp: source, launch geometry, typed params)";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Cuda}; }
  Dialect input_dialect() const override { return Dialect::Kernel; }
  // Every compute node that is not CUDA yet, so that one of another dialect is an error naming it.
  bool applies_to(const Node& n) const override {
    return n.op && n.dialect() != Dialect::Core && n.dialect() != Dialect::Cuda;
  }

  Status run_on(Node& node, PassContext& ctx) override {
    const Graph& g = ctx.graph();
    Node* n = &node;
    const CudaEmitLimits limits{ctx.device().smem_per_block_static, ctx.device().max_threads_per_block,
                                ctx.device().smem_per_block};
    const Dialect d = n->dialect();
    if (d != Dialect::Kernel)
      return ctx.error_at(*n, "emit_cuda needs Kernel IR, but this node is " + std::string(dialect_name(d)) +
                                  " IR (lower it with materialize first)");
    Expected<CudaOp> cuda = emit_cuda_kernel(g, *n, limits);
    if (!cuda) return ctx.error_at(*n, cuda.error().message);
    n->op = std::make_unique<CudaOp>(std::move(*cuda));
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_emit_cuda_pass() { return std::make_unique<EmitCudaPass>(); }

}  // namespace tessera

// KernelCost: counts the elementwise operations and tensor-core FLOPs of a Kernel IR body and the
// bytes of its buffers (see kernel_cost.h). Tests: tests/unit/cuda_runtime_test.cpp.
#include "tessera/target/kernel_cost.h"

#include <algorithm>
#include <variant>

#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/op.h"
#include "tessera/ir/stmt.h"

namespace tessera {
namespace {

double trips(const Expr& begin, const Expr& end, int64_t step) {
  const Expr b = simplify(begin), e = simplify(end);
  if (!e.is(ExprKind::Int) || step <= 0) return 1;
  const int64_t first = b.is(ExprKind::Int) ? b.int_value() : 0;
  return static_cast<double>(std::max<int64_t>(0, (e.int_value() - first + step - 1) / step));
}

// Per thread: SIMT operations and tensor-core FLOPs (the thread's share of its warp's).
struct Ops {
  double simt = 0, tensor = 0;
  Ops& operator+=(const Ops& o) {
    simt += o.simt;
    tensor += o.tensor;
    return *this;
  }
  friend Ops operator*(double times, const Ops& o) { return {times * o.simt, times * o.tensor}; }
};

Ops count_ops(const Body& body) {
  Ops ops;
  for (const Stmt& s : body) {
    switch (s.kind()) {
      case StmtKind::Assign:
        if (s.as<Assign>()->op != ElementwiseFn::Cast) ops.simt += 1;  // a cast is a conversion, not arithmetic
        break;
      case StmtKind::Accum: ops.simt += 1; break;
      case StmtKind::MmaSync: {
        const MmaDims d = mma_dims(s.as<MmaSync>()->shape);
        ops.tensor += 2.0 * static_cast<double>(d.m * d.n * d.k) / 32.0;
        break;
      }
      case StmtKind::WgmmaMma:  // per thread: a warpgroup's 128 threads share the 64 x N x 16 product
        ops.tensor += 2.0 * static_cast<double>(64 * s.as<WgmmaMma>()->n * 16) / 128.0;
        break;
      case StmtKind::Loop: {
        const auto* l = s.as<Loop>();
        ops += trips(l->begin, l->end, 1) * count_ops(l->body);
        break;
      }
      case StmtKind::StridedLoop: {
        const auto* l = s.as<StridedLoop>();
        const Expr step = simplify(l->step);
        ops += trips(l->begin, l->end, step.is(ExprKind::Int) ? step.int_value() : 1) * count_ops(l->body);
        break;
      }
      case StmtKind::Cond: {
        const auto* c = s.as<Cond>();
        ops += count_ops(c->then_body);
        ops += count_ops(c->else_body);
        break;
      }
      case StmtKind::Tile: ops += count_ops(s.as<Tile>()->body); break;
      // Data movement, declarations and synchronization: no arithmetic counted.
      case StmtKind::Load:
      case StmtKind::Select:
      case StmtKind::Init:
      case StmtKind::Write:
      case StmtKind::Stage:
      case StmtKind::Combine:
      case StmtKind::AsyncWait:
      case StmtKind::SlabMap:
      case StmtKind::Let:
      case StmtKind::Smem:
      case StmtKind::Sync:
      case StmtKind::CpAsyncCopy:
      case StmtKind::CpAsyncCommit:
      case StmtKind::CpAsyncWait:
      case StmtKind::TmaLoad:
      case StmtKind::MbarrierInit:
      case StmtKind::MbarrierArrive:
      case StmtKind::MbarrierWait:
      case StmtKind::NamedBarrier:
      case StmtKind::SetMaxNReg:
      case StmtKind::WarpShuffle:
      case StmtKind::TreeHalve:
      case StmtKind::VectorLoad:
      case StmtKind::VectorStore:
      case StmtKind::ClusterSync:
      case StmtKind::DsmemLoad:
      case StmtKind::Fragment:
      case StmtKind::LdMatrix:
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
      case StmtKind::WgmmaWait: break;
    }
  }
  return ops;
}

int64_t buffer_bytes(const Node& n) { return num_elements(n.type.shape) * dtype_bytes(n.type.dtype); }

}  // namespace

KernelCost KernelCost::of(const Graph& g, const Node& n) {
  KernelCost cost;
  for (const std::string& in : n.inputs)
    if (const Node* src = g.find(in)) cost.bytes += buffer_bytes(*src);
  cost.bytes += buffer_bytes(n);
  if (const auto* k = n.op_as<KernelOp>()) {
    double threads = 1;
    for (int64_t d : k->grid) threads *= static_cast<double>(d);
    for (int64_t d : k->block) threads *= static_cast<double>(d);
    const Ops ops = count_ops(k->body);
    cost.flops = threads * ops.simt;
    cost.tensor_flops = threads * ops.tensor;
  }
  return cost;
}

double KernelCost::program_work(const Graph& g) {
  double work = 0;
  for (const Node* n : g.nodes())
    if (n->op_as<KernelOp>() != nullptr) work += of(g, *n).work();
  return work;
}

}  // namespace tessera

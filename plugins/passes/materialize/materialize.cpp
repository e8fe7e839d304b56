// materialize: lowers Tile IR kernels to Kernel IR (hardware primitives + launch geometry).
//
// Rewrites: every TileOp node becomes a KernelOp with the same id, inputs, type and name;
//   grid = (the BLOCK extents, first-listed as x) for two or three BLOCK axes within the grid's
//   limits (x < 2^31, y and z <= 65535), else (product of the BLOCK extents, 1, 1);
//   block = (product of the THREAD extents = T, 1, 1);
//   dynamic_smem = the Smem layout's bytes (smem_layout) when they and the mbarriers' 8 bytes a
//   slot exceed the device's smem_per_block_static (the static __shared__ limit), else 0 (static
//   arrays).
//   The body becomes, in order:
//     - one `Smem` per Stage (source dtype, slab extents, pad added to the last) and per block
//       Combine that needs one, in order of appearance (Kernel IR wants every Smem at the top);
//     - `Let` decodes of the Tile axes, in axis order: THREAD axes from threadIdx.x, BLOCK axes
//       from blockIdx.x, the first-listed axis of each binding fastest (`a0 = threadIdx.x % 32`,
//       `a1 = threadIdx.x / 32`), or each BLOCK axis its own grid dimension (`a2 = blockIdx.y`);
//     - the statements around the Tile, and the Tile body with:
//       Stage (sync/buffered)  [Sync() when inside a loop and first of a run of consecutive Stages:
//                              last iteration's reads finish before any buffer of the run is refilled]
//                              StridedLoop(f = tid; < slab elems; += T): decode f row-major into
//                              slab coords, `in = load x[origin + coords]`, `x_smem[coords] = in`
//                              (guarded by `if` only where origin + coord may leave the source, at either end;
//                              in a kernel of tensor-core statements, which read whole slabs, the
//                              `else` writes zeros there, as TMA fills them);
//                              Sync()
//       Stage (async)          the same loop issuing CpAsyncCopy(x_smem[coords], x[..], bytes=elem
//                              size), then CpAsyncCommit() after the last Stage of a run of
//                              consecutive async Stages (one cp.async group per slab of every operand);
//                              each trip copies W elements of 16 (else 8, else 4) bytes in all when the slab's
//                              innermost dim is the source's last, W divides its extent (pad included),
//                              the source's last dim and the first element's source index (so a guard
//                              on the first element guards all W); a Stage of 2-byte elements that
//                              cannot group to 4 bytes is copied synchronously (the run's wait and
//                              Sync are its barrier)
//       Stage (tma)            box copies (stage_tma_boxes): the kernel gets a tensor-map parameter
//                              `tmap_<source>: tensor_map(source, box=(..), swizzle=..)` and a barrier
//                              ring `bar_<dst> = MbarrierInit(count=1, slots=S)` after the Smem
//                              (aligned to 128 bytes, or 8 swizzle spans); [Sync() as above];
//                              `if tid == 0: MbarrierArrive(bar[slot], tx=slab bytes);
//                              TmaLoad(dst[slot, 0, ..], tmap, coords=origin, mbar=bar[slot])`
//                              (a slab of several boxes: the TmaLoad in `for b in 0..copies`, box b
//                              at b boxes along the slab's first dim)
//                              (`&& n < trips` for a ring's fill n that may run past the slabs of
//                              its loop: a pipeline's run-ahead is not issued; the Stages of a run
//                              with the same condition share one branch).
//                              Its fill count n: from a ring's slot `n % S`, else from the enclosing
//                              loops (constant trip counts, no condition around it; an error otherwise)
//                              after the fills of the buffer's earlier Stages (a row's passes over
//                              the same chunk buffer, one loop after another)
//       Stage with slots = S   the Smem gets a leading dimension S (and slots=S); the copies write
//                              x_smem[slot, coords] (an error when the slot's bound leaves 0..S-1);
//                              the Tile IR loads already index the slot
//       AsyncWait(keep=N)      CpAsyncWait(keep=N) (N groups = N slabs may stay in flight); Sync()
//                              (only the waits below when every Stage is tma); for each tma-staged
//                              buffer filled in scope (latest fill n): MbarrierWait(bar[(n - N) % S],
//                              phase=(n - N) / S % 2), the phase of the slab N fills back
//       Combine(acc, op)       xor butterfly `v = WarpShuffle(acc, xor, k, width=W)`,
//                              `acc <- op(acc, v)` for k = 16, 8, .., 1 (k < W, W = min(T, 32));
//                              for a block Combine with T > 32 the warp totals then go through
//                              `acc_smem[T/32]`: lane 0 writes, Sync(), TreeHalve, every thread
//                              reads slot 0 into a new value that replaces `acc` in every later
//                              statement of the enclosing scope (plus a Sync() after the read when
//                              inside a loop: the slots are refilled next iteration).
//                              A block of T < 32 threads is one partial warp: all its lanes are in
//                              the block, so shuffles of width T are exact (T must be a power of two).
//       SlabMap(dt[shape], f)  Smem dst: dt[shape]; [Sync() inside a loop: last trip's readers are
//                              done]; StridedLoop(f = tid; < elems; += T): the body (its Write fills
//                              the element); Sync()
//       everything else        copied (Loop, StridedLoop, Cond, Load, Assign, Select, Init, Accum,
//                              Write). Loads of staged buffers keep their slab-coordinate indices.
//   The body ends canonically renamed (canonicalize_names).
// Accepts: graphs whose compute nodes are TileOps with one Tile statement each (other nodes are left
//   alone). Errors (naming the node): a PARALLEL axis ("run launch_geometry before materialize"),
//   an unknown binding, more threads than device().max_threads_per_block, shared memory above
//   device().smem_per_block (the opt-in maximum), a collective statement (Stage, Combine, AsyncWait) under a
//   thread-dependent loop or condition, a tma Stage whose slab no box copy moves or whose fills
//   cannot be counted (above), a Combine over T threads that is neither a power
//   of two below 32 nor a multiple of 32, an accumulation into an accumulator after its block Combine.
// Guarantees: the result verifies as Kernel IR and computes what the Tile IR means (docs/ir.md).
//   No knobs; same input, same output bytes.
// Tests: tests/golden/materialize/ (printouts) and tests/unit/materialize_test.cpp (errors, decodes,
//   verification on the corpus).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/ir/slab_ring_loop.h"
#include "tessera/ir/uniformity.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/internal_check.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

constexpr int64_t kWarp = 32;  // lanes per warp: a CUDA constant, not a device number
constexpr int64_t kWarpgroup = kWarpgroupThreads;
// A producer warpgroup's registers per thread after setmaxnreg.dec: it only counts its loop and
// issues copies (CUTLASS's warp-specialized kernels give theirs 40 too).
constexpr int64_t kProducerRegisters = 40;
// The named barrier of a warp-specialized Tile's consumers (0 is __syncthreads').
constexpr int64_t kConsumerBarrier = 1;
// The grid's dimension limits on every CUDA architecture Tessera targets (compute capability 3.0+).
constexpr int64_t kMaxGridX = (int64_t{1} << 31) - 1;
constexpr int64_t kMaxGridYZ = 65535;

bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string first_line(const Stmt& s) {
  std::string text = print_stmt(s);
  text = text.substr(0, text.find('\n'));
  size_t start = text.find_first_not_of(' ');
  return start == std::string::npos ? text : text.substr(start);
}

// Replaces variables in the expressions of a leaf statement (the rename after a block Combine).
class ExprRenamer final : public StmtMutator {
 public:
  explicit ExprRenamer(const std::map<std::string, Expr>& renames) : renames_(renames) {}
  Expr mutate_expr(const Expr& e) override { return renames_.empty() ? e : substitute(e, renames_); }

 private:
  const std::map<std::string, Expr>& renames_;
};

// What holds while lowering one statement list.
// A loop around the statement being lowered, as a TMA Stage counts its fills: `var` from `begin`
// by 1, `trips` times (0 when not a constant count, or a StridedLoop).
struct LoopFrame {
  std::string var;
  Expr begin;
  int64_t trips = 0;
};

// The latest fill of a TMA-staged buffer in scope: which barrier ring tracks it, and the fill
// count (its slab's number from 0), so an AsyncWait can name the slot and phase of a slab.
struct TmaFill {
  std::string barrier;
  int64_t slots = 1;
  Expr fill;
};

struct Scope {
  RangeMap ranges;                        // integer ranges of the axes in scope
  std::map<std::string, Expr> renames;    // acc -> its combined value, after a block Combine
  bool in_loop = false;                   // inside a Loop/StridedLoop (collectives repeat)
  bool in_cond = false;                   // inside a Cond (a TMA Stage's fill count is unknown)
  std::vector<LoopFrame> loops;           // outermost first
  std::map<std::string, TmaFill> tma_fills;  // staged buffer -> its latest TMA fill, not yet waited for
  UniformityScope uniformity = UniformityScope::kernel_top();  // block-wide names; thread-dependent control
};

class KernelBuilder {
 public:
  KernelBuilder(const Graph& g, const Node& node, const TileOp& tile, PassContext& ctx)
      : g_(g), node_(node), tile_op_(tile), ctx_(ctx) {
    used_buffers_.insert(node.id());
    used_buffers_.insert(node.inputs.begin(), node.inputs.end());
  }

  Expected<std::unique_ptr<KernelOp>> build() {
    const Tile* tile = nullptr;
    for (const Stmt& s : tile_op_.body) {
      if (const auto* t = s.as<Tile>()) {
        if (tile != nullptr) return ctx_.error_at(node_, "the kernel has more than one Tile statement");
        tile = t;
      }
    }
    if (tile == nullptr) return ctx_.error_at(node_, "the kernel has no Tile statement");
    if (std::optional<Stmt> foreign = first_stmt_outside(tile_op_.body, kInTile))
      return ctx_.error_at(node_, "`" + first_line(*foreign) + "` is a " +
                                      std::string(home_dialect_name(foreign->kind())) +
                                      " statement; materialize reads Tile IR");
    collect_accumulator_types(tile_op_.body);

    // Launch geometry and the axis decodes.
    int64_t threads = 1, blocks = 1;
    for (const TileAxis& a : tile->axes) {
      if (a.binding == AxisBinding::Parallel) {
        return ctx_.error_at(node_, "axis " + a.name +
                                        " is PARALLEL (not bound to threads or blocks): run "
                                        "launch_geometry before materialize");
      }
      if (a.binding != AxisBinding::Thread && a.binding != AxisBinding::Block && a.binding != AxisBinding::Cluster) {
        return ctx_.error_at(node_, "axis " + a.name + " has binding " + std::string(spelling(a.binding)) +
                                        ", which materialize does not lower (THREAD, BLOCK or CLUSTER)");
      }
      if (a.extent <= 0) return ctx_.error_at(node_, "axis " + a.name + " has no extent");
      if (a.binding == AxisBinding::Cluster) {
        if (cluster_ > 1 || !ctx_.device().features.clusters)
          return ctx_.error_at(node_, cluster_ > 1 ? "the Tile has more than one CLUSTER axis"
                                                   : "axis " + a.name + " is a CLUSTER axis; device " + ctx_.device().name +
                                                         " (" + ctx_.device().arch + ") has no thread-block clusters (sm_90 and newer)");
        cluster_ = a.extent;
        continue;
      }
      (a.binding == AxisBinding::Thread ? threads : blocks) *= a.extent;
    }
    if (threads > ctx_.device().max_threads_per_block) {
      return ctx_.error_at(node_, "the Tile has " + std::to_string(threads) +
                                      " threads per block; device " + ctx_.device().name +
                                      " allows at most " +
                                      std::to_string(ctx_.device().max_threads_per_block));
    }
    threads_ = threads;
    zero_fill_tails_ = contains_tensor_core_statements(tile->body);
    int64_t block_threads = threads;
    if (tile->producer == TileProducer::Warpgroup) {
      if (!ctx_.device().features.wgmma)
        return ctx_.error_at(node_, "the Tile has a producer warpgroup (warp specialization); device " + ctx_.device().name +
                                        " (" + ctx_.device().arch + ") has no setmaxnreg (sm_90a)");
      if (threads % kWarpgroup != 0)
        return ctx_.error_at(node_, "a Tile with a producer warpgroup has THREAD axes of whole warpgroups: " +
                                        std::to_string(threads) + " threads is not a multiple of 128");
      block_threads = threads + kWarpgroup;
      if (block_threads > ctx_.device().max_threads_per_block)
        return ctx_.error_at(node_, "the Tile's " + std::to_string(threads) + " threads and its producer warpgroup exceed " +
                                        "the " + std::to_string(ctx_.device().max_threads_per_block) +
                                        " threads per block device " + ctx_.device().name + " allows");
      specialized_ = true;
    }

    // Up to three BLOCK axes that fit the grid's dimensions each take one (blockIdx.x, .y, .z in
    // order, the first fastest as in the linear decode); otherwise all are decoded from blockIdx.x.
    std::vector<const TileAxis*> block_axes;
    for (const TileAxis& a : tile->axes)
      if (a.binding == AxisBinding::Block) block_axes.push_back(&a);
    // A cluster's blocks are consecutive in blockIdx.x (rank = blockIdx.x % C): clustered kernels
    // keep one linear grid.
    bool grid_per_axis = block_axes.size() >= 2 && block_axes.size() <= 3 && cluster_ == 1;
    for (size_t i = 0; grid_per_axis && i < block_axes.size(); ++i)
      grid_per_axis = block_axes[i]->extent <= (i == 0 ? kMaxGridX : kMaxGridYZ);
    std::vector<int64_t> grid = {blocks * cluster_, 1, 1};
    if (grid_per_axis)
      for (size_t i = 0; i < block_axes.size(); ++i) grid[i] = block_axes[i]->extent;

    Scope top;
    top.ranges["threadIdx.x"] = Interval{0, block_threads - 1};
    const char* const block_dims[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
    for (size_t d = 0; d < 3; ++d) top.ranges[block_dims[d]] = Interval{0, grid[d] - 1};
    Body lets;
    std::vector<const TileAxis*> thread_axes;
    for (AxisBinding binding : {AxisBinding::Thread, AxisBinding::Block}) {
      int64_t stride = 1, total = binding == AxisBinding::Thread ? threads : blocks;
      Expr hw = Expr::var(binding == AxisBinding::Thread ? "threadIdx.x" : "blockIdx.x");
      if (binding == AxisBinding::Block && cluster_ > 1) hw = hw / cluster_;  // the cluster's index
      for (const TileAxis& a : tile->axes) {
        if (a.binding != binding) continue;
        if (binding == AxisBinding::Block && grid_per_axis) {
          const size_t d = static_cast<size_t>(std::find(block_axes.begin(), block_axes.end(), &a) - block_axes.begin());
          decodes_[a.name] = Expr::var(block_dims[d]);
          continue;
        }
        Expr value = hw / stride;
        if (stride * a.extent < total) value = value % a.extent;  // the slowest axis needs no modulo
        decodes_[a.name] = simplify(value, top.ranges);
        stride *= a.extent;
        if (a.binding == AxisBinding::Thread) thread_axes.push_back(&a);
      }
    }
    for (const TileAxis& a : tile->axes)
      if (a.binding == AxisBinding::Cluster)
        decodes_[a.name] = simplify(Expr::var("blockIdx.x") % cluster_, top.ranges);  // %cluster_ctarank
    for (const TileAxis& a : tile->axes) {
      lets.push_back(Let{a.name, decodes_[a.name]});
      top.ranges[a.name] = Interval{0, a.extent - 1};
    }
    top.uniformity.enter_tile(*tile);  // BLOCK axes are uniform (THREAD and BLOCK are all that reach here)
    // The flat thread id, spelled as the axis when one THREAD axis covers the block.
    tid_ = thread_axes.size() == 1 ? Expr::var(thread_axes[0]->name) : Expr::var("threadIdx.x");

    // Statements around the Tile run in every thread alike (uniform); the Tile body is lowered
    // with the axes in scope.
    Body before, inside, after;
    bool seen_tile = false;
    Scope outer = top;
    for (const Stmt& s : tile_op_.body) {
      if (s.is<Tile>()) {
        seen_tile = true;
        TESSERA_TRY(lower_body(tile->body, outer, inside));
        continue;
      }
      Body& out = seen_tile ? after : before;
      TESSERA_TRY(lower_stmt(s, outer, out));
    }

    // Static __shared__ arrays up to the device's static limit; beyond it, one dynamic array the
    // Smem statements are carved from (up to the opt-in maximum, raised when the kernel loads).
    // The mbarriers are static __shared__ words of their own (8 bytes a slot) beside the arrays.
    const int64_t smem_bytes = smem_layout_bytes(smem_);
    int64_t barrier_bytes = 0;
    for (const Stmt& b : barriers_) barrier_bytes += 8 * b.as<MbarrierInit>()->slots;
    if (smem_bytes + barrier_bytes > ctx_.device().smem_per_block) {
      return ctx_.error_at(node_, "the kernel needs " + std::to_string(smem_bytes + barrier_bytes) +
                                      " bytes of shared memory; device " + ctx_.device().name +
                                      " allows " + std::to_string(ctx_.device().smem_per_block) +
                                      " bytes per block");
    }

    if (specialized_) inside = specialize(std::move(inside), block_threads);
    Body body = smem_;
    body.insert(body.end(), barriers_.begin(), barriers_.end());
    body.insert(body.end(), lets.begin(), lets.end());
    body.insert(body.end(), before.begin(), before.end());
    body.insert(body.end(), inside.begin(), inside.end());
    body.insert(body.end(), after.begin(), after.end());
    // No block exits while another block of its cluster may still read its shared memory.
    if (exchanges_across_cluster_) body.push_back(ClusterSync{});

    auto op = std::make_unique<KernelOp>();
    op->name = tile_op_.name;
    op->grid = grid;
    op->block = {block_threads, 1, 1};
    if (cluster_ > 1) op->cluster = {cluster_, 1, 1};
    op->params = tensor_maps_;
    if (smem_bytes + barrier_bytes > ctx_.device().smem_per_block_static) op->dynamic_smem = smem_bytes;
    op->body = canonicalize_names(body);
    return op;
  }

 private:
  // ---- statement lists ----

  Status lower_body(const Body& in, Scope& scope, Body& out) {
    for (size_t i = 0; i < in.size(); ++i) {
      // A run of consecutive async Stages is one cp.async group (one slab of every operand): the
      // commit follows its last Stage, so AsyncWait(keep=N) counts slabs.
      const auto* next = i + 1 < in.size() ? in[i + 1].as<Stage>() : nullptr;
      commit_after_stage_ = next == nullptr || next->transport != StageTransport::Async;
      // One barrier before a run of Stages in a loop covers every buffer the run refills.
      first_of_stage_run_ = i == 0 || !in[i - 1].is<Stage>();
      TESSERA_TRY(lower_stmt(in[i], scope, out));
    }
    return Status::ok();
  }

  // Lowers `s` into `out`; may extend `scope` (uniform names, renames) for the statements after it.
  // A switch over every kind: a new kind breaks the build here until materialize says what it
  // does with it.
  Status lower_stmt(const Stmt& s, Scope& scope, Body& out) {
    switch (s.kind()) {
      case StmtKind::Stage: return lower_stage(*s.as<Stage>(), s, scope, out);
      case StmtKind::Combine: return lower_combine(*s.as<Combine>(), s, scope, out);
      case StmtKind::AsyncWait: return lower_async_wait(*s.as<AsyncWait>(), s, scope, out);
      case StmtKind::SlabMap: return lower_slab_map(*s.as<SlabMap>(), s, scope, out);
      case StmtKind::Loop: return lower_loop(*s.as<Loop>(), scope, out);
      case StmtKind::StridedLoop: return lower_strided_loop(*s.as<StridedLoop>(), scope, out);
      case StmtKind::Cond: return lower_cond(*s.as<Cond>(), scope, out);
      case StmtKind::Tile: return ctx_.error_at(node_, "a Tile statement is nested in another statement");
      case StmtKind::Accum:
        if (scope.renames.count(s.as<Accum>()->acc)) {
          return ctx_.error_at(node_, "`" + first_line(s) + "` accumulates into " + s.as<Accum>()->acc +
                                          " after its block Combine; materialize cannot lower that");
        }
        return lower_leaf(s, scope, out);
      case StmtKind::Load:
      case StmtKind::Assign:
      case StmtKind::Select:
      case StmtKind::Init:
      case StmtKind::Write:
      // Warp-collective, not block-collective: the tensor-core pass keeps them where every
      // thread of each warp reaches them together (the simulator checks).
      case StmtKind::Fragment:
      case StmtKind::LdMatrix:
      case StmtKind::MmaSync:
      case StmtKind::WgmmaMma:
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
      case StmtKind::WgmmaWait:
        return lower_leaf(s, scope, out);
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
        TESSERA_UNREACHABLE("build refuses kinds outside Tile IR (first_stmt_outside) before lowering");
    }
    return ctx_.error_at(node_, "`" + first_line(s) + "` has an unknown statement kind");
  }

  Status lower_loop(const Loop& st, Scope& scope, Body& out) {
    if (specialized_ && producer_copies_ == nullptr) {
      std::optional<SlabRingLoop> ring = slab_ring_loop(st);
      if (ring && ring->all_tma) return lower_produced_loop(st, scope, out);
    }
    return lower_plain_loop(st, scope, out);
  }

  // A K slab loop over TMA rings in a Tile with a producer warpgroup. The consumers' loop keeps the
  // step and the waits for each slab (its AsyncWait), then frees the slot: the first thread of each
  // consumer warpgroup arrives on the ring's `bar_empty` (count: the consumer warpgroups). The
  // producer's copy of the loop waits until the slot is free (the parity of fill n's previous use,
  // which the first S fills find complete) and issues the slab's copies.
  Status lower_produced_loop(const Loop& st, Scope& scope, Body& out) {
    Body copies, consumer;
    producer_copies_ = &copies;
    produced_ring_.reset();
    Status lowered = lower_plain_loop(st, scope, consumer);
    producer_copies_ = nullptr;
    TESSERA_TRY(lowered);
    TESSERA_INTERNAL_CHECK(produced_ring_.has_value() && consumer.size() == 1 && consumer[0].is<Loop>(),
                           "a slab ring loop lowers to one loop whose Stages filled a ring");
    const TmaFill ring = *produced_ring_;
    const std::string empty = fresh_buffer("bar_empty");
    used_buffers_.insert(empty);
    barriers_.push_back(MbarrierInit{empty, threads_ / kWarpgroup, ring.slots});
    const Expr slot = simplify(ring.fill % Expr::int_(ring.slots));
    Loop loop = *consumer[0].as<Loop>();
    const Expr first_of_warpgroup = Expr::binary(ExprKind::Eq, Expr::var("threadIdx.x") % kWarpgroup, Expr::int_(0));
    loop.body.push_back(Cond{first_of_warpgroup, {MbarrierArrive{empty, slot, 0}}, {}});
    out.push_back(std::move(loop));
    Body produced = {MbarrierWait{empty, slot, simplify((ring.fill / Expr::int_(ring.slots) + Expr::int_(1)) % Expr::int_(2))}};
    produced.insert(produced.end(), copies.begin(), copies.end());
    producer_.push_back(Loop{st.var, rename(st.begin, scope), rename(st.end, scope), LoopRole::None, 0, std::move(produced)});
    return Status::ok();
  }

  // The lowered Tile body of a Tile with a producer warpgroup: `if threadIdx.x < T:` the consumers
  // (registers raised to what the producer gives up), `else:` the producer warpgroup (registers
  // lowered to kProducerRegisters), whose first thread runs the copy loops.
  Body specialize(Body consumer, int64_t block_threads) {
    const int64_t pool = launch_registers_per_thread(block_threads) * block_threads;
    const int64_t consumer_registers =
        std::min<int64_t>(256, (pool - kProducerRegisters * kWarpgroup) / threads_ / 8 * 8);
    consumer.insert(consumer.begin(), SetMaxNReg{RegisterAction::Inc, consumer_registers});
    Body producer = {SetMaxNReg{RegisterAction::Dec, kProducerRegisters},
                     Cond{Expr::binary(ExprKind::Eq, Expr::var("threadIdx.x"), Expr::int_(threads_)), std::move(producer_), {}}};
    return {Cond{Expr::var("threadIdx.x") < Expr::int_(threads_), std::move(consumer), std::move(producer)}};
  }

  // The barrier of the Tile's threads: Sync(), or with a producer warpgroup (which never reaches
  // it) a named barrier of the consumers.
  Stmt block_barrier() const {
    return specialized_ ? Stmt(NamedBarrier{kConsumerBarrier, threads_}) : Stmt(Sync{});
  }

  Status lower_plain_loop(const Loop& st, Scope& scope, Body& out) {
    Expr begin = rename(st.begin, scope), end = rename(st.end, scope);
    Scope inner = nested(scope, {begin, end}, st.var);
    inner.in_loop = true;
    const Expr trips = simplify(end - begin, scope.ranges);
    inner.loops.push_back(LoopFrame{st.var, begin, trips.is(ExprKind::Int) ? std::max<int64_t>(trips.int_value(), 0) : 0});
    bind_range(inner, st.var, begin, end);
    Body body;
    TESSERA_TRY(lower_body(st.body, inner, body));
    out.push_back(Loop{st.var, begin, end, st.role, st.unroll, std::move(body)});
    return Status::ok();
  }

  Status lower_strided_loop(const StridedLoop& st, Scope& scope, Body& out) {
    Expr begin = rename(st.begin, scope), end = rename(st.end, scope), step = rename(st.step, scope);
    Scope inner = nested(scope, {begin, end, step}, st.var);
    inner.in_loop = true;
    inner.loops.push_back(LoopFrame{st.var, begin, 0});
    bind_range(inner, st.var, begin, end);
    Body body;
    TESSERA_TRY(lower_body(st.body, inner, body));
    out.push_back(StridedLoop{st.var, begin, end, step, st.role, st.unroll, std::move(body)});
    return Status::ok();
  }

  Status lower_cond(const Cond& st, Scope& scope, Body& out) {
    Expr cond = rename(st.cond, scope);
    Scope then_scope = nested(scope, {cond}), else_scope = nested(scope, {cond});
    then_scope.in_cond = else_scope.in_cond = true;
    Body then_body, else_body;
    TESSERA_TRY(lower_body(st.then_body, then_scope, then_body));
    TESSERA_TRY(lower_body(st.else_body, else_scope, else_body));
    // A TMA fill under a (uniform) condition is still the buffer's latest: a later AsyncWait names
    // its slab by the fill count, whether or not this trip issued it.
    for (const Scope* branch : {&then_scope, &else_scope})
      for (const auto& [buffer, fill] : branch->tma_fills) scope.tma_fills[buffer] = fill;
    out.push_back(Cond{cond, std::move(then_body), std::move(else_body)});
    return Status::ok();
  }

  // A Loop IR leaf: copied with the renames applied. Values computed from uniform names stay
  // uniform (e.g. the scale computed from a Combine's total), unless computed under
  // thread-dependent control flow.
  Status lower_leaf(const Stmt& s, Scope& scope, Body& out) {
    ExprRenamer renamer(scope.renames);
    Stmt copy = renamer.mutate(s);
    scope.uniformity.define(copy);
    out.push_back(copy);
    return Status::ok();
  }

  // ---- collectives ----

  Status check_collective(const Stmt& s, const Scope& scope) const {
    if (!scope.uniformity.thread_dependent()) return Status::ok();
    return ctx_.error_at(node_, "collective statement `" + first_line(s) +
                                    "` is under a thread-dependent loop or condition; every "
                                    "thread of the block must reach it");
  }

  // A Stage copy's source index at slab coordinates `coords`, and its guard (left undefined when
  // the bounds say no index leaves the source).
  void build_source_index(const Stage& st, const TensorType& type, const Scope& scope, const RangeMap& ranges,
                          const ExprList& coords, ExprList& src_index, Expr& guard) {
    for (int64_t j = 0; j < type.rank(); ++j) {
      Expr idx = rename(st.origin[static_cast<size_t>(j)], scope);
      for (size_t k = 0; k < st.slab.size(); ++k)
        if (st.slab[k].source_dim == j) idx = idx + coords[k] * Expr::int_(st.slab[k].stride);
      idx = simplify(idx, ranges);
      src_index.push_back(idx);
      // Guard only where the bound says the index may leave the source: tails past the end, and
      // slabs that start before it (a load the kernel guards by a predicate, e.g. cat's `x[a - 6]`).
      std::optional<Interval> b = bound_of(idx, ranges);
      auto require = [&guard](Expr in_bounds) {
        guard = guard.defined() ? Expr::binary(ExprKind::And, guard, in_bounds) : in_bounds;
      };
      if (!b || b->lo < 0) require(Expr::int_(0) <= idx);
      if (!b || b->hi >= type.dim(j)) require(idx < Expr::int_(type.dim(j)));
    }
  }

  Status lower_stage(const Stage& st, const Stmt& self, Scope& scope, Body& out) {
    TESSERA_TRY(check_collective(self, scope));
    if (specialized_ && producer_copies_ == nullptr)
      return ctx_.error_at(node_, "`" + first_line(self) + "`: a Tile with a producer warpgroup stages its slabs only in "
                                      "K slab loops over rings of TMA slabs (tessera/ir/slab_ring_loop.h)");
    const Node* src = g_.find(st.buffer);
    if (src == nullptr) return ctx_.error_at(node_, "Stage reads unknown buffer " + st.buffer);
    if (st.transport == StageTransport::Tma) return lower_tma_stage(st, self, src->type, scope, out);
    async_stages_ |= st.transport == StageTransport::Async;
    const TensorType& type = src->type;
    if (st.origin.size() != static_cast<size_t>(type.rank())) {
      return ctx_.error_at(node_, "`" + first_line(self) + "`: the origin has " +
                                      std::to_string(st.origin.size()) + " coordinates, " +
                                      st.buffer + " has rank " + std::to_string(type.rank()));
    }
    if (st.slab.empty()) return ctx_.error_at(node_, "`" + first_line(self) + "` has no slab dims");
    std::vector<int64_t> shape;
    int64_t elems = 1;
    for (const SlabDim& d : st.slab) {
      if (d.extent <= 0 || d.source_dim < 0 || d.source_dim >= type.rank()) {
        return ctx_.error_at(node_, "`" + first_line(self) + "`: bad slab dim " + d.axis);
      }
      shape.push_back(d.extent);
      elems *= d.extent;
    }
    shape.back() += st.pad;
    if (st.slots > 1) shape.insert(shape.begin(), st.slots);
    Smem buffer{st.dst, type.dtype, shape};
    buffer.align = st.align;
    buffer.swizzle = st.swizzle;
    buffer.slots = st.slots;
    TESSERA_TRY(declare_smem(std::move(buffer)));

    // The copy loop: f walks the slab row-major, `width` elements per thread per trip. An async
    // copy moves up to 16 bytes at once when the slab's rows are contiguous in the source and
    // both ends stay aligned.
    std::string f = fresh(st.dst + "_flat");
    const int64_t elem_bytes = dtype_bytes(type.dtype);
    std::vector<int64_t> widths;  // the group sizes the slab's shape allows, widest first
    if (st.transport == StageTransport::Async)
      for (int64_t w : {16 / elem_bytes, 8 / elem_bytes, 4 / elem_bytes})
        if (w > 1 && stage_rows_group(st, type, w) && kSmemAlign % (w * elem_bytes) == 0 &&
            st.align % (w * elem_bytes) == 0)
          widths.push_back(w);
    RangeMap ranges;
    ExprList coords(st.slab.size()), src_index;
    Expr guard;
    auto build = [&](int64_t w) {
      ranges = scope.ranges;
      ranges[f] = Interval{0, elems / w - 1};
      coords.assign(st.slab.size(), Expr());
      src_index.clear();
      guard = Expr();
      const Expr first = w == 1 ? Expr::var(f) : Expr::var(f) * Expr::int_(w);  // the trip's first element
      int64_t stride = 1;
      for (size_t k = st.slab.size(); k-- > 0;) {
        Expr c = first / stride;
        if (k > 0) c = c % st.slab[k].extent;
        coords[k] = simplify(c, ranges);
        stride *= st.slab[k].extent;
      }
      build_source_index(st, type, scope, ranges, coords, src_index, guard);
    };
    // A wide copy needs its first element's source index to be a multiple of the width: with the
    // source's last dimension a multiple of it too, the group is then inside the source exactly
    // when its first element is, so the first element's guard guards the group.
    int64_t width = 1;
    for (int64_t w : widths) {
      build(w);
      const Expr rem = simplify(src_index.back() % Expr::int_(w), ranges);
      if (rem.is(ExprKind::Int) && rem.int_value() == 0) {
        width = w;
        break;
      }
    }
    if (width == 1) build(1);

      ExprList dst_index = coords;
    if (st.slots > 1) {
      Expr slot = simplify(rename(st.slot, scope), scope.ranges);
      std::optional<Interval> b = bound_of(slot, scope.ranges);
      if (!b || b->lo < 0 || b->hi >= st.slots)
        return ctx_.error_at(node_, "`" + first_line(self) + "`: the slot " + slot.str() +
                                        " may leave the ring's 0.." + std::to_string(st.slots - 1));
      dst_index.insert(dst_index.begin(), slot);
    }
    Body copy;
    // cp.async moves 4 bytes at least: an async Stage of 2-byte elements whose start could not be
    // proven aligned for a group is copied synchronously (the run's AsyncWait lowers to a wait and
    // a Sync, which is then its barrier).
    const bool async_copy = st.transport == StageTransport::Async && width * elem_bytes >= 4;
    if (async_copy) {
      copy.push_back(CpAsyncCopy{st.dst, dst_index, st.buffer, src_index, width * elem_bytes});
    } else {  // sync, buffered: the data is visible after the Stage
      std::string value = fresh("in_" + st.dst);
      copy.push_back(Load{value, st.buffer, src_index, ValueType::scalar(type.dtype)});
      copy.push_back(Write{st.dst, dst_index, Expr::value(value)});
    }
    if (guard.defined()) {
      // Tensor cores read whole slabs (ldmatrix, wgmma descriptors): the elements past the source
      // (a tile's rows past M) are zeros there, as TMA fills them, rather than left unwritten.
      Body outside;
      if (zero_fill_tails_) {
        const std::string zero = fresh("zero_" + st.dst);
        outside.push_back(Assign{zero, ElementwiseFn::Cast, {Expr::float_(0.0)}, ValueType::scalar(type.dtype)});
        for (int64_t j = 0; j < width; ++j) {
          ExprList at = dst_index;
          at.back() = simplify(at.back() + Expr::int_(j), ranges);
          outside.push_back(Write{st.dst, std::move(at), Expr::value(zero)});
        }
      }
      copy = {Cond{guard, std::move(copy), std::move(outside)}};
    }

    if (scope.in_loop && first_of_stage_run_) out.push_back(Sync{});
    out.push_back(StridedLoop{f, tid_, Expr::int_(elems / width), Expr::int_(threads_), LoopRole::None, 0, std::move(copy)});
    if (st.transport == StageTransport::Async) {
      if (commit_after_stage_) out.push_back(CpAsyncCommit{});
    } else {
      out.push_back(Sync{});
    }
    return Status::ok();
  }

  // A TMA Stage: thread 0 announces the slab's bytes on the Stage's barrier (one per ring slot)
  // and starts the box copy. The next AsyncWait(keep=N) waits for fill F - N of the buffer, F this
  // Stage's fill count: fill n of a ring of S slots lands in slot n % S, whose barrier completes its
  // phase n / S then (parity n / S % 2). A ring's Stage fills slot `n % S` (double_buffer and
  // pipeline_k_outer write it so), which gives n; a single buffer counts its fills from the
  // enclosing loops (constant trip counts, no condition around it).
  Status lower_tma_stage(const Stage& st, const Stmt& self, const TensorType& type, Scope& scope, Body& out) {
    auto refuse = [&](const std::string& why) {
      return ctx_.error_at(node_, "`" + first_line(self) + "`: a tma Stage " + why);
    };
    Expected<TmaBoxes> boxes = stage_tma_boxes(st, type);
    if (!boxes) return refuse("cannot be copied by TMA: " + boxes.error().message);
    Expr slot = simplify(rename(st.slot, scope), scope.ranges);
    Expr fill = Expr::int_(0);
    if (st.slots > 1) {
      // The slot as written (the ranges may fold `n % S` to `n` where n < S).
      const Expr written = simplify(rename(st.slot, scope));
      if (!written.is(ExprKind::Mod) || !structurally_equal(written.operand(1), Expr::int_(st.slots)))
        return refuse("fills slot " + written.str() + " of its ring of " + std::to_string(st.slots) +
                      ", not a fill count modulo " + std::to_string(st.slots));
      fill = simplify(written.operand(0), scope.ranges);
    } else {
      if (scope.in_cond) return refuse("under a condition cannot count its fills (its barrier's phase)");
      // Earlier Stages of the buffer (the chunk loops of a row's passes, one after another) filled
      // it `before` times: this Stage's fills continue the count.
      std::vector<std::string> loops;
      int64_t fills = 1;
      for (const LoopFrame& l : scope.loops) {
        if (l.trips <= 0)
          return refuse("inside loop " + l.var + " cannot count its fills: the loop needs a constant trip count and step 1");
        fill = fill * Expr::int_(l.trips) + (Expr::var(l.var) - l.begin);
        fills *= l.trips;
        loops.push_back(l.var);
      }
      int64_t& before = tma_fills_before_[st.dst];
      std::vector<std::string>& last_loops = tma_stage_loops_[st.dst];
      if (before > 0 && !loops.empty() && !last_loops.empty() && last_loops.front() == loops.front())
        return refuse("shares loop " + loops.front() + " with another Stage of " + st.dst +
                      ": their fills interleave, and the barrier's phases cannot be counted");
      fill = simplify(fill + Expr::int_(before), scope.ranges);
      before += fills;
      last_loops = std::move(loops);
    }

    // The buffer: the slab (and the ring's slot dim), aligned for the copy and its swizzle.
    std::vector<int64_t> shape;
    int64_t elems = 1;
    for (const SlabDim& d : st.slab) {
      shape.push_back(d.extent);
      elems *= d.extent;
    }
    if (st.slots > 1) shape.insert(shape.begin(), st.slots);
    Smem buffer{st.dst, type.dtype, shape};
    buffer.align = std::max({st.align, int64_t{128}, 8 * swizzle_span_bytes(st.swizzle)});
    buffer.swizzle = st.swizzle;
    buffer.slots = st.slots;
    TESSERA_TRY(declare_smem(std::move(buffer)));

    // One tensor map and one barrier ring per staged buffer, however many Stages fill it.
    auto [names, fresh_dst] = tma_names_.try_emplace(st.dst);
    if (fresh_dst) {
      names->second.first = fresh_buffer("tmap_" + st.buffer);
      used_buffers_.insert(names->second.first);
      names->second.second = fresh_buffer("bar_" + st.dst);
      used_buffers_.insert(names->second.second);
      KernelParam map;
      map.name = names->second.first;
      map.kind = ParamKind::TensorMap;
      map.dtype = type.dtype;
      map.tensor_map = TensorMapSpec{st.buffer, boxes->box, st.swizzle, TensorMapOobFill::Zero, {}};
      tensor_maps_.push_back(std::move(map));
      barriers_.push_back(MbarrierInit{names->second.second, 1, st.slots});
    }
    const std::string& tmap = names->second.first;
    const std::string& bar = names->second.second;

    // Box b reads source_step * b elements along the step dim and lands slab_step * b along the
    // slab's first dim.
    const std::string b = fresh(st.dst + "_box");
    const Expr step = boxes->copies > 1 ? Expr::var(b) * Expr::int_(boxes->source_step) : Expr::int_(0);
    const Expr landing = boxes->copies > 1 ? Expr::var(b) * Expr::int_(boxes->slab_step) : Expr::int_(0);
    RangeMap box_ranges = scope.ranges;
    box_ranges[b] = Interval{0, boxes->copies - 1};
    ExprList coords;
    for (size_t d = 0; d < st.origin.size(); ++d) {
      Expr o = rename(st.origin[d], scope);
      if (static_cast<int64_t>(d) == boxes->step_dim) o = o + step;
      coords.push_back(simplify(o, box_ranges));
    }
    ExprList dst_index(st.slab.size(), Expr::int_(0));
    dst_index[0] = simplify(landing, box_ranges);
    if (st.slots > 1) dst_index.insert(dst_index.begin(), slot);
    const Expr bar_slot = st.slots > 1 ? slot : Expr::int_(0);
    Body copy = {TmaLoad{st.dst, dst_index, tmap, coords, bar, bar_slot}};
    if (boxes->copies > 1) copy = {Loop{b, Expr::int_(0), Expr::int_(boxes->copies), LoopRole::None, 0, std::move(copy)}};
    copy.insert(copy.begin(), MbarrierArrive{bar, bar_slot, elems * dtype_bytes(type.dtype)});

    // A ring's Stage inside a loop of n trips fills that loop's slabs 0..n-1: a fill count past
    // them (a pipeline running ahead of its last slab) is not issued, as nothing would wait for it
    // before the block ends (the guard appears only where the ranges cannot prove it).
    Expr issue = Expr::binary(ExprKind::Eq, tid_, Expr::int_(0));
    if (st.slots > 1 && !scope.loops.empty() && scope.loops.back().trips > 0) {
      const int64_t n = scope.loops.back().trips;
      std::optional<Interval> b = bound_of(fill, scope.ranges);
      if (!b || b->hi >= n) issue = Expr::binary(ExprKind::And, issue, fill < Expr::int_(n));
    }
    if (producer_copies_ != nullptr) {  // the producer issues it, after the consumers freed the slot
      if (!produced_ring_.has_value()) produced_ring_ = TmaFill{bar, st.slots, fill};
      producer_copies_->insert(producer_copies_->end(), copy.begin(), copy.end());
      scope.tma_fills[st.dst] = TmaFill{bar, st.slots, fill};
      return Status::ok();
    }
    if (scope.in_loop && first_of_stage_run_) out.push_back(Sync{});  // last fill's readers are done
    // The Stages of a run that issue under the same condition share one branch.
    if (!first_of_stage_run_ && !out.empty()) {
      if (const auto* previous = out.back().as<Cond>();
          previous != nullptr && previous->else_body.empty() && structurally_equal(previous->cond, issue)) {
        Cond merged = *previous;
        merged.then_body.insert(merged.then_body.end(), copy.begin(), copy.end());
        out.back() = Stmt(std::move(merged));
        scope.tma_fills[st.dst] = TmaFill{bar, st.slots, fill};
        return Status::ok();
      }
    }
    out.push_back(Cond{issue, std::move(copy), {}});
    scope.tma_fills[st.dst] = TmaFill{bar, st.slots, fill};
    return Status::ok();
  }

  // SlabMap: the block's threads share the slab's elements, `StridedLoop(f = tid; < elems; += T)`
  // running the body, then a barrier makes the slab visible to every thread; inside a loop a
  // barrier first, so last trip's readers are done before the slab is rewritten.
  Status lower_slab_map(const SlabMap& st, const Stmt& self, Scope& scope, Body& out) {
    TESSERA_TRY(check_collective(self, scope));
    int64_t elems = 1;
    for (int64_t d : st.shape) {
      if (d <= 0) return ctx_.error_at(node_, "`" + first_line(self) + "`: a slab dimension of " + std::to_string(d));
      elems *= d;
    }
    TESSERA_TRY(declare_smem(Smem{st.dst, st.dtype, st.shape}));
    if (scope.in_loop && (out.empty() || !(out.back().is<Sync>() || out.back().is<NamedBarrier>())))
      out.push_back(block_barrier());
    const Expr begin = tid_, end = Expr::int_(elems), step = Expr::int_(threads_);
    Scope inner = nested(scope, {begin, end, step}, st.var);
    inner.in_loop = true;
    inner.loops.push_back(LoopFrame{st.var, begin, 0});
    inner.ranges[st.var] = Interval{0, elems - 1};
    Body body;
    TESSERA_TRY(lower_body(st.body, inner, body));
    out.push_back(StridedLoop{st.var, begin, end, step, LoopRole::None, 0, std::move(body)});
    out.push_back(block_barrier());
    return Status::ok();
  }

  // AsyncWait(keep=N): the cp.async groups but the newest N (CpAsyncWait, then a barrier), and for
  // every TMA-staged buffer filled in scope, the barrier phase of its fill F - N (F its latest).
  Status lower_async_wait(const AsyncWait& st, const Stmt& self, Scope& scope, Body& out) {
    TESSERA_TRY(check_collective(self, scope));
    for (const auto& [buffer, f] : scope.tma_fills) {
      const Expr waited = simplify(f.fill - Expr::int_(st.keep), scope.ranges);
      const Expr slot = f.slots > 1 ? simplify(waited % Expr::int_(f.slots), scope.ranges) : Expr::int_(0);
      out.push_back(MbarrierWait{f.barrier, slot, simplify(waited / Expr::int_(f.slots) % Expr::int_(2), scope.ranges)});
    }
    const bool tma_only = !scope.tma_fills.empty() && !async_stages_;
    scope.tma_fills.clear();
    if (tma_only) return Status::ok();  // the waits make the slabs visible to every thread
    out.push_back(CpAsyncWait{st.keep});
    out.push_back(Sync{});
    return Status::ok();
  }

  Status lower_combine(const Combine& st, const Stmt& self, Scope& scope, Body& out) {
    TESSERA_TRY(check_collective(self, scope));
    if (scope.renames.count(st.acc)) {
      return ctx_.error_at(node_, "`" + first_line(self) + "` combines " + st.acc +
                                      " a second time after its block Combine");
    }
    const bool block_scope = st.scope != CombineScope::Warp;  // a cluster Combine starts with its block's
    if (block_scope && specialized_)
      return ctx_.error_at(node_, "`" + first_line(self) + "`: a Tile with a producer warpgroup combines only within warps "
                                      "(a block Combine synchronizes the whole block, which the producer never joins)");
    int64_t t = threads_;
    if (t < kWarp ? !is_pow2(t) : t % kWarp != 0) {
      return ctx_.error_at(node_, "`" + first_line(self) + "` over " + std::to_string(t) +
                                      " threads: materialize needs a power of two below " +
                                      std::to_string(kWarp) + " or a multiple of it");
    }
    int64_t width = std::min(t, kWarp);
    const ValueType acc_type = accumulator_type(st.acc);
    if (!acc_type.is_scalar()) {
      return ctx_.error_at(node_, "`" + first_line(self) + "`: materialize combines scalar accumulators only, not " +
                                      acc_type.str());
    }
    for (int64_t offset = kWarp / 2; offset >= 1; offset /= 2) {
      if (offset >= width) continue;
      std::string v = fresh(st.acc + "_shfl");
      out.push_back(WarpShuffle{v, Expr::value(st.acc), ShuffleMode::Xor, offset, width, acc_type});
      out.push_back(Accum{st.acc, st.op, Expr::value(v)});
    }
    if (block_scope && t > kWarp) combine_warp_totals(st, scope, acc_type, out);
    if (st.scope == CombineScope::Cluster) return combine_across_cluster(st, self, scope, acc_type, out);
    return Status::ok();
  }

  // The warp totals of a block Combine meet in shared memory (see the header comment).
  void combine_warp_totals(const Combine& st, Scope& scope, const ValueType& acc_type, Body& out) {
    // Warp totals meet in shared memory; a tree over the T/32 slots leaves the total in slot 0.
    int64_t warps = threads_ / kWarp;
    std::string buf = fresh_buffer(st.acc + "_smem");
    // The scratch holds the accumulator's own type (a fresh name: declare_smem cannot refuse it).
    (void)declare_smem(Smem{buf, acc_type.dtype, {warps}});
    out.push_back(Cond{Expr::binary(ExprKind::Eq, tid_ % kWarp, Expr::int_(0)),
                       {Write{buf, {tid_ / kWarp}, Expr::value(st.acc)}},
                       {}});
    out.push_back(Sync{});
    out.push_back(TreeHalve{buf, tid_, warps, st.op});
    std::string total = fresh(st.acc + "_b");
    out.push_back(Load{total, buf, {Expr::int_(0)}, acc_type});
    if (scope.in_loop) out.push_back(Sync{});
    scope.renames[st.acc] = Expr::value(total);
    scope.uniformity.mark_uniform(total);
  }

  // A cluster Combine, after its block's: thread 0 publishes the block's total in a one-slot Smem,
  // the cluster waits (ClusterSync), and every thread folds the C totals in rank order from the
  // blocks' shared memory (DsmemLoad), so every block of the cluster holds the same value. Each
  // Combine has its own slot, never rewritten: the kernel's last ClusterSync (build) keeps the
  // slots alive until every block has read them.
  Status combine_across_cluster(const Combine& st, const Stmt& self, Scope& scope, const ValueType& acc_type, Body& out) {
    if (cluster_ <= 1)
      return ctx_.error_at(node_, "`" + first_line(self) + "` combines across a cluster, but the Tile has no CLUSTER axis");
    if (scope.in_loop || scope.in_cond)
      return ctx_.error_at(node_, "`" + first_line(self) + "` combines across a cluster under a loop or condition; it "
                                      "must stand at the Tile body's top level");
    const Expr block_total = rename(Expr::value(st.acc), scope);
    const std::string slot = fresh_buffer(st.acc + "_cluster");
    (void)declare_smem(Smem{slot, acc_type.dtype, {1}});
    out.push_back(Cond{Expr::binary(ExprKind::Eq, tid_, Expr::int_(0)), {Write{slot, {Expr::int_(0)}, block_total}}, {}});
    out.push_back(ClusterSync{});
    const std::string total = fresh(st.acc + "_c");
    const std::string rank = fresh("rank");
    const std::string part = fresh(st.acc + "_part");
    out.push_back(Init{total, combine_identity(st.op, acc_type.dtype), acc_type});
    out.push_back(Loop{rank, Expr::int_(0), Expr::int_(cluster_), LoopRole::None, 0,
                       {DsmemLoad{part, slot, {Expr::int_(0)}, Expr::var(rank), acc_type},
                        Accum{total, st.op, Expr::value(part)}}});
    scope.renames[st.acc] = Expr::value(total);
    scope.uniformity.mark_uniform(total);
    exchanges_across_cluster_ = true;
    return Status::ok();
  }

  // ---- helpers ----

  Status declare_smem(Smem sm) {
    for (const Stmt& s : smem_) {
      const auto* have = s.as<Smem>();
      if (have->name != sm.name) continue;
      if (have->dtype == sm.dtype && have->shape == sm.shape && have->align == sm.align && have->swizzle == sm.swizzle)
        return Status::ok();
      return ctx_.error_at(node_, "two Stages declare " + sm.name + " with different shapes or layouts");
    }
    used_buffers_.insert(sm.name);
    smem_.push_back(std::move(sm));
    return Status::ok();
  }

  // A kernel-local name no statement of this kernel uses: the canonical renamer replaces value
  // names, but buffer names stay, so they must not clash with graph buffers.
  std::string fresh(const std::string& base) { return base + "_" + std::to_string(counter_++); }
  std::string fresh_buffer(const std::string& base) {
    std::string name = base;
    for (int i = 1; used_buffers_.count(name); ++i) name = base + "_" + std::to_string(i);
    return name;
  }

  static Expr rename(const Expr& e, const Scope& scope) {
    return scope.renames.empty() ? e : substitute(e, scope.renames);
  }

  // A nested scope is thread-dependent when its loop bounds / condition are (ir/uniformity.h).
  static Scope nested(const Scope& scope, const ExprList& control, const std::string& var = {}) {
    Scope inner = scope;
    inner.uniformity = scope.uniformity.nested(control, var);
    return inner;
  }

  // Accumulator names are unique in a kernel (canonical names), so one map serves every scope.
  void collect_accumulator_types(const Body& body) {
    struct Collector final : StmtVisitor {
      std::map<std::string, ValueType>* out = nullptr;
      void visit_Init(const Init& s) override { (*out)[s.acc] = s.type; }
    } collector;
    collector.out = &acc_types_;
    collector.visit(body);
  }

  ValueType accumulator_type(const std::string& acc) const {
    auto it = acc_types_.find(acc);
    return it == acc_types_.end() ? ValueType{} : it->second;
  }

  static void bind_range(Scope& scope, const std::string& var, const Expr& begin, const Expr& end) {
    std::optional<Interval> b = bound_of(begin, scope.ranges), e = bound_of(end, scope.ranges);
    if (b && e && e->hi - 1 >= b->lo) {
      scope.ranges[var] = Interval{b->lo, e->hi - 1};
    } else {
      scope.ranges.erase(var);
    }
  }

  const Graph& g_;
  const Node& node_;
  const TileOp& tile_op_;
  PassContext& ctx_;
  int64_t threads_ = 1;
  int64_t cluster_ = 1;                    // blocks per cluster (the CLUSTER axis extent), 1 without one
  bool exchanges_across_cluster_ = false;  // a cluster Combine read other blocks' shared memory
  Expr tid_;
  std::map<std::string, Expr> decodes_;
  std::set<std::string> used_buffers_;
  std::map<std::string, ValueType> acc_types_;
  Body smem_;
  int counter_ = 0;
  bool commit_after_stage_ = true;  // the Stage being lowered ends its run of async Stages
  bool async_stages_ = false;       // some Stage of the kernel is async (its AsyncWaits wait for cp.async)
  std::map<std::string, std::pair<std::string, std::string>> tma_names_;  // staged buffer -> (tensor map, barrier)
  std::map<std::string, int64_t> tma_fills_before_;  // single TMA buffer -> fills by the Stages lowered so far
  std::map<std::string, std::vector<std::string>> tma_stage_loops_;  // ... and the loops around the last one
  std::vector<KernelParam> tensor_maps_;  // the kernel's tensor-map parameters, in order of first use
  Body barriers_;                         // their MbarrierInits (top level, after the Smem)
  // A producer warpgroup (Tile producer=warpgroup): its copy loops, where the Stages of the slab
  // ring loop being lowered put their copies, and that loop's ring (the first Stage's fill).
  bool specialized_ = false;
  bool zero_fill_tails_ = false;  // a tensor-core kernel: guarded copies write zeros outside the source
  Body producer_;
  Body* producer_copies_ = nullptr;
  std::optional<TmaFill> produced_ring_;
  bool first_of_stage_run_ = true;  // the Stage being lowered starts a run of Stages
};

class MaterializePass final : public TilePass {
 public:
  std::string_view name() const override { return "materialize"; }
  std::string_view summary() const override {
    return "lower Tile IR to Kernel IR: shared memory, copies, barriers, shuffles, launch geometry";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Kernel}; }
  bool handles_tensor_cores() const override { return true; }  // fragments lower (or unroll) as they are

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile&, PassContext& ctx) override {
    const Graph& g = ctx.graph();
    Node* n = &node;
    const TileOp* tile = &tile_op;
    KernelBuilder builder(g, *n, *tile, ctx);
    Expected<std::unique_ptr<KernelOp>> kernel = builder.build();
    if (!kernel) return kernel.error();
    n->op = std::move(*kernel);
    return Status::ok();
  }
};

void register_materialize(Registry& r) {
  r.add_pass("materialize", [] { return std::make_unique<MaterializePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("materialize", "1.0.0", ::tessera::register_materialize)

// Stmt: the statement tree shared by Loop IR, Tile IR and Kernel IR.
//
// A kernel body is a `Body` (a vector of Stmt). A Stmt is an immutable, reference-counted node
// holding one of the statement structs below. Rewrites build new trees (see StmtMutator), sharing
// unchanged subtrees.
//
// TESSERA_STMT_KINDS is the one list of statement kinds. It generates the StmtKind enum, the
// std::variant behind Stmt, the visitor and mutator hooks, and the dispatch tables of the printer,
// JSON (de)serializer, structural equality and structural hash. Each struct lists its fields once,
// in `reflect`, together with the field's role (does it define a local name, reference one, name a
// buffer, or is it plain data); the generic machinery and the canonical renamer read those roles.
//
// Adding a statement kind = add the struct here, add it to TESSERA_STMT_KINDS and to
// stmt_kind_traits, then give it a case in every consumer that switches over StmtKind (printer,
// parser, CUDA emitter, simulator, Loop IR interpreter, cost model): the build fails until each has
// one. docs/architecture.md ("Adding a statement kind") lists the files.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/expr.h"
#include "tessera/ir/stmt_enums.h"
#include "tessera/ir/type.h"
#include "tessera/support/status.h"

namespace tessera {

class Stmt;
using Body = std::vector<Stmt>;

// What a field means to the generic machinery.
enum class FieldRole : uint8_t {
  Data,       // plain data: op names, modes, sizes
  DefAxis,    // binds a loop/thread axis        -> canonical name a0, a1, ...
  DefInput,   // binds a value loaded from memory -> in0, in1, ...
  DefValue,   // binds a computed SSA value       -> v0, v1, ...
  DefAcc,     // binds an accumulator             -> acc0, acc1, ...
  DefBuffer,  // declares a kernel-local buffer (shared memory, barrier, TMA map); keeps its name
  DefFragment,  // declares a register array of tensor-core operand fragments -> frag0, frag1, ...
  UseName,    // refers to a name bound by a Def* field (renamed together with it)
  UseAcc,     // refers to an accumulator: a name a DefAcc field binds (Accum, Combine, TreeHalve)
  UseFragment,  // refers to a fragment array: a name a DefFragment field binds (LdMatrix, MmaSync)
  UseBuffer,  // refers to a buffer: a graph node id or a DefBuffer
  UseTensorMap,  // refers to a tensor-map parameter of the kernel (TmaLoad's descriptor)
  Label,      // mentions a bound name for display only (renamed with it, never checked)
};

// What each role means to the generic walkers, declared once: they ask these instead of listing
// roles, so a new role is described here (the switch has no default) and nowhere else.
struct FieldRoleTraits {
  bool binds;          // defines a name in the enclosing scope (every Def*)
  bool renamed;        // canonical renaming gives it a fresh name (the Def*s of local values)
  bool refers_to_name; // names what a Def* bound in scope (renamed with it)
  bool refers_to_buffer;  // names a graph buffer, a declared buffer or a kernel parameter
};
constexpr FieldRoleTraits field_role_traits(FieldRole r) {
  switch (r) {
    //                                        binds  renamed name   buffer
    case FieldRole::Data: return              {false, false, false, false};
    case FieldRole::DefAxis: return           {true,  true,  false, false};
    case FieldRole::DefInput: return          {true,  true,  false, false};
    case FieldRole::DefValue: return          {true,  true,  false, false};
    case FieldRole::DefAcc: return            {true,  true,  false, false};
    case FieldRole::DefBuffer: return         {true,  false, false, false};
    case FieldRole::DefFragment: return       {true,  true,  false, false};
    case FieldRole::UseName: return           {false, false, true,  false};
    case FieldRole::UseAcc: return            {false, false, true,  false};
    case FieldRole::UseFragment: return       {false, false, true,  false};
    case FieldRole::UseBuffer: return         {false, false, false, true};
    case FieldRole::UseTensorMap: return      {false, false, false, true};
    case FieldRole::Label: return             {false, false, false, false};
  }
  return {false, false, false, false};  // unreachable for a valid role
}

// Shared-memory arrays (Smem, and the buffer a Stage declares) start on `align` bytes: a power of
// two in [kSmemAlign, kSmemMaxAlign]. The default suits cp.async of 16 bytes and float4 accesses;
// TMA boxes and swizzled layouts need more (the verifier states the swizzle rule).
inline constexpr int64_t kSmemAlign = 16;
inline constexpr int64_t kSmemMaxAlign = 1024;

// One axis of a Tile: `a0:256=THREAD`.
struct TileAxis {
  std::string name;
  int64_t extent = 0;
  AxisBinding binding = AxisBinding::Parallel;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("name", s.name, FieldRole::DefAxis);
    f("extent", s.extent, FieldRole::Data);
    f("binding", s.binding, FieldRole::Data);
  }
};

// One dimension of a staged slab: `a2:2048@2` = axis a2 covers 2048 elements of source dim 2.
// `a5:4@1*32`: 4 elements 32 apart along source dim 1 (stride 32, printed when not 1). Two dims
// of one source dim split it: `slab=(a5:4@1*32, a4:32@0, a6:32@1)` holds 128 columns of a 32-row
// slab as 4 blocks of 32 (split_inner_for_swizzle lays slabs out so); the source index along a
// dim is the origin plus each of its slab dims' index times its stride.
struct SlabDim {
  std::string axis;
  int64_t extent = 0;
  int64_t source_dim = 0;
  int64_t stride = 1;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("axis", s.axis, FieldRole::Label);
    f("extent", s.extent, FieldRole::Data);
    f("source_dim", s.source_dim, FieldRole::Data);
    f("stride", s.stride, FieldRole::Data);
  }
};

// ---- Loop IR ---------------------------------------------------------------------------------

// `in0 = load x[a0, a2]`; `bf16 in0 = load x[a0, a2]` (the type prefix is printed unless f32)
struct Load {
  std::string dst, buffer;
  ExprList index;
  ValueType type = {};  // the buffer's storage dtype
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::DefInput);
    f("buffer", s.buffer, FieldRole::UseBuffer);
    f("index", s.index, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
  }
};

// `v0 = add(in1, in0)`: an elementwise function applied to values or literals.
struct Assign {
  std::string dst;
  ElementwiseFn op = ElementwiseFn::Identity;
  ExprList args;
  ValueType type = {};  // the result type
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::DefValue);
    f("op", s.op, FieldRole::Data);
    f("args", s.args, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
  }
};

// `v3 = select(a1 < 4, in0, in1)`
struct Select {
  std::string dst;
  Expr cond, then_value, else_value;
  ValueType type = {};
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::DefValue);
    f("cond", s.cond, FieldRole::Data);
    f("then_value", s.then_value, FieldRole::Data);
    f("else_value", s.else_value, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
  }
};

// `acc0 = init(0.0)`: declares an accumulator and its identity value;
// `f32[4][8] acc0 = init(0.0)` declares a register array with every element set to the value.
struct Init {
  std::string acc;
  Expr value;
  ValueType type = {};  // the accumulator's type (an array for a register array)
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("acc", s.acc, FieldRole::DefAcc);
    f("value", s.value, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
  }
};

// The identity of `op` for an accumulator of `dtype` (0, 1, the lowest or the highest value): what
// an accumulator starts from so that combining partial results (threads, splits) in any grouping
// equals one pass over every value.
Expr combine_identity(CombineFn op, DType dtype);

// `acc0 <- add(acc0, v1)`; for a register array, one element: `acc0[1, a3] <- add(acc0[1, a3], v1)`
struct Accum {
  std::string acc;
  CombineFn op = CombineFn::Add;
  Expr value;
  ExprList index = {};  // the element of a register array accumulator; empty for a scalar
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("acc", s.acc, FieldRole::UseAcc);
    f("op", s.op, FieldRole::Data);
    f("value", s.value, FieldRole::Data);
    f("index", s.index, FieldRole::Data);
  }
};

// `relu[a0, a1] = v2`
struct Write {
  std::string buffer;
  ExprList index;
  Expr value;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("buffer", s.buffer, FieldRole::UseBuffer);
    f("index", s.index, FieldRole::Data);
    f("value", s.value, FieldRole::Data);
  }
};

// `for a0 in 0..16:  # free` (role: free | reduce; unroll: 0 = leave to the compiler, N = unroll by N)
struct Loop {
  std::string var;
  Expr begin, end;
  LoopRole role = LoopRole::None;
  int64_t unroll = 0;
  Body body;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("var", s.var, FieldRole::DefAxis);
    f("begin", s.begin, FieldRole::Data);
    f("end", s.end, FieldRole::Data);
    f("role", s.role, FieldRole::Data);
    f("unroll", s.unroll, FieldRole::Data);
    f("body", s.body, FieldRole::Data);
  }
};

// `if a0 < 16:` ... `else:` ...
struct Cond {
  Expr cond;
  Body then_body, else_body;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("cond", s.cond, FieldRole::Data);
    f("then_body", s.then_body, FieldRole::Data);
    f("else_body", s.else_body, FieldRole::Data);
  }
};

// ---- Tile IR ---------------------------------------------------------------------------------

// `Tile(axes=(a0:256=THREAD, a1:32=BLOCK)):` the parallel decomposition of a kernel.
// `Tile(axes=(...), producer=warpgroup):` its TMA Stages are issued by a producer warpgroup added
// to the block, which runs ahead of the THREAD axes' warpgroups by up to a ring's slots (warp
// specialization; materialize lowers it, docs/ir.md "Warp specialization").
struct Tile {
  std::vector<TileAxis> axes;
  Body body;
  TileProducer producer = TileProducer::None;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("axes", s.axes, FieldRole::Data);
    f("body", s.body, FieldRole::Data);
    f("producer", s.producer, FieldRole::Data);
  }
};

// `StridedLoop(a2 = a0; < 2048; += 256):  # reduce`
struct StridedLoop {
  std::string var;
  Expr begin, end, step;
  LoopRole role = LoopRole::None;
  int64_t unroll = 0;
  Body body;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("var", s.var, FieldRole::DefAxis);
    f("begin", s.begin, FieldRole::Data);
    f("end", s.end, FieldRole::Data);
    f("step", s.step, FieldRole::Data);
    f("role", s.role, FieldRole::Data);
    f("unroll", s.unroll, FieldRole::Data);
    f("body", s.body, FieldRole::Data);
  }
};

// `x_smem = Stage(x, origin=(0, a1, 0), slab=(a2:2048@2)) async`
// transport: sync | buffered | async | tma.  pad: extra elements per staged row (bank conflicts).
// align, swizzle: the shared buffer's layout (`align=1024 swizzle=128B`, printed when not the
// default), carried to the Smem that materialize declares.
// slots, slot: a ring of `slots` slabs (`slab=(...), slot=a3 % 2, slots=2`, printed when slots > 1):
// the shared buffer holds `slots` slabs one after another, this Stage fills slab number `slot`
// (a block-uniform expression in [0, slots)), and every load of the buffer names the slot as its
// first index (`load x_smem[a3 % 2, a4, a0]`). slots = 1 is a plain slab: slot 0, loads without
// the slot index.
struct Stage {
  std::string dst, buffer;
  ExprList origin;
  std::vector<SlabDim> slab;
  StageTransport transport = StageTransport::Sync;
  int64_t pad = 0;
  int64_t align = kSmemAlign;               // the shared buffer's layout, as on Smem (materialize
  SmemSwizzle swizzle = SmemSwizzle::None;  // declares the buffer with both)
  int64_t slots = 1;                        // the ring's slab count (1 = no ring)
  Expr slot = Expr::int_(0);                // the slab this Stage fills, in [0, slots)
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::DefBuffer);
    f("buffer", s.buffer, FieldRole::UseBuffer);
    f("origin", s.origin, FieldRole::Data);
    f("slab", s.slab, FieldRole::Data);
    f("transport", s.transport, FieldRole::Data);
    f("pad", s.pad, FieldRole::Data);
    f("align", s.align, FieldRole::Data);
    f("swizzle", s.swizzle, FieldRole::Data);
    f("slots", s.slots, FieldRole::Data);
    f("slot", s.slot, FieldRole::Data);
  }
};

// Whether a Stage of a `source` tensor can copy its slab rows in groups of `w` consecutive
// elements: its innermost slab dim runs along the source's last dim, and `w` divides that dim's
// extent, the padded row the Smem holds and the source's last dimension. (Whether a group's start
// is aligned depends on the origin: the lowering proves that where it places the copy.) async_copy
// asks it to know whether a 2-byte slab can use cp.async; materialize to pick the copy width.
bool stage_rows_group(const Stage& s, const TensorType& source, int64_t w);

// The TMA box copies that move a Stage's slab from its `source` tensor: `copies` boxes of `box`
// (one size per source dim, outermost first: the slab's extent along it, 1 where no slab dim runs)
// along the slab's first dim, box b reading from `b * source_step` source elements along source
// dim `step_dim` past the origin and landing at index `b * slab_step` of the slab's first dim.
// A first dim over 256 elements is cut into the fewest equal boxes of at most 256 that tile it
// (2048 -> 8 boxes of 256, source_step = slab_step = 256); a first dim that splits the innermost
// source dim (`slab=(a5:4@1*32, a4:32@0, a6:32@1)`, stride = the inner extent) takes one box per
// block of columns (4 boxes of (32, 32), source_step 32, slab_step 1); the others fit one box.
struct TmaBoxes {
  std::vector<int64_t> box;
  int64_t copies = 1;
  int64_t step_dim = 0;
  int64_t source_step = 0;
  int64_t slab_step = 0;
};

// The boxes, or why no TMA copies can move the slab as the Stage lays it out: its slab dims not in
// the source's dim order (but a first dim splitting the innermost source dim, as above), a pad, a
// slab dim over 256 that is not the first or that no box size up to 256 tiles, an inner box row not
// a multiple of 16 bytes or wider than the Stage's swizzle, a source row stride not a multiple of
// 16 bytes, ring slabs not 128 bytes apart, or a source of rank above 5. tma_copy asks it to offer
// the transport; materialize to lower it.
Expected<TmaBoxes> stage_tma_boxes(const Stage& s, const TensorType& source);

// `Combine(acc0, op=add)`: the threads of `scope` (block | warp | cluster) combine their partial
// accumulators; every thread of the scope then holds the result. `scope=cluster` combines the
// threads of every block of the thread-block cluster (a Tile with a CLUSTER axis): materialize
// lowers it to the block's combine and an exchange through distributed shared memory.
struct Combine {
  std::string acc;
  CombineFn op = CombineFn::Add;
  CombineScope scope = CombineScope::Block;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("acc", s.acc, FieldRole::UseAcc);
    f("op", s.op, FieldRole::Data);
    f("scope", s.scope, FieldRole::Data);
  }
};

// `AsyncWait(keep=1)`: wait until at most `keep` asynchronous stages are still in flight.
struct AsyncWait {
  int64_t keep = 0;
  template <class S, class F> static void reflect(S& s, F&& f) { f("keep", s.keep, FieldRole::Data); }
};

// `h_smem = SlabMap(f32[8, 32], a7):` and a body: the threads of the block compute one shared
// slab together. The body runs once for every `a7` in [0, 8 * 32) (the slab's elements in
// row-major order, shared among the threads as materialize decides) and writes its element,
// `h_smem[a7 / 32, a7 % 32] = v2`; once every thread has reached the statement, every thread sees
// the whole slab (a collective, like Stage). fuse_stage_epilogue computes an elementwise cone of
// staged slabs with it once per block (`silu(g) * u` of a down projection's A operand) instead
// of once per output thread.
struct SlabMap {
  std::string dst;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::string var;
  Body body;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::DefBuffer);
    f("dtype", s.dtype, FieldRole::Data);
    f("shape", s.shape, FieldRole::Data);
    f("var", s.var, FieldRole::DefAxis);
    f("body", s.body, FieldRole::Data);
  }
};

// ---- Kernel IR -------------------------------------------------------------------------------

// `a1 = blockIdx.x`: binds an index, typically decoded from threadIdx / blockIdx.
struct Let {
  std::string var;
  Expr value;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("var", s.var, FieldRole::DefAxis);
    f("value", s.value, FieldRole::Data);
  }
};

// `Smem x_smem: f32[2048]`, or with a non-default layout
// `Smem x_smem: f16[64, 64] align=1024 swizzle=128B` (defaults are not printed).
// `Smem x_smem: f32[2, 32, 128] slots=2`: a ring of 2 slabs (a ring-buffered Stage); the first
// dimension is the slot, which the simulator names in its race reports.
struct Smem {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t align = kSmemAlign;                   // bytes
  SmemSwizzle swizzle = SmemSwizzle::None;      // recorded for TMA / wgmma; no pass sets it yet
  int64_t slots = 1;                            // > 1: shape[0] == slots slabs of a ring
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("name", s.name, FieldRole::DefBuffer);
    f("dtype", s.dtype, FieldRole::Data);
    f("shape", s.shape, FieldRole::Data);
    f("align", s.align, FieldRole::Data);
    f("swizzle", s.swizzle, FieldRole::Data);
    f("slots", s.slots, FieldRole::Data);
  }
};

// `Sync()`: __syncthreads()
struct Sync {
  template <class S, class F> static void reflect(S&, F&&) {}
};

// `NamedBarrier(id=1, threads=256)`: bar.sync id, threads: the executing warps wait until
// `threads` threads (whole warps) have arrived at hardware barrier `id` (1..15; 0 is Sync's); a
// barrier among some warps of the block, e.g. a warp-specialized kernel's consumers, whose
// producer never reaches it. Accesses before it are ordered before its participants' accesses
// after it.
struct NamedBarrier {
  int64_t id = 1;
  int64_t threads = 0;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("id", s.id, FieldRole::Data);
    f("threads", s.threads, FieldRole::Data);
  }
};

// `SetMaxNReg(dec, regs=40)`: setmaxnreg.{inc,dec}.sync.aligned.u32: the executing warpgroup's
// per-thread register count becomes `regs` (a multiple of 8 in [24, 256]); `dec` returns the
// difference to the block's pool, `inc` waits until the pool holds it (sm_90a; a warp-specialized
// producer gives its registers to the consumers).
struct SetMaxNReg {
  RegisterAction action = RegisterAction::Dec;
  int64_t regs = 0;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("action", s.action, FieldRole::Data);
    f("regs", s.regs, FieldRole::Data);
  }
};

// The registers per thread a block of `threads` threads holds at launch when its kernel runs one
// block per SM (`__launch_bounds__(threads, 1)`, as a kernel that uses SetMaxNReg is emitted): the
// 64K registers one block may hold, split evenly in multiples of 8, at most 256. setmaxnreg moves
// registers between warpgroups within that pool (block threads x this).
constexpr int64_t launch_registers_per_thread(int64_t threads) {
  const int64_t even = threads > 0 ? 65536 / threads / 8 * 8 : 0;
  return even < 256 ? even : 256;
}

// `ClusterSync()`: every thread of every block of the thread-block cluster arrives and waits
// (barrier.cluster.arrive.release + wait.acquire): shared-memory writes before it are visible to
// the cluster's DsmemLoads after it. A kernel whose blocks read each other's shared memory ends
// with one, so that no block exits while another may still read it.
struct ClusterSync {
  template <class S, class F> static void reflect(S&, F&&) {}
};

// `v3 = DsmemLoad(acc1_cluster[0], rank=a6)`: reads element `index` of the shared buffer `buffer`
// of the block whose rank in the cluster is `rank` (distributed shared memory, sm_90+; mapa +
// ld.shared::cluster). `rank` may be the block's own.
struct DsmemLoad {
  std::string dst, buffer;
  ExprList index;
  Expr rank;
  ValueType type = {};  // the buffer's dtype
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::DefInput);
    f("buffer", s.buffer, FieldRole::UseBuffer);
    f("index", s.index, FieldRole::Data);
    f("rank", s.rank, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
  }
};

// `CpAsyncCopy(x_smem[f], x[a1 * 2048 + f], bytes=4)`
struct CpAsyncCopy {
  std::string dst;
  ExprList dst_index;
  std::string src;
  ExprList src_index;
  int64_t bytes = 4;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::UseBuffer);
    f("dst_index", s.dst_index, FieldRole::Data);
    f("src", s.src, FieldRole::UseBuffer);
    f("src_index", s.src_index, FieldRole::Data);
    f("bytes", s.bytes, FieldRole::Data);
  }
};

// `CpAsyncCommit()`
struct CpAsyncCommit {
  template <class S, class F> static void reflect(S&, F&&) {}
};

// `CpAsyncWait(keep=0)`
struct CpAsyncWait {
  int64_t keep = 0;
  template <class S, class F> static void reflect(S& s, F&& f) { f("keep", s.keep, FieldRole::Data); }
};

// `TmaLoad(x_smem[s, 0, 0], tmap_x, coords=(0, a1), mbar=bar_x[s])`: the issuing thread starts a
// Tensor Memory Accelerator copy of the tensor map's box at element `coords` (outermost first)
// into `dst` from `dst_index` (empty: from its first element; the box lands there contiguously, in
// the tensor map's swizzle), completing as transaction bytes on barrier `barrier[barrier_slot]`.
// `desc` names a tensor-map parameter of the kernel (KernelParam); the host object it stands for
// belongs to the launch, not the body.
struct TmaLoad {
  std::string dst;
  ExprList dst_index;
  std::string desc;
  ExprList coords;
  std::string barrier;
  Expr barrier_slot = Expr::int_(0);
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::UseBuffer);
    f("dst_index", s.dst_index, FieldRole::Data);
    f("desc", s.desc, FieldRole::UseTensorMap);
    f("coords", s.coords, FieldRole::Data);
    f("barrier", s.barrier, FieldRole::UseBuffer);
    f("barrier_slot", s.barrier_slot, FieldRole::Data);
  }
};

// `bar0 = MbarrierInit(count=1)`, `bar_x = MbarrierInit(count=1, slots=2)`: `slots` barriers in
// shared memory (one per slot of a ring), each expecting `count` arrivals per phase, in phase 0.
struct MbarrierInit {
  std::string name;
  int64_t count = 1;
  int64_t slots = 1;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("name", s.name, FieldRole::DefBuffer);
    f("count", s.count, FieldRole::Data);
    f("slots", s.slots, FieldRole::Data);
  }
};

// `MbarrierArrive(bar0, tx=8192)`, `MbarrierArrive(bar_x[s], tx=8192)`: arrive on barrier
// `barrier[barrier_slot]`, expecting `tx` more bytes of transactions in its current phase (0 = a
// plain arrive).
struct MbarrierArrive {
  std::string barrier;
  Expr barrier_slot = Expr::int_(0);
  int64_t tx_bytes = 0;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("barrier", s.barrier, FieldRole::UseBuffer);
    f("barrier_slot", s.barrier_slot, FieldRole::Data);
    f("tx_bytes", s.tx_bytes, FieldRole::Data);
  }
};

// `MbarrierWait(bar0, phase=0)`, `MbarrierWait(bar_x[s], phase=k / 2 % 2)`: wait until the phase
// of parity `phase` of barrier `barrier[barrier_slot]` has completed (all its arrivals and
// transaction bytes); the copies it tracked are then visible to the waiting thread.
struct MbarrierWait {
  std::string barrier;
  Expr barrier_slot = Expr::int_(0);
  Expr phase;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("barrier", s.barrier, FieldRole::UseBuffer);
    f("barrier_slot", s.barrier_slot, FieldRole::Data);
    f("phase", s.phase, FieldRole::Data);
  }
};

// `v4 = WarpShuffle(acc0, xor, 16, width=32)`  mode: xor | down | up | idx
struct WarpShuffle {
  std::string dst;
  Expr src;
  ShuffleMode mode = ShuffleMode::Xor;
  int64_t offset = 0;
  int64_t width = 32;
  ValueType type = {};
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::DefValue);
    f("src", s.src, FieldRole::Data);
    f("mode", s.mode, FieldRole::Data);
    f("offset", s.offset, FieldRole::Data);
    f("width", s.width, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
  }
};

// `TreeHalve(acc0_smem, tid=a0, n=256, op=add)`: shared-memory tree reduction of n slots into slot 0
// (with a barrier after every halving step).
struct TreeHalve {
  std::string buffer;
  Expr tid;
  int64_t count = 0;
  CombineFn op = CombineFn::Add;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("buffer", s.buffer, FieldRole::UseBuffer);
    f("tid", s.tid, FieldRole::Data);
    f("count", s.count, FieldRole::Data);
    f("op", s.op, FieldRole::Data);
  }
};

// `(in0, in1, in2, in3) = load4 x[a0, a1 * 4]`: one vector load of consecutive elements.
struct VectorLoad {
  std::vector<std::string> dsts;
  std::string buffer;
  ExprList index;
  ValueType type = {};  // the type of each loaded element
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dsts", s.dsts, FieldRole::DefInput);
    f("buffer", s.buffer, FieldRole::UseBuffer);
    f("index", s.index, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
  }
};

// `y[a0, a1 * 4] = store4(v0, v1, v2, v3)`
struct VectorStore {
  std::string buffer;
  ExprList index;
  ExprList values;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("buffer", s.buffer, FieldRole::UseBuffer);
    f("index", s.index, FieldRole::Data);
    f("values", s.values, FieldRole::Data);
  }
};

// ---- Tensor cores (Tile IR and Kernel IR) -----------------------------------------------------
//
// A warp computes a tensor-core product from fragments: register arrays whose elements the 32
// threads of the warp hold in the layouts the PTX ISA fixes for each instruction (docs/ir.md,
// "Tensor-core fragments", draws them). The three statements below are warp-collective: every
// thread of a warp that reaches one must reach it together (the simulator reports a divergent
// warp), with the same fragment and slice indices.

// `bf16[2][8] frag0 = fragment()`: declares a register array of operand fragments; elements are
// written by LdMatrix and read by MmaSync (and by expressions, `frag0[1, 3]`). Its last dimension
// is one fragment's elements per thread (8 for m16n8k16's A, 4 for its B); the leading ones index
// fragments (one per warp sub-tile). Accumulator fragments are register arrays an Init declares
// (`f32[2][4][4] acc0 = init(0.0)`), so that the epilogue reads them as any register array.
struct Fragment {
  std::string name;
  ValueType type = {};
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("name", s.name, FieldRole::DefFragment);
    f("type", s.type, FieldRole::Data);
  }
};

// `frag0[a6] = ldmatrix.x4(a_smem[a7 % 16, a7 / 16 * 8])`: ldmatrix.sync.aligned.m8n8.x{1,2,4}
// [.trans].shared.b16. Each thread names one 16-byte row of shared memory (`index`: its first
// element): threads 0-7 the rows of matrix 0, 8-15 of matrix 1 and so on (x1 and x2 read the
// addresses of threads 0-7 and 0-15). Matrix i lands in elements 2i and 2i + 1 of each thread's
// slice `dst[dst_index]` (the remaining dimensions of the fragment array, 2 x count elements):
// thread t gets row t / 4, columns 2 (t % 4) and 2 (t % 4) + 1, or with `.trans` the same of the
// transposed matrix.
struct LdMatrix {
  std::string dst;
  ExprList dst_index;  // a prefix of the fragment array's dimensions
  std::string buffer;
  ExprList index;      // this thread's row: its first element
  int64_t count = 4;   // 1, 2 or 4 matrices
  LdMatrixLayout layout = LdMatrixLayout::Rows;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("dst", s.dst, FieldRole::UseFragment);
    f("dst_index", s.dst_index, FieldRole::Data);
    f("buffer", s.buffer, FieldRole::UseBuffer);
    f("index", s.index, FieldRole::Data);
    f("count", s.count, FieldRole::Data);
    f("layout", s.layout, FieldRole::Data);
  }
};

// `acc0[a6, a7] <- mma.m16n8k16.bf16(frag0[a6], frag1[a7])`: mma.sync.aligned.m16n8k16.row.col
// .f32.bf16.bf16.f32: the warp's A fragment slice `a[a_index]` (M x K) times its B slice
// `b[b_index]` (K x N) added to the f32 accumulator slice `acc[acc_index]` (M x N), in place.
// `type` is A's and B's element type (bf16 or f16).
struct MmaSync {
  std::string acc;
  ExprList acc_index;
  std::string a;
  ExprList a_index;
  std::string b;
  ExprList b_index;
  MmaShape shape = MmaShape::M16N8K16;
  DType type = DType::BF16;
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("acc", s.acc, FieldRole::UseAcc);
    f("acc_index", s.acc_index, FieldRole::Data);
    f("a", s.a, FieldRole::UseFragment);
    f("a_index", s.a_index, FieldRole::Data);
    f("b", s.b, FieldRole::UseFragment);
    f("b_index", s.b_index, FieldRole::Data);
    f("shape", s.shape, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
  }
};

// ---- Warpgroup tensor cores (sm_90a) -------------------------------------------------------
//
// A warpgroup is four consecutive warps of the block (128 threads; its first warp a multiple of
// 4). wgmma.mma_async multiplies A and B read from shared memory through matrix descriptors and
// accumulates into f32 registers its 128 threads hold, asynchronously: WgmmaFence orders the
// registers' earlier accesses before it, WgmmaCommit closes the warpgroup's open products into a
// group, WgmmaWait(keep=N) waits until at most N groups are in flight. Touching an accumulator
// between the product and the wait that completes it is undefined (the simulator reports it).
// All four statements are warpgroup-collective (docs/ir.md, "Warpgroup tensor cores").

// `acc0[a5] <- wgmma.m64n128k16.bf16(desc(a_smem[0, a6 * 16], lbo=16, sbo=1024, swizzle=128B),
// desc(b_smem[0, a6 * 16], lbo=16, sbo=1024, swizzle=128B))`: wgmma.mma_async.sync.aligned
// .m64nNk16.f32.{bf16,f16} with its operands in shared memory. A is 64 x 16 (rows M), B is N x 16
// (rows N: B's transpose); A is K-major, B K-major (as nn.Linear stores its weight) or MN-major
// (`major=mn` after B's swizzle: a row-major K x N weight, imm-trans-b 1). Each descriptor names
// the operand's first element `buffer[index]`, its two byte strides `lbo` and `sbo` and the
// swizzle its rows were written in. K-major: element (r, k) lives at byte start + (r / 8) sbo +
// (r % 8) w + k' with w = 16 and k' = (2k / 16) lbo + 2k % 16 without a swizzle, w the swizzle's
// span and k' = 2k with one (whose 16-byte chunks are then permuted by address bits, as TMA writes
// them); MN-major: wgmma_operand_byte (ir/stmt_enums.h). The accumulator slice `acc[acc_index]`
// holds N / 2 f32 per thread: element i of thread t
// is row 16 (t / 32 % 4) + t % 32 / 4 + 8 (i % 4 / 2), column 8 (i / 4) + 2 (t % 4) + i % 2.
struct WgmmaMma {
  std::string acc;
  ExprList acc_index;
  int64_t n = 64;  // the product's N: a multiple of 8 in [8, 256]
  DType type = DType::BF16;
  std::string a;
  ExprList a_index;
  int64_t a_lbo = 16, a_sbo = 1024;
  SmemSwizzle a_swizzle = SmemSwizzle::B128;
  std::string b;
  ExprList b_index;
  int64_t b_lbo = 16, b_sbo = 1024;
  SmemSwizzle b_swizzle = SmemSwizzle::B128;
  MatrixMajor b_major = MatrixMajor::K;  // A is always K-major
  template <class S, class F> static void reflect(S& s, F&& f) {
    f("acc", s.acc, FieldRole::UseAcc);
    f("acc_index", s.acc_index, FieldRole::Data);
    f("n", s.n, FieldRole::Data);
    f("type", s.type, FieldRole::Data);
    f("a", s.a, FieldRole::UseBuffer);
    f("a_index", s.a_index, FieldRole::Data);
    f("a_lbo", s.a_lbo, FieldRole::Data);
    f("a_sbo", s.a_sbo, FieldRole::Data);
    f("a_swizzle", s.a_swizzle, FieldRole::Data);
    f("b", s.b, FieldRole::UseBuffer);
    f("b_index", s.b_index, FieldRole::Data);
    f("b_lbo", s.b_lbo, FieldRole::Data);
    f("b_sbo", s.b_sbo, FieldRole::Data);
    f("b_swizzle", s.b_swizzle, FieldRole::Data);
    f("b_major", s.b_major, FieldRole::Data);
  }
};

// `WgmmaFence()`: wgmma.fence.sync.aligned: the warpgroup's earlier register accesses are ordered
// before its next wgmma.mma_async (needed before the first product and after the accumulator is
// written by anything but a product).
struct WgmmaFence {
  template <class S, class F> static void reflect(S&, F&&) {}
};

// `WgmmaCommit()`: wgmma.commit_group.sync.aligned: the warpgroup's products issued since its last
// commit become one group.
struct WgmmaCommit {
  template <class S, class F> static void reflect(S&, F&&) {}
};

// `WgmmaWait(keep=0)`: wgmma.wait_group.sync.aligned N: waits until at most `keep` of the
// warpgroup's committed groups are in flight; the products of the others have landed in their
// accumulators.
struct WgmmaWait {
  int64_t keep = 0;
  template <class S, class F> static void reflect(S& s, F&& f) { f("keep", s.keep, FieldRole::Data); }
};

// The one list. Order is part of the JSON format only through names, never through indices.
#define TESSERA_STMT_KINDS(X)                                                   \
  /* Loop IR */ X(Load) X(Assign) X(Select) X(Init) X(Accum) X(Write) X(Loop) X(Cond) \
  /* Tile IR */ X(Tile) X(StridedLoop) X(Stage) X(Combine) X(AsyncWait) X(SlabMap) \
  /* Kernel IR */ X(Let) X(Smem) X(Sync) X(CpAsyncCopy) X(CpAsyncCommit)      \
  X(CpAsyncWait) X(TmaLoad) X(MbarrierInit) X(MbarrierArrive) \
  X(MbarrierWait) X(NamedBarrier) X(SetMaxNReg) X(WarpShuffle) X(TreeHalve) X(VectorLoad) X(VectorStore) X(ClusterSync) X(DsmemLoad) \
  /* tensor cores */ X(Fragment) X(LdMatrix) X(MmaSync) X(WgmmaMma) X(WgmmaFence) X(WgmmaCommit) X(WgmmaWait)

enum class StmtKind : uint8_t {
#define TESSERA_X(K) K,
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
};

std::string_view stmt_kind_name(StmtKind k);
std::optional<StmtKind> parse_stmt_kind(std::string_view s);

// Which kernel dialects accept a statement kind (a bit set over Loop, Tile and Kernel IR).
enum StmtDialects : uint8_t {
  kInLoop = 1,
  kInTile = 2,
  kInKernel = 4,
  kInLoopTileKernel = kInLoop | kInTile | kInKernel,
};

// What every consumer may ask of a statement kind without knowing it.
struct StmtKindTraits {
  uint8_t dialects;   // StmtDialects bits: where the verifier accepts the kind
  bool has_body;      // holds nested statements (Loop, Cond, Tile, StridedLoop, SlabMap)
  bool collective;    // every thread of the block must reach it together (Stage, Combine, AsyncWait, SlabMap)
  bool carries_type;  // defines a value whose type its printed line names first (`f32 v0 = ...`)
  bool tensor_core;   // a tensor-core statement (Fragment, LdMatrix, MmaSync; the Wgmma* kinds)
};

// The traits of each kind. A switch without `default`, built with -Werror=switch: a new kind that is
// not given its traits here breaks the build.
constexpr StmtKindTraits stmt_kind_traits(StmtKind k) {
  switch (k) {
    //                                    dialects           body   collective  carries_type  tensor_core
    case StmtKind::Load: return           {kInLoopTileKernel, false, false,      true,         false};
    case StmtKind::Assign: return         {kInLoopTileKernel, false, false,      true,         false};
    case StmtKind::Select: return         {kInLoopTileKernel, false, false,      true,         false};
    case StmtKind::Init: return           {kInLoopTileKernel, false, false,      true,         false};
    case StmtKind::Accum: return          {kInLoopTileKernel, false, false,      false,        false};
    case StmtKind::Write: return          {kInLoopTileKernel, false, false,      false,        false};
    case StmtKind::Loop: return           {kInLoopTileKernel, true,  false,      false,        false};
    case StmtKind::Cond: return           {kInLoopTileKernel, true,  false,      false,        false};
    case StmtKind::Tile: return           {kInTile,           true,  false,      false,        false};
    case StmtKind::StridedLoop: return    {kInTile | kInKernel, true, false,     false,        false};
    case StmtKind::Stage: return          {kInTile,           false, true,       false,        false};
    case StmtKind::Combine: return        {kInTile,           false, true,       false,        false};
    case StmtKind::AsyncWait: return      {kInTile,           false, true,       false,        false};
    case StmtKind::SlabMap: return        {kInTile,           true,  true,       false,        false};
    case StmtKind::Let: return            {kInKernel,         false, false,      false,        false};
    case StmtKind::Smem: return           {kInKernel,         false, false,      false,        false};
    case StmtKind::Sync: return           {kInKernel,         false, false,      false,        false};
    case StmtKind::CpAsyncCopy: return    {kInKernel,         false, false,      false,        false};
    case StmtKind::CpAsyncCommit: return  {kInKernel,         false, false,      false,        false};
    case StmtKind::CpAsyncWait: return    {kInKernel,         false, false,      false,        false};
    case StmtKind::TmaLoad: return        {kInKernel,         false, false,      false,        false};
    case StmtKind::MbarrierInit: return   {kInKernel,         false, false,      false,        false};
    case StmtKind::MbarrierArrive: return {kInKernel,         false, false,      false,        false};
    case StmtKind::MbarrierWait: return   {kInKernel,         false, false,      false,        false};
    case StmtKind::NamedBarrier: return   {kInKernel,         false, false,      false,        false};
    case StmtKind::SetMaxNReg: return     {kInKernel,         false, false,      false,        false};
    case StmtKind::WarpShuffle: return    {kInKernel,         false, false,      true,         false};
    case StmtKind::TreeHalve: return      {kInKernel,         false, false,      false,        false};
    case StmtKind::VectorLoad: return     {kInKernel,         false, false,      true,         false};
    case StmtKind::VectorStore: return    {kInKernel,         false, false,      false,        false};
    case StmtKind::ClusterSync: return    {kInKernel,         false, false,      false,        false};
    case StmtKind::DsmemLoad: return      {kInKernel,         false, false,      true,         false};
    case StmtKind::Fragment: return       {kInTile | kInKernel, false, false,    true,         true};
    case StmtKind::LdMatrix: return       {kInTile | kInKernel, false, false,    false,        true};
    case StmtKind::MmaSync: return        {kInTile | kInKernel, false, false,    false,        true};
    case StmtKind::WgmmaMma: return       {kInTile | kInKernel, false, false,    false,        true};
    case StmtKind::WgmmaFence: return     {kInTile | kInKernel, false, false,    false,        true};
    case StmtKind::WgmmaCommit: return    {kInTile | kInKernel, false, false,    false,        true};
    case StmtKind::WgmmaWait: return      {kInTile | kInKernel, false, false,    false,        true};
  }
  return {0, false, false, false,        false};  // unreachable for a valid kind
}

#define TESSERA_X(K) K,
using StmtVariant = std::variant<TESSERA_STMT_KINDS(TESSERA_X) std::monostate>;
#undef TESSERA_X

// Handle to an immutable statement node.
class Stmt {
 public:
  Stmt() = default;
  template <class T, class = std::enable_if_t<!std::is_same_v<std::decay_t<T>, Stmt>>>
  Stmt(T value)  // NOLINT: `Stmt s = Load{...};` reads naturally
      : node_(std::make_shared<const StmtVariant>(std::move(value))) {}

  bool defined() const { return node_ != nullptr; }
  StmtKind kind() const { return static_cast<StmtKind>(node_->index()); }
  template <class T> bool is() const { return std::holds_alternative<T>(*node_); }
  template <class T> const T* as() const { return std::get_if<T>(node_.get()); }
  const StmtVariant& variant() const { return *node_; }
  bool same_node(const Stmt& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const StmtVariant> node_;
};

bool structurally_equal(const Stmt& a, const Stmt& b);
bool structurally_equal(const Body& a, const Body& b);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const Body& b);

// Read-only traversal. Each visit_K defaults to visiting the children (bodies) of K in order;
// override the kinds you care about and call the default to keep descending.
class StmtVisitor {
 public:
  virtual ~StmtVisitor() = default;
  void visit(const Stmt& s);
  void visit(const Body& b);
#define TESSERA_X(K) virtual void visit_##K(const K& s);
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
};

// Rebuilding traversal. mutate_K receives the node and its handle; the default rewrites its
// Exprs through mutate_expr and its bodies through mutate, and returns `self` unchanged when
// nothing changed (so unchanged subtrees stay shared). mutate_body may also drop or splice
// statements: override it to return several statements for one.
class StmtMutator {
 public:
  virtual ~StmtMutator() = default;
  Stmt mutate(const Stmt& s);
  virtual Body mutate_body(const Body& b);
  virtual Expr mutate_expr(const Expr& e) { return e; }
#define TESSERA_X(K) virtual Stmt mutate_##K(const K& s, const Stmt& self);
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
};

// Printing: one statement per line, bodies indented by two spaces per level.
std::string print_body(const Body& b, int indent = 0);
std::string print_stmt(const Stmt& s, int indent = 0);

// Every name `body` binds at any depth (axes, loaded and computed values, accumulators, kernel-local
// buffers): the names a pass must avoid when it invents one.
std::set<std::string> bound_names(const Body& body);
// A name for a pass to invent: `base` when `taken` does not hold it, else the first free of
// base_0, base_1, ...; the name is added to `taken`.
std::string fresh_name(const std::string& base, std::set<std::string>& taken);

// Every axis, value and accumulator name `body` binds at any depth (not kernel-local buffers), in
// order of first definition (depth-first, textual order).
std::vector<std::string> defined_names(const Body& body);

// Every name `body` reads at any depth: name fields that refer to a binding (an accumulator, a
// value) and the free variables and values of every expression. Buffers are not included.
std::set<std::string> used_names(const Body& body);

// The same two questions about one statement's own fields, not its nested bodies': the names it
// reads, and the names its fields bind (those it defines in the enclosing scope, and the axis a
// Loop or StridedLoop binds for its body; kernel-local buffers included).
std::set<std::string> own_used_names(const Stmt& s);
std::vector<std::string> own_bound_names(const Stmt& s);

// Renames, at any depth, every bound name in `renames` where it is defined and wherever it is
// used (name fields, labels, and the variables and values of expressions). Buffers keep their
// names; names not in the map are left alone.
Body rename_names(const Body& body, const std::map<std::string, std::string>& renames);

// Whether `body` holds a statement of kind `k` at any depth.
bool contains_stmt_kind(const Body& body, StmtKind k);
// Whether `body` holds a collective Tile IR statement (Stage, Combine, AsyncWait) at any depth.
bool contains_collective(const Body& body);
// Whether `body` holds a tensor-core statement (Fragment, LdMatrix, MmaSync, Wgmma*) at any depth: a
// schedule the tile passes that do not know fragments leave alone (TilePass::handles_tensor_cores).
bool contains_tensor_core_statements(const Body& body);
// Whether `body` holds a warpgroup product (WgmmaMma) at any depth: a kernel whose shared-memory
// operands the tensor cores read through descriptors (the CUDA emitter fences them; double_buffer
// rings the slabs they name).
bool contains_warpgroup_products(const Body& body);

// The first statement of `body`, nested bodies included (depth-first, textual order), whose kind
// the dialects `accepted` (StmtDialects bits) do not hold, or nullopt. A consumer of one dialect
// (the Loop IR interpreter, materialize, the simulator) refuses what this finds, so which kinds it
// refuses is the `dialects` column of stmt_kind_traits, not a list of its own.
std::optional<Stmt> first_stmt_outside(const Body& body, uint8_t accepted);
// "Loop IR", "Tile IR" or "Kernel IR": the earliest dialect that holds kind `k`, for messages.
std::string_view home_dialect_name(StmtKind k);

// Replaces the Vars named in `replacements` in every expression of `body`, then simplifies each
// expression with `ranges` plus the ranges of the Loops enclosing it.
Body substitute_and_simplify(const Body& body, const std::map<std::string, Expr>& replacements,
                             RangeMap ranges);

// The innermost iterations `body` runs: each Loop counts its literal trip count (1 without literal
// bounds) times its body's iterations (at least 1), a Cond its larger branch. A size of the work,
// for heuristics that must tell a large kernel from a small one.
int64_t innermost_iterations(const Body& body);

// Canonical renaming: bound names become a0.., in0.., v0.., acc0.. in order of first definition
// (depth-first, textual order), references follow. Buffers keep their names. Structurally equal
// kernels that differ only in names print identically after this.
Body canonicalize_names(const Body& b);

}  // namespace tessera

// KernelProgram: a Kernel IR body compiled once per kernel into the form the block executor runs
// over lane vectors (one lane per thread of a block). Names are resolved to register slots,
// buffers to global or shared buffer numbers, Exprs to flat lists of lane-vector operations.
// Built by compile_kernel (kernel_compiler.cpp), run by BlockExecutor (block_executor.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/eval/tensor_value.h"
#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/ir/stmt.h"
#include "tessera/support/status.h"

namespace tessera::sim {

// One operation of a compiled Expr over lane vectors. Operands are earlier nodes of the same
// LaneExpr; a node's result lives in temp vector `temp` (Var nodes read register `slot` instead).
struct LaneExprNode {
  ExprKind kind = ExprKind::Int;
  bool is_int = false;     // static type: integer arithmetic (floor div/mod) or float (rounded)
  bool in_double = false;  // an operand of an f64 definition: float literals and arithmetic stay double
  int slot = -1;           // Var
  double literal = 0.0;    // Int / Float
  DType cast_to = DType::F32;
  int operands[3] = {-1, -1, -1};
  int temp = -1;
  std::vector<int64_t> dims;  // Element: the register array's shape (registers slot.., row-major)
};

// An Expr compiled for lane vectors; the result is the last node.
struct LaneExpr {
  std::vector<LaneExprNode> nodes;
  bool may_fault = false;  // holds an integer division or modulo (by zero is an error)
  bool is_int() const { return nodes.back().is_int; }
};

// A buffer a statement touches: a graph node's global buffer or a kernel-local Smem buffer.
struct BufferRef {
  bool shared = false;
  int index = -1;
};

// A slice of a register array that a tensor-core statement names (LdMatrix's destination, MmaSync's
// operands): the array's first register, its shape, and the indices of a prefix of its dimensions
// (the slice is the elements under that prefix, row-major).
struct ArraySlice {
  int slot = -1;
  std::vector<int64_t> dims;
  std::vector<LaneExpr> index;
};

// A wgmma operand's descriptor strides, swizzle and major dimension (its buffer and start index
// are the SimStmt's buffer/index for A, src_buffer/src_index for B).
struct WgmmaOperand {
  int64_t lbo = 16, sbo = 1024;
  SmemSwizzle swizzle = SmemSwizzle::None;
  MatrixMajor major = MatrixMajor::K;
};

struct SimStmt {
  StmtKind kind = StmtKind::Sync;
  const Stmt* source = nullptr;  // the statement, for error messages
  int slot = -1;                 // the register it defines or updates
  DType value_type = DType::F32; // the element dtype of the value it defines (values are rounded to it)
  std::vector<int64_t> dims;     // Init / Accum of a register array: its shape; Accum's element is `index`
  std::vector<int> slots;        // VectorLoad destinations
  BufferRef buffer;              // Load/Write/Vector*/TreeHalve buffer, CpAsyncCopy destination
  BufferRef src_buffer;          // CpAsyncCopy source
  std::vector<LaneExpr> index;   // buffer index, one per dimension
  std::vector<LaneExpr> src_index;
  std::vector<LaneExpr> exprs;   // values, args, loop bounds, condition, tid, shuffle source
  ElementwiseFn fn = ElementwiseFn::Identity;  // Assign
  CombineFn accum = CombineFn::Add;            // Accum, TreeHalve
  ShuffleMode mode = ShuffleMode::Xor;
  int64_t count = 0;             // CpAsyncWait keep, CpAsyncCopy elements, TreeHalve n, shuffle offset
  int64_t width = 32;            // WarpShuffle
  int barrier = -1;              // Mbarrier*, TmaLoad: the barrier ring (KernelProgram::barriers); NamedBarrier: its id (count = its threads)
  int tensor_map = -1;           // TmaLoad: the tensor map (KernelProgram::tensor_maps)
  std::vector<ArraySlice> slices;  // LdMatrix: {dst}; MmaSync: {acc, a, b}
  bool transpose = false;          // LdMatrix .trans
  bool concurrent = false;         // Cond: its branches wait for each other (RoleScheduler)
  RegisterAction reg_action = RegisterAction::Dec;  // SetMaxNReg (count = its registers)
  MmaShape shape = MmaShape::M16N8K16;
  WgmmaOperand wgmma[2];           // WgmmaMma: A's and B's descriptors (count = N)
  std::vector<SimStmt> body, else_body;
};

struct SmemDecl {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t slots = 1;  // > 1: a ring of slabs, shape[0] the slot (named in race reports)
  int64_t align = kSmemAlign;
  SmemSwizzle swizzle = SmemSwizzle::None;
};

// The mbarriers one MbarrierInit declares: `slots` barriers, each completing a phase after `count`
// arrivals and the transaction bytes they announced.
struct BarrierDecl {
  std::string name;
  int64_t count = 1;
  int64_t slots = 1;
};

// A tensor-map parameter a TmaLoad names: what a copy reads (the global buffer `buffer`, an index
// into the kernel's globals) and how its box lands in shared memory.
struct TensorMapDecl {
  std::string name;
  TensorMapSpec spec;
  int buffer = -1;
};

// A global buffer: one of the kernel node's inputs (read-only) or its output (the node id).
struct GlobalBuffer {
  std::string name;
  TensorValue* value = nullptr;
  bool is_output = false;
};

// Register slots of the hardware indices, bound before the body runs.
enum HardwareSlot : int {
  kThreadIdxX, kThreadIdxY, kThreadIdxZ,
  kBlockIdxX, kBlockIdxY, kBlockIdxZ,
  kBlockDimX, kBlockDimY, kBlockDimZ,
  kGridDimX, kGridDimY, kGridDimZ,
  kHardwareSlots
};

// A scalar kernel parameter's value, bound to its register before the body runs.
struct ScalarBinding {
  std::string name;
  double value = 0.0;  // integer parameters hold integral values
  bool is_int = true;
};

// A register array (Init of an array type, Fragment): its first register and shape, for naming
// its elements in reports.
struct RegisterArray {
  std::string name;
  int slot = -1;
  std::vector<int64_t> dims;
};

struct KernelProgram {
  std::vector<SimStmt> body;
  std::vector<RegisterArray> arrays;
  bool has_wgmma = false;  // the executor tracks fences and products in flight
  // Threads wait for each other without Sync() (a concurrent Cond, named barriers): shared memory
  // tracks the orders barriers give (SharedMemory::order_by_barriers).
  bool orders_by_barriers = false;
  std::vector<SmemDecl> smem;
  std::vector<BarrierDecl> barriers;
  std::vector<TensorMapDecl> tensor_maps;
  std::vector<std::pair<int, double>> scalar_slots;  // (register slot, value)
  int slot_count = kHardwareSlots;
  int temp_count = 0;
};

// Compiles `op`'s body; `globals` lists the buffers the kernel may name (inputs and output),
// `scalars` the values of its scalar parameters (names the body may use as values).
Expected<KernelProgram> compile_kernel(const Node& node, const KernelOp& op, const std::vector<GlobalBuffer>& globals,
                                       const std::vector<ScalarBinding>& scalars = {});

// The first line of a statement's printout, without indentation: how errors quote statements.
std::string stmt_text(const Stmt& s);

// "(3, 0, 0)" for a thread or block index.
std::string dim3_str(int64_t x, int64_t y, int64_t z);

}  // namespace tessera::sim

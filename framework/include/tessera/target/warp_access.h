// Warp-address enumeration: the byte addresses the 32 lanes of each warp present to the memory
// system when a Kernel IR kernel runs one memory statement. From them come the 32-byte sectors a
// global access requests (coalescing) and the shared-memory wavefronts it takes (bank conflicts).
//
// The model of one block (block 0): a warp's lanes are consecutive linear thread ids (threadIdx.x
// fastest, then y, then z, as the hardware groups them), so the axes the kernel decodes from
// threadIdx with its Lets take their values first-listed-fastest; blockIdx is 0; a loop variable
// takes its first value (its begin) while the loop's trip count multiplies how often the statement
// runs (not for a read that an unrolled loop keeps in a register: see WarpAccess::executions); a
// condition keeps the lanes where it holds (both branches when it cannot be decided); any
// other variable (a scalar parameter) is 0. Addresses read from data (a gather) are unknown.
// Computed from the IR alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/stmt.h"

namespace tessera {

enum class MemorySpace : uint8_t { Global, Shared };
enum class AccessDirection : uint8_t { Read, Write };

// One lane's part of a warp access.
enum class LaneState : uint8_t { Inactive, Known, Unknown };
struct LaneAddress {
  LaneState state = LaneState::Inactive;
  int64_t offset = 0;  // bytes from the buffer's start (Known only)
};

// One memory statement as one warp of a block issues it.
struct WarpAccess {
  std::string buffer;  // a graph node (global) or an Smem array (shared)
  MemorySpace space = MemorySpace::Global;
  AccessDirection direction = AccessDirection::Read;
  StmtKind stmt = StmtKind::Load;
  int64_t warp = 0;         // the warp's index within the block
  int64_t width_bytes = 4;  // bytes each lane moves (element size x vector lanes)
  std::vector<LaneAddress> lanes;  // warp_size entries
  // How often this warp issues the access in one block: the trips of its enclosing loops, but
  // those of an unrolled loop a read does not vary across (the compiler keeps the value).
  double executions = 1;
  int loop = -1;          // the innermost enclosing loop (an index into WarpAccessMap::loops), -1: none

  int64_t active_lanes() const;
  bool addresses_known() const;  // every active lane's address decided
};

// A loop of the kernel body (one per Loop / StridedLoop statement).
struct LoopInfo {
  int64_t unroll = 0;  // the loop's unroll mark: 0 = left to the compiler
};

struct WarpAccessMap {
  std::vector<WarpAccess> accesses;  // per warp of block 0, in statement order
  std::vector<LoopInfo> loops;
  int64_t warp_size = 32;
  int64_t warps_per_block = 1;
  int64_t blocks = 1;
};

// The accesses of every warp of one block of `kernel` (a KernelOp node of `g`) to its global
// buffers and shared arrays: loads, stores, vector accesses, cp.async copies (a global read and a
// shared write), TMA boxes (one lane moves the box), tree reductions (a read, read, write per
// halving step) and ldmatrix (one shared read per 8x8 matrix: its 8 lanes' 16-byte rows). An error when `kernel` is not a Kernel IR kernel of `g`.
Expected<WarpAccessMap> enumerate_warp_accesses(const Graph& g, const Node& kernel, int64_t warp_size = 32);

// The distinct `sector_bytes`-byte sectors the active lanes touch (coalescing: 4 for 32 lanes
// reading consecutive floats, 32 for a stride of 32 bytes or more). An unknown lane counts its own
// sectors.
int64_t sectors_touched(const WarpAccess& a, int64_t sector_bytes = 32);
// The distinct bytes the active lanes move (a broadcast counts once); unknown lanes count whole.
int64_t unique_bytes(const WarpAccess& a);
// Shared-memory wavefronts: the largest number of distinct `bank_bytes` words any one of `banks`
// banks must serve (1 = conflict-free for 4-byte lanes; 32 = every lane in one bank). Unknown
// lanes are taken as conflict-free. 0 when no lane is active.
int64_t bank_wavefronts(const WarpAccess& a, int64_t banks = 32, int64_t bank_bytes = 4);

}  // namespace tessera

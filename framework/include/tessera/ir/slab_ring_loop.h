// A K slab loop over rings of staged slabs, as double_buffer leaves it: the shape the passes that
// overlap copies with compute recognise (pipeline_k_outer runs S - 1 slabs ahead; specialize_warps
// hands the copies to a producer warpgroup).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "tessera/ir/stmt.h"

namespace tessera {

// `for k in b..e:  # reduce` with literal bounds and n = e - b >= 2 trips whose body is: its async
// or tma Stages, each a ring of B >= 2 slots filled at slot (k - b) % B (so slabs k+1..k+B-1 are
// in other slots than slab k), then AsyncWait(keep=0), then a step without other Stages, Combines
// or waits (it reads the slot; it may hold a SlabMap computing from it).
struct SlabRingLoop {
  size_t stages = 0;  // the first `stages` statements are the Stages; the AsyncWait follows them
  int64_t slots = 0;  // the smallest ring among them
  int64_t trips = 0;
  bool all_tma = false;  // every Stage is a TMA copy
};

// The loop's shape, or nullopt when it is not such a loop.
std::optional<SlabRingLoop> slab_ring_loop(const Loop& loop);

}  // namespace tessera

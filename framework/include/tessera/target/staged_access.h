// Staged-slab bank model: how one warp's reads of a staged slab (a Tile IR Stage's shared buffer)
// spread over the shared-memory banks, read off the Tile IR before materialize lays the buffer out.
// pad_smem scores row pads with it and split_inner_for_swizzle the TMA swizzles: both ask it of
// a layout they are considering, so the two passes see the same warp.
//
// The model: the lanes 0..warp_size-1 of the block's first warp are decoded into the THREAD axes
// (the first-listed axis fastest), loop variables take their first value, every other variable is
// 0; each lane's slab coordinates become a byte offset through the layout under consideration, and
// a bank's conflict degree is the number of distinct 4-byte words it serves (32 banks).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/stmt.h"

namespace tessera {

// One load of a staged buffer: one coordinate per slab dim (a ring's slot index, which moves whole
// slabs, left out), as written; the first value of every enclosing loop's variable (the model
// takes loop variables there); and its innermost enclosing loop with literal bounds (the loop
// vectorize_loads would merge its iterations of), if any.
struct StagedLoad {
  ExprList coords;
  std::map<std::string, Expr> first_values;
  std::string loop;   // empty: no such loop
  int64_t trips = 1;  // the loop's trip count
};

// One Stage and the loads that read what it staged: those after it in textual order up to the
// next Stage into the same buffer (a refill).
struct StagedLoads {
  const Stage* stage = nullptr;  // points into the body collect_staged_loads read
  int64_t elem_bytes = 4;        // the source's element size
  std::vector<StagedLoad> loads;
};

// Every Stage of `body` (a Tile kernel of `g`) with its loads, in textual order.
std::vector<StagedLoads> collect_staged_loads(const Graph& g, const Body& body);

// Where slab coordinates (one per slab dim) land: a byte offset from the slab's start.
using SlabLayout = std::function<int64_t(const std::vector<int64_t>& coords)>;

// The elements one access of `load` moves once vectorize_loads merges its loop's iterations: the
// widest K (a power of two, K * elem_bytes <= 16, K dividing the trips and the row of `row_elems`
// elements the buffer holds) such that the last coordinate is `c + v` (v the loop's variable, c a
// multiple of K) and no other coordinate reads v; 1 when none.
int64_t staged_vector_width(const StagedLoad& load, int64_t elem_bytes, int64_t row_elems);

// The row-major layout of `stage`'s slab with each row (the last dim) `pad` elements longer.
SlabLayout padded_slab_layout(const Stage& stage, int64_t elem_bytes, int64_t pad);

// The worst conflict degree over `s`'s loads of the block's first warp (`threads`: the Tile's
// THREAD axes in order) with the slab laid out by `layout`: 1 = conflict-free. A load whose
// coordinates the model cannot decide (a gather) counts as conflict-free. With `access_bytes` 8
// or 16 each lane reads that many bytes from its address (a vector load), and the warp's request
// is served in phases of 16 or 8 lanes (the hardware splits a 64-bit request into half-warps and
// a 128-bit one into quarter-warps): the degree is the worst phase's.
int64_t staged_load_conflicts(const StagedLoads& s, const SlabLayout& layout, const std::vector<TileAxis>& threads,
                              int64_t warp_size, int64_t access_bytes = 4);

}  // namespace tessera

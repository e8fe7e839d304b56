// Contraction: the shape of a matmul-like reduction in a Tile kernel (and, for fuse, a product's
// shape in Loop IR: loop_contraction_reading), found once here for every
// matmul pass (chunk_matmul_k today; split-K, 2-D register tiles and pipelining build on it)
// instead of each pass re-deriving it from statements.
//
// A contraction is a `# reduce` Loop `for k in b..e` with integer-literal bounds that sits in the
// Tile body, or in the then-branch of a tail guard there (a Cond without else), and
//   - holds no nested loop and no collective statement (its body is the per-k step),
//   - loads at least two graph buffers with an index that uses k (the operands), and
//   - accumulates (Accum) only into accumulators declared (Init) before it in the same body.
// Statements before the loop in its body are the prologue, those after it the epilogue.
// A K loop chunk_matmul_k cut into slabs is a contraction too: a `# reduce` slab loop with literal
// bounds whose body is one `# reduce` step loop starting at 0; the step loop's body is then the
// per-k step, and an index uses k when it uses either loop's variable.
// Operand A is the first operand loaded; operand B the first whose Tile axes differ from A's. The
// Tile axes A's index uses and B's does not are the M axes, the reverse the N axes, both the batch
// axes (so `x[a0, k] * w[k, a1]` has M = {a0}, N = {a1}; a GEMV at M=1 has no M axis).
// Tests: tests/unit/contraction_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera {

struct ContractionOperand {
  std::string buffer;
  size_t rank = 0;                 // dimensions of its index
  std::vector<size_t> k_dims;      // index dimensions that use k
  std::vector<std::string> axes;   // Tile axes the index uses, in Tile order
};

struct Contraction {
  // Where the K loop is: `guards` are positions of Conds, each in the previous one's then-branch
  // (the first in the Tile body); `index` is the loop's position in the innermost of those bodies.
  std::vector<size_t> guards;
  size_t index = 0;
  std::string k;                   // the loop variable (of the slab loop, when chunked)
  int64_t k_begin = 0, k_end = 0;  // literal bounds; chunked: 0 and slabs * slab_depth (the last
                                   // slab may be shorter)
  std::string k_step;              // chunked: the step loop's variable; else empty
  int64_t slab_depth = 0;          // chunked: the step loop's largest trip count
  std::vector<std::string> accumulators;      // in order of first Accum
  std::vector<ContractionOperand> operands;   // in order of first load; at least two
  std::vector<std::string> m_axes, n_axes, batch_axes;  // in Tile order

  int64_t k_extent() const { return k_end - k_begin; }
  bool chunked() const { return !k_step.empty(); }
  const ContractionOperand& a() const { return operands[a_index]; }
  const ContractionOperand& b() const { return operands[b_index]; }
  size_t a_index = 0, b_index = 1;
};

// A GEMV that streams rows of B along K: no M axis, K not chunked and at least kRowStreamMinK
// long, and B's index uses k in its last dimension alone (nn.Linear at M=1: `x[k] * w[n, k]`), so
// each output reads one contiguous row of B that no other output reads. Its schedule is a block per output (launch_geometry's
// BN = 1) whose threads share the row with wide coalesced loads, not a thread per output walking
// a column of rows (a strided gather); split_matmul_k counts such blocks.
bool streams_rows_of_b(const Contraction& c);
constexpr int64_t kRowStreamMinK = 256;  // 8 elements per lane of a warp: shorter rows keep a thread each

// Every contraction of `tile`, in textual order.
std::vector<Contraction> find_contractions(const Tile& tile);

// The body that holds contraction `c`'s K loop (the Tile body or a guard's then-branch), and the
// K loop itself.
const Body& contraction_body(const Tile& tile, const Contraction& c);
const Loop& contraction_loop(const Tile& tile, const Contraction& c);

// `tile` with contraction `c`'s K loop replaced by `replacement` (any number of statements).
Tile replace_contraction_loop(const Tile& tile, const Contraction& c, const Body& replacement);

// In Loop IR (a LoopOp's body of nested loops): the first `# reduce` Loop with integer-literal
// bounds whose body loads `buffer` and another buffer of the same float dtype, both at indices
// that use the loop's variable (a product reading `buffer` as one of its operands). `depth` is the
// loop's extent; `rows` the product of the extents of the enclosing loops whose variables index
// `buffer` and not the other operand (the M of `buffer` as A; loops indexing both are batch
// dimensions, such as attention's heads; 0 where such a loop has no literal bounds); `dtype` the
// operands'. fuse's tensor-core rule
// asks it of a consumer about to recompute a producer.
struct LoopContraction {
  int64_t depth = 0, rows = 1;
  DType dtype = DType::F32;
};
std::optional<LoopContraction> loop_contraction_reading(const Body& body, const std::string& buffer);

}  // namespace tessera

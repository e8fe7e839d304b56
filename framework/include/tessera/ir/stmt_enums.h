// The enumerated fields of statements: axis bindings, loop roles, stage transports, combine
// scopes, shuffle modes, shared-memory swizzles, the tensor-core instruction shapes and operand
// layouts.
//
// Each enum has one table (`StmtEnumTable<E>::entries`) pairing every value with its spelling.
// The spelling is what the printer writes, the parser reads and JSON stores, so all three agree
// by construction; structural equality and hashing treat the fields like any other data.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace tessera {

// How a Tile axis is distributed (docs/ir.md, "Tile IR"); launch_geometry binds Parallel axes.
// Cluster: the block's rank in its thread-block cluster (sm_90+): the blocks of one value of the
// BLOCK axes form a cluster, one block per CLUSTER index.
enum class AxisBinding : uint8_t { Parallel, Thread, Block, Warp, Serial, Cluster };
// What a Loop or StridedLoop iterates over: `None` prints no role comment.
enum class LoopRole : uint8_t { None, Free, Reduce };
// How a Stage brings its slab into shared memory.
enum class StageTransport : uint8_t { Sync, Buffered, Async, Tma };
// Which threads a Combine combines across: the block, each warp, or every block of the cluster.
enum class CombineScope : uint8_t { Block, Warp, Cluster };
// The lane a WarpShuffle reads from (the CUDA __shfl_*_sync variants).
enum class ShuffleMode : uint8_t { Xor, Down, Up, Idx };
// How a Smem array's bytes are permuted (the TMA / wgmma shared-memory swizzle modes): None, or
// the 16-byte chunks of each 32/64/128-byte row XORed with the row index within the swizzle atom.
enum class SmemSwizzle : uint8_t { None, B32, B64, B128 };
// The shape of one warp-wide tensor-core multiply (PTX ISA, "Warp-level matrix multiply-accumulate
// instructions": mma.sync.aligned.m16n8k16 and m16n8k8): D[16x8] = A[16xK] * B[Kx8] + C, 16-bit A
// and B, f32 C and D, each matrix spread over the 32 threads of the warp as fragments (docs/ir.md).
enum class MmaShape : uint8_t { M16N8K16, M16N8K8 };
// How ldmatrix hands out each 8x8 matrix of 16-bit elements: by rows (thread t holds row t / 4,
// columns 2 (t % 4) and 2 (t % 4) + 1), or transposed (.trans: the same elements of the matrix's
// transpose), which turns a row-major K x N slab into mma's B fragment.
enum class LdMatrixLayout : uint8_t { Rows, Trans };
// Which way setmaxnreg moves a warpgroup's per-thread register count: up (it waits until the
// block's pool has the registers) or down (it returns them to the pool).
enum class RegisterAction : uint8_t { Inc, Dec };
// Who issues a Tile's TMA Stages: every thread's block-wide copies (None), or a producer warpgroup
// of its own running ahead of the THREAD axes' warpgroups, which consume the slabs (warp
// specialization, sm_90a; materialize lowers it, docs/ir.md "Warp specialization").
enum class TileProducer : uint8_t { None, Warpgroup };
// Which dimension of a wgmma operand runs contiguously through its shared-memory layout: K (a row
// of A, a row of an nn.Linear weight B[n, k]; imm-trans 0) or M / N (a row of a `x @ w` weight
// B[k, n]: the transposed layout, imm-trans 1). PTX ISA, "Shared Memory Matrix Layout" of wgmma.
enum class MatrixMajor : uint8_t { K, MN };

// The widest row a swizzle covers (a TMA box's inner row may not exceed it; 0 without a swizzle).
constexpr int64_t swizzle_span_bytes(SmemSwizzle s) {
  switch (s) {
    case SmemSwizzle::None: return 0;
    case SmemSwizzle::B32: return 32;
    case SmemSwizzle::B64: return 64;
    case SmemSwizzle::B128: return 128;
  }
  return 0;
}

// Where byte `offset` (from a base aligned to 8 spans) of a swizzled buffer lives: its 16-byte
// chunk index within the 128-byte line is XORed with the line index modulo 2, 4 or 8 (32, 64,
// 128-byte swizzle), as the TMA unit writes and the PTX ISA's swizzle modes define.
constexpr int64_t swizzle_byte_offset(SmemSwizzle s, int64_t offset) {
  const int64_t bits = s == SmemSwizzle::B32 ? 1 : s == SmemSwizzle::B64 ? 2 : s == SmemSwizzle::B128 ? 3 : 0;
  const int64_t mask = (int64_t{1} << bits) - 1;
  return offset ^ (((offset >> 7) & mask) << 4);
}

// Where element (row, k) of a wgmma operand lives, in bytes from the descriptor's start address
// and before the swizzle (which permutes the address's 16-byte chunks by its bits:
// swizzle_byte_offset of the buffer offset); `row` counts M (A) or N (B). PTX ISA, "Shared Memory
// Matrix Layout" and "Strides" of wgmma, with the canonical layouts in units of 16 bytes:
//   K-major:  8-row groups `sbo` apart, the rows of a group a swizzle span apart (16 bytes without
//     a swizzle, where the two 16-byte halves of a 16-element row are `lbo` apart);
//   MN-major: each k is a line of rows: without a swizzle 8 rows (16 bytes) a line, the 8 lines of
//     a core matrix 16 bytes apart, 8-row groups `sbo` apart and 8-k groups `lbo` apart; with one,
//     a span of rows a line, the 8 lines of an atom a span apart, atoms `lbo` apart along the rows
//     and `sbo` apart along k (the two offsets trade places, as the ISA's table defines them).
constexpr int64_t wgmma_operand_byte(SmemSwizzle s, MatrixMajor major, int64_t lbo, int64_t sbo, int64_t elem_bytes,
                                     int64_t row, int64_t k) {
  const int64_t span = swizzle_span_bytes(s);
  switch (major) {
    case MatrixMajor::K: {
      const int64_t k_byte = k * elem_bytes;
      const int64_t within = span == 0 ? (row % 8) * 16 + (k_byte / 16) * lbo + k_byte % 16 : (row % 8) * span + k_byte;
      return (row / 8) * sbo + within;
    }
    case MatrixMajor::MN: {
      const int64_t row_byte = row * elem_bytes;
      if (span == 0) return (row_byte / 16) * sbo + (k / 8) * lbo + (k % 8) * 16 + row_byte % 16;
      return (row_byte / span) * lbo + (k / 8) * sbo + (k % 8) * span + row_byte % span;
    }
  }
  return 0;
}

// The wgmma product shapes m64nNk16 (bf16 and f16 operands): N a multiple of 8 up to 256.
constexpr bool wgmma_n_is_valid(int64_t n) { return n >= 8 && n <= 256 && n % 8 == 0; }

// Threads of a warpgroup: four warps, what wgmma and setmaxnreg act on.
constexpr int64_t kWarpgroupThreads = 128;
// A named barrier's hardware id: bar.sync 1 to 15 (0 is __syncthreads').
constexpr bool named_barrier_id_is_valid(int64_t id) { return id >= 1 && id <= 15; }
// A named barrier counts whole warps, at most the block's threads.
constexpr bool named_barrier_threads_is_valid(int64_t threads, int64_t block_threads) {
  return threads > 0 && threads % 32 == 0 && threads <= block_threads;
}
// setmaxnreg's register count: a multiple of 8 from 24 to 256.
constexpr bool setmaxnreg_count_is_valid(int64_t regs) { return regs >= 24 && regs <= 256 && regs % 8 == 0; }

// The M, N and K of an mma shape, and the elements of each fragment one thread holds: A is M x K,
// B is K x N, C and D are M x N, spread evenly over the warp's 32 threads.
struct MmaDims {
  int64_t m, n, k;
  constexpr int64_t a_elements() const { return m * k / 32; }
  constexpr int64_t b_elements() const { return k * n / 32; }
  constexpr int64_t c_elements() const { return m * n / 32; }
};
constexpr MmaDims mma_dims(MmaShape s) {
  switch (s) {
    case MmaShape::M16N8K16: return {16, 8, 16};
    case MmaShape::M16N8K8: return {16, 8, 8};
  }
  return {0, 0, 0};
}

template <class E> struct StmtEnumTable;

template <> struct StmtEnumTable<AxisBinding> {
  static constexpr std::pair<AxisBinding, std::string_view> entries[] = {
      {AxisBinding::Parallel, "PARALLEL"}, {AxisBinding::Thread, "THREAD"}, {AxisBinding::Block, "BLOCK"},
      {AxisBinding::Warp, "WARP"},         {AxisBinding::Serial, "SERIAL"}, {AxisBinding::Cluster, "CLUSTER"}};
  static constexpr std::string_view what = "an axis binding (PARALLEL, THREAD, BLOCK, WARP, SERIAL, CLUSTER)";
};
template <> struct StmtEnumTable<LoopRole> {
  static constexpr std::pair<LoopRole, std::string_view> entries[] = {
      {LoopRole::None, ""}, {LoopRole::Free, "free"}, {LoopRole::Reduce, "reduce"}};
  static constexpr std::string_view what = "a loop role (free, reduce)";
};
template <> struct StmtEnumTable<StageTransport> {
  static constexpr std::pair<StageTransport, std::string_view> entries[] = {
      {StageTransport::Sync, "sync"},
      {StageTransport::Buffered, "buffered"},
      {StageTransport::Async, "async"},
      {StageTransport::Tma, "tma"}};
  static constexpr std::string_view what = "a transport (sync, buffered, async, tma)";
};
template <> struct StmtEnumTable<CombineScope> {
  static constexpr std::pair<CombineScope, std::string_view> entries[] = {
      {CombineScope::Block, "block"}, {CombineScope::Warp, "warp"}, {CombineScope::Cluster, "cluster"}};
  static constexpr std::string_view what = "a combine scope (block, warp, cluster)";
};
template <> struct StmtEnumTable<ShuffleMode> {
  static constexpr std::pair<ShuffleMode, std::string_view> entries[] = {
      {ShuffleMode::Xor, "xor"}, {ShuffleMode::Down, "down"}, {ShuffleMode::Up, "up"}, {ShuffleMode::Idx, "idx"}};
  static constexpr std::string_view what = "a shuffle mode (xor, down, up, idx)";
};

template <> struct StmtEnumTable<SmemSwizzle> {
  static constexpr std::pair<SmemSwizzle, std::string_view> entries[] = {
      {SmemSwizzle::None, "none"}, {SmemSwizzle::B32, "32B"}, {SmemSwizzle::B64, "64B"}, {SmemSwizzle::B128, "128B"}};
  static constexpr std::string_view what = "a shared-memory swizzle (none, 32B, 64B, 128B)";
};

template <> struct StmtEnumTable<MmaShape> {
  static constexpr std::pair<MmaShape, std::string_view> entries[] = {{MmaShape::M16N8K16, "m16n8k16"},
                                                                      {MmaShape::M16N8K8, "m16n8k8"}};
  static constexpr std::string_view what = "an mma shape (m16n8k16, m16n8k8)";
};
template <> struct StmtEnumTable<LdMatrixLayout> {
  static constexpr std::pair<LdMatrixLayout, std::string_view> entries[] = {{LdMatrixLayout::Rows, ""},
                                                                            {LdMatrixLayout::Trans, "trans"}};
  static constexpr std::string_view what = "an ldmatrix layout (trans or nothing)";
};

template <> struct StmtEnumTable<RegisterAction> {
  static constexpr std::pair<RegisterAction, std::string_view> entries[] = {{RegisterAction::Inc, "inc"},
                                                                            {RegisterAction::Dec, "dec"}};
  static constexpr std::string_view what = "a register action (inc, dec)";
};
template <> struct StmtEnumTable<TileProducer> {
  static constexpr std::pair<TileProducer, std::string_view> entries[] = {{TileProducer::None, "none"},
                                                                          {TileProducer::Warpgroup, "warpgroup"}};
  static constexpr std::string_view what = "a Tile producer (none, warpgroup)";
};

template <> struct StmtEnumTable<MatrixMajor> {
  static constexpr std::pair<MatrixMajor, std::string_view> entries[] = {{MatrixMajor::K, "k"},
                                                                         {MatrixMajor::MN, "mn"}};
  static constexpr std::string_view what = "an operand's major dimension (k, mn)";
};

template <class E>
concept StmtEnum = requires { StmtEnumTable<E>::entries; };

// The printed (and JSON) spelling of `e`.
template <StmtEnum E> constexpr std::string_view spelling(E e) {
  for (const auto& [value, text] : StmtEnumTable<E>::entries)
    if (value == e) return text;
  return "?";  // unreachable: every value is in its table
}

// The value spelled `text`, or nullopt.
template <StmtEnum E> constexpr std::optional<E> parse_spelling(std::string_view text) {
  for (const auto& [value, spelled] : StmtEnumTable<E>::entries)
    if (spelled == text) return value;
  return std::nullopt;
}

}  // namespace tessera

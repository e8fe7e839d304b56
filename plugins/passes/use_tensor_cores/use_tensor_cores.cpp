// use_tensor_cores: schedules a bf16/f16 matmul on the tensor cores: with mma.sync (sm_80+), warps
// compute 16 x 8 output tiles from fragments that ldmatrix loads out of staged shared-memory slabs;
// with wgmma (sm_90a), warpgroups compute 64 x N tiles from the staged slabs directly.
//
// Rewrites: a Tile kernel whose one Tile has PARALLEL axes M, N and any batch axes and one
// contraction (tessera/ir/contraction.h) over them, cut into BK-deep slabs by chunk_matmul_k (BK a
// multiple of 16 dividing K; a K loop it left whole is one slab of K), whose per-k step is
// `cast(load A[m, k]) * cast(load B[k, n])` (or B[n, k], an nn.Linear weight) accumulated into one
// f32 accumulator, or two such products of the same A by two Bs read alike, each into its own
// accumulator (a gated MLP's gate and up projections: one A slab and fragment serve both), with
// 16-bit A and B, the accumulators' Inits (and values, which move to the epilogue) before the loop
// and an epilogue of values and writes after it; the whole under a mask (a Tile body that is one
// Cond on Tile axes, the matmul in its then-branch and values and writes in its else-branch:
// causal attention's scores), whose Cond then moves into the per-element epilogue. Around that core:
// dimensions before the matrix's two indexed by constants, batch axes or the K slab (x[0, m, k],
// q[b, m, k], a[0, ko, m, ki]), batch axes A indexes and B does not (query heads sharing one KV
// head: q[0, h, m, k] * k[0, 0, n, k]); K offset by batch axes (split_matmul_k's splits); N offset
// by batch axes (`v[0, k, h / 8 * 64 + n]`: grouped-query attention's V where its projection wrote
// it, each KV head's columns shared by 8 query heads); N as two axes
// that B's index combines into one column (`w[h * 64 + d, k]`, a projection split into heads).
// With knob INSTR = mma_sync and BM = 16 MMA_M WARPS_M, BN = 8 MMA_N WARPS_N:
//     Tile(axes=(m:M=PARALLEL, n:N=PARALLEL)):       Tile(axes=(l:32=THREAD, wn:WARPS_N=THREAD,
//       acc = init(0.0)                                     wm:WARPS_M=THREAD, bn:N/BN=BLOCK, bm:M/BM=BLOCK)):
//       for ko in 0..K/BK:  # reduce                  f32[MMA_M][MMA_N][4] acc = init(0.0)
//         for ki in 0..BK:  # reduce                  bf16[MMA_M][8] fa = fragment()
//           acc <- add(acc, A[m,k] * B[k,n])    ->    bf16[MMA_N][4] fb = fragment()
//       <epilogue of acc at (m, n)>                   for ko in 0..K/BK:  # reduce
//                                                       A_smem = Stage(A, (bm BM, ko BK)): BM x BK
//                                                       B_smem = Stage(B, (ko BK, bn BN)): BK x BN
//                                                       for ks in 0..BK/16:  # reduce
//                                                         fa[i] = ldmatrix.x4(A_smem[..])       (each i)
//                                                         fb[j] = ldmatrix.x2.trans(B_smem[..]) (each j)
//                                                         acc[i, j] <- mma.m16n8k16.bf16(fa[i], fb[j])
//                                                     for i, j, e:  # unroll
//                                                       <epilogue of acc[i, j, e] at its (m, n)>
// Batch axes become BLOCK axes after bn and bm (a block per batch entry and tile). Each warp
// (wm, wn) owns MMA_M x MMA_N tiles of 16 x 8 outputs; thread l holds element e of tile
// (i, j) at row 16 i + l / 4 + 8 (e / 2) and column 8 j + 2 (l % 4) + e % 2 of the warp's tile, the
// mma C layout (docs/ir.md, "Tensor-core fragments"). Lane l names ldmatrix row l % 16 of A at
// column 8 (l / 16) (x4: the A fragment); of a k-major B row l % 16 at the tile's column (x2.trans);
// of an n-major B row l % 8 at column 8 (l / 8 % 2) (x2).
// With INSTR = wgmma (schedule_wgmma below): WARPGROUPS warpgroups of 128 threads a block, each
//   64 rows, and WGMMA_N columns; A's slab K-major, B's K-major for B[n, k] and MN-major for
//   B[k, n] (the descriptor's transposed layout), in the descriptors' interleaved layout
//   ([rows / 8][BK / 8][8][8]: 8 x 8 core matrices of 128 bytes) or TMA-copied in the 128-byte
//   swizzle ([BK / 64][rows][64], MN-major [N / 64][BK][64]; WGMMA_SLABS), one m64nNk16 product per 16-deep
//   step between a WgmmaFence and a WgmmaCommit / WgmmaWait(keep=0) per slab; thread l of
//   warpgroup w holds accumulator element i at row 64 w + 16 (l / 32) + l % 32 / 4 + 8 (i % 4 / 2),
//   column 8 (i / 4) + 2 (l % 4) + i % 2 (docs/ir.md, "Warpgroup tensor cores").
// Tails: M and N need not be multiples of the block tile: the grid covers them rounded up,
//   materialize's copies write zeros into the slab rows past the matrix in tensor-core kernels
//   (TMA fills them so itself), and the per-element epilogue is guarded by `row < M` / `col < N`.
// Knobs: INSTR (simt | mma_sync | wgmma; asked where mma_sync is legal: the shape above, the device's
//   mma_sync feature, M >= 16 and N >= 8 (fewer rows: a GEMV-like product, left to SIMT); wgmma
//   offered where the device has the wgmma feature, M >= 64 and the slabs fit
//   device.smem_per_block_static with some WGMMA_N);
//   for mma_sync WARPS_M (1, 2, 4), WARPS_N (1, 2, 4), MMA_M (1, 2, 4) and MMA_N (1, 2, 4, 8), each
//   offered where the tile runs past M and N by less than one mma tile, the slabs fit
//   device.smem_per_block_static and MMA_M x MMA_N x products <= 16 (accumulator registers).
//   Heuristic: mma_sync; 2 x 2 warps, MMA_M 2 and MMA_N 4 (a 64 x 64 block tile of 128 threads),
//   each halved while it does not fit; then, while the blocks are fewer than device.sm_count,
//   MMA_N, MMA_M, WARPS_N and WARPS_M halved in that order (a projection of few rows still gives
//   every SM a block). For wgmma WARPGROUPS (1, 2) and WGMMA_N (8, 16, ..., 256), where the tile
//   runs past M and N by less than a warpgroup's rows and 8 columns, the slabs fit and the products' accumulators hold at most 128 f32 a thread, then
//   WGMMA_SLABS (interleaved; swizzle128 where the device has TMA, 64 divides BK (and WGMMA_N, for
//   an MN-major B) and the 1024-byte aligned slabs fit). Heuristic: wgmma where offered, unless its blocks (one warpgroup, WGMMA_N
//   from 16) leave SMs idle where mma_sync's heuristic tiles fill them, else mma_sync; two warpgroups where the
//   blocks of 64-wide tiles still fill the SMs, WGMMA_N the widest up to 128 columns of products
//   whose blocks fill the SMs, else the narrowest from 16; swizzle128 where offered.
// Accepts: Tile IR; skips, with the reason, kernels of another shape. The passes after it that do
//   not know fragments leave the schedule alone (TilePass::handles_tensor_cores); materialize
//   lowers it.
// Guarantees: every output element is written once, by the thread whose fragment holds it; the
//   products of each output are summed in f32 (each mma rounds its sums once), so results differ
//   from the SIMT schedule's sequential sums by rounding only; names canonical.
// Tests: tests/golden/use_tensor_cores/, TensorCoreTest and WgmmaTest in
//   tests/e2e/random_knobs_test.cpp, tests/unit/sim_mma_test.cpp and sim_wgmma_test.cpp (the
//   statements' layouts).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tessera/ir/contraction.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/stmt_effects.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

// The instruction a matmul's products run on: the knob INSTR's values, one table.
enum class MatmulInstruction { Simt, MmaSync, Wgmma };
constexpr std::pair<MatmulInstruction, std::string_view> kInstructions[] = {{MatmulInstruction::Simt, "simt"},
                                                                            {MatmulInstruction::MmaSync, "mma_sync"},
                                                                            {MatmulInstruction::Wgmma, "wgmma"}};
std::string_view spelled(MatmulInstruction i) {
  for (const auto& [value, text] : kInstructions)
    if (value == i) return text;
  return "?";
}
// The knob's candidates: the spellings of `legal` (every value when empty), in the table's order.
std::vector<AttrValue> instruction_values(const std::set<MatmulInstruction>& legal = {}) {
  std::vector<AttrValue> values;
  for (const auto& [value, text] : kInstructions)
    if (legal.empty() || legal.count(value)) values.emplace_back(std::string(text));
  return values;
}

constexpr MmaShape kShape = MmaShape::M16N8K16;
// The padding of a staged slab row of `columns` 16-bit elements: an ldmatrix phase reads 8 rows
// of 16 bytes, conflict-free when the row pitch is an odd number of 16-byte units (the 8 rows then
// fall on the 8 groups of 4 banks), where unpadded rows of 64 or 128 bytes put 4 or 8 of them on
// the same banks. An even count of units gets 8 more elements (16 bytes); rows stay 16-byte aligned.
constexpr int64_t slab_row_pad(int64_t columns) { return (columns / 8) % 2 == 0 ? 8 : 0; }
constexpr int64_t kMaxTilesPerWarp = 16;  // MMA_M x MMA_N x products: 4 f32 accumulators each (64 registers)
// A thread's f32 accumulator registers of the warpgroup products (N / 2 per product): m64n256k16's
// 128, which leaves the rest of the 255 for addresses and the epilogue.
constexpr int64_t kMaxWgmmaAccumulators = 128;

// One product of the shared A: B times A into its own accumulator (a gated MLP's gate and up
// projections read the same activation).
struct Product {
  std::string acc;   // its f32 accumulator
  std::string b;     // its B operand's buffer
  ExprList b_lead;   // B's constant index dimensions before the matrix's two
  Expr b_k;          // a slab's origin along B's K dimension
  Expr b_n = Expr::int_(0);  // B's column (or row, n-major) of the product's n = 0: 0, or an offset of batch
                     // axes (`v[0, k, h / 8 * 64 + n]`: grouped-query attention's V, heads sharing it)
};
constexpr size_t kMaxProducts = 2;

// The matmul the pass rewrites, as found in the Tile.
struct Matmul {
  std::string m, n;              // the Tile's PARALLEL axes (n a name of its own for two N axes)
  std::string n_outer, n_inner;  // two N axes: the column is n_outer * n_inner_extent + n_inner
  int64_t n_inner_extent = 0;
  std::vector<TileAxis> batch;   // its other PARALLEL axes (batch dimensions): BLOCK axes of the schedule
  int64_t m_extent = 0, n_extent = 0;
  std::string a;                 // A's buffer
  ExprList a_lead;               // its constant index dimensions before the matrix's two
  Expr a_k;                      // a slab's origin along its K dimension (ko * BK, + s * K / S)
  std::vector<Product> products; // A times each B, in the order of their Accums
  bool b_n_major = false;        // every B indexed [n, k] (an nn.Linear weight) rather than [k, n]
  DType dtype = DType::BF16;     // A's and B's element type
  std::string slab;              // the K slab loop's variable (the K loop's, when K is one slab)
  int64_t depth = 0, slabs = 0;  // BK (K when not chunked) and K / BK
  Body epilogue;                 // the statements after the K loop
};

bool is_var(const Expr& e, const std::string& name) { return e.is(ExprKind::Var) && e.name() == name; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The two N axes of column `block_col + local` (local in [0, tile) of the block's tile): `col / inner`
// and `col % inner`, written where the tile and the inner extent nest (one divides the other) so
// that the block's part and the thread's part stay separate terms (stage_epilogue_stores then sees
// the output tile as a box: `[0, h, m, d]` of a projection split into heads).
std::pair<Expr, Expr> split_column(const Expr& block_col, const Expr& local, int64_t tile, int64_t inner) {
  if (inner % tile == 0) return {simplify(block_col / inner), simplify(block_col % inner + local)};
  if (tile % inner == 0) return {simplify(block_col / inner + local / inner), simplify(local % inner)};
  const Expr col = block_col + local;
  return {simplify(col / inner), simplify(col % inner)};
}

// The per-element epilogue, guarded where the block tiles run past M or N (a tail: the slabs'
// rows past the matrix are zeros, their products discarded).
Body guard_tails(Body per_element, const Expr& row, const Expr& col, int64_t m, int64_t bm, int64_t n, int64_t bn) {
  Expr inside;
  auto require = [&inside](Expr e) { inside = inside.defined() ? Expr::binary(ExprKind::And, inside, e) : e; };
  if (m % bm != 0) require(row < Expr::int_(m));
  if (n % bn != 0) require(col < Expr::int_(n));
  if (!inside.defined()) return per_element;
  return {Cond{inside, std::move(per_element), {}}};
}

// The matmul of `tile`, or nullopt with why it is not one this pass schedules (why_not left empty
// for a kernel without a contraction).
std::optional<Matmul> find_matmul(const Graph& g, const Tile& tile, std::string& why_not) {
  const std::vector<Contraction> cs = find_contractions(tile);
  if (cs.empty()) return std::nullopt;  // not a matmul: nothing to say
  if (cs.size() != 1) {
    why_not = "more than one contraction";
    return std::nullopt;
  }
  if (tile.axes.size() < 2 ||
      !std::all_of(tile.axes.begin(), tile.axes.end(), [](const TileAxis& a) { return a.binding == AxisBinding::Parallel; })) {
    why_not = "not a Tile of PARALLEL axes";
    return std::nullopt;
  }
  const Contraction& c = cs[0];
  const size_t products = c.accumulators.size();
  if (products == 0 || products > kMaxProducts || c.operands.size() != products + 1 || c.m_axes.empty() ||
      c.n_axes.empty() || c.n_axes.size() > 2 || !c.guards.empty() ||
      tile.axes.size() != c.m_axes.size() + c.n_axes.size() + c.batch_axes.size()) {
    why_not = "not a plain (batched) M x N x K product of A and one or two Bs, each into an accumulator of its own";
    return std::nullopt;
  }
  const int64_t depth = c.chunked() ? c.slab_depth : c.k_extent();
  if (c.k_begin != 0 || depth % 16 != 0 || c.k_extent() % depth != 0) {
    why_not = "K is not cut into slabs a multiple of 16 deep (chunk_matmul_k's BK) that divide it";
    return std::nullopt;
  }
  Matmul mm;
  std::map<std::string, int64_t> n_extents;
  // The Tile's axes as M `m`, the N axes and the batch axes (the rest, in Tile order).
  auto assign_axes = [&](const std::string& m) {
    mm.m = m;
    mm.batch.clear();
    for (const TileAxis& a : tile.axes) {
      if (a.name == mm.m) mm.m_extent = a.extent;
      else if (std::find(c.n_axes.begin(), c.n_axes.end(), a.name) != c.n_axes.end()) n_extents[a.name] = a.extent;
      else mm.batch.push_back(a);
    }
  };
  assign_axes(c.m_axes[0]);
  mm.slab = c.k;  // unchunked: the K loop itself becomes the one slab's loop
  mm.depth = depth;
  mm.slabs = c.k_extent() / depth;

  // The step: load A, and per product load B, a cast of each to f32, their product, accumulated.
  const Loop& k_loop = contraction_loop(tile, c);
  const auto* step_loop = !c.chunked() ? &k_loop : k_loop.body.size() == 1 ? k_loop.body[0].as<Loop>() : nullptr;
  const std::string step_shape = "the per-k step is not loads of A and each B, their casts, the products and Accums";
  if (step_loop == nullptr || step_loop->body.size() != 4 * products + 2) {
    why_not = step_shape;
    return std::nullopt;
  }
  std::map<std::string, const Load*> loads;
  std::map<std::string, std::string> cast_of;  // cast value -> loaded value
  std::map<std::string, const Assign*> product_of;
  std::vector<const Accum*> accums;
  for (const Stmt& s : step_loop->body) {
    if (const auto* l = s.as<Load>()) loads[l->dst] = l;
    else if (const auto* a = s.as<Assign>(); a && a->op == ElementwiseFn::Cast && a->type == ValueType{} &&
                                              a->args.size() == 1 && a->args[0].is(ExprKind::Value))
      cast_of[a->dst] = a->args[0].name();
    else if (a && a->op == ElementwiseFn::Mul && a->type == ValueType{} && a->args.size() == 2) product_of[a->dst] = a;
    else if (const auto* acc = s.as<Accum>(); acc && acc->op == CombineFn::Add && acc->index.empty()) accums.push_back(acc);
  }
  if (loads.size() != products + 1 || cast_of.size() != products + 1 || product_of.size() != products ||
      accums.size() != products) {
    why_not = step_shape;
    return std::nullopt;
  }
  const Load* la = nullptr;
  std::vector<const Load*> lbs;  // per product, in the order of the Accums
  for (const Accum* accum : accums) {
    auto product = accum->value.is(ExprKind::Value) ? product_of.find(accum->value.name()) : product_of.end();
    if (product == product_of.end()) {
      why_not = step_shape;
      return std::nullopt;
    }
    const Load* a_load = nullptr;
    const Load* b_load = nullptr;
    for (const Expr& arg : product->second->args) {
      if (!arg.is(ExprKind::Value) || !cast_of.count(arg.name()) || !loads.count(cast_of[arg.name()])) {
        why_not = "a product does not multiply two cast loads";
        return std::nullopt;
      }
      const Load* l = loads[cast_of[arg.name()]];
      (l->buffer == c.a().buffer ? a_load : b_load) = l;
    }
    if (a_load == nullptr || b_load == nullptr || (la != nullptr && a_load != la)) {
      why_not = "the products do not multiply one A by each B";
      return std::nullopt;
    }
    la = a_load;
    lbs.push_back(b_load);
    mm.products.push_back(Product{accum->acc, b_load->buffer, {}, Expr()});
  }
  const Load* lb = lbs[0];
  mm.dtype = la->type.dtype;
  if ((mm.dtype != DType::BF16 && mm.dtype != DType::F16) || !la->type.is_scalar() ||
      !std::all_of(lbs.begin(), lbs.end(), [&](const Load* l) { return l->type == la->type; })) {
    why_not = "the operands are not both bf16 or both f16";
    return std::nullopt;
  }
  auto same = [](const Expr& e, const Expr& want) { return structurally_equal(simplify(e), want); };
  auto is_batch = [&mm](const std::string& v) {
    return std::any_of(mm.batch.begin(), mm.batch.end(), [&v](const TileAxis& b) { return b.name == v; });
  };
  // Names whose value is the same for a whole K slab of a block: the batch axes and the slab loop's
  // variable (when K is chunked: the step loop runs inside the slab).
  auto slab_uniform = [&is_batch, &c](const Expr& e) {
    for (const std::string& v : free_vars(e))
      if (!is_batch(v) && !(c.chunked() && v == c.k)) return false;
    return true;
  };
  // The last two index dimensions are the matrix's; any before them are uniform over a slab:
  // constants (`x[0, m, k]` of a (1, S, H) activation), batch axes (`q[a0, m, k]` of a bmm) or the
  // slab's K (`a[0, ko, m, ki]`: attention heads read along K, one head a slab).
  auto leading = [&slab_uniform](const Load& l, ExprList& lead) {
    if (l.index.size() < 2) return false;
    lead.assign(l.index.begin(), l.index.end() - 2);
    return std::all_of(lead.begin(), lead.end(), slab_uniform);
  };
  // An index along K within the slab: the step (k when unchunked) plus an origin uniform over the
  // slab (`ko * 64`, or with split-K's `s * 1024`), kept as the Stage's origin along that dimension.
  const Expr step = c.chunked() ? Expr::var(c.k_step) : Expr::var(c.k);
  auto along_k = [&slab_uniform, &step](const Expr& e, Expr& origin) {
    const Expr diff = simplify(e - step);
    if (!slab_uniform(diff)) return false;
    origin = diff;
    return true;
  };
  // An index along N: n plus an offset of batch axes only (uniform over the whole block),
  // kept as the B Stage's origin along that dimension.
  auto along_n = [&is_batch](const Expr& e, const Expr& n_index, Expr& origin) {
    const Expr diff = simplify(e - n_index);
    const std::vector<std::string> vars = free_vars(diff);
    if (!std::all_of(vars.begin(), vars.end(), is_batch)) return false;
    origin = diff;
    return true;
  };
  const size_t ra = la->index.size(), rb = lb->index.size();
  // Several M axes (attention heads over one shared KV head, which B does not index): M is the one
  // A's row index names, the others (A's leading dimensions) batch axes B broadcasts over.
  if (c.m_axes.size() > 1 && ra >= 2 && la->index[ra - 2].is(ExprKind::Var) &&
      std::count(c.m_axes.begin(), c.m_axes.end(), la->index[ra - 2].name()) == 1)
    assign_axes(la->index[ra - 2].name());
  if (!leading(*la, mm.a_lead) || !is_var(la->index[ra - 2], mm.m) || !along_k(la->index[ra - 1], mm.a_k)) {
    why_not = "A is not read as A[m, k]";
    return std::nullopt;
  }
  // N: one axis, or two that B's index combines into one column (`w[h * 64 + d, k]`: a projection
  // whose output is split into heads), scheduled as one N axis of their product's extent.
  Expr n_index;
  if (c.n_axes.size() == 1) {
    mm.n = c.n_axes[0];
    mm.n_extent = n_extents[mm.n];
    n_index = Expr::var(mm.n);
  } else {
    for (const auto& [outer, inner] : {std::pair{c.n_axes[0], c.n_axes[1]}, std::pair{c.n_axes[1], c.n_axes[0]}}) {
      const Expr combined = simplify(Expr::var(outer) * n_extents[inner] + Expr::var(inner));
      if (rb >= 2 && (same(lb->index[rb - 1], combined) || same(lb->index[rb - 2], combined))) {
        mm.n_outer = outer;
        mm.n_inner = inner;
        mm.n_inner_extent = n_extents[inner];
        n_index = combined;
      }
    }
    if (!n_index.defined()) {
      why_not = "its two N axes do not index one column of B";
      return std::nullopt;
    }
    std::set<std::string> names = bound_names(tile.body);
    for (const TileAxis& a : tile.axes) names.insert(a.name);
    mm.n = fresh_name("n", names);
    mm.n_extent = n_extents[mm.n_outer] * mm.n_inner_extent;
  }
  for (size_t p = 0; p < products; ++p) {
    const Load& l = *lbs[p];
    Product& product = mm.products[p];
    bool n_major = false;
    if (l.index.size() == rb && leading(l, product.b_lead) && along_k(l.index[rb - 2], product.b_k) &&
        along_n(l.index[rb - 1], n_index, product.b_n)) {
      n_major = false;
    } else if (l.index.size() == rb && leading(l, product.b_lead) && along_n(l.index[rb - 2], n_index, product.b_n) &&
               along_k(l.index[rb - 1], product.b_k)) {
      n_major = true;
    } else {
      why_not = "B is read as neither B[k, n] nor B[n, k]";
      return std::nullopt;
    }
    if (p > 0 && n_major != mm.b_n_major) {
      why_not = "the Bs are not all read the same way ([k, n] or [n, k])";
      return std::nullopt;
    }
    mm.b_n_major = n_major;
    const Node* nb = g.find(product.b);
    if (nb == nullptr || static_cast<size_t>(nb->type.rank()) != rb) {
      why_not = "an operand is not a graph tensor of its index's rank";
      return std::nullopt;
    }
  }
  mm.a = la->buffer;
  const Node* na = g.find(mm.a);
  if (na == nullptr || static_cast<size_t>(na->type.rank()) != ra) {
    why_not = "an operand is not a graph tensor of its index's rank";
    return std::nullopt;
  }

  // Prologue: the accumulators' Init(0.0) and values (a residual's load), which move to the
  // epilogue; epilogue: values and writes.
  const Body& body = tile.body;
  std::set<std::string> initialized;
  auto is_accumulator = [&mm](const std::string& name) {
    return std::any_of(mm.products.begin(), mm.products.end(), [&](const Product& p) { return p.acc == name; });
  };
  for (size_t i = 0; i < c.index; ++i) {
    const Stmt& s = body[i];
    if (const auto* init = s.as<Init>(); init && is_accumulator(init->acc) && init->type == ValueType{} &&
                                          structurally_equal(init->value, Expr::float_(0.0))) {
      initialized.insert(init->acc);
    } else if (computes_value_only(s)) {
      mm.epilogue.push_back(s);
    } else {
      why_not = "the statements before the K loop are not the accumulator's Init(0.0) and values";
      return std::nullopt;
    }
  }
  if (initialized.size() != products) {
    why_not = "an accumulator is not initialized to 0.0 before the K loop";
    return std::nullopt;
  }
  for (size_t i = c.index + 1; i < body.size(); ++i) {
    const Stmt& s = body[i];
    if (!s.is<Load>() && !s.is<Assign>() && !s.is<Select>() && !s.is<Write>()) {
      why_not = "the epilogue holds a " + std::string(stmt_kind_name(s.kind())) + " (values and writes only)";
      return std::nullopt;
    }
    mm.epilogue.push_back(s);
  }
  return mm;
}

// The matmul of `tile`, or of a masked one: a Tile body that is one Cond on the Tile's axes alone
// (a causal mask, `if n <= m:`) whose then-branch holds the matmul and whose else-branch only
// values and writes (the masked outputs' -inf). The products then run for every output of a block
// tile and the Cond moves into the per-element epilogue: each element takes the branch its row and
// column take.
std::optional<Matmul> find_masked_matmul(const Graph& g, const Tile& tile, std::string& why_not) {
  const auto* mask = tile.body.size() == 1 ? tile.body[0].as<Cond>() : nullptr;
  if (mask == nullptr || mask->else_body.empty()) return find_matmul(g, tile, why_not);
  std::set<std::string> axes;
  for (const TileAxis& a : tile.axes) axes.insert(a.name);
  for (const std::string& v : free_vars(mask->cond))
    if (!axes.count(v)) return find_matmul(g, tile, why_not);
  for (const Stmt& s : mask->else_body)
    if (!s.is<Load>() && !s.is<Assign>() && !s.is<Select>() && !s.is<Write>()) return find_matmul(g, tile, why_not);
  Tile core = tile;
  core.body = mask->then_body;
  std::optional<Matmul> mm = find_matmul(g, core, why_not);
  if (mm) mm->epilogue = {Cond{mask->cond, mm->epilogue, mask->else_body}};
  return mm;
}

// The warp and tile counts of the schedule.
struct Geometry {
  int64_t warps_m = 1, warps_n = 1, mma_m = 1, mma_n = 1;
  int64_t bm() const { return 16 * mma_m * warps_m; }
  int64_t bn() const { return 8 * mma_n * warps_n; }
};

// The geometry knobs, one table for their specs and the order the pass asks them in.
struct GeometryKnob {
  std::string_view knob;
  int64_t Geometry::*field;
  std::vector<int64_t> values;
  std::string_view help;
};
const GeometryKnob kGeometryKnobs[] = {
    {"WARPS_M", &Geometry::warps_m, {1, 2, 4}, "warps of a block along M"},
    {"WARPS_N", &Geometry::warps_n, {1, 2, 4}, "warps of a block along N"},
    {"MMA_M", &Geometry::mma_m, {1, 2, 4}, "16-row mma tiles of a warp along M"},
    {"MMA_N", &Geometry::mma_n, {1, 2, 4, 8}, "8-column mma tiles of a warp along N"},
};

Tile schedule(const Matmul& mm, const Geometry& geo, std::set<std::string>& taken) {
  const std::string lane = fresh_name("lane", taken), wn = fresh_name("wn", taken), wm = fresh_name("wm", taken),
                    bn = fresh_name("bn", taken), bm = fresh_name("bm", taken), ks = fresh_name("ks", taken),
                    i = fresh_name("i", taken), j = fresh_name("j", taken), e = fresh_name("e", taken),
                    fa = fresh_name("fa", taken);
  const std::string a_smem = fresh_name(mm.a + "_smem", taken);
  std::vector<std::string> fb, b_smem;  // per product
  for (const Product& p : mm.products) {
    fb.push_back(fresh_name("fb", taken));
    b_smem.push_back(fresh_name(p.b + "_smem", taken));
  }
  const MmaDims d = mma_dims(kShape);
  const Expr L = Expr::var(lane), I = Expr::var(i), J = Expr::var(j), E = Expr::var(e), KS = Expr::var(ks);
  const int64_t bm_size = geo.bm(), bn_size = geo.bn();

  Tile out;
  out.axes = {TileAxis{lane, 32, AxisBinding::Thread}, TileAxis{wn, geo.warps_n, AxisBinding::Thread},
              TileAxis{wm, geo.warps_m, AxisBinding::Thread}, TileAxis{bn, ceil_div(mm.n_extent, bn_size), AxisBinding::Block},
              TileAxis{bm, ceil_div(mm.m_extent, bm_size), AxisBinding::Block}};
  for (const TileAxis& b : mm.batch) out.axes.push_back(TileAxis{b.name, b.extent, AxisBinding::Block});
  for (const Product& p : mm.products)
    out.body.push_back(Init{p.acc, Expr::float_(0.0), ValueType{DType::F32, 1, {geo.mma_m, geo.mma_n, d.c_elements()}}});
  out.body.push_back(Fragment{fa, ValueType{mm.dtype, 1, {geo.mma_m, d.a_elements()}}});
  for (const std::string& f : fb) out.body.push_back(Fragment{f, ValueType{mm.dtype, 1, {geo.mma_n, d.b_elements()}}});

  // One K slab: stage both operands' slabs, then BK / 16 steps of fragment loads and products.
  // A slab of rows x columns at (row, column) of an operand's last two dimensions.
  auto stage = [](const std::string& dst, const std::string& buffer, const ExprList& lead, Expr row, Expr col,
                  SlabDim rows, SlabDim cols) {
    ExprList origin = lead;
    origin.push_back(std::move(row));
    origin.push_back(std::move(col));
    rows.source_dim = static_cast<int64_t>(lead.size());
    cols.source_dim = static_cast<int64_t>(lead.size()) + 1;
    const int64_t pad = slab_row_pad(cols.extent);
    Stage st{dst, buffer, std::move(origin), {std::move(rows), std::move(cols)}};
    st.pad = pad;
    return st;
  };
  Body slab;
  slab.push_back(stage(a_smem, mm.a, mm.a_lead, Expr::var(bm) * bm_size, mm.a_k, SlabDim{bm, bm_size},
                       SlabDim{mm.slab, mm.depth}));
  for (size_t p = 0; p < mm.products.size(); ++p) {
    const Product& pr = mm.products[p];
    if (mm.b_n_major)
      slab.push_back(stage(b_smem[p], pr.b, pr.b_lead, simplify(Expr::var(bn) * bn_size + pr.b_n), pr.b_k, SlabDim{bn, bn_size},
                           SlabDim{mm.slab, mm.depth}));
    else
      slab.push_back(stage(b_smem[p], pr.b, pr.b_lead, pr.b_k, simplify(Expr::var(bn) * bn_size + pr.b_n), SlabDim{mm.slab, mm.depth},
                           SlabDim{bn, bn_size}));
  }
  const Expr warp_row = Expr::var(wm) * (16 * geo.mma_m), warp_col = Expr::var(wn) * (8 * geo.mma_n);
  Body step;
  step.push_back(Loop{i, Expr::int_(0), Expr::int_(geo.mma_m), LoopRole::None, geo.mma_m,
                      {LdMatrix{fa, {I}, a_smem, {warp_row + I * 16 + L % 16, KS * 16 + L / 16 * 8}, 4}}});
  for (size_t p = 0; p < mm.products.size(); ++p) {
    const LdMatrix load_b =
        mm.b_n_major ? LdMatrix{fb[p], {J}, b_smem[p], {warp_col + J * 8 + L % 8, KS * 16 + L / 8 % 2 * 8}, 2}
                     : LdMatrix{fb[p], {J}, b_smem[p], {KS * 16 + L % 16, warp_col + J * 8}, 2, LdMatrixLayout::Trans};
    step.push_back(Loop{j, Expr::int_(0), Expr::int_(geo.mma_n), LoopRole::None, geo.mma_n, {load_b}});
  }
  for (size_t p = 0; p < mm.products.size(); ++p)
    step.push_back(Loop{i, Expr::int_(0), Expr::int_(geo.mma_m), LoopRole::None, geo.mma_m,
                        {Loop{j, Expr::int_(0), Expr::int_(geo.mma_n), LoopRole::None, geo.mma_n,
                              {MmaSync{mm.products[p].acc, {I, J}, fa, {I}, fb[p], {J}, kShape, mm.dtype}}}}});
  slab.push_back(Loop{ks, Expr::int_(0), Expr::int_(mm.depth / 16), LoopRole::Reduce, 0, std::move(step)});
  out.body.push_back(Loop{mm.slab, Expr::int_(0), Expr::int_(mm.slabs), LoopRole::Reduce, 0, std::move(slab)});

  // The epilogue once per accumulator element, at the element's row and column (the C layout).
  const Expr row = Expr::var(bm) * bm_size + warp_row + I * 16 + L / 4 + E / 2 * 8;
  const Expr local_col = warp_col + J * 8 + L % 4 * 2 + E % 2;
  const Expr col = Expr::var(bn) * bn_size + local_col;
  // substitute replaces Values too: the accumulator becomes its element.
  std::map<std::string, Expr> at_element = {{mm.m, row}, {mm.n, col}};
  for (const Product& p : mm.products) at_element[p.acc] = Expr::element(p.acc, {I, J, E});
  if (!mm.n_outer.empty())
    std::tie(at_element[mm.n_outer], at_element[mm.n_inner]) =
        split_column(Expr::var(bn) * bn_size, local_col, bn_size, mm.n_inner_extent);
  Body per_element = guard_tails(substitute_and_simplify(mm.epilogue, at_element, {}), simplify(row), simplify(col),
                                 mm.m_extent, bm_size, mm.n_extent, bn_size);
  out.body.push_back(Loop{i, Expr::int_(0), Expr::int_(geo.mma_m), LoopRole::Free, geo.mma_m,
                          {Loop{j, Expr::int_(0), Expr::int_(geo.mma_n), LoopRole::Free, geo.mma_n,
                                {Loop{e, Expr::int_(0), Expr::int_(d.c_elements()), LoopRole::Free, d.c_elements(),
                                      std::move(per_element)}}}}});
  return out;
}

// ---- wgmma (sm_90a) ----

// How the warpgroup schedule's slabs lie in shared memory: the knob WGMMA_SLABS's values, one table.
//   interleaved: 8 x 8 core matrices of 128 contiguous bytes ([rows / 8][BK / 8][8][8]), copied by
//     the threads (cp.async after async_copy); any BK a multiple of 16.
//   swizzle128: rows of 64 elements (128 bytes) in the 128-byte swizzle, [BK / 64][rows][64], each
//     block of 64 columns a TMA box copy (the layout TMA writes and wgmma reads conflict-free);
//     BK a multiple of 64, the device's TMA.
enum class WgmmaSlabs { Interleaved, Swizzle128 };
constexpr std::pair<WgmmaSlabs, std::string_view> kWgmmaSlabs[] = {{WgmmaSlabs::Interleaved, "interleaved"},
                                                                 {WgmmaSlabs::Swizzle128, "swizzle128"}};
std::string_view spelled(WgmmaSlabs l) {
  for (const auto& [value, text] : kWgmmaSlabs)
    if (value == l) return text;
  return "?";
}

// The warpgroup schedule: WARPGROUPS warpgroups a block, each 64 rows of the block's tile, and the
// block's N columns one m64nNk16 product wide (N = WGMMA_N), its slabs laid out as `slabs` says.
struct WgmmaGeometry {
  int64_t warpgroups = 1, n = 64;
  WgmmaSlabs slabs = WgmmaSlabs::Interleaved;
  int64_t bm() const { return 64 * warpgroups; }
};
const int64_t kWarpgroupCounts[] = {1, 2};
const int64_t kWgmmaNs[] = {8, 16, 32, 64, 128, 256};
// The narrowest product the heuristic picks: m64n8k16 moves 64 x 16 of A per 8 columns.
constexpr int64_t kMinHeuristicWgmmaN = 16;

// A slab of `rows` x BK of an operand whose last two dimensions are [rows, K] (K-major: A, an
// nn.Linear weight) or [K, rows] (MN-major: a `x @ w` weight), its first row at `row` and its
// first k at `col`, laid out as `layout` says:
//   interleaved: 8 x 8 core matrices of 128 contiguous bytes, [rows / 8][BK / 8][8][8] (the inner
//     two [row][k] K-major, [k][row] MN-major), so that a descriptor with lbo = 128 (the next 8
//     k) and sbo = BK * 16 bytes (the next 8 rows) reads it either way;
//   swizzle128: blocks of 64 elements (128 bytes) along the contiguous dimension, 1024-byte
//     aligned and copied by TMA in the 128-byte swizzle: K-major [BK / 64][rows][64], read with
//     sbo = 1024 (8 rows of 128 bytes); MN-major [rows / 64][BK][64], read with sbo = 1024 (8 k of
//     128 bytes) and lbo = BK * 128 (the next 64 rows).
Stage wgmma_stage(WgmmaSlabs layout, MatrixMajor major, const std::string& dst, const std::string& buffer,
                  const ExprList& lead, Expr row, Expr col, int64_t rows, int64_t depth, std::set<std::string>& taken) {
  const auto first = static_cast<int64_t>(lead.size());
  const int64_t r_dim = major == MatrixMajor::K ? first : first + 1, k_dim = major == MatrixMajor::K ? first + 1 : first;
  ExprList origin = lead;
  origin.resize(lead.size() + 2);
  origin[static_cast<size_t>(r_dim)] = std::move(row);
  origin[static_cast<size_t>(k_dim)] = std::move(col);
  Stage st{dst, buffer, std::move(origin), {}};
  switch (layout) {
    case WgmmaSlabs::Interleaved: {
      SlabDim r{fresh_name("r", taken), 8, r_dim, 1}, k{fresh_name("k", taken), 8, k_dim, 1};
      st.slab = {SlabDim{fresh_name("rg", taken), rows / 8, r_dim, 8}, SlabDim{fresh_name("kg", taken), depth / 8, k_dim, 8}};
      if (major == MatrixMajor::K) st.slab.insert(st.slab.end(), {r, k});
      else st.slab.insert(st.slab.end(), {k, r});
      break;
    }
    case WgmmaSlabs::Swizzle128:
      if (major == MatrixMajor::K)
        st.slab = {SlabDim{fresh_name("kb", taken), depth / 64, k_dim, 64}, SlabDim{fresh_name("r", taken), rows, r_dim, 1},
                   SlabDim{fresh_name("k", taken), 64, k_dim, 1}};
      else
        st.slab = {SlabDim{fresh_name("rb", taken), rows / 64, r_dim, 64}, SlabDim{fresh_name("k", taken), depth, k_dim, 1},
                   SlabDim{fresh_name("r", taken), 64, r_dim, 1}};
      st.transport = StageTransport::Tma;
      st.align = 8 * swizzle_span_bytes(SmemSwizzle::B128);
      st.swizzle = SmemSwizzle::B128;
      break;
  }
  return st;
}

//     Tile(axes=(l:128=THREAD, wg:WARPGROUPS=THREAD, bn:N/BN=BLOCK, bm:M/BM=BLOCK)):
//       f32[BN / 2] acc = init(0.0)
//       for ko in 0..K/BK:  # reduce
//         A_smem = Stage(A, (bm BM, ko BK)): [BM/8][BK/8][8][8]
//         B_smem = Stage(B, (bn BN, ko BK)): [BN/8][BK/8][8][8]
//         WgmmaFence()
//         for ks in 0..BK/16:  # reduce
//           acc <- wgmma.m64n{BN}k16(desc(A_smem[wg 8, 2 ks, 0, 0], lbo=128, sbo=16 BK), desc(B_smem[0, 2 ks, 0, 0], ...))
//         WgmmaCommit()
//         WgmmaWait(keep=0)
//       for i in 0..BN/2:  # unroll
//         <epilogue of acc[i] at row 64 wg + 16 (l / 32) + l % 32 / 4 + 8 (i % 4 / 2),
//                                column 8 (i / 4) + 2 (l % 4) + i % 2 of the block's tile>
// (the interleaved slabs; swizzle128 stages them by TMA, waits with AsyncWait(keep=0), and starts
// the step's descriptors at [ks / 4, row, ks % 4 * 16] with lbo = 16, sbo = 1024, swizzle=128B).
Tile schedule_wgmma(const Matmul& mm, const WgmmaGeometry& geo, std::set<std::string>& taken) {
  const std::string lane = fresh_name("lane", taken), wg = fresh_name("wg", taken), bn = fresh_name("bn", taken),
                    bm = fresh_name("bm", taken), ks = fresh_name("ks", taken), i = fresh_name("i", taken);
  const std::string a_smem = fresh_name(mm.a + "_smem", taken);
  std::vector<std::string> b_smem;  // per product
  for (const Product& p : mm.products) b_smem.push_back(fresh_name(p.b + "_smem", taken));
  const Expr L = Expr::var(lane), I = Expr::var(i), KS = Expr::var(ks), WG = Expr::var(wg);
  const int64_t bm_size = geo.bm(), bn_size = geo.n;

  Tile out;
  out.axes = {TileAxis{lane, kWarpgroupThreads, AxisBinding::Thread}, TileAxis{wg, geo.warpgroups, AxisBinding::Thread},
              TileAxis{bn, ceil_div(mm.n_extent, bn_size), AxisBinding::Block},
              TileAxis{bm, ceil_div(mm.m_extent, bm_size), AxisBinding::Block}};
  for (const TileAxis& b : mm.batch) out.axes.push_back(TileAxis{b.name, b.extent, AxisBinding::Block});
  for (const Product& p : mm.products) out.body.push_back(Init{p.acc, Expr::float_(0.0), ValueType{DType::F32, 1, {geo.n / 2}}});

  Body slab;
  const MatrixMajor b_major = mm.b_n_major ? MatrixMajor::K : MatrixMajor::MN;
  slab.push_back(wgmma_stage(geo.slabs, MatrixMajor::K, a_smem, mm.a, mm.a_lead, Expr::var(bm) * bm_size, mm.a_k, bm_size,
                             mm.depth, taken));
  for (size_t p = 0; p < mm.products.size(); ++p)
    slab.push_back(wgmma_stage(geo.slabs, b_major, b_smem[p], mm.products[p].b, mm.products[p].b_lead,
                               simplify(Expr::var(bn) * bn_size + mm.products[p].b_n), mm.products[p].b_k, bn_size,
                               mm.depth, taken));
  // The products' descriptors but their B operand (each product's slab) and accumulator.
  WgmmaMma product{"", {}, geo.n, mm.dtype, a_smem, {}, 0, 0, SmemSwizzle::None, "", {}, 0, 0, SmemSwizzle::None, b_major};
  switch (geo.slabs) {
    case WgmmaSlabs::Interleaved: {
      const int64_t sbo = mm.depth * 16;  // BK / 8 core matrices of 128 bytes between 8-row groups
      product.a_index = {WG * 8, KS * 2, Expr::int_(0), Expr::int_(0)};
      product.b_index = {Expr::int_(0), KS * 2, Expr::int_(0), Expr::int_(0)};
      product.a_lbo = product.b_lbo = 128;
      product.a_sbo = product.b_sbo = sbo;
      break;
    }
    case WgmmaSlabs::Swizzle128: {
      slab.push_back(AsyncWait{0});  // the TMA copies land
      product.a_index = {KS / 4, WG * 64, KS % 4 * 16};
      product.a_lbo = 16;  // unused by the K-major swizzled layouts
      product.a_sbo = product.b_sbo = 8 * swizzle_span_bytes(SmemSwizzle::B128);
      switch (b_major) {
        case MatrixMajor::K:
          product.b_index = {KS / 4, Expr::int_(0), KS % 4 * 16};
          product.b_lbo = 16;
          break;
        case MatrixMajor::MN:  // [BN / 64][BK][64]: the step's 16 k, the next 64 columns BK rows on
          product.b_index = {Expr::int_(0), KS * 16, Expr::int_(0)};
          product.b_lbo = mm.depth * swizzle_span_bytes(SmemSwizzle::B128);
          break;
      }
      product.a_swizzle = product.b_swizzle = SmemSwizzle::B128;
      break;
    }
  }
  slab.push_back(WgmmaFence{});
  Body products;
  for (size_t p = 0; p < mm.products.size(); ++p) {
    WgmmaMma each = product;
    each.acc = mm.products[p].acc;
    each.b = b_smem[p];
    products.push_back(std::move(each));
  }
  slab.push_back(Loop{ks, Expr::int_(0), Expr::int_(mm.depth / 16), LoopRole::Reduce, 0, std::move(products)});
  slab.push_back(WgmmaCommit{});
  slab.push_back(WgmmaWait{0});
  out.body.push_back(Loop{mm.slab, Expr::int_(0), Expr::int_(mm.slabs), LoopRole::Reduce, 0, std::move(slab)});

  // The epilogue once per accumulator element, at the element's row and column.
  const Expr row = Expr::var(bm) * bm_size + WG * 64 + L / 32 * 16 + L % 32 / 4 + I % 4 / 2 * 8;
  const Expr local_col = I / 4 * 8 + L % 4 * 2 + I % 2;
  const Expr col = Expr::var(bn) * bn_size + local_col;
  std::map<std::string, Expr> at_element = {{mm.m, row}, {mm.n, col}};
  for (const Product& p : mm.products) at_element[p.acc] = Expr::element(p.acc, {I});
  if (!mm.n_outer.empty())
    std::tie(at_element[mm.n_outer], at_element[mm.n_inner]) =
        split_column(Expr::var(bn) * bn_size, local_col, bn_size, mm.n_inner_extent);
  out.body.push_back(Loop{i, Expr::int_(0), Expr::int_(geo.n / 2), LoopRole::Free, geo.n / 2,
                          guard_tails(substitute_and_simplify(mm.epilogue, at_element, {}), simplify(row),
                                      simplify(col), mm.m_extent, bm_size, mm.n_extent, bn_size)});
  return out;
}

class UseTensorCoresPass final : public TilePass {
 public:
  std::string_view name() const override { return "use_tensor_cores"; }
  std::string_view summary() const override {
    return "schedule a bf16/f16 matmul on the tensor cores: warps multiply ldmatrix-loaded fragments of staged slabs "
           "with mma.sync (sm_80+), or warpgroups the staged slabs with wgmma (sm_90a)";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    std::vector<KnobSpec> specs = {
        KnobSpec{"INSTR", KnobType::String, instruction_values(), std::nullopt,
                 "the instruction the products run on: simt (a thread per output), mma_sync (warp tensor-core "
                 "tiles) or wgmma (warpgroup products from shared memory, sm_90a)"}};
    for (const GeometryKnob& k : kGeometryKnobs)
      specs.push_back(KnobSpec{std::string(k.knob), KnobType::Int, {k.values.begin(), k.values.end()}, std::nullopt,
                               std::string(k.help)});
    specs.push_back(KnobSpec{"WARPGROUPS", KnobType::Int, {std::begin(kWarpgroupCounts), std::end(kWarpgroupCounts)},
                             std::nullopt, "wgmma: warpgroups of a block, 64 rows each"});
    specs.push_back(KnobSpec{"WGMMA_N", KnobType::Int, {std::begin(kWgmmaNs), std::end(kWgmmaNs)}, std::nullopt,
                             "wgmma: the block's columns, one m64nNk16 product wide"});
    std::vector<AttrValue> layouts;
    for (const auto& [value, text] : kWgmmaSlabs) layouts.emplace_back(std::string(text));
    specs.push_back(KnobSpec{"WGMMA_SLABS", KnobType::String, layouts, std::nullopt,
                             "wgmma: the slabs' layout: interleaved (8 x 8 core matrices, copied by the threads) or "
                             "swizzle128 (128-byte swizzled rows, TMA box copies; BK a multiple of 64)"});
    return specs;
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override {
    const DeviceDesc& device = ctx.device();
    if (!device.features.mma_sync) return Status::ok();  // no tensor-core mma.sync before sm_80
    std::string why_not;
    std::optional<Matmul> mm = find_masked_matmul(ctx.graph(), tile, why_not);
    if (!mm) {
      if (!why_not.empty()) ctx.skip(node, why_not);
      return Status::ok();
    }
    // The padded slabs' bytes: A is BM x BK; each B BN x BK n-major, BK x BN k-major.
    const auto products = static_cast<int64_t>(mm->products.size());
    auto slab_bytes = [&](const Geometry& g) {
      const int64_t k_row = mm->depth + slab_row_pad(mm->depth);
      const int64_t b = mm->b_n_major ? g.bn() * k_row : mm->depth * (g.bn() + slab_row_pad(g.bn()));
      return (g.bm() * k_row + products * b) * dtype_bytes(mm->dtype);
    };
    // Every product's accumulator tiles count against a warp's registers.
    // A tile runs past M or N by less than one mma tile (tails: zero rows, guarded outputs).
    auto fits = [&](const Geometry& g) {
      return g.bm() < mm->m_extent + 16 && g.bn() < mm->n_extent + 8 &&
             products * g.mma_m * g.mma_n <= kMaxTilesPerWarp && slab_bytes(g) <= device.smem_per_block_static;
    };
    if (mm->m_extent < 16 || mm->n_extent < 8) {  // a GEMV-like product: the SIMT schedules stream it
      ctx.skip(node, "M = " + std::to_string(mm->m_extent) + " is below one 16-row mma tile or N = " +
                         std::to_string(mm->n_extent) + " below 8 columns");
      return Status::ok();
    }
    // wgmma where the device has it (sm_90a) and M has a warpgroup's 64 rows; B K-major (an
    // nn.Linear weight, B[n, k]) or MN-major (B[k, n], the descriptor's transposed layout).
    // Every product's accumulator is N / 2 f32 a thread: at most kMaxWgmmaAccumulators in all.
    auto wgmma_fits = [&](const WgmmaGeometry& g) {
      return mm->m_extent >= 64 && g.bm() < mm->m_extent + 64 && g.n < mm->n_extent + 8 &&
             products * g.n / 2 <= kMaxWgmmaAccumulators &&
             (g.bm() + products * g.n) * mm->depth * dtype_bytes(mm->dtype) <= device.smem_per_block_static;
    };
    const bool wgmma_legal = device.features.wgmma &&
                             std::any_of(std::begin(kWgmmaNs), std::end(kWgmmaNs),
                                         [&](int64_t n) { return wgmma_fits(WgmmaGeometry{1, n}); });
    std::set<MatmulInstruction> legal = {MatmulInstruction::Simt, MatmulInstruction::MmaSync};
    if (wgmma_legal) legal.insert(MatmulInstruction::Wgmma);
    int64_t batches = 1;
    for (const TileAxis& b : mm->batch) batches *= b.extent;
    // The heuristic geometry: 2 x 2 warps of 2 x 4 tiles, each count halved while it does not
    // fit; then, while the blocks leave SMs idle, the warps' tiles halved (N first), so that a
    // projection with few rows still gives every SM a block.
    Geometry preferred{2, 2, 2, 4};
    for (int64_t Geometry::*f : {&Geometry::warps_m, &Geometry::warps_n, &Geometry::mma_m, &Geometry::mma_n})
      while (preferred.*f > 1 && !fits(preferred)) preferred.*f /= 2;
    auto blocks = [&](const Geometry& g) { return batches * ceil_div(mm->m_extent, g.bm()) * ceil_div(mm->n_extent, g.bn()); };
    for (int64_t Geometry::*f : {&Geometry::mma_n, &Geometry::mma_m, &Geometry::warps_n, &Geometry::warps_m})
      while (preferred.*f > 1 && blocks(preferred) < device.sm_count) preferred.*f /= 2;
    // wgmma unless its 64-row tiles leave SMs idle (one warpgroup, N from 16) where mma.sync's
    // tiles give every SM a block: a small projection is memory-bound, and idle SMs read nothing.
    int64_t wgmma_most = 0;
    for (int64_t n : kWgmmaNs)
      if (n >= kMinHeuristicWgmmaN && wgmma_fits(WgmmaGeometry{1, n}))
        wgmma_most = std::max(wgmma_most, batches * ceil_div(mm->m_extent, 64) * ceil_div(mm->n_extent, n));
    const bool wgmma_preferred = wgmma_legal && (wgmma_most >= device.sm_count || blocks(preferred) < device.sm_count);
    TESSERA_ASSIGN_OR_RETURN(
        AttrValue chosen,
        ctx.choose("INSTR", node, instruction_values(legal),
                   std::string(spelled(wgmma_preferred ? MatmulInstruction::Wgmma : MatmulInstruction::MmaSync))));
    const std::string& instr = std::get<std::string>(chosen);
    if (instr == spelled(MatmulInstruction::Simt)) return Status::ok();
    std::set<std::string> taken = bound_names(kernel.body);
    for (const TileAxis& a : tile.axes) taken.insert(a.name);
    if (instr == spelled(MatmulInstruction::Wgmma)) {
      // Heuristic: two warpgroups where 64-wide tiles still give every SM a block, else one; N the
      // widest up to 128 columns of products whose blocks fill the SMs, else the narrowest from 16
      // (a small projection is memory-bound: the more SMs read its weight, the sooner it is done).
      auto wg_blocks = [&](const WgmmaGeometry& g) { return batches * ceil_div(mm->m_extent, g.bm()) * ceil_div(mm->n_extent, g.n); };
      std::vector<int64_t> counts, ns;
      for (int64_t w : kWarpgroupCounts)
        if (std::any_of(std::begin(kWgmmaNs), std::end(kWgmmaNs), [&](int64_t n) { return wgmma_fits(WgmmaGeometry{w, n}); }))
          counts.push_back(w);
      WgmmaGeometry geo;
      TESSERA_ASSIGN_OR_RETURN(geo.warpgroups, ctx.choose_int("WARPGROUPS", node, counts, [&] {
        const int64_t most = counts.back();
        return most > 1 && wg_blocks(WgmmaGeometry{most, 64}) >= device.sm_count ? most : counts.front();
      }()));
      for (int64_t n : kWgmmaNs)
        if (wgmma_fits(WgmmaGeometry{geo.warpgroups, n})) ns.push_back(n);
      int64_t preferred_n = 0;
      for (int64_t n : ns)
        if (products * n <= 128 && wg_blocks(WgmmaGeometry{geo.warpgroups, n}) >= device.sm_count) preferred_n = n;
      if (preferred_n == 0) {
        auto narrowest = std::find_if(ns.begin(), ns.end(), [](int64_t n) { return n >= kMinHeuristicWgmmaN; });
        preferred_n = narrowest != ns.end() ? *narrowest : ns.front();
      }
      TESSERA_ASSIGN_OR_RETURN(geo.n, ctx.choose_int("WGMMA_N", node, ns, preferred_n));
      // The swizzled TMA slabs where the device has TMA, 64 divides BK (and N, for an MN-major B:
      // its slabs are blocks of 64 columns), TMA can copy every slab (stage_tma_boxes: a 60-column
      // B's rows are not 16-byte multiples apart) and the 1024-byte aligned slabs fit; heuristic:
      // them where offered.
      std::vector<AttrValue> layouts = {std::string(spelled(WgmmaSlabs::Interleaved))};
      auto tma_copies_the_slabs = [&] {
        std::set<std::string> scratch;
        auto copyable = [&](const std::string& buffer, MatrixMajor major, const ExprList& lead, int64_t rows) {
          const Node* source = ctx.graph().find(buffer);
          return source != nullptr &&
                 static_cast<bool>(stage_tma_boxes(wgmma_stage(WgmmaSlabs::Swizzle128, major, "slab", buffer, lead, Expr::int_(0),
                                                               Expr::int_(0), rows, mm->depth, scratch),
                                                   source->type));
        };
        const MatrixMajor b_major = mm->b_n_major ? MatrixMajor::K : MatrixMajor::MN;
        return copyable(mm->a, MatrixMajor::K, mm->a_lead, geo.bm()) &&
               std::all_of(mm->products.begin(), mm->products.end(),
                           [&](const Product& p) { return copyable(p.b, b_major, p.b_lead, geo.n); });
      };
      const bool swizzle_fits = device.features.tma && mm->depth % 64 == 0 && (mm->b_n_major || geo.n % 64 == 0) &&
                                tma_copies_the_slabs() &&
                                (geo.bm() + products * geo.n) * mm->depth * dtype_bytes(mm->dtype) + (1 + products) * 1024 <=
                                    device.smem_per_block_static;
      if (swizzle_fits) layouts.emplace_back(std::string(spelled(WgmmaSlabs::Swizzle128)));
      TESSERA_ASSIGN_OR_RETURN(
          AttrValue layout,
          ctx.choose("WGMMA_SLABS", node, layouts,
                     std::string(spelled(swizzle_fits ? WgmmaSlabs::Swizzle128 : WgmmaSlabs::Interleaved))));
      geo.slabs = std::get<std::string>(layout) == spelled(WgmmaSlabs::Swizzle128) ? WgmmaSlabs::Swizzle128
                                                                                   : WgmmaSlabs::Interleaved;
      auto op = std::make_unique<TileOp>(kernel);
      op->body = canonicalize_names(Body{Stmt(schedule_wgmma(*mm, geo, taken))});
      node.op = std::move(op);
      return Status::ok();
    }


    // Each knob in turn, its candidates the values that still fit with the ones chosen before.
    Geometry geo;
    for (const GeometryKnob& dim : kGeometryKnobs) {
      std::vector<int64_t> candidates;
      for (int64_t v : dim.values) {
        Geometry g = geo;
        g.*dim.field = v;
        if (fits(g)) candidates.push_back(v);
      }
      int64_t heuristic = candidates.front();
      for (int64_t v : candidates)
        if (v <= preferred.*dim.field) heuristic = v;  // the heuristic's, or the largest below it that fits
      TESSERA_ASSIGN_OR_RETURN(geo.*dim.field, ctx.choose_int(dim.knob, node, candidates, heuristic));
    }

    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(Body{Stmt(schedule(*mm, geo, taken))});
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_use_tensor_cores(Registry& r) {
  r.add_pass("use_tensor_cores", [] { return std::make_unique<UseTensorCoresPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("use_tensor_cores", "1.0.0", ::tessera::register_use_tensor_cores)

// permute_register_tile: lets a thread own adjacent outputs of its register tile, where that turns
// its reads of staged slabs (and its global accesses) into vector accesses without adding bank
// conflicts.
//
// Rewrites: register_tile gives thread t of a THREAD axis (extent T) the outputs t + r * T of the
// axis, r in 0..R (its replica loop `for r in 0..R:  # free, unroll R`): a warp's accesses of one
// replica are consecutive scalars. Permuted, the thread owns t * R + r, R adjacent outputs: inside
// each replica loop of the axis, t -> t * R + r - r * T, so every expression that reads the pair
// as t + r * T reads t * R + r, and the replica's accesses become `c + r` with c a multiple of R,
// which vectorize_loads turns into one vector access per R (or per 16 bytes):
//     for a7 in 0..4:  # free, unroll 4                for a7 in 0..4:  # free, unroll 4
//       in1 = load w_smem[a5, a0 + a7 * 32]     ->       in1 = load w_smem[a5, a0 * 4 + a7]
//       acc0[a6, a7] <- add(acc0[a6, a7], ..)            acc0[a6, a7] <- add(acc0[a6, a7], ..)
// Every output is still computed by one replica of one thread, with the same operations in the
// same order (bit-identical results); only which thread and replica computes it changes.
// Accepts: Tile IR after register_tile. An axis is permutable when it has replica loops (loops
//   with literal bounds 0..R, R >= 2, holding an expression that reads the axis and the loop's
//   variable only through t + r * T: unchanged when t moves by T and r by -1), every expression
//   reading the axis lies inside one of them and reads it that way, and all of them have the same
//   R, and no StridedLoop's bounds read it (a loop the threads share strides over the axis as a
//   whole). Nodes without a permutable axis are left alone.
// Knobs (bool; asked per permutable axis): COLUMNS for the first THREAD axis (register_tile's TN
//   axis, a matmul's output columns), ROWS for the second (TM, the rows). Heuristic, from the
//   staged-slab bank model (target/staged_access.h) and the accesses' shapes: the cost of an axis's
//   replica loops is, over their loads and writes, the instructions one pass over r issues (R
//   scalar, or R / K vector accesses of K elements, K <= 16 bytes, when the access is `c + r`
//   with c a multiple of K in the last index) times, for a staged slab, the access's worst bank
//   conflict degree; the axis is permuted when that cost drops.
// Guarantees: same values, bit for bit; names canonical.
// Tests: tests/golden/permute_register_tile/, tests/e2e/random_knobs_test.cpp (the matmul corpus
//   with every knob sampled, on the simulator).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/staged_access.h"

namespace tessera {
namespace {

// A replica loop candidate: literal bounds 0..R with R >= 2.
std::optional<int64_t> replica_count(const Loop& l) {
  if (!l.begin.is(ExprKind::Int) || l.begin.int_value() != 0 || !l.end.is(ExprKind::Int) || l.end.int_value() < 2)
    return std::nullopt;
  return l.end.int_value();
}

// Every expression of a body with the loops enclosing it (outermost first).
struct ExprSite {
  Expr expr;
  std::vector<const Loop*> loops;
};
class ExprSites final : public StmtMutator {
 public:
  std::vector<ExprSite> sites;
  // The bounds of StridedLoops: a loop the threads share (cooperative_reduce's, chunk_reduce's
  // chunks) strides over a thread axis as a whole iteration space, not one output per replica.
  std::vector<Expr> strided_bounds;
  Expr mutate_expr(const Expr& e) override {
    sites.push_back({e, loops_});
    return e;
  }
  Stmt mutate_StridedLoop(const StridedLoop& s, const Stmt& self) override {
    strided_bounds.insert(strided_bounds.end(), {s.begin, s.end, s.step});
    return StmtMutator::mutate_StridedLoop(s, self);
  }
  Stmt mutate_Loop(const Loop& s, const Stmt& self) override {
    // The bounds belong to the enclosing scope.
    mutate_expr(s.begin);
    mutate_expr(s.end);
    loops_.push_back(&s);
    mutate_body(s.body);
    loops_.pop_back();
    return self;
  }

 private:
  std::vector<const Loop*> loops_;
};

// Whether `e` reads thread axis `t` (extent T) and replica variable `r` only through t + r * T.
bool reads_pair(const Expr& e, const std::string& t, int64_t extent, const std::string& r) {
  const Expr shifted = substitute(e, {{t, Expr::var(t) + Expr::int_(extent)}, {r, Expr::var(r) - Expr::int_(1)}});
  return structurally_equal(simplify(e), simplify(shifted));
}

// A permutable THREAD axis: its replica loops' variables and their common count.
struct PermutableAxis {
  TileAxis axis;
  std::set<std::string> loops;
  int64_t replicas = 0;
};

std::optional<PermutableAxis> permutable(const TileAxis& axis, const ExprSites& found) {
  const std::vector<ExprSite>& sites = found.sites;
  // A StridedLoop over the axis: its iterations, not single outputs, follow the thread (moving its
  // begin alone would drop elements; found by the random-knob corpus on a chunked RMSNorm row).
  for (const Expr& bound : found.strided_bounds)
    if (mentions_var(bound, axis.name)) return std::nullopt;
  PermutableAxis out{axis, {}, 0};
  // Pair: a replica loop holding an expression that reads the axis and the loop's variable as a pair.
  for (const ExprSite& s : sites) {
    if (!mentions_var(s.expr, axis.name)) continue;
    for (const Loop* l : s.loops) {
      std::optional<int64_t> r = replica_count(*l);
      if (r && mentions_var(s.expr, l->var) && reads_pair(s.expr, axis.name, axis.extent, l->var)) {
        if (out.replicas != 0 && out.replicas != *r) return std::nullopt;
        out.replicas = *r;
        out.loops.insert(l->var);
      }
    }
  }
  if (out.loops.empty()) return std::nullopt;
  // Every read of the axis: inside exactly one paired loop, as the pair.
  for (const ExprSite& s : sites) {
    if (!mentions_var(s.expr, axis.name)) continue;
    const Loop* paired = nullptr;
    for (const Loop* l : s.loops)
      if (out.loops.count(l->var)) {
        if (paired != nullptr) return std::nullopt;
        paired = l;
      }
    if (paired == nullptr || !reads_pair(s.expr, axis.name, axis.extent, paired->var)) return std::nullopt;
  }
  return out;
}

// t -> t * R + r - r * T inside the replica loops of the permuted axes.
class Permute final : public StmtMutator {
 public:
  explicit Permute(std::vector<PermutableAxis> axes) : axes_(std::move(axes)) {}
  Expr mutate_expr(const Expr& e) override { return subst_.empty() ? e : simplify(substitute(e, subst_)); }
  Stmt mutate_Loop(const Loop& s, const Stmt& self) override {
    const PermutableAxis* axis = nullptr;
    for (const PermutableAxis& a : axes_)
      if (a.loops.count(s.var)) axis = &a;
    if (axis == nullptr) return StmtMutator::mutate_Loop(s, self);
    const std::string& t = axis->axis.name;
    const Expr r = Expr::var(s.var);
    subst_[t] = Expr::var(t) * Expr::int_(axis->replicas) + r - r * Expr::int_(axis->axis.extent);
    Stmt out = StmtMutator::mutate_Loop(s, self);
    subst_.erase(t);
    return out;
  }

 private:
  std::vector<PermutableAxis> axes_;
  std::map<std::string, Expr> subst_;
};

// The accesses (loads and writes) of a body with the loops enclosing them.
struct Access {
  std::string buffer;
  ExprList index;
  int64_t elem_bytes = 4;
  const Loop* replica = nullptr;  // the innermost enclosing loop
};
class Accesses final : public StmtVisitor {
 public:
  explicit Accesses(const Graph& g) : g_(g) {}
  std::vector<Access> found;
  std::map<std::string, const Stage*> staged;  // buffer -> its (latest) Stage
  void visit_Stage(const Stage& s) override { staged[s.dst] = &s; }
  void visit_Load(const Load& s) override { add(s.buffer, s.index, dtype_bytes(s.type.dtype)); }
  void visit_Write(const Write& s) override {
    const Node* n = g_.find(s.buffer);
    add(s.buffer, s.index, n != nullptr ? dtype_bytes(n->type.dtype) : 4);
  }
  void visit_Loop(const Loop& s) override {
    loops_.push_back(&s);
    StmtVisitor::visit_Loop(s);
    loops_.pop_back();
  }

 private:
  void add(const std::string& b, const ExprList& index, int64_t elem) {
    found.push_back({b, index, elem, loops_.empty() ? nullptr : loops_.back()});
  }
  const Graph& g_;
  std::vector<const Loop*> loops_;
};

bool has_register_array(const Body& body) {
  struct Finder final : StmtVisitor {
    bool found = false;
    void visit_Init(const Init& s) override { found = found || !s.type.array.empty(); }
  } f;
  f.visit(body);
  return f.found;
}

class PermuteRegisterTilePass final : public TilePass {
 public:
  std::string_view name() const override { return "permute_register_tile"; }
  std::string_view summary() const override {
    return "let each thread own adjacent outputs of its register tile, so its accesses vectorize";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"COLUMNS", KnobType::Bool, {}, std::nullopt,
                     "a thread owns TN adjacent outputs along the first THREAD axis (else TN outputs a thread row apart)"},
            KnobSpec{"ROWS", KnobType::Bool, {}, std::nullopt,
                     "a thread owns TM adjacent outputs along the second THREAD axis"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override {
    ExprSites sites;
    sites.mutate_body(tile.body);
    std::vector<TileAxis> threads;
    for (const TileAxis& a : tile.axes)
      if (a.binding == AxisBinding::Thread) threads.push_back(a);
    std::vector<PermutableAxis> chosen;
    bool any = false;
    for (size_t i = 0; i < threads.size() && i < 2; ++i) {
      std::optional<PermutableAxis> axis = permutable(threads[i], sites);
      if (!axis) continue;
      any = true;
      const bool heuristic = cost(ctx.graph(), kernel, threads, *axis, true, ctx) < cost(ctx.graph(), kernel, threads, *axis, false, ctx);
      TESSERA_ASSIGN_OR_RETURN(bool permute, ctx.choose_bool(i == 0 ? "COLUMNS" : "ROWS", node, heuristic));
      if (permute) chosen.push_back(*axis);
    }
    if (!any) {
      if (!has_register_array(kernel.body)) return Status::ok();  // register_tile left one output per thread
      ctx.skip(node, "no THREAD axis has register-tile replicas read only as thread + replica * threads");
      return Status::ok();
    }
    if (chosen.empty()) return Status::ok();
    Permute permute(chosen);
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(permute.mutate_body(kernel.body));
    node.op = std::move(op);
    return Status::ok();
  }

 private:
  // The instructions one pass over the axis's replicas issues, each weighted by its bank conflict
  // degree when it reads a staged slab (see the contract), with the axis permuted or not.
  static int64_t cost(const Graph& g, const TileOp& kernel, const std::vector<TileAxis>& threads,
                      const PermutableAxis& axis, bool permuted, PassContext& ctx) {
    Body body = kernel.body;
    if (permuted) body = Permute({axis}).mutate_body(body);
    Accesses accesses(g);
    accesses.visit(body);
    int64_t total = 0;
    for (const Access& a : accesses.found) {
      if (a.replica == nullptr || !axis.loops.count(a.replica->var)) continue;
      // The access as the bank model and vectorize_loads see it: coordinates (a ring's slot left
      // out), the replica loop, the row the buffer holds.
      auto staged = accesses.staged.find(a.buffer);
      const Stage* st = staged != accesses.staged.end() ? staged->second : nullptr;
      const size_t first = st != nullptr && st->slots > 1 ? 1 : 0;
      StagedLoad load;
      load.coords.assign(a.index.begin() + static_cast<std::ptrdiff_t>(std::min(first, a.index.size())), a.index.end());
      load.first_values[a.replica->var] = Expr::int_(0);  // the model takes loop variables at their first value
      load.loop = a.replica->var;
      load.trips = axis.replicas;
      int64_t row = 0;
      if (st != nullptr) row = st->slab.back().extent + st->pad;
      else if (const Node* n = g.find(a.buffer); n != nullptr && n->type.rank() > 0) row = n->type.dim(n->type.rank() - 1);
      const int64_t k = permuted && row > 0 ? staged_vector_width(load, a.elem_bytes, row) : 1;
      int64_t degree = 1;
      if (st != nullptr)
        degree = staged_load_conflicts(StagedLoads{st, a.elem_bytes, {load}}, padded_slab_layout(*st, a.elem_bytes, st->pad),
                                       threads, ctx.device().warp_size, k * a.elem_bytes);
      total += axis.replicas / k * degree;
    }
    return total;
  }
};

void register_permute_register_tile(Registry& r) {
  r.add_pass("permute_register_tile", [] { return std::make_unique<PermuteRegisterTilePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("permute_register_tile", "1.0.0", ::tessera::register_permute_register_tile)

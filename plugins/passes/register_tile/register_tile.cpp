// register_tile: gives each thread TM x TN outputs along one or two THREAD axes, kept in register
// arrays.
//
// Rewrites: a Tile kernel whose per-thread work is a reduction producing outputs indexed by THREAD
// axes (the matmul / projection shape). Axis `a` (extent E) is the first THREAD axis that indexes
// a written output and feeds a reduction (the coalesced columns); axis `b` (extent F) the second
// such axis (a matmul's rows), when there is one. With knob TN > 1 (and TM > 1 for `b`):
//   - `a` shrinks to E/TN threads; the thread's replica r in 0..TN stands for the old thread
//     `a + r * (E/TN)`, so a warp's accesses of one replica stay consecutive (coalesced); `b`
//     likewise shrinks to F/TM threads, replica q standing for `b + q * (F/TM)`. The block tile
//     (the outputs a block covers, as launch_geometry chose them and stage_inputs staged them) is
//     unchanged: the pass divides it among fewer threads, so the slabs and the block grid stay;
//   - a statement is *dependent* when it reads a tiled axis, a value computed from one, or an
//     accumulator fed under a condition or with a value that depends on one (a fixpoint);
//   - independent statements stay where they are and run once for all replicas (the operand of a
//     matmul's row that every output column uses: the register reuse this pass is for);
//   - each run of dependent statements becomes one replica loop `for r in 0..TN:  # free, unroll
//     TN` holding the run with `a` replaced by `a + r * (E/TN)`; with both axes tiled a nest
//         for q in 0..TM:  # free, unroll TM
//           <pure values free of `a`: the row operand, loaded TM times per k step>
//           for r in 0..TN:  # free, unroll TN
//             <the rest: the column operand, products, accumulations, writes>
//     (the column operand's TM identical loads of one k step are one load after unrolling: no
//     store intervenes); dependent accumulators declared outside become arrays `f32[TN] acc0` or
//     `f32[TM][TN] acc0 = init(..)`, updated and read as `acc0[r]` / `acc0[q, r]`;
//   - a condition on a tiled axis (a tail guard `if a0 < 96:`) that encloses loops or declarations
//     is pushed inward: its terms free of the axes stay an ordinary `if`, its other terms guard
//     each replica (`if a0 + r * 32 < 96:`; in a nest the terms on `q` alone guard the outer loop's
//     body, the others the inner one's), and the shared statements under it run when some replica
//     passes (the guard of the replica all others' guards imply, else the disjunction over the
//     replicas); an else branch is a second region under the negation. A condition without loops
//     or declarations inside moves whole into the replica loop, as does a loop whose bounds
//     depend on a tiled axis;
//   - a dependent pure value (load, assign, select) needed by a later replica loop than the one it
//     was computed in (across a loop or a pushed-in guard) is recomputed there.
// Collective statements (Stage, Combine, AsyncWait) are never replicated: the staging loops cover
// the same slabs with fewer threads (they stride over the block's threads).
// Knobs (candidates 1, 2, 4, 8 among the divisors of the axis's extent that, with some value of
//   the other knob, leave at most device.max_threads_per_block threads per block and give a
//   thread at most 32 outputs, TM x TN <= 32; 1 disables):
//   TN: outputs per thread along `a`. Asked for every kernel the pass applies to.
//   TM: outputs per thread along `b`. Asked only where both axes can be tiled: a shared reduce
//     loop loads an operand of `b` alone and one of `a` alone (a matmul's A and B: the reuse a 2-D
//     tile is for; a kernel without it, e.g. a softmax fused into P @ V over heads, keeps one
//     axis and its compile time), and every accumulator and every write that depends on one of
//     the axes depends on both (no row-only value would be replicated along the columns).
//   Heuristic: a block tile of at most max_threads_per_block / 4 ("comfortable") outputs keeps
//   TM = 1 and TN = 1 unless some reduce loop has an operand every replica shares (an independent
//   load next to a dependent accumulation); then the largest of 4, 2 that keeps at least
//   device.warp_size threads along `a` and, in the whole grid, at least 4 warps per SM
//   (device.sm_count): small grids keep their parallelism. A larger block tile (launch_geometry's
//   large tile of a contraction whose grid fills the device, 128 x 64 on an H100) gets TN = the
//   largest of 4, 2 keeping device.warp_size threads along `a`, and TM = the smallest that brings
//   the block down to the comfortable size (4 x 8 outputs per thread, 256 threads).
// Accepts: Tile IR (TileOp nodes whose body is one Tile). Applies when a THREAD axis indexes a
//   written output and a `# reduce` Loop with bounds independent of it feeds a dependent
//   accumulator. Skips (with a reason) kernels without such an axis or loop, kernels that already
//   hold register arrays, that load a buffer they write, that Combine a dependent accumulator or
//   start one from a value that depends on the axis, or where a dependent value reading an
//   accumulator would have to be recomputed after the accumulator changed. A kernel whose block
//   tile has more outputs than a block may have threads counts on this pass: skipping it, or no
//   candidate bringing it within the limit, is an error naming the node.
// Guarantees: every output element is computed by exactly one replica with the same operations in
//   the same order as before (bit-identical results); the Tile covers the same iteration space
//   and keeps its Stages; every array index is the variable of a loop with an unroll request;
//   at most device.max_threads_per_block threads per block; names canonical.
// Tests: tests/golden/register_tile/, tests/unit/register_tile_test.cpp, and the corpus through
//   sim in tests/e2e/random_knobs_test.cpp.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/internal_check.h"

namespace tessera {
namespace {

bool mentions(const Expr& e, const std::set<std::string>& names) {
  for (const std::string& v : free_vars(e))
    if (names.count(v)) return true;
  return false;
}
bool mentions(const ExprList& list, const std::set<std::string>& names) {
  return std::any_of(list.begin(), list.end(), [&](const Expr& e) { return mentions(e, names); });
}

// The names that depend on the tiled axis (see the header comment), to a fixpoint.
class Dependence final : public StmtVisitor {
 public:
  explicit Dependence(const std::vector<std::string>& axes) : dep_(axes.begin(), axes.end()) {}

  void run(const Body& body) {
    size_t before = 0;
    do {
      before = dep_.size();
      visit(body);
    } while (dep_.size() != before);
  }
  const std::set<std::string>& names() const { return dep_; }
  bool depends(const Expr& e) const { return mentions(e, dep_); }
  bool depends(const ExprList& l) const { return mentions(l, dep_); }

  void visit_Load(const Load& s) override { mark(s.dst, depends(s.index)); }
  void visit_Assign(const Assign& s) override { mark(s.dst, depends(s.args)); }
  void visit_Select(const Select& s) override {
    mark(s.dst, depends(ExprList{s.cond, s.then_value, s.else_value}));
  }
  void visit_Init(const Init& s) override { mark(s.acc, depends(s.value)); }
  void visit_Accum(const Accum& s) override {
    mark(s.acc, context_ > 0 || depends(s.value) || depends(s.index));
  }
  void visit_Loop(const Loop& s) override {
    nested(depends(ExprList{s.begin, s.end}), s.var, [&] { StmtVisitor::visit_Loop(s); });
  }
  void visit_StridedLoop(const StridedLoop& s) override {
    nested(depends(ExprList{s.begin, s.end, s.step}), s.var, [&] { StmtVisitor::visit_StridedLoop(s); });
  }
  void visit_Cond(const Cond& s) override {
    nested(depends(s.cond), "", [&] { StmtVisitor::visit_Cond(s); });
  }

 private:
  void mark(const std::string& name, bool dependent) {
    if (dependent) dep_.insert(name);
  }
  template <class F> void nested(bool dependent, const std::string& var, F&& visit_children) {
    if (dependent && !var.empty()) dep_.insert(var);
    context_ += dependent;
    visit_children();
    context_ -= dependent;
  }
  std::set<std::string> dep_;
  int context_ = 0;
};

// Facts about a Tile the applicability test and the heuristic need, for one candidate axis.
struct AxisFacts {
  bool indexes_output = false;      // some Write index depends on the axis
  bool feeds_reduction = false;     // a shared `# reduce` Loop holds a dependent Accum
  bool shares_operand = false;      // ... next to an independent Load (reuse across replicas)
  std::string obstacle;             // why the pass cannot apply, when it cannot
};

class FactFinder final : public StmtVisitor {
 public:
  FactFinder(const Dependence& dep, std::set<std::string> written) : dep_(dep), written_(std::move(written)) {}
  AxisFacts facts;

  void visit_Load(const Load& s) override {
    if (written_.count(s.buffer)) obstacle("it loads `" + s.buffer + "`, which it also writes");
    if (reduce_depth_ > 0 && !dep_.depends(s.index)) independent_load_in_reduce_ = true;
  }
  void visit_Init(const Init& s) override {
    if (s.type.is_array()) obstacle("it already holds register arrays");
    if (dep_.depends(s.value)) obstacle("`" + s.acc + "` starts from a value that depends on the axis");
  }
  void visit_Accum(const Accum& s) override {
    if (!s.index.empty()) obstacle("it already holds register arrays");
    if (reduce_depth_ > 0 && dep_.names().count(s.acc)) dependent_accum_in_reduce_ = true;
  }
  void visit_Write(const Write& s) override { facts.indexes_output |= dep_.depends(s.index); }
  // A SlabMap computes a shared slab for the whole block (its Write fills it, not an output).
  void visit_SlabMap(const SlabMap&) override {}
  void visit_Combine(const Combine& s) override {
    if (dep_.names().count(s.acc))
      obstacle("the THREAD axis feeds `" + s.acc + "`, which is combined across threads (a cooperative reduction)");
  }
  void visit_Loop(const Loop& s) override {
    const bool shared_reduce = s.role == LoopRole::Reduce && !dep_.depends(ExprList{s.begin, s.end});
    if (!shared_reduce) return StmtVisitor::visit_Loop(s);
    // One reduce loop nest at a time decides reuse: its own loads and accumulations.
    const bool outer = reduce_depth_ == 0;
    if (outer) independent_load_in_reduce_ = dependent_accum_in_reduce_ = false;
    ++reduce_depth_;
    StmtVisitor::visit_Loop(s);
    --reduce_depth_;
    if (outer && dependent_accum_in_reduce_) {
      facts.feeds_reduction = true;
      facts.shares_operand |= independent_load_in_reduce_;
    }
  }

 private:
  void obstacle(std::string why) {
    if (facts.obstacle.empty()) facts.obstacle = std::move(why);
  }
  const Dependence& dep_;
  std::set<std::string> written_;
  int reduce_depth_ = 0;
  bool independent_load_in_reduce_ = false;
  bool dependent_accum_in_reduce_ = false;
};

std::set<std::string> written_buffers(const Body& body) {
  struct Finder final : StmtVisitor {
    std::set<std::string> out;
    void visit_Write(const Write& s) override { out.insert(s.buffer); }
    void visit_SlabMap(const SlabMap&) override {}  // fills its own shared slab, read after it
  } finder;
  finder.visit(body);
  return finder.out;
}

// Pre-order positions of the statements of a body that register_tile orders (keyed by the node's
// address: statements are shared, immutable nodes) and, per accumulator and per staged buffer, the
// position of its last update (Accum, Stage).
class ProgramOrder final : public StmtVisitor {
 public:
  explicit ProgramOrder(const Body& body) { visit(body); }
  int64_t of(const Stmt& s) const {
    auto it = position_.find(address(s));
    return it == position_.end() ? -1 : it->second;
  }
  int64_t last_update(const std::string& acc) const {
    auto it = last_update_.find(acc);
    return it == last_update_.end() ? -1 : it->second;
  }

  void visit_Load(const Load& s) override { number(&s); }
  void visit_Assign(const Assign& s) override { number(&s); }
  void visit_Select(const Select& s) override { number(&s); }
  void visit_Init(const Init& s) override { number(&s); }
  void visit_Write(const Write& s) override { number(&s); }
  void visit_Accum(const Accum& s) override { last_update_[s.acc] = number(&s); }
  void visit_Stage(const Stage& s) override { last_update_[s.dst] = number(&s); }
  void visit_SlabMap(const SlabMap& s) override { last_update_[s.dst] = number(&s); }
  void visit_Loop(const Loop& s) override {
    number(&s);
    StmtVisitor::visit_Loop(s);
  }
  void visit_StridedLoop(const StridedLoop& s) override {
    number(&s);
    StmtVisitor::visit_StridedLoop(s);
  }
  void visit_Cond(const Cond& s) override {
    number(&s);
    StmtVisitor::visit_Cond(s);
  }

 private:
  static const void* address(const Stmt& s) {
    return std::visit([](const auto& alternative) -> const void* { return &alternative; }, s.variant());
  }
  int64_t number(const void* node) {
    position_[node] = next_;
    return next_++;
  }
  std::map<const void*, int64_t> position_;
  std::map<std::string, int64_t> last_update_;
  int64_t next_ = 0;
};

Expr conjoin(const ExprList& terms) {
  Expr out;
  for (const Expr& t : terms) out = out.defined() ? Expr::binary(ExprKind::And, out, t) : t;
  return out;
}

bool is_true(const Expr& e) { return e.is(ExprKind::Int) && e.int_value() != 0; }
bool is_false(const Expr& e) { return e.is(ExprKind::Int) && e.int_value() == 0; }

// Inside a replica loop: reads of the register arrays become element reads `acc0[r]` and their
// updates element updates; everything else is copied (the axis substitution follows separately).
class ReplicaIndexer final : public StmtMutator {
 public:
  ReplicaIndexer(const std::set<std::string>& arrays, const ExprList& replicas) {
    for (const std::string& acc : arrays) to_element_[acc] = Expr::element(acc, replicas);
  }
  Expr mutate_expr(const Expr& e) override { return substitute(e, to_element_); }
  Stmt mutate_Accum(const Accum& s, const Stmt& self) override {
    auto it = to_element_.find(s.acc);
    if (it == to_element_.end()) return StmtMutator::mutate_Accum(s, self);
    Accum out = s;
    out.value = mutate_expr(s.value);
    out.index = it->second.operands();
    return out;
  }

 private:
  std::map<std::string, Expr> to_element_;  // array name -> its element of this replica
};

// One THREAD axis register_tile divides: it keeps `threads` threads (its extent / count), and
// replica r of a thread stands for the old thread `name + r * threads`.
struct TiledAxis {
  std::string name;
  int64_t threads = 0;
  int64_t count = 0;  // replicas per thread (TN or TM)
};

// The rewrite of the Tile body (see the header comment). Bodies are rewritten by mutate_body,
// which splits each into shared statements and replica loop nests. `axes` are the tiled axes in
// nest order (outer first: M before N, so arrays are `f32[TM][TN]`); `inner_dep` is the dependence
// on the innermost one alone, which decides what a two-level nest computes outside its inner loop.
class RegisterTiler final : public StmtMutator {
 public:
  // `ranges` bound the Tile's axes after tiling, `old_ranges` before.
  RegisterTiler(const Body& body, const Dependence& dep, const Dependence& inner_dep, std::vector<TiledAxis> axes,
                RangeMap ranges, RangeMap old_ranges, std::set<std::string> taken, std::set<std::string> accumulators)
      : dep_(dep), inner_dep_(inner_dep), axes_(std::move(axes)), ranges_(std::move(ranges)),
        old_ranges_(std::move(old_ranges)), taken_(std::move(taken)), accumulators_(std::move(accumulators)),
        order_(body) {
    for (const TiledAxis& a : axes_) axis_names_.insert(a.name);
  }

  const std::string& failure() const { return failure_; }

  Body mutate_body(const Body& body) override {
    const size_t available_mark = available_.size();
    Body out;
    std::vector<Item> group;
    auto flush = [&] {
      if (!group.empty()) emit_replicas(group, out);
      group.clear();
    };
    for (const Stmt& s : body) {
      const int64_t seq = order_.of(s);
      switch (classify(s)) {
        case Kind::Shared: out.push_back(s); break;
        case Kind::SharedInit: {
          Init init = *s.as<Init>();
          init.type.array.clear();
          for (const TiledAxis& a : axes_) init.type.array.push_back(a.count);
          arrays_.insert(init.acc);
          out.push_back(std::move(init));
          break;
        }
        case Kind::Replicated: group.push_back({s, seq}); break;
        case Kind::SharedNested: flush(); out.push_back(mutate(s)); break;
        case Kind::SplitCond: flush(); split_cond(*s.as<Cond>(), out); break;
        case Kind::Ordered: flush(); out.push_back(s); break;
      }
    }
    flush();
    available_.resize(available_mark);  // values of this body are out of scope beyond it
    return out;
  }

 private:
  enum class Kind {
    Shared,        // independent pure statement or Init: stays, runs once for all replicas
    SharedInit,    // Init of a dependent accumulator: becomes a register array
    Replicated,    // dependent: joins the current replica loop nest
    SharedNested,  // independent Loop / StridedLoop / Cond: stays, its bodies are rewritten
    SplitCond,     // dependent Cond holding loops or declarations: pushed inward
    Ordered,       // independent side effect (Write, Accum, collective): keeps its place
  };
  struct Item {
    Stmt stmt;
    int64_t seq;
  };

  Kind classify(const Stmt& s) const {
    switch (s.kind()) {
      case StmtKind::Load: return dep_.depends(s.as<Load>()->index) ? Kind::Replicated : Kind::Shared;
      case StmtKind::Assign: return dep_.depends(s.as<Assign>()->args) ? Kind::Replicated : Kind::Shared;
      case StmtKind::Select: {
        const auto* sel = s.as<Select>();
        return dep_.depends(ExprList{sel->cond, sel->then_value, sel->else_value}) ? Kind::Replicated : Kind::Shared;
      }
      case StmtKind::Init: return dep_.names().count(s.as<Init>()->acc) ? Kind::SharedInit : Kind::Shared;
      case StmtKind::Accum: return dep_.names().count(s.as<Accum>()->acc) ? Kind::Replicated : Kind::Ordered;
      case StmtKind::Write: {
        const auto* w = s.as<Write>();
        return dep_.depends(w->index) || dep_.depends(w->value) ? Kind::Replicated : Kind::Ordered;
      }
      case StmtKind::Loop: {
        const auto* l = s.as<Loop>();
        return dep_.depends(ExprList{l->begin, l->end}) ? Kind::Replicated : Kind::SharedNested;
      }
      case StmtKind::StridedLoop: {
        const auto* l = s.as<StridedLoop>();
        return dep_.depends(ExprList{l->begin, l->end, l->step}) ? Kind::Replicated : Kind::SharedNested;
      }
      case StmtKind::Cond: {
        const auto* c = s.as<Cond>();
        if (!dep_.depends(c->cond)) return Kind::SharedNested;
        return holds_structure(c->then_body) || holds_structure(c->else_body) ? Kind::SplitCond : Kind::Replicated;
      }
      case StmtKind::Tile: case StmtKind::Stage: case StmtKind::Combine: case StmtKind::AsyncWait: case StmtKind::SlabMap:
      case StmtKind::Let: case StmtKind::Smem: case StmtKind::Sync: case StmtKind::CpAsyncCopy:
      case StmtKind::CpAsyncCommit: case StmtKind::CpAsyncWait: case StmtKind::TmaLoad:
      case StmtKind::MbarrierInit: case StmtKind::MbarrierArrive: case StmtKind::MbarrierWait:
      case StmtKind::NamedBarrier: case StmtKind::SetMaxNReg:
      case StmtKind::WarpShuffle: case StmtKind::TreeHalve: case StmtKind::VectorLoad:
      case StmtKind::VectorStore: case StmtKind::ClusterSync: case StmtKind::DsmemLoad:
      case StmtKind::Fragment: case StmtKind::LdMatrix: case StmtKind::MmaSync:
      case StmtKind::WgmmaMma: case StmtKind::WgmmaFence: case StmtKind::WgmmaCommit: case StmtKind::WgmmaWait:
        return Kind::Ordered;
    }
    TESSERA_UNREACHABLE("a StmtKind value is one of TESSERA_STMT_KINDS");
  }

  // Whether a body declares something or loops: then pushing a guard inward shares work.
  static bool holds_structure(const Body& body) {
    struct Finder final : StmtVisitor {
      bool found = false;
      void visit_Init(const Init&) override { found = true; }
      void visit_Loop(const Loop&) override { found = true; }
      void visit_StridedLoop(const StridedLoop&) override { found = true; }
    } finder;
    finder.visit(body);
    return finder.found;
  }

  // `if c: T else: E` with c depending on a tiled axis: T runs for the replicas passing c, E for
  // the others. The terms of c free of the tiled axes stay an ordinary condition around T.
  void split_cond(const Cond& c, Body& out) {
    ExprList terms, uniform, per_replica;
    conjuncts(c.cond, terms);
    for (const Expr& t : terms) (dep_.depends(t) ? per_replica : uniform).push_back(t);
    guarded_region(uniform, per_replica, c.then_body, out);
    // The condition speaks of the old threads: simplified over the axes' old extents (over the new
    // ones, an axis left with one thread would be folded to 0 before its replicas replace it).
    if (!c.else_body.empty()) guarded_region({}, {simplify(Expr::not_(c.cond), old_ranges_)}, c.else_body, out);
  }

  // Every combination of replica indices, in nest order (the last axis fastest).
  std::vector<ExprList> all_replicas() const {
    std::vector<ExprList> out{{}};
    for (const TiledAxis& a : axes_) {
      std::vector<ExprList> next;
      for (const ExprList& prefix : out)
        for (int64_t r = 0; r < a.count; ++r) {
          ExprList combo = prefix;
          combo.push_back(Expr::int_(r));
          next.push_back(std::move(combo));
        }
      out = std::move(next);
    }
    return out;
  }

  void guarded_region(const ExprList& uniform, const ExprList& per_replica, const Body& body, Body& out) {
    const size_t mark = guards_.size();
    guards_.insert(guards_.end(), per_replica.begin(), per_replica.end());
    // The shared statements of the region run when some replica enters it: the disjunction over
    // the replicas, or the guard of the one replica every other's guard implies.
    Expr any;
    if (std::optional<ExprList> r = dominant_replica()) {
      any = replica_guard(*r);
    } else {
      for (const ExprList& r : all_replicas()) {
        Expr g = replica_guard(r);
        any = any.defined() ? Expr::binary(ExprKind::Or, any, g) : g;
      }
    }
    ExprList outer = uniform;
    outer.push_back(any);
    Expr cond = simplify(conjoin(outer), ranges_);
    Body inner = mutate_body(body);
    guards_.resize(mark);
    if (is_false(cond)) return;  // no replica enters the region
    if (is_true(cond)) {
      out.insert(out.end(), inner.begin(), inner.end());
      return;
    }
    out.push_back(Cond{cond, std::move(inner), {}});
  }

  // The replica whose guards every other replica's guards imply, when each guard term is a
  // comparison `x < y` / `x <= y` with each tiled axis it uses on one side only and that side
  // growing with the axis's replica: per axis, all on the small side -> replica 0 (the tail guard
  // `a0 + r * 32 < 96`), all on the large side -> the last replica (the else side of a causal mask).
  std::optional<ExprList> dominant_replica() const {
    ExprList out;
    for (const TiledAxis& axis : axes_) {
      int direction = 0;
      const std::set<std::string> name{axis.name};
      for (const Expr& g : guards_) {
        ExprList terms;
        conjuncts(g, terms);
        for (const Expr& t : terms) {
          if (!t.is(ExprKind::Lt) && !t.is(ExprKind::Le)) return std::nullopt;
          const bool small = mentions(t.operand(0), name), large = mentions(t.operand(1), name);
          if (!small && !large) continue;  // the term does not involve this axis
          if (small && large) return std::nullopt;
          const Expr& side = small ? t.operand(0) : t.operand(1);
          Expr step = simplify(substitute(side, {{axis.name, Expr::var(axis.name) + axis.threads}}) - side, old_ranges_);
          if (!step.is(ExprKind::Int) || step.int_value() <= 0) return std::nullopt;
          const int d = small ? 1 : -1;
          if (direction != 0 && direction != d) return std::nullopt;
          direction = d;
        }
      }
      out.push_back(Expr::int_(direction >= 0 ? 0 : axis.count - 1));
    }
    return out;
  }

  // Each tiled axis replaced by its replica `r` (one index expression per axis).
  std::map<std::string, Expr> to_replica(const ExprList& replicas) const {
    std::map<std::string, Expr> out;
    for (size_t i = 0; i < axes_.size(); ++i)
      out[axes_[i].name] = Expr::var(axes_[i].name) + replicas[i] * axes_[i].threads;
    return out;
  }

  // The guards in force for the replica `replicas` (index expressions), simplified; true when none.
  Expr replica_guard(const ExprList& replicas) const {
    if (guards_.empty()) return Expr::int_(1);
    return simplify(substitute(conjoin(guards_), to_replica(replicas)), ranges_);
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; taken_.count(name); ++i) name = base + "_" + std::to_string(i);
    taken_.insert(name);
    return name;
  }

  static bool is_pure(const Stmt& s) {
    return s.is<Load>() || s.is<Assign>() || s.is<Select>();
  }
  static std::string defined_name(const Stmt& s) { return *bound_names(Body{s}).begin(); }

  // A pure statement may be computed later than where it stands unless it reads an accumulator
  // or a staged buffer that is updated (accumulated into, restaged) after it.
  bool recomputable(const Item& it) const {
    if (!is_pure(it.stmt)) return false;
    if (const auto* load = it.stmt.as<Load>(); load && order_.last_update(load->buffer) > it.seq) return false;
    for (const std::string& n : own_used_names(it.stmt))
      if (accumulators_.count(n) && order_.last_update(n) > it.seq) return false;
    return true;
  }

  // Whether a statement of a two-level nest runs in the outer loop, once per outer replica: a
  // pure value free of the inner axis (the row operand of a matmul, shared by a row's columns).
  bool outer_level(const Stmt& s) const {
    if (axes_.size() < 2 || !is_pure(s)) return false;
    for (const std::string& n : own_used_names(s))
      if (inner_dep_.names().count(n)) return false;
    return true;
  }

  // Emits one replica loop nest for `group`. Recomputable pure values go in only when the nest
  // needs them (they stay available to later nests); values an earlier nest computed are recomputed.
  void emit_replicas(const std::vector<Item>& group, Body& out) {
    std::map<std::string, const Item*> deferred;  // this group's recomputable values by name
    Body fixed;                                   // statements that stay, whatever they read
    std::vector<Item> items;
    for (const Item& it : group) {
      if (recomputable(it)) {
        deferred[defined_name(it.stmt)] = &it;
      } else {
        items.push_back(it);
        fixed.push_back(it.stmt);
      }
    }
    const std::set<std::string> local = bound_names(fixed);
    std::vector<std::string> pending;
    for (const std::string& n : used_names(fixed)) pending.push_back(n);
    std::set<int64_t> taken_items;
    while (!pending.empty()) {
      const std::string n = pending.back();
      pending.pop_back();
      if (local.count(n) || !dep_.names().count(n) || axis_names_.count(n) || arrays_.count(n)) continue;
      const Item* source = nullptr;
      if (auto d = deferred.find(n); d != deferred.end()) {
        source = d->second;
      } else {
        for (const Available& a : available_)
          if (a.name == n) source = &a.item;
      }
      if (source == nullptr) {
        if (failure_.empty())
          failure_ = "`" + n + "` depends on the axis and would be read after the accumulator it reads changed";
        continue;
      }
      if (!taken_items.insert(source->seq).second) continue;
      items.push_back(*source);
      for (const std::string& m : own_used_names(source->stmt)) pending.push_back(m);
    }
    for (const auto& [name, it] : deferred) available_.push_back({name, *it});
    if (items.empty()) return;
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.seq < b.seq; });

    ExprList replicas;
    std::vector<std::string> vars;
    RangeMap ranges = ranges_;
    for (const TiledAxis& a : axes_) {
      vars.push_back(fresh("r"));
      replicas.push_back(Expr::var(vars.back()));
      ranges[vars.back()] = Interval{0, a.count - 1};
    }
    // Per level of the nest: its statements and the guard terms that involve its replica index
    // (terms of no replica index go with the outer level).
    std::vector<Body> level(axes_.size());
    for (const Item& it : items) level[outer_level(it.stmt) ? 0 : axes_.size() - 1].push_back(it.stmt);
    Expr guard = simplify(replica_guard(replicas), ranges);
    if (is_false(guard)) return;
    std::vector<Expr> level_guard(axes_.size());
    if (!is_true(guard)) {
      ExprList terms;
      std::vector<ExprList> per_level(axes_.size());
      conjuncts(guard, terms);
      for (const Expr& t : terms) {
        size_t l = 0;
        for (size_t i = 0; i < vars.size(); ++i)
          if (mentions(t, std::set<std::string>{vars[i]})) l = i;
        per_level[l].push_back(t);
      }
      const auto used = std::count_if(per_level.begin(), per_level.end(), [](const ExprList& l) { return !l.empty(); });
      for (size_t l = 0; l < axes_.size(); ++l)
        if (!per_level[l].empty()) level_guard[l] = used == 1 ? guard : conjoin(per_level[l]);
    }
    ReplicaIndexer indexer(arrays_, replicas);
    const std::map<std::string, Expr> substitution = to_replica(replicas);
    Body nest;
    for (size_t l = axes_.size(); l-- > 0;) {
      Body body = substitute_and_simplify(indexer.mutate_body(level[l]), substitution, ranges);
      body.insert(body.end(), nest.begin(), nest.end());
      if (body.empty()) continue;  // nothing at this level or inside it
      if (level_guard[l].defined()) body = Body{Cond{level_guard[l], std::move(body), {}}};
      Loop loop;
      loop.var = vars[l];
      loop.begin = Expr::int_(0);
      loop.end = Expr::int_(axes_[l].count);
      loop.role = LoopRole::Free;
      loop.unroll = axes_[l].count;
      loop.body = std::move(body);
      nest = Body{std::move(loop)};
    }
    out.insert(out.end(), nest.begin(), nest.end());
  }

  struct Available {
    std::string name;
    Item item;
  };
  const Dependence& dep_;
  const Dependence& inner_dep_;
  std::vector<TiledAxis> axes_;
  std::set<std::string> axis_names_;
  RangeMap ranges_, old_ranges_;
  std::set<std::string> taken_;
  std::set<std::string> accumulators_;  // every accumulator the kernel declares
  std::set<std::string> arrays_;
  std::vector<Available> available_;  // dependent pure values in scope that may be recomputed
  ExprList guards_;                   // conditions on the tiled axes in force (unsubstituted)
  ProgramOrder order_;
  std::string failure_;
};

std::set<std::string> accumulators(const Body& body) {
  struct Finder final : StmtVisitor {
    std::set<std::string> out;
    void visit_Init(const Init& s) override { out.insert(s.acc); }
  } finder;
  finder.visit(body);
  return finder.out;
}

constexpr int64_t kCandidates[] = {1, 2, 4, 8};

// The most outputs a thread may hold (TM x TN): 32 accumulators (8 x 4, the classic SGEMM thread
// tile) keep a matmul near 64 registers; 64 of them take twice that, and their unrolled bodies
// (times an unrolled reduce loop) multiply NVRTC's compile time several-fold for no default.
constexpr int64_t kMaxOutputsPerThread = 32;

// The Tile with `axes` (nest order, outer first) register-tiled, or why it cannot be. `dep` is the
// dependence on all of them, `inner_dep` on the last one.
Expected<Tile> rewrite(const Tile& tile, std::vector<TiledAxis> axes, const Dependence& dep,
                       const Dependence& inner_dep) {
  Tile out = tile;
  RangeMap ranges, old_ranges;
  for (TileAxis& a : out.axes) {
    old_ranges[a.name] = Interval{0, a.extent - 1};
    for (const TiledAxis& t : axes)
      if (a.name == t.name) a.extent = t.threads;
    ranges[a.name] = Interval{0, a.extent - 1};
  }
  RegisterTiler tiler(tile.body, dep, inner_dep, std::move(axes), ranges, old_ranges, bound_names(Body{Stmt(tile)}),
                      accumulators(tile.body));
  out.body = tiler.mutate_body(tile.body);
  if (!tiler.failure().empty()) return make_error(tiler.failure());
  return out;
}

// Warps of work per SM the heuristic keeps after tiling: fewer threads per output is the point of
// the pass, but a grid that no longer fills the SMs loses more than the reuse gains.
constexpr int64_t kMinWarpsPerSm = 4;

// The TN heuristic for a block tile of at most device.max_threads_per_block / 4 outputs (see the
// header comment).
int64_t heuristic_tn(const Tile& tile, const TileAxis& axis, const AxisFacts& facts, const DeviceDesc& device) {
  if (!facts.shares_operand) return 1;
  int64_t threads = 1;  // in the whole grid
  for (const TileAxis& a : tile.axes) threads *= a.extent;
  int64_t best = 1;
  for (int64_t tn : {2, 4}) {
    if (axis.extent % tn != 0 || axis.extent / tn < device.warp_size) continue;
    if (threads / tn < int64_t{device.sm_count} * device.warp_size * kMinWarpsPerSm) continue;
    best = tn;
  }
  return best;
}

// A THREAD axis the pass may tile, with the dependence on it.
struct QualifiedAxis {
  const TileAxis* axis = nullptr;
  Dependence dep;
  AxisFacts facts;
};

// Whether tiling both axes keeps one output per replica: every accumulator and every write that
// depends on either axis depends on both (a row-only value would be replicated along the columns).
bool depends_on_both(const Body& body, const Dependence& either, const Dependence& first, const Dependence& second) {
  struct Checker final : StmtVisitor {
    const Dependence *either, *first, *second;
    bool ok = true;
    void visit_Init(const Init& s) override {
      if (either->names().count(s.acc)) ok = ok && first->names().count(s.acc) && second->names().count(s.acc);
    }
    void visit_Write(const Write& s) override {
      if (either->depends(s.index) || either->depends(s.value)) ok = ok && first->depends(s.index) && second->depends(s.index);
    }
  } checker;
  checker.either = &either;
  checker.first = &first;
  checker.second = &second;
  checker.visit(body);
  return checker.ok;
}

// Whether some shared `# reduce` loop loads an operand of the rows alone and one of the columns
// alone (a matmul's A and B): what makes a 2-D tile load TM + TN values for TM x TN products. A
// kernel whose loads depend on both axes or on neither gains nothing over one axis.
bool has_row_and_column_operands(const Body& body, const Dependence& rows, const Dependence& cols) {
  struct Finder final : StmtVisitor {
    const Dependence *rows, *cols;
    int reduce_depth = 0;
    bool row_operand = false, column_operand = false, found = false;
    void visit_Load(const Load& s) override {
      if (reduce_depth == 0) return;
      const bool r = rows->depends(s.index), c = cols->depends(s.index);
      row_operand |= r && !c;
      column_operand |= c && !r;
    }
    void visit_Loop(const Loop& s) override {
      const bool reduce = s.role == LoopRole::Reduce && !rows->depends(ExprList{s.begin, s.end}) &&
                          !cols->depends(ExprList{s.begin, s.end});
      if (reduce && reduce_depth == 0) row_operand = column_operand = false;
      reduce_depth += reduce;
      StmtVisitor::visit_Loop(s);
      reduce_depth -= reduce;
      if (reduce && reduce_depth == 0) found |= row_operand && column_operand;
    }
  } finder;
  finder.rows = &rows;
  finder.cols = &cols;
  finder.visit(body);
  return finder.found;
}

std::vector<int64_t> divisors_of(int64_t extent) {
  std::vector<int64_t> out;
  for (int64_t c : kCandidates)
    if (extent % c == 0) out.push_back(c);
  return out;
}

class RegisterTilePass final : public TilePass {
 public:
  std::string_view name() const override { return "register_tile"; }
  std::string_view summary() const override {
    return "give each thread TM x TN outputs along the output thread axes, in register arrays";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"TN", KnobType::Int, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}, std::nullopt,
                     "outputs per thread along the coalesced output thread axis; 1 disables"},
            KnobSpec{"TM", KnobType::Int, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}, std::nullopt,
                     "outputs per thread along the second output thread axis (a matmul's rows); 1 disables"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile& tile, PassContext& ctx) override {
    Node* n = &node;
    const TileOp* kernel = &tile_op;
    const DeviceDesc& device = ctx.device();
    int64_t block = 1;  // threads per block
    for (const TileAxis& a : tile.axes)
      if (a.binding == AxisBinding::Thread) block *= a.extent;
    const int64_t max_threads = device.max_threads_per_block;
    // A block tile launch_geometry made larger than a block counts on this pass to divide it.
    auto skip = [&](const std::string& why) -> Status {
      if (block > max_threads)
        return ctx.error_at(*n, "the block tile has " + std::to_string(block) + " threads, more than the device's " +
                                    std::to_string(max_threads) + ", and register_tile cannot divide it: " + why);
      ctx.skip(*n, why);
      return Status::ok();
    };

    // The first two THREAD axes (the coalesced one first) that index an output and feed a reduction.
    std::vector<QualifiedAxis> qualified;
    const std::set<std::string> written = written_buffers(tile.body);
    std::string why_not = "no THREAD axis";
    for (const TileAxis& a : tile.axes) {
      if (a.binding != AxisBinding::Thread || qualified.size() == 2) continue;
      Dependence d({a.name});
      d.run(tile.body);
      FactFinder finder(d, written);
      finder.visit(tile.body);
      if (!finder.facts.obstacle.empty()) {
        why_not = finder.facts.obstacle;
        continue;
      }
      if (!finder.facts.indexes_output) {
        why_not = "no THREAD axis indexes the output";
        continue;
      }
      if (!finder.facts.feeds_reduction) {
        why_not = "no reduce loop feeds an accumulator indexed by a THREAD axis";
        continue;
      }
      qualified.push_back({&a, std::move(d), finder.facts});
    }
    if (qualified.empty()) return skip(why_not);
    const QualifiedAxis& cols = qualified[0];
    const TileAxis& col_axis = *cols.axis;

    // Whether the rewrite succeeds does not depend on TN: try it before asking for the knob.
    const std::vector<int64_t> tn_divisors = divisors_of(col_axis.extent);
    if (tn_divisors.size() >= 2) {
      Expected<Tile> trial = rewrite(tile, {{col_axis.name, col_axis.extent / tn_divisors[1], tn_divisors[1]}},
                                     cols.dep, cols.dep);
      if (!trial) return skip(trial.error().message);
    }
    // Two dimensions: a second qualifying axis (the rows), operands of the rows alone and of the
    // columns alone, a row-and-column-only kernel, and a rewrite that succeeds.
    std::optional<Dependence> both;
    std::vector<int64_t> tm_divisors = {1};
    if (qualified.size() == 2 && divisors_of(qualified[1].axis->extent).size() >= 2) {
      const QualifiedAxis& rows = qualified[1];
      Dependence d({col_axis.name, rows.axis->name});
      d.run(tile.body);
      FactFinder finder(d, written);
      finder.visit(tile.body);
      const std::vector<int64_t> divisors = divisors_of(rows.axis->extent);
      if (finder.facts.obstacle.empty() && has_row_and_column_operands(tile.body, rows.dep, cols.dep) &&
          depends_on_both(tile.body, d, cols.dep, rows.dep) &&
          (tn_divisors.size() >= 2 ? rewrite(tile, tiled(rows, divisors[1], cols, tn_divisors[1]), d, cols.dep)
                                   : rewrite(tile, tiled(rows, divisors[1], cols, 1), rows.dep, rows.dep))) {
        both = std::move(d);
        tm_divisors = divisors;
      }
    }
    auto fits = [&](int64_t tn, int64_t tm) {
      return block / (tn * tm) <= max_threads && tn * tm <= kMaxOutputsPerThread;
    };
    std::vector<int64_t> tn_candidates;
    for (int64_t tn : tn_divisors)
      if (std::any_of(tm_divisors.begin(), tm_divisors.end(), [&](int64_t tm) { return fits(tn, tm); }))
        tn_candidates.push_back(tn);
    if (tn_candidates.empty() || (tn_candidates.size() < 2 && tm_divisors.size() < 2))
      return skip("axis " + col_axis.name + " has extent " + std::to_string(col_axis.extent) +
                  ", which no TN > 1 divides");

    // The heuristics (see the header comment).
    const int64_t comfortable = std::max<int64_t>(device.warp_size, max_threads / 4);
    const bool large = block > comfortable && both.has_value();
    int64_t tn_wanted = heuristic_tn(tile, col_axis, cols.facts, device);
    if (large) {
      tn_wanted = 1;
      for (int64_t tn : {2, 4})
        if (col_axis.extent % tn == 0 && col_axis.extent / tn >= device.warp_size) tn_wanted = tn;
    }
    int64_t tn_heuristic = tn_candidates.front();
    for (int64_t tn : tn_candidates)
      if (tn <= tn_wanted) tn_heuristic = tn;
    TESSERA_ASSIGN_OR_RETURN(int64_t tn, ctx.choose_int("TN", *n, tn_candidates, tn_heuristic));
    int64_t tm = 1;
    if (both) {
      std::vector<int64_t> tm_candidates;
      for (int64_t c : tm_divisors)
        if (fits(tn, c)) tm_candidates.push_back(c);
      // The fewest rows per thread that bring a large block tile to `comfortable` threads (else
      // the most); one for a block tile of at most that many outputs.
      int64_t tm_heuristic = tm_candidates.back();
      if (!large) tm_heuristic = tm_candidates.front();
      for (auto it = tm_candidates.rbegin(); large && it != tm_candidates.rend(); ++it)
        if (block / (tn * *it) <= comfortable) tm_heuristic = *it;
      TESSERA_ASSIGN_OR_RETURN(tm, ctx.choose_int("TM", *n, tm_candidates, tm_heuristic));
    }
    if (tn == 1 && tm == 1) return Status::ok();

    // One tiled axis is rewritten with the dependence on it alone; two with the dependence on
    // either, the columns' deciding what the row loop computes.
    const Dependence& dep = tm == 1 ? cols.dep : tn == 1 ? qualified[1].dep : *both;
    const Dependence& inner_dep = tn == 1 ? qualified[1].dep : cols.dep;
    Expected<Tile> out = rewrite(tile, tiled(tm == 1 ? cols : qualified[1], tm, cols, tn), dep, inner_dep);
    if (!out) return ctx.error_at(*n, out.error().message);
    auto op = std::make_unique<TileOp>(*kernel);
    op->body = canonicalize_names(Body{Stmt(std::move(*out))});
    n->op = std::move(op);
    return Status::ok();
  }

 private:
  // The axes of a two-dimensional tile in nest order: rows outside, columns inside. A count of 1
  // leaves its axis out.
  static std::vector<TiledAxis> tiled(const QualifiedAxis& rows, int64_t tm, const QualifiedAxis& cols, int64_t tn) {
    std::vector<TiledAxis> out;
    if (tm > 1) out.push_back({rows.axis->name, rows.axis->extent / tm, tm});
    if (tn > 1) out.push_back({cols.axis->name, cols.axis->extent / tn, tn});
    return out;
  }
};

void register_register_tile(Registry& r) {
  r.add_pass("register_tile", [] { return std::make_unique<RegisterTilePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("register_tile", "1.0.0", ::tessera::register_register_tile)

// split_reduce: spreads a reduction, and the epilogue that follows it, over blocks when the
// kernel's rows alone would leave SMs idle. No kernel of a large reduction runs serially on a few
// blocks: `x.sum()` over 8192x8192 gets 256 blocks, not 1; a fused `gelu(x) * 2 + x.mean()` gets
// its epilogue spread too; a softmax over 4 rows of 262144 gets 256 blocks for each phase.
//
// Rewrites: a Tile kernel `y` (axes still PARALLEL: it runs before launch_geometry, after
// split_matmul_k) whose body is
//     <prologue>  R_1 .. R_n  <epilogue>
// where each R_i is a top-level `# reduce` loop nest over the same E elements (after flattening,
// below), accumulating into accumulators declared before it with their op's identity. With knob
// SPLIT = S > 1 it adds a node `y_split` before `y`, of shape (A, S, extents of y's axes) for A
// accumulators:
//     Tile(axes=(s:S, <y's axes>)):
//       <prologue>  R_1 .. R_n over elements [s*C, min(E, s*C + C)) with C = ceil(E/S)
//       y_split[i, s, <axes>] = acc_i                      (for each accumulator)
// and `y` becomes the combine and the epilogue:
//     Tile(axes=(<y's axes>[, p:P])):
//       <prologue>  acc_i = init(identity)
//       for s in 0..S:  # reduce    acc_i <- op_i(acc_i, load y_split[i, s, <axes>])
//       <epilogue>
// An accumulator of R_j (j > 1) may read an earlier Max accumulator m only as `exp(x - m)` summed
// (the softmax, log-softmax and logsumexp shape): each split sums exp(x - m_s) against its own
// maximum, and the combine rescales, l = sum_s l_s * exp(m_s - m) (a split whose maximum is -inf
// adds 0), after combining m. Any other read of an accumulator inside a reduction declines.
// With knob EPILOGUE_SPLIT = P > 1, `y`'s epilogue is spread over P blocks per row: a new Tile
// axis `p:P`; every top-level `# free` loop nest of the epilogue, flattened, runs its share
// [p*D, min(N, p*D + D)) with D = ceil(N/P); every block recombines the S partials (S loads per
// accumulator, from L2) before its share; top-level writes outside loops are done by block p = 0.
// P applies with S = 1 as well (a short reduction recomputed per block before a long epilogue).
// Flattening: a perfect nest of `# reduce` loops whose inner loop accumulates into an accumulator
// declared in the outer body and folded into the outer one with the same op becomes one loop over
// the product (indices by / and %); a perfect nest of `# free` loops likewise. Then the threads of
// a block (cooperative_reduce) stride over consecutive elements: coalesced, and any E can split.
// The rule (the fusion stage's counterpart, stated in fuse's contract): fuse may put a
// whole-tensor reduction and a large epilogue in one kernel; by the heuristics below a kernel that
// moves 1 MB or more never runs on fewer blocks than the device has SMs when it can be spread.
// On sm_90 and newer cluster_reduce runs first: a kernel whose rows it split across a thread-block
// cluster (a CLUSTER axis) is skipped, with that reason.
// Accepts: Tile IR. Applies to TileOp kernels whose axes are all PARALLEL, with no contraction
//   that has M or N axes (split_matmul_k's work: operands shared across outputs), and with at
//   least one top-level reduction. Skips, with the reason, kernels whose rows fill the SMs,
//   reductions over different extents, statements between reductions, accumulators that do not
//   start at their identity, reads of an accumulator inside a reduction other than the softmax
//   shape, and (S > 1 only) prologues holding loops or writes while the epilogue reads them.
// Knobs: SPLIT (1 = off, else a power of two 2..1024 leaving at least kMinPerSplit elements per
//   split) and EPILOGUE_SPLIT (1 = off, else a power of two 2..1024 leaving at least one trip of
//   every epilogue loop per block; asked only when the epilogue has a top-level free loop and no
//   other top-level loop). Heuristics read device.sm_count: with R rows below it and R times a
//   row's innermost iterations (every loop nest of the body counted) in the widest loaded dtype
//   reaching 1 MB, the work is spread: a reduction shorter than kMinSplitElements before a
//   spreadable epilogue stays whole (SPLIT 1: every block recomputes it, re-reading the row from
//   L2) and P is the smallest giving R * P >= sm_count while each block keeps
//   kHeuristicMinPerPart innermost iterations of the epilogue's shortest loop (its trips times
//   the work of one: a projection's output column holds a K loop); otherwise S is the smallest
//   giving R * S >= sm_count with kHeuristicMinPerSplit elements per split, and P as before when
//   the epilogue can be spread. Else both 1.
// Guarantees: each output combines the same values (in S groups, in order, so floating-point sums
//   may differ by rounding; max and min exactly); the epilogue computes the same values; kernel
//   names: the partial kernel keeps y's kernel name, the combine kernel is named <name>_combine.
//   Names canonical.
// Tests: tests/golden/split_reduce/, tests/e2e/random_knobs_test.cpp (SplitReduceTest).
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/contraction.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/split_kernel.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/kernel_report.h"

namespace tessera {
namespace {

const std::vector<int64_t> kSplits = {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
constexpr int64_t kMinPerSplit = 32;             // a split smaller than a warp is all overhead
constexpr int64_t kMinSplitElements = 8192;      // shorter reductions: recompute them per block
constexpr int64_t kHeuristicMinPerSplit = 512;   // two elements per thread of a 256-thread block
constexpr int64_t kHeuristicMinPerPart = 256;    // innermost iterations: one per thread of a block

std::optional<int64_t> literal(const Expr& e) {
  if (e.is(ExprKind::Int)) return e.int_value();
  return std::nullopt;
}

// The literal trip count of a loop, when it has one.
std::optional<int64_t> trip_count(const Loop& l) {
  auto b = literal(l.begin), e = literal(l.end);
  if (!b || !e || *e < *b) return std::nullopt;
  return *e - *b;
}

bool same_expr(const Expr& a, const Expr& b) { return structurally_equal(a, b); }

// Collects the values a body defines and how often each name is read, to check single uses.
struct UseCounts final : StmtVisitor {
  std::map<std::string, int> uses;
  void count(const Stmt& s) {
    for (const std::string& n : own_used_names(s)) ++uses[n];
  }
  void visit(const Body& b) {
    for (const Stmt& s : b) {
      count(s);
      StmtVisitor::visit(s);
    }
  }
  using StmtVisitor::visit;
};

// Fresh names for loop variables; canonicalize_names renames them at the end.
class NameSource {
 public:
  explicit NameSource(std::set<std::string> taken) : taken_(std::move(taken)) {}
  std::string fresh(const std::string& base) {
    for (int i = 0;; ++i) {
      std::string n = base + std::to_string(i);
      if (taken_.insert(n).second) return n;
    }
  }

 private:
  std::set<std::string> taken_;
};

// One loop over the product of a perfect nest, or the loop itself. Reduce nests fold an inner
// accumulator into an outer one with the same op; free nests are a loop holding one loop.
Loop flatten_nest(const Loop& outer, NameSource& names) {
  const auto outer_trips = trip_count(outer);
  if (!outer_trips) return outer;
  const Body& b = outer.body;
  // Free: `for i: for j: body`.
  if (outer.role == LoopRole::Free && b.size() == 1 && b[0].as<Loop>() != nullptr &&
      b[0].as<Loop>()->role == LoopRole::Free) {
    Loop inner = flatten_nest(*b[0].as<Loop>(), names);
    auto inner_trips = trip_count(inner);
    if (!inner_trips || *inner_trips == 0) return outer;
    const std::string f = names.fresh("flat");
    const Expr fv = Expr::var(f);
    std::map<std::string, Expr> sub = {{outer.var, outer.begin + fv / *inner_trips},
                                       {inner.var, inner.begin + fv % *inner_trips}};
    RangeMap ranges{{f, Interval{0, *outer_trips * *inner_trips - 1}}};
    return Loop{f, Expr::int_(0), Expr::int_(*outer_trips * *inner_trips), LoopRole::Free, 0,
                substitute_and_simplify(inner.body, sub, ranges)};
  }
  if (outer.role != LoopRole::Reduce) return outer;
  // Reduce: `for i: acc_in = init(id); for j: ...acc_in <- op(..); acc_out <- op(acc_out, acc_in)`.
  size_t inits = 0;
  while (inits < b.size() && b[inits].as<Init>() != nullptr) ++inits;
  if (inits == 0 || b.size() != 2 * inits + 1 || b[inits].as<Loop>() == nullptr ||
      b[inits].as<Loop>()->role != LoopRole::Reduce)
    return outer;
  std::map<std::string, std::string> inner_to_outer;
  std::map<std::string, CombineFn> ops;
  for (size_t i = 0; i < inits; ++i) {
    const Init& init = *b[i].as<Init>();
    const auto* acc = b[inits + 1 + i].as<Accum>();
    if (acc == nullptr || !acc->index.empty() || !init.type.is_scalar() || !same_expr(acc->value, Expr::value(init.acc)) ||
        !same_expr(init.value, combine_identity(acc->op, init.type.dtype)))
      return outer;
    inner_to_outer[init.acc] = acc->acc;
    ops[init.acc] = acc->op;
  }
  Loop inner = flatten_nest(*b[inits].as<Loop>(), names);
  auto inner_trips = trip_count(inner);
  if (!inner_trips || *inner_trips == 0) return outer;
  // The inner accumulators may only be accumulated into, with the op the outer fold uses.
  bool ok = true;
  struct Check final : StmtVisitor {
    const std::map<std::string, CombineFn>* ops;
    bool* ok;
    void visit_Accum(const Accum& a) override {
      auto it = ops->find(a.acc);
      if (it == ops->end() || it->second != a.op) *ok = false;
    }
    void visit_Init(const Init&) override { *ok = false; }  // a deeper nest: not perfect
  } check;
  check.ops = &ops;
  check.ok = &ok;
  check.visit(inner.body);
  UseCounts uses;
  uses.visit(inner.body);
  for (const auto& [acc, op] : ops) {
    // Accum reads its own accumulator through the acc field: one read per Accum is expected.
    struct CountAccums final : StmtVisitor {
      std::string acc;
      int n = 0;
      void visit_Accum(const Accum& a) override { n += a.acc == acc ? 1 : 0; }
    } accums;
    accums.acc = acc;
    accums.visit(inner.body);
    if (uses.uses[acc] != accums.n) ok = false;
  }
  if (!ok) return outer;
  const std::string f = names.fresh("flat");
  const Expr fv = Expr::var(f);
  std::map<std::string, Expr> sub = {{outer.var, outer.begin + fv / *inner_trips},
                                     {inner.var, inner.begin + fv % *inner_trips}};
  RangeMap ranges{{f, Interval{0, *outer_trips * *inner_trips - 1}}};
  Body body = rename_names(inner.body, inner_to_outer);
  return Loop{f, Expr::int_(0), Expr::int_(*outer_trips * *inner_trips), LoopRole::Reduce, 0,
              substitute_and_simplify(body, sub, ranges)};
}

// A softmax-shaped read: the sum accumulator `sum` adds exp(x - max), max being an earlier
// reduction's Max accumulator.
struct Rescale {
  std::string sum, max;
};

// What the rewrite needs, or why it does not apply.
struct ReducePlan {
  size_t first = 0, last = 0;          // top-level positions of the first and last reduction
  int64_t extent = 0;                  // E, every reduction's element count
  std::vector<std::string> accs;       // in order of declaration
  std::map<std::string, CombineFn> ops;
  std::map<std::string, const Init*> inits;
  std::vector<Rescale> rescales;
  Body body;                           // the Tile body with every top-level nest flattened
  bool prologue_simple = true;         // no loops, no writes: the combine kernel may repeat it
  bool epilogue_sliceable = false;     // top-level free loops only (and no other loops)
  int64_t epilogue_min_trips = 0;      // the shortest top-level free loop of the epilogue
  int64_t epilogue_work = 0;           // its trips times the innermost iterations of one
  int64_t work = 0;                    // innermost iterations of a row, every loop counted
  std::string why_not;
};

// Finds, in reduction `loop`, the softmax-shaped reads of earlier Max accumulators, or says why
// an accumulator read there is not one.
std::string check_reads(const Loop& loop, const std::set<std::string>& earlier,
                        const std::map<std::string, CombineFn>& ops, std::vector<Rescale>& out) {
  UseCounts uses;
  uses.visit(loop.body);
  struct Defs final : StmtVisitor {
    std::map<std::string, const Assign*> assigns;
    std::vector<const Accum*> accums;
    void visit_Assign(const Assign& a) override { assigns[a.dst] = &a; }
    void visit_Accum(const Accum& a) override { accums.push_back(&a); }
  } defs;
  defs.visit(loop.body);
  for (const std::string& m : earlier) {
    if (!uses.uses.count(m)) continue;
    const auto it = ops.find(m);
    if (it == ops.end() || it->second != CombineFn::Max || uses.uses[m] != 1)
      return "a reduction reads " + m + " of an earlier one (only exp(x - max) summed can be split)";
    // m read once: in `d = sub(x, m)`, d read once in `e = exp(d)`, e read once in `acc <- add(acc, e)`.
    const Assign* d = nullptr;
    for (const auto& [name, a] : defs.assigns)
      if (a->op == ElementwiseFn::Sub && a->args.size() == 2 && same_expr(a->args[1], Expr::value(m))) d = a;
    const Assign* e = nullptr;
    if (d != nullptr && uses.uses[d->dst] == 1)
      for (const auto& [name, a] : defs.assigns)
        if (a->op == ElementwiseFn::Exp && a->args.size() == 1 && same_expr(a->args[0], Expr::value(d->dst))) e = a;
    const Accum* sum = nullptr;
    if (e != nullptr && uses.uses[e->dst] == 1)
      for (const Accum* a : defs.accums)
        if (a->op == CombineFn::Add && same_expr(a->value, Expr::value(e->dst)) && a->index.empty()) sum = a;
    if (sum == nullptr) return "a reduction reads " + m + " of an earlier one other than as exp(x - " + m + ") summed";
    out.push_back(Rescale{sum->acc, m});
  }
  return "";
}

ReducePlan plan_reduce(const Tile& tile) {
  ReducePlan p;
  for (const TileAxis& a : tile.axes)
    if (a.binding != AxisBinding::Parallel) {
      p.why_not = "its axes are bound already (split_reduce runs before launch_geometry)";
      return p;
    }
  std::set<std::string> taken = bound_names(tile.body);
  for (const TileAxis& a : tile.axes) taken.insert(a.name);
  NameSource names(std::move(taken));
  for (const Stmt& s : tile.body) {
    if (const auto* loop = s.as<Loop>()) p.body.push_back(flatten_nest(*loop, names));
    else p.body.push_back(s);
  }
  // The reductions: top-level `# reduce` loops.
  std::vector<size_t> reductions;
  for (size_t i = 0; i < p.body.size(); ++i)
    if (const auto* loop = p.body[i].as<Loop>(); loop != nullptr && loop->role == LoopRole::Reduce)
      reductions.push_back(i);
  if (reductions.empty()) {
    p.why_not = "no top-level reduction";
    return p;
  }
  p.first = reductions.front();
  p.last = reductions.back();
  for (size_t i = p.first; i <= p.last; ++i) {
    const Stmt& s = p.body[i];
    if (s.as<Init>() == nullptr && (s.as<Loop>() == nullptr || s.as<Loop>()->role != LoopRole::Reduce)) {
      p.why_not = "statements between its reductions (" + std::string(stmt_kind_name(s.kind())) + ")";
      return p;
    }
  }
  std::map<std::string, const Init*> declared;
  for (size_t i = 0; i <= p.last; ++i)
    if (const auto* init = p.body[i].as<Init>()) declared[init->acc] = init;
  std::set<std::string> earlier;
  for (size_t r : reductions) {
    const Loop& loop = *p.body[r].as<Loop>();
    const auto trips = trip_count(loop);
    if (!trips || literal(loop.begin) != 0) {
      p.why_not = "a reduction without literal bounds from 0";
      return p;
    }
    if (p.extent != 0 && *trips != p.extent) {
      p.why_not = "its reductions run over different extents (" + std::to_string(p.extent) + " and " +
                  std::to_string(*trips) + ")";
      return p;
    }
    p.extent = *trips;
    struct Accums final : StmtVisitor {
      std::vector<const Accum*> all;
      void visit_Accum(const Accum& a) override { all.push_back(&a); }
    } accums;
    accums.visit(loop.body);
    std::set<std::string> mine;
    for (const Accum* a : accums.all) {
      const auto d = declared.find(a->acc);
      if (d == declared.end() || !a->index.empty() || !d->second->type.is_scalar()) {
        p.why_not = a->acc + " is not a scalar accumulator declared before its reduction";
        return p;
      }
      if (earlier.count(a->acc) || (p.ops.count(a->acc) && p.ops[a->acc] != a->op)) {
        p.why_not = a->acc + " is accumulated by two reductions or with two ops";
        return p;
      }
      if (!same_expr(d->second->value, combine_identity(a->op, d->second->type.dtype))) {
        p.why_not = a->acc + " does not start at the identity of " + std::string(name_of(a->op));
        return p;
      }
      if (!p.ops.count(a->acc)) {
        p.ops[a->acc] = a->op;
        p.accs.push_back(a->acc);
        p.inits[a->acc] = d->second;
      }
      mine.insert(a->acc);
    }
    // An accumulator of this reduction is read inside it only by its own Accums.
    UseCounts uses;
    uses.visit(loop.body);
    for (const std::string& acc : mine) {
      int own = 0;
      for (const Accum* a : accums.all) own += a->acc == acc ? 1 : 0;
      if (uses.uses[acc] != own) {
        p.why_not = acc + " is read inside its own reduction";
        return p;
      }
    }
    std::string why = check_reads(loop, earlier, p.ops, p.rescales);
    if (!why.empty()) {
      p.why_not = why;
      return p;
    }
    earlier.insert(mine.begin(), mine.end());
  }
  if (p.accs.empty()) {
    p.why_not = "its reductions accumulate nothing";
    return p;
  }
  // The prologue, and the accumulators' reads before their reductions end.
  std::set<std::string> accs(p.accs.begin(), p.accs.end());
  for (size_t i = 0; i < p.first; ++i) {
    const Stmt& s = p.body[i];
    if (s.as<Init>() != nullptr) continue;
    for (const std::string& used : own_used_names(s))
      if (accs.count(used)) {
        p.why_not = "an accumulator is read before its reductions end";
        return p;
      }
    const auto& t = stmt_kind_traits(s.kind());
    if (t.has_body || s.as<Write>() != nullptr) p.prologue_simple = false;
  }
  // The epilogue: sliceable when its top-level loops are all free loops with literal bounds.
  p.epilogue_sliceable = true;
  bool any_loop = false;
  for (size_t i = p.last + 1; i < p.body.size(); ++i) {
    const Stmt& s = p.body[i];
    if (const auto* loop = s.as<Loop>()) {
      const auto trips = trip_count(*loop);
      if (loop->role != LoopRole::Free || !trips || *trips == 0) {
        p.epilogue_sliceable = false;
        continue;
      }
      if (!any_loop || *trips < p.epilogue_min_trips) {
        p.epilogue_min_trips = *trips;
        p.epilogue_work = *trips * std::max<int64_t>(1, innermost_iterations(loop->body));
      }
      any_loop = true;
    } else if (stmt_kind_traits(s.kind()).has_body) {
      p.epilogue_sliceable = false;  // an `if` holding loops: leave it to one block
    }
  }
  p.epilogue_sliceable = p.epilogue_sliceable && any_loop;
  p.work = innermost_iterations(p.body);
  return p;
}

ExprList partial_index(const Tile& tile, size_t acc, const Expr& split) {
  ExprList index = {Expr::int_(static_cast<int64_t>(acc)), split};
  for (const TileAxis& a : tile.axes) index.push_back(Expr::var(a.name));
  return index;
}

DType acc_dtype(const ReducePlan& p) { return p.inits.at(p.accs.front())->type.dtype; }

// `loop` (0..n) running only elements [part * share, min(n, part * share + share)).
Loop share_of(const Loop& loop, const Expr& part, int64_t parts, NameSource& names) {
  const int64_t n = *trip_count(loop);
  const int64_t share = (n + parts - 1) / parts;
  const std::string g = names.fresh("share");
  const Expr element = part * share + Expr::var(g);
  Body body = substitute_and_simplify(loop.body, {{loop.var, element}}, {{g, Interval{0, share - 1}}});
  if (share * parts != n) body = Body{Stmt(Cond{element < Expr::int_(n), std::move(body), {}})};
  return Loop{g, Expr::int_(0), Expr::int_(share), loop.role, 0, std::move(body)};
}

// The partial kernel: the prologue and this split's share of every reduction, writing every
// accumulator.
Tile partial_tile(const Tile& tile, const ReducePlan& p, int64_t splits, const std::string& partial,
                  NameSource& names) {
  Tile out;
  const std::string s = names.fresh("split");
  out.axes.push_back(TileAxis{s, splits, AxisBinding::Parallel});
  out.axes.insert(out.axes.end(), tile.axes.begin(), tile.axes.end());
  for (size_t i = 0; i <= p.last; ++i) {
    const auto* loop = p.body[i].as<Loop>();
    if (i >= p.first && loop != nullptr) out.body.push_back(share_of(*loop, Expr::var(s), splits, names));
    else out.body.push_back(p.body[i]);
  }
  for (size_t i = 0; i < p.accs.size(); ++i)
    out.body.push_back(Write{partial, partial_index(tile, i, Expr::var(s)), Expr::value(p.accs[i])});
  return out;
}

// The epilogue, its top-level free loops shared among `parts` blocks along `part` and its other
// top-level writes left to part 0.
Body sliced_epilogue(const ReducePlan& p, const Expr& part, int64_t parts, NameSource& names) {
  Body out;
  for (size_t i = p.last + 1; i < p.body.size(); ++i) {
    const Stmt& s = p.body[i];
    if (parts == 1) out.push_back(s);
    else if (const auto* loop = s.as<Loop>()) out.push_back(share_of(*loop, part, parts, names));
    else if (s.as<Write>() != nullptr) out.push_back(Cond{Expr::binary(ExprKind::Eq, part, Expr::int_(0)), Body{s}, {}});
    else out.push_back(s);
  }
  return out;
}

// The combine kernel: combines the splits (max before the sums rescaled by it), then the epilogue.
Body combine_body(const Tile& tile, const ReducePlan& p, int64_t splits, const std::string& partial,
                  NameSource& names) {
  Body out;
  if (p.prologue_simple)
    for (size_t i = 0; i < p.first; ++i)
      if (p.body[i].as<Init>() == nullptr) out.push_back(p.body[i]);
  for (const std::string& acc : p.accs) out.push_back(*p.inits.at(acc));
  const DType dtype = acc_dtype(p);
  const ValueType vt = ValueType::scalar(dtype);
  auto rescaled = [&](const std::string& acc) -> const Rescale* {
    for (const Rescale& r : p.rescales)
      if (r.sum == acc) return &r;
    return nullptr;
  };
  for (int round = 0; round < 2; ++round) {  // round 1: the sums rescaled by a combined max
    Body body;
    const std::string s = names.fresh("split");
    for (size_t i = 0; i < p.accs.size(); ++i) {
      const std::string& acc = p.accs[i];
      const Rescale* r = rescaled(acc);
      if ((r != nullptr) != (round == 1)) continue;
      const std::string v = names.fresh("partial");
      body.push_back(Load{v, partial, partial_index(tile, i, Expr::var(s)), vt});
      if (r == nullptr) {
        body.push_back(Accum{acc, p.ops.at(acc), Expr::value(v)});
        continue;
      }
      const size_t mi = std::find(p.accs.begin(), p.accs.end(), r->max) - p.accs.begin();
      const std::string m = names.fresh("partial"), d = names.fresh("scaled"), e = names.fresh("scaled"),
                        t = names.fresh("scaled"), u = names.fresh("scaled");
      body.push_back(Load{m, partial, partial_index(tile, mi, Expr::var(s)), vt});
      body.push_back(Assign{d, ElementwiseFn::Sub, {Expr::value(m), Expr::value(r->max)}, vt});
      body.push_back(Assign{e, ElementwiseFn::Exp, {Expr::value(d)}, vt});
      body.push_back(Assign{t, ElementwiseFn::Mul, {Expr::value(v), Expr::value(e)}, vt});
      // A split whose maximum is -inf summed exp(-inf - -inf): it holds nothing, it adds 0.
      body.push_back(Select{u, Expr::float_(-std::numeric_limits<double>::infinity()) < Expr::value(m),
                            Expr::value(t), Expr::float_(0.0), vt});
      body.push_back(Accum{acc, CombineFn::Add, Expr::value(u)});
    }
    if (!body.empty())
      out.push_back(Loop{s, Expr::int_(0), Expr::int_(splits), LoopRole::Reduce, 0, std::move(body)});
  }
  return out;
}

// The smallest candidate giving `rows` x it at least `sms` blocks while each part keeps `min_each`
// elements (the largest such when none reaches `sms`); 1 when no candidate keeps `min_each`.
int64_t fill_sms(int64_t rows, int64_t elements, int64_t sms, int64_t min_each, const std::vector<int64_t>& candidates) {
  int64_t best = 1;
  for (int64_t c : candidates) {
    if (c == 1 || elements / c < min_each) continue;
    best = c;
    if (rows * c >= sms) break;
  }
  return best;
}

// The widest element a body loads, in bytes (4 when it loads nothing).
int64_t widest_load_bytes(const Body& body) {
  int64_t widest = 0;
  struct Loads final : StmtVisitor {
    int64_t* widest;
    void visit_Load(const Load& l) override { *widest = std::max<int64_t>(*widest, dtype_bytes(l.type.dtype)); }
  } loads;
  loads.widest = &widest;
  loads.visit(body);
  return widest == 0 ? 4 : widest;
}

// The candidates among kSplits leaving at least `min_each` of `elements` to each part.
std::vector<int64_t> part_candidates(int64_t elements, int64_t min_each) {
  std::vector<int64_t> out = {1};
  for (int64_t s : kSplits)
    if (elements / s >= min_each) out.push_back(s);
  return out;
}

class SplitReducePass final : public Pass {
 public:
  std::string_view name() const override { return "split_reduce"; }
  std::string_view summary() const override {
    return "spread a reduction and its epilogue over blocks when its rows leave SMs idle (adds a combine kernel)";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    std::vector<AttrValue> candidates = {int64_t{1}};
    for (int64_t s : kSplits) candidates.push_back(s);
    return {KnobSpec{"SPLIT", KnobType::Int, candidates, std::nullopt,
                     "blocks that share one row's reduction (1 = do not split)"},
            KnobSpec{"EPILOGUE_SPLIT", KnobType::Int, candidates, std::nullopt,
                     "blocks that share one row's epilogue loops (1 = one block per row)"}};
  }

  Status run(Graph& g, PassContext& ctx) override {
    std::vector<std::string> ids;
    for (const Node* n : g.nodes())
      if (n->op_as<TileOp>() != nullptr) ids.push_back(n->id());
    for (const std::string& id : ids) TESSERA_TRY(split_node(g, *g.find(id), ctx));
    return Status::ok();
  }

 private:
  static Status split_node(Graph& g, Node& n, PassContext& ctx) {
    const auto& kernel = *n.op_as<TileOp>();
    const Tile* tile = kernel.tile();
    if (tile == nullptr) return ctx.error_at(n, "a Tile IR kernel body must be exactly one Tile statement");
    if (std::any_of(tile->axes.begin(), tile->axes.end(), [](const TileAxis& a) { return a.binding == AxisBinding::Cluster; })) {
      ctx.skip(n, "its rows are split across a thread-block cluster (cluster_reduce)");
      return Status::ok();
    }
    // A contraction whose operands are shared across outputs (M or N axes) is split_matmul_k's
    // work; two row operands of one reduction (a masked softmax) are not.
    for (const Contraction& c : find_contractions(*tile))
      if (!c.m_axes.empty() || !c.n_axes.empty()) return Status::ok();
    ReducePlan p = plan_reduce(*tile);
    if (p.why_not == "no top-level reduction") return Status::ok();  // nothing to say
    if (!p.why_not.empty()) {
      ctx.skip(n, p.why_not);
      return Status::ok();
    }
    int64_t rows = 1;
    for (const TileAxis& a : tile->axes) rows *= a.extent;
    const int64_t sms = ctx.device().sm_count;

    // Heuristics: large work (the kernel report's 1 MB) on fewer rows than SMs is spread. A short
    // reduction before a spreadable epilogue is recomputed by every block (one kernel, re-reads
    // from L2); a long one is split, and its epilogue spread too.
    const std::vector<int64_t> split_candidates = part_candidates(p.extent, kMinPerSplit);
    const std::vector<int64_t> part_candidates_ =
        p.epilogue_sliceable ? part_candidates(p.epilogue_min_trips, 1) : std::vector<int64_t>{1};
    // The epilogue's work a row: its shortest loop's trips times the work of each (a projection's
    // output column holds a whole K loop).
    const int64_t epilogue = p.epilogue_sliceable ? p.epilogue_work : 0;
    const bool large = rows < sms && rows * p.work * widest_load_bytes(p.body) >= kLargeKernelBytes;
    int64_t split_heuristic = 1, part_heuristic = 1;
    if (large && !(p.epilogue_sliceable && p.extent < kMinSplitElements))
      split_heuristic = fill_sms(rows, p.extent, sms, kHeuristicMinPerSplit, split_candidates);
    if (large && p.epilogue_sliceable)
      part_heuristic = fill_sms(rows, epilogue, sms, kHeuristicMinPerPart, part_candidates_);
    // The combine kernel repeats a prologue the epilogue reads: only a simple one.
    if (!p.prologue_simple) {
      std::set<std::string> prologue_values;
      for (size_t i = 0; i < p.first; ++i)
        for (const std::string& d : own_bound_names(p.body[i])) prologue_values.insert(d);
      Body epilogue_body(p.body.begin() + static_cast<std::ptrdiff_t>(p.last) + 1, p.body.end());
      for (const std::string& used : used_names(epilogue_body))
        if (prologue_values.count(used)) {
          ctx.skip(n, "the epilogue reads " + used + ", computed by a prologue holding loops or writes");
          return Status::ok();
        }
    }
    int64_t splits = 1;
    if (split_candidates.size() > 1) {
      TESSERA_ASSIGN_OR_RETURN(splits, ctx.choose_int("SPLIT", n, split_candidates, split_heuristic));
    }
    int64_t parts = 1;
    if (part_candidates_.size() > 1) {
      TESSERA_ASSIGN_OR_RETURN(parts, ctx.choose_int("EPILOGUE_SPLIT", n, part_candidates_, part_heuristic));
    }
    if (splits == 1 && parts == 1) {
      ctx.skip(n, rows >= sms ? "its " + std::to_string(rows) + " rows fill the " + std::to_string(sms) +
                                    " SMs without a split"
                              : "its work is small (under 1 MB) or cannot be spread");
      return Status::ok();
    }

    std::set<std::string> taken = bound_names(p.body);
    for (const TileAxis& a : tile->axes) taken.insert(a.name);
    NameSource names(std::move(taken));
    Tile combine;
    combine.axes = tile->axes;
    const std::string part = names.fresh("part");
    if (parts > 1) combine.axes.push_back(TileAxis{part, parts, AxisBinding::Parallel});

    if (splits == 1) {  // the reduction stays whole in every block: only the epilogue spreads
      combine.body.assign(p.body.begin(), p.body.begin() + static_cast<std::ptrdiff_t>(p.last) + 1);
      for (Stmt& s : sliced_epilogue(p, Expr::var(part), parts, names)) combine.body.push_back(std::move(s));
      auto op = std::make_unique<TileOp>(kernel);
      op->body = canonicalize_names(Body{Stmt(std::move(combine))});
      n.op = std::move(op);
      return Status::ok();
    }

    const std::string partial = g.unique_id(n.id() + "_split");
    Tile part_tile = partial_tile(*tile, p, splits, partial, names);
    combine.body = combine_body(*tile, p, splits, partial, names);
    for (Stmt& s : sliced_epilogue(p, Expr::var(part), parts, names)) combine.body.push_back(std::move(s));

    std::vector<int64_t> partial_shape = {static_cast<int64_t>(p.accs.size()), splits};
    for (const TileAxis& a : tile->axes) partial_shape.push_back(a.extent);
    return split_tile_kernel(g, n, partial, std::move(part_tile),
                             TensorType{Shape(partial_shape.begin(), partial_shape.end()), acc_dtype(p)}, std::move(combine));
  }
};

void register_split_reduce(Registry& r) {
  r.add_pass("split_reduce", [] { return std::make_unique<SplitReducePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("split_reduce", "1.0.0", ::tessera::register_split_reduce)

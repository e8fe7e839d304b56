// fuse: merges Loop IR kernels so intermediate values stay in registers instead of memory.
//
// Rewrites: a LoopOp producer P is inlined into every LoopOp that loads it. Each `inK = load P[idx]`
//   is replaced by P's computation for that element: P's free axes are substituted by the index
//   expressions of the load, its local names are made fresh, and its written value replaces inK.
//   The computation is placed where its indices are available: at the start of the innermost loop
//   that binds a variable of `idx` (never above a Cond: the guard may protect an out-of-bounds
//   read), so a row reduction read by every element of the row (softmax's max, RMSNorm's mean) runs
//   once per row, and an elementwise producer read inside a reduce loop becomes its prologue. Two
//   loads of P at the same index in the same scope share one computation. IndexMaps (broadcasts,
//   transposes) are pure index remaps and inline like any elementwise producer. The consumer keeps
//   its node id (its output buffer), takes the union of the external inputs and is named
//   `merged_<id>`; P is removed once all its users took it. Producers closest to the outputs go
//   first, so a fan-out producer (softmax's exp, read by the sum and by the division) is fused once
//   its consumers have merged into one kernel. Finally two sibling reduce loops over the same range
//   whose second does not read the first's results share one loop (gated MLP: the gate and up
//   matmuls read x in one K loop).
// COST RULE: let W = P's work per element (the iterations of its own inner loops; 1 without) and R =
//   (evaluations of P's computation at all insertion points) / (elements of P), the recompute
//   factor. Fusion is refused when P contains a loop (a reduction) and R > 1: that multiplies the
//   work by R * W, e.g. QK^T recomputed for every column of softmax(QK^T)·V. An elementwise producer
//   (no loops) may be recomputed (R > 1, e.g. the seed's bias add inside the K loop) when its body
//   has at most kMaxRecomputedStatements statements, which bounds the extra work and memory reads
//   per intermediate read it removes. The same bound holds for what a consumer recomputes in all:
//   each kernel counts the statements it took from recomputed producers (its own and those carried
//   in by producers fused into it once), and a recomputing fusion that would take a consumer past
//   kMaxRecomputedStatements is refused. Without that, a chain of cheap producers read by several
//   kernels (a residual stream x1 = x0 + a, x2 = x1 + b, ...) would be recomputed whole in every
//   kernel that reads its end: kernels and their work would grow with the depth of the model.
//   EPILOGUE RULE: an elementwise P about to be recomputed that reads a reduction kernel Q (directly
//   or through elementwise kernels only P reads) of which it is the only reader stays a kernel with
//   Q fused in, when recomputing P would leave Q materialized (Q then recomputed as often) while Q
//   fuses into P once per element: recomputing would save no memory traffic, only add work. This
//   materializes a residual stream x + linear(h) as the matmul's epilogue at every residual add,
//   so every layer of a model lowers to the same kernels (see reduction_left_behind).
//   SELECT RULE: a multi-source IndexMap (torch.cat, a mask; lift writes it as a chain of
//   `if predicate:` branches, each loading its own source and writing) inlines as one value per
//   element: every branch is computed, each of its loads at an index clamped into its buffer
//   (`min(max(idx, 0), size - 1)`), and a Select on the branch predicates picks the value. A load
//   whose branch is not selected may have been out of bounds (the guard protected it); clamped, it
//   reads some element of the buffer and its value is discarded, while where its branch holds the
//   index was in bounds and the clamp changes nothing. So rotate_half's torch.cat((-x2, x1)) fuses
//   into RoPE's kernel: one kernel reading q, cos and sin once, no `cat` buffer. Every element
//   loads every source, so a map of more than kMaxSelectedSources sources stays a kernel, as does
//   one whose branches hold more than loads and arithmetic, or read an empty buffer.
//   TENSOR-CORE RULE: on a device with tensor cores (features.mma_sync), a 16-bit P about to be
//   recomputed inside a consumer's contraction as one of its operands (a `# reduce` loop that loads
//   P and another 16-bit buffer along its variable) stays a kernel when the product has at least
//   kMinTensorCoreRows rows (the extents of the loops indexing P but not the other operand: a
//   batch dimension such as attention's heads does not add rows): recomputed, the operand would be a
//   computation the tensor cores cannot read; materialized in its 16-bit dtype (the value PyTorch
//   rounds it to anyway) it is a plain operand, and use_tensor_cores takes the product. So a
//   prefill's RMSNorm is a kernel of its own before the gate/up projections and the lm_head, where
//   a decode step's (one row: a GEMV) still fuses into them, and so do its attention
//   probabilities (one query row per head: the heads index V as well, each head a product).
//   SIZE RULE: no fusion makes a kernel longer than kMaxFusedKernelStatements statements.
//   PARALLELISM: fusion may leave a kernel whose rows are few and long (a whole-tensor reduction
//   read by every element of a large epilogue, as in gelu(x) * 2 + x.mean()); the tile stage's
//   split_reduce spreads its reduction and its epilogue over at least as many blocks as the device
//   has SMs when the work is large, so fusing never serializes work on a few SMs.
//   Declined fusions are reported with ctx.skip(node, reason).
//   Resulting kernel counts: the seed, RMSNorm, softmax and the gated MLP are one kernel each. The
//   LayerNorm module is one kernel too: mean and variance are row reductions read once per row, so
//   both hoist to the row loop; it keeps three loops over the row (mean, variance, normalize)
//   because the variance loop reads the mean and so cannot share the mean's loop (a one-pass
//   Welford reduction would be a different op, not a fusion). It would be two kernels only where a
//   statistic is also a program output (outputs stay materialized). Causal attention is two: the
//   masked scores (a multi-source map over QK^T) stay a kernel with QK^T fused in by the EPILOGUE
//   RULE, as inlining them into softmax(.)V would recompute QK^T per column of V.
// Not fused: program outputs (they must be materialized), producers with several writes other than
//   a multi-source map's chain of branches (SELECT RULE, within its bounds), producers whose nest is
//   not perfect or whose write index is not its axes, integer or bool producers (the write's
//   conversion is part of their value).
// Accepts: a graph whose compute nodes are LoopOps (others are left alone).
// Guarantees: same values at every output; node ids of consumers unchanged; merged bodies
//   canonically named. Deterministic (graph order, no pointer-keyed maps). No knobs.
// Tests: tests/unit/fuse_test.cpp, tests/golden/fuse/ (rope_rotate_half: the select rule),
//   tests/e2e/rope_fusion_test.cpp (RoPE one kernel per output), tests/e2e/decoder_blocks_test.cpp
//   (kernels do not grow with the depth of a model), tests/e2e/hf_models_test.cpp (identical
//   layers, identical kernels).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tessera/ir/contraction.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

// The bounds on recomputed elementwise work (see COST RULE): per producer, and per consumer in all.
constexpr int64_t kMaxRecomputedStatements = 16;
constexpr int64_t kMaxRecomputedStatementsPerKernel = 2 * kMaxRecomputedStatements;
// Recompute factors are sums of ratios: 1 within this is once per element.
constexpr double kFactorEps = 1e-9;
// SIZE RULE: no fusion makes a kernel body longer than this many statements. The largest fused
// kernel of the corpus and of the shipped models has 60 (30 in a model layer); a long chain of
// elementwise statements (`x = x + 1` ten thousand times) is cut into kernels of this size instead
// of one kernel that grows with the program, which made each fusion cost the whole chain
// (quadratic compile time: 30 s for 10,000 statements, now linear) and would give NVRTC one
// enormous function. TorchInductor bounds its fusions the same way (max_fusion_size).
constexpr int64_t kMaxFusedKernelStatements = 128;

// TENSOR-CORE RULE: the rows an operand needs for a contraction to be worth the tensor cores (an
// mma tile's 16 rows).
constexpr int64_t kMinTensorCoreRows = 16;

std::optional<int64_t> loop_extent(const Loop& l) {
  if (!l.begin.is(ExprKind::Int) || !l.end.is(ExprKind::Int)) return std::nullopt;
  return l.end.int_value() - l.begin.int_value();
}

// `10`, `2.5`: a recompute factor for a skip reason (%g: short and locale-independent for these).
std::string format_factor(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

// ---- substitution over Loop IR statements -------------------------------------------------------

// Rewrites every Expr of a body through `subst`, simplified with `ranges` (the shared mutator visits
// every expression field of every kind). Renaming bound names is rename_names' job.
class ExprRewriter final : public StmtMutator {
 public:
  ExprRewriter(std::map<std::string, Expr> subst, RangeMap ranges) : subst_(std::move(subst)), ranges_(std::move(ranges)) {}
  Expr mutate_expr(const Expr& e) override { return e.defined() ? simplify(substitute(e, subst_), ranges_) : e; }

 private:
  std::map<std::string, Expr> subst_;
  RangeMap ranges_;
};

Body rewrite_exprs(const Body& b, std::map<std::string, Expr> subst, RangeMap ranges = {}) {
  ExprRewriter r(std::move(subst), std::move(ranges));
  return r.mutate_body(b);
}

// Accumulators updated anywhere in `b`.
std::vector<std::string> accumulated_names(const Body& b) {
  struct Collector final : StmtVisitor {
    std::vector<std::string> names;
    void visit_Accum(const Accum& s) override { names.push_back(s.acc); }
  } collector;
  collector.visit(b);
  return collector.names;
}

void add_vars(const Expr& e, std::set<std::string>& out) {
  if (!e.defined()) return;
  for (const std::string& v : free_vars(e)) out.insert(v);
}

// ---- what a producer computes per element ------------------------------------------------------

struct ProducerShape {
  Body compute;                        // the statements of the innermost free body, minus the write
  Expr value;                          // the value written
  std::map<std::string, size_t> axis_dim;  // free axis -> the output dim it indexes
  int64_t elements = 1;
  bool has_loop = false;               // a reduction (or any inner loop): recomputation is costly
  int64_t statements = 0;
};

// Counts statements, writes and loops at any depth, and whether every kind is Loop IR.
struct LoopIrCensus final : StmtVisitor {
  int64_t statements = 0;
  int64_t writes = 0;
  bool has_loop = false;
  bool loop_ir_only = true;
#define TESSERA_X(K)                                                          \
  void visit_##K(const K& s) override {                                       \
    ++statements;                                                             \
    writes += StmtKind::K == StmtKind::Write;                                 \
    has_loop = has_loop || StmtKind::K == StmtKind::Loop;                     \
    loop_ir_only = loop_ir_only && (stmt_kind_traits(StmtKind::K).dialects & kInLoop) != 0; \
    StmtVisitor::visit_##K(s);                                                \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
};

// ---- multi-source maps as one value per element ---------------------------------------------------

// SELECT RULE: at most this many sources (each element loads every one of them).
constexpr size_t kMaxSelectedSources = 4;

// Rewrites a multi-source map's chain of branches (`if p: ..; write v0 else: ..; write v1`) into
// straight-line statements that compute every branch and select the value of the branch that
// holds: the loads of each branch have their indices clamped into the buffer, so a load whose
// branch is not selected (which may be out of bounds, as the guard protected it) reads some element
// of the buffer and its value is discarded; where the branch holds its index was in bounds, so the
// clamp changes nothing.
class BranchSelector {
 public:
  BranchSelector(const Graph& g, const std::string& id, DType dtype, const Body& whole, RangeMap ranges)
      : g_(g), id_(id), dtype_(dtype), ranges_(std::move(ranges)) {
    for (const std::string& name : defined_names(whole)) taken_.insert(name);
  }

  // The straight-line body ending in the single write, or the reason there is none.
  std::optional<Body> run(const Cond& chain, std::string& reason) {
    std::optional<Body> out = select(chain, reason);
    if (out && sources_ > kMaxSelectedSources) {
      reason = "a map of " + std::to_string(sources_) + " sources (the select bound is " +
               std::to_string(kMaxSelectedSources) + ": every element loads each)";
      return std::nullopt;
    }
    return out;
  }

 private:
  std::optional<Body> select(const Cond& c, std::string& reason) {
    std::optional<Body> then_body = straight(c.then_body, reason);
    if (!then_body) return std::nullopt;
    std::optional<Body> else_body;
    if (c.else_body.size() == 1 && c.else_body[0].is<Cond>()) {
      else_body = select(*c.else_body[0].as<Cond>(), reason);
    } else {
      else_body = straight(c.else_body, reason);
    }
    if (!else_body) return std::nullopt;
    const Write then_write = *then_body->back().as<Write>();
    const Write else_write = *else_body->back().as<Write>();
    if (then_write.index.size() != else_write.index.size() ||
        !std::equal(then_write.index.begin(), then_write.index.end(), else_write.index.begin(),
                    [](const Expr& a, const Expr& b) { return structurally_equal(a, b); })) {
      reason = "its branches write different elements";
      return std::nullopt;
    }
    Body out(then_body->begin(), then_body->end() - 1);
    out.insert(out.end(), else_body->begin(), else_body->end() - 1);
    std::string dst = fresh_name();
    out.push_back(Select{dst, c.cond, then_write.value, else_write.value, ValueType::scalar(dtype_)});
    out.push_back(Write{id_, then_write.index, Expr::value(dst)});
    return out;
  }

  // One source's statements (loads and arithmetic, then the write) with the loads clamped.
  std::optional<Body> straight(const Body& b, std::string& reason) {
    ++sources_;
    const Write* w = b.empty() ? nullptr : b.back().as<Write>();
    if (w == nullptr || w->buffer != id_) {
      reason = "a branch of the map does not end in its write";
      return std::nullopt;
    }
    Body out;
    for (size_t k = 0; k + 1 < b.size(); ++k) {
      const Stmt& s = b[k];
      if (s.is<Assign>() || s.is<Select>()) {
        out.push_back(s);
        continue;
      }
      const Load* l = s.as<Load>();
      const Node* buffer = l ? g_.find(l->buffer) : nullptr;
      if (buffer == nullptr || buffer->type.shape.size() != l->index.size()) {
        reason = "a branch of the map holds a statement other than loads and arithmetic";
        return std::nullopt;
      }
      if (num_elements(buffer->type.shape) == 0) {
        reason = "a branch of the map reads the empty buffer " + l->buffer + " (no element to clamp to)";
        return std::nullopt;
      }
      Load clamped = *l;
      for (size_t d = 0; d < clamped.index.size(); ++d) {
        const int64_t last = buffer->type.shape[d].value() - 1;
        clamped.index[d] = simplify(Expr::min(Expr::max(clamped.index[d], Expr::int_(0)), Expr::int_(last)), ranges_);
      }
      out.push_back(std::move(clamped));
    }
    out.push_back(*w);
    return out;
  }

  std::string fresh_name() {
    for (int k = 0;; ++k) {
      std::string name = "sel" + std::to_string(k);
      if (taken_.insert(name).second) return name;
    }
  }

  const Graph& g_;
  std::string id_;
  DType dtype_;
  RangeMap ranges_;
  std::set<std::string> taken_;
  size_t sources_ = 0;
};

// P's per-element computation, or the reason it cannot be inlined.
// What the kernel `id` of dtype `dtype` with body `body` computes per element.
std::optional<ProducerShape> analyze_body(const Graph& g, const std::string& id, DType dtype, const Body& body,
                                          std::string& reason) {
  if (!dtype_is_float(dtype)) {
    reason = "integer or bool intermediate: its write's conversion is part of its value";
    return std::nullopt;
  }
  ProducerShape shape;
  std::vector<std::string> axes;
  RangeMap ranges;
  const Body* cur = &body;
  while (cur->size() == 1 && (*cur)[0].is<Loop>() && (*cur)[0].as<Loop>()->role == LoopRole::Free) {
    const Loop& l = *(*cur)[0].as<Loop>();
    std::optional<int64_t> ext = loop_extent(l);
    if (!ext || l.begin.int_value() != 0) {
      reason = "free loop " + l.var + " has no constant range from 0";
      return std::nullopt;
    }
    axes.push_back(l.var);
    ranges[l.var] = Interval{0, *ext - 1};
    shape.elements *= *ext;
    cur = &l.body;
  }
  // A multi-source map (SELECT RULE): one value per element, selected among its sources.
  Body selected;
  if (cur->size() == 1 && (*cur)[0].is<Cond>()) {
    std::optional<Body> flat = BranchSelector(g, id, dtype, body, ranges).run(*(*cur)[0].as<Cond>(), reason);
    if (!flat) return std::nullopt;
    selected = std::move(*flat);
    cur = &selected;
  }
  LoopIrCensus census;
  census.visit(*cur);
  if (!census.loop_ir_only) {
    reason = "body holds statements outside Loop IR";
    return std::nullopt;
  }
  shape.statements = census.statements;
  shape.has_loop = census.has_loop;
  const int64_t writes = census.writes;
  const Write* w = cur->empty() ? nullptr : cur->back().as<Write>();
  if (writes != 1 || w == nullptr || w->buffer != id) {
    reason = "not a single write of one value per element (a multi-source map or an imperfect nest)";
    return std::nullopt;
  }
  for (size_t d = 0; d < w->index.size(); ++d) {
    const Expr& e = w->index[d];
    if (e.is(ExprKind::Var) && std::find(axes.begin(), axes.end(), e.name()) != axes.end() &&
        !shape.axis_dim.count(e.name())) {
      shape.axis_dim[e.name()] = d;
    } else if (!e.is(ExprKind::Int)) {
      reason = "write index " + e.str() + " is not one of its axes";
      return std::nullopt;
    }
  }
  if (shape.axis_dim.size() != axes.size()) {
    reason = "some free axis does not index the output";
    return std::nullopt;
  }
  shape.compute.assign(cur->begin(), cur->end() - 1);
  shape.value = w->value;
  shape.statements -= 1;
  return shape;
}

std::optional<ProducerShape> analyze(const Graph& g, const Node& p, std::string& reason) {
  return analyze_body(g, p.id(), p.type.dtype, p.op_as<LoopOp>()->body, reason);
}

// ---- inlining one producer into one consumer body -----------------------------------------------

class Inliner final : public StmtMutator {
 public:
  // With `measure_only`, run() decides everything as it would inline (scopes, shared computations,
  // the recompute factor, ok()) but builds nothing and returns the consumer unchanged: the cost
  // rule is applied before any body is built, as most fusions it looks at are refused.
  Inliner(const std::string& producer, const ProducerShape& shape, int& fresh, bool measure_only = false)
      : producer_(producer), shape_(shape), fresh_(fresh), measure_only_(measure_only) {}

  Body run(const Body& consumer) {
    stack_.push_back(Scope{});
    Body out = mutate_body(consumer);
    stack_.pop_back();
    if (measure_only_) return consumer;
    return rewrite_exprs(out, replaced_);
  }
  // Evaluations of P's computation per element of P (the recompute factor R).
  double recompute_factor() const { return evaluations_ / static_cast<double>(shape_.elements); }
  bool ok() const { return ok_; }

 private:
  struct Scope {
    std::string axis;       // the loop variable this body binds ("" for the top or a Cond branch)
    bool barrier = false;   // a Cond branch: nothing hoists above it
    double executions = 1;  // how often this body runs
    Body pending;           // hoisted computations, emitted before the statement being rewritten
    std::map<std::string, Expr> materialized;  // "P[idx]" -> its value
  };

  // Each use of P (a load of it) becomes P's value, its computation hoisted to the scope chosen by
  // target_scope and emitted before the statement it was found in.
  Body mutate_body(const Body& in) override {
    Body out;
    for (const Stmt& s : in) {
      if (const auto* l = s.as<Load>(); l && l->buffer == producer_) {
        replaced_[l->dst] = materialize(l->index);
        flush(out);
        if (measure_only_) out.push_back(s);  // unchanged: nothing is rebuilt
        continue;
      }
      Stmt rewritten = mutate(s);
      flush(out);
      out.push_back(std::move(rewritten));
    }
    return out;
  }

  Stmt mutate_Loop(const Loop& l, const Stmt& self) override {
    Scope sc;
    sc.axis = l.var;
    std::optional<int64_t> ext = loop_extent(l);
    sc.executions = stack_.back().executions * static_cast<double>(ext ? *ext : 1);
    if (!ext) ok_ = false;  // cannot bound the cost: refuse
    bind_range(l);
    stack_.push_back(std::move(sc));
    Stmt out = StmtMutator::mutate_Loop(l, self);
    stack_.pop_back();
    ranges_.erase(l.var);
    return out;
  }

  // A branch is a barrier: nothing computed for it hoists above the condition.
  Stmt mutate_Cond(const Cond& c, const Stmt& self) override {
    Cond copy = c;
    copy.then_body = rewrite_branch(c.then_body);
    copy.else_body = rewrite_branch(c.else_body);
    if (measure_only_) return self;
    return copy;
  }

  Body rewrite_branch(const Body& b) {
    Scope sc;
    sc.barrier = true;
    sc.executions = stack_.back().executions;
    stack_.push_back(std::move(sc));
    Body out = mutate_body(b);
    stack_.pop_back();
    return out;
  }

  void bind_range(const Loop& l) {
    if (l.begin.is(ExprKind::Int) && l.end.is(ExprKind::Int))
      ranges_[l.var] = Interval{l.begin.int_value(), l.end.int_value() - 1};
  }

  void flush(Body& out) {
    Body& pending = stack_.back().pending;
    out.insert(out.end(), pending.begin(), pending.end());
    pending.clear();
  }

  // Target scope: the innermost one binding a variable of `index` (or a barrier, or the current one
  // when the index reads a loaded value, as a gather does).
  size_t target_scope(const ExprList& index) const {
    std::set<std::string> vars;
    for (const Expr& e : index) add_vars(e, vars);
    std::set<std::string> axes;
    for (const Scope& s : stack_) axes.insert(s.axis);
    for (const std::string& v : vars)
      if (!axes.count(v)) return stack_.size() - 1;
    for (size_t i = stack_.size(); i-- > 0;) {
      if (stack_[i].barrier || (!stack_[i].axis.empty() && vars.count(stack_[i].axis))) return i;
    }
    return 0;
  }

  Expr materialize(const ExprList& raw_index) {
    ExprList index;
    for (const Expr& e : raw_index) index.push_back(simplify(substitute(e, replaced_), ranges_));
    std::string key = "[";
    for (const Expr& e : index) key += e.str() + ",";
    for (const Scope& s : stack_)
      if (auto it = s.materialized.find(key); it != s.materialized.end()) return it->second;

    size_t target = target_scope(index);
    std::map<std::string, std::string> rename;
    std::map<std::string, Expr> subst;
    std::string prefix = "f" + std::to_string(fresh_++) + "_";
    for (const std::string& d : defined_names(shape_.compute)) {
      rename[d] = prefix + d;
      subst[d] = Expr::var(prefix + d);
    }
    std::map<std::string, Expr> axes;
    for (const auto& [axis, dim] : shape_.axis_dim) axes[axis] = dim < index.size() ? index[dim] : Expr::int_(0);
    if (shape_.axis_dim.size() > index.size()) ok_ = false;
    subst.insert(axes.begin(), axes.end());
    Expr value = simplify(substitute(shape_.value, subst), ranges_);
    Scope& t = stack_[target];
    if (!measure_only_) {
      Body compute = rewrite_exprs(rename_names(shape_.compute, rename), axes, ranges_);
      t.pending.insert(t.pending.end(), compute.begin(), compute.end());
    }
    t.materialized[key] = value;
    evaluations_ += t.executions;
    return value;
  }

  std::string producer_;
  const ProducerShape& shape_;
  int& fresh_;
  std::vector<Scope> stack_;
  RangeMap ranges_;
  std::map<std::string, Expr> replaced_;  // dropped load -> the value that replaces it
  double evaluations_ = 0;
  bool ok_ = true;
  bool measure_only_ = false;
};

// ---- sibling reduce loops sharing one loop -------------------------------------------------------

// Nested bodies first (through the shared mutator), then each body's sibling loops.
class ReduceLoopSharer final : public StmtMutator {
 public:
  Body mutate_body(const Body& in) override { return share_siblings(StmtMutator::mutate_body(in)); }

 private:
  static Body share_siblings(const Body& b);
};

Body share_reduce_loops(const Body& in) {
  ReduceLoopSharer sharer;
  return sharer.mutate_body(in);
}

Body ReduceLoopSharer::share_siblings(const Body& b) {
  Body out;
  for (size_t i = 0; i < b.size(); ++i) {
    const Loop* first = b[i].as<Loop>();
    if (first == nullptr || first->role != LoopRole::Reduce) {
      out.push_back(b[i]);
      continue;
    }
    Loop merged = *first;
    Body inits, after;  // moved before / after the shared loop
    size_t j = i + 1;
    while (true) {
      // Straight-line statements between the loops move after the shared loop (they may read the
      // first loop's results); Inits move before it.
      size_t k = j;
      Body between_inits, between_rest;
      while (k < b.size() && (b[k].is<Init>() || b[k].is<Assign>() || b[k].is<Select>() || b[k].is<Load>())) {
        (b[k].is<Init>() ? between_inits : between_rest).push_back(b[k]);
        ++k;
      }
      const Loop* next = k < b.size() ? b[k].as<Loop>() : nullptr;
      if (next == nullptr || next->role != LoopRole::Reduce || !structurally_equal(next->begin, merged.begin) ||
          !structurally_equal(next->end, merged.end))
        break;
      // The second loop must not read what the first one defines or accumulates, nor what the
      // statements between them compute.
      std::vector<std::string> defs = defined_names({Stmt(merged)});
      for (const Body* b : {&after, &between_rest}) {
        const std::vector<std::string> more = defined_names(*b);
        defs.insert(defs.end(), more.begin(), more.end());
      }
      const std::vector<std::string> accumulated = accumulated_names(merged.body);
      defs.insert(defs.end(), accumulated.begin(), accumulated.end());
      const std::set<std::string> uses = used_names(next->body);
      bool independent = std::none_of(defs.begin(), defs.end(), [&](const std::string& d) { return uses.count(d); });
      if (!independent) break;
      Body renamed = rewrite_exprs(rename_names(next->body, {{next->var, merged.var}}), {});
      merged.body.insert(merged.body.end(), renamed.begin(), renamed.end());
      inits.insert(inits.end(), between_inits.begin(), between_inits.end());
      after.insert(after.end(), between_rest.begin(), between_rest.end());
      j = k + 1;
    }
    out.insert(out.end(), inits.begin(), inits.end());
    out.push_back(merged);
    out.insert(out.end(), after.begin(), after.end());
    i = j - 1;
  }
  return out;
}

// ---- the pass -----------------------------------------------------------------------------------

class FusePass final : public Pass {
 public:
  std::string_view name() const override { return "fuse"; }
  std::string_view summary() const override {
    return "inline LoopOp producers into their consumers (prologues, epilogues, row reductions) within a "
           "recompute bound";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Loop}; }

  // A worklist in place of rescanning the graph after every fusion, with the same result: the
  // producer taken next is always the fusible one closest to the outputs. A node is re-examined
  // only when a fusion changed what its verdict depends on (its own body, its users or their
  // bodies); every other node keeps the verdict it had, so the highest dirty node, once fusible,
  // is the highest fusible node of the graph.
  Status run(Graph& g, PassContext& ctx) override {
    int fresh = 0;
    std::set<std::string> reported;
    std::unordered_map<std::string, int64_t> recomputed;  // node -> statements it recomputes
    std::vector<Node*> order = g.nodes();  // fuse only removes nodes: positions stay valid
    std::unordered_map<std::string, size_t> position;
    std::set<size_t> dirty;
    for (size_t i = 0; i < order.size(); ++i) {
      position.emplace(order[i]->id(), i);
      dirty.insert(i);
    }
    // A refused producer keeps its verdict while its users and their bodies stay the same: taking
    // its own producers in only makes it larger (more statements, a loop), and each refusal
    // reason only gets stronger with that. `grown` counts the fusions into each node.
    using UserState = std::vector<std::pair<std::string, int64_t>>;
    std::unordered_map<std::string, int64_t> grown;
    std::unordered_map<std::string, UserState> refused_with;
    while (!dirty.empty()) {
      const size_t i = *dirty.rbegin();
      dirty.erase(i);
      UserState users;
      for (const std::string& u : g.users(order[i]->id())) users.emplace_back(u, grown[u]);
      if (auto it = refused_with.find(order[i]->id()); it != refused_with.end() && it->second == users) continue;
      std::vector<std::string> changed;
      Expected<bool> fused = try_fuse(g, *order[i], ctx, fresh, reported, recomputed, changed);
      if (!fused) return std::move(fused).error();
      if (!*fused) {
        refused_with[order[i]->id()] = std::move(users);
        continue;
      }
      for (const auto& [u, count] : users) ++grown[u];
      order[i] = nullptr;
      dirty.erase(i);
      for (const std::string& id : changed)
        if (auto it = position.find(id); it != position.end() && order[it->second] != nullptr)
          dirty.insert(it->second);
    }
    for (Node* n : g.nodes()) {
      auto* op = n->op_as<LoopOp>();
      if (op == nullptr || op->name.rfind("merged_", 0) != 0) continue;
      op->body = canonicalize_names(share_reduce_loops(op->body));
    }
    return Status::ok();
  }

 private:
  static bool is_output(const Graph& g, const std::string& id) {
    return std::find(g.outputs().begin(), g.outputs().end(), id) != g.outputs().end();
  }

  // EPILOGUE RULE: an elementwise producer p about to be recomputed in its `users` that reads a
  // reduction kernel q, directly or through elementwise kernels that only p reads (a bias add):
  // once p is recomputed, q's loop would be recomputed as often and is refused, so q stays
  // materialized, whereas q fuses into p itself once per element. Recomputing p then saves no
  // memory traffic and only adds work, so p stays a kernel with q fused in. This is what
  // materializes a residual stream `x + linear(h)` at every residual add instead of recomputing a
  // chain of adds across layers: every layer of a model lowers to the same kernels.
  // Returns q's id.
  static std::optional<std::string> reduction_left_behind(const Graph& g, const Node& p, const ProducerShape& p_shape,
                                                          const std::vector<std::string>& users, int fresh) {
    // The elementwise kernels only p (or another of them) reads, closest to p first, and the
    // reduction kernels only they or p read.
    constexpr size_t kMaxChain = 8;
    std::set<std::string> group = {p.id()};
    std::vector<std::pair<std::string, ProducerShape>> chain, reductions;
    std::vector<const Node*> frontier = {&p};
    while (!frontier.empty() && chain.size() < kMaxChain) {
      const Node* n = frontier.back();
      frontier.pop_back();
      for (const std::string& in : n->inputs) {
        const Node* producer = g.find(in);
        if (producer == nullptr || group.count(in) || producer->op_as<LoopOp>() == nullptr || is_output(g, in))
          continue;
        const std::vector<std::string> readers = g.users(in);
        if (!std::all_of(readers.begin(), readers.end(), [&](const std::string& u) { return group.count(u) > 0; }))
          continue;
        std::string ignored;
        std::optional<ProducerShape> shape = analyze(g, *producer, ignored);
        if (!shape) continue;
        group.insert(in);
        if (shape->has_loop) {
          reductions.emplace_back(in, std::move(*shape));
        } else {
          chain.emplace_back(in, std::move(*shape));
          frontier.push_back(producer);
        }
      }
    }
    if (reductions.empty()) return std::nullopt;
    // Chain members are inlined after their users in the chain, so each finds the loads its users'
    // code made of it.
    std::vector<std::pair<std::string, ProducerShape>> ordered;
    std::set<std::string> placed;
    while (!chain.empty()) {
      auto ready = std::find_if(chain.begin(), chain.end(), [&](const auto& c) {
        const std::vector<std::string> readers = g.users(c.first);
        return std::all_of(readers.begin(), readers.end(),
                           [&](const std::string& u) { return u == p.id() || placed.count(u) > 0; });
      });
      if (ready == chain.end()) return std::nullopt;  // cannot happen in a DAG; nothing decided
      placed.insert(ready->first);
      ordered.push_back(std::move(*ready));
      chain.erase(ready);
    }
    chain = std::move(ordered);
    int trial_fresh = fresh;
    auto with_chain = [&](Body body) {
      for (const auto& [id, shape] : chain) body = Inliner(id, shape, trial_fresh).run(body);
      return body;
    };
    const Body own = with_chain(p.op_as<LoopOp>()->body);
    // The users' bodies with p and its chain inlined, made when needed: p with its chain (`own`)
    // inlined as one producer, which places each load of q where inlining p and then each member
    // of the chain would, at the cost of one inlining per user.
    std::vector<Body> recomputed;
    auto recompute_in_users = [&] {
      std::string ignored;
      std::optional<ProducerShape> whole = chain.empty() ? std::optional<ProducerShape>(p_shape)
                                                         : analyze_body(g, p.id(), p.type.dtype, own, ignored);
      for (const std::string& u : users) {
        const Body& body = g.find(u)->op_as<LoopOp>()->body;
        recomputed.push_back(whole ? Inliner(p.id(), *whole, trial_fresh).run(body)
                                   : with_chain(Inliner(p.id(), p_shape, trial_fresh).run(body)));
      }
    };
    for (const auto& [q, q_shape] : reductions) {
      Inliner into_p(q, q_shape, trial_fresh, /*measure_only=*/true);
      into_p.run(own);
      if (!into_p.ok() || into_p.recompute_factor() > 1 + kFactorEps) continue;  // q stays a kernel anyway
      if (recomputed.empty()) recompute_in_users();
      double after = 0;
      bool ok = true;
      for (const Body& b : recomputed) {
        Inliner into_user(q, q_shape, trial_fresh, /*measure_only=*/true);
        into_user.run(b);
        after += into_user.recompute_factor();
        ok = ok && into_user.ok();
      }
      if (!ok || after > 1 + kFactorEps) return q;
    }
    return std::nullopt;
  }

  static void report(PassContext& ctx, std::set<std::string>& reported, const Node& n, const std::string& reason) {
    if (reported.insert(n.id() + ": " + reason).second) ctx.skip(n, reason);
  }

  // Fuses producer `p` into all its users when it is fusible (true), else reports why not
  // (false). After a fusion `changed` lists the nodes whose verdict may have changed: the users
  // (their bodies grew) and their inputs (their users' bodies grew; p's inputs gained users).
  static Expected<bool> try_fuse(Graph& g, Node& p, PassContext& ctx, int& fresh, std::set<std::string>& reported,
                                 std::unordered_map<std::string, int64_t>& recomputed,
                                 std::vector<std::string>& changed) {
    if (p.op_as<LoopOp>() == nullptr || is_output(g, p.id())) return false;
    std::vector<std::string> users = g.users(p.id());
    if (users.empty()) return false;
    bool all_loops = std::all_of(users.begin(), users.end(),
                                 [&](const std::string& u) { return g.find(u)->op_as<LoopOp>() != nullptr; });
    if (!all_loops) {
      report(ctx, reported, p, "a user is not a Loop IR kernel");
      return false;
    }
    std::string reason;
    std::optional<ProducerShape> shape = analyze(g, p, reason);
    if (!shape) {
      report(ctx, reported, p, "not fusible: " + reason);
      return false;
    }
    // Measure the inlining into every user, apply the cost rule to the total, then inline.
    double factor = 0;
    bool ok = true;
    int trial_fresh = fresh;
    for (const std::string& u : users) {
      Inliner inl(p.id(), *shape, trial_fresh, /*measure_only=*/true);
      inl.run(g.find(u)->op_as<LoopOp>()->body);
      factor += inl.recompute_factor();
      ok = ok && inl.ok();
    }
    if (!ok) {
      report(ctx, reported, p, "not fusible: a consumer loop has no constant range");
      return false;
    }
    if (shape->has_loop && factor > 1 + kFactorEps) {
      report(ctx, reported, p,
             "cost: fusing recomputes its reduction " + format_factor(factor) + "x per element (bound 1x)");
      return false;
    }
    if (!shape->has_loop && factor > 1 + kFactorEps && shape->statements > kMaxRecomputedStatements) {
      report(ctx, reported, p,
             "cost: recomputing " + std::to_string(shape->statements) + " statements " + format_factor(factor) +
                 "x per element (bound " + std::to_string(kMaxRecomputedStatements) + " statements)");
      return false;
    }
    // What each user recomputes afterwards: p's statements when p is recomputed, else whatever p
    // itself recomputed.
    const bool recomputes = factor > 1 + kFactorEps;
    // TENSOR-CORE RULE: recomputed inside a 16-bit contraction of enough rows, p would make the
    // product's operand a computation, which the tensor cores cannot read; materialized (in its
    // 16-bit dtype, as it is rounded anyway) it is a plain operand.
    if (recomputes && ctx.device().features.mma_sync && dtype_is_float(p.type.dtype) && dtype_bytes(p.type.dtype) == 2) {
      for (const std::string& u : users) {
        const std::optional<LoopContraction> operand = loop_contraction_reading(g.find(u)->op_as<LoopOp>()->body, p.id());
        if (!operand || dtype_bytes(operand->dtype) != 2 || operand->rows < kMinTensorCoreRows) continue;
        report(ctx, reported, p,
               "tensor cores: it is a 16-bit operand of " + u + "'s contraction over " + std::to_string(operand->depth) +
                   " (" + std::to_string(operand->rows) +
                   " rows): materialized, so that the product reads it from memory on the tensor cores");
        return false;
      }
    }
    const int64_t carried = recomputes ? shape->statements : recomputed[p.id()];
    for (const std::string& u : users) {
      if (recomputes && recomputed[u] + carried > kMaxRecomputedStatementsPerKernel) {
        report(ctx, reported, p,
               "cost: consumer " + u + " already recomputes " + std::to_string(recomputed[u]) +
                   " statements of other kernels; " + std::to_string(carried) + " more exceed the bound (" +
                   std::to_string(kMaxRecomputedStatementsPerKernel) + " statements)");
        return false;
      }
    }
    if (recomputes) {
      if (std::optional<std::string> q = reduction_left_behind(g, p, *shape, users, fresh)) {
        report(ctx, reported, p,
               "cost: recomputing it would leave its reduction input " + *q +
                   " materialized; it stays a kernel with " + *q + " fused in");
        return false;
      }
    }
    std::vector<Body> bodies;
    trial_fresh = fresh;
    for (const std::string& u : users) {
      bodies.push_back(Inliner(p.id(), *shape, trial_fresh).run(g.find(u)->op_as<LoopOp>()->body));
      LoopIrCensus census;
      census.visit(bodies.back());
      if (census.statements > kMaxFusedKernelStatements) {
        report(ctx, reported, p,
               "size: fusing would make kernel " + u + " " + std::to_string(census.statements) +
                   " statements long (bound " + std::to_string(kMaxFusedKernelStatements) + ")");
        return false;
      }
    }
    for (const std::string& u : users) recomputed[u] += carried;
    fresh = trial_fresh;
    for (size_t k = 0; k < users.size(); ++k) {
      Node& user = *g.find(users[k]);
      auto& op = *user.op_as<LoopOp>();
      op.body = std::move(bodies[k]);  // canonically named once, at the end
      op.name = "merged_" + user.id();
      std::vector<std::string> inputs;
      for (const std::string& in : user.inputs) {
        const std::vector<std::string>& add = in == p.id() ? p.inputs.ids() : std::vector<std::string>{in};
        for (const std::string& a : add)
          if (std::find(inputs.begin(), inputs.end(), a) == inputs.end()) inputs.push_back(a);
      }
      changed.push_back(user.id());
      changed.insert(changed.end(), inputs.begin(), inputs.end());
      user.inputs = std::move(inputs);
    }
    TESSERA_TRY(g.erase(p.id()));
    return true;
  }
};

void register_fuse(Registry& r) {
  r.add_pass("fuse", [] { return std::make_unique<FusePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("fuse", "1.0.0", ::tessera::register_fuse)

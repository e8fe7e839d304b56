// vectorize_loads: turns K consecutive per-thread accesses of a serial loop into one vector access.
//
// Rewrites: a serial `Loop` `for v in 0..N` (constant N, N % K == 0) whose body is straight-line
// code (Load, Assign, Select, Init, Accum, Write only) becomes `for v in 0..N/K` whose body is the
// old body replicated K times (lane j stands for old iteration `v * K + j`; names bound in the body
// get a per-lane copy), in program order, except that
//   - every load `x[.., c + v]` from a global f32, bf16 or f16 buffer (or, in a `Loop`, an
//     shared array of those: a register tile's replicas of a staged slab, a thread's
//     row of a broadcast slab) whose K elements fit one
//     access of at most 16 bytes (f32: K <= 4; bf16/f16: K <= 8) (last index exactly `c + v`, `c` and the
//     other indices free of v, `c` provably a multiple of K, last dim extent a multiple of K so the
//     row start is aligned too) becomes one `(d0, .., dK-1) = loadK x[.., c + v * K]` where lane 0
//     loaded it, and
//   - every write `y[.., c + v] = e` of the same form becomes one `y[.., c + v * K] = storeK(e0, ..)`
//     where lane K-1 wrote it (after every lane computed its value).
// With K = 4, for a thread-per-row sum:
//     for a2 in 0..64:  # reduce          for a2 in 0..16:  # reduce
//       in0 = load x[a1, a2]        ->      (in0, in1, in2, in3) = load4 x[a1, a2 * 4]
//       v0 = mul(in0, 2.0)                  v0 = mul(in0, 2.0)
//       acc0 <- add(acc0, v0)               acc0 <- add(acc0, v0)   .. then lanes 1, 2, 3
// Other accesses (shared memory in thread-strided loops, other dtypes, other index forms) are replicated as scalar
// accesses with v -> v * K + j. Accumulations keep their exact order, so results are bit-identical.
// Safety: a loop is skipped (ctx.skip, with the reason) when its body holds any other statement
// (Cond, nested loops, collectives, shuffles, Let), when a buffer is both loaded and written in it or
// written by two statements (the vector accesses move loads earlier and writes later), or when no
// access can be vectorized. Elementwise kernels get such a loop from coarsen_elementwise (K adjacent
// elements per thread); with one element per thread there is no loop and the pass leaves them alone.
// Thread-strided loops `StridedLoop(v = t; < N; += T)` (t ranging over [0, T)) with a straight-line
// body that accumulates nothing (staging copies, the scaled row of a norm, elementwise tails) are
// rewritten the same way with each thread taking K consecutive elements per step
// (`StridedLoop(v = t; < N/K; += T)`, lane j at v * K + j): all elements are still handled once,
// by possibly different threads. So are thread-strided `# reduce` loops all of whose loads become
// vector loads (a GEMV's weight row and activations, a norm's unstaged row): each thread's partial
// sum then covers other elements, so the sum's order, and its rounding, changes as it does with
// another thread count.
// Knob WIDTH (1, 2, 4, 8; heuristic: the widest K some loop of the kernel can take, so 16-byte
//   accesses: 4 x f32, 8 x bf16/f16; asked only for kernels with a loop it can rewrite): K. A loop
//   that cannot take the chosen K is skipped.
// Accepts: Kernel IR (KernelOp nodes; other nodes are left alone).
// Guarantees: the kernel computes the same values in the same order (but for thread-strided
//   reduce loops, above); vector accesses are aligned as
//   docs/ir.md requires; unroll requests are divided by K (dropped when K does not divide them); the
//   body is canonically named.
// Tests: tests/golden/vectorize_loads/ and tests/unit/vectorize_loads_test.cpp.
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

namespace tessera {
namespace {

// Whether `e` is a multiple of k by its structure (k * x, sums of multiples), or by the simplifier.
bool multiple_of(const Expr& e, int64_t k, const RangeMap& ranges) {
  struct Structural {
    int64_t k;
    bool operator()(const Expr& e) const {
      if (e.is(ExprKind::Int)) return e.int_value() % k == 0;
      if (e.is(ExprKind::Mul)) return (*this)(e.operand(0)) || (*this)(e.operand(1));
      if (e.is(ExprKind::Add) || e.is(ExprKind::Sub) || e.is(ExprKind::Mod)) return (*this)(e.operand(0)) && (*this)(e.operand(1));
      // Bitwise: for a power-of-two k, the low bits of multiples stay zero (a swizzle's XOR).
      if ((k & (k - 1)) == 0) {
        if (e.is(ExprKind::Xor) || e.is(ExprKind::BitOr)) return (*this)(e.operand(0)) && (*this)(e.operand(1));
        if (e.is(ExprKind::BitAnd)) return (*this)(e.operand(0)) || (*this)(e.operand(1));
        if (e.is(ExprKind::Shl) && e.operand(1).is(ExprKind::Int))
          return e.operand(1).int_value() >= 0 && e.operand(1).int_value() < 62 &&
                 ((*this)(e.operand(0)) || (int64_t{1} << e.operand(1).int_value()) % k == 0);
      }
      return false;
    }
  };
  if (Structural{k}(e)) return true;
  Expr rem = simplify(e % k, ranges);
  return rem.is(ExprKind::Int) && rem.int_value() == 0;
}

// `c` when `e` is exactly `c + v` (or `v`, or `v + c`) with c free of v.
std::optional<Expr> offset_of(const Expr& e, const std::string& v) {
  if (e.is(ExprKind::Var) && e.name() == v) return Expr::int_(0);
  if (!e.is(ExprKind::Add)) return std::nullopt;
  const Expr& a = e.operand(0);
  const Expr& b = e.operand(1);
  if (b.is(ExprKind::Var) && b.name() == v && !mentions_var(a, v)) return a;
  if (a.is(ExprKind::Var) && a.name() == v && !mentions_var(b, v)) return b;
  return std::nullopt;
}

// Everything vectorize needs to know about one loop body for one width K.
struct LoopPlan {
  std::set<size_t> vector_stmts;  // positions of the Loads and Writes that become vector accesses
  std::string why_not;            // non-empty: the loop cannot be rewritten with this K
};

class LoopVectorizer {
 public:
  LoopVectorizer(const Graph& g, const Body& kernel_body, std::set<std::string> taken) : g_(g), taken_(std::move(taken)) {
    for (const Stmt& s : kernel_body)
      if (const auto* sm = s.as<Smem>()) smem_[sm->name] = *sm;
  }

  // Whether the access `buffer[index]` can be one aligned K-wide vector access over loop var v: a
  // global buffer, or with `shared` a shared array (swizzled or not: the index is the physical one).
  bool vectorizable(const std::string& buffer, const ExprList& index, const std::string& v, int64_t k,
                    const RangeMap& ranges, bool shared) const {
    if (index.empty()) return false;
    DType t = DType::F32;
    std::vector<int64_t> shape;
    if (const Node* node = g_.find(buffer)) {
      t = node->type.dtype;
      for (int64_t d = 0; d < node->type.rank(); ++d) shape.push_back(node->type.dim(d));
    } else if (auto it = smem_.find(buffer); shared && it != smem_.end()) {
      // A swizzle permutes whole 16-byte chunks, and the index is already the permuted one: K
      // aligned consecutive elements (K * size <= 16) lie in one chunk.
      if (it->second.align < k * dtype_bytes(it->second.dtype)) return false;
      t = it->second.dtype;
      shape = it->second.shape;
    } else {
      return false;
    }
    if (t != DType::F32 && t != DType::BF16 && t != DType::F16) return false;
    if (k * dtype_bytes(t) > 16) return false;  // the widest access is 16 bytes (uint4 / float4)
    if (shape.size() != index.size()) return false;
    if (shape.back() % k != 0) return false;
    for (size_t i = 0; i + 1 < index.size(); ++i) {
      if (mentions_var(index[i], v)) return false;
    }
    std::optional<Expr> c = offset_of(index.back(), v);
    return c && multiple_of(*c, k, ranges);
  }

  // With `shared`, loads of shared arrays may vectorize too (a plain loop's: each thread reads K
  // consecutive elements where it read them one at a time).
  LoopPlan plan(const Loop& loop, int64_t k, const RangeMap& ranges, bool shared) const {
    LoopPlan p;
    if (!loop.begin.is(ExprKind::Int) || loop.begin.int_value() != 0 || !loop.end.is(ExprKind::Int)) {
      p.why_not = "bounds are not constant 0..N";
      return p;
    }
    if (loop.end.int_value() % k != 0) {
      p.why_not = "trip count " + std::to_string(loop.end.int_value()) + " is not a multiple of " + std::to_string(k);
      return p;
    }
    std::set<std::string> loaded, written;
    for (size_t i = 0; i < loop.body.size(); ++i) {
      const Stmt& s = loop.body[i];
      if (const auto* load = s.as<Load>()) {
        loaded.insert(load->buffer);
        if (vectorizable(load->buffer, load->index, loop.var, k, ranges, shared)) p.vector_stmts.insert(i);
      } else if (const auto* write = s.as<Write>()) {
        if (!written.insert(write->buffer).second) {
          p.why_not = "buffer " + write->buffer + " is written twice";
          return p;
        }
        if (vectorizable(write->buffer, write->index, loop.var, k, ranges, false)) p.vector_stmts.insert(i);
      } else if (!s.is<Assign>() && !s.is<Select>() && !s.is<Init>() && !s.is<Accum>()) {
        p.why_not = "body holds a " + std::string(stmt_kind_name(s.kind()));
        return p;
      }
    }
    for (const std::string& b : written) {
      if (loaded.count(b) != 0) {
        p.why_not = "buffer " + b + " is both loaded and written";
        return p;
      }
    }
    if (p.vector_stmts.empty())
      p.why_not = "no access is an aligned f32/bf16/f16 " + std::string(shared ? "global or shared" : "global") +
                  " access of at most 16 bytes at [.., c + " + loop.var + "]";
    return p;
  }

  // The rewritten loop (plan must be legal).
  Loop rewrite(const Loop& loop, int64_t k, const LoopPlan& p, const RangeMap& outer) {
    const int64_t trips = loop.end.int_value() / k;
    RangeMap ranges = outer;
    ranges[loop.var] = Interval{0, trips - 1};
    // Per-lane names of everything the body binds.
    std::vector<std::map<std::string, Expr>> lane_subst(static_cast<size_t>(k));
    std::vector<std::map<std::string, std::string>> lane_names(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      auto& subst = lane_subst[static_cast<size_t>(j)];
      subst[loop.var] = Expr::var(loop.var) * k + j;
      for (const std::string& name : bound_names(loop.body)) {
        std::string fresh = fresh_name(name + "_" + std::to_string(j), taken_);
        lane_names[static_cast<size_t>(j)][name] = fresh;
        subst[name] = Expr::var(fresh);  // renames a Value as a Value (substitute)
      }
    }
    auto sub = [&](const Expr& e, int64_t j) { return simplify(substitute(e, lane_subst[static_cast<size_t>(j)]), ranges); };
    auto sub_all = [&](const ExprList& es, int64_t j) {
      ExprList out;
      for (const Expr& e : es) out.push_back(sub(e, j));
      return out;
    };
    auto renamed = [&](const std::string& n, int64_t j) {
      const auto& m = lane_names[static_cast<size_t>(j)];
      auto it = m.find(n);
      return it == m.end() ? n : it->second;
    };

    Body out;
    for (int64_t j = 0; j < k; ++j) {
      for (size_t i = 0; i < loop.body.size(); ++i) {
        const Stmt& s = loop.body[i];
        const bool vector = p.vector_stmts.count(i) != 0;
        // Each lane's copy starts from the statement itself, so fields this pass does not rewrite
        // (today's and any added later) are kept.
        if (const auto* load = s.as<Load>()) {
          if (!vector) {
            Load lane = *load;
            lane.dst = renamed(load->dst, j);
            lane.index = sub_all(load->index, j);
            out.push_back(std::move(lane));
          } else if (j == 0) {  // lane 0's index c + v * K is the vector's start
            VectorLoad vl{{}, load->buffer, sub_all(load->index, 0), load->type};
            for (int64_t l = 0; l < k; ++l) vl.dsts.push_back(renamed(load->dst, l));
            out.push_back(std::move(vl));
          }
        } else if (const auto* write = s.as<Write>()) {
          if (!vector) {
            Write lane = *write;
            lane.index = sub_all(write->index, j);
            lane.value = sub(write->value, j);
            out.push_back(std::move(lane));
          } else if (j == k - 1) {  // every lane's value exists by now
            VectorStore vs{write->buffer, sub_all(write->index, 0), {}};
            for (int64_t l = 0; l < k; ++l) vs.values.push_back(sub(write->value, l));
            out.push_back(std::move(vs));
          }
        } else if (const auto* a = s.as<Assign>()) {
          Assign lane = *a;
          lane.dst = renamed(a->dst, j);
          lane.args = sub_all(a->args, j);
          out.push_back(std::move(lane));
        } else if (const auto* sel = s.as<Select>()) {
          Select lane = *sel;
          lane.dst = renamed(sel->dst, j);
          lane.cond = sub(sel->cond, j);
          lane.then_value = sub(sel->then_value, j);
          lane.else_value = sub(sel->else_value, j);
          out.push_back(std::move(lane));
        } else if (const auto* init = s.as<Init>()) {
          Init lane = *init;
          lane.acc = renamed(init->acc, j);
          lane.value = sub(init->value, j);
          out.push_back(std::move(lane));
        } else if (const auto* acc = s.as<Accum>()) {
          Accum lane = *acc;
          lane.acc = renamed(acc->acc, j);
          lane.value = sub(acc->value, j);
          lane.index = sub_all(acc->index, j);
          out.push_back(std::move(lane));
        }
      }
    }
    Loop result = loop;
    result.end = Expr::int_(trips);
    result.unroll = loop.unroll % k == 0 ? loop.unroll / k : 0;
    result.body = std::move(out);
    return result;
  }

 private:
  const Graph& g_;
  std::map<std::string, Smem> smem_;  // the kernel's shared arrays
  std::set<std::string> taken_;
};

// The ranges of the hardware indices of a launch.
RangeMap launch_ranges(const KernelOp& k) {
  RangeMap r;
  const char* dims[] = {"x", "y", "z"};
  for (size_t d = 0; d < 3; ++d) {
    const std::string dim = dims[d];
    r["threadIdx." + dim] = Interval{0, k.block[d] - 1};
    r["blockIdx." + dim] = Interval{0, k.grid[d] - 1};
    r["blockDim." + dim] = Interval{k.block[d], k.block[d]};
    r["gridDim." + dim] = Interval{k.grid[d], k.grid[d]};
  }
  return r;
}

// Walks a kernel body (the shared mutator's traversal) keeping the ranges of Let and loop
// variables, and rewrites (k > 1) or merely inspects (k == 1: records the widest legal K in
// `widest`) every serial Loop.
class BodyWalker final : public StmtMutator {
 public:
  BodyWalker(const Node& node, PassContext* ctx, LoopVectorizer& vec, int64_t k, RangeMap ranges)
      : node_(node), ctx_(ctx), vec_(vec), k_(k), ranges_(std::move(ranges)) {}

  int64_t widest = 1;

  Stmt mutate_Let(const Let& let, const Stmt& self) override {
    if (auto b = bound_of(let.value, ranges_)) ranges_[let.var] = *b;
    return self;
  }
  Stmt mutate_Loop(const Loop& loop, const Stmt& self) override { return walk_loop(loop, self); }
  Stmt mutate_StridedLoop(const StridedLoop& sl, const Stmt& self) override {
    if (std::optional<Stmt> vectorized = walk_strided(sl, ranges_)) return std::move(*vectorized);
    const RangeMap saved = ranges_;
    auto lo = bound_of(sl.begin, ranges_);
    auto hi = bound_of(sl.end, ranges_);
    if (lo && hi) ranges_[sl.var] = Interval{lo->lo, hi->hi - 1};
    Stmt out = StmtMutator::mutate_StridedLoop(sl, self);
    ranges_ = saved;
    return out;
  }
  // A branch's Lets are visible in that branch only.
  Stmt mutate_Cond(const Cond& cond, const Stmt& self) override {
    const RangeMap saved = ranges_;
    Stmt out = StmtMutator::mutate_Cond(cond, self);
    ranges_ = saved;
    return out;
  }

 private:
  // A thread-strided loop `StridedLoop(v = t; < N; += T)` whose start t takes every value of
  // [0, T) over the block (the threads partition [0, N)) and whose straight-line body accumulates
  // nothing, or is a `# reduce` loop all of whose loads vectorize: each thread takes K consecutive
  // elements per step instead, `StridedLoop(v = t; < N/K; += T)` with lane j at v * K + j, so its
  // contiguous accesses become vector accesses. Every element is still handled exactly once; which
  // thread handles it changes, which a body without Accum does not observe (shared-memory data is
  // exchanged across barriers only) and a reduce loop observes only as the order of its sum (the
  // Combine after it adds the threads' partial sums). nullopt: left as it is.
  std::optional<Stmt> walk_strided(const StridedLoop& sl, const RangeMap& ranges) {
    const Expr step = simplify(sl.step, ranges);
    const std::optional<Interval> start = bound_of(sl.begin, ranges);
    if (!step.is(ExprKind::Int) || !sl.end.is(ExprKind::Int) || !start || start->lo != 0 ||
        start->hi != step.int_value() - 1)
      return std::nullopt;
    bool accumulates = false;
    for (const Stmt& st : sl.body) {
      if (st.is<Init>()) return std::nullopt;
      accumulates = accumulates || st.is<Accum>();
    }
    if (accumulates && sl.role != LoopRole::Reduce) return std::nullopt;
    const Loop as_loop{sl.var, Expr::int_(0), sl.end, sl.role, sl.unroll, sl.body};
    // A `# reduce` loop: every load must become a vector load (global rows read K at a time); a
    // scalar load left at v * K + j would be a K-way strided gather (bank conflicts in shared
    // memory), worse than the loop as it is.
    auto usable = [&](const LoopPlan& p) {
      if (!p.why_not.empty()) return false;
      if (!accumulates) return true;
      for (size_t i = 0; i < sl.body.size(); ++i)
        if (sl.body[i].is<Load>() && !p.vector_stmts.count(i)) return false;
      return true;
    };
    if (k_ == 1) {
      for (int64_t k : {8, 4, 2}) {
        if (usable(vec_.plan(as_loop, k, ranges, /*shared=*/false))) {
          widest = std::max(widest, k);
          break;
        }
      }
      return std::nullopt;
    }
    LoopPlan p = vec_.plan(as_loop, k_, ranges, /*shared=*/false);
    if (!usable(p)) return std::nullopt;
    Loop rewritten = vec_.rewrite(as_loop, k_, p, ranges);
    return Stmt(StridedLoop{sl.var, sl.begin, rewritten.end, sl.step, sl.role, rewritten.unroll, rewritten.body});
  }

  Stmt walk_loop(const Loop& loop, const Stmt& self) {
    const RangeMap ranges = ranges_;
    const bool innermost = std::none_of(loop.body.begin(), loop.body.end(),
                                        [](const Stmt& s) { return s.is<Loop>() || s.is<StridedLoop>() || s.is<Cond>(); });
    if (!innermost) {  // only innermost straight-line loops can be vectorized; look inside
      auto lo = bound_of(loop.begin, ranges);
      auto hi = bound_of(loop.end, ranges);
      if (lo && hi) ranges_[loop.var] = Interval{lo->lo, hi->hi - 1};
      Loop copy = loop;
      copy.body = mutate_body(loop.body);
      ranges_ = ranges;
      if (ctx_ != nullptr) ctx_->skip(node_, "loop " + loop.var + ": body holds control flow");
      return copy;
    }
    if (k_ == 1) {
      for (int64_t k : {8, 4, 2}) {
        if (vec_.plan(loop, k, ranges, /*shared=*/true).why_not.empty()) {
          widest = std::max(widest, k);
          break;
        }
      }
      return self;
    }
    LoopPlan p = vec_.plan(loop, k_, ranges, /*shared=*/true);
    if (!p.why_not.empty()) {
      if (ctx_ != nullptr) ctx_->skip(node_, "loop " + loop.var + ": " + p.why_not);
      return self;
    }
    return vec_.rewrite(loop, k_, p, ranges);
  }

  const Node& node_;
  PassContext* ctx_;
  LoopVectorizer& vec_;
  int64_t k_;
  RangeMap ranges_;
};

class VectorizeLoadsPass final : public KernelPass {
 public:
  std::string_view name() const override { return "vectorize_loads"; }
  std::string_view summary() const override {
    return "merge K consecutive per-thread accesses of a serial loop into vector loads and stores";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Kernel}; }
  Dialect input_dialect() const override { return Dialect::Kernel; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"WIDTH", KnobType::Int, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}, std::nullopt,
                     "elements per vector access (1 disables)"}};
  }

  Status run_on(Node& node, PassContext& ctx) override {
    const Graph& g = ctx.graph();
    Node* n = &node;
    const auto* kernel = n->op_as<KernelOp>();
    if (kernel == nullptr) return Status::ok();
    LoopVectorizer vec(g, kernel->body, bound_names(kernel->body));
    BodyWalker probe(*n, nullptr, vec, 1, launch_ranges(*kernel));
    probe.mutate_body(kernel->body);
    if (probe.widest == 1) {
      ctx.skip(*n, "no serial loop with an aligned f32/bf16/f16 access at [.., c + v]");
      return Status::ok();
    }
      Expected<int64_t> width = ctx.choose_int("WIDTH", *n, {1, 2, 4, 8}, probe.widest);
    if (!width) return std::move(width).error();
    if (*width == 1) return Status::ok();
    BodyWalker rewriter(*n, &ctx, vec, *width, launch_ranges(*kernel));
    Body body = rewriter.mutate_body(kernel->body);
    auto op = std::make_unique<KernelOp>(*kernel);
    op->body = canonicalize_names(body);
    n->op = std::move(op);
    return Status::ok();
  }
};

void register_vectorize_loads(Registry& r) {
  r.add_pass("vectorize_loads", [] { return std::make_unique<VectorizeLoadsPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("vectorize_loads", "1.0.0", ::tessera::register_vectorize_loads)

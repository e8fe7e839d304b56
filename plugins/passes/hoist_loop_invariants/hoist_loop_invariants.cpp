// hoist_loop_invariants: moves values that do not change inside a loop to just before it.
//
// Rewrites: in every Loop and StridedLoop of a Loop IR or Tile IR kernel body, innermost loops
// first, each statement of the loop's own body (not of a nested `if`) that only computes a value
// (Assign, Select, Load: computes_value_only) moves to just before the loop, in its original order,
// when none of its operands can change inside the loop:
//     for a1 in 0..64:  # free                   v0 = mul(acc0, 0.5)
//       v0 = mul(acc0, 0.5)               ->     for a1 in 0..64:  # free
//       in0 = load x[a0, a1]                       in0 = load x[a0, a1]
//       v1 = mul(in0, v0)                          v1 = mul(in0, v0)
// A statement moves only when
//   - no name it reads is the loop's variable or is bound or updated in the loop (modified_names:
//     a value the loop computes, an accumulator it updates); a statement whose operands moved
//     before it moves too, so a chain of invariant values leaves the loop together;
//   - the name it binds is bound nowhere else in the kernel (binding_counts), so moving the
//     binding cannot change which definition a use sees;
//   - for a Load: the loop writes no element of its buffer (written_buffers) and holds no
//     statement that synchronizes threads (contains_synchronization: a Stage, a Combine, a
//     barrier), and the loop provably runs at least once (its bounds under the ranges of the
//     enclosing loops and Tile axes), so the hoisted load reads no element the loop would not have;
//   - for an Assign that may fault (an integer floor_divide or remainder: division by zero), the
//     loop provably runs at least once.
// Pure arithmetic may leave a loop that runs zero times: it computes an unused value and cannot
// fault. Statements that synchronize (Stage, Combine, AsyncWait) and every other kind never move.
// A value hoisted from an inner loop may leave the enclosing loop too, by the same rules.
// Accepts: Loop IR and Tile IR kernels (other nodes are left alone). No knobs.
// Guarantees: the same values; a hoisted value is computed once per run of the enclosing scope
//   instead of once per iteration (once more than before only for a loop that runs zero times, and
//   then only pure arithmetic that cannot fault); statements keep their names (the stage's
//   canonicalize renumbers them); printouts deterministic; running it twice is the same as running
//   it once.
// Tests: tests/golden/hoist_loop_invariants/, tests/unit/stmt_effects_test.cpp, and the corpus
//   coverage (ValuePassCoverageTest) beside the differential runs in tests/e2e/random_knobs_test.cpp.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/stmt_effects.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

// An Assign that can fault: an integer division by zero (is_integer_division_by_zero).
bool may_fault(const Stmt& s) {
  const auto* assign = s.as<Assign>();
  if (assign == nullptr) return false;
  const bool divides = assign->op == ElementwiseFn::FloorDivide || assign->op == ElementwiseFn::Remainder;
  return divides && !dtype_is_float(assign->type.dtype);
}

// What a loop's body changes, as seen by a statement hoisted out of it.
struct LoopEffects {
  std::set<std::string> varying;  // names that may take another value inside the loop
  std::set<std::string> written;  // buffers the loop writes
  bool synchronizes = false;
  bool runs_at_least_once = false;
};

class InvariantHoister final : public StmtMutator {
 public:
  explicit InvariantHoister(std::map<std::string, int> binding_counts) : binding_counts_(std::move(binding_counts)) {}

  Body mutate_body(const Body& b) override {
    Body out;
    out.reserve(b.size());
    for (const Stmt& s : b) {
      if (s.is<Loop>() || s.is<StridedLoop>()) {
        hoist_from(s, out);
      } else {
        out.push_back(mutate(s));
      }
    }
    return out;
  }

  Stmt mutate_Tile(const Tile& s, const Stmt& self) override {
    RangeMap saved = ranges_;
    for (const TileAxis& axis : s.axes)
      if (axis.extent >= 1) ranges_[axis.name] = Interval{0, axis.extent - 1};
    Stmt out = StmtMutator::mutate_Tile(s, self);
    ranges_ = std::move(saved);
    return out;
  }

  int hoisted() const { return hoisted_; }

 private:
  // Rewrites the loop `s` (inner loops first), appends to `out` what leaves it, then the loop.
  void hoist_from(const Stmt& s, Body& out) {
    const auto* loop = s.as<Loop>();
    const auto* strided = s.as<StridedLoop>();
    const std::string& var = loop ? loop->var : strided->var;
    const Expr& begin = loop ? loop->begin : strided->begin;
    const Expr& end = loop ? loop->end : strided->end;
    std::optional<Interval> first = bound_of(begin, ranges_), limit = bound_of(end, ranges_);

    RangeMap saved = ranges_;
    if (first && limit && limit->hi - 1 >= first->lo) {
      ranges_[var] = Interval{first->lo, limit->hi - 1};
    } else {
      ranges_.erase(var);
    }
    Body body = mutate_body(loop ? loop->body : strided->body);
    ranges_ = std::move(saved);

    LoopEffects effects;
    effects.varying = modified_names(body);
    effects.varying.insert(var);
    effects.written = written_buffers(body);
    effects.synchronizes = contains_synchronization(body);
    // Every thread's first iteration runs when the largest start is below the smallest end.
    effects.runs_at_least_once = first && limit && first->hi < limit->lo;

    Body kept;
    for (const Stmt& stmt : body) {
      if (!invariant(stmt, effects)) {
        kept.push_back(stmt);
        continue;
      }
      for (const std::string& name : own_bound_names(stmt)) effects.varying.erase(name);
      out.push_back(stmt);
      ++hoisted_;
    }
    if (loop) {
      Loop rewritten = *loop;
      rewritten.body = std::move(kept);
      out.push_back(std::move(rewritten));
    } else {
      StridedLoop rewritten = *strided;
      rewritten.body = std::move(kept);
      out.push_back(std::move(rewritten));
    }
  }

  bool invariant(const Stmt& s, const LoopEffects& effects) const {
    if (!computes_value_only(s)) return false;
    for (const std::string& name : own_bound_names(s)) {
      auto it = binding_counts_.find(name);
      if (it == binding_counts_.end() || it->second != 1) return false;
    }
    for (const std::string& name : own_used_names(s))
      if (effects.varying.count(name)) return false;
    if (const auto* load = s.as<Load>()) {
      if (effects.written.count(load->buffer) || effects.synchronizes || !effects.runs_at_least_once) return false;
    }
    if (may_fault(s) && !effects.runs_at_least_once) return false;
    return true;
  }

  std::map<std::string, int> binding_counts_;
  RangeMap ranges_;
  int hoisted_ = 0;
};

class HoistLoopInvariantsPass final : public KernelPass {
 public:
  std::string_view name() const override { return "hoist_loop_invariants"; }
  std::string_view summary() const override {
    return "move values that do not change inside a loop to just before it";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Loop, Dialect::Tile}; }
  Dialect input_dialect() const override { return Dialect::Tile; }
  bool applies_to(const Node& node) const override {
    return node.op_as<LoopOp>() != nullptr || node.op_as<TileOp>() != nullptr;
  }

  Status run_on(Node& node, PassContext&) override {
    const auto* kernel = dynamic_cast<const KernelLikeOp*>(node.op.get());
    if (kernel == nullptr) return Status::ok();
    InvariantHoister hoister(binding_counts(kernel->body));
    Body body = hoister.mutate_body(kernel->body);
    if (hoister.hoisted() == 0) return Status::ok();
    std::unique_ptr<Op> op = kernel->clone();
    static_cast<KernelLikeOp&>(*op).body = std::move(body);
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_hoist_loop_invariants(Registry& r) {
  r.add_pass("hoist_loop_invariants", [] { return std::make_unique<HoistLoopInvariantsPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("hoist_loop_invariants", "1.0.0", ::tessera::register_hoist_loop_invariants)

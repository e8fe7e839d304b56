// eliminate_common_subexpressions: computes each value once where it is computed twice.
//
// Rewrites: in a Loop IR or Tile IR kernel body, a statement that only computes a value (Assign,
// Select, Load: computes_value_only) equal to one computed earlier in the same scope or an
// enclosing one (the same function or load, the same type, the same operands after the renames
// already made; the operands of add, mul, maximum, minimum, eq, ne, logical_and and logical_or in
// either order) is dropped, and every use of its value is renamed to the earlier one:
//     v3 = add(acc0, 1e-06)                      v3 = add(acc0, 1e-06)
//     v4 = rsqrt(v3)                             v4 = rsqrt(v3)
//     v7 = add(acc0, 1e-06)               ->     v9 = mul(in1, v4)
//     v8 = rsqrt(v7)
//     v9 = mul(in1, v8)
// An earlier value is not reused
//   - after a statement that may change one of its operands: binds the name again or updates it
//     (modified_names: an accumulator's Accum or Combine);
//   - for a Load, after a statement that may write its buffer (written_buffers) or synchronizes
//     threads (contains_synchronization: another thread may have written it);
//   - inside a loop that may change an operand on a later iteration (the loop's effects are applied
//     before its body is entered), nor after an `if` or a loop for a value computed inside it;
//   - when either name is bound more than once in the kernel (binding_counts).
// Accepts: Loop IR and Tile IR kernels (other nodes are left alone). No knobs.
// Guarantees: the same values, each computed at most as often as before (a dropped statement ran
//   exactly where the earlier one had already run); no statement moves; names kept (a dropped
//   value's uses take the earlier name; the stage's canonicalize renumbers); printouts
//   deterministic; running it twice is the same as running it once.
// Tests: tests/golden/eliminate_common_subexpressions/, tests/golden/e2e/qwen_swiglu_rms_scale_once.txt
//   (the Qwen2.5 SwiGLU kernel through the default pipeline), tests/unit/stmt_effects_test.cpp, and
//   the corpus coverage (ValuePassCoverageTest) in tests/e2e/random_knobs_test.cpp.
#include <algorithm>
#include <map>
#include <memory>
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

// Functions whose two operands may be swapped without changing the result, bit for bit.
bool commutes(ElementwiseFn fn) {
  switch (fn) {
    case ElementwiseFn::Add: case ElementwiseFn::Mul: case ElementwiseFn::Maximum: case ElementwiseFn::Minimum:
    case ElementwiseFn::Eq: case ElementwiseFn::Ne: case ElementwiseFn::LogicalAnd: case ElementwiseFn::LogicalOr:
      return true;
    case ElementwiseFn::Identity: case ElementwiseFn::Cast: case ElementwiseFn::Neg: case ElementwiseFn::Exp:
    case ElementwiseFn::Log: case ElementwiseFn::Sqrt: case ElementwiseFn::Rsqrt: case ElementwiseFn::Tanh:
    case ElementwiseFn::Sigmoid: case ElementwiseFn::Abs: case ElementwiseFn::Reciprocal: case ElementwiseFn::Erf:
    case ElementwiseFn::Relu: case ElementwiseFn::Silu: case ElementwiseFn::Sin: case ElementwiseFn::Cos:
    case ElementwiseFn::Square: case ElementwiseFn::Floor: case ElementwiseFn::LogicalNot: case ElementwiseFn::Sub:
    case ElementwiseFn::Div: case ElementwiseFn::Pow: case ElementwiseFn::FloorDivide: case ElementwiseFn::Remainder:
    case ElementwiseFn::Lt: case ElementwiseFn::Le: case ElementwiseFn::Gt: case ElementwiseFn::Ge:
    case ElementwiseFn::Where:
      return false;
  }
  return false;  // unreachable: the switch covers every function
}

// What makes two value statements equal: their printout with the bound name left out (the kind,
// function, type and operands), commutative operands in a fixed order.
std::string value_key(const Stmt& s) {
  if (const auto* assign = s.as<Assign>()) {
    Assign copy = *assign;
    copy.dst.clear();
    if (copy.args.size() == 2 && commutes(copy.op) && copy.args[1].str() < copy.args[0].str())
      std::swap(copy.args[0], copy.args[1]);
    return print_stmt(copy);
  }
  if (const auto* select = s.as<Select>()) {
    Select copy = *select;
    copy.dst.clear();
    return print_stmt(copy);
  }
  if (const auto* load = s.as<Load>()) {
    Load copy = *load;
    copy.dst.clear();
    return print_stmt(copy);
  }
  return {};
}

class CommonSubexpressionEliminator final : public StmtMutator {
 public:
  explicit CommonSubexpressionEliminator(std::map<std::string, int> binding_counts)
      : binding_counts_(std::move(binding_counts)) {}

  Expr mutate_expr(const Expr& e) override { return renames_.empty() ? e : substitute(e, renames_); }

  Body mutate_body(const Body& b) override {
    const size_t mark = available_.size();
    Body out;
    out.reserve(b.size());
    for (const Stmt& s : b) {
      if (!computes_value_only(s)) {
        // What the statement (on any iteration of its body) may change is stale inside and after it.
        Body self{s};
        forget(modified_names(self), written_buffers(self), contains_synchronization(self));
        out.push_back(mutate(s));
        continue;
      }
      Stmt renamed = mutate(s);
      std::vector<std::string> bound = own_bound_names(renamed);
      const bool bound_once = bound.size() == 1 && bound_once_in_kernel(bound[0]);
      std::string key = value_key(renamed);
      if (bound_once) {
        if (const Available* earlier = find(key)) {
          renames_[bound[0]] = Expr::value(earlier->name);
          ++eliminated_;
          continue;
        }
      }
      forget(std::set<std::string>(bound.begin(), bound.end()), {}, false);
      out.push_back(renamed);
      if (bound_once) {
        const auto* load = renamed.as<Load>();
        available_.push_back(Available{std::move(key), bound[0], load ? load->buffer : std::string(),
                                       own_used_names(renamed)});
      }
    }
    available_.resize(std::min(available_.size(), mark));
    return out;
  }

  int eliminated() const { return eliminated_; }

 private:
  struct Available {
    std::string key;
    std::string name;
    std::string buffer;  // the buffer a Load reads; empty for computed values
    std::set<std::string> operands;
  };

  bool bound_once_in_kernel(const std::string& name) const {
    auto it = binding_counts_.find(name);
    return it != binding_counts_.end() && it->second == 1;
  }

  const Available* find(const std::string& key) const {
    for (const Available& a : available_)
      if (a.key == key) return &a;
    return nullptr;
  }

  void forget(const std::set<std::string>& names, const std::set<std::string>& buffers, bool synchronizes) {
    std::erase_if(available_, [&](const Available& a) {
      if (names.count(a.name)) return true;
      for (const std::string& operand : a.operands)
        if (names.count(operand)) return true;
      if (a.buffer.empty()) return false;
      return synchronizes || buffers.count(a.buffer) > 0;
    });
  }

  std::map<std::string, int> binding_counts_;
  std::vector<Available> available_;
  std::map<std::string, Expr> renames_;
  int eliminated_ = 0;
};

class EliminateCommonSubexpressionsPass final : public KernelPass {
 public:
  std::string_view name() const override { return "eliminate_common_subexpressions"; }
  std::string_view summary() const override {
    return "compute each value once: drop a repeated computation or load and reuse the first";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Loop, Dialect::Tile}; }
  Dialect input_dialect() const override { return Dialect::Tile; }
  bool applies_to(const Node& node) const override {
    return node.op_as<LoopOp>() != nullptr || node.op_as<TileOp>() != nullptr;
  }

  Status run_on(Node& node, PassContext&) override {
    const auto* kernel = dynamic_cast<const KernelLikeOp*>(node.op.get());
    if (kernel == nullptr) return Status::ok();
    CommonSubexpressionEliminator eliminator(binding_counts(kernel->body));
    Body body = eliminator.mutate_body(kernel->body);
    if (eliminator.eliminated() == 0) return Status::ok();
    std::unique_ptr<Op> op = kernel->clone();
    static_cast<KernelLikeOp&>(*op).body = std::move(body);
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_eliminate_common_subexpressions(Registry& r) {
  r.add_pass("eliminate_common_subexpressions",
             [] { return std::make_unique<EliminateCommonSubexpressionsPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("eliminate_common_subexpressions", "1.0.0", ::tessera::register_eliminate_common_subexpressions)

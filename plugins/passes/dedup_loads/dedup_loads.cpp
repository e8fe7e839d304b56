// dedup_loads: removes repeated loads from the bodies of Loop IR kernels.
//
// Rewrites: a load of the same buffer at a structurally equal index as a load earlier in the same
// scope (or in an enclosing scope) is dropped, and every later use of its value is renamed to the
// first load's value:
//     in0 = load x[a0, a1]; in1 = load x[a0, a1]; v0 = mul(in0, in1)
//  -> in0 = load x[a0, a1]; v0 = mul(in0, in0)
// A load is never reused after a write to its buffer, nor inside a loop that writes its buffer
// (a later iteration reads what an earlier one wrote), nor where a name in its index (or its own
// name) has been bound again, nor across the branches of an `if` (a load inside one branch is
// not available after it).
// Accepts: any graph; only LoopOp bodies are rewritten (other nodes are left alone).
// Guarantees: the result computes the same values with fewer or equally many loads; running it
//   twice is the same as running it once. No knobs.
// Tests: tests/golden/dedup_loads/ (printouts) and tests/unit/lift_test.cpp (differential runs
//   after lift, and a hand-built kernel).
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

class LoadDeduplicator final : public StmtMutator {
 public:
  Expr mutate_expr(const Expr& e) override { return renames_.empty() ? e : substitute(e, renames_); }

  Body mutate_body(const Body& b) override {
    const size_t mark = available_.size();
    Body out;
    out.reserve(b.size());
    for (const Stmt& s : b) {
      if (const auto* load = s.as<Load>()) {
        ExprList index;
        for (const Expr& e : load->index) index.push_back(mutate_expr(e));
        if (const Available* first = find(load->buffer, index)) {
          renames_[load->dst] = Expr::value(first->name);
          continue;
        }
        forget_names(own_bound_names(s));
        out.push_back(Load{load->dst, load->buffer, index, load->type});
        available_.push_back(Available{load->buffer, std::move(index), load->dst});
        continue;
      }
      forget_names(own_bound_names(s));
      // A buffer the statement writes anywhere (a loop body's later iterations included) holds
      // new values inside it and after it.
      for (const std::string& buffer : written_buffers(Body{s})) forget_buffer(buffer);
      // Nested bodies may reuse the loads still available here; what they load stays inside them.
      out.push_back(mutate(s));
    }
    if (available_.size() > mark) available_.resize(mark);
    return out;
  }

 private:
  struct Available {
    std::string buffer;
    ExprList index;
    std::string name;
  };

  const Available* find(const std::string& buffer, const ExprList& index) const {
    for (const Available& a : available_) {
      if (a.buffer != buffer || a.index.size() != index.size()) continue;
      bool same = true;
      for (size_t d = 0; same && d < index.size(); ++d) same = structurally_equal(a.index[d], index[d]);
      if (same) return &a;
    }
    return nullptr;
  }

  // A rebinding of `names` hides an earlier load named so, or changes the meaning of its index.
  void forget_names(const std::vector<std::string>& names) {
    if (names.empty()) return;
    std::set<std::string> rebound(names.begin(), names.end());
    for (const std::string& name : names) renames_.erase(name);  // a new binding is not renamed
    std::erase_if(available_, [&](const Available& a) {
      if (rebound.count(a.name)) return true;
      for (const Expr& e : a.index)
        for (const std::string& v : free_vars(e))
          if (rebound.count(v)) return true;
      return false;
    });
  }

  void forget_buffer(const std::string& buffer) {
    std::erase_if(available_, [&](const Available& a) { return a.buffer == buffer; });
  }

  std::vector<Available> available_;
  std::map<std::string, Expr> renames_;
};

class DedupLoadsPass final : public KernelPass {
 public:
  std::string_view name() const override { return "dedup_loads"; }
  std::string_view summary() const override {
    return "drop repeated loads of the same element in a kernel body; reuse the first";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Loop}; }
  Dialect input_dialect() const override { return Dialect::Loop; }

  Status run_on(Node& node, PassContext&) override {
    Node* n = &node;
    const auto* kernel = n->op_as<LoopOp>();
    if (kernel == nullptr) return Status::ok();
    LoadDeduplicator dedup;
    Body body = dedup.mutate_body(kernel->body);
    auto op = std::make_unique<LoopOp>(*kernel);
    op->body = std::move(body);
    n->op = std::move(op);
    return Status::ok();
  }
};

void register_dedup_loads(Registry& r) {
  r.add_pass("dedup_loads", [] { return std::make_unique<DedupLoadsPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("dedup_loads", "1.0.0", ::tessera::register_dedup_loads)

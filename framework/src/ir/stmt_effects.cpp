// What statements change: one overload of own_effects per statement kind (a kind without one
// fails the build), and the body-wide queries built on it with the shared visitor.
#include "tessera/ir/stmt_effects.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace tessera {
namespace {

// The effects of one statement's own fields (not of its nested bodies).
struct OwnEffects {
  std::vector<std::string> written_buffers;
  std::vector<std::string> updated_accumulators;
  bool synchronizes = false;  // a barrier, or an exchange with other threads
  bool value_only = false;    // binds a value computed from its operands and does nothing else
};

OwnEffects value_only() { return {{}, {}, false, true}; }
OwnEffects none() { return {}; }
OwnEffects writes(std::vector<std::string> buffers) { return {std::move(buffers), {}, false, false}; }
OwnEffects updates(const std::string& acc, bool synchronizes) { return {{}, {acc}, synchronizes, false}; }
OwnEffects synchronizes(std::vector<std::string> buffers = {}) { return {std::move(buffers), {}, true, false}; }

// Loop IR
OwnEffects own_effects(const Load&) { return value_only(); }
OwnEffects own_effects(const Assign&) { return value_only(); }
OwnEffects own_effects(const Select&) { return value_only(); }
OwnEffects own_effects(const Init&) { return none(); }  // binds its accumulator (bound_names)
OwnEffects own_effects(const Accum& s) { return updates(s.acc, false); }
OwnEffects own_effects(const Write& s) { return writes({s.buffer}); }
OwnEffects own_effects(const Loop&) { return none(); }   // its body answers for itself
OwnEffects own_effects(const Cond&) { return none(); }
// Tile IR
OwnEffects own_effects(const Tile&) { return none(); }
OwnEffects own_effects(const StridedLoop&) { return none(); }
OwnEffects own_effects(const Stage& s) { return synchronizes({s.dst}); }
OwnEffects own_effects(const Combine& s) { return updates(s.acc, true); }
OwnEffects own_effects(const AsyncWait&) { return synchronizes(); }
OwnEffects own_effects(const SlabMap& s) { return synchronizes({s.dst}); }
// Kernel IR
OwnEffects own_effects(const Let&) { return none(); }
OwnEffects own_effects(const Smem&) { return none(); }
OwnEffects own_effects(const Sync&) { return synchronizes(); }
OwnEffects own_effects(const CpAsyncCopy& s) { return synchronizes({s.dst}); }
OwnEffects own_effects(const CpAsyncCommit&) { return synchronizes(); }
OwnEffects own_effects(const CpAsyncWait&) { return synchronizes(); }
OwnEffects own_effects(const TmaLoad& s) { return synchronizes({s.dst, s.barrier}); }
OwnEffects own_effects(const MbarrierInit& s) { return synchronizes({s.name}); }
OwnEffects own_effects(const MbarrierArrive& s) { return synchronizes({s.barrier}); }
OwnEffects own_effects(const MbarrierWait&) { return synchronizes(); }
OwnEffects own_effects(const WarpShuffle&) { return synchronizes(); }
OwnEffects own_effects(const TreeHalve& s) { return synchronizes({s.buffer}); }
OwnEffects own_effects(const VectorLoad&) { return none(); }  // binds several values at once: never merged
OwnEffects own_effects(const VectorStore& s) { return writes({s.buffer}); }
OwnEffects own_effects(const ClusterSync&) { return synchronizes(); }
OwnEffects own_effects(const NamedBarrier&) { return synchronizes(); }
// Changes what the warpgroup may hold in registers: nothing moves across it.
OwnEffects own_effects(const SetMaxNReg&) { return synchronizes(); }
// Reads what another block wrote before a ClusterSync: never merged or moved across one.
OwnEffects own_effects(const DsmemLoad&) { return synchronizes(); }
// Tensor cores: warp-collective (each thread's fragment elements come from its warp's threads).
OwnEffects own_effects(const Fragment&) { return none(); }  // binds its array (bound_names)
OwnEffects own_effects(const LdMatrix& s) { return updates(s.dst, true); }
OwnEffects own_effects(const MmaSync& s) { return updates(s.acc, true); }
// Warpgroup products run asynchronously until their WgmmaWait: every Wgmma* statement orders the
// warpgroup's register and shared-memory accesses, so none is merged or moved across another.
OwnEffects own_effects(const WgmmaMma& s) { return updates(s.acc, true); }
OwnEffects own_effects(const WgmmaFence&) { return synchronizes(); }
OwnEffects own_effects(const WgmmaCommit&) { return synchronizes(); }
OwnEffects own_effects(const WgmmaWait&) { return synchronizes(); }

// Collects the effects of every statement at any depth.
class EffectCollector final : public StmtVisitor {
 public:
#define TESSERA_X(K)                                                            \
  void visit_##K(const K& s) override {                                         \
    OwnEffects e = own_effects(s);                                              \
    written.insert(e.written_buffers.begin(), e.written_buffers.end());         \
    updated.insert(e.updated_accumulators.begin(), e.updated_accumulators.end()); \
    synchronizes = synchronizes || e.synchronizes;                              \
    StmtVisitor::visit_##K(s);                                                  \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X

  std::set<std::string> written;
  std::set<std::string> updated;
  bool synchronizes = false;
};

// Calls on_stmt for every statement at any depth.
template <class OnStmt>
class EveryStmt final : public StmtVisitor {
 public:
  explicit EveryStmt(OnStmt on_stmt) : on_stmt_(std::move(on_stmt)) {}
#define TESSERA_X(K)                        \
  void visit_##K(const K& s) override {     \
    on_stmt_(Stmt(s));                      \
    StmtVisitor::visit_##K(s);              \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X

 private:
  OnStmt on_stmt_;
};

template <class OnStmt>
void for_every_stmt(const Body& body, OnStmt on_stmt) {
  EveryStmt<OnStmt> walker(std::move(on_stmt));
  walker.visit(body);
}

}  // namespace

std::vector<std::string> read_buffers(const Body& body) {
  std::vector<std::string> buffers;
  for_every_stmt(body, [&](const Stmt& s) {
    if (const auto* load = s.as<Load>())
      if (std::find(buffers.begin(), buffers.end(), load->buffer) == buffers.end()) buffers.push_back(load->buffer);
  });
  return buffers;
}

std::set<std::string> written_buffers(const Body& body) {
  EffectCollector c;
  c.visit(body);
  return std::move(c.written);
}

std::set<std::string> modified_names(const Body& body) {
  std::set<std::string> names = bound_names(body);
  EffectCollector c;
  c.visit(body);
  names.insert(c.updated.begin(), c.updated.end());
  return names;
}

std::map<std::string, int> binding_counts(const Body& body) {
  std::map<std::string, int> counts;
  for_every_stmt(body, [&](const Stmt& s) {
    for (const std::string& name : own_bound_names(s)) ++counts[name];
  });
  return counts;
}

bool contains_synchronization(const Body& body) {
  EffectCollector c;
  c.visit(body);
  return c.synchronizes;
}

bool computes_value_only(const Stmt& s) {
  return std::visit(
      [](const auto& node) {
        if constexpr (std::is_same_v<std::decay_t<decltype(node)>, std::monostate>) {
          return false;
        } else {
          return own_effects(node).value_only;
        }
      },
      s.variant());
}

}  // namespace tessera

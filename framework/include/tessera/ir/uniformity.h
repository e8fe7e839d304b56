// Uniformity: which names of a Tile IR kernel hold one value in every thread of a block, and
// whether a statement is reached by every thread. Collectives (Stage, Combine, AsyncWait: the
// `collective` kind trait) must be: the verifier checks it with first_divergent_collective, and
// materialize tracks the same scope while it lowers, so both answer by the same rules:
//   - blockIdx.x, and Tile axes bound to BLOCK, SERIAL or still PARALLEL, are uniform (a PARALLEL
//     axis may yet become a THREAD axis: materialize, which sees the final bindings, decides then);
//   - a Loop or StridedLoop variable is uniform when its bounds (and step) are;
//   - an Assign, Load or Select result is uniform when its operands (index) are and it is not
//     computed under thread-dependent control flow;
//   - the accumulator of a block Combine is uniform after it;
//   - a loop or condition whose control expressions are not uniform makes its body thread-dependent.
// Tests: tests/unit/uniformity_test.cpp, tests/unit/materialize_test.cpp.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "tessera/ir/stmt.h"

namespace tessera {

class UniformityScope {
 public:
  // The scope of a kernel's top level: only blockIdx.x is uniform.
  static UniformityScope kernel_top();

  bool is_uniform(const ExprList& exprs) const;
  // Whether some thread of the block may not reach statements in this scope.
  bool thread_dependent() const { return thread_dependent_; }

  void mark_uniform(const std::string& name) { uniform_.insert(name); }
  // Marks the axes of `tile` that are uniform by their binding.
  void enter_tile(const Tile& tile);
  // The scope of a loop or condition body controlled by `control`; a uniform loop variable
  // (`var`, empty for a condition) is marked uniform inside.
  UniformityScope nested(const ExprList& control, const std::string& var = {}) const;
  // Records what a statement without a body defines uniform (Assign, Load, Select results, a
  // block Combine's accumulator); other statements define nothing uniform.
  void define(const Stmt& leaf);

 private:
  std::set<std::string> uniform_;
  bool thread_dependent_ = false;
};

// The first collective statement of a Tile IR kernel body (the statements around its Tile and the
// Tile's body, depth-first) that runs under thread-dependent control flow, or nullopt.
std::optional<Stmt> first_divergent_collective(const Body& tile_kernel_body);

}  // namespace tessera

// Statement effects: what the statements of a body change, for the passes that move statements
// or merge them (hoist_loop_invariants, eliminate_common_subexpressions). A value computed from
// operands none of which a body changes is the same before, inside and after that body.
//
// Each statement kind answers through one overload per kind (stmt_effects.cpp): a new kind fails
// the build until it says which buffers it writes and whether it synchronizes threads.
// Tests: tests/unit/stmt_effects_test.cpp.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera {

// Every buffer a Load of `body` reads, at any depth, in order of first load: a kernel's inputs.
std::vector<std::string> read_buffers(const Body& body);

// Every buffer whose contents a statement of `body` may change, at any depth: the buffer of a
// Write or VectorStore, the slab a Stage fills, the destination of a CpAsyncCopy or TmaLoad, the
// slots a TreeHalve combines, a barrier that is initialized, arrived at or completed by a TmaLoad.
std::set<std::string> written_buffers(const Body& body);

// Every name whose value a statement of `body` may set, at any depth: each name it binds (axes,
// values, accumulators, kernel-local buffers) and each accumulator it updates (Accum, Combine).
std::set<std::string> modified_names(const Body& body);

// How many times each name is bound in `body`, at any depth (a name bound once names one value
// wherever it is in scope, so a statement binding it may move within that scope).
std::map<std::string, int> binding_counts(const Body& body);

// Whether a statement of `body`, at any depth, synchronizes or exchanges data between threads
// (Stage, Combine, AsyncWait, Sync, cp.async and mbarrier statements, TreeHalve, WarpShuffle): the
// statements across which memory another thread writes may change, and which never move.
bool contains_synchronization(const Body& body);

// Whether `s` only binds a value computed from its operands (Load, Assign, Select): it has no
// other effect, so it may be moved or merged with an equal one where its operands allow. A Load
// may still fault (an index out of bounds) and an Assign may divide an integer by zero: a pass
// that moves one where it did not run before must know that it would have run.
bool computes_value_only(const Stmt& s);

}  // namespace tessera

// Internal invariants, checked in every build. Release builds define NDEBUG, which turns `assert`
// off; the invariants of the IR core (an id is unique in its graph, a node in a graph keeps its id,
// an Expr accessor is used on its own kind, ...) must hold there too, because a violated one
// corrupts state silently and shows up far from its cause.
//
//   TESSERA_INTERNAL_CHECK(!contains(id), "Graph::add: the id is new in the graph");
//
// A violation is a bug in Tessera, never bad input (bad input is an error value with a location,
// status.h): it prints "tessera: internal error: <the invariant> (file:line)" to stderr and aborts,
// so that the core dump or the test's death assertion points at the broken invariant. The check
// costs one predictable branch.
#pragma once

namespace tessera {

[[noreturn]] void internal_check_failed(const char* invariant, const char* file, int line);

}  // namespace tessera

// After a switch whose cases all return: an enum value outside its declared list (memory
// corruption, a bad cast) is an internal error, never a silently wrong default.
#define TESSERA_UNREACHABLE(invariant) ::tessera::internal_check_failed((invariant), __FILE__, __LINE__)

#define TESSERA_INTERNAL_CHECK(cond, invariant)                                  \
  do {                                                                           \
    if (!(cond)) [[unlikely]]                                                    \
      ::tessera::internal_check_failed((invariant), __FILE__, __LINE__);         \
  } while (0)

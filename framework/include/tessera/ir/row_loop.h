// A reduction kernel's row loop in Tile IR: the loop that visits the elements of a row. Either the
// block's threads share it (a `# reduce` StridedLoop, alone or as the one statement of
// chunk_reduce's `# reduce` chunk Loop; the threads' partial results then need a Combine), or one
// thread runs it over its own row (a serial `# reduce` Loop: launch_geometry's thread-per-row
// kernels). The passes that merge two passes over a row into one (fuse_online_softmax,
// fuse_mean_variance) find and rebuild row loops with these.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"

namespace tessera {

struct RowLoop {
  const Body* body = nullptr;  // the statements run per element
  bool shared = false;         // a StridedLoop: the threads' partial results need a Combine
};

// `s` as a row loop, or nullopt.
std::optional<RowLoop> row_loop(const Stmt& s);

// `loop` (a row loop) with its per-element statements replaced by `body`.
Stmt with_row_body(const Stmt& loop, Body body);

// An accumulator a loop accumulates into that is initialized outside it, with the op of its first
// Accum; `one_op` when every Accum of it in the loop uses that op.
struct OuterAccumulator {
  std::string acc;
  CombineFn op = CombineFn::Add;
  bool one_op = true;
};
// The accumulators `loop`'s body (at any depth) accumulates into that are initialized outside it,
// in order of first accumulation: what a loop shared by threads or blocks must combine after it.
std::vector<OuterAccumulator> outer_accumulators(const Loop& loop);

// Whether `body` only loads and computes values (Load, Assign, Select): nothing that writes,
// accumulates, branches or synchronizes. A row pass computes its row value so.
bool computes_values_only(const Body& body);

// Whether every Load of `body` reads one of `buffers` (a kernel's graph inputs: a row read from
// memory, not a shared-memory slab).
bool loads_only_from(const Body& body, const std::vector<std::string>& buffers);

// Whether some statement of `body`, at any depth, reads a name in `names` (ir/stmt.h used_names).
bool reads_any(const Body& body, const std::set<std::string>& names);

// A run of statements to replace: its length and its replacement.
struct StatementRun {
  size_t length = 0;
  Body replacement;
};
// `body`, and the bodies of the `if`s in it (not of loops: a row loop holds no row loop), with
// each run `match(body, i)` finds starting at position i replaced (the walk goes on after it).
Body rewrite_statement_runs(const Body& body,
                            const std::function<std::optional<StatementRun>(const Body&, size_t)>& match);

}  // namespace tessera

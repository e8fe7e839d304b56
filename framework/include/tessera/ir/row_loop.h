// A reduction kernel's row loop in Tile IR: the loop that visits the elements of a row. Either the
// block's threads share it (a `# reduce` StridedLoop, alone or as the one statement of
// chunk_reduce's `# reduce` chunk Loop; the threads' partial results then need a Combine), or one
// thread runs it over its own row (a serial `# reduce` Loop: launch_geometry's thread-per-row
// kernels). The passes that merge two passes over a row into one (fuse_online_softmax,
// fuse_mean_variance) find and rebuild row loops with these.
#pragma once

#include <optional>

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

}  // namespace tessera

// TilePass (tessera/pass/pass.h): the shape check every tile pass shares, the tensor-core
// schedules it leaves to the passes that know them, then run_on_tile.
#include "tessera/pass/pass.h"

#include <string>

#include "tessera/pass/pass_context.h"

namespace tessera {

Status TilePass::run_on(Node& node, PassContext& ctx) {
  const auto* kernel = node.op_as<TileOp>();
  if (kernel == nullptr) return Status::ok();  // not a kernel (the pass reads TileOps only)
  const Tile* tile = kernel->tile();
  if (tile == nullptr)
    return ctx.error_at(node, "a Tile IR kernel body must be exactly one Tile statement");
  if (!handles_tensor_cores() && contains_tensor_core_statements(tile->body)) {
    ctx.skip(node, "a tensor-core schedule (fragments, ldmatrix, mma), which this pass does not rewrite");
    return Status::ok();
  }
  return run_on_tile(node, *kernel, *tile, ctx);
}

}  // namespace tessera

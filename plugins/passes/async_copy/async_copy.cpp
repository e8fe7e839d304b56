// async_copy: turns synchronous Stages into cp.async copies on devices that have them.
//
// Rewrites: in every body of a Tile kernel, each run of consecutive Stage statements that holds a
// `sync` Stage has its sync Stages switched to the `async` transport, and one `AsyncWait(keep=0)`
// is inserted after the run's last Stage (unless an AsyncWait already follows it), so the staged
// data is visible exactly where it was before:
//     x_smem = Stage(x, ...)             x_smem = Stage(x, ...) async
//     acc0 = init(0.0)             ->    AsyncWait(keep=0)
//                                        acc0 = init(0.0)
// Stages of elements of 4 bytes or more switch; cp.async moves 4, 8 or 16 bytes, so a slab of f16 /
//   bf16 elements switches only when its rows can move in groups of two or more elements
//   (AsyncCandidate; materialize forms the groups).
// Accepts: Tile IR; nodes without such sync Stages are left alone.
// Knob ASYNC (bool). Heuristic: true when the device has cp.async (ctx.device().features: sm_80
//   and newer). Without it the pass skips every node with a reason and asks nothing.
// Guarantees: same values; the wait comes before any statement that could read the buffers.
//   Names canonical.
// Tests: tests/golden/async_copy/, tests/unit/smem_passes_test.cpp.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/stage_transport.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

bool is_sync(const Stage& s) { return s.transport == StageTransport::Sync; }

// The smallest cp.async moves 4 bytes: one element of a 4- or 8-byte dtype, or two of a 2-byte one.
constexpr int kMinAsyncCopyBytes = 4;

// Whether a Stage may switch to cp.async: synchronous, with elements cp.async can move one by one,
// or 2-byte elements whose slab rows could move in groups of 4 bytes or more (the innermost slab
// dim runs along the source's last dim, and it, its padded row and the source's last dim have an
// even length). materialize groups them; one whose start it cannot prove aligned is copied
// synchronously, the run's AsyncWait then being its barrier.
class AsyncCandidate {
 public:
  explicit AsyncCandidate(const Graph& g) : graph_(g) {}
  bool operator()(const Stage& s) const {
    const Node* source = graph_.find(s.buffer);
    if (!is_sync(s) || source == nullptr || s.slab.empty()) return false;
    const int64_t bytes = dtype_bytes(source->type.dtype);
    return bytes >= kMinAsyncCopyBytes || stage_rows_group(s, source->type, kMinAsyncCopyBytes / bytes);
  }

 private:
  const Graph& graph_;
};

// The AsyncCandidate Stages of a body switch to cp.async (stage_transport.h).
class AsyncStager final : public StageTransportSwitch {
 public:
  AsyncStager(AsyncCandidate candidate, bool rewrite)
      : StageTransportSwitch(StageTransport::Async, rewrite), candidate_(candidate) {}

 protected:
  bool accept(const Stage& s) const override { return candidate_(s); }

 private:
  AsyncCandidate candidate_;
};

class AsyncCopyPass final : public TilePass {
 public:
  std::string_view name() const override { return "async_copy"; }
  std::string_view summary() const override { return "copy staged slabs with cp.async on sm_80 and newer"; }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  bool handles_tensor_cores() const override { return true; }  // changes only how Stages copy: ldmatrix reads the same slabs
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"ASYNC", KnobType::Bool, {}, std::nullopt, "copy sync Stages asynchronously (cp.async)"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile&, PassContext& ctx) override {
    const Graph& g = ctx.graph();
    Node* n = &node;
    const TileOp* kernel = &tile_op;
    const std::string& arch = ctx.device().arch;
    const bool supported = ctx.device().features.cp_async;
    AsyncStager finder(AsyncCandidate(g), /*rewrite=*/false);
    finder.mutate_body(kernel->body);
    if (finder.switched == 0) return Status::ok();
    if (!supported) {
      ctx.skip(*n, "device arch '" + arch + "' has no cp.async (needs sm_80 or newer)");
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(bool async, ctx.choose_bool("ASYNC", *n, true));
    if (!async) return Status::ok();
    AsyncStager stager(AsyncCandidate(g), /*rewrite=*/true);
    auto op = std::make_unique<TileOp>(*kernel);
    op->body = canonicalize_names(stager.mutate_body(kernel->body));
    n->op = std::move(op);
    return Status::ok();
  }
};

void register_async_copy(Registry& r) {
  r.add_pass("async_copy", [] { return std::make_unique<AsyncCopyPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("async_copy", "1.0.0", ::tessera::register_async_copy)

// specialize_warps: hands a warpgroup-product kernel's TMA copies to a producer warpgroup of their
// own (warp specialization, sm_90a).
//
// Rewrites: a Tile whose body holds warpgroup products (WgmmaMma) and, at its top level, one K slab
// loop over rings of TMA slabs (tessera/ir/slab_ring_loop.h: tma Stages filling slot k % B of
// rings of B >= 2 slabs, AsyncWait(keep=0), the step; double_buffer leaves it so), with knob
// PRODUCER = warpgroup: `Tile(axes=(...)):` becomes `Tile(axes=(...), producer=warpgroup):`, its
// body unchanged. materialize lowers that Tile (docs/ir.md, "Warp specialization"): the block gets
// one more warpgroup, which lowers its registers (setmaxnreg.dec) and whose first thread
// runs the slab loop's copies, each slot's after waiting on the ring's `bar_empty`; the THREAD axes'
// warpgroups (the consumers) raise theirs (setmaxnreg.inc), wait for each slab's copies and free its
// slot (one arrival per warpgroup on `bar_empty`) after the step. The producer runs up to B slabs
// ahead of the consumers, which never wait for a whole block again; pipeline_k_outer leaves such a
// Tile alone.
// Accepts: Tile IR. The knob is asked only where the rewrite applies: the device has setmaxnreg
//   (features.wgmma, sm_90a), the THREAD axes are whole warpgroups with room for one more in a block
//   (device.max_threads_per_block), the Tile has no other Stage or AsyncWait and no block Combine
//   (which would wait for the whole block), and no Stage origin names a THREAD axis (the producer
//   does not have the consumers' thread indices).
// Knob PRODUCER (none | warpgroup). Heuristic: none: whether the producer's extra warpgroup pays
//   for itself has not been measured on a GPU yet; the tuner tries it.
// Guarantees: the same values, products and order of accumulation; only who issues the copies and
//   how the threads wait for them change.
// Tests: tests/golden/specialize_warps/ (IR in/out), tests/golden/materialize/ (the lowering),
//   tests/unit/sim_warp_specialization_test.cpp (producer and consumers on the simulator, planted
//   faults), WgmmaTest in tests/e2e/random_knobs_test.cpp (the corpus with the knob sampled).
#include <memory>
#include <string>
#include <vector>

#include "tessera/ir/expr.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/slab_ring_loop.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

constexpr int64_t kWarpgroup = kWarpgroupThreads;

std::vector<AttrValue> producer_values(bool offered) {
  std::vector<AttrValue> values = {std::string(spelling(TileProducer::None))};
  if (offered) values.push_back(std::string(spelling(TileProducer::Warpgroup)));
  return values;
}

// Why the Tile cannot get a producer warpgroup, or "" when it can.
std::string why_not(const Tile& tile, const DeviceDesc& device) {
  if (!device.features.wgmma) return "device " + device.name + " (" + device.arch + ") has no setmaxnreg (sm_90a)";
  if (tile.producer != TileProducer::None) return "the Tile already has a producer";
  if (!contains_warpgroup_products(tile.body)) return "no warpgroup products (wgmma)";
  int64_t threads = 1;
  std::vector<std::string> thread_axes;
  for (const TileAxis& a : tile.axes) {
    if (a.binding != AxisBinding::Thread) continue;
    threads *= a.extent;
    thread_axes.push_back(a.name);
  }
  if (threads % kWarpgroup != 0) return std::to_string(threads) + " threads are not whole warpgroups";
  if (threads + kWarpgroup > device.max_threads_per_block) return "no room for another warpgroup in the block";
  int rings = 0;
  for (const Stmt& s : tile.body) {
    const auto* loop = s.as<Loop>();
    std::optional<SlabRingLoop> ring = loop ? slab_ring_loop(*loop) : std::nullopt;
    if (ring && ring->all_tma) {
      ++rings;
      for (size_t i = 0; i < ring->stages; ++i)
        for (const Expr& o : loop->body[i].as<Stage>()->origin)
          for (const std::string& axis : thread_axes)
            if (mentions_var(o, axis)) return "a Stage origin names THREAD axis " + axis;
      if (contains_collective(Body(loop->body.begin() + static_cast<std::ptrdiff_t>(ring->stages) + 1, loop->body.end())))
        return "the slab loop's step holds a collective statement";
      continue;
    }
    if (loop != nullptr && contains_stmt_kind(loop->body, StmtKind::Stage))
      return "the slab loop " + loop->var + " does not fill rings of TMA slabs (double_buffer BUFFERS >= 2, tma_copy)";
    if (contains_collective({s})) return "a collective statement outside a K slab loop over TMA rings";
  }
  if (rings != 1) return rings == 0 ? "no K slab loop over rings of TMA slabs (BUFFERS >= 2, tma_copy)"
                                    : "more than one K slab loop";
  return {};
}

class SpecializeWarpsPass final : public TilePass {
 public:
  std::string_view name() const override { return "specialize_warps"; }
  std::string_view summary() const override {
    return "give a wgmma kernel's TMA copies to a producer warpgroup (warp specialization, sm_90a)";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  bool handles_tensor_cores() const override { return true; }  // marks the Tile; the body is unchanged
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"PRODUCER", KnobType::String, producer_values(true), std::nullopt,
                     "who issues the TMA copies of the K slab loop: none (every thread's block, between "
                     "barriers) or warpgroup (a producer warpgroup of its own, running ahead)"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile& tile, PassContext& ctx) override {
    if (std::string reason = why_not(tile, ctx.device()); !reason.empty()) {
      ctx.skip(node, reason);
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(AttrValue chosen,
                             ctx.choose("PRODUCER", node, producer_values(true), std::string(spelling(TileProducer::None))));
    if (parse_spelling<TileProducer>(std::get<std::string>(chosen)) != TileProducer::Warpgroup) return Status::ok();
    auto op = std::make_unique<TileOp>(tile_op);
    for (Stmt& s : op->body) {
      if (const auto* t = s.as<Tile>()) {
        Tile marked = *t;
        marked.producer = TileProducer::Warpgroup;
        s = Stmt(std::move(marked));
      }
    }
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_specialize_warps(Registry& r) {
  r.add_pass("specialize_warps", [] { return std::make_unique<SpecializeWarpsPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("specialize_warps", "1.0.0", ::tessera::register_specialize_warps)

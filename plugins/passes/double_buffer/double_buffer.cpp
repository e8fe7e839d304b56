// double_buffer: gives the staged slabs of a K slab loop a ring of 2 to 4 shared buffers.
//
// Rewrites: in a Tile kernel, each slab loop (a `# reduce` Loop with literal bounds b..e, e - b >= 2,
// whose own body starts with the Stages of its slabs, origins depending on the loop variable, as
// chunk_matmul_k + stage_inputs make them) gets, for each of those Stages, a ring of B slots: the
// Stage fills slot (k - b) % B and every load of its buffer names that slot first:
//     for a3 in 0..64:  # reduce                      for a3 in 0..64:  # reduce
//       x_smem = Stage(x, origin=(.., a3 * 32),   ->    x_smem = Stage(x, origin=(.., a3 * 32),
//                      slab=(a1:8@0, a4:32@1)) async                   slab=(a1:8@0, a4:32@1), slot=a3 % 2, slots=2) async
//       ...                                             ...
//       in0 = load x_smem[a1, a4]                        in0 = load x_smem[a3 % 2, a1, a4]
// Alone this changes only where slabs live; pipeline_k_outer then fills slot k+S-1 while slot k is
// read. A buffer qualifies only when every Stage and every load of it lies in that loop (one
// shared array, one shape). Stages already in a ring are left alone, and so are tma Stages whose
// slabs would not stay 128 bytes apart (each slot lands by 128-byte aligned box copies, stage_tma_boxes).
// Accepts: Tile IR; kernels without such a loop are left alone (nothing asked).
// Knob BUFFERS (int; candidates 1..4, 1 = off, those whose rings fit in device.smem_per_block
//   together with the kernel's other Stages, each counted with its alignment padding,
//   smem_footprint_bytes, and at most the loop's trip count). Heuristic: the largest candidate
//   whose shared memory per block still lets as many blocks reside on an SM as the threads allow
//   (device.max_threads_per_sm / threads per block, capped by device.max_blocks_per_sm: the
//   occupancy launch_geometry planned), counting device.smem_reserved_per_block; 1 when no ring fits
//   or when none of the ring's Stages is async or tma (synchronous copies cannot overlap the step).
//   Without a candidate above 1 the node is skipped with a reason and nothing is asked.
// Guarantees: same values (each slab is read from the slot it was staged to); names canonical.
// Tests: tests/golden/double_buffer/, tests/unit/ring_stage_test.cpp (the IR), and the matmul corpus
//   under random knobs (tests/e2e/random_knobs_test.cpp).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

constexpr int64_t kMaxBuffers = 4;

int64_t stage_bytes(const Graph& g, const Stage& s, int64_t slots) {
  const Node* src = g.find(s.buffer);
  int64_t elems = 1;
  for (size_t i = 0; i < s.slab.size(); ++i) elems *= s.slab[i].extent + (i + 1 == s.slab.size() ? s.pad : 0);
  return slots * elems * (src ? dtype_bytes(src->type.dtype) : 4);
}

// Where each buffer is staged and loaded: the Stages (by node) and the number of loads, kernel-wide.
class BufferUses final : public StmtVisitor {
 public:
  void visit_Stage(const Stage& s) override { stages[s.dst].push_back(&s); }
  void visit_Load(const Load& s) override { ++loads[s.buffer]; }
  void visit_LdMatrix(const LdMatrix& s) override { ++loads[s.buffer]; }  // a tensor-core fragment's rows
  void visit_WgmmaMma(const WgmmaMma& s) override {  // a warpgroup product's descriptors
    ++loads[s.a];
    ++loads[s.b];
  }
  std::map<std::string, std::vector<const Stage*>> stages;
  std::map<std::string, int64_t> loads;
};

// A slab loop and the buffers of its Stages that may get a ring.
struct RingLoop {
  const Loop* loop = nullptr;
  std::set<std::string> buffers;
};

// The slab loops of a kernel body (at any depth) and their ring candidates.
class RingLoopFinder final : public StmtVisitor {
 public:
  RingLoopFinder(const Graph& g, const BufferUses& kernel) : graph_(g), kernel_(kernel) {}
  void visit_Loop(const Loop& s) override {
    RingLoop ring{&s, {}};
    if (s.role == LoopRole::Reduce && s.begin.is(ExprKind::Int) && s.end.is(ExprKind::Int) &&
        s.end.int_value() - s.begin.int_value() >= 2) {
      BufferUses inside;
      inside.visit(s.body);
      for (const Stmt& st : s.body) {
        const auto* stage = st.as<Stage>();
        if (stage == nullptr) continue;
        bool follows_k = false;
        for (const Expr& o : stage->origin) follows_k |= mentions_var(o, s.var);
        const bool all_here =
            kernel_.stages.at(stage->dst).size() == 1 && inside.loads[stage->dst] == loads_of(stage->dst);
        if (follows_k && all_here && stage->slots == 1 && ringable(*stage)) ring.buffers.insert(stage->dst);
      }
    }
    if (!ring.buffers.empty()) {
      loops.push_back(std::move(ring));
      return;  // a nested slab loop would share the ring's buffers
    }
    StmtVisitor::visit_Loop(s);
  }
  std::vector<RingLoop> loops;

 private:
  // A tma Stage's ring slots must stay box copies, 128 bytes apart (stage_tma_boxes).
  bool ringable(const Stage& s) const {
    if (s.transport != StageTransport::Tma) return true;
    const Node* source = graph_.find(s.buffer);
    Stage ring = s;
    ring.slots = 2;
    return source != nullptr && static_cast<bool>(stage_tma_boxes(ring, source->type));
  }
  int64_t loads_of(const std::string& buffer) const {
    auto it = kernel_.loads.find(buffer);
    return it == kernel_.loads.end() ? 0 : it->second;
  }
  const Graph& graph_;
  const BufferUses& kernel_;
};

// Prepends the slot to every load of a ring buffer (and to the row an ldmatrix, or the start a
// wgmma descriptor, names in one).
class SlotLoads final : public StmtMutator {
 public:
  SlotLoads(const std::set<std::string>& buffers, Expr slot) : buffers_(buffers), slot_(std::move(slot)) {}
  Stmt mutate_Load(const Load& s, const Stmt& self) override {
    if (!buffers_.count(s.buffer)) return self;
    Load out = s;
    out.index.insert(out.index.begin(), slot_);
    return out;
  }
  Stmt mutate_LdMatrix(const LdMatrix& s, const Stmt& self) override {
    if (!buffers_.count(s.buffer)) return self;
    LdMatrix out = s;
    out.index.insert(out.index.begin(), slot_);
    return out;
  }
  Stmt mutate_WgmmaMma(const WgmmaMma& s, const Stmt& self) override {
    if (!buffers_.count(s.a) && !buffers_.count(s.b)) return self;
    WgmmaMma out = s;
    if (buffers_.count(s.a)) out.a_index.insert(out.a_index.begin(), slot_);
    if (buffers_.count(s.b)) out.b_index.insert(out.b_index.begin(), slot_);
    return out;
  }

 private:
  const std::set<std::string>& buffers_;
  Expr slot_;
};

// Gives the Stages of the chosen loops their rings.
class RingBuilder final : public StmtMutator {
 public:
  RingBuilder(const std::vector<RingLoop>& loops, int64_t slots) : loops_(loops), slots_(slots) {}
  Stmt mutate_Loop(const Loop& s, const Stmt& self) override {
    for (const RingLoop& ring : loops_) {
      if (ring.loop != &std::get<Loop>(self.variant())) continue;
      Expr slot = simplify((Expr::var(s.var) - s.begin) % Expr::int_(slots_));
      SlotLoads loads(ring.buffers, slot);
      Loop out = s;
      out.body.clear();
      for (const Stmt& st : s.body) {
        const auto* stage = st.as<Stage>();
        if (stage != nullptr && ring.buffers.count(stage->dst)) {
          Stage ringed = *stage;
          ringed.slots = slots_;
          ringed.slot = slot;
          out.body.push_back(ringed);
        } else {
          out.body.push_back(loads.mutate(st));
        }
      }
      return out;
    }
    return StmtMutator::mutate_Loop(s, self);
  }

 private:
  const std::vector<RingLoop>& loops_;
  int64_t slots_;
};

class DoubleBufferPass final : public TilePass {
 public:
  std::string_view name() const override { return "double_buffer"; }
  std::string_view summary() const override {
    return "ring-buffer the staged slabs of a K slab loop (2 to 4 slots)";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  bool handles_tensor_cores() const override { return true; }  // ldmatrix rows and wgmma starts name the slot as loads do
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"BUFFERS", KnobType::Int, {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}}, std::nullopt,
                     "slabs in the ring of each staged input of the K slab loop (1 = off)"}};
  }

  Status run_on_tile(Node& node, const TileOp& tile_op, const Tile& tile, PassContext& ctx) override {
    const Graph& g = ctx.graph();
    BufferUses uses;
    uses.visit(tile_op.body);
    RingLoopFinder finder(g, uses);
    finder.visit(tile_op.body);
    if (finder.loops.empty()) return Status::ok();

    // Shared memory: the ring buffers at B slots, everything else as it is.
    std::set<std::string> ringed;
    int64_t min_trips = 0;
    for (const RingLoop& r : finder.loops) {
      ringed.insert(r.buffers.begin(), r.buffers.end());
      const int64_t trips = r.loop->end.int_value() - r.loop->begin.int_value();
      min_trips = min_trips == 0 ? trips : std::min(min_trips, trips);
    }
    auto smem_at = [&](int64_t slots) {
      int64_t total = 0;
      for (const auto& [name, stages] : uses.stages) {
        int64_t largest = 0;
        for (const Stage* s : stages)
          largest = std::max(largest, smem_footprint_bytes(stage_bytes(g, *s, ringed.count(name) ? slots : s->slots), s->align));
        total += largest;
      }
      return total;
    };
    int64_t threads = 1;
    for (const TileAxis& a : tile.axes)
      if (a.binding == AxisBinding::Thread) threads *= a.extent;
    const DeviceDesc& d = ctx.device();
    int64_t planned_blocks = std::max<int64_t>(1, d.max_threads_per_sm / std::max<int64_t>(threads, 1));
    if (d.max_blocks_per_sm > 0) planned_blocks = std::min<int64_t>(planned_blocks, d.max_blocks_per_sm);

    // A ring pays off only when its copies can overlap the step (cp.async, pipeline_k_outer);
    // synchronous slabs (2-byte dtypes) keep one buffer unless the tuner asks for a ring.
    bool overlappable = false;
    for (const auto& [name, stages] : uses.stages)
      if (ringed.count(name))
        for (const Stage* s : stages)
          overlappable |= s->transport == StageTransport::Async || s->transport == StageTransport::Tma;
    std::vector<int64_t> candidates = {1};
    int64_t heuristic = 1;
    for (int64_t b = 2; b <= std::min(kMaxBuffers, min_trips); ++b) {
      const int64_t bytes = smem_at(b);
      if (bytes > d.smem_per_block) continue;
      candidates.push_back(b);
      const bool keeps_occupancy =
          d.smem_per_sm <= 0 || planned_blocks * (bytes + d.smem_reserved_per_block) <= d.smem_per_sm;
      if (keeps_occupancy && overlappable) heuristic = b;
    }
    if (candidates.size() == 1) {
      ctx.skip(node, "no ring of 2 or more slabs fits in the device's shared memory");
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(int64_t buffers, ctx.choose_int("BUFFERS", node, candidates, heuristic));
    if (buffers <= 1) return Status::ok();
    RingBuilder builder(finder.loops, buffers);
    auto op = std::make_unique<TileOp>(tile_op);
    op->body = canonicalize_names(builder.mutate_body(tile_op.body));
    node.op = std::move(op);
    return Status::ok();
  }
};

void register_double_buffer(Registry& r) {
  r.add_pass("double_buffer", [] { return std::make_unique<DoubleBufferPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("double_buffer", "1.0.0", ::tessera::register_double_buffer)

// fuse_stage_epilogue: computes an elementwise cone of staged slabs once per block, into a shared
// slab of its own, instead of once per output thread inside the K loop.
//
// Rewrites: when the reduce loop of a Tile kernel reads staged slabs through a cone of pure
// statements (loads of the staged buffers at one slab coordinate, elementwise Assigns and Selects
// of them) whose one result feeds the rest, and that coordinate leaves some THREAD axis out (the
// threads along it all compute the same elements: `silu(g) * u` feeding a down projection is
// computed by every output column's thread) and computes more than conversions (a bf16 operand's
// `cast` alone stays: cheaper than a barrier), the cone moves into a SlabMap right after the Stages
// (and their AsyncWait) that fill the slabs, computing every element of the slab once per block,
// and the reduce loop loads the result:
//     g_smem = Stage(g, ..)                      g_smem = Stage(g, ..)
//     u_smem = Stage(u, ..)                      u_smem = Stage(u, ..)
//     AsyncWait(keep=0)                          AsyncWait(keep=0)
//     for a6 in 0..32:  # reduce                 g_u_smem = SlabMap(f32[8, 32], a7):
//       in0 = load g_smem[a1, a6]          ->      in0 = load g_smem[a7 / 32, a7 % 32]
//       v0 = sigmoid(in0)                          ..
//       v1 = mul(in0, v0)                          g_u_smem[a7 / 32, a7 % 32] = v2
//       in1 = load u_smem[a1, a6]                for a6 in 0..32:  # reduce
//       v2 = mul(v1, in1)                          v2 = load g_u_smem[a1, a6]
//       ..                                         ..
// Each element is computed with the same operations as before, once (bit-identical values).
// Accepts: Tile IR after stage_inputs (and tma_copy / async_copy: the SlabMap goes after the
//   run's AsyncWait), before register_tile. A cone qualifies when its loads read buffers staged by
//   one run of Stages at the same coordinates (the slab's, one per slab dim), with equal slab
//   extents, its statements read nothing but the cone's values (no axes, no other values), one
//   of its values (an Assign or Select) is read outside it and the others only inside, and every
//   staged slab lies inside its source (each slab dim's extent divides the source's and its
//   origin is a multiple of it), so the SlabMap reads no element the copy left unwritten.
//   Kernels without such a cone are left alone.
// Knob FUSE (bool; asked per kernel that has a cone). Heuristic: true: the cone's elementwise
//   work drops by the extent of the THREAD axes its coordinate leaves out, for one barrier and
//   one shared slab per K step.
// Guarantees: same values; names canonical.
// Tests: tests/golden/fuse_stage_epilogue/, tests/e2e/random_knobs_test.cpp (the gated MLP's down
//   projection over staged gate and up slabs, on the simulator).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

// A cone found in one body.
struct Cone {
  std::vector<size_t> positions;             // its statements in the body, in order
  std::set<std::string> values;              // the names they bind
  std::string root;                          // the one value read outside the cone
  ValueType root_type;
  ExprList coords;                           // the slab coordinates of its loads
  std::vector<const Stage*> stages;          // the Stages whose buffers it loads
};

// The cone of `body` over the buffers `staged` fills (dst -> Stage), or nullopt.
std::optional<Cone> find_cone(const Body& body, const std::map<std::string, const Stage*>& staged) {
  Cone c;
  for (size_t i = 0; i < body.size(); ++i) {
    const Stmt& s = body[i];
    if (const auto* load = s.as<Load>()) {
      auto it = staged.find(load->buffer);
      if (it == staged.end()) continue;
      const size_t first = it->second->slots > 1 ? 1 : 0;
      const ExprList coords(load->index.begin() + static_cast<std::ptrdiff_t>(std::min(first, load->index.size())),
                            load->index.end());
      if (c.positions.empty()) c.coords = coords;
      else if (coords.size() != c.coords.size() ||
               !std::equal(coords.begin(), coords.end(), c.coords.begin(),
                           [](const Expr& a, const Expr& b) { return structurally_equal(a, b); }))
        continue;
      c.positions.push_back(i);
      c.values.insert(load->dst);
      continue;
    }
    if (!(s.is<Assign>() || s.is<Select>()) || c.values.empty()) continue;
    const std::set<std::string> used = own_used_names(s);
    if (used.empty() || !std::all_of(used.begin(), used.end(), [&](const std::string& n) { return c.values.count(n) > 0; }))
      continue;
    c.positions.push_back(i);
    for (const std::string& n : own_bound_names(s)) c.values.insert(n);
  }
  // The values read outside the cone: exactly one, computed (not a bare load).
  std::set<size_t> in_cone(c.positions.begin(), c.positions.end());
  std::set<std::string> escaping;
  for (size_t i = 0; i < body.size(); ++i) {
    if (in_cone.count(i)) continue;
    for (const std::string& n : used_names(Body{body[i]}))
      if (c.values.count(n)) escaping.insert(n);
  }
  if (escaping.size() != 1) return std::nullopt;
  c.root = *escaping.begin();
  // Drop the statements the root does not need (a cone value nobody reads stays where it was).
  std::set<std::string> needed = {c.root};
  std::vector<size_t> kept;
  for (size_t k = c.positions.size(); k-- > 0;) {
    const Stmt& s = body[c.positions[k]];
    const std::vector<std::string> bound = own_bound_names(s);
    if (std::none_of(bound.begin(), bound.end(), [&](const std::string& n) { return needed.count(n) > 0; })) continue;
    kept.push_back(c.positions[k]);
    for (const std::string& n : own_used_names(s)) needed.insert(n);
    if (const auto* a = s.as<Assign>(); a != nullptr && a->dst == c.root) c.root_type = a->type;
    if (const auto* sel = s.as<Select>(); sel != nullptr && sel->dst == c.root) c.root_type = sel->type;
  }
  std::reverse(kept.begin(), kept.end());
  c.positions = kept;
  const Stmt& root_stmt = body[c.positions.back()];
  if (!(root_stmt.is<Assign>() || root_stmt.is<Select>()) || !c.root_type.is_scalar()) return std::nullopt;
  // Work worth a barrier: some function other than a conversion (a bf16 operand's `cast` alone is
  // one instruction per use, cheaper than a shared slab of f32 and a barrier).
  if (std::none_of(c.positions.begin(), c.positions.end(), [&](size_t p) {
        const auto* a = body[p].as<Assign>();
        return body[p].is<Select>() || (a != nullptr && a->op != ElementwiseFn::Cast);
      }))
    return std::nullopt;
  // Values the kept statements bind, and the Stages their loads read.
  c.values.clear();
  for (size_t p : c.positions) {
    for (const std::string& n : own_bound_names(body[p])) c.values.insert(n);
    if (const auto* load = body[p].as<Load>()) {
      const Stage* st = staged.at(load->buffer);
      if (std::find(c.stages.begin(), c.stages.end(), st) == c.stages.end()) c.stages.push_back(st);
    }
  }
  // Every other cone value is read only inside the cone.
  for (size_t i = 0; i < body.size(); ++i) {
    if (std::find(c.positions.begin(), c.positions.end(), i) != c.positions.end()) continue;
    for (const std::string& n : used_names(Body{body[i]}))
      if (c.values.count(n) && n != c.root) return std::nullopt;
  }
  return c;
}

// Whether the slab of `s` lies inside its source: every slab dim's extent divides the source's
// dim and its origin is a multiple of the extent.
bool slab_inside_source(const Stage& s, const Graph& g, const RangeMap& ranges) {
  const Node* src = g.find(s.buffer);
  if (src == nullptr || s.origin.size() != static_cast<size_t>(src->type.rank())) return false;
  for (const SlabDim& d : s.slab) {
    if (d.stride != 1 || d.source_dim < 0 || d.source_dim >= src->type.rank()) return false;
    if (src->type.dim(d.source_dim) % d.extent != 0) return false;
    const Expr rem = simplify(s.origin[static_cast<size_t>(d.source_dim)] % Expr::int_(d.extent), ranges);
    if (!rem.is(ExprKind::Int) || rem.int_value() != 0) return false;
  }
  return true;
}

bool same_extents(const Stage& a, const Stage& b) {
  if (a.slab.size() != b.slab.size()) return false;
  for (size_t d = 0; d < a.slab.size(); ++d)
    if (a.slab[d].extent != b.slab[d].extent) return false;
  return true;
}

// Finds the cones after each run of Stages and, with `rewrite`, moves them into SlabMaps.
class ConeFuser final : public StmtMutator {
 public:
  ConeFuser(const Graph& g, std::vector<TileAxis> threads, RangeMap ranges, bool rewrite, std::set<std::string> taken)
      : g_(g), threads_(std::move(threads)), ranges_(std::move(ranges)), rewrite_(rewrite), taken_(std::move(taken)) {}
  int found = 0;
  std::string why_not;  // the last reason a cone was refused

  Body mutate_body(const Body& b) override {
    Body out;
    std::map<std::string, const Stage*> run;
    size_t i = 0;
    while (i < b.size()) {
      if (!b[i].is<Stage>()) {
        out.push_back(mutate(b[i]));
        ++i;
        continue;
      }
      // A run of Stages (and the AsyncWait that makes them visible).
      run.clear();
      for (; i < b.size() && b[i].is<Stage>(); ++i) {
        run[b[i].as<Stage>()->dst] = b[i].as<Stage>();
        out.push_back(b[i]);
      }
      if (i < b.size() && b[i].is<AsyncWait>()) out.push_back(b[i++]);
      // The statements after the run up to the next one: look for cones in their loops.
      std::vector<SlabMap> maps;
      for (; i < b.size() && !b[i].is<Stage>(); ++i) out.push_back(fuse_in(b[i], run, maps));
      // The SlabMaps go right after the run (and its AsyncWait).
      size_t at = out.size();
      while (at > 0 && !out[at - 1].is<Stage>() && !out[at - 1].is<AsyncWait>()) --at;
      for (SlabMap& m : maps) out.insert(out.begin() + static_cast<std::ptrdiff_t>(at++), std::move(m));
    }
    return out;
  }

 private:
  // `s` with the cones of the loops it holds (at any depth) moved into `maps`.
  Stmt fuse_in(const Stmt& s, const std::map<std::string, const Stage*>& run, std::vector<SlabMap>& maps) {
    const auto* loop = s.as<Loop>();
    if (loop == nullptr) return mutate(s);
    if (contains_collective(loop->body)) return mutate(s);  // its own runs of Stages
    Loop copy = *loop;
    Body body;
    for (const Stmt& inner : loop->body) body.push_back(fuse_in(inner, run, maps));
    copy.body = std::move(body);
    std::optional<Cone> cone = find_cone(copy.body, run);
    if (!cone) return copy;
    if (!qualifies(*cone)) return copy;
    ++found;
    if (!rewrite_) return copy;
    // The shared slab: named after the sources, the shape of their slabs.
    std::string name;
    for (const Stage* st : cone->stages) name += (name.empty() ? "" : "_") + st->buffer;
    name = fresh_name(name + "_smem", taken_);
    SlabMap map;
    map.dst = name;
    map.dtype = cone->root_type.dtype;
    for (const SlabDim& d : cone->stages.front()->slab) map.shape.push_back(d.extent);
    map.var = fresh_name("f", taken_);
    ExprList element;
    int64_t stride = 1;
    for (size_t d = map.shape.size(); d-- > 0;) {
      Expr e = Expr::var(map.var);
      if (stride > 1) e = e / Expr::int_(stride);
      if (d > 0) e = e % Expr::int_(map.shape[d]);
      element.insert(element.begin(), e);
      stride *= map.shape[d];
    }
    for (size_t p : cone->positions) {
      const Stmt& st = copy.body[p];
      if (const auto* load = st.as<Load>()) {
        Load moved = *load;
        const Stage* stage = run.at(load->buffer);
        moved.index.resize(stage->slots > 1 ? 1 : 0);  // keep a ring's slot
        moved.index.insert(moved.index.end(), element.begin(), element.end());
        map.body.push_back(std::move(moved));
      } else {
        map.body.push_back(st);
      }
    }
    map.body.push_back(Write{name, element, Expr::value(cone->root)});
    // The loop reads the root from the shared slab where the cone computed it.
    Body rewritten;
    for (size_t k = 0; k < copy.body.size(); ++k) {
      if (std::find(cone->positions.begin(), cone->positions.end(), k) == cone->positions.end()) {
        rewritten.push_back(copy.body[k]);
      } else if (k == cone->positions.back()) {
        rewritten.push_back(Load{cone->root, name, cone->coords, cone->root_type});
      }
    }
    copy.body = std::move(rewritten);
    maps.push_back(std::move(map));
    return copy;
  }

  bool qualifies(const Cone& c) {
    for (const Stage* st : c.stages) {
      if (!same_extents(*st, *c.stages.front()) || st->slab.size() != c.coords.size()) {
        why_not = "the cone's staged slabs differ in shape";
        return false;
      }
      if (!slab_inside_source(*st, g_, ranges_)) {
        why_not = "the slab of " + st->buffer + " may reach past its source (a tail the copy leaves unwritten)";
        return false;
      }
    }
    // Some THREAD axis must be left out of the coordinates: its threads share the elements.
    for (const TileAxis& t : threads_)
      if (std::none_of(c.coords.begin(), c.coords.end(), [&](const Expr& e) { return mentions_var(e, t.name); }))
        return true;
    why_not = "every THREAD axis indexes the cone's elements (no thread recomputes another's)";
    return false;
  }

  const Graph& g_;
  std::vector<TileAxis> threads_;
  RangeMap ranges_;
  bool rewrite_;
  std::set<std::string> taken_;
};

class FuseStageEpiloguePass final : public TilePass {
 public:
  std::string_view name() const override { return "fuse_stage_epilogue"; }
  std::string_view summary() const override {
    return "compute an elementwise cone of staged slabs once per block into a shared slab";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"FUSE", KnobType::Bool, {}, std::nullopt,
                     "compute the cone once per block in a SlabMap instead of in every output thread"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile& tile, PassContext& ctx) override {
    std::vector<TileAxis> threads;
    RangeMap ranges;
    for (const TileAxis& a : tile.axes) {
      ranges[a.name] = Interval{0, a.extent - 1};
      if (a.binding == AxisBinding::Thread) threads.push_back(a);
    }
    add_loop_ranges(tile.body, ranges);
    const std::set<std::string> taken = bound_names(kernel.body);
    ConeFuser probe(ctx.graph(), threads, ranges, /*rewrite=*/false, taken);
    probe.mutate_body(kernel.body);
    if (probe.found == 0) {
      if (!probe.why_not.empty()) ctx.skip(node, probe.why_not);
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(bool fuse, ctx.choose_bool("FUSE", node, true));
    if (!fuse) return Status::ok();
    ConeFuser rewriter(ctx.graph(), threads, ranges, /*rewrite=*/true, taken);
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(rewriter.mutate_body(kernel.body));
    node.op = std::move(op);
    return Status::ok();
  }

 private:
  // The ranges of the loops with literal bounds (names are unique in a canonical kernel).
  static void add_loop_ranges(const Body& body, RangeMap& ranges) {
    struct Walker final : StmtVisitor {
      RangeMap* r = nullptr;
      void visit_Loop(const Loop& s) override {
        if (s.begin.is(ExprKind::Int) && s.end.is(ExprKind::Int) && s.end.int_value() > s.begin.int_value())
          (*r)[s.var] = Interval{s.begin.int_value(), s.end.int_value() - 1};
        StmtVisitor::visit_Loop(s);
      }
    } w;
    w.r = &ranges;
    w.visit(body);
  }
};

void register_fuse_stage_epilogue(Registry& r) {
  r.add_pass("fuse_stage_epilogue", [] { return std::make_unique<FuseStageEpiloguePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("fuse_stage_epilogue", "1.0.0", ::tessera::register_fuse_stage_epilogue)

// stage_inputs: stages reused input slabs of a Tile kernel in shared memory.
//
// Rewrites: for each chosen graph-input buffer x, inserts
//     x_smem = Stage(x, origin=(o0, .., on-1), slab=(v:E@d, ..))
// at the start of its scope and turns every `load x[...]` there into `load x_smem[i0, .., im]`.
// The scope is the Tile body; when x has no slab there (or it does not fit) and every load of x
// lies in uniform serial Loops directly in the Tile body that loop over chunks (the chunk loops of
// chunk_reduce, not a one-element-per-step K loop), each such loop's body (one Stage per loop, all
// named x_smem: they share one shared buffer). Stages go before any tail guard (uniform flow).
// A buffer has a slab when every dim of every load index is `u + v`, u block-uniform (BLOCK and
// CLUSTER axes and the loop variables around the scope) and v one THREAD axis, StridedLoop
// variable or Loop variable bound in the scope with a known range [b, b + E) (slab dim v:E, origin
// u + b, shared index v - b), or is uniform (dim not in the slab); all loads must agree on the
// origin.
// Accepts: Tile IR (TileOp nodes whose body is one Tile); other nodes are left alone.
// Knob STAGE (string; candidates "none" and the subsets of the candidate buffers that fit together
//   in device.smem_per_block minus existing Stages, each slab counted with the alignment padding it
//   may need (smem_footprint_bytes)). A subset names its buffers by their position among the
//   node's inputs (the first, if one is read twice), comma-joined in input order: `in0,in2` stages
//   the node's first and third inputs. Never by name: a value is recorded and replayed per kernel
//   structure (tessera/pass/kernel_identity.h), so it must mean the same buffer on every layer's
//   copy of a kernel and in every program (`l3_w` on one layer is `l4_w` on the next).
//   Positions rather than operand roles (A/B of a contraction): the pass stages inputs of any Tile
//   kernel (norms, softmax, elementwise, matmuls with epilogue inputs), most of which have no A/B,
//   and a position names every input, operand or not, the same way.
//   Heuristic: the reused candidates (loaded by >= 2 statements, or an element read by several
//   threads or iterations), added in input order while they fit.
// Guarantees: same values loaded; slabs may cover elements past x's bounds (tails), which the
//   copy skips and the kernel never reads. Names canonical.
// Tests: tests/golden/stage_inputs/, tests/unit/smem_passes_test.cpp.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
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

// Subsets beyond this many candidate buffers are not all enumerated (2^4 = 16 choices at most).
constexpr size_t kMaxEnumeratedBuffers = 4;

// A variable bound inside the scope: it ranges over [base, base + extent) with a block-uniform
// base; `deps` are the variables its value follows (itself, and the THREAD axis of a StridedLoop).
struct InnerVar {
  std::optional<Expr> base;  // unset: the range is unknown
  int64_t extent = 0;
  std::set<std::string> deps;
};

// One load of a graph input inside a scope, with its slab when it has one.
struct LoadSite {
  std::string buffer;
  ExprList index;
  std::vector<std::string> enclosing;  // inner loop variables around the load
  bool has_slab = false;
  std::string why_not;                 // when !has_slab
  ExprList origin;                     // one per source dim
  std::vector<SlabDim> slab;           // in source-dim order
  ExprList smem_index;                 // one per slab dim
  std::set<std::string> follows;       // variables the index follows (closure through deps)
};

// A signed term of a flattened sum.
struct Term {
  Expr e;
  bool negative = false;
};

void flatten_sum(const Expr& e, bool negative, std::vector<Term>& out) {
  if (e.is(ExprKind::Add)) {
    flatten_sum(e.operand(0), negative, out);
    flatten_sum(e.operand(1), negative, out);
  } else if (e.is(ExprKind::Sub)) {
    flatten_sum(e.operand(0), negative, out);
    flatten_sum(e.operand(1), !negative, out);
  } else {
    out.push_back(Term{e, negative});
  }
}

Expr rebuild_sum(const std::vector<Term>& terms) {
  Expr sum = Expr::int_(0);
  for (const Term& t : terms) sum = t.negative ? sum - t.e : sum + t.e;
  return simplify(sum);
}

// The largest value of `end - base` (so v - base < it for base <= v < end), or nullopt.
std::optional<int64_t> extent_above(const Expr& end, const Expr& base, const RangeMap& ranges) {
  if (end.is(ExprKind::Min)) {
    std::optional<int64_t> a = extent_above(end.operand(0), base, ranges);
    std::optional<int64_t> b = extent_above(end.operand(1), base, ranges);
    if (a && b) return std::min(*a, *b);
    return a ? a : b;
  }
  // Cancel the terms end and base share first: interval arithmetic forgets they are equal.
  std::vector<Term> end_terms, base_terms;
  flatten_sum(end, false, end_terms);
  flatten_sum(base, true, base_terms);
  for (auto it = base_terms.begin(); it != base_terms.end();) {
    auto match = std::find_if(end_terms.begin(), end_terms.end(), [&](const Term& t) {
      return t.negative != it->negative && structurally_equal(t.e, it->e);
    });
    if (match == end_terms.end()) {
      ++it;
      continue;
    }
    end_terms.erase(match);
    it = base_terms.erase(it);
  }
  end_terms.insert(end_terms.end(), base_terms.begin(), base_terms.end());
  std::optional<Interval> b = bound_of(rebuild_sum(end_terms), ranges);
  if (!b || b->hi <= 0) return std::nullopt;
  return b->hi;
}

bool all_in(const Expr& e, const std::set<std::string>& names) {
  for (const std::string& v : free_vars(e))
    if (!names.count(v)) return false;
  return true;
}

// Walks one scope, recording the loads of `inputs` with their slabs.
class ScopeAnalysis final : public StmtVisitor {
 public:
  ScopeAnalysis(const Tile& tile, std::set<std::string> uniform, RangeMap ranges, std::set<std::string> inputs)
      : uniform_(std::move(uniform)), ranges_(std::move(ranges)), inputs_(std::move(inputs)) {
    for (const TileAxis& a : tile.axes) {
      if (a.binding != AxisBinding::Thread) continue;
      thread_axes_.push_back(a.name);
      inner_[a.name] = InnerVar{Expr::int_(0), a.extent, {a.name}};
      ranges_[a.name] = Interval{0, a.extent - 1};
    }
  }

  using StmtVisitor::visit;

  void visit_Load(const Load& load) override {
    if (inputs_.count(load.buffer)) sites.push_back(site(load));
  }
  void visit_StridedLoop(const StridedLoop& sl) override {
    bind_strided(sl);
    enclosing_.push_back(sl.var);
    StmtVisitor::visit_StridedLoop(sl);
    enclosing_.pop_back();
  }
  void visit_Loop(const Loop& loop) override {
    bind_loop(loop);
    enclosing_.push_back(loop.var);
    StmtVisitor::visit_Loop(loop);
    enclosing_.pop_back();
  }

  const std::vector<std::string>& thread_axes() const { return thread_axes_; }
  std::vector<LoadSite> sites;

 private:
  // StridedLoop(v = u + t; < end; += step): v in [u, u + max(end - u)), following t.
  void bind_strided(const StridedLoop& sl) {
    InnerVar var;
    var.deps = {sl.var};
    std::vector<Term> terms, uniform_terms;
    flatten_sum(sl.begin, false, terms);
    int thread_terms = 0;
    bool ok = true;
    for (const Term& t : terms) {
      if (all_in(t.e, uniform_)) {
        uniform_terms.push_back(t);
      } else if (!t.negative && t.e.is(ExprKind::Var) && inner_.count(t.e.name())) {
        ++thread_terms;
        const InnerVar& follows = inner_[t.e.name()];
        var.deps.insert(follows.deps.begin(), follows.deps.end());
      } else {
        ok = false;
      }
    }
    if (ok && thread_terms <= 1) {
      Expr base = rebuild_sum(uniform_terms);
      if (std::optional<int64_t> extent = extent_above(sl.end, base, ranges_)) {
        var.base = base;
        var.extent = *extent;
      }
    }
    if (std::optional<Interval> hi = bound_of(sl.end, ranges_); hi && hi->hi >= 1)
      ranges_[sl.var] = Interval{0, hi->hi - 1};
    inner_[sl.var] = var;
  }

  void bind_loop(const Loop& loop) {
    InnerVar var;
    var.deps = {loop.var};
    for (const Expr& e : {loop.begin, loop.end})
      for (const std::string& v : free_vars(e))
        if (auto it = inner_.find(v); it != inner_.end()) var.deps.insert(it->second.deps.begin(), it->second.deps.end());
    if (all_in(loop.begin, uniform_)) {
      if (std::optional<int64_t> extent = extent_above(loop.end, loop.begin, ranges_)) {
        var.base = loop.begin;
        var.extent = *extent;
      }
    }
    std::optional<Interval> lo = bound_of(loop.begin, ranges_), hi = bound_of(loop.end, ranges_);
    if (lo && hi && hi->hi - 1 >= lo->lo) ranges_[loop.var] = Interval{lo->lo, hi->hi - 1};
    inner_[loop.var] = var;
  }

  LoadSite site(const Load& load) {
    LoadSite out;
    out.buffer = load.buffer;
    out.index = load.index;
    out.enclosing = enclosing_;
    for (const Expr& e : load.index)
      for (const std::string& v : free_vars(e)) {
        auto it = inner_.find(v);
        if (it == inner_.end()) out.follows.insert(v);
        else out.follows.insert(it->second.deps.begin(), it->second.deps.end());
      }
    for (size_t d = 0; d < load.index.size(); ++d) {
      std::vector<Term> terms, rest;
      flatten_sum(load.index[d], false, terms);
      std::optional<std::string> inner;
      for (const Term& t : terms) {
        if (all_in(t.e, uniform_)) {
          rest.push_back(t);
        } else if (!inner && !t.negative && t.e.is(ExprKind::Var) && inner_.count(t.e.name())) {
          inner = t.e.name();
        } else {
          out.why_not = "index " + load.index[d].str() + " is not a block-uniform offset plus one variable";
          return out;
        }
      }
      Expr u = rebuild_sum(rest);
      if (!inner) {
        out.origin.push_back(u);
        continue;
      }
      const InnerVar& var = inner_[*inner];
      if (!var.base) {
        out.why_not = "the range of " + *inner + " is unknown";
        return out;
      }
      out.origin.push_back(simplify(u + *var.base));
      out.slab.push_back(SlabDim{*inner, var.extent, static_cast<int64_t>(d)});
      out.smem_index.push_back(simplify(Expr::var(*inner) - *var.base));
    }
    out.has_slab = true;
    return out;
  }

  std::set<std::string> uniform_;
  RangeMap ranges_;
  std::set<std::string> inputs_;
  std::vector<std::string> thread_axes_;
  std::map<std::string, InnerVar> inner_;
  std::vector<std::string> enclosing_;
};

// All loads of one buffer in one scope, merged into one Stage.
struct Group {
  int scope = -1;  // -1: the Tile body; else the position of the chunk loop in the Tile body
  std::vector<LoadSite> loads;
  ExprList origin;
  std::vector<SlabDim> slab;
};

struct BufferPlan {
  std::string buffer;
  size_t input = 0;  // position among the node's inputs (its first, when read twice)
  std::vector<Group> groups;
  int64_t bytes = 0;  // of the shared buffer (the largest group)
  // What it adds to the kernel's shared memory, alignment padding included (the Stage this pass
  // writes has the default layout).
  int64_t footprint() const { return smem_footprint_bytes(bytes, kSmemAlign); }
  bool reused = false;
  std::string why_not;  // empty when the buffer is a candidate
};

// Merges a group's loads into one slab; returns why it cannot when they disagree.
std::string merge_group(Group& g) {
  for (const LoadSite& l : g.loads)
    if (!l.has_slab) return l.why_not;
  const LoadSite& first = g.loads.front();
  g.origin = first.origin;
  g.slab = first.slab;
  for (const LoadSite& l : g.loads) {
    bool same = l.slab.size() == g.slab.size();
    for (size_t d = 0; same && d < l.origin.size(); ++d) same = structurally_equal(l.origin[d], g.origin[d]);
    for (size_t i = 0; same && i < l.slab.size(); ++i) same = l.slab[i].source_dim == g.slab[i].source_dim;
    if (!same) return "its loads disagree on the slab origin";
    for (size_t i = 0; i < l.slab.size(); ++i) g.slab[i].extent = std::max(g.slab[i].extent, l.slab[i].extent);
  }
  return "";
}

// Reused: several load statements, or one whose index ignores a thread axis or an enclosing loop.
bool is_reused(const Group& g, const Tile& tile) {
  if (g.loads.size() >= 2) return true;
  for (const LoadSite& l : g.loads) {
    for (const TileAxis& a : tile.axes)
      if (a.binding == AxisBinding::Thread && a.extent > 1 && !l.follows.count(a.name)) return true;
    for (const std::string& v : l.enclosing)
      if (!l.follows.count(v)) return true;
  }
  return false;
}

// STAGE's spelling of a set of inputs: their roles (`in<position>`) comma-joined, or "none".
std::string stage_value(const std::vector<size_t>& inputs) {
  if (inputs.empty()) return "none";
  std::string s;
  for (size_t position : inputs) s += (s.empty() ? "in" : ",in") + std::to_string(position);
  return s;
}

int64_t stage_bytes(const Graph& g, const Stage& s) {
  const Node* src = g.find(s.buffer);
  int64_t elems = 1;
  for (size_t i = 0; i < s.slab.size(); ++i) elems *= s.slab[i].extent + (i + 1 == s.slab.size() ? s.pad : 0);
  return s.slots * elems * (src ? dtype_bytes(src->type.dtype) : 4);
}

class ExistingStageBytes final : public StmtVisitor {
 public:
  explicit ExistingStageBytes(const Graph& g) : graph_(g) {}
  void visit_Stage(const Stage& s) override {
    int64_t& b = by_name_[s.dst];
    b = std::max(b, smem_footprint_bytes(stage_bytes(graph_, s), s.align));
  }
  int64_t total() const {
    int64_t t = 0;
    for (const auto& [name, b] : by_name_) t += b;
    return t;
  }

 private:
  const Graph& graph_;
  std::map<std::string, int64_t> by_name_;
};

class StageInputsPass final : public TilePass {
 public:
  std::string_view name() const override { return "stage_inputs"; }
  std::string_view summary() const override { return "stage reused input slabs of a Tile kernel in shared memory"; }
  std::vector<Dialect> stages() const override { return {Dialect::Tile}; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"STAGE", KnobType::String, {}, std::nullopt,
                     "inputs to stage in shared memory, by position among the node's inputs: none, or e.g. "
                     "in0,in2 (in input order; per node)"}};
  }

  Status run_on_tile(Node& node, const TileOp& kernel, const Tile&, PassContext& ctx) override {
    return stage_node(ctx.graph(), node, kernel, ctx);
  }

 private:
  // A uniform serial loop over chunks: its bounds are block-uniform and its body loops over the
  // chunk, directly or under a tail guard (launch_geometry puts the guard inside a slab loop).
  // (A plain K loop, one element per step, would refill a Stage at every step.)
  static bool is_chunk_loop(const Stmt& s, const std::set<std::string>& block_axes) {
    const auto* loop = s.as<Loop>();
    if (loop == nullptr || !all_in(loop->begin, block_axes) || !all_in(loop->end, block_axes)) return false;
    auto loops_over_chunk = [](const Body& body) {
      return std::any_of(body.begin(), body.end(),
                         [](const Stmt& inner) { return inner.is<StridedLoop>() || inner.is<Loop>(); });
    };
    if (loops_over_chunk(loop->body)) return true;
    return loop->body.size() == 1 && loop->body[0].is<Cond>() && loop->body[0].as<Cond>()->else_body.empty() &&
           loops_over_chunk(loop->body[0].as<Cond>()->then_body);
  }

  // Merges each group's loads into its slab; sets bytes and reuse, or why the plan is impossible.
  static void evaluate(BufferPlan& p, const Tile& tile, int64_t elem, int64_t budget) {
    for (Group& grp : p.groups) {
      if (std::string why = merge_group(grp); !why.empty()) {
        p.why_not = p.buffer + ": " + why;
        return;
      }
      if (grp.slab.empty()) {
        p.why_not = p.buffer + ": every load reads one block-uniform element";
        return;
      }
      int64_t bytes = elem;
      for (const SlabDim& d : grp.slab) bytes *= d.extent;
      p.bytes = std::max(p.bytes, bytes);
      p.reused |= is_reused(grp, tile);
    }
    if (p.footprint() > budget)
      p.why_not = p.buffer + ": its slab (" + std::to_string(p.bytes) + " bytes) exceeds the " +
                  std::to_string(budget) + " bytes of shared memory left";
  }

  static std::vector<BufferPlan> plan(const Graph& g, const Node& n, const Tile& tile, int64_t budget) {
    std::set<std::string> block_axes;
    RangeMap block_ranges;
    for (const TileAxis& a : tile.axes)
      if (a.binding == AxisBinding::Block || a.binding == AxisBinding::Cluster) {  // the block's rank in its cluster too
        block_axes.insert(a.name);
        block_ranges[a.name] = Interval{0, a.extent - 1};
      }
    std::set<std::string> inputs;
    for (const std::string& in : n.inputs)
      if (in != n.id()) inputs.insert(in);

    ScopeAnalysis whole(tile, block_axes, block_ranges, inputs);
    whole.visit(tile.body);
    std::map<int, std::vector<LoadSite>> per_chunk;  // chunk loop position -> its loads
    for (size_t i = 0; i < tile.body.size(); ++i) {
      if (!is_chunk_loop(tile.body[i], block_axes)) continue;
      const auto& loop = *tile.body[i].as<Loop>();
      std::set<std::string> uniform = block_axes;
      uniform.insert(loop.var);
      RangeMap ranges = block_ranges;
      if (auto hi = bound_of(loop.end, block_ranges); hi && hi->hi >= 1) ranges[loop.var] = Interval{0, hi->hi - 1};
      ScopeAnalysis chunk(tile, uniform, ranges, inputs);
      chunk.visit(loop.body);
      per_chunk[static_cast<int>(i)] = std::move(chunk.sites);
    }

    std::vector<BufferPlan> plans;
    for (size_t position = 0; position < n.inputs.size(); ++position) {
      const std::string& buffer = n.inputs[position];
      if (!inputs.count(buffer) || std::any_of(plans.begin(), plans.end(), [&](auto& p) { return p.buffer == buffer; }))
        continue;
      const Node* src = g.find(buffer);
      const int64_t elem = src ? dtype_bytes(src->type.dtype) : 4;
      // One Stage for the whole Tile is preferred; per-chunk Stages when that slab is impossible
      // or too large and every load sits in a chunk loop.
      BufferPlan whole_plan;
      whole_plan.buffer = buffer;
      whole_plan.input = position;
      whole_plan.groups.push_back(Group{});
      for (const LoadSite& l : whole.sites)
        if (l.buffer == buffer) whole_plan.groups[0].loads.push_back(l);
      if (whole_plan.groups[0].loads.empty()) continue;  // not loaded by this kernel
      evaluate(whole_plan, tile, elem, budget);
      BufferPlan chunk_plan;
      chunk_plan.buffer = buffer;
      chunk_plan.input = position;
      size_t in_chunks = 0;
      for (auto& [pos, sites] : per_chunk) {
        Group grp;
        grp.scope = pos;
        for (const LoadSite& l : sites)
          if (l.buffer == buffer) grp.loads.push_back(l);
        in_chunks += grp.loads.size();
        if (!grp.loads.empty()) chunk_plan.groups.push_back(std::move(grp));
      }
      if (whole_plan.why_not.empty() || in_chunks != whole_plan.groups[0].loads.size()) {
        plans.push_back(std::move(whole_plan));
        continue;
      }
      evaluate(chunk_plan, tile, elem, budget);
      plans.push_back(chunk_plan.why_not.empty() ? std::move(chunk_plan) : std::move(whole_plan));
    }
    return plans;
  }

  Status stage_node(const Graph& g, Node& n, const TileOp& kernel, PassContext& ctx) {
    const Tile& tile = *kernel.tile();
    ExistingStageBytes existing(g);
    existing.visit(tile.body);
    const int64_t budget = ctx.device().smem_per_block - existing.total();
    std::vector<BufferPlan> plans = plan(g, n, tile, budget);

    std::vector<const BufferPlan*> candidates;
    std::vector<std::string> reasons;
    for (const BufferPlan& p : plans) {
      if (p.why_not.empty()) candidates.push_back(&p);
      else reasons.push_back(p.why_not);
    }
    if (candidates.empty()) {
      std::string why = "no input slab can be staged";
      for (const std::string& r : reasons) why += "; " + r;
      ctx.skip(n, why);
      return Status::ok();
    }

    // Subsets that fit together, in mask order; "none" first.
    std::vector<AttrValue> choices = {std::string("none")};
    auto add_subset = [&](const std::vector<const BufferPlan*>& subset) {
      int64_t bytes = 0;
      std::vector<size_t> positions;
      for (const BufferPlan* p : subset) {
        bytes += p->footprint();
        positions.push_back(p->input);
      }
      AttrValue v = stage_value(positions);
      if (bytes <= budget && std::find(choices.begin(), choices.end(), v) == choices.end()) choices.push_back(v);
    };
    std::vector<const BufferPlan*> heuristic_set;
    int64_t heuristic_bytes = 0;
    for (const BufferPlan* p : candidates)
      if (p->reused && heuristic_bytes + p->footprint() <= budget) {
        heuristic_set.push_back(p);
        heuristic_bytes += p->footprint();
      }
    if (candidates.size() <= kMaxEnumeratedBuffers) {
      for (size_t mask = 1; mask < (size_t{1} << candidates.size()); ++mask) {
        std::vector<const BufferPlan*> subset;
        for (size_t i = 0; i < candidates.size(); ++i)
          if (mask & (size_t{1} << i)) subset.push_back(candidates[i]);
        add_subset(subset);
      }
    } else {
      for (const BufferPlan* p : candidates) add_subset({p});
      add_subset(heuristic_set);
      add_subset(candidates);
    }
    std::vector<size_t> heuristic_positions;
    for (const BufferPlan* p : heuristic_set) heuristic_positions.push_back(p->input);
    AttrValue heuristic = stage_value(heuristic_positions);

    // The chosen value is one of `choices` (PassContext rejects any other), so each of its
    // comma-separated parts is the role of a candidate.
    TESSERA_ASSIGN_OR_RETURN(AttrValue chosen, ctx.choose("STAGE", n, choices, heuristic));
    const std::string& chosen_text = std::get<std::string>(chosen);
    if (chosen_text == "none") {
      std::string why = "no candidate slab is reused";
      for (const std::string& r : reasons) why += "; " + r;
      ctx.skip(n, why);
      return Status::ok();
    }
    std::set<std::string> chosen_roles;
    for (size_t start = 0; start <= chosen_text.size();) {
      size_t comma = chosen_text.find(',', start);
      if (comma == std::string::npos) comma = chosen_text.size();
      chosen_roles.insert(chosen_text.substr(start, comma - start));
      start = comma + 1;
    }

    Tile rewritten = tile;
    std::map<int, Body> stages;  // scope -> Stages to insert at its start, in input order
    std::map<std::string, std::map<int, const Group*>> groups_of;
    for (const BufferPlan* p : candidates) {
      if (!chosen_roles.count(stage_value({p->input}))) continue;
      for (const Group& grp : p->groups) {
        stages[grp.scope].push_back(Stage{p->buffer + "_smem", p->buffer, grp.origin, grp.slab, StageTransport::Sync, 0});
        groups_of[p->buffer][grp.scope] = &grp;
      }
    }
    // Loads are replaced in the order the analysis met them in each scope.
    for (size_t i = 0; i < rewritten.body.size(); ++i) {
      if (!rewritten.body[i].is<Loop>() || !stages.count(static_cast<int>(i))) continue;
      Loop loop = *rewritten.body[i].as<Loop>();
      loop.body = replace_loads(loop.body, groups_of, static_cast<int>(i));
      Body with_stages = stages[static_cast<int>(i)];
      with_stages.insert(with_stages.end(), loop.body.begin(), loop.body.end());
      loop.body = std::move(with_stages);
      rewritten.body[i] = loop;
    }
    if (stages.count(-1)) {
      rewritten.body = replace_loads(rewritten.body, groups_of, -1);
      Body with_stages = stages[-1];
      with_stages.insert(with_stages.end(), rewritten.body.begin(), rewritten.body.end());
      rewritten.body = std::move(with_stages);
    }
    auto op = std::make_unique<TileOp>(kernel);
    op->body = canonicalize_names(Body{Stmt(rewritten)});
    n.op = std::move(op);
    return Status::ok();
  }

  // Rewrites the loads of staged buffers whose group lives in `scope`, in analysis order (the
  // shared traversal's textual order, as ScopeAnalysis saw them).
  static Body replace_loads(const Body& body, const std::map<std::string, std::map<int, const Group*>>& groups_of,
                            int scope) {
    StagedLoadRewriter rewriter(groups_of, scope);
    return rewriter.mutate_body(body);
  }

  class StagedLoadRewriter final : public StmtMutator {
   public:
    StagedLoadRewriter(const std::map<std::string, std::map<int, const Group*>>& groups_of, int scope)
        : groups_of_(groups_of), scope_(scope) {}

    Stmt mutate_Load(const Load& load, const Stmt& self) override {
      auto it = groups_of_.find(load.buffer);
      if (it == groups_of_.end()) return self;
      auto g = it->second.find(scope_);
      if (g == it->second.end()) return self;
      const LoadSite& site = g->second->loads[seen_[load.buffer]++];
      return Load{load.dst, load.buffer + "_smem", site.smem_index, load.type};
    }

   private:
    const std::map<std::string, std::map<int, const Group*>>& groups_of_;
    int scope_;
    std::map<std::string, size_t> seen_;
  };
};

void register_stage_inputs(Registry& r) {
  r.add_pass("stage_inputs", [] { return std::make_unique<StageInputsPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("stage_inputs", "1.0.0", ::tessera::register_stage_inputs)

// stage_epilogue_stores: sends a tensor-core kernel's 16-bit output tile through shared memory, so
// that it leaves the block in 16-byte stores instead of each thread's 2-byte elements.
//
// Rewrites: a Kernel IR kernel holding tensor-core statements (mma.sync or wgmma products) whose
// body ends with its epilogue: a Loop nest with literal bounds (the per-accumulator-element loops
// use_tensor_cores writes) whose only effects are Writes of one 16-bit output `y`, all at one index,
// each either unguarded, under a mask whose both branches write it (causal scores), or under tail
// guards `i_d < extent_d` of index dimensions against y's dims. With the Lets at the top
// substituted, the index must split into a part of blockIdx alone (the block's origin) and a part
// of threadIdx and the loops' variables whose values, enumerated for every thread and iteration,
// fill a box exactly once (the block's tile). The kernel then becomes
//     Smem y_stage: bf16[.., R, W + 8]           (the tile; 16 bytes of pad a row: no bank conflicts)
//     ...                                        (unchanged up to the epilogue)
//     <the epilogue, writing y_stage[i - box origin] instead of y[i]>
//     Sync()
//     StridedLoop(e = threadIdx.x; < R W / 8; += T):
//       if <the tail guards at the element>:       (only where the epilogue had them)
//         (s0, .., s7) = load8 y_stage[.., e / (W / 8), e % (W / 8) * 8]
//         y[origin + (.., e / (W / 8), e % (W / 8) * 8)] = store8(s0, .., s7)
// where W, the tile's last extent, is a multiple of 8, every block's origin along y's last dim a
// multiple of 8 and y's last dim a multiple of 8, so each store is 16 bytes and aligned. Where the
// kernel's shared memory then exceeds the device's static limit it becomes the kernel's dynamic
// shared memory (as materialize does), up to device.smem_per_block.
// Knob STAGE (bool; heuristic: true). Asked only for kernels it can rewrite.
// A projection written split into heads, `q[0, h, m, d]`, is a box of [heads][rows][d] when
// use_tensor_cores writes the head and d as separate block and thread terms (its split_column).
// Skips, with the reason: a producer warpgroup (the epilogue runs in the consumers' branch, where
// no block-wide barrier may stand), an epilogue of another shape, a tile that is not a box written
// once, unaligned rows, shared memory past the device's limit.
// Accepts: Kernel IR (KernelOp nodes; others are left alone). Runs after materialize.
// Guarantees: every element of y is written with the value the epilogue computed for it, by one
// thread, exactly where the epilogue wrote it (the tail guards at the copy are the epilogue's); the
// epilogue's shared writes complete before any copy reads them (Sync); names canonical.
// Tests: tests/golden/stage_epilogue_stores/, EpilogueStoresTest in tests/e2e/random_knobs_test.cpp.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/integer_evaluation.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"

namespace tessera {
namespace {

constexpr int64_t kVectorBytes = 16;             // one st.global.v4.b32
constexpr int64_t kRowPadBytes = 16;             // a tile row's pad: rows of the mma layout on distinct banks
constexpr int64_t kMostEnumerated = int64_t{1} << 22;  // threads x iterations (or blocks) it evaluates
const char* const kBlockIndices[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};

bool is_block_index(const std::string& v) {
  return std::any_of(std::begin(kBlockIndices), std::end(kBlockIndices), [&](const char* b) { return v == b; });
}

// The epilogue as found: its output, the one index it writes, its loops (outermost first) and the
// dimensions its tail guards bound.
struct Epilogue {
  std::string y;
  ExprList index;
  std::vector<const Loop*> loops;
  std::set<size_t> guarded_dims;
};

class EpilogueFinder {
 public:
  EpilogueFinder(const Graph& g, std::string& why) : g_(g), why_(why) {}

  std::optional<Epilogue> find(const Loop& nest) {
    if (!walk_loop(nest)) return std::nullopt;
    if (e_.y.empty()) return fail("the epilogue writes nothing");
    return e_;
  }

 private:
  std::optional<Epilogue> fail(const std::string& why) {
    why_ = why;
    return std::nullopt;
  }
  bool no(const std::string& why) {
    why_ = why;
    return false;
  }

  bool walk_loop(const Loop& l) {
    if (!l.begin.is(ExprKind::Int) || !l.end.is(ExprKind::Int)) return no("an epilogue loop has bounds that are not literals");
    path_.push_back(&l);
    const bool ok = walk_body(l.body);
    path_.pop_back();
    return ok;
  }

  static bool writes(const Body& b) { return contains_stmt_kind(b, StmtKind::Write); }

  bool walk_body(const Body& body) {
    for (const Stmt& s : body) {
      switch (s.kind()) {
        case StmtKind::Load:
        case StmtKind::Assign:
        case StmtKind::Select: break;
        case StmtKind::Loop:
          if (!walk_loop(*s.as<Loop>())) return false;
          break;
        case StmtKind::Cond: {
          const auto* c = s.as<Cond>();
          const bool then_writes = writes(c->then_body), else_writes = writes(c->else_body);
          if (then_writes && !else_writes) {
            // A tail guard: each atom bounds one index dimension by y's extent there.
            ExprList atoms;
            conjuncts(c->cond, atoms);
            pending_guards_.push_back(atoms);
          } else if (!then_writes && else_writes) {
            return no("a condition guards the epilogue's write in its else-branch alone");
          }
          if (!walk_body(c->then_body) || !walk_body(c->else_body)) return false;
          if (then_writes && !else_writes) pending_guards_.pop_back();
          break;
        }
        case StmtKind::Write: {
          const auto* w = s.as<Write>();
          if (!e_.y.empty() && (w->buffer != e_.y || !structurally_equal(w->index, e_.index)))
            return no("the epilogue writes more than one element or buffer per step");
          if (e_.y.empty()) {
            const Node* y = g_.find(w->buffer);
            if (y == nullptr) return no("'" + w->buffer + "' is not a graph buffer");
            if (!dtype_is_float(y->type.dtype) || dtype_bytes(y->type.dtype) != 2)
              return no("the output '" + w->buffer + "' is not 16-bit");
            if (static_cast<int64_t>(w->index.size()) != y->type.rank()) return no("the write's index is not of y's rank");
            e_.y = w->buffer;
            e_.index = w->index;
            e_.loops = path_;
          } else if (path_ != e_.loops) {
            return no("the epilogue writes y from different loop nests");
          }
          if (!guards_bound_dims()) return false;
          break;
        }
        // Every other kind: the epilogue stages only loads, values, conditions and the output's writes.
        case StmtKind::Init:
        case StmtKind::Accum:
        case StmtKind::Tile:
        case StmtKind::StridedLoop:
        case StmtKind::Stage:
        case StmtKind::Combine:
        case StmtKind::AsyncWait:
        case StmtKind::SlabMap:
        case StmtKind::Let:
        case StmtKind::Smem:
        case StmtKind::Sync:
        case StmtKind::CpAsyncCopy:
        case StmtKind::CpAsyncCommit:
        case StmtKind::CpAsyncWait:
        case StmtKind::TmaLoad:
        case StmtKind::MbarrierInit:
        case StmtKind::MbarrierArrive:
        case StmtKind::MbarrierWait:
        case StmtKind::NamedBarrier:
        case StmtKind::SetMaxNReg:
        case StmtKind::WarpShuffle:
        case StmtKind::TreeHalve:
        case StmtKind::VectorLoad:
        case StmtKind::VectorStore:
        case StmtKind::ClusterSync:
        case StmtKind::DsmemLoad:
        case StmtKind::Fragment:
        case StmtKind::LdMatrix:
        case StmtKind::MmaSync:
        case StmtKind::WgmmaMma:
        case StmtKind::WgmmaFence:
        case StmtKind::WgmmaCommit:
        case StmtKind::WgmmaWait:
          return no("the epilogue holds a " + std::string(stmt_kind_name(s.kind())) +
                    " statement (only loads, values, conditions and the output's writes are staged)");
      }
    }
    return true;
  }

  // Every pending guard atom is `index[d] < extent of y's dim d` (the copy checks the same bound).
  bool guards_bound_dims() {
    const Node* y = g_.find(e_.y);
    for (const ExprList& atoms : pending_guards_)
      for (const Expr& a : atoms) {
        bool bound = false;
        if (a.is(ExprKind::Lt) && a.operand(1).is(ExprKind::Int))
          for (size_t d = 0; d < e_.index.size() && !bound; ++d)
            if (structurally_equal(simplify(a.operand(0)), simplify(e_.index[d])) &&
                a.operand(1).int_value() == y->type.dim(static_cast<int64_t>(d))) {
              e_.guarded_dims.insert(d);
              bound = true;
            }
        if (!bound) return no("a condition around the write, " + a.str() + ", is not a bound of an index dimension of '" + e_.y + "'");
      }
    return true;
  }

  const Graph& g_;
  std::string& why_;
  Epilogue e_;
  std::vector<const Loop*> path_;
  std::vector<ExprList> pending_guards_;
};

// Rewrites the epilogue's writes of y into the staged tile.
class WriteRedirector final : public StmtMutator {
 public:
  WriteRedirector(std::string y, std::string stage, ExprList index) : y_(std::move(y)), stage_(std::move(stage)), index_(std::move(index)) {}
  Stmt mutate_Write(const Write& w, const Stmt& self) override {
    if (w.buffer != y_) return self;
    return Stmt(Write{stage_, index_, w.value});
  }

 private:
  std::string y_, stage_;
  ExprList index_;
};

class StageEpilogueStoresPass final : public KernelPass {
 public:
  std::string_view name() const override { return "stage_epilogue_stores"; }
  std::string_view summary() const override {
    return "send a tensor-core kernel's 16-bit output tile through shared memory into 16-byte stores";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Kernel}; }
  Dialect input_dialect() const override { return Dialect::Kernel; }
  std::vector<KnobSpec> knobs() const override {
    return {KnobSpec{"STAGE", KnobType::Bool, {}, std::nullopt,
                     "stage the output tile in shared memory and store it 16 bytes at a time"}};
  }

  Status run_on(Node& node, PassContext& ctx) override {
    const auto* kernel = node.op_as<KernelOp>();
    if (kernel == nullptr || !contains_tensor_core_statements(kernel->body)) return Status::ok();
    std::string why;
    std::optional<Plan> plan = plan_for(*kernel, ctx, why);
    if (!plan) {
      ctx.skip(node, why);
      return Status::ok();
    }
    TESSERA_ASSIGN_OR_RETURN(bool stage, ctx.choose_bool("STAGE", node, true));
    if (!stage) return Status::ok();
    auto op = std::make_unique<KernelOp>(*kernel);
    op->body = canonicalize_names(plan->body);
    // As materialize: past the static limit, the arrays are carved from dynamic shared memory.
    op->dynamic_smem = plan->smem_bytes + plan->barrier_bytes > ctx.device().smem_per_block_static ? plan->smem_bytes : 0;
    node.op = std::move(op);
    return Status::ok();
  }

 private:
  struct Plan {
    Body body;
    int64_t smem_bytes = 0, barrier_bytes = 0;
  };

  static std::optional<Plan> plan_for(const KernelOp& k, PassContext& ctx, std::string& why) {
    const Body& body = k.body;
    if (contains_stmt_kind(body, StmtKind::SetMaxNReg)) {
      why = "a producer warpgroup: the epilogue runs in the consumers' branch, where no block-wide barrier may stand";
      return std::nullopt;
    }
    if (k.block[1] != 1 || k.block[2] != 1) {
      why = "the block is not one-dimensional";
      return std::nullopt;
    }
    if (body.empty() || !body.back().is<Loop>()) {
      why = "the kernel does not end with its epilogue's loop";
      return std::nullopt;
    }
    // The Lets at the top, each in terms of threadIdx / blockIdx.
    std::map<std::string, Expr> lets;
    size_t smem_end = 0;
    for (size_t i = 0; i < body.size(); ++i) {
      if (const auto* let = body[i].as<Let>()) lets[let->var] = simplify(substitute(let->value, lets));
      if (body[i].is<Smem>()) smem_end = i + 1;
    }
    std::optional<Epilogue> ep = EpilogueFinder(ctx.graph(), why).find(*body.back().as<Loop>());
    if (!ep) return std::nullopt;
    const TensorType& y = ctx.graph().find(ep->y)->type;
    const size_t rank = ep->index.size();

    // The index as the block's origin (blockIdx alone) plus the thread's offset in the tile.
    std::map<std::string, Expr> no_block;
    for (const char* b : kBlockIndices) no_block[b] = Expr::int_(0);
    ExprList local(rank), origin(rank);
    for (size_t d = 0; d < rank; ++d) {
      const Expr resolved = simplify(substitute(ep->index[d], lets));
      local[d] = simplify(substitute(resolved, no_block));
      origin[d] = simplify(resolved - local[d]);
      const std::vector<std::string> vars = free_vars(origin[d]);
      if (!std::all_of(vars.begin(), vars.end(), is_block_index)) {
        why = "index dimension " + std::to_string(d) + " of '" + ep->y + "' does not split into the block's origin and the thread's offset";
        return std::nullopt;
      }
    }

    // Enumerate every thread and iteration: the offsets must fill a box, each cell once.
    int64_t steps = k.block[0];
    for (const Loop* l : ep->loops) steps *= l->end.int_value() - l->begin.int_value();
    if (steps > kMostEnumerated) {
      why = "the tile has more than " + std::to_string(kMostEnumerated) + " elements to check";
      return std::nullopt;
    }
    std::vector<std::vector<int64_t>> offsets;
    offsets.reserve(static_cast<size_t>(steps));
    std::map<std::string, int64_t> vars;
    bool evaluated = true;
    std::vector<int64_t> at(ep->loops.size());
    for (int64_t t = 0; t < k.block[0] && evaluated; ++t) {
      vars["threadIdx.x"] = t;
      std::function<void(size_t)> iterate = [&](size_t depth) {
        if (!evaluated) return;
        if (depth == ep->loops.size()) {
          std::vector<int64_t> o(rank);
          for (size_t d = 0; d < rank; ++d) {
            std::optional<int64_t> v = eval_integer(local[d], [&](const std::string& n) -> std::optional<int64_t> {
              auto it = vars.find(n);
              return it == vars.end() ? std::nullopt : std::optional<int64_t>(it->second);
            });
            if (!v) {
              evaluated = false;
              return;
            }
            o[d] = *v;
          }
          offsets.push_back(std::move(o));
          return;
        }
        const Loop& l = *ep->loops[depth];
        for (int64_t i = l.begin.int_value(); i < l.end.int_value(); ++i) {
          vars[l.var] = i;
          iterate(depth + 1);
        }
      };
      iterate(0);
    }
    if (!evaluated) {
      why = "the write's index depends on more than the threads and the epilogue's loops";
      return std::nullopt;
    }
    std::vector<int64_t> lo(rank, std::numeric_limits<int64_t>::max()), hi(rank, std::numeric_limits<int64_t>::min());
    for (const auto& o : offsets)
      for (size_t d = 0; d < rank; ++d) {
        lo[d] = std::min(lo[d], o[d]);
        hi[d] = std::max(hi[d], o[d]);
      }
    std::vector<int64_t> box(rank);
    int64_t volume = 1;
    for (size_t d = 0; d < rank; ++d) volume *= box[d] = hi[d] - lo[d] + 1;
    if (volume != static_cast<int64_t>(offsets.size())) {
      why = "the threads' elements do not fill their tile's box once each";
      return std::nullopt;
    }
    std::vector<uint8_t> hit(static_cast<size_t>(volume), 0);
    for (const auto& o : offsets) {
      int64_t cell = 0;
      for (size_t d = 0; d < rank; ++d) cell = cell * box[d] + (o[d] - lo[d]);
      if (hit[static_cast<size_t>(cell)]++) {
        why = "two threads write one element of the tile";
        return std::nullopt;
      }
    }

    // 16-byte rows: the tile's width, every block's origin and y's rows, multiples of a vector.
    const int64_t elem = dtype_bytes(y.dtype), lanes = kVectorBytes / elem, width = box[rank - 1];
    if (width % lanes != 0 || lo[rank - 1] % lanes != 0 || y.dim(static_cast<int64_t>(rank) - 1) % lanes != 0) {
      why = "the tile's rows (" + std::to_string(width) + " elements) or y's (" + std::to_string(y.dim(static_cast<int64_t>(rank) - 1)) +
            ") are no multiple of " + std::to_string(lanes) + " elements, or start unaligned";
      return std::nullopt;
    }
    const int64_t blocks = k.grid[0] * k.grid[1] * k.grid[2];
    if (blocks > kMostEnumerated) {
      why = "too many blocks to check their origins' alignment";
      return std::nullopt;
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t ids[3] = {b % k.grid[0], b / k.grid[0] % k.grid[1], b / (k.grid[0] * k.grid[1])};
      std::optional<int64_t> col = eval_integer(origin[rank - 1], [&](const std::string& n) -> std::optional<int64_t> {
        for (int i = 0; i < 3; ++i)
          if (n == kBlockIndices[i]) return ids[i];
        return std::nullopt;
      });
      if (!col || *col % lanes != 0) {
        why = "a block's tile starts at a column that is no multiple of " + std::to_string(lanes);
        return std::nullopt;
      }
    }

    // Printed in the kernel's own names where the Lets say the same (`a2 * 16 + ..` rather than
    // threadIdx arithmetic): the Lets of blockIdx alone are 0 within the tile.
    std::map<std::string, Expr> block_lets_zero;
    for (const auto& [v, value] : lets) {
      const std::vector<std::string> used = free_vars(value);
      if (!used.empty() && std::all_of(used.begin(), used.end(), is_block_index)) block_lets_zero[v] = Expr::int_(0);
    }
    auto same = [&](const Expr& named, const Expr& resolved) {
      return structurally_equal(simplify(substitute(named, lets)), resolved);
    };
    for (size_t d = 0; d < rank; ++d) {
      const Expr named_local = simplify(substitute(ep->index[d], block_lets_zero));
      const Expr named_origin = simplify(ep->index[d] - named_local);
      if (same(named_local, local[d]) && same(named_origin, origin[d])) {
        local[d] = named_local;
        origin[d] = named_origin;
      }
    }

    // The staged tile, the redirected epilogue, the barrier and the copy.
    std::set<std::string> taken = bound_names(body);
    const std::string stage = fresh_name(ep->y + "_stage", taken);
    std::vector<int64_t> shape = box;
    shape.back() += kRowPadBytes / elem;
    ExprList staged(rank);
    for (size_t d = 0; d < rank; ++d) staged[d] = simplify(local[d] - lo[d]);
    Body out(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(smem_end));
    out.push_back(Smem{stage, y.dtype, shape});
    out.insert(out.end(), body.begin() + static_cast<std::ptrdiff_t>(smem_end), body.end() - 1);
    out.push_back(WriteRedirector(ep->y, stage, staged).mutate(body.back()));
    out.push_back(Sync{});

    const std::string e = fresh_name("e", taken);
    const Expr E = Expr::var(e);
    const int64_t chunks = width / lanes;
    // Cell coordinates of vector e: the last dim's chunk, then the others row-major.
    ExprList cell(rank);
    cell[rank - 1] = E % chunks * lanes;
    Expr rest = E / chunks;
    for (size_t d = rank - 1; d-- > 0;) {
      cell[d] = d == 0 ? rest : rest % box[d];
      rest = rest / box[d];
    }
    const RangeMap copy_range = {{e, Interval{0, volume / lanes - 1}}};
    for (Expr& c : cell) c = simplify(c, copy_range);
    std::vector<std::string> values;
    ExprList value_refs;
    for (int64_t i = 0; i < lanes; ++i) {
      values.push_back(fresh_name("s", taken));
      value_refs.push_back(Expr::value(values.back()));
    }
    ExprList global(rank);
    for (size_t d = 0; d < rank; ++d) global[d] = simplify(origin[d] + lo[d] + cell[d], copy_range);
    // Under the epilogue's tail guards the cells past y were never written: neither read nor stored.
    Body copy = {VectorLoad{values, stage, cell, ValueType{y.dtype, 1, {}}}, VectorStore{ep->y, global, value_refs}};
    Expr guard;
    for (size_t d : ep->guarded_dims) {
      const Expr bound = Expr::binary(ExprKind::Lt, global[d], Expr::int_(y.dim(static_cast<int64_t>(d))));
      guard = guard.defined() ? Expr::binary(ExprKind::And, guard, bound) : bound;
    }
    if (guard.defined()) copy = {Cond{guard, std::move(copy), {}}};
    out.push_back(StridedLoop{e, Expr::var("threadIdx.x"), Expr::int_(volume / lanes), Expr::int_(k.block[0]), LoopRole::Free,
                              0, std::move(copy)});

    Plan plan;
    plan.smem_bytes = smem_layout_bytes(out);
    for (const Stmt& s : out)
      if (const auto* b = s.as<MbarrierInit>()) plan.barrier_bytes += 8 * b->slots;
    if (plan.smem_bytes + plan.barrier_bytes > ctx.device().smem_per_block) {
      why = "the staged tile's " + std::to_string(volume * elem) + " bytes would take the kernel's shared memory past the device's " +
            std::to_string(ctx.device().smem_per_block) + " bytes";
      return std::nullopt;
    }
    plan.body = std::move(out);
    return plan;
  }
};

void register_stage_epilogue_stores(Registry& r) {
  r.add_pass("stage_epilogue_stores", [] { return std::make_unique<StageEpilogueStoresPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("stage_epilogue_stores", "1.0.0", ::tessera::register_stage_epilogue_stores)

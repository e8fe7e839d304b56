// Warp-address enumeration (see warp_access.h): walks a Kernel IR body once per warp of block 0
// with one integer environment per lane, recording the byte address each active lane presents at
// every global or shared memory statement, and counts sectors and bank wavefronts from them.
// Tests: tests/unit/cost_model_test.cpp (WarpAccessTest).
#include "tessera/target/warp_access.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "tessera/ir/integer_evaluation.h"
#include "tessera/ir/op.h"
#include "tessera/support/internal_check.h"

namespace tessera {
namespace {


using Env = std::map<std::string, int64_t>;

// The integer value of `e` in one lane's environment: a variable not bound there is 0 (a scalar
// parameter), data (values, register-array elements, floats, casts) is unknown.
std::optional<int64_t> eval(const Expr& e, const Env& env) {
  return eval_integer(e, [&env](const std::string& name) -> std::optional<int64_t> {
    auto it = env.find(name);
    return it == env.end() ? 0 : it->second;
  });
}

// A buffer's element size and row-major shape.
struct BufferLayout {
  MemorySpace space = MemorySpace::Global;
  int64_t elem_bytes = 4;
  std::vector<int64_t> shape;
};

// One lane during the walk: its variables, and whether it runs the statements being walked.
struct Lane {
  Env env;
  bool active = false;
};

// The buffers a loop body writes (at any depth): a read of one of them cannot be kept in a
// register across the loop's iterations.
class WrittenBuffers final : public StmtVisitor {
 public:
  std::set<std::string> buffers;
  void visit_Write(const Write& s) override { buffers.insert(s.buffer); }
  void visit_VectorStore(const VectorStore& s) override { buffers.insert(s.buffer); }
  void visit_CpAsyncCopy(const CpAsyncCopy& s) override { buffers.insert(s.dst); }
  void visit_TmaLoad(const TmaLoad& s) override { buffers.insert(s.dst); }
  void visit_TreeHalve(const TreeHalve& s) override { buffers.insert(s.buffer); }
};

class WarpWalker {
 public:
  WarpWalker(const Graph& g, const Node& n, const KernelOp& k, WarpAccessMap& out) : kernel_(k), out_(out) {
    for (const std::string& in : n.inputs)
      if (const Node* src = g.find(in)) buffers_[in] = global_layout(*src);
    buffers_[n.id()] = global_layout(n);
  }

  void run_warp(int64_t warp) {
    const int64_t bx = dim(kernel_.block, 0), by = dim(kernel_.block, 1), bz = dim(kernel_.block, 2);
    std::vector<Lane> lanes(static_cast<size_t>(out_.warp_size));
    for (int64_t l = 0; l < out_.warp_size; ++l) {
      const int64_t t = warp * out_.warp_size + l;
      Lane& lane = lanes[static_cast<size_t>(l)];
      lane.active = t < bx * by * bz;
      lane.env["threadIdx.x"] = t % bx;
      lane.env["threadIdx.y"] = (t / bx) % by;
      lane.env["threadIdx.z"] = t / (bx * by);
      for (const char* b : {"blockIdx.x", "blockIdx.y", "blockIdx.z"}) lane.env[b] = 0;
    }
    warp_ = warp;
    walk(kernel_.body, lanes, 1.0, -1);
  }

 private:
  static int64_t dim(const std::vector<int64_t>& v, size_t i) { return i < v.size() ? std::max<int64_t>(v[i], 1) : 1; }

  static BufferLayout global_layout(const Node& n) {
    BufferLayout b;
    b.elem_bytes = dtype_bytes(n.type.dtype);
    for (const Dim& d : n.type.shape) b.shape.push_back(d.value());
    return b;
  }

  // The byte offset of `index` into `b`: a full index is row-major, another rank a flat element
  // offset (the last index's value, as Kernel IR's flattened accesses are).
  static std::optional<int64_t> offset_of(const BufferLayout& b, const ExprList& index, const Env& env) {
    int64_t element = 0;
    if (index.size() == b.shape.size()) {
      for (size_t d = 0; d < index.size(); ++d) {
        auto v = eval(index[d], env);
        if (!v) return std::nullopt;
        element = element * b.shape[d] + *v;
      }
    } else {
      if (index.empty()) return 0;
      auto v = eval(index.back(), env);
      if (!v) return std::nullopt;
      element = *v;
    }
    return element * b.elem_bytes;
  }

  void record(const std::string& buffer, AccessDirection dir, StmtKind kind, const ExprList& index, int64_t width_elems,
              const std::vector<Lane>& lanes, double executions, int loop) {
    auto it = buffers_.find(buffer);
    if (it == buffers_.end()) return;  // a register array
    const BufferLayout& b = it->second;
    // A read that does not change across the iterations of an unrolled loop (its index does not
    // depend on the loop's variable, the loop does not write its buffer) is issued once for all of
    // them: the compiler keeps the value in a register across the unrolled copies.
    if (dir == AccessDirection::Read) {
      std::set<std::string> deps;
      for (const Expr& e : index)
        for (const std::string& v : free_vars(e))
          if (auto d = loop_deps_.find(v); d != loop_deps_.end()) deps.insert(d->second.begin(), d->second.end());
      for (const Frame& f : frames_)
        if (f.unroll > 0 && f.trips > 0 && !deps.count(f.var) && !f.written->count(buffer))
          executions /= static_cast<double>(f.trips);
    }
    WarpAccess a;
    a.buffer = buffer;
    a.space = b.space;
    a.direction = dir;
    a.stmt = kind;
    a.warp = warp_;
    a.width_bytes = b.elem_bytes * std::max<int64_t>(width_elems, 1);
    a.executions = executions;
    a.loop = loop;
    a.lanes.resize(lanes.size());
    bool any = false;
    for (size_t l = 0; l < lanes.size(); ++l) {
      if (!lanes[l].active) continue;
      any = true;
      auto off = offset_of(b, index, lanes[l].env);
      a.lanes[l] = off ? LaneAddress{LaneState::Known, *off} : LaneAddress{LaneState::Unknown, 0};
    }
    if (any) out_.accesses.push_back(std::move(a));
  }

  static bool any_active(const std::vector<Lane>& lanes) {
    return std::any_of(lanes.begin(), lanes.end(), [](const Lane& l) { return l.active; });
  }

  void loop(const Stmt& self, const std::string& var, const Expr& begin, const Expr& end, const Expr& step,
            int64_t unroll, const Body& body, std::vector<Lane> lanes, double executions) {
    auto [it, fresh] = loop_ids_.emplace(&self.variant(), static_cast<int>(out_.loops.size()));
    if (fresh) out_.loops.push_back(LoopInfo{unroll});
    // A warp runs the loop while any lane does: the most trips of its active lanes.
    int64_t trips = 0;
    for (Lane& lane : lanes) {
      if (!lane.active) continue;
      auto b = eval(begin, lane.env);
      auto e = eval(end, lane.env);
      auto s = eval(step, lane.env);
      const int64_t st = s && *s > 0 ? *s : 1;
      const int64_t lane_trips = b && e ? (*e > *b ? (*e - *b + st - 1) / st : 0) : 1;
      trips = std::max(trips, lane_trips);
      lane.active = lane_trips > 0;
      lane.env[var] = b ? *b : 0;
    }
    if (trips == 0) return;
    auto [w, unseen] = written_.try_emplace(&self.variant());
    if (unseen) {
      WrittenBuffers written;
      written.visit(body);
      w->second = std::move(written.buffers);
    }
    std::set<std::string> deps{var};
    for (const std::string& v : free_vars(begin))
      if (auto d = loop_deps_.find(v); d != loop_deps_.end()) deps.insert(d->second.begin(), d->second.end());
    loop_deps_[var] = std::move(deps);
    frames_.push_back(Frame{var, trips, unroll, &w->second});
    walk(body, std::move(lanes), executions * static_cast<double>(trips), it->second);
    frames_.pop_back();
  }

  void walk(const Body& body, std::vector<Lane> lanes, double executions, int loop_id) {
    if (!any_active(lanes)) return;
    for (const Stmt& s : body) {
      switch (s.kind()) {
        case StmtKind::Let: {
          const auto* let = s.as<Let>();
          std::set<std::string> deps;
          for (const std::string& v : free_vars(let->value))
            if (auto d = loop_deps_.find(v); d != loop_deps_.end()) deps.insert(d->second.begin(), d->second.end());
          loop_deps_[let->var] = std::move(deps);
          for (Lane& lane : lanes) {
            auto v = eval(let->value, lane.env);
            if (v) lane.env[let->var] = *v;
            else lane.env.erase(let->var);
          }
          break;
        }
        case StmtKind::Smem: {
          const auto* m = s.as<Smem>();
          BufferLayout b;
          b.space = MemorySpace::Shared;
          b.elem_bytes = dtype_bytes(m->dtype);
          b.shape = m->shape;
          buffers_[m->name] = b;
          break;
        }
        case StmtKind::Load: {
          const auto* l = s.as<Load>();
          record(l->buffer, AccessDirection::Read, s.kind(), l->index, l->type.lanes, lanes, executions, loop_id);
          break;
        }
        case StmtKind::VectorLoad: {
          const auto* l = s.as<VectorLoad>();
          record(l->buffer, AccessDirection::Read, s.kind(), l->index,
                 static_cast<int64_t>(l->dsts.size()) * l->type.lanes, lanes, executions, loop_id);
          break;
        }
        case StmtKind::Write: {
          const auto* w = s.as<Write>();
          record(w->buffer, AccessDirection::Write, s.kind(), w->index, 1, lanes, executions, loop_id);
          break;
        }
        case StmtKind::VectorStore: {
          const auto* w = s.as<VectorStore>();
          record(w->buffer, AccessDirection::Write, s.kind(), w->index, static_cast<int64_t>(w->values.size()), lanes,
                 executions, loop_id);
          break;
        }
        case StmtKind::CpAsyncCopy: {
          const auto* c = s.as<CpAsyncCopy>();
          auto src = buffers_.find(c->src);
          const int64_t elem = src != buffers_.end() ? src->second.elem_bytes : 4;
          const int64_t elems = std::max<int64_t>(c->bytes / std::max<int64_t>(elem, 1), 1);
          record(c->src, AccessDirection::Read, s.kind(), c->src_index, elems, lanes, executions, loop_id);
          auto dst = buffers_.find(c->dst);
          const int64_t dst_elem = dst != buffers_.end() ? dst->second.elem_bytes : 4;
          record(c->dst, AccessDirection::Write, s.kind(), c->dst_index,
                 std::max<int64_t>(c->bytes / std::max<int64_t>(dst_elem, 1), 1), lanes, executions, loop_id);
          break;
        }
        case StmtKind::TmaLoad: {
          // The copy engine moves the whole box for the one lane that issues it: a single
          // "lane" as wide as the box, at the box's origin.
          const auto* t = s.as<TmaLoad>();
          for (const KernelParam& p : kernel_.params) {
            if (p.kind != ParamKind::TensorMap || p.name != t->desc) continue;
            int64_t box = 1;
            for (int64_t e : p.tensor_map.box) box *= e;
            std::vector<Lane> one = lanes;
            bool first = true;
            for (Lane& lane : one) {
              lane.active = lane.active && first;
              if (lane.active) first = false;
            }
            record(p.tensor_map.buffer, AccessDirection::Read, s.kind(), t->coords, box, one, executions, loop_id);
          }
          break;
        }
        case StmtKind::LdMatrix: {
          // One phase per 8x8 matrix: lanes 8m..8m+7 each name a 16-byte row of matrix m.
          const auto* l = s.as<LdMatrix>();
          auto buf = buffers_.find(l->buffer);
          const int64_t elem = buf != buffers_.end() ? std::max<int64_t>(buf->second.elem_bytes, 1) : 2;
          for (int64_t m = 0; m < l->count; ++m) {
            std::vector<Lane> rows = lanes;
            for (size_t i = 0; i < rows.size(); ++i)
              rows[i].active = rows[i].active && static_cast<int64_t>(i % 32) / 8 == m;
            record(l->buffer, AccessDirection::Read, s.kind(), l->index, 16 / elem, rows, executions, loop_id);
          }
          break;
        }
        case StmtKind::TreeHalve: {
          // Each halving step: lanes with tid < half read slots tid and tid + half, write slot tid.
          const auto* t = s.as<TreeHalve>();
          for (int64_t n = t->count; n > 1; n = (n + 1) / 2) {
            const int64_t half = n / 2, upper = (n + 1) / 2;
            std::vector<Lane> step = lanes;
            for (Lane& lane : step) {
              auto tid = eval(t->tid, lane.env);
              lane.active = lane.active && tid && *tid < half;
              lane.env["tessera.tree.slot"] = tid ? *tid : 0;
            }
            const ExprList low{Expr::var("tessera.tree.slot")};
            const ExprList high{Expr::var("tessera.tree.slot") + upper};
            record(t->buffer, AccessDirection::Read, s.kind(), low, 1, step, executions, loop_id);
            record(t->buffer, AccessDirection::Read, s.kind(), high, 1, step, executions, loop_id);
            record(t->buffer, AccessDirection::Write, s.kind(), low, 1, step, executions, loop_id);
          }
          break;
        }
        case StmtKind::Loop: {
          const auto* l = s.as<Loop>();
          loop(s, l->var, l->begin, l->end, Expr::int_(1), l->unroll, l->body, lanes, executions);
          break;
        }
        case StmtKind::StridedLoop: {
          const auto* l = s.as<StridedLoop>();
          loop(s, l->var, l->begin, l->end, l->step, l->unroll, l->body, lanes, executions);
          break;
        }
        case StmtKind::Cond: {
          const auto* c = s.as<Cond>();
          std::vector<Lane> then_lanes = lanes, else_lanes = lanes;
          for (size_t i = 0; i < lanes.size(); ++i) {
            if (!lanes[i].active) continue;
            auto v = eval(c->cond, lanes[i].env);
            if (!v) continue;  // undecided: both branches
            then_lanes[i].active = *v != 0;
            else_lanes[i].active = *v == 0;
          }
          walk(c->then_body, std::move(then_lanes), executions, loop_id);
          walk(c->else_body, std::move(else_lanes), executions, loop_id);
          break;
        }
        case StmtKind::Tile: walk(s.as<Tile>()->body, lanes, executions, loop_id); break;
        // No memory traffic of their own (register work, barriers, shuffles), or Tile IR only.
        case StmtKind::Assign:
        case StmtKind::Select:
        case StmtKind::Init:
        case StmtKind::Accum:
        case StmtKind::Stage:
        case StmtKind::Combine:
        case StmtKind::AsyncWait:
      case StmtKind::SlabMap:
        case StmtKind::Sync:
        case StmtKind::CpAsyncCommit:
        case StmtKind::CpAsyncWait:
        case StmtKind::MbarrierInit:
        case StmtKind::MbarrierArrive:
        case StmtKind::MbarrierWait:
        case StmtKind::NamedBarrier:
        case StmtKind::SetMaxNReg:
        case StmtKind::WarpShuffle:
        case StmtKind::ClusterSync:
        case StmtKind::DsmemLoad:
        case StmtKind::Fragment:
        case StmtKind::MmaSync: break;
        // A wgmma's operands are read by the tensor cores from their descriptors, not by the
        // threads' addresses: no warp access.
        case StmtKind::WgmmaMma:
        case StmtKind::WgmmaFence:
        case StmtKind::WgmmaCommit:
        case StmtKind::WgmmaWait:
          break;
      }
    }
  }

  const KernelOp& kernel_;
  WarpAccessMap& out_;
  std::map<std::string, BufferLayout> buffers_;
  std::map<const StmtVariant*, int> loop_ids_;
  // The loops enclosing the statement being walked, outermost first.
  struct Frame {
    std::string var;
    int64_t trips = 0;
    int64_t unroll = 0;
    const std::set<std::string>* written = nullptr;
  };
  std::vector<Frame> frames_;
  std::map<const StmtVariant*, std::set<std::string>> written_;  // per loop statement
  std::map<std::string, std::set<std::string>> loop_deps_;  // the loop variables a name depends on
  int64_t warp_ = 0;
};

}  // namespace

int64_t WarpAccess::active_lanes() const {
  return std::count_if(lanes.begin(), lanes.end(), [](const LaneAddress& l) { return l.state != LaneState::Inactive; });
}

bool WarpAccess::addresses_known() const {
  return std::none_of(lanes.begin(), lanes.end(), [](const LaneAddress& l) { return l.state == LaneState::Unknown; });
}

Expected<WarpAccessMap> enumerate_warp_accesses(const Graph& g, const Node& kernel, int64_t warp_size) {
  const auto* k = kernel.op_as<KernelOp>();
  if (k == nullptr) return make_error("warp access: node '" + kernel.id() + "' is not a Kernel IR kernel");
  if (warp_size <= 0) return make_error("warp access: the warp size must be positive");
  WarpAccessMap out;
  out.warp_size = warp_size;
  int64_t threads = 1;
  for (int64_t d : k->block) threads *= std::max<int64_t>(d, 1);
  for (int64_t d : k->grid) out.blocks *= std::max<int64_t>(d, 1);
  out.warps_per_block = (threads + warp_size - 1) / warp_size;
  WarpWalker walker(g, kernel, *k, out);
  for (int64_t w = 0; w < out.warps_per_block; ++w) walker.run_warp(w);
  return out;
}

int64_t sectors_touched(const WarpAccess& a, int64_t sector_bytes) {
  std::set<int64_t> sectors;
  int64_t unknown = 0;
  for (const LaneAddress& l : a.lanes) {
    if (l.state == LaneState::Unknown) unknown += (a.width_bytes + sector_bytes - 1) / sector_bytes;
    if (l.state != LaneState::Known) continue;
    for (int64_t s = floor_div(l.offset, sector_bytes); s <= floor_div(l.offset + a.width_bytes - 1, sector_bytes); ++s)
      sectors.insert(s);
  }
  return static_cast<int64_t>(sectors.size()) + unknown;
}

int64_t unique_bytes(const WarpAccess& a) {
  // Intervals of bytes merged: lanes overlap only when they read the same data.
  std::vector<std::pair<int64_t, int64_t>> spans;
  int64_t unknown = 0;
  for (const LaneAddress& l : a.lanes) {
    if (l.state == LaneState::Unknown) unknown += a.width_bytes;
    if (l.state == LaneState::Known) spans.emplace_back(l.offset, l.offset + a.width_bytes);
  }
  std::sort(spans.begin(), spans.end());
  int64_t total = unknown, end = std::numeric_limits<int64_t>::min();
  for (const auto& [lo, hi] : spans) {
    const int64_t from = std::max(lo, end);
    if (hi > from) total += hi - from;
    end = std::max(end, hi);
  }
  return total;
}

int64_t bank_wavefronts(const WarpAccess& a, int64_t banks, int64_t bank_bytes) {
  std::map<int64_t, std::set<int64_t>> words_per_bank;
  int64_t unknown_words = 0;
  for (const LaneAddress& l : a.lanes) {
    if (l.state == LaneState::Unknown) unknown_words += (a.width_bytes + bank_bytes - 1) / bank_bytes;
    if (l.state != LaneState::Known) continue;
    for (int64_t w = floor_div(l.offset, bank_bytes); w <= floor_div(l.offset + a.width_bytes - 1, bank_bytes); ++w)
      words_per_bank[((w % banks) + banks) % banks].insert(w);
  }
  int64_t degree = 0;
  for (const auto& [bank, words] : words_per_bank) degree = std::max<int64_t>(degree, words.size());
  // Unknown lanes spread over the banks: as many wavefronts as their words fill.
  return std::max(degree, (unknown_words + banks - 1) / banks);
}

}  // namespace tessera

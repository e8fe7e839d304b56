// KernelReport: first-touch bytes by box analysis of each global access, FLOPs by walking the body
// over the threads and iterations that decide its conditions (see kernel_report.h).
// Tests: tests/unit/kernel_report_test.cpp.
#include "tessera/target/kernel_report.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/ir/integer_evaluation.h"
#include "tessera/ir/op.h"
#include "tessera/ir/stmt.h"
#include "tessera/support/internal_check.h"

namespace tessera {
namespace {

constexpr const char* kHardwareVars[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z",
                                         "blockIdx.x",  "blockIdx.y",  "blockIdx.z"};

// ---- first touch: a box per access --------------------------------------------------------------

// {lo + k * stride : lo + k * stride <= hi}; empty when lo > hi.
struct Congruence {
  int64_t lo = 0, hi = -1, stride = 1;
  int64_t count() const { return lo > hi ? 0 : (hi - lo) / stride + 1; }
};

// The gcd of the variables' coefficients when `e` is linear in them (a constant gives 0), else 1:
// every value of `e` differs from another by a multiple of it.
int64_t linear_stride(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Int: return 0;
    case ExprKind::Var: return 1;
    case ExprKind::Add:
    case ExprKind::Sub: return std::gcd(linear_stride(e.operand(0)), linear_stride(e.operand(1)));
    case ExprKind::Mul: {
      const Expr& a = e.operand(0);
      const Expr& b = e.operand(1);
      if (a.is(ExprKind::Int)) return std::abs(a.int_value()) * linear_stride(b);
      if (b.is(ExprKind::Int)) return std::abs(b.int_value()) * linear_stride(a);
      return 1;
    }
    // Anything else may take every value between its bounds.
    case ExprKind::Value:
    case ExprKind::Float:
    case ExprKind::Div:
    case ExprKind::Mod:
    case ExprKind::Min:
    case ExprKind::Max:
    case ExprKind::Lt:
    case ExprKind::Le:
    case ExprKind::Eq:
    case ExprKind::Ne:
    case ExprKind::And:
    case ExprKind::Or:
    case ExprKind::Not:
    case ExprKind::Select:
    case ExprKind::Cast:
    case ExprKind::Element:
    case ExprKind::Xor:
    case ExprKind::BitAnd:
    case ExprKind::BitOr:
    case ExprKind::Shl:
    case ExprKind::Shr: return 1;
  }
  TESSERA_UNREACHABLE("kernel report: an expression kind outside TESSERA_EXPR_KINDS");
}

Congruence clamp(Congruence c, int64_t size) {
  if (c.stride <= 0) c.stride = 1;
  if (c.lo < 0) c.lo += ((-c.lo + c.stride - 1) / c.stride) * c.stride;
  const int64_t top = std::min(c.hi, size - 1);
  if (c.lo > top) return Congruence{0, -1, 1};
  c.hi = c.lo + ((top - c.lo) / c.stride) * c.stride;
  return c;
}

// Extended Euclid: g = gcd(a, b) = a * x + b * y.
int64_t ext_gcd(int64_t a, int64_t b, int64_t& x, int64_t& y) {
  if (b == 0) {
    x = 1;
    y = 0;
    return a;
  }
  int64_t x1 = 0, y1 = 0;
  const int64_t g = ext_gcd(b, a % b, x1, y1);
  x = y1;
  y = x1 - (a / b) * y1;
  return g;
}

Congruence intersect(const Congruence& a, const Congruence& b) {
  const Congruence empty{0, -1, 1};
  if (a.count() == 0 || b.count() == 0) return empty;
  const int64_t lo = std::max(a.lo, b.lo), hi = std::min(a.hi, b.hi);
  if (lo > hi) return empty;
  // x = a.lo (mod a.stride) and x = b.lo (mod b.stride).
  int64_t p = 0, q = 0;
  const int64_t g = ext_gcd(a.stride, b.stride, p, q);
  const int64_t diff = b.lo - a.lo;
  if (diff % g != 0) return empty;
  const int64_t period = a.stride / g * b.stride;
  const int64_t m = b.stride / g;
  // x = a.lo + a.stride * k where k = (diff / g) * p (mod m).
  const int64_t k = (((diff / g) % m + m) % m * ((p % m + m) % m)) % m;
  const int64_t x0 = a.lo + a.stride * k;
  Congruence c;
  c.stride = period;
  c.lo = x0 + floor_div(lo - x0 + period - 1, period) * period;
  if (c.lo > hi) return empty;
  c.hi = c.lo + ((hi - c.lo) / period) * period;
  return c;
}

using Box = std::vector<Congruence>;

int64_t box_count(const Box& b) {
  int64_t n = 1;
  for (const Congruence& c : b) n *= c.count();
  return n;
}

// The number of elements in the union of `boxes` (inclusion-exclusion: accesses per buffer are
// few); beyond 12 distinct boxes, the sum of their sizes (an upper bound the caller clamps).
int64_t union_count(std::vector<Box> boxes) {
  std::vector<Box> distinct;
  for (Box& b : boxes) {
    if (box_count(b) == 0) continue;
    bool seen = false;
    for (const Box& d : distinct) {
      bool same = true;
      for (size_t i = 0; i < b.size() && same; ++i)
        same = b[i].lo == d[i].lo && b[i].hi == d[i].hi && (b[i].stride == d[i].stride || b[i].lo == b[i].hi);
      seen = seen || same;
    }
    if (!seen) distinct.push_back(std::move(b));
  }
  const size_t n = distinct.size();
  if (n > 12) {
    int64_t sum = 0;
    for (const Box& b : distinct) sum += box_count(b);
    return sum;
  }
  int64_t total = 0;
  for (uint32_t mask = 1; mask < (1u << n); ++mask) {
    Box inter;
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      if (!(mask & (1u << i))) continue;
      if (first) {
        inter = distinct[i];
        first = false;
      } else {
        for (size_t d = 0; d < inter.size(); ++d) inter[d] = intersect(inter[d], distinct[i][d]);
      }
    }
    const int64_t c = box_count(inter);
    total += (std::popcount(mask) % 2 == 1) ? c : -c;
  }
  return total;
}

// The accesses of one global buffer: each a box over the buffer's shape, or (an index of another
// rank: a flattened one) an interval of its flat offsets.
struct BufferAccesses {
  Shape shape;
  std::vector<Box> boxes;
  std::vector<Congruence> flat;
};

// ---- FLOPs: the body walked over the points that decide its conditions ------------------------

// Points beyond this many are not enumerated: what they would decide is counted as an upper bound.
constexpr size_t kMaxPoints = size_t{1} << 20;

struct Point {
  std::vector<int64_t> values;  // per relevant variable; kUnbound when not known here
  double weight = 1;            // how many threads x iterations this point stands for
};
constexpr int64_t kUnbound = std::numeric_limits<int64_t>::min();

// The ranges a kernel's body starts from: the hardware indices of its launch and its scalar
// parameters' declared ranges.
RangeMap launch_ranges(const KernelOp& k) {
  RangeMap ranges;
  for (int i = 0; i < 3; ++i) {
    const int64_t bsize = i < static_cast<int>(k.block.size()) ? k.block[static_cast<size_t>(i)] : 1;
    const int64_t gsize = i < static_cast<int>(k.grid.size()) ? k.grid[static_cast<size_t>(i)] : 1;
    ranges[kHardwareVars[i]] = Interval{0, std::max<int64_t>(bsize, 1) - 1};
    ranges[kHardwareVars[3 + i]] = Interval{0, std::max<int64_t>(gsize, 1) - 1};
  }
  for (const KernelParam& p : k.params)
    if (p.kind == ParamKind::Scalar && p.range) ranges[p.name] = *p.range;
  return ranges;
}

class KernelWalker {
 public:
  KernelWalker(const Graph& g, const Node& n, const KernelOp& k, KernelReport& r)
      : g_(g), kernel_(k), report_(r), ranges_(launch_ranges(k)) {
    for (const std::string& in : n.inputs)
      if (const Node* src = g.find(in)) buffers_[in].shape = src->type.shape;
    buffers_[n.id()].shape = n.type.shape;
  }

  void run() {
    decode_digits();
    // Which variables a condition or a loop bound reads: those are enumerated.
    {
      std::map<std::string, Expr> lets = base_lets_;
      RangeMap ranges = ranges_;
      find_relevant(kernel_.body, lets, ranges);
    }
    for (const std::string& v : relevant_) slot_[v] = slot_.size();
    // The thread and block indices (or the axes decoded from them) that matter, enumerated; the
    // others multiply the weight.
    std::vector<Point> points(1);
    points[0].values.assign(slot_.size(), kUnbound);
    for (const std::string& index : index_vars_) {
      const Interval r = ranges_.at(index);
      const int64_t size = r.hi - r.lo + 1;
      auto slot = slot_.find(index);
      if (slot == slot_.end() || points.size() * static_cast<size_t>(size) > kMaxPoints) {
        for (Point& p : points) p.weight *= static_cast<double>(size);
        continue;
      }
      std::vector<Point> next;
      next.reserve(points.size() * static_cast<size_t>(size));
      for (const Point& p : points)
        for (int64_t v = r.lo; v <= r.hi; ++v) {
          Point q = p;
          q.values[slot->second] = v;
          next.push_back(std::move(q));
        }
      points = std::move(next);
    }
    std::map<std::string, Expr> lets = base_lets_;
    RangeMap ranges = ranges_;
    walk(kernel_.body, points, lets, ranges);
  }

  std::map<std::string, BufferAccesses>& buffers() { return buffers_; }

 private:
  // ---- integer evaluation at a point ----
  std::optional<int64_t> eval(const Expr& e, const Point& p) const {
    return eval_integer(e, [this, &p](const std::string& name) -> std::optional<int64_t> {
      auto it = slot_.find(name);
      if (it == slot_.end() || p.values[it->second] == kUnbound) return std::nullopt;
      return p.values[it->second];
    });
  }

  // One digit of a mixed-radix decode of a hardware index H: `(H / divisor) % modulus` (modulus 0:
  // none), bound by a top-level Let.
  struct Digit {
    std::string var;
    int64_t divisor = 1, modulus = 0;
  };

  static std::optional<std::pair<std::string, Digit>> digit_of(const std::string& var, const Expr& value) {
    Expr e = value;
    Digit d{var, 1, 0};
    if (e.is(ExprKind::Mod) && e.operand(1).is(ExprKind::Int) && e.operand(1).int_value() > 0) {
      d.modulus = e.operand(1).int_value();
      e = e.operand(0);
    }
    if (e.is(ExprKind::Div) && e.operand(1).is(ExprKind::Int) && e.operand(1).int_value() > 0) {
      d.divisor = e.operand(1).int_value();
      e = e.operand(0);
    }
    if (!e.is(ExprKind::Var)) return std::nullopt;
    for (const char* hw : kHardwareVars)
      if (e.name() == hw) return std::make_pair(e.name(), d);
    return std::nullopt;
  }

  // The axes materialize decodes from threadIdx / blockIdx (`a0 = threadIdx.x % 128`, `a1 =
  // threadIdx.x / 128`) take every combination of their values once when their divisors chain
  // (1, n0, n0 * n1, ...) up to the index's size. Then the axes, not the index, are enumerated (a
  // condition on one axis need not visit the others), and the index stands for their sum.
  void decode_digits() {
    std::map<std::string, std::vector<Digit>> digits;
    for (const Stmt& s : kernel_.body)
      if (const auto* let = s.as<Let>())
        if (auto d = digit_of(let->var, simplify(let->value))) digits[d->first].push_back(d->second);
    std::set<std::string> decoded_vars;
    for (const char* hw : kHardwareVars) {
      const Interval r = ranges_.at(hw);
      const int64_t size = r.hi - r.lo + 1;
      auto it = digits.find(hw);
      bool complete = it != digits.end() && r.lo == 0;
      if (complete) {
        std::vector<Digit>& ds = it->second;
        std::sort(ds.begin(), ds.end(), [](const Digit& a, const Digit& b) { return a.divisor < b.divisor; });
        int64_t expected = 1;
        for (size_t i = 0; i < ds.size() && complete; ++i) {
          const bool last = i + 1 == ds.size();
          complete = ds[i].divisor == expected && (ds[i].modulus > 0 || last) && !decoded_vars.count(ds[i].var);
          if (!complete) break;
          if (ds[i].modulus > 0) expected *= ds[i].modulus;
          else if (size % ds[i].divisor == 0) expected = size;
          else complete = false;
        }
        complete = complete && expected == size;
      }
      if (!complete) {
        index_vars_.push_back(hw);
        continue;
      }
      Expr sum = Expr::int_(0);
      for (const Digit& d : it->second) {
        const int64_t count = d.modulus > 0 ? d.modulus : size / d.divisor;
        ranges_[d.var] = Interval{0, count - 1};
        index_vars_.push_back(d.var);
        decoded_vars.insert(d.var);
        digit_vars_.insert(d.var);
        sum = sum + Expr::var(d.var) * d.divisor;
      }
      base_lets_[hw] = simplify(sum);
    }
  }

  static Expr expand(const Expr& e, const std::map<std::string, Expr>& lets, const RangeMap& ranges) {
    return simplify(lets.empty() ? e : substitute(e, lets), ranges);
  }

  void note_relevant(const Expr& e) {
    if (e.is(ExprKind::Int)) return;
    for (const std::string& v : free_vars(e)) relevant_.insert(v);
  }

  // The range a loop variable takes over every thread: [lowest begin, highest end - 1].
  static void enter_loop(const std::string& var, const Expr& begin, const Expr& end, RangeMap& ranges) {
    auto b = bound_of(begin, ranges);
    auto e = bound_of(end, ranges);
    if (b && e && e->hi - 1 >= b->lo) ranges[var] = Interval{b->lo, e->hi - 1};
  }

  void find_relevant(const Body& body, std::map<std::string, Expr>& lets, RangeMap& ranges) {
    for (const Stmt& s : body) {
      if (const auto* let = s.as<Let>()) {
        if (digit_vars_.count(let->var)) continue;  // an enumerated axis (decode_digits)
        const Expr value = expand(let->value, lets, ranges);
        if (auto b = bound_of(value, ranges)) ranges[let->var] = *b;
        lets[let->var] = value;
      } else if (const auto* l = s.as<Loop>()) {
        const Expr b = expand(l->begin, lets, ranges), e = expand(l->end, lets, ranges);
        note_relevant(b);
        note_relevant(e);
        RangeMap inner = ranges;
        enter_loop(l->var, b, e, inner);
        find_relevant(l->body, lets, inner);
      } else if (const auto* l = s.as<StridedLoop>()) {
        const Expr b = expand(l->begin, lets, ranges), e = expand(l->end, lets, ranges);
        note_relevant(b);
        note_relevant(e);
        note_relevant(expand(l->step, lets, ranges));
        RangeMap inner = ranges;
        enter_loop(l->var, b, e, inner);
        find_relevant(l->body, lets, inner);
      } else if (const auto* c = s.as<Cond>()) {
        note_relevant(expand(c->cond, lets, ranges));
        find_relevant(c->then_body, lets, ranges);
        find_relevant(c->else_body, lets, ranges);
      } else if (const auto* t = s.as<Tile>()) {
        find_relevant(t->body, lets, ranges);
      }
    }
  }

  static double total_weight(const std::vector<Point>& points) {
    double w = 0;
    for (const Point& p : points) w += p.weight;
    return w;
  }

  void add_flops(std::string_view kind, double count) {
    if (count == 0) return;
    for (FlopCount& f : report_.flops_by_kind)
      if (f.kind == kind) {
        f.count += count;
        return;
      }
    report_.flops_by_kind.push_back(FlopCount{std::string(kind), count});
  }

  // Records that `buffer` is accessed at `index`, covering extents[d] consecutive elements from it
  // along each dimension d (none given: one), when it is one of the kernel's global buffers.
  void access(const std::string& buffer, const ExprList& index, const std::vector<int64_t>& extents,
              const std::map<std::string, Expr>& lets, const RangeMap& ranges) {
    auto it = buffers_.find(buffer);
    if (it == buffers_.end()) return;  // shared memory or a register array
    BufferAccesses& acc = it->second;
    const bool flat = index.size() != acc.shape.size();
    const size_t dims = flat ? 1 : index.size();
    Box box;
    for (size_t d = 0; d < dims; ++d) {
      const int64_t size = flat ? num_elements(acc.shape) : acc.shape[d].value();
      Congruence c{0, size - 1, 1};
      if (!flat || index.size() == 1) {
        const Expr e = expand(index[d], lets, ranges);
        if (auto b = bound_of(e, ranges)) {
          const int64_t stride = linear_stride(e);
          c = Congruence{b->lo, b->hi, b->lo == b->hi ? 1 : std::max<int64_t>(stride, 1)};
        }
        const int64_t extent = extents.empty() ? 1 : extents[flat ? extents.size() - 1 : d];
        if (extent > 1) {
          c.hi += extent - 1;
          if (extent >= c.stride) c.stride = 1;
        }
      }
      box.push_back(clamp(c, size));
    }
    if (flat)
      acc.flat.push_back(box[0]);
    else
      acc.boxes.push_back(std::move(box));
  }

  // `count` consecutive elements along the last dimension of `index` (a vector or packed access).
  static std::vector<int64_t> along_last(const ExprList& index, int64_t count) {
    std::vector<int64_t> extents(std::max<size_t>(index.size(), 1), 1);
    extents.back() = count;
    return extents;
  }

  void walk(const Body& body, std::vector<Point> points, std::map<std::string, Expr>& lets, RangeMap& ranges) {
    if (points.empty()) return;
    for (const Stmt& s : body) {
      switch (s.kind()) {
        case StmtKind::Let: {
          const auto* let = s.as<Let>();
          if (digit_vars_.count(let->var)) break;  // an enumerated axis (decode_digits)
          const Expr value = expand(let->value, lets, ranges);
          if (auto b = bound_of(value, ranges)) ranges[let->var] = *b;
          lets[let->var] = value;
          break;
        }
        case StmtKind::Assign: {
          const auto* a = s.as<Assign>();
          if (a->op != ElementwiseFn::Identity && a->op != ElementwiseFn::Cast)
            add_flops(name_of(a->op), total_weight(points) * static_cast<double>(a->type.lanes));
          break;
        }
        case StmtKind::Accum:
          add_flops(name_of(fn_info(s.as<Accum>()->op).fn), total_weight(points));
          break;
        case StmtKind::MmaSync: {
          const MmaDims d = mma_dims(s.as<MmaSync>()->shape);
          report_.tensor_flops += total_weight(points) * 2.0 * static_cast<double>(d.m * d.n * d.k) / 32.0;
          break;
        }
        case StmtKind::WgmmaMma:  // each of the warpgroup's 128 threads carries its share
          report_.tensor_flops += total_weight(points) * 2.0 * static_cast<double>(64 * s.as<WgmmaMma>()->n * 16) / 128.0;
          break;
        case StmtKind::TreeHalve: {
          // A block-wide collective: count - 1 combines per block that reaches it.
          const auto* t = s.as<TreeHalve>();
          const double blocks = total_weight(points) / static_cast<double>(report_.threads_per_block());
          add_flops(name_of(fn_info(t->op).fn), blocks * static_cast<double>(std::max<int64_t>(t->count - 1, 0)));
          break;
        }
        case StmtKind::Load: {
          const auto* l = s.as<Load>();
          access(l->buffer, l->index, along_last(l->index, l->type.lanes), lets, ranges);
          break;
        }
        case StmtKind::VectorLoad: {
          const auto* l = s.as<VectorLoad>();
          access(l->buffer, l->index, along_last(l->index, static_cast<int64_t>(l->dsts.size()) * l->type.lanes), lets,
                 ranges);
          break;
        }
        case StmtKind::Write: {
          const auto* w = s.as<Write>();
          access(w->buffer, w->index, {}, lets, ranges);
          break;
        }
        case StmtKind::VectorStore: {
          const auto* w = s.as<VectorStore>();
          access(w->buffer, w->index, along_last(w->index, static_cast<int64_t>(w->values.size())), lets, ranges);
          break;
        }
        case StmtKind::CpAsyncCopy: {
          const auto* c = s.as<CpAsyncCopy>();
          auto it = buffers_.find(c->src);
          if (it == buffers_.end()) break;
          const Node* src = g_.find(c->src);
          const int64_t elem = src ? dtype_bytes(src->type.dtype) : 4;
          access(c->src, c->src_index, along_last(c->src_index, std::max<int64_t>(c->bytes / std::max<int64_t>(elem, 1), 1)),
                 lets, ranges);
          break;
        }
        case StmtKind::TmaLoad: {
          // The tensor map's box from the coordinates, both outermost dimension first like the
          // buffer's shape (TensorMapSpec).
          const auto* t = s.as<TmaLoad>();
          for (const KernelParam& p : kernel_.params)
            if (p.kind == ParamKind::TensorMap && p.name == t->desc) {
              if (p.tensor_map.box.size() == t->coords.size()) {
                access(p.tensor_map.buffer, t->coords, p.tensor_map.box, lets, ranges);
              } else if (auto it = buffers_.find(p.tensor_map.buffer); it != buffers_.end()) {
                // A box of another rank than the coordinates: counted as the whole buffer.
                it->second.flat.push_back(Congruence{0, num_elements(it->second.shape) - 1, 1});
              }
            }
          break;
        }
        case StmtKind::Loop: {
          const auto* l = s.as<Loop>();
          loop(l->var, l->begin, l->end, Expr::int_(1), l->body, points, lets, ranges);
          break;
        }
        case StmtKind::StridedLoop: {
          const auto* l = s.as<StridedLoop>();
          loop(l->var, l->begin, l->end, l->step, l->body, points, lets, ranges);
          break;
        }
        case StmtKind::Cond: {
          const auto* c = s.as<Cond>();
          const Expr cond = expand(c->cond, lets, ranges);
          std::vector<Point> then_points, else_points;
          for (const Point& p : points) {
            auto v = cond.is(ExprKind::Int) ? std::optional<int64_t>(cond.int_value()) : eval(cond, p);
            if (!v) {
              report_.flops_exact = false;
              then_points.push_back(p);
              else_points.push_back(p);
            } else if (*v != 0) {
              then_points.push_back(p);
            } else {
              else_points.push_back(p);
            }
          }
          walk(c->then_body, std::move(then_points), lets, ranges);
          walk(c->else_body, std::move(else_points), lets, ranges);
          break;
        }
        case StmtKind::Tile: walk(s.as<Tile>()->body, points, lets, ranges); break;
        // No arithmetic and no global traffic: declarations, synchronization, shared-memory and
        // register traffic. Stage, Combine and AsyncWait are Tile IR (refused in Kernel IR).
        case StmtKind::Select:
        case StmtKind::Init:
        case StmtKind::Stage:
        case StmtKind::Combine:
        case StmtKind::AsyncWait:
      case StmtKind::SlabMap:
        case StmtKind::Smem:
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
        case StmtKind::LdMatrix:
        case StmtKind::WgmmaFence:
        case StmtKind::WgmmaCommit:
        case StmtKind::WgmmaWait: break;
      }
    }
  }

  void loop(const std::string& var, const Expr& begin_in, const Expr& end_in, const Expr& step_in, const Body& body,
            const std::vector<Point>& points, std::map<std::string, Expr>& lets, RangeMap& ranges) {
    const Expr begin = expand(begin_in, lets, ranges), end = expand(end_in, lets, ranges);
    const Expr step_e = expand(step_in, lets, ranges);
    const int64_t step = step_e.is(ExprKind::Int) && step_e.int_value() > 0 ? step_e.int_value() : 1;
    if (!step_e.is(ExprKind::Int)) report_.flops_exact = false;
    RangeMap inner = ranges;
    enter_loop(var, begin, end, inner);
    auto slot = slot_.find(var);
    // The iterations of each point: enumerated when the body's conditions read the variable
    // (within the budget), else a trip count.
    size_t expanded = 0;
    std::vector<std::pair<int64_t, int64_t>> spans(points.size());
    bool can_expand = slot != slot_.end();
    for (size_t i = 0; i < points.size(); ++i) {
      auto b = eval(begin, points[i]);
      auto e = eval(end, points[i]);
      if (!b || !e) {
        // Not known at this point: the loop's widest range (an upper bound).
        report_.flops_exact = false;
        auto bb = bound_of(begin, ranges);
        auto eb = bound_of(end, ranges);
        b = bb ? std::optional<int64_t>(bb->lo) : std::optional<int64_t>(0);
        e = eb ? std::optional<int64_t>(eb->hi) : b;
        can_expand = false;
      }
      spans[i] = {*b, *e};
      const int64_t trips = *e > *b ? (*e - *b + step - 1) / step : 0;
      expanded += static_cast<size_t>(trips);
    }
    if (can_expand && expanded <= kMaxPoints) {
      std::vector<Point> next;
      next.reserve(expanded);
      for (size_t i = 0; i < points.size(); ++i)
        for (int64_t v = spans[i].first; v < spans[i].second; v += step) {
          Point q = points[i];
          q.values[slot->second] = v;
          next.push_back(std::move(q));
        }
      walk(body, std::move(next), lets, inner);
      return;
    }
    std::vector<Point> next;
    next.reserve(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      const int64_t trips =
          spans[i].second > spans[i].first ? (spans[i].second - spans[i].first + step - 1) / step : 0;
      if (trips == 0) continue;
      Point q = points[i];
      q.weight *= static_cast<double>(trips);
      next.push_back(std::move(q));
    }
    walk(body, std::move(next), lets, inner);
  }

  const Graph& g_;
  const KernelOp& kernel_;
  KernelReport& report_;
  RangeMap ranges_;
  std::vector<std::string> index_vars_;        // enumerated: hardware indices, or the axes decoded from them
  std::set<std::string> digit_vars_;           // Let-bound axes enumerated in place of their index
  std::map<std::string, Expr> base_lets_;      // a decoded hardware index = the sum of its axes
  std::set<std::string> relevant_;
  std::map<std::string, size_t> slot_;
  std::map<std::string, BufferAccesses> buffers_;
};

int64_t touched_elements(const BufferAccesses& acc) {
  const int64_t size = num_elements(acc.shape);
  int64_t n = 0;
  if (acc.flat.empty()) {
    n = union_count(acc.boxes);
  } else {
    // Mixed ranks: every access as an interval of flat offsets (the hull of a box).
    std::vector<Box> flat;
    for (const Congruence& c : acc.flat) flat.push_back(Box{c});
    for (const Box& b : acc.boxes) {
      int64_t lo = 0, hi = 0, row = 1;
      for (size_t d = b.size(); d-- > 0;) {
        lo += b[d].lo * row;
        hi += b[d].hi * row;
        row *= acc.shape[d].value();
      }
      flat.push_back(Box{Congruence{lo, hi, 1}});
    }
    n = union_count(flat);
  }
  return std::min(n, size);
}

}  // namespace

int64_t BufferTraffic::touched_bytes() const { return touched * dtype_bytes(dtype); }

int64_t KernelReport::blocks() const {
  int64_t n = 1;
  for (int64_t d : grid) n *= d;
  return n;
}

int64_t KernelReport::threads_per_block() const {
  int64_t n = 1;
  for (int64_t d : block) n *= d;
  return n;
}

namespace {

// The part of a report that depends on the kernel alone (its body, launch and buffer shapes), not on
// which nodes its buffers are: the same for every node that shares the kernel.
struct KernelFigures {
  std::vector<int64_t> touched;  // per buffer: the distinct inputs in input order, then the output
  std::vector<FlopCount> flops_by_kind;
  bool flops_exact = true;
  double busiest_thread_flops = 0;
  double tensor_flops = 0;
};

std::vector<const Node*> buffer_nodes(const Graph& g, const Node& n, Status& status) {
  std::vector<const Node*> out;
  std::set<std::string> seen;
  for (const std::string& in : n.inputs) {
    if (!seen.insert(in).second) continue;
    const Node* src = g.find(in);
    if (src == nullptr) {
      status = make_error("kernel report: input '" + in + "' of kernel node '" + n.id() + "' is not in the graph");
      return {};
    }
    out.push_back(src);
  }
  out.push_back(&n);
  return out;
}

// The busiest thread's FLOPs (KernelReport::busiest_thread_flops): each statement counted as the
// walker counts it for one thread, each loop at its largest per-thread trip count under `ranges`
// (the largest end - begin over the threads, divided by the step).
double busiest_thread_flops(const Body& body, RangeMap& ranges) {
  double total = 0;
  for (const Stmt& s : body) {
    if (const auto* a = s.as<Assign>()) {
      if (a->op != ElementwiseFn::Identity && a->op != ElementwiseFn::Cast) total += a->type.lanes;
    } else if (s.is<Accum>()) {
      total += 1;
    } else if (const auto* t = s.as<TreeHalve>()) {
      int64_t steps = 0;  // halvings a thread may combine in: one per power of two below count
      for (int64_t half = 1; half < t->count; half *= 2) ++steps;
      total += static_cast<double>(steps);
    } else if (const auto* let = s.as<Let>()) {
      if (std::optional<Interval> b = bound_of(let->value, ranges)) ranges[let->var] = *b;
      else ranges.erase(let->var);
    } else if (s.is<Loop>() || s.is<StridedLoop>()) {
      const auto* l = s.as<Loop>();
      const auto* sl = s.as<StridedLoop>();
      const Expr& begin = l ? l->begin : sl->begin;
      const Expr& end = l ? l->end : sl->end;
      const std::string& var = l ? l->var : sl->var;
      const Body& inner = l ? l->body : sl->body;
      int64_t step = 1;
      if (sl) {
        std::optional<Interval> st = bound_of(sl->step, ranges);
        step = st && st->lo > 0 ? st->lo : 1;
      }
      // The span end - begin as one expression keeps what they share (a chunk loop's
      // `c * C + t .. c * C + C`): its largest value over the threads bounds the trips.
      std::optional<Interval> b = bound_of(begin, ranges), e = bound_of(end, ranges);
      std::optional<Interval> span = bound_of(simplify(end - begin, ranges), ranges);
      if (!b || !e || !span) continue;  // unknown bounds: the walker's flops_exact already says so
      const int64_t trips = span->hi > 0 ? (span->hi + step - 1) / step : 0;
      if (trips == 0) continue;
      RangeMap body_ranges = ranges;
      body_ranges[var] = Interval{b->lo, e->hi - 1};
      total += static_cast<double>(trips) * busiest_thread_flops(inner, body_ranges);
    } else if (const auto* c = s.as<Cond>()) {
      RangeMap then_ranges = ranges, else_ranges = ranges;
      total += std::max(busiest_thread_flops(c->then_body, then_ranges), busiest_thread_flops(c->else_body, else_ranges));
    }
  }
  return total;
}

KernelFigures figures_of(const Graph& g, const Node& n, const KernelOp& k, const std::vector<const Node*>& buffers) {
  KernelReport scratch;
  scratch.grid = k.grid;
  scratch.block = k.block;
  KernelWalker walker(g, n, k, scratch);
  walker.run();
  KernelFigures f;
  for (const Node* b : buffers) f.touched.push_back(touched_elements(walker.buffers().at(b->id())));
  f.flops_by_kind = std::move(scratch.flops_by_kind);
  f.flops_exact = scratch.flops_exact;
  f.tensor_flops = scratch.tensor_flops;
  RangeMap launch = launch_ranges(k);
  f.busiest_thread_flops = busiest_thread_flops(k.body, launch);
  return f;
}

KernelReport assemble(const Graph& g, const Node& n, const KernelOp& k, const std::vector<const Node*>& buffers,
                      const KernelFigures& f) {
  KernelReport r;
  r.node = n.id();
  r.kernel = k.name;
  r.grid = k.grid;
  r.block = k.block;
  r.dynamic_smem = k.dynamic_smem;
  r.static_smem = k.dynamic_smem == 0 ? smem_layout_bytes(k.body) : 0;
  r.flops_by_kind = f.flops_by_kind;
  r.flops_exact = f.flops_exact;
  r.busiest_thread_flops = f.busiest_thread_flops;
  r.tensor_flops = f.tensor_flops;
  for (const FlopCount& c : r.flops_by_kind) r.flops += c.count;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Node& buf = *buffers[i];
    BufferTraffic t;
    t.buffer = buf.id();
    t.dtype = buf.type.dtype;
    t.elements = num_elements(buf.type.shape);
    t.written = &buf == &n;
    t.touched = f.touched[i];
    t.in_minimum = t.written ? std::find(g.outputs().begin(), g.outputs().end(), buf.id()) != g.outputs().end()
                             : buf.op_as<InputOp>() != nullptr || buf.op_as<ConstantOp>() != nullptr;
    r.bytes += t.touched_bytes();
    if (t.in_minimum) r.min_bytes += t.touched_bytes();
    r.buffers.push_back(std::move(t));
  }
  return r;
}

// Whether nodes `a` and `b` run the same kernel on buffers of the same types.
bool same_kernel(const Graph& g, const Node& a, const Node& b) {
  const auto* ka = a.op_as<KernelOp>();
  const auto* kb = b.op_as<KernelOp>();
  if (ka->name != kb->name || ka->grid != kb->grid || ka->block != kb->block || ka->dynamic_smem != kb->dynamic_smem ||
      ka->params != kb->params || !(a.type == b.type) || a.inputs.size() != b.inputs.size())
    return false;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const Node* ia = g.find(a.inputs[i]);
    const Node* ib = g.find(b.inputs[i]);
    if (!ia || !ib || !(ia->type == ib->type) || (a.inputs[i] == a.inputs[0]) != (b.inputs[i] == b.inputs[0]))
      return false;
  }
  return structurally_equal(ka->body, kb->body);
}

}  // namespace

Expected<KernelReport> KernelReport::of(const Graph& g, const Node& n) {
  const auto* k = n.op_as<KernelOp>();
  if (k == nullptr) return make_error("kernel report: node '" + n.id() + "' is not a Kernel IR kernel");
  Status status = Status::ok();
  const std::vector<const Node*> buffers = buffer_nodes(g, n, status);
  if (!status) return status.error();
  return assemble(g, n, *k, buffers, figures_of(g, n, *k, buffers));
}

Expected<std::vector<KernelReport>> KernelReport::of_program(const Graph& g) {
  // The layers of a model share kernels: each distinct one is analyzed once.
  std::map<uint64_t, std::vector<std::pair<const Node*, KernelFigures>>> analyzed;
  std::vector<KernelReport> out;
  for (const Node* n : g.nodes()) {
    const auto* k = n->op_as<KernelOp>();
    if (k == nullptr) continue;
    Status status = Status::ok();
    const std::vector<const Node*> buffers = buffer_nodes(g, *n, status);
    if (!status) return status.error();
    auto& candidates = analyzed[structural_hash(k->body)];
    const KernelFigures* figures = nullptr;
    for (const auto& [first, f] : candidates)
      if (same_kernel(g, *first, *n)) figures = &f;
    if (figures == nullptr) {
      candidates.emplace_back(n, figures_of(g, *n, *k, buffers));
      figures = &candidates.back().second;
    }
    out.push_back(assemble(g, *n, *k, buffers, *figures));
  }
  return out;
}

KernelBound KernelBound::on(const KernelReport& r, const DeviceDesc& d, int registers) {
  KernelBound b;
  const int64_t threads = r.threads_per_block();
  const int64_t warp = std::max(d.warp_size, 1);
  const int64_t warps = (threads + warp - 1) / warp;
  b.smem_per_block = r.static_smem + r.dynamic_smem + d.smem_reserved_per_block;
  const bool fits = threads <= d.max_threads_per_block && r.static_smem + r.dynamic_smem <= d.smem_per_block;
  if (warps > 0) b.by_threads = static_cast<int>(d.max_threads_per_sm / (warps * warp));
  b.by_block_limit = d.max_blocks_per_sm;
  if (registers > 0 && warps > 0) {
    const int64_t unit = std::max(d.reg_alloc_unit, 1);
    const int64_t per_warp = (registers * warp + unit - 1) / unit * unit;
    b.by_registers = static_cast<int>(d.regs_per_sm / (per_warp * warps));
  }
  if (b.smem_per_block > 0) b.by_smem = static_cast<int>(d.smem_per_sm / b.smem_per_block);
  int best = std::numeric_limits<int>::max();
  for (int limit : {b.by_threads, b.by_block_limit, b.by_registers, b.by_smem})
    if (limit > 0) best = std::min(best, limit);
  // A limit of 0 that is known (threads, smem) means a block does not fit on an SM.
  const bool none = (warps > 0 && b.by_threads == 0) || (b.smem_per_block > 0 && b.by_smem == 0) ||
                    (registers > 0 && b.by_registers == 0);
  b.blocks_per_sm = (!fits || none || best == std::numeric_limits<int>::max()) ? 0 : best;
  if (d.sm_count > 0 && b.blocks_per_sm > 0)
    b.first_wave_sms = static_cast<double>(std::min<int64_t>(r.blocks(), d.sm_count)) / d.sm_count;
  if (d.dram_gbps > 0) b.dram_us = static_cast<double>(r.bytes) / (d.dram_gbps * 1e3);
  if (d.fp32_tflops > 0) b.compute_us = r.flops / (d.fp32_tflops * 1e6);
  if (d.tensor_tflops_bf16 > 0) b.compute_us += r.tensor_flops / (d.tensor_tflops_bf16 * 1e6);
  return b;
}

}  // namespace tessera

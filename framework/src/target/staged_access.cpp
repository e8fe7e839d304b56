// The staged-slab bank model (see staged_access.h).
#include "tessera/target/staged_access.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace tessera {
namespace {

// Shared memory is 32 banks of 4-byte words on every CUDA architecture Tessera targets.
constexpr int64_t kBanks = 32;
constexpr int64_t kBankBytes = 4;
// The widest vector access (vectorize_loads: 16 bytes).
constexpr int64_t kMaxVectorBytes = 16;

class StagedLoadCollector final : public StmtVisitor {
 public:
  explicit StagedLoadCollector(const Graph& g) : g_(g) {}
  std::vector<StagedLoads> staged;

  void visit_Stage(const Stage& s) override {
    StagedLoads a;
    a.stage = &s;
    if (const Node* src = g_.find(s.buffer)) a.elem_bytes = dtype_bytes(src->type.dtype);
    latest_[s.dst] = staged.size();
    staged.push_back(std::move(a));
  }
  void visit_Load(const Load& s) override {
    auto it = latest_.find(s.buffer);
    if (it == latest_.end()) return;
    StagedLoad load;
    const size_t first = staged[it->second].stage->slots > 1 ? 1 : 0;
    for (size_t d = first; d < s.index.size(); ++d) load.coords.push_back(s.index[d]);
    load.first_values = first_values_;
    load.loop = loop_;
    load.trips = trips_;
    staged[it->second].loads.push_back(std::move(load));
  }
  void visit_Loop(const Loop& s) override {
    const bool literal = s.begin.is(ExprKind::Int) && s.end.is(ExprKind::Int) && s.end.int_value() > s.begin.int_value();
    in_loop(s.var, s.begin, literal ? s.end.int_value() - s.begin.int_value() : 0, [&] { StmtVisitor::visit_Loop(s); });
  }
  void visit_StridedLoop(const StridedLoop& s) override {
    in_loop(s.var, s.begin, 0, [&] { StmtVisitor::visit_StridedLoop(s); });
  }

 private:
  // `trips` 0: not a loop vectorize_loads merges (bounds not literal, or thread-strided).
  template <class F>
  void in_loop(const std::string& var, const Expr& begin, int64_t trips, F&& visit_body) {
    std::map<std::string, Expr> saved = first_values_;
    const std::string saved_loop = loop_;
    const int64_t saved_trips = trips_;
    first_values_[var] = substitute(begin, first_values_);
    loop_ = trips > 0 ? var : std::string();
    trips_ = trips > 0 ? trips : 1;
    visit_body();
    first_values_ = std::move(saved);
    loop_ = saved_loop;
    trips_ = saved_trips;
  }

  const Graph& g_;
  std::map<std::string, size_t> latest_;  // buffer -> its latest Stage in `staged`
  std::map<std::string, Expr> first_values_;
  std::string loop_;
  int64_t trips_ = 1;
};


}  // namespace

std::vector<StagedLoads> collect_staged_loads(const Graph& g, const Body& body) {
  StagedLoadCollector c(g);
  c.visit(body);
  return std::move(c.staged);
}

int64_t staged_vector_width(const StagedLoad& load, int64_t elem_bytes, int64_t row_elems) {
  if (load.loop.empty() || load.coords.empty() || elem_bytes <= 0) return 1;
  for (size_t d = 0; d + 1 < load.coords.size(); ++d)
    if (mentions_var(load.coords[d], load.loop)) return 1;
  const Expr c = simplify(load.coords.back() - Expr::var(load.loop));
  if (mentions_var(c, load.loop)) return 1;
  for (int64_t k = kMaxVectorBytes / elem_bytes; k >= 2; k /= 2) {
    if (load.trips % k != 0 || row_elems % k != 0) continue;
    const Expr rem = simplify(c % Expr::int_(k));
    if (rem.is(ExprKind::Int) && rem.int_value() == 0) return k;
  }
  return 1;
}

SlabLayout padded_slab_layout(const Stage& stage, int64_t elem_bytes, int64_t pad) {
  const auto& slab = stage.slab;
  std::vector<int64_t> strides(slab.size(), 1);
  for (size_t d = slab.size(); d-- > 1;) strides[d - 1] = strides[d] * (slab[d].extent + (d + 1 == slab.size() ? pad : 0));
  return [strides, elem_bytes](const std::vector<int64_t>& coords) {
    int64_t element = 0;
    for (size_t d = 0; d < coords.size() && d < strides.size(); ++d) element += coords[d] * strides[d];
    return element * elem_bytes;
  };
}

int64_t staged_load_conflicts(const StagedLoads& s, const SlabLayout& layout, const std::vector<TileAxis>& threads,
                              int64_t warp_size, int64_t access_bytes) {
  int64_t block_threads = 1;
  for (const TileAxis& t : threads) block_threads *= t.extent;
  const int64_t lanes = std::min(warp_size, block_threads);
  const int64_t words_per_lane = std::max<int64_t>(1, access_bytes / kBankBytes);
  // A phase moves at most one 128-byte wavefront's worth of lanes: 32 scalar, 16 of 8 bytes, 8 of 16.
  const int64_t phase_lanes = std::max<int64_t>(1, kBanks / words_per_lane);
  int64_t worst = 1;
  for (const StagedLoad& load : s.loads) {
    ExprList index;
    for (const Expr& c : load.coords) index.push_back(substitute(c, load.first_values));
    std::vector<int64_t> first_word;
    bool known = true;
    for (int64_t lane = 0; known && lane < lanes; ++lane) {
      std::map<std::string, Expr> values;
      int64_t rest = lane;
      for (const TileAxis& t : threads) {
        values[t.name] = Expr::int_(rest % t.extent);
        rest /= t.extent;
      }
      std::vector<int64_t> coords;
      for (const Expr& i : index) {
        Expr e = substitute(i, values);
        std::map<std::string, Expr> zeros;
        for (const std::string& v : free_vars(e)) zeros[v] = Expr::int_(0);
        e = simplify(substitute(e, zeros));
        if (!e.is(ExprKind::Int)) {
          known = false;
          break;
        }
        coords.push_back(e.int_value());
      }
      if (known) first_word.push_back(layout(coords) / kBankBytes);
    }
    if (!known) continue;
    for (size_t p = 0; p < first_word.size(); p += static_cast<size_t>(phase_lanes)) {
      std::map<int64_t, std::set<int64_t>> words_per_bank;
      for (size_t l = p; l < std::min(first_word.size(), p + static_cast<size_t>(phase_lanes)); ++l)
        for (int64_t w = 0; w < words_per_lane; ++w) {
          const int64_t word = first_word[l] + w;
          words_per_bank[word % kBanks].insert(word);
        }
      for (const auto& [bank, words] : words_per_bank) worst = std::max<int64_t>(worst, words.size());
    }
  }
  return worst;
}

}  // namespace tessera

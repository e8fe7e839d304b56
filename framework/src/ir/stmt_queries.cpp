// Body-wide queries and rewrites the passes share: the names a body binds and reads, renaming,
// whether it holds a collective statement, and substitution with range-aware simplification. They
// walk fields through the statements' reflect lists, so they know no statement kind by name and a
// new kind is covered without touching them.
#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <type_traits>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"
#include "stmt_reflection.h"
#include "tessera/support/internal_check.h"

namespace tessera {
namespace {

using stmt_reflection::Reflected;

bool binds(FieldRole role) { return field_role_traits(role).binds; }

// Visits every field of every statement at any depth with its role: `on_field(field, role)` is
// called for the strings, string lists and Exprs of each statement (nested reflected structs such
// as TileAxis and SlabDim included), in textual order.
// Calls `on_field(field, role)` for every name and Expr field of every statement; with `descend`
// false, of the visited statement only (not of its nested bodies).
template <class OnField>
class FieldCollector final : public StmtVisitor {
 public:
  explicit FieldCollector(OnField on_field, bool descend = true) : on_field_(std::move(on_field)), descend_(descend) {}

#define TESSERA_X(K)                  \
  void visit_##K(const K& s) override { \
    collect(s);                       \
    if (descend_) StmtVisitor::visit_##K(s); \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X

 private:
  template <Reflected T>
  void collect(const T& s) {
    T copy = s;
    T::reflect(copy, [&](const char*, auto& field, FieldRole role) { add(field, role); });
  }
  void add(const std::string& name, FieldRole role) { on_field_(name, role); }
  void add(const Expr& e, FieldRole role) { on_field_(e, role); }
  void add(const std::vector<std::string>& list, FieldRole role) {
    for (const std::string& n : list) add(n, role);
  }
  template <class T>
  void add(const std::vector<T>& items, FieldRole role) {
    for (const T& item : items) {
      if constexpr (Reflected<T>) {
        collect(item);
      } else if constexpr (std::is_same_v<T, Expr>) {
        add(item, role);
      }
    }
  }
  template <class Other>
  void add(const Other&, FieldRole) {}

  OnField on_field_;
  bool descend_;
};

template <class OnField>
void collect_fields(const Body& body, OnField on_field) {
  FieldCollector<OnField> collector(std::move(on_field));
  collector.visit(body);
}

template <class OnField>
void collect_own_fields(const Stmt& s, OnField on_field) {
  FieldCollector<OnField> collector(std::move(on_field), /*descend=*/false);
  collector.visit(s);
}

// The names a field of role `role` reads: a name field that refers to a binding, or the free
// variables and values of an expression.
template <class Field>
void add_used(const Field& field, FieldRole role, std::set<std::string>& names) {
  if constexpr (std::is_same_v<std::decay_t<Field>, std::string>) {
    if (field_role_traits(role).refers_to_name) names.insert(field);
  } else {
    for (const std::string& v : free_vars(field)) names.insert(v);
  }
}

// Renames bound names where they are defined and used, through the reflect lists.
class NameRenamer final : public StmtMutator {
 public:
  explicit NameRenamer(const std::map<std::string, std::string>& renames) : renames_(renames) {
    for (const auto& [from, to] : renames) as_exprs_.emplace(from, Expr::var(to));
  }

#define TESSERA_X(K)                                           \
  Stmt mutate_##K(const K& s, const Stmt& self) override {     \
    Stmt inner = StmtMutator::mutate_##K(s, self);             \
    K copy = *inner.as<K>();                                   \
    K::reflect(copy, [&](const char*, auto& field, FieldRole role) { rename(field, role); }); \
    return Stmt(std::move(copy));                              \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X

  Expr mutate_expr(const Expr& e) override { return e.defined() ? substitute(e, as_exprs_) : e; }

 private:
  void rename(std::string& name, FieldRole role) {
    if (!binds(role) && !field_role_traits(role).refers_to_name && role != FieldRole::Label) return;
    if (role == FieldRole::DefBuffer) return;  // buffers keep their names
    if (auto it = renames_.find(name); it != renames_.end()) name = it->second;
  }
  void rename(std::vector<std::string>& list, FieldRole role) {
    for (std::string& n : list) rename(n, role);
  }
  template <class T>
  void rename(std::vector<T>& items, FieldRole) {
    if constexpr (Reflected<T>) {
      for (T& item : items) T::reflect(item, [&](const char*, auto& field, FieldRole role) { rename(field, role); });
    }
  }
  template <class Other>
  void rename(Other&, FieldRole) {}  // Exprs went through mutate_expr; bodies through mutate

  const std::map<std::string, std::string>& renames_;
  std::map<std::string, Expr> as_exprs_;
};

class SubstitutingSimplifier final : public StmtMutator {
 public:
  SubstitutingSimplifier(const std::map<std::string, Expr>& replacements, RangeMap ranges)
      : replacements_(replacements), ranges_(std::move(ranges)) {}

  Expr mutate_expr(const Expr& e) override {
    if (!e.defined()) return e;
    Expr out = simplify(replacements_.empty() ? e : substitute(e, replacements_), ranges_);
    // Keep the old node when nothing changed, so unchanged subtrees stay shared.
    return structurally_equal(out, e) ? e : out;
  }

  // A Loop's variable has the range of its bounds inside its body (and only there).
  Stmt mutate_Loop(const Loop& s, const Stmt&) override {
    Loop out = s;
    out.begin = mutate_expr(s.begin);
    out.end = mutate_expr(s.end);
    std::optional<Interval> saved;
    if (auto it = ranges_.find(s.var); it != ranges_.end()) saved = it->second;
    std::optional<Interval> lo = bound_of(out.begin, ranges_), hi = bound_of(out.end, ranges_);
    if (lo && hi && hi->hi - 1 >= lo->lo) {
      ranges_[s.var] = Interval{lo->lo, hi->hi - 1};
    } else {
      ranges_.erase(s.var);
    }
    out.body = mutate_body(s.body);
    if (saved) {
      ranges_[s.var] = *saved;
    } else {
      ranges_.erase(s.var);
    }
    return out;
  }

 private:
  const std::map<std::string, Expr>& replacements_;
  RangeMap ranges_;
};

}  // namespace

std::string fresh_name(const std::string& base, std::set<std::string>& taken) {
  std::string name = base;
  for (int n = 0; taken.count(name) != 0; ++n) name = base + "_" + std::to_string(n);
  taken.insert(name);
  return name;
}

std::set<std::string> bound_names(const Body& body) {
  std::set<std::string> names;
  collect_fields(body, [&](const auto& field, FieldRole role) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::string>)
      if (binds(role)) names.insert(field);
  });
  return names;
}

std::vector<std::string> defined_names(const Body& body) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  collect_fields(body, [&](const auto& field, FieldRole role) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::string>)
      if (binds(role) && role != FieldRole::DefBuffer && seen.insert(field).second) names.push_back(field);
  });
  return names;
}

std::set<std::string> used_names(const Body& body) {
  std::set<std::string> names;
  collect_fields(body, [&](const auto& field, FieldRole role) { add_used(field, role, names); });
  return names;
}

std::set<std::string> own_used_names(const Stmt& s) {
  std::set<std::string> names;
  collect_own_fields(s, [&](const auto& field, FieldRole role) { add_used(field, role, names); });
  return names;
}

std::vector<std::string> own_bound_names(const Stmt& s) {
  std::vector<std::string> names;
  collect_own_fields(s, [&](const auto& field, FieldRole role) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::string>)
      if (binds(role)) names.push_back(field);
  });
  return names;
}

Body rename_names(const Body& body, const std::map<std::string, std::string>& renames) {
  if (renames.empty()) return body;
  NameRenamer renamer(renames);
  return renamer.mutate_body(body);
}

namespace {

// Whether a statement of `body`, at any depth, is of a kind that satisfies `has`.
bool contains_kind(const Body& body, const std::function<bool(StmtKind)>& has) {
  struct Finder final : StmtVisitor {
    std::function<bool(StmtKind)> has;
    bool found = false;
#define TESSERA_X(K)                                                     \
  void visit_##K(const K& s) override {                                  \
    if (has(StmtKind::K)) found = true;                                  \
    StmtVisitor::visit_##K(s);                                           \
  }
    TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  } finder;
  finder.has = has;
  finder.visit(body);
  return finder.found;
}

}  // namespace

bool contains_stmt_kind(const Body& body, StmtKind k) {
  return contains_kind(body, [k](StmtKind kind) { return kind == k; });
}

bool contains_collective(const Body& body) {
  return contains_kind(body, [](StmtKind k) { return stmt_kind_traits(k).collective; });
}

bool contains_tensor_core_statements(const Body& body) {
  return contains_kind(body, [](StmtKind k) { return stmt_kind_traits(k).tensor_core; });
}

bool contains_warpgroup_products(const Body& body) {
  return contains_stmt_kind(body, StmtKind::WgmmaMma);
}

std::optional<Stmt> first_stmt_outside(const Body& body, uint8_t accepted) {
  struct Finder final : StmtVisitor {
    uint8_t accepted = 0;
    std::optional<Stmt> found;
#define TESSERA_X(K)                                                                  \
  void visit_##K(const K& s) override {                                               \
    if (found) return;                                                                \
    if ((stmt_kind_traits(StmtKind::K).dialects & accepted) == 0) found = Stmt(s);    \
    else StmtVisitor::visit_##K(s);                                                   \
  }
    TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  } finder;
  finder.accepted = accepted;
  finder.visit(body);
  return finder.found;
}

std::string_view home_dialect_name(StmtKind k) {
  const uint8_t dialects = stmt_kind_traits(k).dialects;
  if (dialects & kInLoop) return "Loop IR";
  if (dialects & kInTile) return "Tile IR";
  return "Kernel IR";
}

Body substitute_and_simplify(const Body& body, const std::map<std::string, Expr>& replacements,
                             RangeMap ranges) {
  SubstitutingSimplifier rewriter(replacements, std::move(ranges));
  return rewriter.mutate_body(body);
}

int64_t innermost_iterations(const Body& body) {
  int64_t work = 0;
  for (const Stmt& s : body) {
    if (const auto* loop = s.as<Loop>()) {
      const int64_t trips = loop->begin.is(ExprKind::Int) && loop->end.is(ExprKind::Int)
                                ? std::max<int64_t>(0, loop->end.int_value() - loop->begin.int_value())
                                : 1;
      work += trips * std::max<int64_t>(1, innermost_iterations(loop->body));
    } else if (const auto* cond = s.as<Cond>()) {
      work += std::max(innermost_iterations(cond->then_body), innermost_iterations(cond->else_body));
    }
  }
  return work;
}

bool stage_rows_group(const Stage& s, const TensorType& source, int64_t w) {
  if (s.slab.empty() || source.rank() == 0 || w < 1) return false;
  const SlabDim& inner = s.slab.back();
  return inner.source_dim == source.rank() - 1 && inner.extent % w == 0 && (inner.extent + s.pad) % w == 0 &&
         source.dim(source.rank() - 1) % w == 0;
}

Expected<TmaBoxes> stage_tma_boxes(const Stage& s, const TensorType& source) {
  const int64_t rank = source.rank();
  if (rank < 1 || rank > 5) return make_error("a TMA copy reads a tensor of rank 1 to 5, not " + std::to_string(rank));
  if (s.slab.empty()) return make_error("the slab has no dims");
  if (s.pad != 0) return make_error("the slab's rows are padded (a TMA box lands unpadded)");
  const int64_t elem = dtype_bytes(source.dtype);
  TmaBoxes out;
  out.box.assign(static_cast<size_t>(rank), 1);
  out.step_dim = s.slab.front().source_dim;
  // A first dim of column blocks: the innermost source dim split as (blocks, columns).
  const SlabDim& inner = s.slab.back();
  const bool column_blocks = s.slab.size() >= 2 && s.slab.front().source_dim == inner.source_dim &&
                             inner.stride == 1 && s.slab.front().stride == inner.extent;
  const size_t first_boxed = column_blocks ? 1 : 0;
  if (column_blocks) {
    const SlabDim& blocks = s.slab.front();
    if (inner.source_dim < 0 || inner.source_dim >= rank || blocks.extent * blocks.stride > source.dim(inner.source_dim))
      return make_error("slab dims " + blocks.axis + " and " + inner.axis + " span " +
                        std::to_string(blocks.extent * blocks.stride) + " elements, outside the source");
    out.copies = blocks.extent;
    out.source_step = blocks.stride;
    out.slab_step = 1;
  }
  // The bytes of one box per element of the first dim: boxes of several first-dim elements each
  // must be whole multiples of 128 bytes to land aligned one after another.
  int64_t rest_bytes = elem;
  for (size_t k = first_boxed + 1; k < s.slab.size(); ++k) rest_bytes *= s.slab[k].extent;
  int64_t previous = -1;
  for (size_t k = first_boxed; k < s.slab.size(); ++k) {
    const SlabDim& d = s.slab[k];
    if (d.stride != 1)
      return make_error("slab dim " + d.axis + " steps " + std::to_string(d.stride) +
                        " source elements (a TMA box is dense, but for a first dim of column blocks)");
    if (d.source_dim <= previous || d.source_dim >= rank)
      return make_error("the slab's dims do not follow the source's dim order (a TMA box lands row-major)");
    previous = d.source_dim;
    if (d.extent < 1 || d.extent > source.dim(d.source_dim))
      return make_error("slab dim " + d.axis + " spans " + std::to_string(d.extent) + " elements, outside the source");
    int64_t extent = d.extent;
    if (extent > 256) {
      // The first dim may take several boxes: the fewest equal ones of at most 256 elements, each
      // a multiple of 128 bytes.
      extent = 0;
      for (int64_t b = 256; b >= 1 && k == 0; --b)
        if (d.extent % b == 0 && b * rest_bytes % 128 == 0) {
          extent = b;
          break;
        }
      if (extent == 0)
        return make_error("slab dim " + d.axis + " spans " + std::to_string(d.extent) +
                          " elements; a TMA box dim spans at most 256, and only the slab's first dim is cut into boxes"
                          " (of equal sizes that tile it, 128-byte multiples)");
      out.copies = d.extent / extent;
      out.source_step = out.slab_step = extent;
    }
    out.box[static_cast<size_t>(d.source_dim)] = extent;
  }
  const int64_t inner_row = out.box.back() * elem;
  if (inner_row % 16 != 0)
    return make_error("the box's inner row is " + std::to_string(inner_row) + " bytes, not a multiple of 16");
  if (const int64_t span = swizzle_span_bytes(s.swizzle); span > 0 && inner_row > span)
    return make_error("the box's inner row (" + std::to_string(inner_row) + " bytes) is wider than the " +
                      std::string(spelling(s.swizzle)) + " swizzle");
  if (rank > 1 && source.dim(rank - 1) * elem % 16 != 0)
    return make_error("the source's rows are " + std::to_string(source.dim(rank - 1) * elem) +
                      " bytes apart, not a multiple of 16");
  int64_t box_bytes = elem;
  for (int64_t b : out.box) box_bytes *= b;
  // Each box lands 128-byte aligned: the boxes of a slab, and the slabs of a ring.
  if ((out.copies > 1 || s.slots > 1) && box_bytes % 128 != 0)
    return make_error("the boxes are " + std::to_string(box_bytes) + " bytes, so the boxes of a slab or the slabs of a ring would not all start 128-byte aligned");
  return out;
}

Expr combine_identity(CombineFn op, DType dtype) {
  const bool integral = !dtype_is_float(dtype);
  const auto lowest = [&]() -> int64_t {
    return dtype == DType::I32 ? std::numeric_limits<int32_t>::min() : dtype == DType::Bool ? 0 : std::numeric_limits<int64_t>::min();
  };
  const auto highest = [&]() -> int64_t {
    return dtype == DType::I32 ? std::numeric_limits<int32_t>::max() : dtype == DType::Bool ? 1 : std::numeric_limits<int64_t>::max();
  };
  switch (op) {
    case CombineFn::Add: return integral ? Expr::int_(0) : Expr::float_(0.0);
    case CombineFn::Mul: return integral ? Expr::int_(1) : Expr::float_(1.0);
    case CombineFn::Max: return integral ? Expr::int_(lowest()) : Expr::float_(-std::numeric_limits<double>::infinity());
    case CombineFn::Min: return integral ? Expr::int_(highest()) : Expr::float_(std::numeric_limits<double>::infinity());
  }
  TESSERA_INTERNAL_CHECK(false, "combine_identity: every CombineFn has an identity");
  return Expr::int_(0);
}

}  // namespace tessera

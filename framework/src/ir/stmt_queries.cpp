// Body-wide queries and rewrites the tile passes share: the names a body binds, whether it holds a
// collective statement, and substitution with range-aware simplification.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/stmt.h"
#include "stmt_reflection.h"

namespace tessera {
namespace {

using stmt_reflection::Reflected;

bool binds(FieldRole role) {
  return role == FieldRole::DefAxis || role == FieldRole::DefInput || role == FieldRole::DefValue ||
         role == FieldRole::DefAcc || role == FieldRole::DefBuffer;
}

// Collects every Def* field, at any depth, through the statements' reflect lists.
class BoundNameCollector final : public StmtVisitor {
 public:
  std::set<std::string> names;

#define TESSERA_X(K)                  \
  void visit_##K(const K& s) override { \
    collect(s);                       \
    StmtVisitor::visit_##K(s);        \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X

 private:
  template <Reflected T>
  void collect(const T& s) {
    T copy = s;
    T::reflect(copy, [&](const char*, auto& field, FieldRole role) { add(field, role); });
  }
  void add(const std::string& name, FieldRole role) {
    if (binds(role)) names.insert(name);
  }
  void add(const std::vector<std::string>& list, FieldRole role) {
    for (const std::string& n : list) add(n, role);
  }
  template <class T>
  void add(const std::vector<T>& items, FieldRole) {
    if constexpr (Reflected<T>) {
      for (const T& item : items) collect(item);
    }
  }
  template <class Other>
  void add(const Other&, FieldRole) {}
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

std::set<std::string> bound_names(const Body& body) {
  BoundNameCollector collector;
  collector.visit(body);
  return collector.names;
}

bool contains_collective(const Body& body) {
  struct Finder final : StmtVisitor {
    bool found = false;
#define TESSERA_X(K)                                                     \
  void visit_##K(const K& s) override {                                  \
    if (stmt_kind_traits(StmtKind::K).collective) found = true;          \
    StmtVisitor::visit_##K(s);                                           \
  }
    TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  } finder;
  finder.visit(body);
  return finder.found;
}

Body substitute_and_simplify(const Body& body, const std::map<std::string, Expr>& replacements,
                             RangeMap ranges) {
  SubstitutingSimplifier rewriter(replacements, std::move(ranges));
  return rewriter.mutate_body(body);
}

}  // namespace tessera

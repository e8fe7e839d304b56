// Stmt machinery: kind names, the visitor and mutator defaults, structural equality and hashing.
//
// Nothing here names a statement kind. Each struct lists its fields in `reflect`; one small
// overload set per operation handles each field *type* (string, int, DType, Expr, Body, nested
// reflected structs, vectors of those), and TESSERA_STMT_KINDS dispatches. Adding a statement kind
// therefore needs no change in this file.
#include "tessera/ir/stmt.h"
#include "stmt_reflection.h"
#include "tessera/support/internal_check.h"

#include <array>
#include <type_traits>

namespace tessera {
namespace {

using stmt_reflection::Reflected;
using stmt_reflection::kIsBody;

// The most fields any reflected struct has; checked where fields are collected.
constexpr size_t kMaxFields = 16;

// Calls f(field_of_a, field_of_b) for every field of two values of the same reflected type.
// Both calls to reflect visit the same fields in the same order, so pairing by position is exact.
template <Reflected T, class F>
void zip_fields(const T& a, const T& b, F&& f) {
  std::array<const void*, kMaxFields> b_fields{};
  size_t count = 0;
  T::reflect(b, [&](const char*, const auto& field, FieldRole) {
    TESSERA_INTERNAL_CHECK(count < kMaxFields, "a reflected statement has at most kMaxFields fields (raise kMaxFields)");
    b_fields[count++] = &field;
  });
  size_t i = 0;
  T::reflect(a, [&](const char*, const auto& field, FieldRole) {
    using Field = std::decay_t<decltype(field)>;
    f(field, *static_cast<const Field*>(b_fields[i++]));
  });
}

// ---- structural equality ---------------------------------------------------------------------

bool field_equal(const std::string& a, const std::string& b) { return a == b; }
bool field_equal(int64_t a, int64_t b) { return a == b; }
bool field_equal(DType a, DType b) { return a == b; }
template <StmtEnum E> bool field_equal(E a, E b) { return a == b; }
bool field_equal(const ValueType& a, const ValueType& b) { return a == b; }
bool field_equal(const Expr& a, const Expr& b) { return structurally_equal(a, b); }
bool field_equal(const Stmt& a, const Stmt& b) { return structurally_equal(a, b); }
template <class T>
bool field_equal(const std::vector<T>& a, const std::vector<T>& b);
template <Reflected T>
bool field_equal(const T& a, const T& b);

template <class T>
bool field_equal(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!field_equal(a[i], b[i])) return false;
  }
  return true;
}

template <Reflected T>
bool field_equal(const T& a, const T& b) {
  bool equal = true;
  zip_fields(a, b, [&](const auto& x, const auto& y) { equal = equal && field_equal(x, y); });
  return equal;
}

// ---- structural hash -------------------------------------------------------------------------
//
// FNV-1a over explicit little-endian bytes plus a splitmix finalizer per statement: the hash is
// the tuning-cache key, so it must not depend on the platform, the process or pointer values.
// Kinds are hashed by name, not by enum index, so reordering TESSERA_STMT_KINDS keeps old keys.

class StableHasher {
 public:
  void add_byte(uint8_t b) { h_ = (h_ ^ b) * 1099511628211ull; }
  void add_u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) add_byte(static_cast<uint8_t>(v >> (8 * i)));
  }
  void add_string(std::string_view s) {
    add_u64(s.size());  // length first, so ("ab", "c") and ("a", "bc") differ
    for (char c : s) add_byte(static_cast<uint8_t>(c));
  }
  uint64_t finish() const {
    uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t h_ = 14695981039346656037ull;
};

void hash_field(StableHasher& h, const std::string& s) { h.add_string(s); }
void hash_field(StableHasher& h, int64_t v) { h.add_u64(static_cast<uint64_t>(v)); }
void hash_field(StableHasher& h, DType t) { h.add_string(dtype_short_name(t)); }
template <StmtEnum E> void hash_field(StableHasher& h, E e) { h.add_string(spelling(e)); }
void hash_field(StableHasher& h, const ValueType& t) { h.add_string(t.str()); }
void hash_field(StableHasher& h, const Expr& e) { h.add_u64(structural_hash(e)); }
void hash_field(StableHasher& h, const Stmt& s) { h.add_u64(structural_hash(s)); }
template <class T>
void hash_field(StableHasher& h, const std::vector<T>& v);
template <Reflected T>
void hash_field(StableHasher& h, const T& value);

template <class T>
void hash_field(StableHasher& h, const std::vector<T>& v) {
  h.add_u64(v.size());
  for (const T& item : v) hash_field(h, item);
}

template <Reflected T>
void hash_field(StableHasher& h, const T& value) {
  T::reflect(value, [&](const char*, const auto& field, FieldRole) { hash_field(h, field); });
}

// ---- visitor and mutator defaults ------------------------------------------------------------

template <Reflected K>
void visit_child_bodies(StmtVisitor& visitor, const K& s) {
  K::reflect(s, [&](const char*, const auto& field, FieldRole) {
    if constexpr (kIsBody<decltype(field)>) visitor.visit(field);
  });
}

// Each mutate_field rewrites one field in place and says whether anything changed. Plain data
// (names, sizes, modes) is never touched by the default mutator.
bool mutate_field(StmtMutator& m, Expr& e) {
  if (!e.defined()) return false;
  Expr rewritten = m.mutate_expr(e);
  if (rewritten.same_node(e)) return false;
  e = std::move(rewritten);
  return true;
}

bool mutate_field(StmtMutator& m, Body& body) {
  Body rewritten = m.mutate_body(body);
  bool same = rewritten.size() == body.size();
  for (size_t i = 0; same && i < body.size(); ++i) same = rewritten[i].same_node(body[i]);
  if (same) return false;
  body = std::move(rewritten);
  return true;
}

template <class T>
bool mutate_field(StmtMutator&, T&) {
  return false;
}
template <class T>
bool mutate_field(StmtMutator& m, std::vector<T>& items);
template <Reflected T>
bool mutate_field(StmtMutator& m, T& value);

template <class T>
bool mutate_field(StmtMutator& m, std::vector<T>& items) {
  bool changed = false;
  for (T& item : items) changed = mutate_field(m, item) || changed;
  return changed;
}

template <Reflected T>
bool mutate_field(StmtMutator& m, T& value) {
  bool changed = false;
  T::reflect(value, [&](const char*, auto& field, FieldRole) {
    changed = mutate_field(m, field) || changed;
  });
  return changed;
}

template <Reflected K>
Stmt mutate_fields(StmtMutator& m, const K& s, const Stmt& self) {
  K copy = s;
  if (!mutate_field(m, copy)) return self;  // unchanged subtrees stay shared
  return Stmt(std::move(copy));
}

}  // namespace

// ---- kind names ------------------------------------------------------------------------------

std::string_view stmt_kind_name(StmtKind k) {
  switch (k) {
#define TESSERA_X(K) \
  case StmtKind::K: return #K;
    TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  }
  return "?";
}

std::optional<StmtKind> parse_stmt_kind(std::string_view s) {
#define TESSERA_X(K) \
  if (s == #K) return StmtKind::K;
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  return std::nullopt;
}

// ---- equality and hash -----------------------------------------------------------------------

bool structurally_equal(const Stmt& a, const Stmt& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (a.same_node(b)) return true;
  if (a.variant().index() != b.variant().index()) return false;
  switch (a.kind()) {
#define TESSERA_X(K) \
  case StmtKind::K: return field_equal(*a.as<K>(), *b.as<K>());
    TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  }
  return true;  // both hold the empty alternative
}

bool structurally_equal(const Body& a, const Body& b) { return field_equal(a, b); }

uint64_t structural_hash(const Stmt& s) {
  StableHasher h;
  if (!s.defined()) {
    h.add_string("<undefined>");
    return h.finish();
  }
  switch (s.kind()) {
#define TESSERA_X(K)           \
  case StmtKind::K:            \
    h.add_string(#K);          \
    hash_field(h, *s.as<K>()); \
    return h.finish();
    TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  }
  h.add_string("<empty>");
  return h.finish();
}

uint64_t structural_hash(const Body& b) {
  StableHasher h;
  h.add_string("Body");
  hash_field(h, b);
  return h.finish();
}

// ---- visitor ---------------------------------------------------------------------------------

void StmtVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
#define TESSERA_X(K) \
  case StmtKind::K: visit_##K(*s.as<K>()); return;
    TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  }
}

void StmtVisitor::visit(const Body& b) {
  for (const Stmt& s : b) visit(s);
}

#define TESSERA_X(K) \
  void StmtVisitor::visit_##K(const K& s) { visit_child_bodies(*this, s); }
TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X

// ---- mutator ---------------------------------------------------------------------------------

Stmt StmtMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  switch (s.kind()) {
#define TESSERA_X(K) \
  case StmtKind::K: return mutate_##K(*s.as<K>(), s);
    TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  }
  return s;
}

Body StmtMutator::mutate_body(const Body& b) {
  Body out;
  out.reserve(b.size());
  for (const Stmt& s : b) out.push_back(mutate(s));
  return out;
}

#define TESSERA_X(K)                                           \
  Stmt StmtMutator::mutate_##K(const K& s, const Stmt& self) { \
    return mutate_fields(*this, s, self);                      \
  }
TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X

}  // namespace tessera

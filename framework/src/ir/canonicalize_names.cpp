// Canonical renaming of the names a kernel body binds (a0.., in0.., v0.., acc0.., frag0..).
//
// The walk is depth-first in textual order and reads only each field's FieldRole, so it knows no
// statement kind by name. Per statement it
//   1. renames uses (fields that refer to names — UseName, UseAcc, UseFragment — and Label fields, Expr Vars) through the names bound so far,
//   2. gives every Def* field the next name of its category (DefBuffer keeps its name),
//   3. renames nested bodies.
// Scoping matches the verifier: a statement without a body binds its names for the rest of the
// enclosing body; a statement with a body (Loop, StridedLoop, Tile) binds them inside it only, so
// sibling loops over `a2` become `a2` and `a3` and neither leaks out.
//
// A Label may name an axis bound later in the text (a Stage's slab names the loop that follows
// it). Such labels are resolved in a second walk, through the first definition of that name
// anywhere in the body. Counters run over the whole body, so the result is idempotent.
#include <array>
#include <map>
#include <string>

#include "tessera/ir/stmt.h"
#include "stmt_reflection.h"
#include "tessera/support/internal_check.h"

namespace tessera {
namespace {

using stmt_reflection::Reflected;
using stmt_reflection::kIsBody;

// Bound name -> canonical name, for the names visible at one point of the walk.
using Scope = std::map<std::string, std::string>;

// The three steps of renaming one statement (see the file comment).
enum class Step { Uses, Defs, Bodies };

bool is_local_def(FieldRole role) { return field_role_traits(role).renamed; }

class NameCanonicalizer {
 public:
  explicit NameCanonicalizer(const Scope* label_fallback) : label_fallback_(label_fallback) {}

  Body rename_body(const Body& body, Scope scope) {
    Body out;
    out.reserve(body.size());
    for (const Stmt& s : body) out.push_back(rename_stmt(s, scope));
    return out;
  }

  // Old name -> canonical name of its first definition in the walk.
  const Scope& first_definitions() const { return first_definitions_; }
  bool had_unresolved_label() const { return unresolved_label_; }

 private:
  Stmt rename_stmt(const Stmt& s, Scope& scope) {
    if (!s.defined()) return s;
    switch (s.kind()) {
#define TESSERA_X(K) \
  case StmtKind::K: return rename_kind(*s.as<K>(), scope);
      TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
    }
    return s;
  }

  template <Reflected K>
  Stmt rename_kind(const K& s, Scope& scope) {
    K copy = s;
    bool owns_body = false;
    K::reflect(copy, [&](const char*, auto& field, FieldRole) {
      if constexpr (kIsBody<decltype(field)>) owns_body = true;
    });
    walk(copy, FieldRole::Data, Step::Uses, scope);
    if (!owns_body) {
      walk(copy, FieldRole::Data, Step::Defs, scope);
      return Stmt(std::move(copy));
    }
    Scope inner = scope;
    walk(copy, FieldRole::Data, Step::Defs, inner);
    walk(copy, FieldRole::Data, Step::Bodies, inner);
    return Stmt(std::move(copy));
  }

  // ---- field walkers: one overload per field type ----

  template <class T>
  void walk(T&, FieldRole, Step, Scope&) {}  // sizes, modes, dtypes: nothing to rename

  void walk(std::string& name, FieldRole role, Step step, Scope& scope) {
    if (step == Step::Uses && (field_role_traits(role).refers_to_name || role == FieldRole::Label)) {
      name = rename_use(name, role, scope);
    } else if (step == Step::Defs && is_local_def(role)) {
      std::string canonical = fresh_name(role);
      first_definitions_.emplace(name, canonical);  // keeps the first one
      scope[name] = canonical;
      name = std::move(canonical);
    }
  }

  void walk(Expr& e, FieldRole, Step step, Scope& scope) {
    if (step == Step::Uses) e = rename_vars(e, scope);
  }

  void walk(Body& body, FieldRole, Step step, Scope& scope) {
    if (step == Step::Bodies) body = rename_body(body, scope);
  }

  template <class T>
  void walk(std::vector<T>& items, FieldRole role, Step step, Scope& scope) {
    for (T& item : items) walk(item, role, step, scope);
  }

  template <Reflected T>
  void walk(T& value, FieldRole, Step step, Scope& scope) {
    T::reflect(value,
               [&](const char*, auto& field, FieldRole role) { walk(field, role, step, scope); });
  }

  // ---- renaming ----

  std::string rename_use(const std::string& name, FieldRole role, const Scope& scope) {
    if (auto it = scope.find(name); it != scope.end()) return it->second;
    if (role == FieldRole::Label) {
      if (label_fallback_ != nullptr) {
        if (auto it = label_fallback_->find(name); it != label_fallback_->end()) return it->second;
      }
      unresolved_label_ = true;
    }
    return name;  // not bound here: a buffer, a hardware index, or a free name
  }

  Expr rename_vars(const Expr& e, const Scope& scope) {
    std::map<std::string, Expr> renames;
    for (const std::string& var : free_vars(e)) {
      auto it = scope.find(var);
      if (it != scope.end() && it->second != var) renames.emplace(var, Expr::var(it->second));
    }
    return renames.empty() ? e : substitute(e, renames);
  }

  std::string fresh_name(FieldRole role) {
    switch (role) {
      case FieldRole::DefAxis: return "a" + std::to_string(next_axis_++);
      case FieldRole::DefInput: return "in" + std::to_string(next_input_++);
      case FieldRole::DefValue: return "v" + std::to_string(next_value_++);
      case FieldRole::DefAcc: return "acc" + std::to_string(next_acc_++);
      case FieldRole::DefFragment: return "frag" + std::to_string(next_fragment_++);
      case FieldRole::Data: case FieldRole::DefBuffer: case FieldRole::UseName: case FieldRole::UseAcc:
      case FieldRole::UseFragment:
      case FieldRole::UseBuffer: case FieldRole::UseTensorMap: case FieldRole::Label:
        break;  // not renamed: no fresh name is asked for them
    }
    TESSERA_UNREACHABLE("fresh_name is asked only for the renamed roles (DefAxis, DefInput, DefValue, DefAcc, DefFragment)");
  }

  const Scope* label_fallback_;
  Scope first_definitions_;
  bool unresolved_label_ = false;
  int next_axis_ = 0;
  int next_input_ = 0;
  int next_value_ = 0;
  int next_acc_ = 0;
  int next_fragment_ = 0;
};

}  // namespace

Body canonicalize_names(const Body& b) {
  NameCanonicalizer first_walk(nullptr);
  Body renamed = first_walk.rename_body(b, {});
  if (!first_walk.had_unresolved_label()) return renamed;
  // Some label named a binding that comes later in the text: walk again, now knowing where
  // every name is first defined. The second walk assigns exactly the same canonical names.
  NameCanonicalizer second_walk(&first_walk.first_definitions());
  return second_walk.rename_body(b, {});
}

}  // namespace tessera

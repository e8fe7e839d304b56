// Grouping kernels that are equal up to buffer names, and handing a representative's pass result
// to the other members of its group (see kernel_sharing.h).
//
// A kernel's signature is its op written out field by field through the statements' `reflect`
// lists (the IR core's structural hash walks the same lists), with every name part that is one of
// the node's buffers written as its position. Only fields whose role is a buffer (UseBuffer,
// DefBuffer: loads, writes, staged copies and their shared-memory arrays), the kernel's name and its
// buffer and tensor-map parameters are read that way; expressions never name a graph buffer (their
// variables are axes, values and scalar parameters) and are compared as they are, and so are knob
// values, which name roles (`STAGE='in0'`, docs/plugins.md): read as names, a value `in0` of a
// kernel whose first input is called `in0` would become another layer's buffer name.
#include "kernel_sharing.h"

#include "tessera/pass/kernel_identity.h"
#include "tessera/tune/decision.h"

#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>

#include "../ir/stmt_reflection.h"
#include "tessera/ir/op.h"

namespace tessera {
namespace {

using stmt_reflection::Reflected;

using BufferNames = KernelBufferNames;

bool names_buffers(FieldRole role) { return field_role_traits(role).refers_to_buffer || role == FieldRole::DefBuffer; }

// ---- the signature ------------------------------------------------------------------------------

struct Signature {
  std::string text;         // everything but the expressions; buffers as `\x01<position>\x02`
  std::vector<Expr> exprs;  // in the order the walk met them
  friend bool operator==(const Signature& a, const Signature& b) {
    if (a.text != b.text || a.exprs.size() != b.exprs.size()) return false;
    for (size_t i = 0; i < a.exprs.size(); ++i)
      if (!structurally_equal(a.exprs[i], b.exprs[i])) return false;
    return true;
  }
};

class SignatureWriter {
 public:
  explicit SignatureWriter(const BufferNames& names) : names_(names) {}

  Signature take() { return std::move(sig_); }

  void data(std::string_view s) {
    sig_.text += s;
    sig_.text += '\x1f';
  }
  void number(int64_t v) { data(std::to_string(v)); }
  void name(std::string_view s) {
    names_.scan(
        s, [&](char c) { sig_.text += c; },
        [&](size_t position) {
          sig_.text += '\x01';
          sig_.text += std::to_string(position);
          sig_.text += '\x02';
        });
    sig_.text += '\x1f';
  }
  void expr(const Expr& e) {
    sig_.text += e.defined() ? "E\x1f" : "-\x1f";
    if (e.defined()) sig_.exprs.push_back(e);
  }

  void field(const std::string& s, FieldRole role) { names_buffers(role) ? name(s) : data(s); }
  void field(int64_t v, FieldRole) { number(v); }
  void field(DType t, FieldRole) { data(dtype_short_name(t)); }
  template <StmtEnum E>
  void field(E e, FieldRole) {
    data(spelling(e));
  }
  void field(const ValueType& t, FieldRole) { data(t.str()); }
  void field(const Expr& e, FieldRole) { expr(e); }
  void field(const Stmt& s, FieldRole) {
    if (!s.defined()) {
      data("<undefined>");
      return;
    }
    switch (s.kind()) {
#define TESSERA_X(K)                   \
  case StmtKind::K:                    \
    data(#K);                          \
    field(*s.as<K>(), FieldRole::Data); \
    return;
      TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
    }
  }
  template <class T>
  void field(const std::vector<T>& items, FieldRole role) {
    number(static_cast<int64_t>(items.size()));
    for (const T& item : items) field(item, role);
  }
  template <Reflected T>
  void field(const T& value, FieldRole) {
    T::reflect(value, [&](const char*, const auto& f, FieldRole role) { field(f, role); });
  }

 private:
  const BufferNames& names_;
  Signature sig_;
};

void write_params(SignatureWriter& w, const std::vector<KernelParam>& params) {
  w.number(static_cast<int64_t>(params.size()));
  for (const KernelParam& p : params) {
    w.data(param_kind_name(p.kind));
    // Scalars are named by expressions, which are compared as they are.
    p.kind == ParamKind::Scalar ? w.data(p.name) : w.name(p.name);
    w.data(dtype_short_name(p.dtype));
    w.number(p.written);
    if (p.range) {
      w.number(p.range->lo);
      w.number(p.range->hi);
    } else {
      w.data("-");
    }
    w.name(p.tensor_map.buffer);
    w.field(p.tensor_map.box, FieldRole::Data);
  }
}

// With `for_identity` (kernel_identity.h), producers count by their types only, recorded choices
// by their values only, and the kernel's name not at all.
std::optional<Signature> signature(const Graph& g, const Node& n, bool for_identity = false) {
  const auto* kernel = n.op_as<KernelLikeOp>();
  if (kernel == nullptr) return std::nullopt;
  const BufferNames names(n);
  SignatureWriter w(names);
  w.data(n.op->kind());
  w.data(n.type.str());
  // The inputs by position (a repeated input is the same position) and what the pass may read of
  // each: its type and whether it is a program input, a parameter or a computed value.
  w.number(static_cast<int64_t>(n.inputs.size()));
  for (const std::string& in : n.inputs) {
    w.name(in);
    const Node* producer = g.find(in);
    if (producer == nullptr) return std::nullopt;
    w.data(producer->type.str());
    if (!for_identity) w.data(producer->op ? producer->op->kind() : "-");
  }
  // The kernel's name is a name only; a split kernel keeps the name of the node it came from,
  // which is none of its buffers, so identity leaves it out.
  if (!for_identity) w.name(kernel->name);
  w.field(kernel->body, FieldRole::Data);
  if (const auto* k = n.op_as<KernelOp>()) {
    w.field(k->grid, FieldRole::Data);
    w.field(k->block, FieldRole::Data);
    w.field(k->cluster, FieldRole::Data);
    w.number(k->dynamic_smem);
    write_params(w, k->params);
  }
  w.number(static_cast<int64_t>(n.choices.size()));
  for (const KnobChoice& c : n.choices) {
    w.data(c.pass);
    w.data(c.knob);
    if (!for_identity) w.data(c.source);
    if (const auto* s = std::get_if<std::string>(&c.value)) w.data(*s);
    else w.data(attr_str(c.value));
  }
  return w.take();
}

// ---- renaming a result --------------------------------------------------------------------------

class ResultRenamer {
 public:
  ResultRenamer(const BufferNames& from, const BufferNames& to) : from_(from), to_(to) {}

  std::string rename(std::string_view s) const {
    std::string out;
    out.reserve(s.size());
    from_.scan(
        s, [&](char c) { out += c; }, [&](size_t position) { out += to_[position]; });
    return out;
  }

  // Each returns whether it changed anything; unchanged statements stay shared.
  bool field(std::string& s, FieldRole role) const {
    if (!names_buffers(role)) return false;
    std::string renamed = rename(s);
    if (renamed == s) return false;
    s = std::move(renamed);
    return true;
  }
  bool field(Stmt& s, FieldRole) const {
    if (!s.defined()) return false;
    switch (s.kind()) {
#define TESSERA_X(K)                                   \
  case StmtKind::K: {                                  \
    K copy = *s.as<K>();                               \
    if (!field(copy, FieldRole::Data)) return false;   \
    s = Stmt(std::move(copy));                         \
    return true;                                       \
  }
      TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
    }
    return false;
  }
  template <class T>
  bool field(std::vector<T>& items, FieldRole role) const {
    bool changed = false;
    for (T& item : items) changed = field(item, role) || changed;
    return changed;
  }
  template <Reflected T>
  bool field(T& value, FieldRole) const {
    bool changed = false;
    T::reflect(value, [&](const char*, auto& f, FieldRole role) { changed = field(f, role) || changed; });
    return changed;
  }
  template <class T>
  bool field(T&, FieldRole) const {
    return false;  // numbers, enums, types and expressions never name a graph buffer
  }

  void params(std::vector<KernelParam>& params) const {
    for (KernelParam& p : params) {
      if (p.kind != ParamKind::Scalar) p.name = rename(p.name);
      p.tensor_map.buffer = rename(p.tensor_map.buffer);
    }
  }

 private:
  const BufferNames& from_;
  const BufferNames& to_;
};

}  // namespace

std::optional<uint64_t> kernel_structural_hash(const Graph& g, const Node& n) {
  std::optional<Signature> sig = signature(g, n, /*for_identity=*/true);
  if (!sig) return std::nullopt;
  // The text, then each expression's structural hash (stable by construction), byte by byte.
  uint64_t h = hash_text(sig->text);
  for (const Expr& e : sig->exprs) {
    const uint64_t eh = structural_hash(e);
    char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(eh >> (8 * i));
    h = hash_text(std::string_view(bytes, sizeof bytes), h);
  }
  return h;
}

std::vector<size_t> group_equal_kernels(const Graph& g, const std::vector<const Node*>& kernels) {
  std::vector<size_t> rep(kernels.size());
  std::unordered_map<std::string, std::vector<std::pair<size_t, Signature>>> by_text;
  for (size_t k = 0; k < kernels.size(); ++k) {
    rep[k] = k;
    std::optional<Signature> sig = signature(g, *kernels[k]);
    if (!sig) continue;
    std::vector<std::pair<size_t, Signature>>& bucket = by_text[sig->text];
    bool found = false;
    for (const auto& [first, seen] : bucket) {
      if (seen == *sig) {
        rep[k] = first;
        found = true;
        break;
      }
    }
    if (!found) bucket.emplace_back(k, std::move(*sig));
  }
  return rep;
}

std::vector<size_t> KernelGroups::representatives(const Graph& g, const std::vector<const Node*>& kernels) {
  if (!valid_) {
    const std::vector<size_t> rep = group_equal_kernels(g, kernels);
    representative_.clear();
    for (size_t k = 0; k < kernels.size(); ++k) representative_[kernels[k]->id()] = kernels[rep[k]]->id();
    valid_ = true;
    return rep;
  }
  std::unordered_map<std::string, size_t> index;
  for (size_t k = 0; k < kernels.size(); ++k) index.emplace(kernels[k]->id(), k);
  std::vector<size_t> rep(kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    rep[k] = k;
    auto it = representative_.find(kernels[k]->id());
    if (it == representative_.end()) continue;
    auto at = index.find(it->second);
    if (at != index.end() && at->second <= k) rep[k] = at->second;
  }
  return rep;
}

KernelBufferNames::KernelBufferNames(const Node& n) {
  for (const std::string& in : n.inputs) add(in);
  add(n.id());
}

void KernelBufferNames::add(const std::string& name) {
  if (index_.count(name)) return;
  longest_ = std::max(longest_, name.size());
  index_.emplace(name, names_.size());
  names_.push_back(name);
}

std::optional<size_t> KernelBufferNames::position(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

BufferRenaming::BufferRenaming(const Node& representative, const Node& member) : from_(representative), to_(member) {}

std::string BufferRenaming::rename(const std::string& text) const { return ResultRenamer(from_, to_).rename(text); }

bool BufferRenaming::apply(const Node& rewritten, Node& member) const {
  // Equal signatures imply the same buffer positions; checked anyway, as the renaming indexes by them.
  if (from_.size() != to_.size()) return false;
  const ResultRenamer renamer(from_, to_);
  std::vector<std::string> inputs;
  for (const std::string& in : rewritten.inputs) {
    std::optional<size_t> position = from_.position(in);
    if (!position) return false;
    inputs.push_back(to_[*position]);
  }
  std::unique_ptr<Op> op = rewritten.op->clone();
  if (auto* kernel = dynamic_cast<KernelLikeOp*>(op.get())) {
    kernel->name = renamer.rename(kernel->name);
    renamer.field(kernel->body, FieldRole::Data);
    if (auto* k = dynamic_cast<KernelOp*>(op.get())) renamer.params(k->params);
  } else if (auto* cuda = dynamic_cast<CudaOp*>(op.get())) {
    // The representative's source and function name, launched with the member's buffers.
    renamer.params(cuda->params);
  } else {
    return false;
  }
  member.op = std::move(op);
  member.type = rewritten.type;
  member.choices = rewritten.choices;
  if (!(member.inputs == inputs)) member.inputs = inputs;
  return true;
}

}  // namespace tessera

// Python-style argument binding (positional, keyword, defaults, *varargs, keyword-only) and the
// typed argument accessors used by the torch catalog.
#include "call_signature.h"

#include <charconv>

#include "spelling_suggestion.h"
#include "tessera/support/internal_check.h"

namespace tessera::torch_expr {
namespace {

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(' ');
  size_t e = s.find_last_not_of(' ');
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// Signature defaults are written by us in the catalog, so a malformed one is a programming error.
TracedValue parse_default(const std::string& text) {
  if (text == "None") return NoneValue{};
  if (text == "True") return true;
  if (text == "False") return false;
  if (text == "()") return SequenceValue{};
  if (text.size() >= 2 && text.front() == '\'' && text.back() == '\'') return text.substr(1, text.size() - 2);
  int64_t i = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
  if (ec == std::errc() && p == text.data() + text.size()) return i;
  double d = 0;
  auto [q, ec2] = std::from_chars(text.data(), text.data() + text.size(), d);
  TESSERA_INTERNAL_CHECK(ec2 == std::errc() && q == text.data() + text.size(), "bad default in a catalog signature");
  (void)q;
  (void)ec2;
  return d;
}

std::string plural(size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

}  // namespace

// ---- CallSignature ---------------------------------------------------------------------------

CallSignature::CallSignature(std::string_view params) : text_(params) {
  bool keyword_only = false;
  size_t start = 0;
  while (start <= params.size() && !params.empty()) {
    size_t comma = params.find(',', start);
    if (comma == std::string_view::npos) comma = params.size();
    std::string piece = trim(params.substr(start, comma - start));
    start = comma + 1;
    if (piece.empty()) continue;
    if (piece == "*") {
      keyword_only = true;
      continue;
    }
    Param p;
    if (piece.front() == '*') {
      p.var_positional = true;
      piece = piece.substr(1);
      keyword_only = true;  // parameters after *args are keyword-only
    } else {
      p.keyword_only = keyword_only;
    }
    size_t eq = piece.find('=');
    if (eq != std::string::npos) {
      p.default_value = parse_default(trim(std::string_view(piece).substr(eq + 1)));
      piece = trim(std::string_view(piece).substr(0, eq));
    }
    p.name = piece;
    params_.push_back(std::move(p));
  }
}

std::vector<std::string> CallSignature::parameter_names() const {
  std::vector<std::string> names;
  for (const Param& p : params_)
    if (!p.var_positional) names.push_back(p.name);
  return names;
}

Expected<BoundArguments> CallSignature::bind(const std::vector<ArgumentValue>& args, const CallSite& site,
                                             const SourceText& source) const {
  BoundArguments bound(source, site);
  const std::string callee = site.callee + "()";
  auto with_signature = [&](Diagnostic d) {
    d.note("signature: " + site.callee + str());
    return d;
  };

  std::vector<const Param*> positional;
  const Param* var_positional = nullptr;
  for (const Param& p : params_) {
    if (p.var_positional) var_positional = &p;
    else if (!p.keyword_only) positional.push_back(&p);
  }
  SequenceValue varargs;
  SourceSpan varargs_span;

  size_t next_positional = 0;
  size_t positional_given = 0;
  for (const ArgumentValue& a : args)
    if (a.keyword.empty()) ++positional_given;
  for (const ArgumentValue& a : args) {
    if (!a.keyword.empty()) continue;
    if (next_positional < positional.size()) {  // parameters before *args fill first
      const Param* p = positional[next_positional++];
      bound.slots_[p->name] = {a.value, a.span, true};
    } else if (var_positional) {
      varargs.items.push_back(a.value);
      varargs_span = SourceSpan::cover(varargs_span, a.span);
    } else {
      std::string msg = callee + " takes " + plural(positional.size(), "positional argument") + " but " +
                        std::to_string(positional_given) + (positional_given == 1 ? " was" : " were") + " given";
      return with_signature(source.error(a.span, msg));
    }
  }
  if (var_positional) bound.slots_[var_positional->name] = {varargs, varargs_span.valid() ? varargs_span : site.span,
                                                            !varargs.items.empty()};

  for (const ArgumentValue& a : args) {
    if (a.keyword.empty()) continue;
    const Param* match = nullptr;
    for (const Param& p : params_)
      if (!p.var_positional && p.name == a.keyword) match = &p;
    if (!match && var_positional && var_positional->name == a.keyword && varargs.items.empty()) {
      // PyTorch's `torch.randn(size=(2, 3))`: the keyword gives the whole *size as one tuple.
      bound.slots_[var_positional->name] = {SequenceValue{{a.value}, false, {}}, SourceSpan::cover(a.keyword_span, a.span), true};
      continue;
    }
    if (!match) {
      std::string msg = callee + " got an unexpected keyword argument '" + a.keyword + "'" +
                        did_you_mean(a.keyword, parameter_names());
      return with_signature(source.error(a.keyword_span, msg));
    }
    if (bound.slots_.count(match->name))
      return with_signature(source.error(a.keyword_span, callee + " got multiple values for argument '" + a.keyword + "'"));
    bound.slots_[match->name] = {a.value, SourceSpan::cover(a.keyword_span, a.span), true};
  }

  for (const Param& p : params_) {
    if (bound.slots_.count(p.name)) continue;
    if (!p.default_value)
      return with_signature(source.error(site.span, callee + " missing required argument '" + p.name + "'"));
    bound.slots_[p.name] = {*p.default_value, site.span, false};
  }
  return bound;
}

// ---- BoundArguments --------------------------------------------------------------------------

const TracedValue& BoundArguments::value(const std::string& name) const {
  auto it = slots_.find(name);
  TESSERA_INTERNAL_CHECK(it != slots_.end(), "catalog code asked for a parameter its signature lacks");
  return it->second.value;
}

bool BoundArguments::given(const std::string& name) const {
  auto it = slots_.find(name);
  return it != slots_.end() && it->second.given;
}

SourceSpan BoundArguments::span(const std::string& name) const {
  auto it = slots_.find(name);
  return it == slots_.end() ? site_.span : it->second.span;
}

Diagnostic BoundArguments::error(const std::string& name, std::string message) const {
  return source_->error(span(name), std::move(message));
}

Diagnostic BoundArguments::type_error(const std::string& name, std::string_view expected) const {
  return error(name, "argument '" + name + "' of " + site_.callee + "() must be " + std::string(expected) +
                         ", got " + describe_value(value(name)));
}

Expected<std::string> BoundArguments::tensor(const std::string& name) const {
  if (const auto* t = value(name).as<TensorValue>()) return t->node;
  return type_error(name, "a tensor");
}

Expected<std::optional<std::string>> BoundArguments::optional_tensor(const std::string& name) const {
  if (is_none(name)) return std::optional<std::string>();
  if (const auto* t = value(name).as<TensorValue>()) return std::optional<std::string>(t->node);
  return type_error(name, "a tensor or None");
}

Expected<int64_t> BoundArguments::integer(const std::string& name) const {
  if (const auto* i = value(name).as<int64_t>()) return *i;
  return type_error(name, "an int");
}

Expected<std::optional<int64_t>> BoundArguments::optional_integer(const std::string& name) const {
  if (is_none(name)) return std::optional<int64_t>();
  if (const auto* i = value(name).as<int64_t>()) return std::optional<int64_t>(*i);
  return type_error(name, "an int or None");
}

Expected<double> BoundArguments::number(const std::string& name) const {
  const TracedValue& v = value(name);
  if (v.is<int64_t>() || v.is<double>()) return v.number();
  return type_error(name, "a number");
}

Expected<std::optional<double>> BoundArguments::optional_number(const std::string& name) const {
  if (is_none(name)) return std::optional<double>();
  const TracedValue& v = value(name);
  if (v.is<int64_t>() || v.is<double>()) return std::optional<double>(v.number());
  return type_error(name, "a number or None");
}

Expected<bool> BoundArguments::boolean(const std::string& name) const {
  if (const auto* b = value(name).as<bool>()) return *b;
  return type_error(name, "True or False");
}

Expected<std::string> BoundArguments::string(const std::string& name) const {
  if (const auto* s = value(name).as<std::string>()) return *s;
  return type_error(name, "a string");
}

Expected<std::vector<int64_t>> BoundArguments::int_list(const std::string& name) const {
  const TracedValue& v = value(name);
  if (const auto* i = v.as<int64_t>()) return std::vector<int64_t>{*i};
  if (const auto* seq = v.as<SequenceValue>()) {
    std::vector<int64_t> out;
    for (const TracedValue& item : seq->items) {
      const auto* i = item.as<int64_t>();
      if (!i) return type_error(name, "an int or a tuple of ints");
      out.push_back(*i);
    }
    return out;
  }
  return type_error(name, "an int or a tuple of ints");
}

Expected<std::optional<std::vector<int64_t>>> BoundArguments::optional_int_list(const std::string& name) const {
  if (is_none(name)) return std::optional<std::vector<int64_t>>();
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> list, int_list(name));
  return std::optional<std::vector<int64_t>>(std::move(list));
}

Expected<std::optional<DType>> BoundArguments::optional_dtype(const std::string& name) const {
  if (is_none(name)) return std::optional<DType>();
  if (const auto* d = value(name).as<DTypeValue>()) return std::optional<DType>(d->dtype);
  return type_error(name, "a torch dtype such as torch.float16");
}

Expected<std::vector<int64_t>> BoundArguments::sizes(const std::string& name) const {
  const auto* seq = value(name).as<SequenceValue>();
  TESSERA_INTERNAL_CHECK(seq, "sizes() is only used on *size parameters");
  const std::vector<TracedValue>* items = &seq->items;
  if (items->size() == 1)
    if (const auto* inner = (*items)[0].as<SequenceValue>()) items = &inner->items;
  std::vector<int64_t> out;
  for (const TracedValue& item : *items) {
    const auto* i = item.as<int64_t>();
    if (!i)
      return error(name, site_.callee + "() sizes must be ints or one tuple of ints, got " + describe_value(item));
    out.push_back(*i);
  }
  return out;
}

}  // namespace tessera::torch_expr

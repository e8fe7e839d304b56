// The idioms half of the torch catalog (see torch_library.h and docs/torch-ops.md, "Idioms"): what
// LLM code is written in beyond the core ops. Two new targets generate data (`arange`, `full`);
// the logical ops are the table's logical_and/or/not; everything else is composed here from the
// canonical targets, so the reference evaluator and decompose need nothing new for it:
//   RoPE       torch.arange, torch.outer, torch.einsum, repeat_interleave
//   masks      tril/triu, masked_fill, & | ^ ~ on bool tensors, x[idx], argmax/argmin, log_softmax,
//              scaled_dot_product_attention(attn_mask=...)
//   precision  softmax/log_softmax(dtype=), type_as, type(dtype)
//   also       clamp/clip, var/std, *_like constructors, torch.add/sub(alpha=), torch.div(rounding_mode=
//              'trunc'), torch.concatenate(axis=), unbind, a scalar first operand of sub/div,
//              any/all and logsumexp (with PyTorch's values over an empty dim: see fold_empty_tensors.h)
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "shape_inference.h"
#include "torch_library.h"

namespace tessera::torch_expr {
namespace {

// A CallSite for an intermediate node: same place and callee, but not the assigned variable's node.
CallSite intermediate(const CallSite& site) {
  CallSite s = site;
  s.name_hint.clear();
  return s;
}


const std::string& node_of(const TracedValue& v) { return v.as<TensorValue>()->node; }

}  // namespace

void TorchLibrary::register_idioms() {
  // Model structure: the containers are built by the tracer (they hold other modules); Dropout and
  // Identity return their input (Tessera compiles inference, as after module.eval()).
  const std::string nn = "torch.nn.";
  modules_.emplace(nn + "ModuleList", ModuleEntry{CallSignature("modules=None"), ""});
  modules_.emplace(nn + "Sequential", ModuleEntry{CallSignature("*args"), ""});
  modules_.emplace(nn + "Dropout", ModuleEntry{CallSignature("p=0.5, inplace=False"), "identity"});
  modules_.emplace(nn + "Identity", ModuleEntry{CallSignature("*args"), "identity"});
  functions_.emplace("torch.nn.functional.dropout",
                     FunctionEntry{CallSignature("input, p=0.5, training=True, inplace=False"),
                                   [](const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(double p, a.number("p"));
    TESSERA_ASSIGN_OR_RETURN(bool training, a.boolean("training"));
    if (p < 0 || p > 1) return a.error("p", "dropout probability has to be between 0 and 1, but got " + std::to_string(p));
    if (training && p > 0)
      return a.error("training", "F.dropout with training=True is random; Tessera compiles inference: pass "
                                 "training=False (or self.training) or p=0");
    return TracedValue(TensorValue{x});
  }});
  register_idiom_generators();
  register_idiom_masks();
  register_idiom_precision();
  register_idiom_math();
}

// ---- generated tensors -------------------------------------------------------------------------

Expected<TracedValue> TorchLibrary::arange(double start, double end, double step, DType dtype, const CallSite& site) {
  if (step == 0.0) return builder_.error(site.span, site.callee + "(): step must be nonzero");
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    return builder_.error(site.span, site.callee + "(): start, end and step must be finite");
  const double count = std::ceil((end - start) / step);
  if (!(count >= 1))
    return builder_.error(site.span, site.callee + "(): the range is empty (start " + std::to_string(start) + ", end " +
                                         std::to_string(end) + ", step " + std::to_string(step) +
                                         "); an empty range is not supported (empty slices are)");
  if (count > 1e12) return builder_.error(site.span, site.callee + "(): the range is too large");
  if (dtype == DType::Bool) return builder_.error(site.span, site.callee + "(): bool is not a valid dtype for arange");
  Attrs attrs;
  attrs.set("start", start);
  attrs.set("step", step);
  return emit(TorchNodeSpec{"arange", {}, {}, std::move(attrs), TensorType{Shape{static_cast<int64_t>(count)}, dtype}},
              site);
}

Expected<TracedValue> TorchLibrary::full(const Shape& shape, double value, DType dtype, const CallSite& site) {
  if (!dtype_is_float(dtype) && !std::isfinite(value))
    return builder_.error(site.span, site.callee + "(): value " + std::to_string(value) + " cannot be converted to " +
                                         std::string(dtype_name(dtype)));
  Attrs attrs;
  attrs.set("value", dtype == DType::Bool ? (value != 0.0 ? 1.0 : 0.0) : value);
  return emit(TorchNodeSpec{"full", {}, {}, std::move(attrs), TensorType{shape, dtype}}, site);
}

void TorchLibrary::register_idiom_generators() {
  functions_.emplace("torch.arange",
                     FunctionEntry{CallSignature("*args, start=None, end=None, step=None, dtype=None, device=None, "
                                                 "requires_grad=False"),
                                   [this](const BoundArguments& a) -> Expected<TracedValue> {
    // arange(end), arange(start, end), arange(start, end, step); keywords fill the same three.
    const auto& positional = a.value("args").as<SequenceValue>()->items;
    if (positional.size() > 3) return a.error("args", "torch.arange() takes at most 3 positional arguments");
    std::vector<std::optional<TracedValue>> parts(3);  // start, end, step
    if (positional.size() == 1) parts[1] = positional[0];
    for (size_t i = 0; positional.size() > 1 && i < positional.size(); ++i) parts[i] = positional[i];
    const char* names[] = {"start", "end", "step"};
    for (size_t i = 0; i < 3; ++i) {
      if (a.is_none(names[i])) continue;
      if (parts[i]) return a.error(names[i], std::string("torch.arange() got multiple values for '") + names[i] + "'");
      parts[i] = a.value(names[i]);
    }
    if (!parts[1]) return builder_.error(a.site().span, "torch.arange() missing required argument 'end'");
    bool any_float = false;
    double values[3] = {0.0, 0.0, 1.0};
    for (size_t i = 0; i < 3; ++i) {
      if (!parts[i]) continue;
      if (!parts[i]->is_number())
        return a.error(positional.empty() ? names[i] : "args", std::string("torch.arange(): ") + names[i] +
                                                                 " must be a number, got " + describe_value(*parts[i]));
      any_float = any_float || parts[i]->is<double>();
      values[i] = parts[i]->number();
    }
    TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
    // PyTorch: int64 unless an argument is a float (then the default float dtype).
    DType dt = dtype.value_or(any_float ? builder_.default_dtype() : DType::I64);
    return arange(values[0], values[1], values[2], dt, a.site());
  }});

  // zeros_like / ones_like / full_like / empty_like: a constant of x's shape (empty_like is zeros).
  for (std::string kind : {"zeros_like", "ones_like", "full_like", "empty_like"}) {
    std::string params = kind == "full_like" ? "input, fill_value, *, dtype=None, device=None, requires_grad=False, "
                                               "memory_format=None"
                                             : "input, *, dtype=None, device=None, requires_grad=False, memory_format=None";
    functions_.emplace("torch." + kind, FunctionEntry{CallSignature(params), [this, kind](const BoundArguments& a)
                                                                                 -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
      TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
      double value = kind == "ones_like" ? 1.0 : 0.0;
      DType dt = dtype.value_or(type(x).dtype);
      if (kind == "full_like") {
        const TracedValue& v = a.value("fill_value");
        if (!v.is_number()) return a.error("fill_value", "torch.full_like(): fill_value must be a number, got " + describe_value(v));
        value = v.number();
      }
      return full(type(x).shape, value, dt, a.site());
    }});
  }
  for (std::string kind : {"new_zeros", "new_ones", "new_full"}) {
    std::string params = kind == "new_full" ? "size, fill_value, *, dtype=None, device=None, requires_grad=False"
                                            : "*size, dtype=None, device=None, requires_grad=False";
    methods_.emplace(kind, MethodEntry{CallSignature(params), [this, kind](const std::string& self, const BoundArguments& a)
                                                                  -> Expected<TracedValue> {
      std::vector<int64_t> sizes;
      if (kind == "new_full") {
        TESSERA_ASSIGN_OR_RETURN(sizes, a.int_list("size"));
      } else {
        TESSERA_ASSIGN_OR_RETURN(sizes, a.sizes("size"));
      }
      for (int64_t s : sizes)
        if (s < 0) return a.error("size", a.site().callee + "(): sizes must be non-negative, got " + shape_str(Shape(sizes.begin(), sizes.end())));
      TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
      double value = kind == "new_ones" ? 1.0 : 0.0;
      if (kind == "new_full") {
        const TracedValue& v = a.value("fill_value");
        if (!v.is_number()) return a.error("fill_value", a.site().callee + "(): fill_value must be a number");
        value = v.number();
      }
      return full(Shape(sizes.begin(), sizes.end()), value, dtype.value_or(type(self).dtype), a.site());
    }});
  }

  // torch.tensor([...]): a literal from nested lists of numbers, built from `full` pieces and one
  // `cat` (a single `full` when every element is equal).
  functions_.emplace("torch.tensor", FunctionEntry{CallSignature("data, *, dtype=None, device=None, requires_grad=False"),
                                                   [this](const BoundArguments& a) -> Expected<TracedValue> {
    constexpr size_t kMaxLiteralElements = 1024;
    std::vector<int64_t> shape;
    std::vector<TracedValue> flat;
    bool shape_known = false;
    std::function<Status(const TracedValue&, size_t)> walk = [&](const TracedValue& v, size_t depth) -> Status {
      if (const auto* seq = v.as<SequenceValue>()) {
        if (!shape_known && depth == shape.size()) shape.push_back(static_cast<int64_t>(seq->items.size()));
        if (depth >= shape.size() || shape[depth] != static_cast<int64_t>(seq->items.size()))
          return a.error("data", "torch.tensor(): the nested lists are not rectangular");
        if (seq->items.empty()) return a.error("data", "torch.tensor(): an empty literal is not supported (empty slices are)");
        for (const TracedValue& item : seq->items) TESSERA_TRY(walk(item, depth + 1));
        return Status::ok();
      }
      if (v.is<TensorValue>())
        return a.error("data", "torch.tensor() of tensors is not supported; use torch.stack");
      if (!v.is_number()) return a.error("data", "torch.tensor(): expected numbers, got " + describe_value(v));
      if (!shape_known) shape_known = true;
      if (depth != shape.size()) return a.error("data", "torch.tensor(): the nested lists are not rectangular");
      if (flat.size() >= kMaxLiteralElements)
        return a.error("data", "torch.tensor(): literals of more than " + std::to_string(kMaxLiteralElements) +
                                   " elements are not supported");
      flat.push_back(v);
      return Status::ok();
    };
    TESSERA_TRY(walk(a.value("data"), 0));
    TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
    bool any_float = false, any_int = false;
    for (const TracedValue& v : flat) {
      any_float = any_float || v.is<double>();
      any_int = any_int || v.is<int64_t>();
    }
    // PyTorch: float32 (the default) if any element is a float, else int64, else bool.
    const DType dt = dtype.value_or(any_float ? builder_.default_dtype() : any_int ? DType::I64 : DType::Bool);
    const Shape out_shape(shape.begin(), shape.end());
    bool uniform = true;
    for (const TracedValue& v : flat) uniform = uniform && v.number() == flat[0].number();
    if (uniform) return full(out_shape, flat[0].number(), dt, a.site());
    std::vector<std::string> pieces;
    for (const TracedValue& v : flat) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue piece, full(Shape{1}, v.number(), dt, intermediate(a.site())));
      pieces.push_back(node_of(piece));
    }
    const bool reshape_after = shape.size() != 1;
    TESSERA_ASSIGN_OR_RETURN(TracedValue joined, cat(pieces, 0, reshape_after ? intermediate(a.site()) : a.site()));
    if (!reshape_after) return joined;
    return reshape(node_of(joined), shape, a.site());
  }});

  // torch.outer(a, b) = a[:, None] * b[None, :] (also torch.ger).
  for (std::string name : {"outer", "ger"}) {
    auto do_outer = [this](const std::string& x, const std::string& y, const CallSite& site) -> Expected<TracedValue> {
      if (type(x).rank() != 1 || type(y).rank() != 1)
        return builder_.error(site.span, site.callee + "(): expects two 1-D tensors, got shapes " +
                                             shape_str(type(x).shape) + " and " + shape_str(type(y).shape));
      TESSERA_ASSIGN_OR_RETURN(TracedValue col, unsqueeze(x, 1, intermediate(site)));
      return elementwise("mul", col, TensorValue{y}, site);
    };
    functions_.emplace("torch." + name, FunctionEntry{CallSignature("input, vec2"), [do_outer](const BoundArguments& a)
                                                                                        -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
      TESSERA_ASSIGN_OR_RETURN(std::string y, a.tensor("vec2"));
      return do_outer(x, y, a.site());
    }});
    methods_.emplace(name, MethodEntry{CallSignature("vec2"), [do_outer](const std::string& self, const BoundArguments& a)
                                                                  -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string y, a.tensor("vec2"));
      return do_outer(self, y, a.site());
    }});
  }

  functions_.emplace("torch.einsum", FunctionEntry{CallSignature("equation, *operands"), [this](const BoundArguments& a)
                                                                                            -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string equation, a.string("equation"));
    std::vector<TracedValue> items = a.value("operands").as<SequenceValue>()->items;
    // einsum('ij,jk', [a, b]) passes the operands as one list.
    if (items.size() == 1)
      if (const auto* seq = items[0].as<SequenceValue>()) items = seq->items;
    std::vector<std::string> operands;
    for (const TracedValue& v : items) {
      const auto* t = v.as<TensorValue>();
      if (!t) return a.error("operands", "torch.einsum(): operands must be tensors, got " + describe_value(v));
      operands.push_back(t->node);
    }
    Expected<TracedValue> r = einsum(equation, operands, a.site());
    if (!r && r.error().loc.line == 0) return a.error("equation", r.error().message);
    return r;
  }});

  auto do_repeat_interleave = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    const TracedValue& repeats = a.value("repeats");
    if (repeats.is<TensorValue>())
      return a.error("repeats", a.site().callee + "(): repeats given as a tensor is not supported (the output shape "
                                                  "would depend on data); pass an int");
    TESSERA_ASSIGN_OR_RETURN(int64_t r, a.integer("repeats"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, a.optional_integer("dim"));
    if (r <= 0) return a.error("repeats", a.site().callee + "(): repeats must be positive, got " + std::to_string(r));
    return repeat_interleave(x, r, dim, a.site());
  };
  functions_.emplace("torch.repeat_interleave",
                     FunctionEntry{CallSignature("input, repeats, dim=None, *, output_size=None"),
                                   [do_repeat_interleave](const BoundArguments& a) -> Expected<TracedValue> {
                                     TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                     return do_repeat_interleave(x, a);
                                   }});
  methods_.emplace("repeat_interleave", MethodEntry{CallSignature("repeats, dim=None, *, output_size=None"),
                                                    do_repeat_interleave});

  // x.repeat(*sizes): tiles x; each dim becomes (repeat, size) expanded, then merged.
  methods_.emplace("repeat", MethodEntry{CallSignature("*sizes"), [this](const std::string& self, const BoundArguments& a)
                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> reps, a.sizes("sizes"));
    const TensorType t = type(self);
    if (static_cast<int64_t>(reps.size()) < t.rank())
      return a.error("sizes", a.site().callee + "(): the number of repeats (" + std::to_string(reps.size()) +
                                  ") cannot be smaller than the number of dimensions (" + std::to_string(t.rank()) + ")");
    for (int64_t r : reps)
      if (r < 0) return a.error("sizes", a.site().callee + "(): repeats must be non-negative, got " + std::to_string(r));
    std::vector<int64_t> sizes = dims_of(t.shape);
    sizes.insert(sizes.begin(), reps.size() - sizes.size(), 1);
    std::vector<int64_t> interleaved, expanded, merged;
    for (size_t d = 0; d < reps.size(); ++d) {
      interleaved.insert(interleaved.end(), {1, sizes[d]});
      expanded.insert(expanded.end(), {reps[d], sizes[d]});
      merged.push_back(reps[d] * sizes[d]);
    }
    TESSERA_ASSIGN_OR_RETURN(TracedValue v, reshape(self, interleaved, intermediate(a.site())));
    TESSERA_ASSIGN_OR_RETURN(v, expand(node_of(v), expanded, intermediate(a.site())));
    return reshape(node_of(v), merged, a.site());
  }});
}

Expected<TracedValue> TorchLibrary::repeat_interleave(const std::string& x, int64_t repeats, std::optional<int64_t> dim,
                                                      const CallSite& site) {
  std::string input = x;
  if (!dim) {  // PyTorch flattens first
    TESSERA_ASSIGN_OR_RETURN(TracedValue flat, reshape(x, {num_elements(type(x).shape)}, intermediate(site)));
    input = node_of(flat);
    dim = 0;
  }
  const TensorType t = type(input);
  Expected<int64_t> d = normalize_dim(*dim, t.rank());
  if (!d || t.rank() == 0) return located(site, d ? make_error("a 0-d tensor has no dim to repeat along") : d.error());
  if (repeats == 1) return TracedValue(TensorValue{input});
  // (.., n, ..) -> (.., n, 1, ..) -> expand (.., n, r, ..) -> reshape (.., n * r, ..).
  TESSERA_ASSIGN_OR_RETURN(TracedValue v, unsqueeze(input, *d + 1, intermediate(site)));
  std::vector<int64_t> sizes = dims_of(type(node_of(v)).shape);
  sizes[static_cast<size_t>(*d + 1)] = repeats;
  TESSERA_ASSIGN_OR_RETURN(v, expand(node_of(v), sizes, intermediate(site)));
  std::vector<int64_t> merged = dims_of(t.shape);
  merged[static_cast<size_t>(*d)] *= repeats;
  return reshape(node_of(v), merged, site);
}

// einsum by broadcasting: every operand is permuted into the order (output labels, contracted
// labels) with size-1 dims for the labels it lacks, the operands are multiplied (broadcast), and
// the contracted labels are summed away. The same product space decompose builds for matmul.
Expected<TracedValue> TorchLibrary::einsum(const std::string& equation, const std::vector<std::string>& operands,
                                           const CallSite& site) {
  auto fail = [&](const std::string& message) -> Diagnostic {
    return make_error("torch.einsum(): " + message);
  };
  if (operands.empty() || operands.size() > 2)
    return fail("only one or two operands are supported, got " + std::to_string(operands.size()));
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq += ch;
  std::string lhs = eq, rhs;
  const size_t arrow = eq.find("->");
  const bool explicit_output = arrow != std::string::npos;
  if (explicit_output) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    return fail("the equation '" + equation + "' names " + std::to_string(terms.size()) + " operand(s) but " +
                std::to_string(operands.size()) + " were given");

  // Each operand's labels; '...' becomes labels '0', '1', ... for the broadcast dims (right-aligned).
  int64_t ellipsis_rank = 0;
  for (size_t o = 0; o < operands.size(); ++o) {
    const size_t dots = terms[o].find("...");
    if (dots == std::string::npos) continue;
    if (terms[o].find("...", dots + 3) != std::string::npos) return fail("'...' may appear only once per operand");
    ellipsis_rank = std::max(ellipsis_rank, type(operands[o]).rank() - static_cast<int64_t>(terms[o].size() - 3));
  }
  std::vector<std::vector<char>> labels(operands.size());
  std::map<char, int64_t> size_of;
  std::map<char, int> occurrences;
  std::string first_seen;
  for (size_t o = 0; o < operands.size(); ++o) {
    const TensorType& t = type(operands[o]);
    const std::string& term = terms[o];
    size_t dots = term.find("...");
    std::string letters = term;
    if (dots != std::string::npos) letters.erase(dots, 3);
    for (char ch : letters)
      if (!std::isalpha(static_cast<unsigned char>(ch)))
        return fail("invalid subscript '" + std::string(1, ch) + "' in '" + equation + "' (use letters and '...')");
    const int64_t named = static_cast<int64_t>(letters.size());
    if (dots == std::string::npos ? named != t.rank() : named > t.rank())
      return fail("the subscripts '" + term + "' do not match operand " + std::to_string(o) + " of shape " +
                  shape_str(t.shape));
    const int64_t ell = dots == std::string::npos ? 0 : t.rank() - named;
    std::set<char> seen;
    for (size_t i = 0; i < term.size();) {
      if (term.compare(i, 3, "...") == 0) {
        for (int64_t e = 0; e < ell; ++e) labels[o].push_back(static_cast<char>('0' + ellipsis_rank - ell + e));
        i += 3;
        continue;
      }
      char ch = term[i++];
      if (!seen.insert(ch).second)
        return fail("subscript '" + std::string(1, ch) + "' repeats in operand " + std::to_string(o) +
                    " (diagonals are not supported)");
      labels[o].push_back(ch);
    }
    if (ellipsis_rank > 10) return fail("too many dims under '...'");
    for (size_t d = 0; d < labels[o].size(); ++d) {
      char ch = labels[o][d];
      int64_t n = t.dim(static_cast<int64_t>(d));
      auto [it, inserted] = size_of.emplace(ch, n);
      if (!inserted && it->second != n) {
        if (it->second == 1) it->second = n;
        else if (n != 1)
          return fail("subscript '" + std::string(1, ch) + "' has size " + std::to_string(n) + " in operand " +
                      std::to_string(o) + " but size " + std::to_string(it->second) + " before");
      }
      if (first_seen.find(ch) == std::string::npos) first_seen += ch;
      if (std::isalpha(static_cast<unsigned char>(ch))) ++occurrences[ch];
    }
  }
  // The output labels: as written, else '...' then the letters used once, sorted.
  std::vector<char> out;
  for (int64_t e = 0; e < ellipsis_rank; ++e) out.push_back(static_cast<char>('0' + e));
  if (explicit_output) {
    std::vector<char> written;
    std::set<char> seen;
    for (size_t i = 0; i < rhs.size();) {
      if (rhs.compare(i, 3, "...") == 0) {
        written.insert(written.end(), out.begin(), out.end());
        i += 3;
        continue;
      }
      char ch = rhs[i++];
      if (!std::isalpha(static_cast<unsigned char>(ch)) || !size_of.count(ch))
        return fail("output subscript '" + std::string(1, ch) + "' does not appear in the inputs");
      if (!seen.insert(ch).second) return fail("output subscript '" + std::string(1, ch) + "' repeats");
      written.push_back(ch);
    }
    out = written;
  } else {
    std::string once;
    for (const auto& [ch, n] : occurrences)
      if (n == 1) once += ch;
    std::sort(once.begin(), once.end());
    out.insert(out.end(), once.begin(), once.end());
  }
  std::vector<char> order = out;
  for (char ch : first_seen)
    if (std::find(order.begin(), order.end(), ch) == order.end()) order.push_back(ch);
  const size_t contracted_from = out.size();

  // Bring each operand into `order`, with size-1 dims for labels it lacks.
  std::vector<std::string> aligned;
  for (size_t o = 0; o < operands.size(); ++o) {
    std::vector<int64_t> perm;
    std::vector<int64_t> shape;
    for (char ch : order) {
      auto it = std::find(labels[o].begin(), labels[o].end(), ch);
      if (it == labels[o].end()) {
        shape.push_back(1);
        continue;
      }
      int64_t d = it - labels[o].begin();
      perm.push_back(d);
      shape.push_back(type(operands[o]).dim(d));
    }
    std::string v = operands[o];
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
    if (!identity) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue p, permute(v, perm, intermediate(site)));
      v = node_of(p);
    }
    if (static_cast<int64_t>(shape.size()) != type(v).rank()) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue r, reshape(v, shape, intermediate(site)));
      v = node_of(r);
    }
    aligned.push_back(v);
  }
  std::vector<int64_t> contracted;
  for (size_t d = contracted_from; d < order.size(); ++d) contracted.push_back(static_cast<int64_t>(d));
  CallSite last_site = contracted.empty() ? site : intermediate(site);
  std::string product = aligned[0];
  if (aligned.size() == 2) {
    if (type(aligned[0]).dtype != type(aligned[1]).dtype)
      return fail("operands must have the same dtype, got " + std::string(dtype_name(type(aligned[0]).dtype)) + " and " +
                  std::string(dtype_name(type(aligned[1]).dtype)));
    TESSERA_ASSIGN_OR_RETURN(TracedValue m, elementwise("mul", TensorValue{aligned[0]}, TensorValue{aligned[1]}, last_site));
    product = node_of(m);
  } else if (contracted.empty() && product == operands[0]) {
    return TracedValue(TensorValue{product});
  }
  if (contracted.empty()) return TracedValue(TensorValue{product});
  // Labels of size 1 in every operand still have to go: sum handles them too.
  return reduction("sum", product, contracted, false, site);
}

// ---- masks -------------------------------------------------------------------------------------

Expected<TracedValue> TorchLibrary::triangle(const std::string& x, int64_t diagonal, bool lower, const CallSite& site) {
  const TensorType t = type(x);
  if (t.rank() < 2)
    return builder_.error(site.span, site.callee + "(): input tensor must have at least 2 dimensions, got shape " +
                                         shape_str(t.shape));
  const int64_t m = t.dim(t.rank() - 2), n = t.dim(t.rank() - 1);
  if (num_elements(t.shape) == 0) return TracedValue(TensorValue{x});  // empty stays empty (no arange of 0)
  // keep(i, j) = j - i <= diagonal (tril) / >= diagonal (triu), from two aranges.
  TESSERA_ASSIGN_OR_RETURN(TracedValue rows, arange(0, static_cast<double>(m), 1, DType::I64, intermediate(site)));
  TESSERA_ASSIGN_OR_RETURN(TracedValue cols, arange(0, static_cast<double>(n), 1, DType::I64, intermediate(site)));
  TESSERA_ASSIGN_OR_RETURN(TracedValue rows_col, unsqueeze(node_of(rows), 1, intermediate(site)));
  TESSERA_ASSIGN_OR_RETURN(TracedValue offset, elementwise("sub", cols, rows_col, intermediate(site)));
  TESSERA_ASSIGN_OR_RETURN(TracedValue keep, elementwise(lower ? "le" : "ge", offset, TracedValue(diagonal),
                                                         intermediate(site), true));
  if (t.dtype == DType::Bool) return logical("logical_and", TensorValue{x}, keep, site);
  return where(node_of(keep), TensorValue{x}, TracedValue(int64_t{0}), site);
}

Expected<TracedValue> TorchLibrary::masked_fill(const std::string& x, const std::string& mask, const TracedValue& value,
                                                const CallSite& site) {
  const TensorType t = type(x);
  if (type(mask).dtype != DType::Bool)
    return builder_.error(site.span, site.callee + "(): the mask must be a bool tensor, got " +
                                         std::string(dtype_name(type(mask).dtype)));
  Expected<Shape> shape = broadcast_shapes(t.shape, type(mask).shape);
  if (!shape || *shape != t.shape)
    return builder_.error(site.span, site.callee + "(): the mask of shape " + shape_str(type(mask).shape) +
                                         " does not broadcast to the input's shape " + shape_str(t.shape));
  if (const auto* v = value.as<TensorValue>()) {
    if (type(v->node).rank() != 0)
      return builder_.error(site.span, site.callee + "(): only supports a 0-dimensional value tensor, got shape " +
                                           shape_str(type(v->node).shape));
  } else if (!value.is_number()) {
    return builder_.error(site.span, site.callee + "(): value must be a number or a 0-d tensor, got " + describe_value(value));
  } else if (!dtype_is_float(t.dtype) && !std::isfinite(value.number())) {
    return builder_.error(site.span, site.callee + "(): value " + std::to_string(value.number()) +
                                         " cannot be converted to " + std::string(dtype_name(t.dtype)));
  }
  // The result keeps x's dtype (the value is converted), unlike where's promotion.
  const DType promoted = value.is<TensorValue>()
                             ? promote_types(t.dtype, type(node_of(value)).dtype)
                             : promote_with_scalar(t.dtype, value.is<double>(), value.is<int64_t>(), builder_.default_dtype());
  if (promoted == t.dtype) return where(mask, value, TensorValue{x}, site);
  TESSERA_ASSIGN_OR_RETURN(TracedValue filled, where(mask, value, TensorValue{x}, intermediate(site)));
  return cast(node_of(filled), t.dtype, site);
}

Expected<TracedValue> TorchLibrary::logical(const std::string& target, const TracedValue& lhs, const TracedValue& rhs,
                                            const CallSite& site) {
  return elementwise(target, lhs, rhs, site, true);
}

Expected<TracedValue> TorchLibrary::arg_extreme(const std::string& target, const std::string& x,
                                                std::optional<int64_t> dim, bool keepdim, const CallSite& site) {
  const TensorType t = type(x);
  if (t.dtype == DType::Bool)
    return builder_.error(site.span, site.callee + "(): \"" + target + "\" is not implemented for 'Bool'");
  if (dim) {
    Expected<int64_t> n = normalize_dim(*dim, t.rank());
    if (!n) return located(site, n.error());
    if (t.rank() > 0) {
      TESSERA_TRY(require_nonempty_reduction(target, x, {*n}, site));
      Attrs attrs;
      attrs.set("dim", *n);
      attrs.set("keepdim", keepdim);
      TensorType out{reduced_shape(t.shape, {*n}, keepdim), DType::I64};
      return emit(TorchNodeSpec{target, {x}, {}, std::move(attrs), out}, site);
    }
  }
  // No dim (or a 0-d input): the index into the flattened tensor, a 0-d result; keepdim=True
  // (with no dim) keeps every dim as size 1, as PyTorch does.
  if (num_elements(t.shape) == 0)
    return builder_.error(site.span, site.callee + ": " + target + "(): Expected reduction dim to be specified for "
                                     "input.numel() == 0.");
  std::string input = x;
  if (t.rank() != 1) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue flat, reshape(x, {num_elements(t.shape)}, intermediate(site)));
    input = node_of(flat);
  }
  const bool reshape_after = !dim && keepdim && t.rank() > 1;
  Attrs attrs;
  attrs.set("dim", int64_t{0});
  attrs.set("keepdim", !dim && keepdim && t.rank() == 1);
  Shape out = (!dim && keepdim && t.rank() == 1) ? Shape{1} : Shape{};
  TESSERA_ASSIGN_OR_RETURN(TracedValue r, emit(TorchNodeSpec{target, {input}, {}, std::move(attrs), TensorType{out, DType::I64}},
                                               reshape_after ? intermediate(site) : site));
  if (!reshape_after) return r;
  return reshape(node_of(r), std::vector<int64_t>(static_cast<size_t>(t.rank()), 1), site);
}

Expected<TracedValue> TorchLibrary::log_softmax(const std::string& x, int64_t dim, const CallSite& site) {
  TESSERA_TRY(require_float(x, site));
  // (x - max) - log(sum(exp(x - max))), every step over `dim` with keepdim.
  CallSite mid = intermediate(site);
  Expected<int64_t> d = normalize_dim(dim, type(x).rank());
  if (!d) return located(site, d.error());
  // Over an empty dim the result is empty too (no max to take: PyTorch raises nothing).
  if (type(x).rank() > 0 && type(x).dim(*d) == 0) return TracedValue(TensorValue{x});
  TESSERA_ASSIGN_OR_RETURN(TracedValue m, reduction("amax", x, std::vector<int64_t>{dim}, true, mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue shifted, elementwise("sub", TensorValue{x}, m, mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue e, unary_op("exp", node_of(shifted), mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue s, reduction("sum", node_of(e), std::vector<int64_t>{dim}, true, mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue lse, unary_op("log", node_of(s), mid));
  return elementwise("sub", shifted, lse, site);
}

Expected<TracedValue> TorchLibrary::linear_vector_weight(const std::string& x, const std::string& weight,
                                                         const std::optional<std::string>& bias, const CallSite& site) {
  const TensorType& tx = type(x);
  const TensorType& tw = type(weight);
  if (tx.rank() < 1 || tx.dim(tx.rank() - 1) != tw.dim(0))
    return builder_.error(site.span, site.callee + ": input of shape " + shape_str(tx.shape) +
                                         " does not match the 1-D weight of shape " + shape_str(tw.shape) + " (expected " +
                                         std::to_string(tw.dim(0)) + " input features)");
  // As a linear with one output feature, whose size-1 dim is then dropped.
  CallSite mid = intermediate(site);
  TESSERA_ASSIGN_OR_RETURN(TracedValue row, unsqueeze(weight, 0, mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue one_feature, linear(x, node_of(row), std::nullopt, mid));
  std::vector<int64_t> shape;
  for (int64_t i = 0; i + 1 < tx.rank(); ++i) shape.push_back(tx.dim(i));
  if (!bias) return reshape(node_of(one_feature), shape, site);
  const TensorType& tb = type(*bias);
  TESSERA_ASSIGN_OR_RETURN(TracedValue y, reshape(node_of(one_feature), shape, mid));
  Expected<Shape> with_bias = broadcast_shapes(type(node_of(y)).shape, tb.shape);
  if (!with_bias || *with_bias != type(node_of(y)).shape)
    return builder_.error(site.span, site.callee + ": bias of shape " + shape_str(tb.shape) +
                                         " does not broadcast to the result's shape " + shape_str(type(node_of(y)).shape));
  if (tb.dtype != tx.dtype)
    return builder_.error(site.span, site.callee + ": bias is " + std::string(dtype_name(tb.dtype)) + " but the input is " +
                                         std::string(dtype_name(tx.dtype)));
  return elementwise("add", y, TensorValue{*bias}, site);
}

std::optional<std::pair<double, double>> TorchLibrary::known_extremes(const std::string& x) const {
  using Extremes = std::pair<double, double>;
  const Node* n = builder_.find(x);
  if (!n || num_elements(n->type.shape) == 0) return std::nullopt;
  if (const auto* in = n->op_as<InputOp>()) {
    if (in->init == "zeros") return Extremes{0.0, 0.0};
    if (in->init == "ones") return Extremes{1.0, 1.0};
    if (in->init == "full") return Extremes{in->fill, in->fill};
    return std::nullopt;
  }
  const auto* op = n->op_as<TorchOp>();
  if (!op) return std::nullopt;
  if (op->target == "full") {
    const double v = op->attrs.get_float("value", 0.0);
    return Extremes{v, v};
  }
  if (op->target == "arange") {
    const double first = op->attrs.get_float("start", 0.0);
    const double last = first + op->attrs.get_float("step", 1.0) * static_cast<double>(n->type.shape[0].value() - 1);
    if (dtype_is_float(n->type.dtype)) return std::nullopt;  // rounding: not needed for indices
    return Extremes{std::min(first, last), std::max(first, last)};
  }
  const bool keeps_every_element = op->target == "cat" || op->target == "reshape" || op->target == "unsqueeze" ||
                                   op->target == "expand" || op->target == "permute" || op->target == "transpose" ||
                                   (op->target == "cast" && !dtype_is_float(n->type.dtype) && n->type.dtype != DType::Bool);
  if (!keeps_every_element || n->inputs.empty()) return std::nullopt;
  std::optional<Extremes> all;
  for (const std::string& in : n->inputs) {
    if (num_elements(type(in).shape) == 0) continue;
    std::optional<Extremes> e = known_extremes(in);
    if (!e) return std::nullopt;
    if (op->target == "cast" && dtype_is_float(type(in).dtype)) return std::nullopt;  // float -> int truncates
    all = all ? Extremes{std::min(all->first, e->first), std::max(all->second, e->second)} : *e;
  }
  return all;
}

int64_t TorchLibrary::implicit_softmax_dim(const std::string& x, const std::string& op, const CallSite& site) const {
  builder_.warn(site.span, "Implicit dimension choice for " + op +
                               " has been deprecated. Change the call to include dim=X as an argument.");
  const int64_t rank = type(x).rank();
  return rank == 0 || rank == 1 || rank == 3 ? 0 : 1;
}

Expected<TracedValue> TorchLibrary::softmax_in(const std::string& x, int64_t dim, std::optional<DType> dtype,
                                               const CallSite& site) {
  std::string input = x;
  if (dtype) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue c, cast(x, *dtype, intermediate(site)));
    input = node_of(c);
  }
  return softmax(input, dim, site);
}

// sdpa with attn_mask: composed from matmul / softmax so the mask can be any broadcastable tensor.
// A bool mask keeps the positions where it is True (the others get -inf); a float mask is added.
Expected<TracedValue> TorchLibrary::attention_with_mask(const std::string& q, const std::string& k, const std::string& v,
                                                        const std::string& mask, bool is_causal,
                                                        std::optional<double> scale, bool enable_gqa,
                                                        const CallSite& site) {
  if (is_causal)
    return builder_.error(site.span, site.callee + "(): attn_mask and is_causal=True cannot both be given (PyTorch "
                                                   "rejects it); build the causal part into the mask");
  // The checks of the mask-free form, on a throwaway node: same messages, same rules.
  TESSERA_ASSIGN_OR_RETURN(TracedValue checked, attention(q, k, v, false, scale, enable_gqa, intermediate(site)));
  (void)checked;  // unused: pruned at the end
  const TensorType tq = type(q), tk = type(k);
  const int64_t r = tq.rank();
  CallSite mid = intermediate(site);
  std::string key = k, value = v;
  if (enable_gqa && r >= 3 && tk.dim(r - 3) != tq.dim(r - 3)) {
    const int64_t group = tq.dim(r - 3) / tk.dim(r - 3);
    TESSERA_ASSIGN_OR_RETURN(TracedValue kr, repeat_interleave(k, group, r - 3, mid));
    TESSERA_ASSIGN_OR_RETURN(TracedValue vr, repeat_interleave(v, group, r - 3, mid));
    key = node_of(kr);
    value = node_of(vr);
  }
  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(tq.dim(r - 1))));
  TESSERA_ASSIGN_OR_RETURN(TracedValue kt, transpose(key, -2, -1, mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue scores, matmul(q, node_of(kt), mid));
  TESSERA_ASSIGN_OR_RETURN(scores, elementwise("mul", scores, TracedValue(s), mid));
  const TensorType tm = type(mask);
  Expected<Shape> shape = broadcast_shapes(type(node_of(scores)).shape, tm.shape);
  if (!shape || *shape != type(node_of(scores)).shape)
    return builder_.error(site.span, site.callee + "(): attn_mask of shape " + shape_str(tm.shape) +
                                         " does not broadcast to the attention scores " +
                                         shape_str(type(node_of(scores)).shape));
  if (tm.dtype == DType::Bool) {
    TESSERA_ASSIGN_OR_RETURN(scores, where(mask, scores, TracedValue(-std::numeric_limits<double>::infinity()), mid));
  } else if (dtype_is_float(tm.dtype)) {
    if (tm.dtype != tq.dtype)
      return builder_.error(site.span, site.callee + "(): a float attn_mask must have the query's dtype (" +
                                           std::string(dtype_name(tq.dtype)) + "), got " + std::string(dtype_name(tm.dtype)));
    TESSERA_ASSIGN_OR_RETURN(scores, elementwise("add", scores, TensorValue{mask}, mid));
  } else {
    return builder_.error(site.span, site.callee + "(): attn_mask must be a bool or float tensor, got " +
                                         std::string(dtype_name(tm.dtype)));
  }
  TESSERA_ASSIGN_OR_RETURN(TracedValue probs, softmax(node_of(scores), -1, mid));
  return matmul(node_of(probs), value, site);
}

Expected<TracedValue> TorchLibrary::index_with_tensor(const std::string& node, const std::string& index,
                                                      const CallSite& site) {
  const TensorType t = type(node);
  const TensorType ti = type(index);
  if (ti.dtype == DType::Bool)
    return builder_.error(site.span, "indexing with a bool mask is not supported: the result's shape depends on the "
                                     "data; use torch.where(mask, x, other) or masked_fill");
  if (ti.dtype != DType::I64 && ti.dtype != DType::I32)
    return builder_.error(site.span, "tensors used as indices must be int64, int32 or bool, got " +
                                         std::string(dtype_name(ti.dtype)));
  if (t.rank() == 0) return builder_.error(site.span, "a 0-d tensor cannot be indexed with a tensor");
  CallSite mid = intermediate(site);
  const int64_t n = t.dim(0);
  if (n == 0)  // PyTorch: an IndexError for any index; an empty index of an empty dim is not supported
    return builder_.error(site.span, num_elements(ti.shape) > 0
                                         ? "index is out of bounds for dimension with size 0"
                                         : "an empty index tensor into an empty dimension is not supported");
  // Negative indices count from the end, as in PyTorch: where(idx < 0, idx + n, idx).
  TESSERA_ASSIGN_OR_RETURN(TracedValue negative, elementwise("lt", TensorValue{index}, TracedValue(int64_t{0}), mid, true));
  TESSERA_ASSIGN_OR_RETURN(TracedValue wrapped, elementwise("add", TensorValue{index}, TracedValue(n), mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue ids, where(node_of(negative), wrapped, TensorValue{index}, mid));
  // Rows of x as an embedding table (n, rest), then the rest's shape back.
  const int64_t rest = num_elements(t.shape) / n;
  std::vector<int64_t> out_shape = dims_of(ti.shape);
  for (int64_t d = 1; d < t.rank(); ++d) out_shape.push_back(t.dim(d));
  std::string table = node;
  if (t.rank() != 2) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue r, reshape(node, {n, rest}, mid));
    table = node_of(r);
  }
  const bool reshape_after = t.rank() != 2;
  TESSERA_ASSIGN_OR_RETURN(TracedValue rows, embedding(node_of(ids), table, reshape_after ? mid : site));
  if (!reshape_after) return rows;
  return reshape(node_of(rows), out_shape, site);
}

void TorchLibrary::register_idiom_masks() {
  for (std::string name : {"tril", "triu"}) {
    const bool lower = name == "tril";
    functions_.emplace("torch." + name, FunctionEntry{CallSignature("input, diagonal=0"), [this, lower](const BoundArguments& a)
                                                                                              -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
      TESSERA_ASSIGN_OR_RETURN(int64_t diagonal, a.integer("diagonal"));
      return triangle(x, diagonal, lower, a.site());
    }});
    methods_.emplace(name, MethodEntry{CallSignature("diagonal=0"), [this, lower](const std::string& self, const BoundArguments& a)
                                                                        -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(int64_t diagonal, a.integer("diagonal"));
      return triangle(self, diagonal, lower, a.site());
    }});
  }
  functions_.emplace("torch.masked_fill", FunctionEntry{CallSignature("input, mask, value"), [this](const BoundArguments& a)
                                                                                                 -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::string mask, a.tensor("mask"));
    return masked_fill(x, mask, a.value("value"), a.site());
  }});
  methods_.emplace("masked_fill", MethodEntry{CallSignature("mask, value"), [this](const std::string& self, const BoundArguments& a)
                                                                                -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string mask, a.tensor("mask"));
    return masked_fill(self, mask, a.value("value"), a.site());
  }});

  for (std::string op : {"logical_and", "logical_or"}) {
    functions_.emplace("torch." + op, FunctionEntry{CallSignature("input, other"), [this, op](const BoundArguments& a)
                                                                                      -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
      TESSERA_ASSIGN_OR_RETURN(std::string y, a.tensor("other"));
      return logical(op, TensorValue{x}, TensorValue{y}, a.site());
    }});
    methods_.emplace(op, MethodEntry{CallSignature("other"), [this, op](const std::string& self, const BoundArguments& a)
                                                                 -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string y, a.tensor("other"));
      return logical(op, TensorValue{self}, TensorValue{y}, a.site());
    }});
  }
  functions_.emplace("torch.logical_not", FunctionEntry{CallSignature("input"), [this](const BoundArguments& a)
                                                                                    -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TensorType out{type(x).shape, DType::Bool};
    return emit(TorchNodeSpec{"logical_not", {x}, {}, {}, out}, a.site());
  }});
  methods_.emplace("logical_not", MethodEntry{CallSignature(""), [this](const std::string& self, const BoundArguments& a)
                                                                     -> Expected<TracedValue> {
    return emit(TorchNodeSpec{"logical_not", {self}, {}, {}, TensorType{type(self).shape, DType::Bool}}, a.site());
  }});

  for (std::string target : {"argmax", "argmin"}) {
    auto do_arg = [this, target](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, a.optional_integer("dim"));
      TESSERA_ASSIGN_OR_RETURN(bool keepdim, a.boolean("keepdim"));
      return arg_extreme(target, x, dim, keepdim, a.site());
    };
    functions_.emplace("torch." + target, FunctionEntry{CallSignature("input, dim=None, keepdim=False"),
                                                        [do_arg](const BoundArguments& a) -> Expected<TracedValue> {
                                                          TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                          return do_arg(x, a);
                                                        }});
    methods_.emplace(target, MethodEntry{CallSignature("dim=None, keepdim=False"), do_arg});
  }

  // topk as k rounds of (max, first argmax, mask that position out), then one cat each for the
  // values and the indices: sorted, ties by the lower index. Meant for the small k of decoding.
  auto do_topk = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    constexpr int64_t kMaxTopK = 64;
    TESSERA_ASSIGN_OR_RETURN(int64_t k, a.integer("k"));
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    TESSERA_ASSIGN_OR_RETURN(bool largest, a.boolean("largest"));
    TESSERA_ASSIGN_OR_RETURN(bool sorted, a.boolean("sorted"));
    (void)sorted;  // always sorted (PyTorch leaves the order unspecified when sorted=False)
    const TensorType t = type(x);
    if (t.dtype == DType::Bool) return a.error("input", a.site().callee + "(): \"topk\" is not implemented for 'Bool'");
    Expected<int64_t> d = normalize_dim(dim, t.rank());
    if (!d || t.rank() == 0) return a.error("dim", a.site().callee + "(): " + (d ? "a 0-d tensor has no dim" : d.error().message));
    const int64_t n = t.dim(*d);
    if (k < 1 || k > n) return a.error("k", a.site().callee + "(): k (" + std::to_string(k) + ") is out of range for a dim of size " +
                                                std::to_string(n) + " (k = 0 would be an empty tensor)");
    if (k > kMaxTopK) return a.error("k", a.site().callee + "(): k > " + std::to_string(kMaxTopK) + " is not supported");
    CallSite mid = intermediate(a.site());
    std::vector<int64_t> pos_shape(static_cast<size_t>(t.rank()), 1);
    pos_shape[static_cast<size_t>(*d)] = n;
    TESSERA_ASSIGN_OR_RETURN(TracedValue pos, arange(0, static_cast<double>(n), 1, DType::I64, mid));
    TESSERA_ASSIGN_OR_RETURN(pos, reshape(node_of(pos), pos_shape, mid));
    const double fill = dtype_is_float(t.dtype) ? (largest ? -INFINITY : INFINITY)
                        : t.dtype == DType::I32 ? (largest ? -2147483648.0 : 2147483647.0)
                                                : (largest ? -9223372036854775808.0 : 9223372036854775807.0);
    std::vector<std::string> values, indices;
    std::string current = x;
    for (int64_t j = 0; j < k; ++j) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue v, reduction(largest ? "amax" : "amin", current, std::vector<int64_t>{*d}, true, mid));
      Attrs attrs;
      attrs.set("dim", *d);
      attrs.set("keepdim", true);
      TESSERA_ASSIGN_OR_RETURN(TracedValue i, emit(TorchNodeSpec{largest ? "argmax" : "argmin", {current}, {}, std::move(attrs),
                                                                 TensorType{reduced_shape(type(current).shape, {*d}, true), DType::I64}},
                                                   mid));
      values.push_back(node_of(v));
      indices.push_back(node_of(i));
      if (j + 1 == k) break;
      TESSERA_ASSIGN_OR_RETURN(TracedValue hit, elementwise("eq", pos, i, mid, true));
      TESSERA_ASSIGN_OR_RETURN(TracedValue rest, where(node_of(hit), TracedValue(fill), TensorValue{current}, mid));
      current = node_of(rest);
    }
    TESSERA_ASSIGN_OR_RETURN(TracedValue vs, values.size() == 1 ? Expected<TracedValue>(TracedValue(TensorValue{values[0]}))
                                                                : cat(values, *d, a.site()));
    TESSERA_ASSIGN_OR_RETURN(TracedValue is, indices.size() == 1 ? Expected<TracedValue>(TracedValue(TensorValue{indices[0]}))
                                                                 : cat(indices, *d, mid));
    return TracedValue(SequenceValue{{vs, is}, false, {"values", "indices"}});
  };
  functions_.emplace("torch.topk", FunctionEntry{CallSignature("input, k, dim=-1, largest=True, sorted=True"),
                                                 [do_topk](const BoundArguments& a) -> Expected<TracedValue> {
                                                   TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                   return do_topk(x, a);
                                                 }});
  methods_.emplace("topk", MethodEntry{CallSignature("k, dim=-1, largest=True, sorted=True"), do_topk});

  auto do_log_softmax = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, a.optional_integer("dim"));
    if (!dim) dim = implicit_softmax_dim(x, "log_softmax", a.site());
    TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
    std::string input = x;
    if (dtype) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue c, cast(x, *dtype, intermediate(a.site())));
      input = node_of(c);
    }
    return log_softmax(input, *dim, a.site());
  };
  functions_.emplace("torch.nn.functional.log_softmax",
                     FunctionEntry{CallSignature("input, dim=None, _stacklevel=3, dtype=None"),
                                   [do_log_softmax](const BoundArguments& a) -> Expected<TracedValue> {
                                     TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                     return do_log_softmax(x, a);
                                   }});
  functions_.emplace("torch.log_softmax", FunctionEntry{CallSignature("input, dim, dtype=None"),
                                                        [do_log_softmax](const BoundArguments& a) -> Expected<TracedValue> {
                                                          TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                          return do_log_softmax(x, a);
                                                        }});
  methods_.emplace("log_softmax", MethodEntry{CallSignature("dim, dtype=None"), do_log_softmax});
}

// ---- precision spellings -----------------------------------------------------------------------

void TorchLibrary::register_idiom_precision() {
  // softmax(..., dtype=): the input is cast first, as PyTorch does. These replace the dtype-less
  // registrations of register_reductions_and_layout / register_functional.
  auto do_softmax = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, a.optional_integer("dim"));
    if (!dim) dim = implicit_softmax_dim(x, "softmax", a.site());
    TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
    return softmax_in(x, *dim, dtype, a.site());
  };
  functions_.insert_or_assign("torch.nn.functional.softmax",
                              FunctionEntry{CallSignature("input, dim=None, _stacklevel=3, dtype=None"),
                                            [do_softmax](const BoundArguments& a) -> Expected<TracedValue> {
                                              TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                              return do_softmax(x, a);
                                            }});
  functions_.insert_or_assign("torch.softmax", FunctionEntry{CallSignature("input, dim, dtype=None"),
                                                             [do_softmax](const BoundArguments& a) -> Expected<TracedValue> {
                                                               TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                               return do_softmax(x, a);
                                                             }});
  methods_.insert_or_assign("softmax", MethodEntry{CallSignature("dim, dtype=None"), do_softmax});

  methods_.emplace("type_as", MethodEntry{CallSignature("other"), [this](const std::string& self, const BoundArguments& a)
                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string other, a.tensor("other"));
    return cast(self, type(other).dtype, a.site());
  }});
  methods_.emplace("type", MethodEntry{CallSignature("dtype=None, non_blocking=False"),
                                       [this](const std::string& self, const BoundArguments& a) -> Expected<TracedValue> {
    static const std::map<std::string, DType> legacy = {
        {"torch.FloatTensor", DType::F32}, {"torch.HalfTensor", DType::F16}, {"torch.BFloat16Tensor", DType::BF16},
        {"torch.IntTensor", DType::I32},   {"torch.LongTensor", DType::I64}, {"torch.BoolTensor", DType::Bool},
        {"torch.DoubleTensor", DType::F64}};
    if (a.is_none("dtype"))
      return a.error("dtype", a.site().callee + "() without a dtype returns a type name string, which is not supported");
    if (const auto* name = a.value("dtype").as<std::string>()) {
      auto it = legacy.find(*name);
      if (it == legacy.end()) return a.error("dtype", a.site().callee + "(): unsupported tensor type '" + *name + "'");
      return cast(self, it->second, a.site());
    }
    TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
    return cast(self, *dtype, a.site());
  }});
}

// ---- the Also list -----------------------------------------------------------------------------

Expected<TracedValue> TorchLibrary::variance(const std::string& x, const std::optional<std::vector<int64_t>>& dims,
                                             double correction, bool keepdim, bool take_sqrt, const CallSite& site) {
  TESSERA_TRY(require_float(x, site));
  const TensorType t = type(x);
  std::vector<int64_t> requested = dims.value_or(std::vector<int64_t>{});
  Expected<std::vector<int64_t>> normalized = normalize_reduction_dims(requested, t.rank());
  if (!normalized) return located(site, normalized.error());
  int64_t n = 1;
  for (int64_t d : *normalized) n *= t.rank() == 0 ? 1 : t.dim(d);
  // sum((x - mean)^2) / (N - correction); N - correction <= 0 divides by zero like PyTorch (inf / NaN),
  // and N = 0 (an empty dim) is 0 / 0: NaN, as in PyTorch whatever the correction.
  CallSite mid = intermediate(site);
  TESSERA_ASSIGN_OR_RETURN(TracedValue mean, reduction("mean", x, dims, true, mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue centered, elementwise("sub", TensorValue{x}, mean, mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue squared, elementwise("mul", centered, centered, mid));
  TESSERA_ASSIGN_OR_RETURN(TracedValue total, reduction("sum", node_of(squared), dims, keepdim, mid));
  const double denominator = n == 0 ? 0.0 : static_cast<double>(n) - correction;
  CallSite last = take_sqrt ? mid : site;
  TESSERA_ASSIGN_OR_RETURN(TracedValue var, denominator > 0 ? elementwise("mul", total, TracedValue(1.0 / denominator), last)
                                                            : elementwise("div", total, TracedValue(denominator), last));
  if (!take_sqrt) return var;
  return unary_op("sqrt", node_of(var), site);
}

Expected<TracedValue> TorchLibrary::clamp(const std::string& x, const TracedValue& lo, const TracedValue& hi,
                                          const CallSite& site) {
  if (lo.is<NoneValue>() && hi.is<NoneValue>())
    return builder_.error(site.span, site.callee + "(): at least one of 'min' or 'max' must not be None");
  for (const TracedValue* bound : {&lo, &hi})
    if (!bound->is<NoneValue>() && !bound->is_number() && !bound->is<TensorValue>())
      return builder_.error(site.span, site.callee + "(): min and max must be numbers or tensors, got " +
                                           describe_value(*bound));
  // min(max(x, lo), hi) with NaN kept: where(x < lo, lo, x), then where(r > hi, hi, r).
  TracedValue result = TensorValue{x};
  const bool both = !lo.is<NoneValue>() && !hi.is<NoneValue>();
  if (!lo.is<NoneValue>()) {
    CallSite s = both ? intermediate(site) : site;
    TESSERA_ASSIGN_OR_RETURN(TracedValue below, elementwise("lt", result, lo, intermediate(site), true));
    TESSERA_ASSIGN_OR_RETURN(result, where(node_of(below), lo, result, s));
  }
  if (!hi.is<NoneValue>()) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue above, elementwise("gt", result, hi, intermediate(site), true));
    TESSERA_ASSIGN_OR_RETURN(result, where(node_of(above), hi, result, site));
  }
  return result;
}

void TorchLibrary::register_idiom_math() {
  for (std::string name : {"clamp", "clip"}) {
    functions_.emplace("torch." + name, FunctionEntry{CallSignature("input, min=None, max=None"), [this](const BoundArguments& a)
                                                                                                      -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
      return clamp(x, a.value("min"), a.value("max"), a.site());
    }});
    methods_.emplace(name, MethodEntry{CallSignature("min=None, max=None"), [this](const std::string& self, const BoundArguments& a) {
                                         return clamp(self, a.value("min"), a.value("max"), a.site());
                                       }});
  }
  methods_.emplace("clamp_min", MethodEntry{CallSignature("min"), [this](const std::string& self, const BoundArguments& a) {
                                              return clamp(self, a.value("min"), NoneValue{}, a.site());
                                            }});
  methods_.emplace("clamp_max", MethodEntry{CallSignature("max"), [this](const std::string& self, const BoundArguments& a) {
                                              return clamp(self, NoneValue{}, a.value("max"), a.site());
                                            }});

  for (std::string name : {"var", "std"}) {
    const bool take_sqrt = name == "std";
    auto do_var = [this, take_sqrt](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
      std::optional<std::vector<int64_t>> dims;
      TracedValue unbiased = a.value("unbiased");
      // x.var(True): the old (unbiased) overload puts a bool first.
      if (const auto* b = a.value("dim").as<bool>()) {
        unbiased = *b;
      } else {
        TESSERA_ASSIGN_OR_RETURN(dims, a.optional_int_list("dim"));
      }
      double correction = 1.0;  // PyTorch's default: Bessel's correction
      if (!a.is_none("correction")) {
        TESSERA_ASSIGN_OR_RETURN(correction, a.number("correction"));
        if (!unbiased.is<NoneValue>())
          return a.error("correction", a.site().callee + "(): cannot specify both unbiased and correction");
      } else if (const auto* b = unbiased.as<bool>()) {
        correction = *b ? 1.0 : 0.0;
      } else if (!unbiased.is<NoneValue>()) {
        return a.error("unbiased", a.site().callee + "(): unbiased must be a bool");
      }
      TESSERA_ASSIGN_OR_RETURN(bool keepdim, a.boolean("keepdim"));
      return variance(x, dims, correction, keepdim, take_sqrt, a.site());
    };
    functions_.emplace("torch." + name, FunctionEntry{CallSignature("input, dim=None, unbiased=None, keepdim=False, *, "
                                                                    "correction=None"),
                                                      [do_var](const BoundArguments& a) -> Expected<TracedValue> {
                                                        TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                        return do_var(x, a);
                                                      }});
    methods_.emplace(name, MethodEntry{CallSignature("dim=None, unbiased=None, keepdim=False, *, correction=None"), do_var});
  }

  // torch.add/sub(input, other, alpha=): other * alpha first; a number may be either operand.
  for (std::string op : {"add", "sub"}) {
    auto do_op = [this, op](const TracedValue& x, const BoundArguments& a) -> Expected<TracedValue> {
      TracedValue other = a.value("other");
      if (!x.is<TensorValue>() && !other.is<TensorValue>())
        return builder_.error(a.site().span, a.site().callee + "(): expected at least one tensor operand");
      const TracedValue& alpha = a.value("alpha");
      if (!alpha.is_number()) return a.error("alpha", a.site().callee + "(): alpha must be a number");
      if (alpha.number() != 1.0 || !alpha.is<int64_t>()) {
        if (const auto* t = other.as<TensorValue>()) {
          if (alpha.is<double>() && !dtype_is_float(type(t->node).dtype))
            return a.error("alpha", a.site().callee + "(): for integral input tensors, alpha must not be a float");
          TESSERA_ASSIGN_OR_RETURN(other, elementwise("mul", other, alpha, intermediate(a.site())));
        } else if (other.is_number()) {
          other = other.is<double>() || alpha.is<double>() ? TracedValue(other.number() * alpha.number())
                                                          : TracedValue(static_cast<int64_t>(other.number() * alpha.number()));
        }
      }
      return elementwise(op, x, other, a.site());
    };
    functions_.insert_or_assign("torch." + op, FunctionEntry{CallSignature("input, other, *, alpha=1"),
                                                             [do_op](const BoundArguments& a) { return do_op(a.value("input"), a); }});
    methods_.insert_or_assign(op, MethodEntry{CallSignature("other, *, alpha=1"),
                                              [do_op](const std::string& self, const BoundArguments& a) {
                                                return do_op(TensorValue{self}, a);
                                              }});
  }
  // torch.mul/floor_divide/remainder/div accept a number as the first operand too; div takes
  // rounding_mode=None|'trunc'|'floor'.
  for (std::string op : {"mul", "floor_divide", "remainder"})
    functions_.insert_or_assign("torch." + op, FunctionEntry{CallSignature("input, other"), [this, op](const BoundArguments& a) {
                                  return elementwise(op, a.value("input"), a.value("other"), a.site());
                                }});
  auto do_div = [this](const TracedValue& x, const BoundArguments& a) -> Expected<TracedValue> {
    TracedValue mode = a.value("rounding_mode");
    if (mode.is<NoneValue>()) return elementwise("div", x, a.value("other"), a.site());
    const auto* name = mode.as<std::string>();
    if (!name || (*name != "trunc" && *name != "floor"))
      return a.error("rounding_mode", a.site().callee + "(): rounding_mode must be None, 'trunc' or 'floor'");
    if (*name == "floor") return elementwise("floor_divide", x, a.value("other"), a.site());
    // trunc: the true quotient converted to int64 (truncation toward zero) and back.
    TESSERA_ASSIGN_OR_RETURN(TracedValue q, elementwise("div", x, a.value("other"), intermediate(a.site())));
    DType operands = DType::Bool;
    for (const TracedValue* v : {&x, &a.value("other")})
      if (const auto* t = v->as<TensorValue>()) operands = promote_types(operands, type(t->node).dtype);
    const bool integral = !dtype_is_float(operands) && !x.is<double>() && !a.value("other").is<double>();
    TESSERA_ASSIGN_OR_RETURN(TracedValue truncated, cast(node_of(q), DType::I64, integral ? a.site() : intermediate(a.site())));
    if (integral) {
      if (operands == DType::I64 || operands == DType::Bool) return truncated;
      return cast(node_of(truncated), operands, a.site());
    }
    return cast(node_of(truncated), type(node_of(q)).dtype, a.site());
  };
  functions_.insert_or_assign("torch.div", FunctionEntry{CallSignature("input, other, *, rounding_mode=None"),
                                                         [do_div](const BoundArguments& a) { return do_div(a.value("input"), a); }});
  methods_.insert_or_assign("div", MethodEntry{CallSignature("other, *, rounding_mode=None"),
                                               [do_div](const std::string& self, const BoundArguments& a) {
                                                 return do_div(TensorValue{self}, a);
                                               }});

  // torch.concatenate(tensors, axis=0) (NumPy's name; dim= is accepted too), torch.cat(axis=).
  for (std::string name : {"concatenate", "cat", "concat"}) {
    functions_.insert_or_assign("torch." + name, FunctionEntry{CallSignature("tensors, dim=None, *, axis=None"),
                                                               [this](const BoundArguments& a) -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> xs, tensor_list(a, "tensors"));
      if (!a.is_none("dim") && !a.is_none("axis"))
        return a.error("axis", a.site().callee + "(): dim and axis name the same argument; give one");
      TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, a.optional_integer(a.is_none("axis") ? "dim" : "axis"));
      return cat(xs, dim.value_or(0), a.site());
    }});
  }

  auto do_unbind = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    const TensorType t = type(x);
    Expected<int64_t> d = normalize_dim(dim, t.rank());
    if (!d || t.rank() == 0) return a.error("dim", a.site().callee + "(): " + (d ? "a 0-d tensor cannot be unbound" : d.error().message));
    return split(x, std::vector<int64_t>(static_cast<size_t>(t.dim(*d)), 1), *d, true, a.site());
  };
  functions_.emplace("torch.unbind", FunctionEntry{CallSignature("input, dim=0"), [do_unbind](const BoundArguments& a)
                                                                                     -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    return do_unbind(x, a);
  }});
  methods_.emplace("unbind", MethodEntry{CallSignature("dim=0"), do_unbind});

  // any / all: counts of nonzero / zero elements, so an empty dim gives False / True as in PyTorch.
  for (std::string name : {"any", "all"}) {
    const bool any = name == "any";
    auto do_test = [this, any](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, a.optional_int_list("dim"));
      TESSERA_ASSIGN_OR_RETURN(bool keepdim, a.boolean("keepdim"));
      CallSite mid = intermediate(a.site());
      TESSERA_ASSIGN_OR_RETURN(TracedValue hits, elementwise(any ? "ne" : "eq", TensorValue{x}, TracedValue(int64_t{0}),
                                                             mid, true));
      TESSERA_ASSIGN_OR_RETURN(TracedValue count, reduction("sum", node_of(hits), dims, keepdim, mid));
      return elementwise(any ? "gt" : "eq", count, TracedValue(int64_t{0}), a.site(), true);
    };
    functions_.emplace("torch." + name, FunctionEntry{CallSignature("input, dim=None, keepdim=False"),
                                                      [do_test](const BoundArguments& a) -> Expected<TracedValue> {
                                                        TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                        return do_test(x, a);
                                                      }});
    methods_.emplace(name, MethodEntry{CallSignature("dim=None, keepdim=False"), do_test});
  }

  // logsumexp: m + log(sum(exp(x - m))) with m the max, taken as 0 where it is infinite (PyTorch's
  // rule, so rows of -inf give -inf, not NaN); over an empty dim log(0) = -inf, with no max.
  auto do_logsumexp = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, a.int_list("dim"));
    TESSERA_ASSIGN_OR_RETURN(bool keepdim, a.boolean("keepdim"));
    const CallSite& site = a.site();
    CallSite mid = intermediate(site);
    std::string input = x;
    if (!dtype_is_float(type(x).dtype)) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue f, cast(x, builder_.default_dtype(), mid));
      input = node_of(f);
    }
    const TensorType t = type(input);
    Expected<std::vector<int64_t>> normalized = normalize_reduction_dims(dims, t.rank());
    if (!normalized) return located(site, normalized.error());
    bool empty_dim = false;
    for (int64_t d : *normalized) empty_dim = empty_dim || t.dim(d) == 0;
    if (empty_dim) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue e, unary_op("exp", input, mid));
      TESSERA_ASSIGN_OR_RETURN(TracedValue s, reduction("sum", node_of(e), dims, keepdim, mid));
      return unary_op("log", node_of(s), site);
    }
    auto finite_max = [&](bool keep) -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(TracedValue m, reduction("amax", input, dims, keep, mid));
      TESSERA_ASSIGN_OR_RETURN(TracedValue magnitude, unary_op("abs", node_of(m), mid));
      TESSERA_ASSIGN_OR_RETURN(TracedValue infinite, elementwise("eq", magnitude, TracedValue(INFINITY), mid, true));
      return where(node_of(infinite), TracedValue(0.0), m, mid);
    };
    TESSERA_ASSIGN_OR_RETURN(TracedValue m_kept, finite_max(true));
    TESSERA_ASSIGN_OR_RETURN(TracedValue shifted, elementwise("sub", TensorValue{input}, m_kept, mid));
    TESSERA_ASSIGN_OR_RETURN(TracedValue e, unary_op("exp", node_of(shifted), mid));
    TESSERA_ASSIGN_OR_RETURN(TracedValue s, reduction("sum", node_of(e), dims, keepdim, mid));
    TESSERA_ASSIGN_OR_RETURN(TracedValue l, unary_op("log", node_of(s), mid));
    TracedValue m_out = m_kept;
    if (!keepdim) {
      TESSERA_ASSIGN_OR_RETURN(m_out, finite_max(false));
    }
    return elementwise("add", l, m_out, site);
  };
  functions_.emplace("torch.logsumexp", FunctionEntry{CallSignature("input, dim, keepdim=False"),
                                                      [do_logsumexp](const BoundArguments& a) -> Expected<TracedValue> {
                                                        TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                        return do_logsumexp(x, a);
                                                      }});
  methods_.emplace("logsumexp", MethodEntry{CallSignature("dim, keepdim=False"), do_logsumexp});
}

}  // namespace tessera::torch_expr

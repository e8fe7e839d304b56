// The layout half of the torch catalog (see torch_library.h and docs/torch-ops.md): permute,
// expand, slice, cat, stack, chunk/split, narrow, squeeze, flatten and tensor subscripts, all expressed
// with the canonical layout targets reshape / unsqueeze / transpose / permute / expand / slice / cat.
#include <algorithm>

#include "shape_inference.h"
#include "tessera/support/internal_check.h"
#include "torch_library.h"

namespace tessera::torch_expr {
namespace {


std::string list_str(const std::vector<int64_t>& v) { return shape_str(Shape(v.begin(), v.end())); }

// A CallSite for an intermediate node: same place and callee, but the result is not the assigned variable.
CallSite intermediate(const CallSite& site) {
  CallSite s = site;
  s.name_hint.clear();
  return s;
}

// ceil((end - start) / step), 0 for end <= start (an empty slice), written so a huge step cannot overflow.
int64_t sliced_size(int64_t start, int64_t end, int64_t step) {
  return end <= start ? 0 : 1 + (end - start - 1) / step;
}

}  // namespace

void TorchLibrary::register_layout() {
  functions_.emplace("torch.permute", FunctionEntry{CallSignature("input, dims"), [this](const BoundArguments& a)
                                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, a.int_list("dims"));
    return permute(x, dims, a.site());
  }});
  methods_.emplace("permute", MethodEntry{CallSignature("*dims"), [this](const std::string& self, const BoundArguments& a)
                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, a.sizes("dims"));
    return permute(self, dims, a.site());
  }});
  methods_.emplace("expand", MethodEntry{CallSignature("*sizes"), [this](const std::string& self, const BoundArguments& a)
                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, a.sizes("sizes"));
    return expand(self, sizes, a.site());
  }});
  methods_.emplace("expand_as", MethodEntry{CallSignature("other"), [this](const std::string& self,
                                                                           const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string other, a.tensor("other"));
    return expand(self, dims_of(type(other).shape), a.site());
  }});
  auto do_t = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    int64_t r = type(x).rank();
    if (r < 2) return TracedValue(TensorValue{x});
    if (r > 2)
      return a.error("input", a.site().callee + "() expects a tensor with <= 2 dimensions, but it has " +
                                  std::to_string(r) + "; use transpose(a, b)");
    return transpose(x, 0, 1, a.site());
  };
  functions_.emplace("torch.t", FunctionEntry{CallSignature("input"), [do_t](const BoundArguments& a)
                                                                          -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    return do_t(x, a);
  }});
  methods_.emplace("t", MethodEntry{CallSignature(""), do_t});
  methods_.emplace("contiguous", MethodEntry{CallSignature("memory_format=None"),
                                             [this](const std::string& self, const BoundArguments& a) -> Expected<TracedValue> {
                                               return contiguous(self, a.site());
                                             }});

  auto do_flatten = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(int64_t s, a.integer("start_dim"));
    TESSERA_ASSIGN_OR_RETURN(int64_t e, a.integer("end_dim"));
    return flatten(x, s, e, a.site());
  };
  functions_.emplace("torch.flatten", FunctionEntry{CallSignature("input, start_dim=0, end_dim=-1"),
                                                    [do_flatten](const BoundArguments& a) -> Expected<TracedValue> {
                                                      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                      return do_flatten(x, a);
                                                    }});
  methods_.emplace("flatten", MethodEntry{CallSignature("start_dim=0, end_dim=-1"), do_flatten});

  auto do_squeeze = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, a.optional_int_list("dim"));
    return squeeze(x, dims, a.site());
  };
  functions_.emplace("torch.squeeze", FunctionEntry{CallSignature("input, dim=None"),
                                                    [do_squeeze](const BoundArguments& a) -> Expected<TracedValue> {
                                                      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                      return do_squeeze(x, a);
                                                    }});
  methods_.emplace("squeeze", MethodEntry{CallSignature("dim=None"), do_squeeze});

  for (std::string name : {"cat", "concat", "concatenate", "stack"}) {
    functions_.emplace("torch." + name, FunctionEntry{CallSignature("tensors, dim=0"), [this, name](const BoundArguments& a)
                                                                                          -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> xs, tensor_list(a, "tensors"));
      TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
      return name == "stack" ? stack(xs, dim, a.site()) : cat(xs, dim, a.site());
    }});
  }

  auto do_chunk = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(int64_t chunks, a.integer("chunks"));
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    if (chunks <= 0) return a.error("chunks", a.site().callee + "(): chunks must be positive, got " + std::to_string(chunks));
    const TensorType& t = type(x);
    Expected<int64_t> d = normalize_dim(dim, t.rank());
    if (!d || t.rank() == 0) return a.error("dim", a.site().callee + "(): " + (d ? "a 0-d tensor cannot be chunked" : d.error().message));
    int64_t n = t.dim(*d);
    int64_t piece = (n + chunks - 1) / chunks;  // PyTorch: ceil(n / chunks), the last piece smaller
    std::vector<int64_t> sizes;
    for (int64_t off = 0; off < n; off += piece) sizes.push_back(std::min(piece, n - off));
    if (n == 0) sizes.assign(static_cast<size_t>(chunks), 0);  // PyTorch: `chunks` empty pieces
    return split(x, sizes, *d, false, a.site());
  };
  functions_.emplace("torch.chunk", FunctionEntry{CallSignature("input, chunks, dim=0"),
                                                  [do_chunk](const BoundArguments& a) -> Expected<TracedValue> {
                                                    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                    return do_chunk(x, a);
                                                  }});
  methods_.emplace("chunk", MethodEntry{CallSignature("chunks, dim=0"), do_chunk});

  auto do_split = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    const TensorType& t = type(x);
    Expected<int64_t> d = normalize_dim(dim, t.rank());
    if (!d || t.rank() == 0) return a.error("dim", a.site().callee + "(): " + (d ? "a 0-d tensor cannot be split" : d.error().message));
    int64_t n = t.dim(*d);
    std::vector<int64_t> sizes;
    if (const auto* size = a.value("split_size_or_sections").as<int64_t>()) {
      if (*size <= 0)
        return a.error("split_size_or_sections", a.site().callee + "(): split size must be positive, got " +
                                                     std::to_string(*size));
      for (int64_t off = 0; off < n; off += *size) sizes.push_back(std::min(*size, n - off));
      if (n == 0) sizes.push_back(0);  // PyTorch: one empty piece
    } else {
      TESSERA_ASSIGN_OR_RETURN(sizes, a.int_list("split_size_or_sections"));
      int64_t total = 0;
      for (int64_t s : sizes) {
        if (s < 0)  // a section of 0 is an empty piece, as in PyTorch
          return a.error("split_size_or_sections", a.site().callee + "(): section sizes must be non-negative, got " +
                                                       list_str(sizes));
        total += s;
      }
      if (total != n)
        return a.error("split_size_or_sections", a.site().callee + "(): section sizes " + list_str(sizes) +
                                                     " must sum to the size of dimension " + std::to_string(*d) +
                                                     " (" + std::to_string(n) + ")");
    }
    return split(x, sizes, *d, false, a.site());
  };
  functions_.emplace("torch.split", FunctionEntry{CallSignature("tensor, split_size_or_sections, dim=0"),
                                                  [do_split](const BoundArguments& a) -> Expected<TracedValue> {
                                                    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("tensor"));
                                                    return do_split(x, a);
                                                  }});
  methods_.emplace("split", MethodEntry{CallSignature("split_size_or_sections, dim=0"), do_split});

  // narrow(dim, start, length): a slice; length 0 is an empty tensor, as in PyTorch.
  auto do_narrow = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    TESSERA_ASSIGN_OR_RETURN(int64_t start, a.integer("start"));
    TESSERA_ASSIGN_OR_RETURN(int64_t length, a.integer("length"));
    const TensorType& t = type(x);
    if (t.rank() == 0) return a.error("dim", a.site().callee + "() cannot be applied to a 0-dim tensor.");
    Expected<int64_t> d = normalize_dim(dim, t.rank());
    if (!d) return a.error("dim", a.site().callee + "(): " + d.error().message);
    const int64_t n = t.dim(*d);
    if (length < 0) return a.error("length", a.site().callee + "(): length must be non-negative.");
    if (start < -n || start > n)
      return a.error("start", a.site().callee + "(): start out of range (expected to be in range of [" +
                                  std::to_string(-n) + ", " + std::to_string(n) + "], but got " +
                                  std::to_string(start) + ")");
    if (start < 0) start += n;
    if (start > n - length)
      return a.error("length", a.site().callee + "(): start (" + std::to_string(start) + ") + length (" +
                                   std::to_string(length) + ") exceeds dimension size (" + std::to_string(n) + ").");
    return slice(x, *d, start, start + length, 1, a.site());
  };
  functions_.emplace("torch.narrow", FunctionEntry{CallSignature("input, dim, start, length"),
                                                   [do_narrow](const BoundArguments& a) -> Expected<TracedValue> {
                                                     TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                     return do_narrow(x, a);
                                                   }});
  methods_.emplace("narrow", MethodEntry{CallSignature("dim, start, length"), do_narrow});
}

Expected<std::vector<std::string>> TorchLibrary::tensor_list(const BoundArguments& a, const std::string& name) const {
  const auto* seq = a.value(name).as<SequenceValue>();
  if (!seq) return a.error(name, a.site().callee + "(): argument '" + name + "' must be a tuple or list of tensors, got " +
                                     describe_value(a.value(name)));
  if (seq->items.empty()) return a.error(name, a.site().callee + "(): expected a non-empty list of tensors");
  std::vector<std::string> out;
  for (const TracedValue& item : seq->items) {
    const auto* t = item.as<TensorValue>();
    if (!t)
      return a.error(name, a.site().callee + "(): argument '" + name + "' must contain only tensors, got " +
                               describe_value(item));
    out.push_back(t->node);
  }
  return out;
}

Expected<TracedValue> TorchLibrary::permute(const std::string& x, const std::vector<int64_t>& dims,
                                            const CallSite& site) {
  const TensorType& t = type(x);
  if (static_cast<int64_t>(dims.size()) != t.rank())
    return builder_.error(site.span, site.callee + ": number of dims " + list_str(dims) + " does not match the rank " +
                                         std::to_string(t.rank()) + " of the input");
  std::vector<int64_t> normalized;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    Expected<int64_t> n = normalize_dim(d, t.rank());
    if (!n) return located(site, n.error());
    if (seen[static_cast<size_t>(*n)])
      return builder_.error(site.span, site.callee + ": dims " + list_str(dims) + " repeat a dimension");
    seen[static_cast<size_t>(*n)] = true;
    normalized.push_back(*n);
  }
  TensorType out = t;
  for (size_t i = 0; i < normalized.size(); ++i) out.shape[i] = t.shape[static_cast<size_t>(normalized[i])];
  Attrs attrs;
  attrs.set("dims", normalized);
  return emit(TorchNodeSpec{"permute", {x}, {}, std::move(attrs), out}, site);
}

Expected<TracedValue> TorchLibrary::expand(const std::string& x, const std::vector<int64_t>& sizes,
                                           const CallSite& site) {
  const TensorType& t = type(x);
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (rank < t.rank())
    return builder_.error(site.span, site.callee + ": the number of sizes " + list_str(sizes) +
                                         " must be at least the rank of the input " + shape_str(t.shape));
  std::vector<int64_t> out(sizes);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t in_i = i - (rank - t.rank());
    int64_t want = sizes[static_cast<size_t>(i)];
    if (in_i < 0) {
      if (want < 0)
        return builder_.error(site.span, site.callee + ": the new leading size " + std::to_string(want) +
                                             " must be non-negative");
      continue;
    }
    int64_t have = t.dim(in_i);
    if (want == -1) want = have;
    if (want != have && have != 1)
      return builder_.error(site.span, site.callee + ": cannot expand shape " + shape_str(t.shape) + " to " +
                                           list_str(sizes) + " (size " + std::to_string(have) +
                                           " must match or be 1 at dimension " + std::to_string(in_i) + ")");
    if (want < 0) return builder_.error(site.span, site.callee + ": sizes must be non-negative or -1, got " + list_str(sizes));
    out[static_cast<size_t>(i)] = want;
  }
  if (out == dims_of(t.shape)) return TracedValue(TensorValue{x});
  Attrs attrs;
  attrs.set("shape", out);
  return emit(TorchNodeSpec{"expand", {x}, {}, std::move(attrs), TensorType{Shape(out.begin(), out.end()), t.dtype}}, site);
}

Expected<TracedValue> TorchLibrary::slice(const std::string& x, int64_t dim, int64_t start, int64_t end, int64_t step,
                                          const CallSite& site) {
  const TensorType& t = type(x);
  if (start == 0 && end == t.dim(dim) && step == 1) return TracedValue(TensorValue{x});
  TensorType out = t;
  out.shape[static_cast<size_t>(dim)] = Dim(sliced_size(start, end, step));
  Attrs attrs;
  attrs.set("dim", dim);
  attrs.set("start", start);
  attrs.set("end", end);
  attrs.set("step", step);
  return emit(TorchNodeSpec{"slice", {x}, {}, std::move(attrs), out}, site);
}

Expected<TracedValue> TorchLibrary::cat(const std::vector<std::string>& all, int64_t dim, const CallSite& site) {
  // PyTorch's legacy rule: a 1-D tensor of shape (0,) is skipped whatever the other shapes.
  std::vector<std::string> xs;
  for (const std::string& x : all)
    if (type(x).rank() != 1 || type(x).dim(0) != 0) xs.push_back(x);
  if (xs.empty()) xs.push_back(all.front());
  const TensorType& first = type(xs.front());
  if (first.rank() == 0) return builder_.error(site.span, site.callee + ": zero-dimensional tensors cannot be concatenated");
  Expected<int64_t> d = normalize_dim(dim, first.rank());
  if (!d) return located(site, d.error());
  // The result has the promoted dtype of all the tensors (the skipped ones too, as in PyTorch);
  // the others are converted to it.
  TensorResultType promoted;
  for (const std::string& x : all) promoted.add(type(x));
  const DType dtype = *promoted.result();
  TensorType out = first;
  out.dtype = dtype;
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const TensorType& t = type(xs[i]);
    bool same = t.rank() == first.rank();
    for (int64_t k = 0; same && k < t.rank(); ++k) same = k == *d || t.dim(k) == first.dim(k);
    if (!same)
      return builder_.error(site.span, site.callee + ": tensor " + std::to_string(i) + " of shape " + shape_str(t.shape) +
                                           " does not match tensor 0 of shape " + shape_str(first.shape) +
                                           " outside dimension " + std::to_string(*d));
    total += t.dim(*d);
  }
  if (xs.size() == 1) return cast(xs.front(), dtype, site);  // no node when the dtype is the same
  for (std::string& x : xs) {
    if (type(x).dtype == dtype) continue;
    TESSERA_ASSIGN_OR_RETURN(TracedValue converted, cast(x, dtype, intermediate(site)));
    x = converted.as<TensorValue>()->node;
  }
  out.shape[static_cast<size_t>(*d)] = Dim(total);
  Attrs attrs;
  attrs.set("dim", *d);
  return emit(TorchNodeSpec{"cat", xs, {}, std::move(attrs), out}, site);
}

Expected<TracedValue> TorchLibrary::stack(const std::vector<std::string>& xs, int64_t dim, const CallSite& site) {
  const TensorType& first = type(xs.front());
  Expected<int64_t> d = normalize_dim(dim, first.rank() + 1);
  if (!d) return located(site, d.error());
  for (size_t i = 0; i < xs.size(); ++i)
    if (type(xs[i]).shape != first.shape)
      return builder_.error(site.span, site.callee + ": stack expects tensors of equal shape, but tensor " +
                                           std::to_string(i) + " has shape " + shape_str(type(xs[i]).shape) +
                                           " and tensor 0 " + shape_str(first.shape));
  std::vector<std::string> parts;
  for (const std::string& x : xs) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue u, xs.size() == 1 ? unsqueeze(x, *d, site) : unsqueeze(x, *d, intermediate(site)));
    parts.push_back(u.as<TensorValue>()->node);
  }
  return cat(parts, *d, site);
}

Expected<TracedValue> TorchLibrary::split(const std::string& x, const std::vector<int64_t>& sizes, int64_t dim,
                                          bool drop_dim, const CallSite& site) {
  auto pieces = std::make_shared<TensorPieces>();
  pieces->source = x;
  pieces->dim = dim;
  pieces->drop_dim = drop_dim;
  pieces->site = intermediate(site);
  pieces->bounds.reserve(sizes.size() + 1);
  int64_t offset = 0;
  pieces->bounds.push_back(offset);
  for (int64_t size : sizes) pieces->bounds.push_back(offset += size);
  return TracedValue(TensorPiecesValue{std::move(pieces)});
}

Expected<TracedValue> TorchLibrary::piece(TensorPieces& pieces, int64_t i) {
  TESSERA_INTERNAL_CHECK(i >= 0 && i < pieces.count(), "a piece index is checked against the piece count");
  if (auto it = pieces.nodes.find(i); it != pieces.nodes.end()) return TracedValue(TensorValue{it->second});
  const size_t k = static_cast<size_t>(i);
  TESSERA_ASSIGN_OR_RETURN(TracedValue cut, slice(pieces.source, pieces.dim, pieces.bounds[k], pieces.bounds[k + 1], 1,
                                                  pieces.site));
  if (pieces.drop_dim) {
    std::vector<int64_t> rest = dims_of(type(pieces.source).shape);
    rest.erase(rest.begin() + pieces.dim);
    TESSERA_ASSIGN_OR_RETURN(cut, reshape(cut.as<TensorValue>()->node, rest, pieces.site));
  }
  pieces.nodes.emplace(i, cut.as<TensorValue>()->node);
  return cut;
}

Expected<TracedValue> TorchLibrary::all_pieces(TensorPieces& pieces) {
  SequenceValue tuple;
  tuple.items.reserve(static_cast<size_t>(pieces.count()));
  for (int64_t i = 0; i < pieces.count(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(TracedValue p, piece(pieces, i));
    tuple.items.push_back(std::move(p));
  }
  return TracedValue(std::move(tuple));
}

Expected<TracedValue> TorchLibrary::squeeze(const std::string& x, const std::optional<std::vector<int64_t>>& dims,
                                            const CallSite& site) {
  const TensorType& t = type(x);
  std::vector<bool> drop(static_cast<size_t>(t.rank()), false);
  if (!dims) {
    for (int64_t k = 0; k < t.rank(); ++k) drop[static_cast<size_t>(k)] = t.dim(k) == 1;
  } else {
    for (int64_t d : *dims) {
      Expected<int64_t> n = normalize_dim(d, t.rank());
      if (!n) return located(site, n.error());
      if (t.rank() > 0) drop[static_cast<size_t>(*n)] = t.dim(*n) == 1;  // PyTorch keeps non-1 dims silently
    }
  }
  std::vector<int64_t> out;
  for (int64_t k = 0; k < t.rank(); ++k)
    if (!drop[static_cast<size_t>(k)]) out.push_back(t.dim(k));
  if (static_cast<int64_t>(out.size()) == t.rank()) return TracedValue(TensorValue{x});
  return reshape(x, out, site);
}

Expected<TracedValue> TorchLibrary::flatten(const std::string& x, int64_t start_dim, int64_t end_dim,
                                            const CallSite& site) {
  const TensorType& t = type(x);
  Expected<int64_t> s = normalize_dim(start_dim, t.rank());
  if (!s) return located(site, s.error());
  Expected<int64_t> e = normalize_dim(end_dim, t.rank());
  if (!e) return located(site, e.error());
  if (*s > *e)
    return builder_.error(site.span, site.callee + ": start_dim " + std::to_string(start_dim) +
                                         " cannot come after end_dim " + std::to_string(end_dim));
  if (t.rank() == 0) return reshape(x, {1}, site);
  std::vector<int64_t> out;
  int64_t merged = 1;
  for (int64_t k = 0; k < t.rank(); ++k) {
    if (k < *s || k > *e) {
      out.push_back(t.dim(k));
      continue;
    }
    merged *= t.dim(k);
    if (k == *e) out.push_back(merged);
  }
  if (static_cast<int64_t>(out.size()) == t.rank()) return TracedValue(TensorValue{x});
  return reshape(x, out, site);
}

Expected<TracedValue> TorchLibrary::index_tensor(const std::string& node, const std::vector<TensorIndexItem>& items,
                                                 const CallSite& site) {
  using Kind = TensorIndexItem::Kind;
  const TensorType t = type(node);
  int64_t consumed = 0;
  int ellipses = 0;
  for (const TensorIndexItem& item : items) {
    if (item.kind == Kind::Integer || item.kind == Kind::Slice) ++consumed;
    if (item.kind == Kind::Ellipsis && ++ellipses > 1)
      return builder_.error(item.span, "an index can only have a single ellipsis ('...')");
  }
  if (consumed > t.rank())
    return builder_.error(site.span, "too many indices for a tensor of dimension " + std::to_string(t.rank()) +
                                         " (shape " + shape_str(t.shape) + ")");

  struct Step {
    int64_t dim, start, end, step;
  };
  std::vector<Step> steps;
  std::vector<int64_t> final_shape;
  int64_t dim = 0;
  auto keep_rest = [&](int64_t count) {
    for (int64_t k = 0; k < count; ++k, ++dim) final_shape.push_back(t.dim(dim));
  };
  for (const TensorIndexItem& item : items) {
    switch (item.kind) {
      case Kind::NewAxis: final_shape.push_back(1); break;
      case Kind::Ellipsis: keep_rest(t.rank() - consumed); break;
      case Kind::Integer: {
        int64_t n = t.dim(dim);
        if (item.integer < -n || item.integer >= n)
          return builder_.error(item.span, "index " + std::to_string(item.integer) + " is out of bounds for dimension " +
                                               std::to_string(dim) + " with size " + std::to_string(n));
        int64_t i = item.integer < 0 ? item.integer + n : item.integer;
        steps.push_back({dim, i, i + 1, 1});
        ++dim;
        break;
      }
      case Kind::Slice: {
        int64_t n = t.dim(dim);
        int64_t step = item.step.value_or(1);
        if (step <= 0)
          return builder_.error(item.span, step == 0 ? "slice step cannot be zero"
                                                     : "negative slice steps are not supported on tensors (PyTorch "
                                                       "requires step > 0; use torch.flip)");
        // Python's slice.indices() for a positive step.
        auto clamp = [n](std::optional<int64_t> v, int64_t fallback) {
          if (!v) return fallback;
          return std::clamp<int64_t>(*v < 0 ? *v + n : *v, 0, n);
        };
        int64_t start = clamp(item.start, 0);
        int64_t end = clamp(item.stop, n);
        end = std::max(end, start);  // `x[:, 5:3]` is empty, as in PyTorch (fold_empty_tensors.h)
        steps.push_back({dim, start, end, step});
        final_shape.push_back(sliced_size(start, end, step));
        ++dim;
        break;
      }
    }
  }
  keep_rest(t.rank() - dim);

  std::vector<int64_t> sliced = dims_of(t.shape);
  for (const Step& s : steps) sliced[static_cast<size_t>(s.dim)] = sliced_size(s.start, s.end, s.step);
  const bool needs_reshape = final_shape != sliced;
  std::string current = node;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    // The last node created gets the assigned variable's name.
    bool last = !needs_reshape && i + 1 == steps.size();
    TESSERA_ASSIGN_OR_RETURN(TracedValue v, slice(current, s.dim, s.start, s.end, s.step, last ? site : intermediate(site)));
    current = v.as<TensorValue>()->node;
  }
  if (needs_reshape) return reshape(current, final_shape, site);
  return TracedValue(TensorValue{current});
}

// ---- strides: view and contiguous ------------------------------------------------------------

Status TorchLibrary::require_viewable(const std::string& x, const std::vector<int64_t>& shape,
                                      const CallSite& site) const {
  const TensorType& t = type(x);
  Expected<Shape> out = reshape_shape(t.shape, shape);
  if (!out) return Status::ok();  // reshape() reports the size mismatch
  if (num_elements(t.shape) == 0) return Status::ok();  // PyTorch: any view of an empty tensor exists
  if (view_strides(dims_of(t.shape), views_.strides(x, dims_of(t.shape)), dims_of(*out))) return Status::ok();
  return builder_.error(site.span, site.callee + ": view size is not compatible with input tensor's size and stride "
                                                 "(at least one dimension spans across two contiguous subspaces). "
                                                 "Use .reshape(...) instead.");
}

Expected<TracedValue> TorchLibrary::contiguous(const std::string& x, const CallSite& site) {
  const TensorType& t = type(x);
  if (views_.contiguous(x, dims_of(t.shape))) return TracedValue(TensorValue{x});
  Attrs attrs;
  attrs.set("shape", dims_of(t.shape));
  TESSERA_ASSIGN_OR_RETURN(TracedValue copy, emit(TorchNodeSpec{"reshape", {x}, {}, std::move(attrs), t}, site));
  views_.make_contiguous(copy.as<TensorValue>()->node);
  return copy;
}

}  // namespace tessera::torch_expr

// evaluate_reference: runs Torch IR in double precision, rounding each f16/bf16 op's output to
// its dtype as PyTorch eager stores it. Each target of docs/torch-ops.md has its
// own direct implementation here (loops over indices, no shared decomposition), so a wrong
// decomposition cannot hide behind the same mistake in the oracle.
#include "tessera/eval/reference_evaluator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <numbers>

#include "leaf_values.h"
#include "tessera/ir/elementwise_fn.h"

namespace tessera {
namespace {

Diagnostic node_error(const Node& n, const std::string& message) {
  return make_error(n.id() + ": " + message).at_node(n.id());
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// One node being evaluated: its operands (tensors and scalars, in the catalog's order) and attrs.
struct OpCall {
  const Node& node;
  const TorchOp& op;
  std::vector<const TensorValue*> operands;

  size_t arity() const { return operands.size(); }
  const TensorValue& operand(size_t i) const { return *operands[i]; }
  const Shape& out_shape() const { return node.type.shape; }
  TensorValue output() const { return TensorValue::filled(node.type); }
  Diagnostic error(const std::string& message) const { return node_error(node, message); }

  Status expect_arity(size_t lo, size_t hi) const {
    if (arity() >= lo && arity() <= hi) return Status::ok();
    std::string want = lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
    return error(op.target + " takes " + want + " operand(s), got " + std::to_string(arity()));
  }
  Expected<int64_t> int_attr(const std::string& key) const {
    const AttrValue* v = op.attrs.find(key);
    if (!v || !std::holds_alternative<int64_t>(*v)) return error(op.target + " needs an int attribute '" + key + "'");
    return std::get<int64_t>(*v);
  }
  // An int list attribute; a single int is accepted as a one-element list.
  Expected<std::vector<int64_t>> ints_attr(const std::string& key) const {
    const AttrValue* v = op.attrs.find(key);
    if (v && std::holds_alternative<std::vector<int64_t>>(*v)) return std::get<std::vector<int64_t>>(*v);
    if (v && std::holds_alternative<int64_t>(*v)) return std::vector<int64_t>{std::get<int64_t>(*v)};
    return error(op.target + " needs an int list attribute '" + key + "'");
  }
  // A dim normalized against rank `r` (dims as written may be negative).
  Expected<int64_t> dim_in(int64_t d, int64_t r) const {
    int64_t n = d < 0 ? d + r : d;
    if (n < 0 || n >= r)
      return error("dim " + std::to_string(d) + " is out of range for rank " + std::to_string(r));
    return n;
  }
  Status expect_shape(const Shape& computed) const {
    if (computed == out_shape()) return Status::ok();
    return error(op.target + " computes shape " + shape_str(computed) + " but the node's type is " + node.type.str());
  }
};

// PyTorch broadcasting of several shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, Dim(1));
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      Dim& o = out[rank - s.size() + i];
      int64_t d = s[i].value();
      if (d == 1) continue;
      if (o.value() != 1 && o.value() != d) return std::nullopt;
      o = Dim(d);
    }
  }
  return out;
}

// Strides that read `in_shape` broadcast to a rank-`out_rank` shape (0 along stretched dims).
std::vector<int64_t> broadcast_strides(const Shape& in_shape, size_t out_rank) {
  std::vector<int64_t> strides(out_rank, 0);
  std::vector<int64_t> own = row_major_strides(in_shape);
  for (size_t i = 0; i < in_shape.size(); ++i)
    if (in_shape[i].value() != 1) strides[out_rank - in_shape.size() + i] = own[i];
  return strides;
}

// ---- elementwise -------------------------------------------------------------------------------

double gelu_value(double x, bool tanh_form) {
  if (tanh_form) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
}

Expected<TensorValue> eval_elementwise(const OpCall& c, size_t arity,
                                       const std::function<double(const std::vector<double>&)>& fn) {
  TESSERA_TRY(c.expect_arity(arity, arity));
  std::vector<Shape> shapes;
  for (const TensorValue* v : c.operands) shapes.push_back(v->type.shape);
  std::optional<Shape> shape = broadcast_shapes(shapes);
  if (!shape) {
    std::string text;
    for (const Shape& s : shapes) text += (text.empty() ? "" : " and ") + shape_str(s);
    return c.error(c.op.target + ": shapes " + text + " do not broadcast");
  }
  TESSERA_TRY(c.expect_shape(*shape));
  std::vector<std::vector<int64_t>> strides;
  for (const TensorValue* v : c.operands) strides.push_back(broadcast_strides(v->type.shape, shape->size()));
  TensorValue out = c.output();
  std::vector<int64_t> index(shape->size(), 0);
  std::vector<double> args(arity);
  // Values are doubles here, also those of f32/f16/bf16 nodes; a float64 result reads its
  // narrower float operands as they are stored, as PyTorch converts the stored values to double.
  const bool widening = c.node.type.dtype == DType::F64;
  for (size_t flat = 0; flat < out.data.size(); ++flat, next_index(index, *shape)) {
    for (size_t k = 0; k < arity; ++k) {
      args[k] = c.operands[k]->data[static_cast<size_t>(flat_offset(index, strides[k]))];
      if (widening) args[k] = round_to_storage(args[k], c.operands[k]->type.dtype);
    }
    out.data[flat] = conform_to_dtype(fn(args), c.node.type.dtype);
  }
  return out;
}

// ---- matmul family -----------------------------------------------------------------------------

Expected<TensorValue> eval_matmul(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(2, 2));
  const TensorValue& a = c.operand(0);
  const TensorValue& b = c.operand(1);
  if (a.rank() < 1 || b.rank() < 1) return c.error("matmul operands must have rank >= 1");
  // Promote 1-D operands to matrices as torch.matmul does, remembering which dims to drop.
  Shape sa = a.type.shape, sb = b.type.shape;
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), Dim(1));
  if (b_vec) sb.push_back(Dim(1));
  const int64_t M = sa[sa.size() - 2].value(), K = sa.back().value();
  const int64_t N = sb.back().value();
  if (sb[sb.size() - 2].value() != K)
    return c.error("matmul: inner dimensions differ: " + shape_str(a.type.shape) + " @ " + shape_str(b.type.shape));
  Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  std::optional<Shape> batch = broadcast_shapes({batch_a, batch_b});
  if (!batch)
    return c.error("matmul: batch dims of " + shape_str(a.type.shape) + " and " + shape_str(b.type.shape) +
                   " do not broadcast");
  Shape result = *batch;
  if (!a_vec) result.push_back(Dim(M));
  if (!b_vec) result.push_back(Dim(N));
  TESSERA_TRY(c.expect_shape(result));

  std::vector<int64_t> bstride_a = broadcast_strides(batch_a, batch->size());
  std::vector<int64_t> bstride_b = broadcast_strides(batch_b, batch->size());
  TensorValue out = c.output();
  std::vector<int64_t> bi(batch->size(), 0);
  const int64_t batches = num_elements(*batch);
  for (int64_t t = 0; t < batches; ++t, next_index(bi, *batch)) {
    // Batch strides count whole matrices.
    const int64_t a_base = flat_offset(bi, bstride_a) * M * K;
    const int64_t b_base = flat_offset(bi, bstride_b) * K * N;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0.0;
        for (int64_t k = 0; k < K; ++k)
          acc += a.data[static_cast<size_t>(a_base + i * K + k)] * b.data[static_cast<size_t>(b_base + k * N + j)];
        out.data[static_cast<size_t>((t * M + i) * N + j)] = acc;
      }
    }
  }
  return out;
}

Expected<TensorValue> eval_linear(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(2, 3));
  const TensorValue& x = c.operand(0);
  const TensorValue& w = c.operand(1);
  if (w.rank() != 2 || x.rank() < 1 || x.type.shape.back().value() != w.type.dim(1))
    return c.error("linear: input " + shape_str(x.type.shape) + " does not match weight " + shape_str(w.type.shape));
  const int64_t in = w.type.dim(1), outf = w.type.dim(0);
  const TensorValue* bias = c.arity() == 3 ? &c.operand(2) : nullptr;
  if (bias && bias->size() != outf)
    return c.error("linear: bias " + shape_str(bias->type.shape) + " does not match out_features " + std::to_string(outf));
  Shape result = x.type.shape;
  result.back() = Dim(outf);
  TESSERA_TRY(c.expect_shape(result));
  TensorValue out = c.output();
  const int64_t rows = x.size() / std::max<int64_t>(1, in);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < outf; ++o) {
      double acc = bias ? bias->data[static_cast<size_t>(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i)
        acc += x.data[static_cast<size_t>(r * in + i)] * w.data[static_cast<size_t>(o * in + i)];
      out.data[static_cast<size_t>(r * outf + o)] = acc;
    }
  }
  return out;
}

// ---- reductions --------------------------------------------------------------------------------

// Reduces `x` over `dims` (normalized, distinct): each output element gets fn over its group, in
// index order. `fn` sees the group's values and their positions along the reduced dims (flattened).
Expected<TensorValue> reduce_groups(const OpCall& c, const TensorValue& x, const std::vector<bool>& reduced,
                                    bool keepdim,
                                    const std::function<double(const std::vector<double>&)>& fn) {
  Shape kept_shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!reduced[static_cast<size_t>(d)]) kept_shape.push_back(x.type.shape[static_cast<size_t>(d)]);
    else if (keepdim) kept_shape.push_back(Dim(1));
  }
  TESSERA_TRY(c.expect_shape(kept_shape));
  // Group the input's elements by their output position.
  std::vector<std::vector<double>> groups(static_cast<size_t>(num_elements(kept_shape)));
  Shape out_index_shape;  // the kept dims only, for the flat output position
  for (int64_t d = 0; d < x.rank(); ++d)
    if (!reduced[static_cast<size_t>(d)]) out_index_shape.push_back(x.type.shape[static_cast<size_t>(d)]);
  std::vector<int64_t> out_strides = row_major_strides(out_index_shape);
  std::vector<int64_t> index(static_cast<size_t>(x.rank()), 0);
  for (size_t flat = 0; flat < x.data.size(); ++flat, next_index(index, x.type.shape)) {
    int64_t pos = 0;
    size_t k = 0;
    for (size_t d = 0; d < index.size(); ++d)
      if (!reduced[d]) pos += index[d] * out_strides[k++];
    groups[static_cast<size_t>(pos)].push_back(x.data[flat]);
  }
  TensorValue out = c.output();
  for (size_t g = 0; g < groups.size(); ++g) out.data[g] = conform_to_dtype(fn(groups[g]), c.node.type.dtype);
  return out;
}

double max_of(const std::vector<double>& v) {
  double m = -INFINITY;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  return m;
}

double min_of(const std::vector<double>& v) {
  double m = INFINITY;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::min(m, x);
  }
  return m;
}

Expected<TensorValue> eval_reduction(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(1, 1));
  const TensorValue& x = c.operand(0);
  const std::string& t = c.op.target;
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  if (x.rank() == 0) {
    // A 0-d tensor reduces over "dim 0" (0 or -1, as PyTorch allows) to itself.
    std::vector<int64_t> dims;
    if (t == "argmax" || t == "argmin") {
      TESSERA_ASSIGN_OR_RETURN(int64_t d, c.int_attr("dim"));
      dims.push_back(d);
    } else {
      TESSERA_ASSIGN_OR_RETURN(dims, c.ints_attr("dim"));
    }
    for (int64_t d : dims) TESSERA_TRY(c.dim_in(d, 1).status());
  } else if (t == "argmax" || t == "argmin") {
    TESSERA_ASSIGN_OR_RETURN(int64_t d, c.int_attr("dim"));
    TESSERA_ASSIGN_OR_RETURN(int64_t n, c.dim_in(d, x.rank()));
    reduced[static_cast<size_t>(n)] = true;
  } else {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.ints_attr("dim"));
    if (dims.empty())  // an empty list means every dim, like PyTorch's dim=()
      for (int64_t d = 0; d < x.rank(); ++d) dims.push_back(d);
    for (int64_t d : dims) {
      TESSERA_ASSIGN_OR_RETURN(int64_t n, c.dim_in(d, x.rank()));
      if (reduced[static_cast<size_t>(n)]) return c.error("dim " + std::to_string(d) + " appears twice in " + ints_str(dims));
      reduced[static_cast<size_t>(n)] = true;
    }
  }
  const bool keepdim = c.op.attrs.get_bool("keepdim", false);
  if (t == "sum")
    return reduce_groups(c, x, reduced, keepdim, [](const std::vector<double>& v) {
      double s = 0.0;
      for (double e : v) s += e;
      return s;
    });
  if (t == "mean")
    return reduce_groups(c, x, reduced, keepdim, [](const std::vector<double>& v) {
      double s = 0.0;
      for (double e : v) s += e;
      return s / static_cast<double>(v.size());
    });
  if (t == "amax") return reduce_groups(c, x, reduced, keepdim, max_of);
  if (t == "amin") return reduce_groups(c, x, reduced, keepdim, min_of);
  const bool is_max = t == "argmax";
  // The first extreme wins; NaN counts as the extreme, like PyTorch.
  return reduce_groups(c, x, reduced, keepdim, [is_max](const std::vector<double>& v) {
    size_t best = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      if (std::isnan(v[best])) break;
      if (std::isnan(v[i]) || (is_max ? v[i] > v[best] : v[i] < v[best])) best = i;
    }
    return static_cast<double>(best);
  });
}

// Applies `fn` to every line of `x` along `dim` (a contiguous copy of the line in, same length out).
TensorValue map_lines(const TensorValue& x, int64_t dim, TensorType out_type,
                      const std::function<void(std::vector<double>&)>& fn) {
  const int64_t extent = x.type.dim(dim);
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < x.rank(); ++d) inner *= x.type.dim(d);
  const int64_t outer = x.size() / std::max<int64_t>(1, extent * inner);
  TensorValue out(std::move(out_type), x.data);
  std::vector<double> line(static_cast<size_t>(extent));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t e = 0; e < extent; ++e) line[static_cast<size_t>(e)] = x.data[static_cast<size_t>((o * extent + e) * inner + i)];
      fn(line);
      for (int64_t e = 0; e < extent; ++e) out.data[static_cast<size_t>((o * extent + e) * inner + i)] = line[static_cast<size_t>(e)];
    }
  }
  return out;
}

void softmax_line(std::vector<double>& v) {
  double m = max_of(v);
  double s = 0.0;
  for (double& e : v) s += (e = std::exp(e - m));
  for (double& e : v) e /= s;
}

Expected<TensorValue> eval_softmax(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(1, 1));
  const TensorValue& x = c.operand(0);
  TESSERA_TRY(c.expect_shape(x.type.shape));
  if (x.rank() == 0) return TensorValue(c.node.type, std::vector<double>{1.0});
  TESSERA_ASSIGN_OR_RETURN(int64_t d, c.int_attr("dim"));
  TESSERA_ASSIGN_OR_RETURN(int64_t n, c.dim_in(d, x.rank()));
  return map_lines(x, n, c.node.type, softmax_line);
}

// ---- normalization -----------------------------------------------------------------------------

Expected<TensorValue> eval_norm(const OpCall& c, bool layer_norm) {
  TESSERA_TRY(c.expect_arity(1, layer_norm ? 3 : 2));
  const TensorValue& x = c.operand(0);
  TESSERA_TRY(c.expect_shape(x.type.shape));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> ns, c.ints_attr("normalized_shape"));
  const double eps = c.op.attrs.get_float("eps", layer_norm ? 1e-5 : 1.1920928955078125e-07);
  if (ns.empty() || static_cast<int64_t>(ns.size()) > x.rank())
    return c.error("normalized_shape " + ints_str(ns) + " does not fit input " + shape_str(x.type.shape));
  int64_t group = 1;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (x.type.shape[x.type.shape.size() - ns.size() + i].value() != ns[i])
      return c.error("input " + shape_str(x.type.shape) + " does not end with normalized_shape " + ints_str(ns));
    group *= ns[i];
  }
  const TensorValue* weight = c.arity() >= 2 ? &c.operand(1) : nullptr;
  const TensorValue* bias = c.arity() >= 3 ? &c.operand(2) : nullptr;
  for (const TensorValue* p : {weight, bias})
    if (p && p->size() != group)
      return c.error("parameter of shape " + shape_str(p->type.shape) + " does not match normalized_shape " + ints_str(ns));
  TensorValue out = c.output();
  const int64_t rows = group == 0 ? 0 : x.size() / group;
  for (int64_t r = 0; r < rows; ++r) {
    const double* in = x.data.data() + r * group;
    double mean = 0.0;
    if (layer_norm) {
      for (int64_t i = 0; i < group; ++i) mean += in[i];
      mean /= static_cast<double>(group);
    }
    double sq = 0.0;
    for (int64_t i = 0; i < group; ++i) sq += (in[i] - mean) * (in[i] - mean);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(group) + eps);
    for (int64_t i = 0; i < group; ++i) {
      double v = (in[i] - mean) * inv;
      if (weight) v *= weight->data[static_cast<size_t>(i)];
      if (bias) v += bias->data[static_cast<size_t>(i)];
      out.data[static_cast<size_t>(r * group + i)] = v;
    }
  }
  return out;
}

// ---- attention and embedding -------------------------------------------------------------------

Expected<TensorValue> eval_sdpa(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(3, 3));
  const TensorValue& q = c.operand(0);
  const TensorValue& k = c.operand(1);
  const TensorValue& v = c.operand(2);
  const int64_t r = q.rank();
  if (r < 2 || k.rank() != r || v.rank() != r)
    return c.error("scaled_dot_product_attention needs q, k, v of equal rank >= 2, got " + shape_str(q.type.shape) +
                   ", " + shape_str(k.type.shape) + ", " + shape_str(v.type.shape));
  const int64_t L = q.type.dim(r - 2), E = q.type.dim(r - 1);
  const int64_t S = k.type.dim(r - 2), Ev = v.type.dim(r - 1);
  if (k.type.dim(r - 1) != E || v.type.dim(r - 2) != S)
    return c.error("scaled_dot_product_attention: k " + shape_str(k.type.shape) + " / v " + shape_str(v.type.shape) +
                   " do not match q " + shape_str(q.type.shape));
  const bool gqa = c.op.attrs.get_bool("enable_gqa", false) && r >= 3;
  const Shape lead_q(q.type.shape.begin(), q.type.shape.end() - 2);
  const Shape lead_k(k.type.shape.begin(), k.type.shape.end() - 2);
  const Shape lead_v(v.type.shape.begin(), v.type.shape.end() - 2);
  if (lead_k != lead_v) return c.error("scaled_dot_product_attention: k and v leading dims differ");
  int64_t group = 1;  // query heads per kv head
  if (gqa) {
    const int64_t hq = lead_q.back().value(), hkv = lead_k.back().value();
    if (hkv == 0 || hq % hkv != 0 || !std::equal(lead_q.begin(), lead_q.end() - 1, lead_k.begin(), lead_k.end() - 1))
      return c.error("scaled_dot_product_attention (GQA): query heads " + shape_str(lead_q) +
                     " do not group over kv heads " + shape_str(lead_k));
    group = hq / hkv;
  } else if (lead_q != lead_k) {
    return c.error("scaled_dot_product_attention: leading dims of q " + shape_str(q.type.shape) + " and k " +
                   shape_str(k.type.shape) + " differ");
  }
  Shape result = lead_q;
  result.push_back(Dim(L));
  result.push_back(Dim(Ev));
  TESSERA_TRY(c.expect_shape(result));
  const double scale = c.op.attrs.get_float("scale", 1.0 / std::sqrt(static_cast<double>(E)));
  const bool causal = c.op.attrs.get_bool("is_causal", false);

  TensorValue out = c.output();
  const int64_t slices = num_elements(lead_q);
  std::vector<double> p(static_cast<size_t>(S));
  for (int64_t h = 0; h < slices; ++h) {
    // Without GQA the kv slice is the query slice; with it, each kv head serves `group` heads.
    const int64_t hk = h / group;
    const double* qs = q.data.data() + h * L * E;
    const double* ks = k.data.data() + hk * S * E;
    const double* vs = v.data.data() + hk * S * Ev;
    for (int64_t l = 0; l < L; ++l) {
      for (int64_t j = 0; j < S; ++j) {
        if (causal && j > l) {
          p[static_cast<size_t>(j)] = -INFINITY;
          continue;
        }
        double s = 0.0;
        for (int64_t e = 0; e < E; ++e) s += qs[l * E + e] * ks[j * E + e];
        p[static_cast<size_t>(j)] = scale * s;
      }
      softmax_line(p);
      for (int64_t e = 0; e < Ev; ++e) {
        double acc = 0.0;
        for (int64_t j = 0; j < S; ++j) acc += p[static_cast<size_t>(j)] * vs[j * Ev + e];
        out.data[static_cast<size_t>((h * L + l) * Ev + e)] = acc;
      }
    }
  }
  return out;
}

Expected<TensorValue> eval_embedding(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(2, 2));
  const TensorValue& ids = c.operand(0);
  const TensorValue& w = c.operand(1);
  if (w.rank() != 2) return c.error("embedding weight must be 2-D, got " + shape_str(w.type.shape));
  const int64_t N = w.type.dim(0), D = w.type.dim(1);
  Shape result = ids.type.shape;
  result.push_back(Dim(D));
  TESSERA_TRY(c.expect_shape(result));
  TensorValue out = c.output();
  for (int64_t i = 0; i < ids.size(); ++i) {
    double id = ids.data[static_cast<size_t>(i)];
    if (!(id >= 0 && id < static_cast<double>(N)))
      return c.error("embedding index " + std::to_string(static_cast<int64_t>(id)) + " at position " +
                     std::to_string(i) + " is outside [0, " + std::to_string(N) + ")");
    std::copy_n(w.data.begin() + static_cast<int64_t>(id) * D, D, out.data.begin() + i * D);
  }
  return out;
}

// ---- layout ------------------------------------------------------------------------------------

// out[c] = x[source(c)] for every output coordinate c.
TensorValue gather_coords(const OpCall& c, const TensorValue& x,
                          const std::function<void(const std::vector<int64_t>&, std::vector<int64_t>&)>& source) {
  TensorValue out = c.output();
  std::vector<int64_t> index(c.out_shape().size(), 0);
  std::vector<int64_t> src(static_cast<size_t>(x.rank()), 0);
  std::vector<int64_t> strides = row_major_strides(x.type.shape);
  for (size_t flat = 0; flat < out.data.size(); ++flat, next_index(index, c.out_shape())) {
    source(index, src);
    out.data[flat] = x.data[static_cast<size_t>(flat_offset(src, strides))];
  }
  return out;
}

Expected<TensorValue> eval_reshape(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(1, 1));
  const TensorValue& x = c.operand(0);
  if (num_elements(c.out_shape()) != x.size())
    return c.error(c.op.target + " of " + shape_str(x.type.shape) + " to " + shape_str(c.out_shape()) +
                   " changes the number of elements");
  if (c.op.target == "reshape") {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.ints_attr("shape"));
    TESSERA_TRY(c.expect_shape(Shape(shape.begin(), shape.end())));
  } else {
    TESSERA_ASSIGN_OR_RETURN(int64_t d, c.int_attr("dim"));
    TESSERA_ASSIGN_OR_RETURN(int64_t n, c.dim_in(d, x.rank() + 1));
    Shape s = x.type.shape;
    s.insert(s.begin() + n, Dim(1));
    TESSERA_TRY(c.expect_shape(s));
  }
  TensorValue out = c.output();
  out.data = x.data;
  return out;
}

Expected<TensorValue> eval_transpose(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(1, 1));
  const TensorValue& x = c.operand(0);
  TESSERA_ASSIGN_OR_RETURN(int64_t d0, c.int_attr("dim0"));
  TESSERA_ASSIGN_OR_RETURN(int64_t d1, c.int_attr("dim1"));
  if (x.rank() == 0) return TensorValue(c.node.type, x.data);
  TESSERA_ASSIGN_OR_RETURN(int64_t a, c.dim_in(d0, x.rank()));
  TESSERA_ASSIGN_OR_RETURN(int64_t b, c.dim_in(d1, x.rank()));
  Shape s = x.type.shape;
  std::swap(s[static_cast<size_t>(a)], s[static_cast<size_t>(b)]);
  TESSERA_TRY(c.expect_shape(s));
  return gather_coords(c, x, [a, b](const std::vector<int64_t>& o, std::vector<int64_t>& src) {
    src = o;
    std::swap(src[static_cast<size_t>(a)], src[static_cast<size_t>(b)]);
  });
}

Expected<TensorValue> eval_permute(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(1, 1));
  const TensorValue& x = c.operand(0);
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.ints_attr("dims"));
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  bool valid = static_cast<int64_t>(dims.size()) == x.rank();
  for (size_t i = 0; valid && i < sorted.size(); ++i) valid = sorted[i] == static_cast<int64_t>(i);
  if (!valid) return c.error("permute dims " + ints_str(dims) + " are not a permutation of the input's " +
                             std::to_string(x.rank()) + " dims");
  Shape s;
  for (int64_t d : dims) s.push_back(x.type.shape[static_cast<size_t>(d)]);
  TESSERA_TRY(c.expect_shape(s));
  return gather_coords(c, x, [&dims](const std::vector<int64_t>& o, std::vector<int64_t>& src) {
    for (size_t i = 0; i < dims.size(); ++i) src[static_cast<size_t>(dims[i])] = o[i];
  });
}

Expected<TensorValue> eval_expand(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(1, 1));
  const TensorValue& x = c.operand(0);
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.ints_attr("shape"));
  Shape s(shape.begin(), shape.end());
  std::optional<Shape> b = broadcast_shapes({x.type.shape, s});
  if (!b || *b != s || x.rank() > static_cast<int64_t>(s.size()))
    return c.error("expand: " + shape_str(x.type.shape) + " cannot be broadcast to " + shape_str(s));
  TESSERA_TRY(c.expect_shape(s));
  std::vector<int64_t> strides = broadcast_strides(x.type.shape, s.size());
  TensorValue out = c.output();
  std::vector<int64_t> index(s.size(), 0);
  for (size_t flat = 0; flat < out.data.size(); ++flat, next_index(index, s))
    out.data[flat] = x.data[static_cast<size_t>(flat_offset(index, strides))];
  return out;
}

Expected<TensorValue> eval_slice(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(1, 1));
  const TensorValue& x = c.operand(0);
  TESSERA_ASSIGN_OR_RETURN(int64_t d, c.int_attr("dim"));
  TESSERA_ASSIGN_OR_RETURN(int64_t dim, c.dim_in(d, x.rank()));
  TESSERA_ASSIGN_OR_RETURN(int64_t start, c.int_attr("start"));
  TESSERA_ASSIGN_OR_RETURN(int64_t end, c.int_attr("end"));
  const int64_t step = c.op.attrs.get_int("step", 1);
  const int64_t size = x.type.dim(dim);
  if (step < 1 || start < 0 || start >= end || end > size)
    return c.error("slice [" + std::to_string(start) + ":" + std::to_string(end) + ":" + std::to_string(step) +
                   "] is invalid for a dimension of size " + std::to_string(size));
  Shape s = x.type.shape;
  s[static_cast<size_t>(dim)] = Dim((end - start + step - 1) / step);
  TESSERA_TRY(c.expect_shape(s));
  return gather_coords(c, x, [dim, start, step](const std::vector<int64_t>& o, std::vector<int64_t>& src) {
    src = o;
    src[static_cast<size_t>(dim)] = start + o[static_cast<size_t>(dim)] * step;
  });
}

Expected<TensorValue> eval_cat(const OpCall& c) {
  if (c.arity() < 1) return c.error("cat needs at least one operand");
  TESSERA_ASSIGN_OR_RETURN(int64_t d, c.int_attr("dim"));
  const TensorValue& first = c.operand(0);
  TESSERA_ASSIGN_OR_RETURN(int64_t dim, c.dim_in(d, first.rank()));
  Shape s = first.type.shape;
  int64_t total = 0;
  for (const TensorValue* v : c.operands) {
    bool same = v->rank() == first.rank();
    for (int64_t i = 0; same && i < first.rank(); ++i) same = i == dim || v->type.dim(i) == first.type.dim(i);
    if (!same)
      return c.error("cat operands " + shape_str(first.type.shape) + " and " + shape_str(v->type.shape) +
                     " differ outside dim " + std::to_string(dim));
    total += v->type.dim(dim);
  }
  s[static_cast<size_t>(dim)] = Dim(total);
  TESSERA_TRY(c.expect_shape(s));
  TensorValue out = c.output();
  std::vector<int64_t> index(s.size(), 0);
  for (size_t flat = 0; flat < out.data.size(); ++flat, next_index(index, s)) {
    std::vector<int64_t> src = index;
    for (const TensorValue* v : c.operands) {
      const int64_t extent = v->type.dim(dim);
      if (src[static_cast<size_t>(dim)] < extent) {
        out.data[flat] = v->at(src);
        break;
      }
      src[static_cast<size_t>(dim)] -= extent;
    }
  }
  return out;
}

// ---- generated tensors -------------------------------------------------------------------------

// arange: out[i] = start + i * step, computed in double and stored in the node's dtype (as
// PyTorch's CPU kernel accumulates in double).
Expected<TensorValue> eval_arange(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(0, 0));
  if (c.out_shape().size() != 1) return c.error("arange produces a 1-D tensor, but the node's type is " + c.node.type.str());
  const double start = c.op.attrs.get_float("start", 0.0);
  const double step = c.op.attrs.get_float("step", 1.0);
  TensorValue out = c.output();
  for (size_t i = 0; i < out.data.size(); ++i)
    out.data[i] = conform_to_dtype(start + static_cast<double>(i) * step, c.node.type.dtype);
  return out;
}

// full: every element is `value` in the node's dtype.
Expected<TensorValue> eval_full(const OpCall& c) {
  TESSERA_TRY(c.expect_arity(0, 0));
  const AttrValue* v = c.op.attrs.find("value");
  if (!v || std::holds_alternative<std::string>(*v) || std::holds_alternative<std::vector<int64_t>>(*v))
    return c.error("full needs a number attribute 'value'");
  const double value = c.op.attrs.get_float("value", 0.0);
  TensorValue out = c.output();
  for (double& e : out.data) e = conform_to_dtype(value, c.node.type.dtype);
  return out;
}

// ---- dispatch ----------------------------------------------------------------------------------

using TargetFn = std::function<Expected<TensorValue>(const OpCall&)>;

// An elementwise target computed by the scalar function of the same name.
TargetFn by_scalar_fn(ElementwiseFn fn) {
  return [fn](const OpCall& c) -> Expected<TensorValue> {
    // An integer floor_divide / remainder by zero is PyTorch's ZeroDivisionError, not a value.
    const bool integral = !dtype_is_float(c.node.type.dtype);
    bool divided_by_zero = false;
    Expected<TensorValue> out = eval_elementwise(c, fn_info(fn).arity, [&](const std::vector<double>& a) {
      if (integral && is_integer_division_by_zero(fn, a)) divided_by_zero = true;
      return apply_elementwise_fn(fn, a);
    });
    if (out && divided_by_zero)
      return c.error("integer division by zero (PyTorch raises ZeroDivisionError)");
    return out;
  };
}

const std::map<std::string, TargetFn>& targets() {
  static const std::map<std::string, TargetFn> table = [] {
    std::map<std::string, TargetFn> t;
    // The torch.* elementwise functions of the table, and F.silu (a Torch target decompose expands).
    for (const ElementwiseFnInfo& f : kElementwiseFns)
      if (f.torch != TorchForm::None) t[std::string(f.name)] = by_scalar_fn(f.fn);
    t["silu"] = by_scalar_fn(ElementwiseFn::Silu);
    t["gelu"] = [](const OpCall& c) -> Expected<TensorValue> {
      std::string approximate = c.op.attrs.get_string("approximate", "none");
      if (approximate != "none" && approximate != "tanh")
        return c.error("gelu approximate must be 'none' or 'tanh', got '" + approximate + "'");
      bool tanh_form = approximate == "tanh";
      return eval_elementwise(c, 1, [tanh_form](const std::vector<double>& a) { return gelu_value(a[0], tanh_form); });
    };
    t["cast"] = [](const OpCall& c) -> Expected<TensorValue> {
      std::string name = c.op.attrs.get_string("dtype", "");
      std::optional<DType> dt = parse_dtype(name);
      if (!dt) return c.error("cast needs a dtype attribute naming a dtype, got '" + name + "'");
      if (*dt != c.node.type.dtype)
        return c.error("cast to " + name + " but the node's type is " + c.node.type.str());
      return eval_elementwise(c, 1, [](const std::vector<double>& a) { return a[0]; });
    };
    t["matmul"] = eval_matmul;
    t["linear"] = eval_linear;
    for (const char* r : {"sum", "mean", "amax", "amin", "argmax", "argmin"}) t[r] = eval_reduction;
    t["softmax"] = eval_softmax;
    t["rms_norm"] = [](const OpCall& c) { return eval_norm(c, false); };
    t["layer_norm"] = [](const OpCall& c) { return eval_norm(c, true); };
    t["scaled_dot_product_attention"] = eval_sdpa;
    t["embedding"] = eval_embedding;
    t["reshape"] = eval_reshape;
    t["unsqueeze"] = eval_reshape;
    t["transpose"] = eval_transpose;
    t["permute"] = eval_permute;
    t["expand"] = eval_expand;
    t["slice"] = eval_slice;
    t["cat"] = eval_cat;
    // Generated tensors: no operands, the node's type gives shape and dtype.
    t["arange"] = eval_arange;
    t["full"] = eval_full;
    for (const char* f : {"logical_and", "logical_or", "logical_not"})
      t[f] = by_scalar_fn(*parse_elementwise_fn(f));
    return t;
  }();
  return table;
}

}  // namespace

Expected<ValueMap> evaluate_reference(const Graph& graph, const ValueMap& inputs) {
  return evaluate_in_order(graph, inputs, [](const Node& n, const ValueMap& values) -> Expected<TensorValue> {
    const auto* op = n.op_as<TorchOp>();
    if (!op)
      return node_error(n, "the reference evaluator runs Torch IR only, not a " +
                                std::string(n.op ? n.op->kind() : "null") + " node");
    auto fn = targets().find(op->target);
    if (fn == targets().end()) return node_error(n, "unknown torch target '" + op->target + "'");

    // Operands: the inputs with each scalar inserted at its position (docs/torch-ops.md).
    std::deque<TensorValue> scalars;
    OpCall call{n, *op, {}};
    std::vector<std::pair<int64_t, double>> scalar_args = op->scalar_args;
    std::sort(scalar_args.begin(), scalar_args.end());
    const size_t total = n.inputs.size() + scalar_args.size();
    size_t next_input = 0, next_scalar = 0;
    for (size_t pos = 0; pos < total; ++pos) {
      if (next_scalar < scalar_args.size() && scalar_args[next_scalar].first == static_cast<int64_t>(pos)) {
        // A Python number is a double (it is never rounded to a narrower operand type here).
        scalars.emplace_back(TensorType{Shape{}, DType::F64}, std::vector<double>{scalar_args[next_scalar++].second});
        call.operands.push_back(&scalars.back());
        continue;
      }
      if (next_input >= n.inputs.size())
        return node_error(n, "scalar argument positions do not fit the node's " + std::to_string(total) + " operands");
      TESSERA_ASSIGN_OR_RETURN(const TensorValue* v, operand_value(n, next_input++, values));
      call.operands.push_back(v);
    }
    // Like PyTorch eager, each op's result is stored in its dtype: a bf16/f16 op rounds its output
    // (and the next op reads the rounded value). f32 results stay in double: the reference is the
    // exact answer that f32 kernels approximate.
    Expected<TensorValue> result = fn->second(call);
    if (result && (n.type.dtype == DType::BF16 || n.type.dtype == DType::F16))
      for (double& v : result->data) v = round_to_storage(v, n.type.dtype);
    return result;
  });
}

}  // namespace tessera

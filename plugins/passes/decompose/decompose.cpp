// decompose: lowers every Torch IR node to Tensor IR primitives (Elementwise, Reduce, IndexMap,
// Gather).
//
// Rewrites, per torch node (in graph order; op semantics from docs/torch-ops.md):
//   - the elementwise functions with a torch form in tessera/ir/elementwise_fn.h (math,
//     comparisons, where) and cast -> one Elementwise whose tensor operands are first broadcast to
//     the output shape by IndexMaps (`bias_bc = bias[j]`); scalars become literal arguments
//     (integer literals in integer arithmetic, so they stay exact); cast is the `identity` fn (the
//     node's dtype does the conversion);
//   - sum / mean / amax / amin over dims -> one Reduce per dim (mean multiplies by the literal 1/n;
//     a bool / int32 sum first converts to int64); argmax / argmin -> max, eq, a coordinate-valued
//     IndexMap, where, min (first hit wins); a 0-d input reduces to itself (argmax to 0);
//   - layout ops (reshape, transpose, permute, unsqueeze, expand, slice) -> one IndexMap over the
//     output coordinates; cat -> one IndexMap with a source per operand selected by predicates;
//   - matmul -> broadcast both operands into (batch.., M, K, N), multiply, sum over K (keepdim),
//     drop K with an IndexMap (the seed printout: prod, red, `matmul = red[i, 0, j]`);
//     linear -> the same over (.., N, K) with a bias add;
//   - softmax, rms_norm, layer_norm, gelu (erf and tanh forms), silu -> their textbook formulas;
//   - scaled_dot_product_attention -> q.k summed over E, scaled, a causal-mask IndexMap (-inf
//     where j > i), softmax, p.v summed over S; GQA reads k/v at head h / group (no copy);
//   - embedding -> gather(weight, indices, axis=0).
//   - arange -> a coordinate-valued IndexMap (times step plus start); full -> a literal IndexMap;
//     logical_and / logical_or / logical_not -> one Elementwise (the table's functions).
// Half precision: for an f16/bf16 torch op, the helper Elementwise and Reduce nodes compute in f32
// and only the op's result has the op's dtype (IndexMaps keep their source's dtype), as PyTorch's
// composite kernels compute in f32 ("opmath") and round once: a bf16 matmul does not round every
// product, a bf16 softmax not its exponentials. One exception: attention's probabilities are
// rounded to the op's dtype before P.V, as PyTorch's attention kernels round them.
// Naming: helper nodes are named after their role (x_bc, prod, red, softmax_max, ...) made unique
// with Graph::unique_id; the last node of each decomposition keeps the torch node's id, so graph
// outputs and later users stay valid.
// Accepts: a graph whose compute nodes are Torch IR ops as the torch_expr frontend emits them
//   (docs/torch-ops.md); tensor nodes already present are left alone.
// Guarantees: no TorchOp remains; every Elementwise operand has the output shape; the result
//   verifies and computes the same values (checked against the reference evaluator). An op it
//   does not know is an error naming the node, never a crash. No knobs.
// Tests: tests/golden/decompose/ (printouts) and tests/unit/decompose_test.cpp (differential).
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

// IndexMap coordinates are named i, j, k, l, m, n in output-dimension order.
std::string coord_name(size_t d) {
  static const char* names[] = {"i", "j", "k", "l", "m", "n"};
  return d < 6 ? names[d] : "c" + std::to_string(d);
}

std::vector<std::string> coord_names(size_t rank) {
  std::vector<std::string> out;
  for (size_t d = 0; d < rank; ++d) out.push_back(coord_name(d));
  return out;
}

RangeMap coord_ranges(const Shape& shape) {
  RangeMap ranges;
  for (size_t d = 0; d < shape.size(); ++d) ranges[coord_name(d)] = Interval{0, shape[d].value() - 1};
  return ranges;
}

// An operand of an elementwise function: a node, or a scalar literal when `node` is empty.
struct Operand {
  std::string node;
  double scalar = 0.0;
  static Operand tensor(std::string id) { return Operand{std::move(id), 0.0}; }
  static Operand literal(double v) { return Operand{"", v}; }
};

// Decomposes one torch node: helper nodes are inserted before it; the value it computes is returned
// and then moved into the torch node itself (see finish()).
class Decomposer {
 public:
  Decomposer(Graph& g, const Node& torch, PassContext& ctx)
      : g_(g), ctx_(ctx), id_(torch.id()), op_(*torch.op_as<TorchOp>()), inputs_(torch.inputs),
        out_(torch.type), loc_(torch.loc) {}

  Status run() {
    Expected<std::string> value = decompose();
    if (!value) return std::move(value).error();
    TESSERA_TRY(status_);
    return finish(*value);
  }

 private:
  Diagnostic error(const std::string& message) const {
    const Node* n = g_.find(id_);
    return ctx_.error_at(*n, op_.target + ": " + message);
  }

  const TensorType& type(const std::string& v) const { return g_.find(v)->type; }

  std::string add(const std::string& base, std::unique_ptr<Op> op, std::vector<std::string> inputs,
                  TensorType t) {
    std::string id = g_.unique_id(base);
    Expected<Node*> n = g_.insert_before(id_, id, std::move(op), std::move(inputs), std::move(t));
    if (!n) {
      // Ends the pass (run() returns it); the torch node's id keeps the lookups valid until then.
      if (status_) status_ = n.status();
      return id_;
    }
    (*n)->loc = loc_;
    created_.push_back(id);
    return id;
  }

  std::string index_map(const std::string& base, const std::string& src, ExprList index, TensorType t) {
    auto op = std::make_unique<IndexMapOp>();
    op->coords = coord_names(t.shape.size());
    RangeMap ranges = coord_ranges(t.shape);
    for (Expr& e : index) e = simplify(e, ranges);
    op->sources.push_back(IndexMapSource{src, std::move(index), Expr(), Expr()});
    return add(base, std::move(op), {src}, std::move(t));
  }

  // `v` broadcast (PyTorch rules, right-aligned) to `shape`; `v` itself when it already has it.
  std::string broadcast(const std::string& v, const Shape& shape) {
    const TensorType& t = type(v);
    if (t.shape == shape) return v;
    ExprList index;
    size_t offset = shape.size() - t.shape.size();
    for (size_t s = 0; s < t.shape.size(); ++s) {
      bool stretched = t.shape[s].value() == 1 && shape[s + offset].value() != 1;
      index.push_back(stretched ? Expr::int_(0) : Expr::var(coord_name(s + offset)));
    }
    return index_map(v + "_bc", v, std::move(index), TensorType{shape, t.dtype});
  }

  std::string elementwise(const std::string& base, ElementwiseFn fn, const std::vector<Operand>& operands,
                          const Shape& shape, DType dtype) {
    auto op = std::make_unique<ElementwiseOp>();
    op->fn = fn;
    std::vector<std::string> inputs;
    // A whole-number scalar in integer arithmetic (every tensor operand and the result integer or
    // bool) is an integer literal, so that it is exact (an f32 literal is not beyond 2^24).
    bool integer_math = !dtype_is_float(dtype);
    for (const Operand& o : operands)
      if (!o.node.empty() && dtype_is_float(type(o.node).dtype)) integer_math = false;
    for (const Operand& o : operands) {
      if (o.node.empty()) {
        const bool whole = std::isfinite(o.scalar) && std::trunc(o.scalar) == o.scalar && std::fabs(o.scalar) < 0x1p63;
        op->args.push_back(integer_math && whole ? Expr::int_(static_cast<int64_t>(o.scalar)) : Expr::float_(o.scalar));
        continue;
      }
      std::string b = broadcast(o.node, shape);
      op->args.push_back(Expr::var(b));
      if (std::find(inputs.begin(), inputs.end(), b) == inputs.end()) inputs.push_back(b);
    }
    return add(base, std::move(op), std::move(inputs), TensorType{shape, dtype});
  }

  // Elementwise over operands of one shape family; the result shape is their broadcast.
  std::string ew(const std::string& role, ElementwiseFn fn, const std::vector<Operand>& operands) {
    Shape shape;
    DType dtype = out_.dtype;
    for (const Operand& o : operands) {
      if (o.node.empty()) continue;
      const TensorType& t = type(o.node);
      if (t.shape.size() > shape.size()) shape.insert(shape.begin(), t.shape.size() - shape.size(), Dim(1));
      size_t offset = shape.size() - t.shape.size();
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (t.shape[d].value() != 1) shape[d + offset] = t.shape[d];
      dtype = t.dtype;
    }
    return elementwise(id_ + "_" + role, fn, operands, shape, dtype);
  }

  // One Reduce over `axis` (non-negative) of `v`; printed with a negative axis like the seed.
  std::string reduce(const std::string& base, CombineFn fn, const std::string& v, int64_t axis,
                     bool keepdim) {
    const TensorType& t = type(v);
    auto op = std::make_unique<ReduceOp>();
    op->fn = fn;
    op->axis = axis - t.rank();
    op->keepdim = keepdim;
    TensorType out = t;
    if (keepdim) out.shape[static_cast<size_t>(axis)] = Dim(1);
    else out.shape.erase(out.shape.begin() + axis);
    return add(base, std::move(op), {v}, std::move(out));
  }

  // Reduces every dim of `dims` (normalized) in turn, highest first so lower axes keep their index.
  std::string reduce_dims(const std::string& base, CombineFn fn, std::string v,
                          std::vector<int64_t> dims, bool keepdim) {
    std::sort(dims.rbegin(), dims.rend());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    for (int64_t d : dims) v = reduce(base, fn, v, d, keepdim);
    return v;
  }

  int64_t count(const std::string& v, const std::vector<int64_t>& dims) const {
    int64_t n = 1;
    for (int64_t d : dims) n *= type(v).dim(d);
    return n;
  }

  // The last `k` dims of a rank-`rank` tensor.
  static std::vector<int64_t> trailing_dims(int64_t rank, size_t k) {
    std::vector<int64_t> dims;
    for (int64_t d = rank - static_cast<int64_t>(k); d < rank; ++d) dims.push_back(d);
    return dims;
  }

  // A 0-d tensor has one "dim", 0 or -1 (as in PyTorch).
  Expected<int64_t> normalize_dim(int64_t dim, int64_t rank) const {
    const int64_t r = std::max<int64_t>(rank, 1);
    int64_t d = dim < 0 ? dim + r : dim;
    if (d < 0 || d >= r) return error("dim " + std::to_string(dim) + " is out of range");
    return d;
  }

  Expected<std::vector<int64_t>> int_list_attr(const std::string& key) const {
    const AttrValue* v = op_.attrs.find(key);
    if (v == nullptr) return error("missing attribute '" + key + "'");
    if (const auto* list = std::get_if<std::vector<int64_t>>(v)) return *list;
    if (const auto* one = std::get_if<int64_t>(v)) return std::vector<int64_t>{*one};
    return error("attribute '" + key + "' must be an int or a list of ints");
  }

  Expected<std::string> input(size_t i) const {
    if (i >= inputs_.size()) return error("expected at least " + std::to_string(i + 1) + " tensor operands");
    return inputs_[i];
  }

  // Operands in printed order: scalar_args at their positions, tensor inputs filling the rest.
  std::vector<Operand> operands() const {
    size_t total = inputs_.size() + op_.scalar_args.size();
    std::vector<std::optional<Operand>> slots(total);
    for (const auto& [pos, value] : op_.scalar_args)
      if (pos >= 0 && static_cast<size_t>(pos) < total) slots[static_cast<size_t>(pos)] = Operand::literal(value);
    size_t next = 0;
    std::vector<Operand> out;
    for (auto& s : slots) {
      if (!s && next < inputs_.size()) s = Operand::tensor(inputs_[next++]);
      if (s) out.push_back(*s);
    }
    return out;
  }

  // ---- the ops ---------------------------------------------------------------------------------

  Expected<std::string> decompose() {
    const std::string& t = op_.target;
    // The torch.* elementwise functions map one to one onto Tensor IR Elementwise (silu and cast
    // have their own rules below).
    const Expected<ElementwiseFn> fn = parse_elementwise_fn(t);
    if (fn && fn_info(*fn).torch != TorchForm::None) {
      if (inputs_.empty()) return error("expected at least one tensor operand");
      return elementwise(id_ + "_ew", *fn, operands(), out_.shape, out_.dtype);
    }
    if (t == "cast") return elementwise(id_ + "_cast", ElementwiseFn::Identity, operands(), out_.shape, out_.dtype);
    if (t == "sum" || t == "mean" || t == "amax" || t == "amin") return reduction();
    if (t == "argmax" || t == "argmin") return arg_reduction();
    if (t == "reshape" || t == "view" || t == "flatten") return reshape();
    if (t == "transpose") return transpose();
    if (t == "permute") return permute();
    if (t == "unsqueeze" || t == "squeeze") return reshape();
    if (t == "expand") return broadcast_final();
    if (t == "slice") return slice();
    if (t == "cat") return cat();
    if (t == "embedding") return embedding();
    if (t == "scaled_dot_product_attention") return sdpa();
    if (t == "contiguous" || t == "to" || t == "float" || t == "clone") return identity();
    if (t == "matmul") return matmul();
    if (t == "linear") return linear();
    if (t == "softmax") return softmax();
    if (t == "rms_norm") return rms_norm();
    if (t == "layer_norm") return layer_norm();
    if (t == "gelu") return gelu();
    if (t == "silu") return silu();
    if (t == "arange") return arange();
    if (t == "full") return full();
    if (fn && (*fn == ElementwiseFn::LogicalAnd || *fn == ElementwiseFn::LogicalOr || *fn == ElementwiseFn::LogicalNot)) {
      if (inputs_.empty()) return error("expected at least one tensor operand");
      return elementwise(id_ + "_ew", *fn, operands(), out_.shape, out_.dtype);
    }
    return error("no decomposition for torch op '" + t + "'");
  }

  // arange: an IndexMap whose value is the coordinate i (int64); an integer arange with integral
  // start/step folds them into that value, otherwise i * step + start is an Elementwise in the
  // node's dtype (one rounding when start is 0 or step is 1, as the reference rounds once).
  Expected<std::string> arange() {
    if (!inputs_.empty() || out_.rank() != 1) return error("expected no operands and a 1-D result");
    const double start = op_.attrs.get_float("start", 0.0);
    const double step = op_.attrs.get_float("step", 1.0);
    const bool integral = std::floor(start) == start && std::floor(step) == step &&
                          std::fabs(start) < 9.0e15 && std::fabs(step) < 9.0e15;
    auto positions = std::make_unique<IndexMapOp>();
    positions->coords = coord_names(1);
    Expr i = Expr::var(coord_name(0));
    if (!dtype_is_float(out_.dtype) && integral) {
      Expr value = simplify(i * static_cast<int64_t>(step) + static_cast<int64_t>(start), coord_ranges(out_.shape));
      positions->sources.push_back(IndexMapSource{"", {}, std::move(value), Expr()});
      return add(id_ + "_iota", std::move(positions), {}, out_);
    }
    positions->sources.push_back(IndexMapSource{"", {}, i, Expr()});
    std::string pos = add(id_ + "_pos", std::move(positions), {}, TensorType{out_.shape, DType::I64});
    if (start == 0.0) return elementwise(id_ + "_scaled", ElementwiseFn::Mul, {Operand::tensor(pos), Operand::literal(step)}, out_.shape, out_.dtype);
    if (step == 1.0) return elementwise(id_ + "_shifted", ElementwiseFn::Add, {Operand::tensor(pos), Operand::literal(start)}, out_.shape, out_.dtype);
    std::string scaled = elementwise(id_ + "_scaled", ElementwiseFn::Mul, {Operand::tensor(pos), Operand::literal(step)}, out_.shape,
                                     dtype_is_float(out_.dtype) ? out_.dtype : DType::F32);
    return elementwise(id_ + "_shifted", ElementwiseFn::Add, {Operand::tensor(scaled), Operand::literal(start)}, out_.shape, out_.dtype);
  }

  // full: an IndexMap whose only source is the literal value.
  Expected<std::string> full() {
    if (!inputs_.empty()) return error("expected no operands");
    const double value = op_.attrs.get_float("value", 0.0);
    auto op = std::make_unique<IndexMapOp>();
    op->coords = coord_names(out_.shape.size());
    Expr literal = dtype_is_float(out_.dtype) || !std::isfinite(value) || std::floor(value) != value
                       ? Expr::float_(value)
                       : Expr::int_(static_cast<int64_t>(value));
    op->sources.push_back(IndexMapSource{"", {}, std::move(literal), Expr()});
    return add(id_ + "_fill", std::move(op), {}, out_);
  }

  Expected<std::string> identity() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    return index_map(id_ + "_copy", x, coord_exprs(out_.shape.size()), out_);
  }

  static ExprList coord_exprs(size_t rank) {
    ExprList out;
    for (size_t d = 0; d < rank; ++d) out.push_back(Expr::var(coord_name(d)));
    return out;
  }

  Expected<std::string> broadcast_final() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    if (type(x).shape == out_.shape) return identity();
    return broadcast(x, out_.shape);
  }

  Expected<std::string> reduction() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    const TensorType& t = type(x);
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> raw, int_list_attr("dim"));
    std::vector<int64_t> dims;
    for (int64_t d : raw) {
      TESSERA_ASSIGN_OR_RETURN(int64_t n, normalize_dim(d, t.rank()));
      dims.push_back(n);
    }
    // sum of bool / int32 is int64 (docs/torch-ops.md): convert first, so the Reduce accumulates in
    // int64 (a bool accumulator would saturate at 1).
    if (t.dtype != out_.dtype) {
      x = elementwise(id_ + "_wide", ElementwiseFn::Identity, {Operand::tensor(x)}, t.shape, out_.dtype);
      if (t.rank() == 0) return x;
    }
    if (t.rank() == 0) return identity();
    bool keepdim = op_.attrs.get_bool("keepdim", false);
    const std::string& target = op_.target;
    const CombineFn fn = target == "amax" ? CombineFn::Max : target == "amin" ? CombineFn::Min : CombineFn::Add;
    std::string red = reduce_dims(id_ + "_" + std::string(reduction_name(fn)), fn, x, dims, keepdim);
    if (target != "mean") return red;
    double inv = 1.0 / static_cast<double>(count(x, dims));
    return ew("scale", ElementwiseFn::Mul, {Operand::tensor(red), Operand::literal(inv)});
  }

  // argmax = the smallest index where x equals its max: max, compare, an IndexMap that yields
  // the coordinate itself (a value source), where(hit, index, size), min.
  Expected<std::string> arg_reduction() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    const TensorType& t = type(x);
    TESSERA_ASSIGN_OR_RETURN(int64_t d, normalize_dim(op_.attrs.get_int("dim", 0), t.rank()));
    if (t.rank() == 0) {
      // The index of the only element: 0 (as an elementwise op of x, so that the node reads it).
      std::string any = elementwise(id_ + "_any", ElementwiseFn::Eq, {Operand::tensor(x), Operand::tensor(x)}, t.shape, DType::Bool);
      return elementwise(id_ + "_zero", ElementwiseFn::Where, {Operand::tensor(any), Operand::literal(0.0), Operand::literal(0.0)},
                         t.shape, DType::I64);
    }
    bool keepdim = op_.attrs.get_bool("keepdim", false);
    const CombineFn fn = op_.target == "argmax" ? CombineFn::Max : CombineFn::Min;
    std::string best = reduce(id_ + "_" + std::string(reduction_name(fn)), fn, x, d, true);
    std::string hit = elementwise(id_ + "_hit", ElementwiseFn::Eq, {Operand::tensor(x), Operand::tensor(best)}, t.shape, DType::Bool);
    auto positions = std::make_unique<IndexMapOp>();
    positions->coords = coord_names(t.shape.size());
    positions->sources.push_back(IndexMapSource{"", {}, Expr::var(coord_name(static_cast<size_t>(d))), Expr()});
    std::string pos = add(id_ + "_pos", std::move(positions), {}, TensorType{t.shape, DType::I64});
    std::string cand = elementwise(id_ + "_cand", ElementwiseFn::Where,
                                   {Operand::tensor(hit), Operand::tensor(pos), Operand::literal(static_cast<double>(t.dim(d)))},
                                   t.shape, DType::I64);
    return reduce(id_ + "_first", CombineFn::Min, cand, d, keepdim);
  }

  // Row-major reshape: each source coordinate from the flat output offset, simplified with the
  // coordinate ranges so that plain unsqueeze/flatten maps print as plain coordinates.
  Expected<std::string> reshape() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    const TensorType& t = type(x);
    if (num_elements(t.shape) != num_elements(out_.shape)) return error("element counts differ");
    Expr flat = Expr::int_(0);
    int64_t stride = 1;
    for (size_t d = out_.shape.size(); d-- > 0;) {
      flat = Expr::var(coord_name(d)) * stride + flat;
      stride *= out_.shape[d].value();
    }
    ExprList index;
    stride = 1;
    std::vector<int64_t> strides(t.shape.size());
    for (size_t d = t.shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride *= t.shape[d].value();
    }
    for (size_t d = 0; d < t.shape.size(); ++d)
      index.push_back(t.shape[d].value() == 1 ? Expr::int_(0) : (flat / strides[d]) % t.shape[d].value());
    return index_map(id_ + "_map", x, std::move(index), out_);
  }

  Expected<std::string> permutation(const std::vector<int64_t>& perm) {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    ExprList index(perm.size());
    for (size_t o = 0; o < perm.size(); ++o) index[static_cast<size_t>(perm[o])] = Expr::var(coord_name(o));
    return index_map(id_ + "_map", x, std::move(index), out_);
  }

  Expected<std::string> transpose() {
    int64_t rank = out_.rank();
    TESSERA_ASSIGN_OR_RETURN(int64_t d0, normalize_dim(op_.attrs.get_int("dim0", 0), rank));
    TESSERA_ASSIGN_OR_RETURN(int64_t d1, normalize_dim(op_.attrs.get_int("dim1", 0), rank));
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
    if (rank > 0) std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
    return permutation(perm);
  }

  Expected<std::string> permute() {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> raw, int_list_attr("dims"));
    if (static_cast<int64_t>(raw.size()) != out_.rank()) return error("dims do not match the rank");
    std::vector<int64_t> perm;
    std::vector<bool> seen(raw.size(), false);
    for (int64_t d : raw) {
      TESSERA_ASSIGN_OR_RETURN(int64_t n, normalize_dim(d, out_.rank()));
      if (seen[static_cast<size_t>(n)]) return error("dims repeat a dimension");
      seen[static_cast<size_t>(n)] = true;
      perm.push_back(n);
    }
    return permutation(perm);
  }

  // matmul as in the seed: operands broadcast into the product space (batch.., M, K, N), multiply,
  // sum over K keeping it, then an IndexMap that drops K (and the M/N of 1-D operands).
  Expected<std::string> matmul() {
    TESSERA_ASSIGN_OR_RETURN(std::string a, input(0));
    TESSERA_ASSIGN_OR_RETURN(std::string b, input(1));
    const TensorType& ta = type(a);
    const TensorType& tb = type(b);
    if (ta.rank() < 1 || tb.rank() < 1) return error("operands must be at least 1-D");
    bool has_m = ta.rank() >= 2;
    bool has_n = tb.rank() >= 2;
    int64_t k = ta.dim(ta.rank() - 1);
    size_t batch = out_.shape.size() - (has_m ? 1 : 0) - (has_n ? 1 : 0);
    Shape space(out_.shape.begin(), out_.shape.begin() + static_cast<int64_t>(batch));
    if (has_m) space.push_back(out_.shape[batch]);
    size_t k_axis = space.size();
    space.push_back(k);
    if (has_n) space.push_back(out_.shape.back());
    auto operand_index = [&](const TensorType& t, bool is_lhs) {
      // The operand's own trailing dims: lhs (M, K) or (K); rhs (K, N) or (K).
      std::vector<size_t> own;
      if (is_lhs) {
        if (has_m) own.push_back(k_axis - 1);
        own.push_back(k_axis);
      } else {
        own.push_back(k_axis);
        if (has_n) own.push_back(k_axis + 1);
      }
      size_t t_batch = t.shape.size() - own.size();
      ExprList index;
      for (size_t s = 0; s < t_batch; ++s) {
        size_t o = s + batch - t_batch;
        bool stretched = t.shape[s].value() == 1 && space[o].value() != 1;
        index.push_back(stretched ? Expr::int_(0) : Expr::var(coord_name(o)));
      }
      for (size_t o : own) index.push_back(Expr::var(coord_name(o)));
      return index;
    };
    std::string a_bc = index_map(a + "_bc", a, operand_index(ta, true), TensorType{space, ta.dtype});
    std::string b_bc = index_map(b + "_bc", b, operand_index(tb, false), TensorType{space, tb.dtype});
    std::string prod = elementwise("prod", ElementwiseFn::Mul, {Operand::tensor(a_bc), Operand::tensor(b_bc)}, space, out_.dtype);
    std::string red = reduce("red", CombineFn::Add, prod, static_cast<int64_t>(k_axis), true);
    ExprList index;
    for (size_t d = 0; d < space.size(); ++d) {
      size_t o = d < k_axis ? d : d - 1;
      index.push_back(d == k_axis ? Expr::int_(0) : Expr::var(coord_name(o)));
    }
    return index_map("mm", red, std::move(index), out_);
  }

  // linear(x, w, b) = x @ w^T + b over the space (.., N, K): w (N, K) is read in place.
  Expected<std::string> linear() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    TESSERA_ASSIGN_OR_RETURN(std::string w, input(1));
    const TensorType& tx = type(x);
    const TensorType& tw = type(w);
    if (tx.rank() < 1 || tw.rank() != 2) return error("expected x (.., K) and weight (N, K)");
    Shape space = out_.shape;
    space.push_back(tw.shape[1]);
    size_t n_axis = space.size() - 2;
    size_t k_axis = space.size() - 1;
    ExprList x_index;
    for (size_t d = 0; d + 1 < tx.shape.size(); ++d) x_index.push_back(Expr::var(coord_name(d)));
    x_index.push_back(Expr::var(coord_name(k_axis)));
    std::string x_bc = index_map(x + "_bc", x, std::move(x_index), TensorType{space, tx.dtype});
    std::string w_bc = index_map(w + "_bc", w, {Expr::var(coord_name(n_axis)), Expr::var(coord_name(k_axis))},
                                 TensorType{space, tw.dtype});
    std::string prod = elementwise("prod", ElementwiseFn::Mul, {Operand::tensor(x_bc), Operand::tensor(w_bc)}, space, out_.dtype);
    std::string red = reduce("red", CombineFn::Add, prod, static_cast<int64_t>(k_axis), false);
    if (inputs_.size() < 3) return red;
    return elementwise(id_ + "_bias", ElementwiseFn::Add, {Operand::tensor(red), Operand::tensor(inputs_[2])}, out_.shape,
                       out_.dtype);
  }

  Expected<std::string> slice() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    TESSERA_ASSIGN_OR_RETURN(int64_t d, normalize_dim(op_.attrs.get_int("dim", 0), out_.rank()));
    int64_t start = op_.attrs.get_int("start", 0);
    int64_t step = op_.attrs.get_int("step", 1);
    if (step < 1) return error("step must be positive");
    ExprList index = coord_exprs(out_.shape.size());
    auto& at = index[static_cast<size_t>(d)];
    at = at * step + start;
    return index_map(id_ + "_map", x, std::move(index), out_);
  }

  // One source per operand, each selected where the coordinate along dim falls in its range.
  Expected<std::string> cat() {
    if (inputs_.empty()) return error("expected at least one tensor operand");
    TESSERA_ASSIGN_OR_RETURN(int64_t d, normalize_dim(op_.attrs.get_int("dim", 0), out_.rank()));
    auto op = std::make_unique<IndexMapOp>();
    op->coords = coord_names(out_.shape.size());
    RangeMap ranges = coord_ranges(out_.shape);
    Expr c = Expr::var(coord_name(static_cast<size_t>(d)));
    int64_t offset = 0;
    for (size_t p = 0; p < inputs_.size(); ++p) {
      const TensorType& t = type(inputs_[p]);
      if (t.rank() != out_.rank()) return error("operands must have the output's rank");
      int64_t size = t.dim(d);
      ExprList index = coord_exprs(out_.shape.size());
      index[static_cast<size_t>(d)] = simplify(c - offset, ranges);
      offset += size;
      Expr predicate = p + 1 < inputs_.size() ? simplify(c < Expr::int_(offset), ranges) : Expr();
      op->sources.push_back(IndexMapSource{inputs_[p], std::move(index), Expr(), std::move(predicate)});
    }
    std::vector<std::string> inputs;
    for (const std::string& in : inputs_)
      if (std::find(inputs.begin(), inputs.end(), in) == inputs.end()) inputs.push_back(in);
    return add(id_ + "_cat", std::move(op), std::move(inputs), out_);
  }

  // embedding(indices, weight) -> gather(weight, indices, axis=0).
  Expected<std::string> embedding() {
    TESSERA_ASSIGN_OR_RETURN(std::string ids, input(0));
    TESSERA_ASSIGN_OR_RETURN(std::string table, input(1));
    auto op = std::make_unique<GatherOp>();
    op->axis = 0;
    return add(id_ + "_gather", std::move(op), {table, ids}, out_);
  }

  // sdpa: scores over (.., Hq, L, S, E) summed over E, scaled, causally masked by an IndexMap
  // (`j <= i` selects the score, else -inf), softmax over S, then the weighted sum over
  // (.., Hq, L, S, Ev). GQA reads k/v at head h / (Hq / Hkv): an index, never a copy.
  Expected<std::string> sdpa() {
    TESSERA_ASSIGN_OR_RETURN(std::string q, input(0));
    TESSERA_ASSIGN_OR_RETURN(std::string k, input(1));
    TESSERA_ASSIGN_OR_RETURN(std::string v, input(2));
    const TensorType& tq = type(q);
    const TensorType& tk = type(k);
    const TensorType& tv = type(v);
    int64_t r = tq.rank();
    if (r < 2 || tk.rank() != r || tv.rank() != r) return error("q, k and v must have one rank >= 2");
    size_t lead = static_cast<size_t>(r - 2);  // batch dims and the head dim
    int64_t group = 1;
    if (r >= 3 && tk.dim(r - 3) != tq.dim(r - 3)) {
      if (tk.dim(r - 3) <= 0 || tq.dim(r - 3) % tk.dim(r - 3) != 0) return error("Hq must be a multiple of Hkv");
      group = tq.dim(r - 3) / tk.dim(r - 3);
    }
    auto kv_lead = [&]() {
      ExprList index;
      for (size_t d = 0; d < lead; ++d) {
        Expr c = Expr::var(coord_name(d));
        index.push_back(group > 1 && d + 1 == lead ? c / group : c);
      }
      return index;
    };
    auto lead_coords = [&]() {
      ExprList index;
      for (size_t d = 0; d < lead; ++d) index.push_back(Expr::var(coord_name(d)));
      return index;
    };
    Expr l = Expr::var(coord_name(lead)), s = Expr::var(coord_name(lead + 1)), e = Expr::var(coord_name(lead + 2));
    int64_t L = tq.dim(r - 2), E = tq.dim(r - 1), S = tk.dim(r - 2), Ev = tv.dim(r - 1);

    Shape score_space(tq.shape.begin(), tq.shape.begin() + static_cast<int64_t>(lead));
    score_space.insert(score_space.end(), {Dim(L), Dim(S), Dim(E)});
    ExprList q_index = lead_coords();
    q_index.insert(q_index.end(), {l, e});
    ExprList k_index = kv_lead();
    k_index.insert(k_index.end(), {s, e});
    std::string q_bc = index_map(q + "_bc", q, q_index, TensorType{score_space, tq.dtype});
    std::string k_bc = index_map(k + "_bc", k, k_index, TensorType{score_space, tk.dtype});
    std::string qk = elementwise(id_ + "_qk", ElementwiseFn::Mul, {Operand::tensor(q_bc), Operand::tensor(k_bc)}, score_space,
                                 out_.dtype);
    std::string scores = reduce(id_ + "_scores", CombineFn::Add, qk, static_cast<int64_t>(lead + 2), false);
    double scale = op_.attrs.get_float("scale", 1.0 / std::sqrt(static_cast<double>(E)));
    std::string scaled = ew("scaled", ElementwiseFn::Mul, {Operand::tensor(scores), Operand::literal(scale)});
    if (op_.attrs.get_bool("is_causal", false)) {
      const TensorType& ts = type(scaled);
      auto op = std::make_unique<IndexMapOp>();
      op->coords = coord_names(ts.shape.size());
      RangeMap ranges = coord_ranges(ts.shape);
      op->sources.push_back(IndexMapSource{scaled, coord_exprs(ts.shape.size()), Expr(), simplify(s <= l, ranges)});
      op->sources.push_back(IndexMapSource{"", {}, Expr::float_(-std::numeric_limits<double>::infinity()), Expr()});
      scaled = add(id_ + "_masked", std::move(op), {scaled}, ts);
    }
    int64_t s_axis = static_cast<int64_t>(lead + 1);
    std::string m = reduce(id_ + "_max", CombineFn::Max, scaled, s_axis, true);
    std::string shifted = ew("sub", ElementwiseFn::Sub, {Operand::tensor(scaled), Operand::tensor(m)});
    std::string ex = ew("exp", ElementwiseFn::Exp, {Operand::tensor(shifted)});
    std::string sum = reduce(id_ + "_sum", CombineFn::Add, ex, s_axis, true);
    std::string p = ew("probs", ElementwiseFn::Div, {Operand::tensor(ex), Operand::tensor(sum)});
    // A 16-bit attention rounds its probabilities to its dtype before P.V, as PyTorch's kernels do
    // (FlashAttention's P, the math path's bf16 softmax): the weighted sum is then a 16-bit
    // product the tensor cores run.
    rounded_.insert(p);

    Shape out_space(tq.shape.begin(), tq.shape.begin() + static_cast<int64_t>(lead));
    out_space.insert(out_space.end(), {Dim(L), Dim(S), Dim(Ev)});
    ExprList p_index = lead_coords();
    p_index.insert(p_index.end(), {l, s});
    ExprList v_index = kv_lead();
    v_index.insert(v_index.end(), {s, e});
    std::string p_bc = index_map(p + "_bc", p, p_index, TensorType{out_space, type(p).dtype});
    std::string v_bc = index_map(v + "_bc", v, v_index, TensorType{out_space, tv.dtype});
    std::string pv = elementwise(id_ + "_pv", ElementwiseFn::Mul, {Operand::tensor(p_bc), Operand::tensor(v_bc)}, out_space,
                                 out_.dtype);
    return reduce(id_ + "_out", CombineFn::Add, pv, s_axis, false);
  }

  Expected<std::string> softmax() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    TESSERA_ASSIGN_OR_RETURN(int64_t d, normalize_dim(op_.attrs.get_int("dim", -1), type(x).rank()));
    if (type(x).rank() == 0) {
      // One element: e^(x - x) / e^(x - x), 1 (NaN for a non-finite x, as in PyTorch).
      std::string e = ew("exp", ElementwiseFn::Exp, {Operand::tensor(ew("sub", ElementwiseFn::Sub, {Operand::tensor(x), Operand::tensor(x)}))});
      return ew("div", ElementwiseFn::Div, {Operand::tensor(e), Operand::tensor(e)});
    }
    std::string m = reduce(id_ + "_max", CombineFn::Max, x, d, true);
    std::string shifted = ew("sub", ElementwiseFn::Sub, {Operand::tensor(x), Operand::tensor(m)});
    std::string e = ew("exp", ElementwiseFn::Exp, {Operand::tensor(shifted)});
    std::string s = reduce(id_ + "_sum", CombineFn::Add, e, d, true);
    return ew("div", ElementwiseFn::Div, {Operand::tensor(e), Operand::tensor(s)});
  }

  Expected<std::vector<int64_t>> normalized_dims(const std::string& x) const {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, int_list_attr("normalized_shape"));
    if (shape.empty() || shape.size() > static_cast<size_t>(type(x).rank()))
      return error("normalized_shape does not fit the input");
    return trailing_dims(type(x).rank(), shape.size());
  }

  // x * rsqrt(mean(x^2) + eps) [* weight]
  Expected<std::string> rms_norm() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, normalized_dims(x));
    double eps = op_.attrs.get_float("eps", 0.0);
    std::string sq = ew("sq", ElementwiseFn::Mul, {Operand::tensor(x), Operand::tensor(x)});
    std::string ss = reduce_dims(id_ + "_sum", CombineFn::Add, sq, dims, true);
    std::string ms = ew("mean", ElementwiseFn::Mul, {Operand::tensor(ss), Operand::literal(1.0 / static_cast<double>(count(x, dims)))});
    std::string shifted = ew("eps", ElementwiseFn::Add, {Operand::tensor(ms), Operand::literal(eps)});
    std::string r = ew("rsqrt", ElementwiseFn::Rsqrt, {Operand::tensor(shifted)});
    std::string y = ew("norm", ElementwiseFn::Mul, {Operand::tensor(x), Operand::tensor(r)});
    if (inputs_.size() < 2) return y;
    return ew("scale", ElementwiseFn::Mul, {Operand::tensor(y), Operand::tensor(inputs_[1])});
  }

  // (x - mean) * rsqrt(var + eps) [* weight] [+ bias], var the biased variance.
  Expected<std::string> layer_norm() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dims, normalized_dims(x));
    double eps = op_.attrs.get_float("eps", 1e-5);
    double inv = 1.0 / static_cast<double>(count(x, dims));
    std::string s = reduce_dims(id_ + "_sum", CombineFn::Add, x, dims, true);
    std::string mu = ew("mean", ElementwiseFn::Mul, {Operand::tensor(s), Operand::literal(inv)});
    std::string xc = ew("centered", ElementwiseFn::Sub, {Operand::tensor(x), Operand::tensor(mu)});
    std::string sq = ew("sq", ElementwiseFn::Mul, {Operand::tensor(xc), Operand::tensor(xc)});
    std::string ss = reduce_dims(id_ + "_sqsum", CombineFn::Add, sq, dims, true);
    std::string var = ew("var", ElementwiseFn::Mul, {Operand::tensor(ss), Operand::literal(inv)});
    std::string shifted = ew("eps", ElementwiseFn::Add, {Operand::tensor(var), Operand::literal(eps)});
    std::string r = ew("rsqrt", ElementwiseFn::Rsqrt, {Operand::tensor(shifted)});
    std::string y = ew("norm", ElementwiseFn::Mul, {Operand::tensor(xc), Operand::tensor(r)});
    if (inputs_.size() >= 2) y = ew("scale", ElementwiseFn::Mul, {Operand::tensor(y), Operand::tensor(inputs_[1])});
    if (inputs_.size() >= 3) y = ew("shift", ElementwiseFn::Add, {Operand::tensor(y), Operand::tensor(inputs_[2])});
    return y;
  }

  // erf form: 0.5 x (1 + erf(x / sqrt 2)); tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  Expected<std::string> gelu() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    std::string approximate = op_.attrs.get_string("approximate", "none");
    std::string inner;
    if (approximate == "tanh") {
      std::string x2 = ew("sq", ElementwiseFn::Mul, {Operand::tensor(x), Operand::tensor(x)});
      std::string x3 = ew("cube", ElementwiseFn::Mul, {Operand::tensor(x2), Operand::tensor(x)});
      std::string c3 = ew("cube_scaled", ElementwiseFn::Mul, {Operand::tensor(x3), Operand::literal(0.044715)});
      std::string s = ew("poly", ElementwiseFn::Add, {Operand::tensor(x), Operand::tensor(c3)});
      std::string u = ew("arg", ElementwiseFn::Mul, {Operand::tensor(s), Operand::literal(std::sqrt(2.0 / std::numbers::pi))});
      inner = ew("tanh", ElementwiseFn::Tanh, {Operand::tensor(u)});
    } else if (approximate == "none") {
      std::string u = ew("arg", ElementwiseFn::Mul, {Operand::tensor(x), Operand::literal(1.0 / std::numbers::sqrt2)});
      inner = ew("erf", ElementwiseFn::Erf, {Operand::tensor(u)});
    } else {
      return error("unknown approximate='" + approximate + "'");
    }
    std::string p = ew("one_plus", ElementwiseFn::Add, {Operand::tensor(inner), Operand::literal(1.0)});
    std::string h = ew("half", ElementwiseFn::Mul, {Operand::tensor(x), Operand::literal(0.5)});
    return ew("out", ElementwiseFn::Mul, {Operand::tensor(h), Operand::tensor(p)});
  }

  Expected<std::string> silu() {
    TESSERA_ASSIGN_OR_RETURN(std::string x, input(0));
    std::string s = ew("sigmoid", ElementwiseFn::Sigmoid, {Operand::tensor(x)});
    return ew("out", ElementwiseFn::Mul, {Operand::tensor(x), Operand::tensor(s)});
  }

  // Moves the computed value into the torch node (keeping its id, users and outputs): the last
  // helper node is folded into it; otherwise the torch node becomes an identity IndexMap.
  Status finish(const std::string& value) {
    compute_intermediates_in_f32(value);
    Node* torch = g_.find(id_);
    Node* last = g_.find(value);
    if (!created_.empty() && value == created_.back() && !g_.has_users(value)) {
      // An Elementwise result converts to the op's dtype (a bfloat16 rms_norm with a float32 weight
      // multiplies in f32 and rounds to bfloat16 once).
      const bool converts = last->op_as<ElementwiseOp>() != nullptr && last->type.shape == out_.shape;
      torch->op = std::move(last->op);
      torch->inputs = last->inputs;
      torch->type = converts ? out_ : last->type;
      return g_.erase(value);
    }
    auto op = std::make_unique<IndexMapOp>();
    op->coords = coord_names(out_.shape.size());
    op->sources.push_back(IndexMapSource{value, coord_exprs(out_.shape.size()), Expr(), Expr()});
    torch->op = std::move(op);
    torch->inputs = {value};
    return Status::ok();
  }

  // See the file comment (half precision). Nodes are visited in creation order, so an IndexMap's
  // source has its final dtype when the IndexMap takes it over.
  void compute_intermediates_in_f32(const std::string& value) {
    if (out_.dtype != DType::F16 && out_.dtype != DType::BF16) return;
    for (const std::string& id : created_) {
      Node* n = g_.find(id);
      if (n == nullptr || id == value || rounded_.count(id)) continue;
      DType& t = n->type.dtype;
      if (t != DType::F16 && t != DType::BF16) continue;
      if (n->op_as<ElementwiseOp>() != nullptr || n->op_as<ReduceOp>() != nullptr) {
        t = DType::F32;
      } else if (n->op_as<IndexMapOp>() != nullptr && n->inputs.size() == 1) {
        if (const Node* src = g_.find(n->inputs[0])) t = src->type.dtype;
      }
    }
  }

  Graph& g_;
  PassContext& ctx_;
  std::string id_;
  TorchOp op_;
  std::vector<std::string> inputs_;
  TensorType out_;
  SourceLoc loc_;
  std::vector<std::string> created_;
  std::set<std::string> rounded_;  // helpers that keep the op's 16-bit dtype (see sdpa)
  Status status_;  // the first failed graph edit
};

class DecomposePass final : public Pass {
 public:
  std::string_view name() const override { return "decompose"; }
  std::string_view summary() const override {
    return "lower Torch IR ops to Elementwise / Reduce / IndexMap / Gather (Tensor IR)";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Tensor}; }

  Status run(Graph& g, PassContext& ctx) override {
    std::vector<std::string> torch_nodes;
    for (const Node* n : g.nodes())
      if (n->op_as<TorchOp>() != nullptr) torch_nodes.push_back(n->id());
    for (const std::string& id : torch_nodes) {
      Decomposer d(g, *g.find(id), ctx);
      TESSERA_TRY(d.run());
    }
    return Status::ok();
  }
};

void register_decompose(Registry& r) {
  r.add_pass("decompose", [] { return std::make_unique<DecomposePass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("decompose", "1.0.0", ::tessera::register_decompose)

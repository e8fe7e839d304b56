// TorchLibrary: the catalog of what a torch_expr program can call — torch.* functions, tensor
// methods and attributes, torch.nn modules, torch.nn.functional — with PyTorch signatures, and
// the code that turns each call into a Torch IR node with inferred shape and dtype.
//
// Canonical Torch IR targets and attrs it produces (attrs appear in this order):
//   add sub mul div pow (tensor operands as inputs, Python scalars as TorchOp::scalar_args)
//   eq ne lt le gt ge -> bool;   neg relu exp tanh sigmoid rsqrt sqrt abs silu;  gelu(approximate)
//   matmul (also torch.mm/bmm and @);  linear(x, weight[, bias])
//   mean sum amax (dim: int list, every dim when none was given; keepdim)
//   softmax(dim);  transpose(dim0, dim1);  reshape(shape: resolved, also for view);  unsqueeze(dim)
//   rms_norm(x[, weight], normalized_shape, eps);  layer_norm(x[, weight[, bias]], normalized_shape, eps)
// Dims are recorded as written (e.g. -1), after checking they are in range.
// Issue 3 adds (dims normalized): log reciprocal maximum minimum where cast amin argmax argmin
//   permute expand slice cat embedding scaled_dot_product_attention.
// The idioms add arange, full and logical_and/or/not; its other idioms (einsum, tril, masked_fill,
//   sdpa attn_mask, var, clamp, ...) are composed of the targets above (torch_library_idioms.cpp).
// docs/torch-ops.md is the full catalog (operands, attrs, shapes, math) and must stay in sync.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ast.h"
#include "call_signature.h"
#include "graph_builder.h"
#include "traced_value.h"
#include "view_strides.h"

namespace tessera::torch_expr {

// One evaluated component of a tensor subscript `x[1:, None, ..., -1]`.
struct TensorIndexItem {
  enum class Kind { Integer, Slice, Ellipsis, NewAxis };
  Kind kind = Kind::Slice;
  int64_t integer = 0;                           // Kind::Integer
  std::optional<int64_t> start, stop, step;      // Kind::Slice; absent parts take Python's defaults
  SourceSpan span;
};

// How split / chunk / unbind cut `source` (see TensorPiecesValue): piece i is
// source[bounds[i]:bounds[i+1]] along `dim`, without that dim for unbind.
struct TensorPieces {
  std::string source;
  int64_t dim = 0;
  std::vector<int64_t> bounds;  // one more than the pieces
  bool drop_dim = false;        // unbind: each piece is reshaped to the source's shape less `dim`
  CallSite site;                // the split call: the pieces' location
  std::map<int64_t, std::string> nodes;  // the pieces made so far, by index

  int64_t count() const { return static_cast<int64_t>(bounds.size()) - 1; }
};

class TorchLibrary {
 public:
  explicit TorchLibrary(GraphBuilder& builder);

  // Namespaces are "torch", "torch.nn" and "torch.nn.functional".
  static bool is_namespace(const std::string& path);
  std::optional<TracedValue> member(const std::string& ns, const std::string& name) const;
  std::vector<std::string> member_names(const std::string& ns) const;
  // Short names for messages: "torch.nn.functional.relu" -> "F.relu", "torch.nn.Linear" -> "nn.Linear".
  static std::string display_name(const std::string& qualified);

  Expected<TracedValue> call_function(const std::string& name, const std::vector<ArgumentValue>& args,
                                      const CallSite& site);
  Expected<std::unique_ptr<BuiltinModule>> construct_module(const std::string& class_name,
                                                            const std::vector<ArgumentValue>& args,
                                                            const CallSite& site);
  Expected<TracedValue> call_module(BuiltinModule& module, const std::vector<ArgumentValue>& args,
                                    const CallSite& site);
  // Module conversion (`m.half()`, `m.to(torch.bfloat16)`): the module's parameters (all floating
  // point) become `dtype`. Before the first call this sets the dtype they will be created in; after
  // it, each parameter is replaced by a `cast` of the existing constant made at `site`, so earlier
  // calls keep their values and later calls see PyTorch's converted ones.
  Status convert_module_parameters(BuiltinModule& module, DType dtype, const CallSite& site);

  bool has_tensor_method(const std::string& name) const { return methods_.count(name) > 0; }
  Expected<TracedValue> call_tensor_method(const std::string& node, const std::string& method,
                                           const std::vector<ArgumentValue>& args, const CallSite& site);
  // `x.shape`, `x.dtype`, `x.ndim`, `x.T`, `x.mT`, or a method reference; else a located error.
  Expected<TracedValue> tensor_attribute(const std::string& node, const std::string& attr,
                                         const SourceSpan& attr_span, const CallSite& site);

  // Operators where at least one operand is a tensor (the tracer folds scalar-only arithmetic).
  Expected<TracedValue> binary(BinaryOp op, const TracedValue& lhs, const TracedValue& rhs, const CallSite& site);
  Expected<TracedValue> compare(CompareOp op, const TracedValue& lhs, const TracedValue& rhs, const CallSite& site);
  Expected<TracedValue> unary(UnaryOp op, const std::string& node, const CallSite& site);
  // `x[...]`: integer indices and slices become `slice` nodes, then one `reshape` drops integer-
  // indexed dims and inserts `None` dims.
  Expected<TracedValue> index_tensor(const std::string& node, const std::vector<TensorIndexItem>& items,
                                     const CallSite& site);
  // `x[idx]` with an integer tensor: rows of x along dim 0 (negative indices count from the end).
  Expected<TracedValue> index_with_tensor(const std::string& node, const std::string& index, const CallSite& site);
  // Piece i (0 <= i < count()) of a split (TensorPiecesValue), made on first use.
  Expected<TracedValue> piece(TensorPieces& pieces, int64_t i);
  // Every piece, in order, as the tuple PyTorch returns.
  Expected<TracedValue> all_pieces(TensorPieces& pieces);
  // Constructors called inside a function or method body make constants (`full` nodes), not inputs.
  void set_inside_function(bool inside) { inside_function_ = inside; }

 private:
  using FunctionHandler = std::function<Expected<TracedValue>(const BoundArguments&)>;
  using MethodHandler = std::function<Expected<TracedValue>(const std::string& self, const BoundArguments&)>;
  struct FunctionEntry {
    CallSignature signature;
    FunctionHandler handler;
  };
  struct MethodEntry {
    CallSignature signature;
    MethodHandler handler;
  };
  struct ModuleEntry {
    CallSignature signature;
    std::string target;  // the Torch IR op its forward produces
  };
  struct ParameterSpec {
    std::string name;
    Shape shape;
    double scale;
  };

  void register_constructors();
  void register_elementwise();
  // One registration per TorchForm of the elementwise function table (tessera/ir/elementwise_fn.h).
  void register_unary(const std::string& op);
  void register_arithmetic(const std::string& op);
  void register_tensor_pair(const std::string& op);
  void register_comparison(const std::string& op);
  void register_where();
  void register_reductions_and_layout();
  void register_functional();
  void register_modules();
  void register_layout();
  void register_attention_and_embedding();

  // Op implementations shared by functions, methods, operators and modules.
  Expected<TracedValue> make_input(const std::string& init, const BoundArguments& a, bool sizes_are_varargs);
  Expected<TracedValue> unary_op(const std::string& target, const std::string& x, const CallSite& site,
                                 Attrs attrs = {});
  Expected<TracedValue> elementwise(const std::string& target, const TracedValue& lhs, const TracedValue& rhs,
                                    const CallSite& site, bool returns_bool = false);
  Expected<TracedValue> matmul(const std::string& a, const std::string& b, const CallSite& site,
                               int required_rank = 0);
  Expected<TracedValue> reduction(const std::string& target, const std::string& x,
                                  const std::optional<std::vector<int64_t>>& dims, bool keepdim,
                                  const CallSite& site);
  Expected<TracedValue> softmax(const std::string& x, int64_t dim, const CallSite& site);
  Expected<TracedValue> transpose(const std::string& x, int64_t dim0, int64_t dim1, const CallSite& site);
  Expected<TracedValue> reshape(const std::string& x, const std::vector<int64_t>& shape, const CallSite& site);
  Expected<TracedValue> unsqueeze(const std::string& x, int64_t dim, const CallSite& site);
  Expected<TracedValue> gelu(const std::string& x, const std::string& approximate, const CallSite& site);
  Expected<TracedValue> norm(const std::string& target, const std::string& x, const std::vector<int64_t>& shape,
                             const std::optional<std::string>& weight, const std::optional<std::string>& bias,
                             std::optional<double> eps, const CallSite& site);
  Expected<TracedValue> linear(const std::string& x, const std::string& weight,
                               const std::optional<std::string>& bias, const CallSite& site);
  Expected<TracedValue> emit(TorchNodeSpec spec, const CallSite& site);

  // Issue 3 coverage (torch_library_layout.cpp for the layout ops).
  Expected<TracedValue> make_randint(const BoundArguments& a);
  Expected<TracedValue> binary_tensors(const std::string& target, const std::string& a, const std::string& b,
                                       const CallSite& site);
  Expected<TracedValue> where(const std::string& condition, const TracedValue& input, const TracedValue& other,
                              const CallSite& site);
  Expected<TracedValue> extreme(const std::string& kind, const std::string& x, const TracedValue& dim_or_other,
                                bool keepdim, const CallSite& site);
  Expected<TracedValue> cast(const std::string& x, DType dtype, const CallSite& site);
  Expected<TracedValue> permute(const std::string& x, const std::vector<int64_t>& dims, const CallSite& site);
  Expected<TracedValue> expand(const std::string& x, const std::vector<int64_t>& sizes, const CallSite& site);
  Expected<TracedValue> slice(const std::string& x, int64_t dim, int64_t start, int64_t end, int64_t step,
                              const CallSite& site);
  Expected<TracedValue> cat(const std::vector<std::string>& xs, int64_t dim, const CallSite& site);
  Expected<TracedValue> stack(const std::vector<std::string>& xs, int64_t dim, const CallSite& site);
  // The pieces of x cut along dim, as a TensorPiecesValue: no node is made until piece() asks.
  Expected<TracedValue> split(const std::string& x, const std::vector<int64_t>& sizes, int64_t dim, bool drop_dim,
                              const CallSite& site);
  Expected<TracedValue> squeeze(const std::string& x, const std::optional<std::vector<int64_t>>& dims,
                                const CallSite& site);
  Expected<TracedValue> flatten(const std::string& x, int64_t start_dim, int64_t end_dim, const CallSite& site);
  Expected<std::vector<std::string>> tensor_list(const BoundArguments& a, const std::string& name) const;
  Expected<TracedValue> embedding(const std::string& indices, const std::string& weight, const CallSite& site);
  Expected<TracedValue> attention(const std::string& q, const std::string& k, const std::string& v, bool is_causal,
                                  std::optional<double> scale, bool enable_gqa, const CallSite& site);

  // Strides (view_strides.h): x.view(shape) is refused where PyTorch refuses it; x.contiguous() of a
  // non-contiguous view is a copy (a reshape to its own shape).
  Status require_viewable(const std::string& x, const std::vector<int64_t>& shape, const CallSite& site) const;
  Expected<TracedValue> contiguous(const std::string& x, const CallSite& site);

  // The operand dtypes PyTorch refuses for `target` (silu/gelu of integers, neg and sub of bool,
  // integer ** negative int), refused with PyTorch's message, located at the call.
  Status reject_like_pytorch(const std::string& target, const std::vector<TracedValue>& operands,
                             const CallSite& site) const;
  // Integers are exact below 2^53 (values are doubles in the evaluators): a larger Python int is refused.
  Status require_exact_integer(const TracedValue& v, const CallSite& site) const;
  // Idioms (torch_library_idioms.cpp): generated tensors, RoPE and mask building blocks,
  // precision spellings and the Also-list ops, mostly composed from the canonical targets.
  void register_idioms();
  void register_idiom_generators();
  void register_idiom_masks();
  void register_idiom_precision();
  void register_idiom_math();
  Expected<TracedValue> arange(double start, double end, double step, DType dtype, const CallSite& site);
  Expected<TracedValue> full(const Shape& shape, double value, DType dtype, const CallSite& site);
  Expected<TracedValue> einsum(const std::string& equation, const std::vector<std::string>& operands,
                               const CallSite& site);
  Expected<TracedValue> repeat_interleave(const std::string& x, int64_t repeats, std::optional<int64_t> dim,
                                          const CallSite& site);
  Expected<TracedValue> triangle(const std::string& x, int64_t diagonal, bool lower, const CallSite& site);
  Expected<TracedValue> masked_fill(const std::string& x, const std::string& mask, const TracedValue& value,
                                    const CallSite& site);
  Expected<TracedValue> logical(const std::string& target, const TracedValue& lhs, const TracedValue& rhs,
                                const CallSite& site);
  Expected<TracedValue> arg_extreme(const std::string& target, const std::string& x, std::optional<int64_t> dim,
                                    bool keepdim, const CallSite& site);
  Expected<TracedValue> log_softmax(const std::string& x, int64_t dim, const CallSite& site);
  Expected<TracedValue> variance(const std::string& x, const std::optional<std::vector<int64_t>>& dims,
                                 double correction, bool keepdim, bool take_sqrt, const CallSite& site);
  Expected<TracedValue> clamp(const std::string& x, const TracedValue& lo, const TracedValue& hi, const CallSite& site);
  Expected<TracedValue> attention_with_mask(const std::string& q, const std::string& k, const std::string& v,
                                            const std::string& mask, bool is_causal, std::optional<double> scale,
                                            bool enable_gqa, const CallSite& site);
  Expected<TracedValue> softmax_in(const std::string& x, int64_t dim, std::optional<DType> dtype, const CallSite& site);
  // F.softmax / F.log_softmax / nn.Softmax without dim: PyTorch's implicit choice (0 for 0-, 1- and
  // 3-D inputs, else 1) with its deprecation warning, located at the call.
  // F.linear with a 1-D weight (in_features,): x @ weight (the last dim contracted away), plus bias.
  Expected<TracedValue> linear_vector_weight(const std::string& x, const std::string& weight,
                                             const std::optional<std::string>& bias, const CallSite& site);
  // The smallest and largest element of `x` where tracing determines them (full, zeros/ones,
  // arange, torch.tensor literals, and what keeps every element: cat, reshape, expand, ...).
  std::optional<std::pair<double, double>> known_extremes(const std::string& x) const;
  int64_t implicit_softmax_dim(const std::string& x, const std::string& op, const CallSite& site) const;

  // Module parameters: specs by kind, and their creation (with a unique path) on the first call.
  std::vector<ParameterSpec> parameter_specs(const BuiltinModule& m) const;
  Status create_parameters(BuiltinModule& m, DType dtype, const CallSite& site);

  Diagnostic located(const CallSite& site, const Diagnostic& d) const;
  Status require_float(const std::string& x, const CallSite& site) const;
  // PyTorch's refusal of a max/min/argmax-style reduction over an empty dim (`dims` normalized),
  // as `name(): Expected reduction dim 1 to have non-zero size.` (fold_empty_tensors.h).
  Status require_nonempty_reduction(const std::string& name, const std::string& x, const std::vector<int64_t>& dims,
                                    const CallSite& site) const;
  const TensorType& type(const std::string& node) const { return builder_.type_of(node); }

  GraphBuilder& builder_;
  ViewStrides views_;  // the strides of the view nodes, for .view() and .contiguous()
  std::map<std::string, FunctionEntry> functions_;  // qualified: "torch.matmul"
  std::map<std::string, MethodEntry> methods_;      // tensor methods: "mean"
  std::map<std::string, ModuleEntry> modules_;      // qualified: "torch.nn.Linear"
  bool inside_function_ = false;
};

}  // namespace tessera::torch_expr

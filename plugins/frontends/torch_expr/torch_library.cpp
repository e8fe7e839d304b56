// The torch catalog of the torch_expr frontend (see torch_library.h): PyTorch signatures bound to
// implementations that check operands, infer the result type and emit one Torch IR node.
#include "torch_library.h"

#include <cmath>
#include <sstream>

#include "elementwise_target.h"
#include "shape_inference.h"
#include "spelling_suggestion.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/ir/elementwise_fn.h"

namespace tessera::torch_expr {
namespace {

const std::map<std::string, DType>& torch_dtypes() {
  static const std::map<std::string, DType> dtypes = {
      {"float32", DType::F32}, {"float", DType::F32},  {"float16", DType::F16}, {"half", DType::F16},
      {"bfloat16", DType::BF16}, {"int32", DType::I32}, {"int", DType::I32},    {"int64", DType::I64},
      {"long", DType::I64},    {"bool", DType::Bool}, {"float64", DType::F64}, {"double", DType::F64}};
  return dtypes;
}

// What F.rms_norm / nn.RMSNorm use when eps is None: the epsilon of the type PyTorch computes in
// (its "opmath" type), float32 for every input dtype Tessera has, also f16 and bf16.
constexpr double kRmsNormDefaultEps = 1.1920928955078125e-07;  // torch.finfo(torch.float32).eps

std::string ints_str(const std::vector<int64_t>& v) {
  Shape s(v.begin(), v.end());
  return shape_str(s);
}

std::vector<int64_t> shape_ints(const Shape& s) {
  std::vector<int64_t> out;
  for (const Dim& d : s) out.push_back(d.value());
  return out;
}

// Ops whose result is floating point even for integer inputs (like PyTorch): the elementwise
// functions the table marks so (exp, div, silu, ...) and gelu.
bool produces_float(const std::string& target) {
  if (target == "gelu") return true;
  const ElementwiseFnInfo* fn = elementwise_target(target);
  return fn && fn->result == FnResult::Float;
}


}  // namespace

TorchLibrary::TorchLibrary(GraphBuilder& builder) : builder_(builder) {
  register_constructors();
  register_elementwise();
  register_reductions_and_layout();
  register_functional();
  register_modules();
  register_layout();
  register_attention_and_embedding();
  register_idioms();  // last: it extends some of the registrations above (softmax dtype=, add alpha=)
}

// ---- namespaces ------------------------------------------------------------------------------

bool TorchLibrary::is_namespace(const std::string& path) {
  return path == "torch" || path == "torch.nn" || path == "torch.nn.functional";
}

std::string TorchLibrary::display_name(const std::string& qualified) {
  static const std::string functional = "torch.nn.functional.";
  static const std::string nn = "torch.nn.";
  if (qualified.rfind(functional, 0) == 0) return "F." + qualified.substr(functional.size());
  if (qualified.rfind(nn, 0) == 0) return "nn." + qualified.substr(nn.size());
  return qualified;
}

std::optional<TracedValue> TorchLibrary::member(const std::string& ns, const std::string& name) const {
  const std::string qualified = ns + "." + name;
  if (ns == "torch") {
    if (name == "nn") return TracedValue(NamespaceValue{"torch.nn"});
    if (auto it = torch_dtypes().find(name); it != torch_dtypes().end()) return TracedValue(DTypeValue{it->second});
  } else if (ns == "torch.nn") {
    if (name == "functional") return TracedValue(NamespaceValue{"torch.nn.functional"});
    if (name == "Module") return TracedValue(ModuleClassValue{qualified});
    if (modules_.count(qualified)) return TracedValue(ModuleClassValue{qualified});
    return std::nullopt;
  }
  if (functions_.count(qualified)) return TracedValue(FunctionValue{qualified});
  return std::nullopt;
}

std::vector<std::string> TorchLibrary::member_names(const std::string& ns) const {
  std::vector<std::string> names;
  const std::string prefix = ns + ".";
  auto add_members = [&](const auto& table) {
    for (const auto& [qualified, entry] : table) {
      if (qualified.rfind(prefix, 0) != 0) continue;
      std::string rest = qualified.substr(prefix.size());
      if (rest.find('.') == std::string::npos) names.push_back(rest);
    }
  };
  add_members(functions_);
  add_members(modules_);
  if (ns == "torch") {
    names.push_back("nn");
    for (const auto& [name, dtype] : torch_dtypes()) names.push_back(name);
  } else if (ns == "torch.nn") {
    names.push_back("functional");
    names.push_back("Module");
  }
  return names;
}

// ---- registration ----------------------------------------------------------------------------

void TorchLibrary::register_constructors() {
  for (std::string init : {"randn", "rand", "zeros", "ones"}) {
    functions_.emplace("torch." + init,
                       FunctionEntry{CallSignature("*size, dtype=None, device=None, requires_grad=False"),
                                     [this, init](const BoundArguments& a) { return make_input(init, a, true); }});
  }
  functions_.emplace("torch.randint",
                     FunctionEntry{CallSignature("*args, dtype=None, device=None, requires_grad=False"),
                                   [this](const BoundArguments& a) { return make_randint(a); }});
  functions_.emplace("torch.full",
                     FunctionEntry{CallSignature("size, fill_value, dtype=None, device=None, requires_grad=False"),
                                   [this](const BoundArguments& a) { return make_input("full", a, false); }});
}

void TorchLibrary::register_unary(const std::string& op) {
  functions_.emplace("torch." + op, FunctionEntry{CallSignature("input"), [this, op](const BoundArguments& a)
                                                                             -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    return unary_op(op, x, a.site());
  }});
  methods_.emplace(op, MethodEntry{CallSignature(""), [this, op](const std::string& self, const BoundArguments& a) {
                                     return unary_op(op, self, a.site());
                                   }});
}

void TorchLibrary::register_arithmetic(const std::string& op) {
  std::string other = op == "pow" ? "exponent" : "other";
  functions_.emplace("torch." + op,
                     FunctionEntry{CallSignature("input, " + other), [this, op, other](const BoundArguments& a)
                                                                          -> Expected<TracedValue> {
                       TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                       return elementwise(op, TensorValue{x}, a.value(other), a.site());
                     }});
  methods_.emplace(op, MethodEntry{CallSignature(other), [this, op, other](const std::string& self,
                                                                            const BoundArguments& a) {
                                     return elementwise(op, TensorValue{self}, a.value(other), a.site());
                                   }});
}

void TorchLibrary::register_tensor_pair(const std::string& op) {
  functions_.emplace("torch." + op, FunctionEntry{CallSignature("input, other"), [this, op](const BoundArguments& a)
                                                                                    -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::string y, a.tensor("other"));
    return binary_tensors(op, x, y, a.site());
  }});
  methods_.emplace(op, MethodEntry{CallSignature("other"), [this, op](const std::string& self, const BoundArguments& a)
                                                               -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string y, a.tensor("other"));
    return binary_tensors(op, self, y, a.site());
  }});
}

void TorchLibrary::register_comparison(const std::string& op) {
  functions_.emplace("torch." + op, FunctionEntry{CallSignature("input, other"), [this, op](const BoundArguments& a)
                                                                                    -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    return elementwise(op, TensorValue{x}, a.value("other"), a.site(), true);
  }});
  methods_.emplace(op, MethodEntry{CallSignature("other"), [this, op](const std::string& self, const BoundArguments& a) {
                                     return elementwise(op, TensorValue{self}, a.value("other"), a.site(), true);
                                   }});
}

void TorchLibrary::register_where() {
  functions_.emplace("torch.where", FunctionEntry{CallSignature("condition, input, other"),
                                                  [this](const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string c, a.tensor("condition"));
    return where(c, a.value("input"), a.value("other"), a.site());
  }});
  methods_.emplace("where", MethodEntry{CallSignature("condition, other"), [this](const std::string& self,
                                                                                  const BoundArguments& a)
                                                                               -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string c, a.tensor("condition"));
    return where(c, TensorValue{self}, a.value("other"), a.site());
  }});
}

void TorchLibrary::register_elementwise() {
  // The torch.* functions and Tensor methods of the elementwise function table.
  for (const ElementwiseFnInfo& fn : kElementwiseFns) {
    const std::string op(fn.name);
    switch (fn.torch) {
      case TorchForm::Unary: register_unary(op); break;
      case TorchForm::Arithmetic: register_arithmetic(op); break;
      case TorchForm::TensorPair: register_tensor_pair(op); break;
      case TorchForm::Comparison: register_comparison(op); break;
      case TorchForm::Where: register_where(); break;
      case TorchForm::None: break;
    }
  }
  struct CastVariant {
    std::string name;
    DType dtype;
  };
  for (const CastVariant& v : {CastVariant{"float", DType::F32}, CastVariant{"half", DType::F16},
                               CastVariant{"bfloat16", DType::BF16}, CastVariant{"long", DType::I64},
                               CastVariant{"int", DType::I32}, CastVariant{"bool", DType::Bool},
                               CastVariant{"double", DType::F64}}) {
    methods_.emplace(v.name, MethodEntry{CallSignature(""), [this, v](const std::string& self, const BoundArguments& a) {
                                           return cast(self, v.dtype, a.site());
                                         }});
  }
  methods_.emplace("to", MethodEntry{CallSignature("*args, dtype=None, device=None, non_blocking=False, copy=False"),
                                     [this](const std::string& self, const BoundArguments& a) -> Expected<TracedValue> {
    std::optional<DType> target;
    for (const TracedValue& v : a.value("args").as<SequenceValue>()->items) {
      if (const auto* d = v.as<DTypeValue>()) target = d->dtype;
      else if (const auto* t = v.as<TensorValue>()) target = type(t->node).dtype;
      else if (!v.is<std::string>())  // a device: placement is Tessera's decision
        return a.error("args", a.site().callee + "(): expected a dtype, a device string or a tensor, got " +
                                   describe_value(v));
    }
    TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
    if (dtype) target = dtype;
    if (!target) return TracedValue(TensorValue{self});
    return cast(self, *target, a.site());
  }});
  struct MatmulVariant {
    std::string name, other;
    int rank;
  };
  for (const MatmulVariant& v : {MatmulVariant{"matmul", "other", 0}, MatmulVariant{"mm", "mat2", 2},
                                 MatmulVariant{"bmm", "mat2", 3}}) {
    functions_.emplace("torch." + v.name, FunctionEntry{CallSignature("input, " + v.other),
                                                        [this, v](const BoundArguments& a) -> Expected<TracedValue> {
                                                          TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                          TESSERA_ASSIGN_OR_RETURN(std::string y, a.tensor(v.other));
                                                          return matmul(x, y, a.site(), v.rank);
                                                        }});
    methods_.emplace(v.name, MethodEntry{CallSignature(v.other), [this, v](const std::string& self, const BoundArguments& a)
                                                                     -> Expected<TracedValue> {
                                           TESSERA_ASSIGN_OR_RETURN(std::string y, a.tensor(v.other));
                                           return matmul(self, y, a.site(), v.rank);
                                         }});
  }
}

void TorchLibrary::register_reductions_and_layout() {
  for (std::string op : {"mean", "sum", "amax", "amin"}) {
    std::string dim_default = op == "amax" || op == "amin" ? "()" : "None";
    auto reduce = [this, op](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, a.optional_int_list("dim"));
      TESSERA_ASSIGN_OR_RETURN(bool keepdim, a.boolean("keepdim"));
      return reduction(op, x, dims, keepdim, a.site());
    };
    functions_.emplace("torch." + op, FunctionEntry{CallSignature("input, dim=" + dim_default + ", keepdim=False"),
                                                    [reduce](const BoundArguments& a) -> Expected<TracedValue> {
                                                      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                      return reduce(x, a);
                                                    }});
    methods_.emplace(op, MethodEntry{CallSignature("dim=" + dim_default + ", keepdim=False"), reduce});
  }

  for (std::string kind : {"max", "min"}) {
    functions_.emplace("torch." + kind, FunctionEntry{CallSignature("input, dim=None, keepdim=False"),
                                                      [this, kind](const BoundArguments& a) -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
      TESSERA_ASSIGN_OR_RETURN(bool keepdim, a.boolean("keepdim"));
      return extreme(kind, x, a.value("dim"), keepdim, a.site());
    }});
    methods_.emplace(kind, MethodEntry{CallSignature("dim=None, keepdim=False"),
                                       [this, kind](const std::string& self, const BoundArguments& a) -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(bool keepdim, a.boolean("keepdim"));
      return extreme(kind, self, a.value("dim"), keepdim, a.site());
    }});
  }

  functions_.emplace("torch.softmax", FunctionEntry{CallSignature("input, dim"), [this](const BoundArguments& a)
                                                                                    -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    return softmax(x, dim, a.site());
  }});
  methods_.emplace("softmax", MethodEntry{CallSignature("dim"), [this](const std::string& self, const BoundArguments& a)
                                                                    -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    return softmax(self, dim, a.site());
  }});

  auto do_transpose = [this](const std::string& x, const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(int64_t d0, a.integer("dim0"));
    TESSERA_ASSIGN_OR_RETURN(int64_t d1, a.integer("dim1"));
    return transpose(x, d0, d1, a.site());
  };
  functions_.emplace("torch.transpose", FunctionEntry{CallSignature("input, dim0, dim1"),
                                                      [do_transpose](const BoundArguments& a) -> Expected<TracedValue> {
                                                        TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
                                                        return do_transpose(x, a);
                                                      }});
  methods_.emplace("transpose", MethodEntry{CallSignature("dim0, dim1"), do_transpose});

  functions_.emplace("torch.reshape", FunctionEntry{CallSignature("input, shape"), [this](const BoundArguments& a)
                                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, a.int_list("shape"));
    return reshape(x, shape, a.site());
  }});
  for (std::string name : {"reshape", "view"}) {
    methods_.emplace(name, MethodEntry{CallSignature("*shape"), [this, name](const std::string& self, const BoundArguments& a)
                                                                    -> Expected<TracedValue> {
                                         TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, a.sizes("shape"));
                                         if (name == "view") TESSERA_TRY(require_viewable(self, shape, a.site()));
                                         return reshape(self, shape, a.site());
                                       }});
  }

  functions_.emplace("torch.unsqueeze", FunctionEntry{CallSignature("input, dim"), [this](const BoundArguments& a)
                                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    return unsqueeze(x, dim, a.site());
  }});
  methods_.emplace("unsqueeze", MethodEntry{CallSignature("dim"), [this](const std::string& self, const BoundArguments& a)
                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("dim"));
    return unsqueeze(self, dim, a.site());
  }});

  // Shape queries fold to Python ints at trace time.
  methods_.emplace("size", MethodEntry{CallSignature("dim=None"), [this](const std::string& self, const BoundArguments& a)
                                                                      -> Expected<TracedValue> {
    const TensorType& t = type(self);
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, a.optional_integer("dim"));
    if (!dim) {
      SequenceValue shape;
      for (const Dim& d : t.shape) shape.items.push_back(d.value());
      return TracedValue(std::move(shape));
    }
    Expected<int64_t> n = normalize_dim(*dim, t.rank());
    if (!n || t.rank() == 0) return a.error("dim", a.site().callee + "(): " + (n ? "a 0-d tensor has no dimensions" : n.error().message));
    return TracedValue(t.dim(*n));
  }});
  methods_.emplace("dim", MethodEntry{CallSignature(""), [this](const std::string& self, const BoundArguments&)
                                                             -> Expected<TracedValue> { return TracedValue(type(self).rank()); }});
}

void TorchLibrary::register_functional() {
  const std::string f = "torch.nn.functional.";
  for (std::string op : {"relu", "silu"}) {
    functions_.emplace(f + op, FunctionEntry{CallSignature("input, inplace=False"), [this, op](const BoundArguments& a)
                                                                                      -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
      TESSERA_ASSIGN_OR_RETURN(bool inplace, a.boolean("inplace"));
      (void)inplace;  // a traced graph has no aliasing: in-place and out-of-place are the same node
      return unary_op(op, x, a.site());
    }});
  }
  for (std::string op : {"sigmoid", "tanh"}) {
    functions_.emplace(f + op, FunctionEntry{CallSignature("input"), [this, op](const BoundArguments& a)
                                                                         -> Expected<TracedValue> {
      TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
      return unary_op(op, x, a.site());
    }});
  }
  functions_.emplace(f + "gelu", FunctionEntry{CallSignature("input, approximate='none'"), [this](const BoundArguments& a)
                                                                                             -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::string approximate, a.string("approximate"));
    if (approximate != "none" && approximate != "tanh")
      return a.error("approximate", "approximate must be 'none' or 'tanh', got '" + approximate + "'");
    return gelu(x, approximate, a.site());
  }});
  functions_.emplace(f + "softmax", FunctionEntry{CallSignature("input, dim=None"), [this](const BoundArguments& a)
                                                                                      -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, a.optional_integer("dim"));
    if (!dim) dim = implicit_softmax_dim(x, "softmax", a.site());
    return softmax(x, *dim, a.site());
  }});
  functions_.emplace(f + "rms_norm", FunctionEntry{CallSignature("input, normalized_shape, weight=None, eps=None"),
                                                   [this](const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, a.int_list("normalized_shape"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> weight, a.optional_tensor("weight"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<double> eps, a.optional_number("eps"));
    return norm("rms_norm", x, shape, weight, std::nullopt, eps, a.site());
  }});
  functions_.emplace(f + "layer_norm",
                     FunctionEntry{CallSignature("input, normalized_shape, weight=None, bias=None, eps=1e-05"),
                                   [this](const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, a.int_list("normalized_shape"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> weight, a.optional_tensor("weight"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> bias, a.optional_tensor("bias"));
    TESSERA_ASSIGN_OR_RETURN(double eps, a.number("eps"));
    if (bias && !weight) return a.error("bias", "layer_norm with a bias but no weight is not supported yet");
    return norm("layer_norm", x, shape, weight, bias, eps, a.site());
  }});
  functions_.emplace(f + "linear", FunctionEntry{CallSignature("input, weight, bias=None"), [this](const BoundArguments& a)
                                                                                              -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::string weight, a.tensor("weight"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> bias, a.optional_tensor("bias"));
    return linear(x, weight, bias, a.site());
  }});
}

void TorchLibrary::register_modules() {
  const std::string nn = "torch.nn.";
  modules_.emplace(nn + "Linear",
                   ModuleEntry{CallSignature("in_features, out_features, bias=True, device=None, dtype=None"), "linear"});
  modules_.emplace(nn + "RMSNorm", ModuleEntry{CallSignature("normalized_shape, eps=None, elementwise_affine=True, "
                                                             "device=None, dtype=None"),
                                               "rms_norm"});
  modules_.emplace(nn + "LayerNorm", ModuleEntry{CallSignature("normalized_shape, eps=1e-05, elementwise_affine=True, "
                                                               "bias=True, device=None, dtype=None"),
                                                 "layer_norm"});
  modules_.emplace(nn + "Softmax", ModuleEntry{CallSignature("dim=None"), "softmax"});
  modules_.emplace(nn + "ReLU", ModuleEntry{CallSignature("inplace=False"), "relu"});
  modules_.emplace(nn + "SiLU", ModuleEntry{CallSignature("inplace=False"), "silu"});
  modules_.emplace(nn + "GELU", ModuleEntry{CallSignature("approximate='none'"), "gelu"});
  modules_.emplace(nn + "Embedding", ModuleEntry{CallSignature("num_embeddings, embedding_dim, padding_idx=None, "
                                                               "max_norm=None, device=None, dtype=None"),
                                                 "embedding"});
  modules_.emplace(nn + "Tanh", ModuleEntry{CallSignature(""), "tanh"});
  modules_.emplace(nn + "Sigmoid", ModuleEntry{CallSignature(""), "sigmoid"});
}

// ---- calls -----------------------------------------------------------------------------------

Expected<TracedValue> TorchLibrary::call_function(const std::string& name, const std::vector<ArgumentValue>& args,
                                                  const CallSite& site) {
  const FunctionEntry& entry = functions_.at(name);
  CallSite s = site;
  s.callee = display_name(name);
  TESSERA_ASSIGN_OR_RETURN(BoundArguments bound, entry.signature.bind(args, s, builder_.source()));
  return entry.handler(bound);
}

Expected<TracedValue> TorchLibrary::call_tensor_method(const std::string& node, const std::string& method,
                                                       const std::vector<ArgumentValue>& args, const CallSite& site) {
  const MethodEntry& entry = methods_.at(method);
  TESSERA_ASSIGN_OR_RETURN(BoundArguments bound, entry.signature.bind(args, site, builder_.source()));
  return entry.handler(node, bound);
}

Expected<std::unique_ptr<BuiltinModule>> TorchLibrary::construct_module(const std::string& class_name,
                                                                        const std::vector<ArgumentValue>& args,
                                                                        const CallSite& site) {
  CallSite s = site;
  s.callee = display_name(class_name);
  if (class_name == "torch.nn.Module")
    return builder_.error(site.span, "nn.Module cannot be used directly; define a class that derives from it");
  const ModuleEntry& entry = modules_.at(class_name);
  TESSERA_ASSIGN_OR_RETURN(BoundArguments a, entry.signature.bind(args, s, builder_.source()));

  auto m = std::make_unique<BuiltinModule>();
  m->kind = class_name.substr(class_name.rfind('.') + 1);
  m->display = s.callee;
  auto positive = [&](const std::string& arg, const std::vector<int64_t>& values) -> Status {
    for (int64_t v : values)
      if (v <= 0)
        return a.error(arg, s.callee + "(): " + arg + " must be positive, got " + std::to_string(v));
    return Status::ok();
  };
  auto device_and_dtype = [&]() -> Status {
    if (!a.is_none("device") && !a.value("device").is<std::string>())
      return a.error("device", "argument 'device' of " + s.callee + "() must be a string or None, got " +
                                   describe_value(a.value("device")));
    TESSERA_ASSIGN_OR_RETURN(m->dtype, a.optional_dtype("dtype"));
    if (m->dtype && !dtype_is_float(*m->dtype))
      return a.error("dtype", s.callee + "() parameters must be floating point, got " +
                                  std::string(dtype_name(*m->dtype)));
    return Status::ok();
  };

  if (m->kind == "Linear") {
    TESSERA_ASSIGN_OR_RETURN(int64_t in, a.integer("in_features"));
    TESSERA_ASSIGN_OR_RETURN(int64_t out, a.integer("out_features"));
    TESSERA_ASSIGN_OR_RETURN(bool bias, a.boolean("bias"));
    TESSERA_TRY(positive("in_features", {in}));
    TESSERA_TRY(positive("out_features", {out}));
    TESSERA_TRY(device_and_dtype());
    m->config.set("in_features", in);
    m->config.set("out_features", out);
    m->config.set("bias", bias);
  } else if (m->kind == "RMSNorm" || m->kind == "LayerNorm") {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, a.int_list("normalized_shape"));
    TESSERA_TRY(positive("normalized_shape", shape));
    TESSERA_ASSIGN_OR_RETURN(std::optional<double> eps, a.optional_number("eps"));
    if (eps && !(*eps >= 0)) return a.error("eps", s.callee + "(): eps must be non-negative");
    TESSERA_ASSIGN_OR_RETURN(bool affine, a.boolean("elementwise_affine"));
    TESSERA_TRY(device_and_dtype());
    m->config.set("normalized_shape", shape);
    if (eps) m->config.set("eps", *eps);
    m->config.set("elementwise_affine", affine);
    if (m->kind == "LayerNorm") {
      TESSERA_ASSIGN_OR_RETURN(bool bias, a.boolean("bias"));
      m->config.set("bias", bias && affine);
    }
  } else if (m->kind == "Embedding") {
    TESSERA_ASSIGN_OR_RETURN(int64_t num, a.integer("num_embeddings"));
    TESSERA_ASSIGN_OR_RETURN(int64_t dim, a.integer("embedding_dim"));
    TESSERA_TRY(positive("num_embeddings", {num}));
    TESSERA_TRY(positive("embedding_dim", {dim}));
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> padding_idx, a.optional_integer("padding_idx"));
    (void)padding_idx;  // only changes gradients, not the forward pass
    if (!a.is_none("max_norm"))
      return a.error("max_norm", "nn.Embedding(max_norm=...) renormalizes its weight in place and is not supported");
    TESSERA_TRY(device_and_dtype());
    m->config.set("num_embeddings", num);
    m->config.set("embedding_dim", dim);
  } else if (m->kind == "Softmax") {
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> dim, a.optional_integer("dim"));
    if (dim) m->config.set("dim", *dim);  // else PyTorch's implicit dim, chosen at each call
  } else if (m->kind == "GELU") {
    TESSERA_ASSIGN_OR_RETURN(std::string approximate, a.string("approximate"));
    if (approximate != "none" && approximate != "tanh")
      return a.error("approximate", "approximate must be 'none' or 'tanh', got '" + approximate + "'");
    m->config.set("approximate", approximate);
  } else if (m->kind == "Dropout") {
    TESSERA_ASSIGN_OR_RETURN(double p, a.number("p"));
    if (!(p >= 0 && p <= 1)) {
      std::ostringstream text;  // 1.5, as Python prints it
      text << p;
      return a.error("p", "dropout probability has to be between 0 and 1, but got " + text.str());
    }
    m->config.set("p", p);  // matters only in training mode (after .train())
  } else if (m->kind == "ReLU" || m->kind == "SiLU") {
    TESSERA_ASSIGN_OR_RETURN(bool inplace, a.boolean("inplace"));
    (void)inplace;  // no aliasing in a traced graph
  }
  return m;
}

std::vector<TorchLibrary::ParameterSpec> TorchLibrary::parameter_specs(const BuiltinModule& m) const {
  std::vector<ParameterSpec> specs;
  if (m.kind == "Linear") {
    int64_t in = m.config.get_int("in_features", 1);
    int64_t out = m.config.get_int("out_features", 1);
    // randn scaled like PyTorch's default init (uniform in +-1/sqrt(in_features)) keeps activations O(1).
    double scale = 1.0 / std::sqrt(static_cast<double>(in));
    specs.push_back({"weight", Shape{out, in}, scale});
    if (m.config.get_bool("bias", true)) specs.push_back({"bias", Shape{out}, scale});
  } else if (m.kind == "RMSNorm" || m.kind == "LayerNorm") {
    if (!m.config.get_bool("elementwise_affine", true)) return specs;
    const auto* shape = std::get_if<std::vector<int64_t>>(m.config.find("normalized_shape"));
    Shape s(shape->begin(), shape->end());
    specs.push_back({"weight", s, 1.0});
    if (m.kind == "LayerNorm" && m.config.get_bool("bias", true)) specs.push_back({"bias", s, 1.0});
  } else if (m.kind == "Embedding") {
    specs.push_back({"weight", Shape{m.config.get_int("num_embeddings", 1), m.config.get_int("embedding_dim", 1)}, 1.0});
  }
  return specs;
}

Status TorchLibrary::create_parameters(BuiltinModule& m, DType dtype, const CallSite& site) {
  if (m.params_created) return Status::ok();
  std::vector<ParameterSpec> specs = parameter_specs(m);
  auto path_of = [](const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
  };
  auto taken = [&](const std::string& prefix) {
    for (const ParameterSpec& spec : specs)
      if (builder_.parameter_path_taken(path_of(prefix, spec.name))) return true;
    return false;
  };
  // Anonymous modules own the root names ("weight") first; later ones are named after their op.
  std::string prefix = m.path();
  if (taken(prefix)) {
    std::string stem = prefix.empty() ? modules_.at("torch.nn." + m.kind).target : prefix;
    prefix = stem;
    for (int i = 1; taken(prefix); ++i) prefix = stem + "_" + std::to_string(i);
  }
  for (const ParameterSpec& spec : specs) {
    TESSERA_ASSIGN_OR_RETURN(std::string id, builder_.add_parameter(path_of(prefix, spec.name), "randn", spec.scale,
                                                                    TensorType{spec.shape, dtype}, site.span));
    m.param_nodes[spec.name] = id;
  }
  m.prefix = prefix;
  m.params_created = true;
  return Status::ok();
}

Expected<TracedValue> TorchLibrary::call_module(BuiltinModule& m, const std::vector<ArgumentValue>& args,
                                                const CallSite& site) {
  CallSite s = site;
  s.callee = m.display;
  static const CallSignature forward("input");
  TESSERA_ASSIGN_OR_RETURN(BoundArguments a, forward.bind(args, s, builder_.source()));
  TESSERA_ASSIGN_OR_RETURN(std::string x, a.tensor("input"));
  // Parameters are created in the default float dtype (float32) unless the constructor's dtype=
  // says otherwise, whatever the input's dtype: PyTorch does not convert a module to its input.
  DType dtype = m.dtype.value_or(builder_.default_dtype());
  TESSERA_TRY(create_parameters(m, dtype, s));
  auto param = [&](const std::string& name) -> std::optional<std::string> {
    auto it = m.param_nodes.find(name);
    return it == m.param_nodes.end() ? std::nullopt : std::optional<std::string>(it->second);
  };

  if (m.kind == "Linear") return linear(x, *param("weight"), param("bias"), s);
  if (m.kind == "Dropout" && m.training && m.config.get_float("p", 0.5) > 0)
    return builder_.error(site.span, m.display + " is in training mode (the program called .train()), where it zeroes "
                                                 "random elements; Tessera compiles inference: call .eval() on the model");
  if (m.kind == "Dropout" || m.kind == "Identity") return TracedValue(TensorValue{x});
  if (m.kind == "RMSNorm" || m.kind == "LayerNorm") {
    const auto* shape = std::get_if<std::vector<int64_t>>(m.config.find("normalized_shape"));
    std::optional<double> eps;
    if (m.config.has("eps")) eps = m.config.get_float("eps", 0.0);
    return norm(m.kind == "RMSNorm" ? "rms_norm" : "layer_norm", x, *shape, param("weight"), param("bias"), eps, s);
  }
  if (m.kind == "Softmax")
    return softmax(x, m.config.has("dim") ? m.config.get_int("dim", -1) : implicit_softmax_dim(x, "softmax", s), s);
  if (m.kind == "Embedding") return embedding(x, *param("weight"), s);
  if (m.kind == "GELU") return gelu(x, m.config.get_string("approximate", "none"), s);
  return unary_op(modules_.at("torch.nn." + m.kind).target, x, s);
}

Status TorchLibrary::convert_module_parameters(BuiltinModule& m, DType dtype, const CallSite& site) {
  m.dtype = dtype;
  if (!m.params_created) return Status::ok();
  for (auto& [name, node] : m.param_nodes) {
    CallSite s = site;
    s.name_hint = node + "_" + std::string(dtype_name(dtype));  // p_up_weight_float16
    TESSERA_ASSIGN_OR_RETURN(TracedValue converted, cast(node, dtype, s));
    node = converted.as<TensorValue>()->node;
  }
  return Status::ok();
}

// ---- tensor attributes and operators ---------------------------------------------------------

Expected<TracedValue> TorchLibrary::tensor_attribute(const std::string& node, const std::string& attr,
                                                     const SourceSpan& attr_span, const CallSite& site) {
  const TensorType& t = type(node);
  if (attr == "shape") {
    SequenceValue shape;
    for (const Dim& d : t.shape) shape.items.push_back(d.value());
    return TracedValue(std::move(shape));
  }
  if (attr == "dtype") return TracedValue(DTypeValue{t.dtype});
  if (attr == "ndim") return TracedValue(t.rank());
  if (attr == "T") {
    // PyTorch: every dim reversed (deprecated for rank != 2, but defined so).
    if (t.rank() < 2) return TracedValue(TensorValue{node});
    if (t.rank() == 2) return transpose(node, 0, 1, site);
    std::vector<int64_t> reversed;
    for (int64_t d = t.rank() - 1; d >= 0; --d) reversed.push_back(d);
    return permute(node, reversed, site);
  }
  if (attr == "mT") {
    if (t.rank() < 2)
      return builder_.error(attr_span, "tensor.mT is only supported on matrices or batches of matrices. Got " +
                                           std::to_string(t.rank()) + "-D tensor.");
    return transpose(node, -2, -1, site);
  }
  if (methods_.count(attr)) return TracedValue(TensorMethodValue{node, attr});
  std::vector<std::string> names = {"shape", "dtype", "ndim", "T", "mT"};
  for (const auto& [name, entry] : methods_) names.push_back(name);
  return builder_.error(attr_span, "tensor attribute '" + attr + "' is not supported" + did_you_mean(attr, names));
}

Expected<TracedValue> TorchLibrary::binary(BinaryOp op, const TracedValue& lhs, const TracedValue& rhs,
                                           const CallSite& site) {
  switch (op) {
    case BinaryOp::Add: return elementwise("add", lhs, rhs, site);
    case BinaryOp::Sub: return elementwise("sub", lhs, rhs, site);
    case BinaryOp::Mul: return elementwise("mul", lhs, rhs, site);
    case BinaryOp::Div: return elementwise("div", lhs, rhs, site);
    case BinaryOp::Pow: return elementwise("pow", lhs, rhs, site);
    case BinaryOp::FloorDiv: return elementwise("floor_divide", lhs, rhs, site);
    case BinaryOp::Mod: return elementwise("remainder", lhs, rhs, site);
    case BinaryOp::MatMul: {
      const auto* a = lhs.as<TensorValue>();
      const auto* b = rhs.as<TensorValue>();
      if (!a || !b)
        return builder_.error(site.span, "operator '@' needs two tensors, got " + describe_value(lhs) + " and " +
                                             describe_value(rhs));
      return matmul(a->node, b->node, site);
    }
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor: {
      // On bool tensors (masks) these are the logical ops; integer bitwise ops are not supported.
      for (const TracedValue* v : {&lhs, &rhs}) {
        const auto* t = v->as<TensorValue>();
        if ((t && type(t->node).dtype != DType::Bool) || (!t && !v->is<bool>()))
          return builder_.error(site.span, "operator '" + std::string(binary_op_symbol(op)) +
                                               "' is only supported on bool tensors (masks), got " +
                                               (t ? std::string(dtype_name(type(t->node).dtype)) + " tensor" : describe_value(*v)));
      }
      if (op == BinaryOp::BitXor) return elementwise("ne", lhs, rhs, site, true);
      return logical(op == BinaryOp::BitAnd ? "logical_and" : "logical_or", lhs, rhs, site);
    }
    default:
      return builder_.error(site.span, "operator '" + std::string(binary_op_symbol(op)) +
                                           "' is not supported on tensors yet");
  }
}

Expected<TracedValue> TorchLibrary::compare(CompareOp op, const TracedValue& lhs, const TracedValue& rhs,
                                            const CallSite& site) {
  switch (op) {
    case CompareOp::Lt: return elementwise("lt", lhs, rhs, site, true);
    case CompareOp::Le: return elementwise("le", lhs, rhs, site, true);
    case CompareOp::Gt: return elementwise("gt", lhs, rhs, site, true);
    case CompareOp::Ge: return elementwise("ge", lhs, rhs, site, true);
    case CompareOp::Eq: return elementwise("eq", lhs, rhs, site, true);
    case CompareOp::Ne: return elementwise("ne", lhs, rhs, site, true);
    default: return builder_.error(site.span, "'in' and 'is' comparisons are not supported on tensors");
  }
}

Expected<TracedValue> TorchLibrary::unary(UnaryOp op, const std::string& node, const CallSite& site) {
  switch (op) {
    case UnaryOp::Neg: return unary_op("neg", node, site);
    case UnaryOp::Pos: return TracedValue(TensorValue{node});
    case UnaryOp::Invert:
      if (type(node).dtype != DType::Bool)
        return builder_.error(site.span, "operator '~' is only supported on bool tensors (masks), got " +
                                             std::string(dtype_name(type(node).dtype)));
      return emit(TorchNodeSpec{"logical_not", {node}, {}, {}, type(node)}, site);
    case UnaryOp::Not:
      return builder_.error(site.span, "the truth value of a traced tensor is unknown; 'not' needs a Python value");
  }
  return builder_.error(site.span, "unsupported unary operator");
}

// ---- op implementations ----------------------------------------------------------------------

Diagnostic TorchLibrary::located(const CallSite& site, const Diagnostic& d) const {
  return builder_.error(site.span, site.callee + ": " + d.message);
}

Status TorchLibrary::require_nonempty_reduction(const std::string& name, const std::string& x,
                                               const std::vector<int64_t>& dims, const CallSite& site) const {
  const TensorType& t = type(x);
  for (int64_t d : dims)
    if (t.rank() > 0 && t.dim(d) == 0)
      return builder_.error(site.span, site.callee + ": " + name + "(): Expected reduction dim " + std::to_string(d) +
                                           " to have non-zero size.");
  return Status::ok();
}

Status TorchLibrary::require_float(const std::string& x, const CallSite& site) const {
  DType t = type(x).dtype;
  if (dtype_is_float(t)) return Status::ok();
  return builder_.error(site.span, site.callee + " expects a floating-point tensor, got " + std::string(dtype_name(t)));
}

Expected<TracedValue> TorchLibrary::emit(TorchNodeSpec spec, const CallSite& site) {
  const std::string target = spec.target;
  const std::vector<std::string> inputs = spec.inputs;
  const Attrs attrs = spec.attrs;
  TESSERA_ASSIGN_OR_RETURN(std::string id, builder_.add_torch_op(std::move(spec), site.name_hint, site.span));
  std::vector<ViewStrides::Operand> operands;
  for (const std::string& in : inputs) operands.push_back({in, shape_ints(type(in).shape)});
  views_.record(id, shape_ints(type(id).shape), target, attrs, operands);
  return TracedValue(TensorValue{id});
}

Expected<TracedValue> TorchLibrary::make_input(const std::string& init, const BoundArguments& a,
                                               bool sizes_are_varargs) {
  const CallSite& site = a.site();
  std::vector<int64_t> sizes;
  if (sizes_are_varargs) {
    TESSERA_ASSIGN_OR_RETURN(sizes, a.sizes("size"));
  } else {
    TESSERA_ASSIGN_OR_RETURN(sizes, a.int_list("size"));
  }
  // A constant made inside a function body may be empty (`torch.zeros(1, 2, 0, 8)`: an empty cache);
  // a program input may not.
  const bool constant = inside_function_ && (init == "zeros" || init == "ones" || init == "full");
  for (int64_t s : sizes)
    if (s < 0 || (s == 0 && !constant))
      return a.error("size", site.callee + "(): sizes must be positive, got " + ints_str(sizes) +
                                 (s == 0 ? " (zero-size program inputs are not supported; empty tensors made "
                                           "inside the program are)"
                                         : ""));
  TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
  DType dt = dtype.value_or(builder_.default_dtype());
  // torch.full without dtype= takes it from the fill value: bool, int64 for an int, else the default.
  if (init == "full" && !dtype) {
    const TracedValue& fill_value = a.value("fill_value");
    if (fill_value.is<bool>()) dt = DType::Bool;
    else if (fill_value.is<int64_t>()) dt = DType::I64;
  }
  if ((init == "randn" || init == "rand") && !dtype_is_float(dt))
    return a.error("dtype", site.callee + "() needs a floating-point dtype, got " + std::string(dtype_name(dt)));
  // Placement is Tessera's decision, so device= is accepted and ignored, as is requires_grad=.
  if (!a.is_none("device") && !a.value("device").is<std::string>())
    return a.error("device", "argument 'device' of " + site.callee + "() must be a string or None, got " +
                                 describe_value(a.value("device")));
  TESSERA_ASSIGN_OR_RETURN(bool requires_grad, a.boolean("requires_grad"));
  (void)requires_grad;
  double fill = 0.0;
  if (init == "full") {
    const TracedValue& v = a.value("fill_value");
    if (!v.is_number()) return a.error("fill_value", "argument 'fill_value' of torch.full() must be a number, got " +
                                                         describe_value(v));
    TESSERA_TRY(require_exact_integer(v, site));
    fill = v.number();
  }
  Shape shape(sizes.begin(), sizes.end());
  // Inside a function or method body, zeros/ones/full are constants of the program (a mask, a
  // cache), not inputs: a `full` node.
  if (inside_function_ && (init == "zeros" || init == "ones" || init == "full")) 
    return full(shape, init == "ones" ? 1.0 : fill, dt, site);
  TESSERA_ASSIGN_OR_RETURN(std::string id, builder_.add_input(site.name_hint, init, fill, TensorType{shape, dt}, site.span));
  return TracedValue(TensorValue{id});
}

Expected<TracedValue> TorchLibrary::unary_op(const std::string& target, const std::string& x, const CallSite& site,
                                             Attrs attrs) {
  TESSERA_TRY(reject_like_pytorch(target, {TracedValue(TensorValue{x})}, site));
  TensorType out = type(x);
  if (produces_float(target) && !dtype_is_float(out.dtype)) out.dtype = builder_.default_dtype();
  return emit(TorchNodeSpec{target, {x}, {}, std::move(attrs), out}, site);
}

Expected<TracedValue> TorchLibrary::elementwise(const std::string& target, const TracedValue& lhs,
                                                const TracedValue& rhs, const CallSite& site, bool returns_bool) {
  const auto* lt = lhs.as<TensorValue>();
  const auto* rt = rhs.as<TensorValue>();
  auto bad_operand = [&](const TracedValue& v) {
    return builder_.error(site.span, site.callee + ": unsupported operand of type " + describe_value(v) +
                                         " (expected a tensor or a number)");
  };
  if (!lt && !lhs.is_number()) return bad_operand(lhs);
  if (!rt && !rhs.is_number()) return bad_operand(rhs);
  if (!lt && !rt) return builder_.error(site.span, site.callee + ": expected at least one tensor operand");
  TESSERA_TRY(reject_like_pytorch(target, {lhs, rhs}, site));
  TESSERA_TRY(require_exact_integer(lt ? rhs : lhs, site));

  TorchNodeSpec spec;
  spec.target = target;
  if (lt && rt) {
    const TensorType& a = type(lt->node);
    const TensorType& b = type(rt->node);
    Expected<Shape> shape = broadcast_shapes(a.shape, b.shape);
    if (!shape) return located(site, shape.error());
    spec.inputs = {lt->node, rt->node};
    TensorResultType result;
    result.add(a);
    result.add(b);
    spec.type = TensorType{*shape, *result.result()};
  } else {
    const std::string& node = lt ? lt->node : rt->node;
    const TracedValue& scalar = lt ? rhs : lhs;
    const TensorType& t = type(node);
    spec.inputs = {node};
    spec.scalar_args = {{lt ? 1 : 0, scalar.number()}};
    spec.type = TensorType{t.shape, promote_with_scalar(t.dtype, scalar.is<double>(), scalar.is<int64_t>(),
                                                        builder_.default_dtype())};
  }
  if (produces_float(target) && !dtype_is_float(spec.type.dtype)) spec.type.dtype = builder_.default_dtype();  // true division
  if (returns_bool) spec.type.dtype = DType::Bool;
  return emit(std::move(spec), site);
}

Expected<TracedValue> TorchLibrary::matmul(const std::string& a, const std::string& b, const CallSite& site,
                                           int required_rank) {
  const TensorType& ta = type(a);
  const TensorType& tb = type(b);
  if (required_rank && (ta.rank() != required_rank || tb.rank() != required_rank))
    return builder_.error(site.span, site.callee + ": expected " + std::to_string(required_rank) +
                                         "-D tensors, got shapes " + shape_str(ta.shape) + " and " + shape_str(tb.shape));
  if (ta.dtype != tb.dtype)
    return builder_.error(site.span, site.callee + ": expected both operands to have the same dtype, got " +
                                         std::string(dtype_name(ta.dtype)) + " and " + std::string(dtype_name(tb.dtype)));
  Expected<Shape> shape = matmul_shape(ta.shape, tb.shape);
  if (!shape) return located(site, shape.error());
  return emit(TorchNodeSpec{"matmul", {a, b}, {}, {}, TensorType{*shape, ta.dtype}}, site);
}

Expected<TracedValue> TorchLibrary::reduction(const std::string& target, const std::string& x,
                                              const std::optional<std::vector<int64_t>>& dims, bool keepdim,
                                              const CallSite& site) {
  const TensorType& t = type(x);
  if (target == "mean") TESSERA_TRY(require_float(x, site));
  std::vector<int64_t> requested = dims.value_or(std::vector<int64_t>{});
  Expected<std::vector<int64_t>> normalized = normalize_reduction_dims(requested, t.rank());
  if (!normalized) return located(site, normalized.error());
  if ((target == "amax" || target == "amin") && num_elements(t.shape) == 0) {
    // PyTorch names the dim as written here (max(dim) and argmax name it normalized).
    if (requested.empty())
      return builder_.error(site.span, site.callee + ": " + target + "(): Expected reduction dim to be specified for "
                                       "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
    for (size_t i = 0; i < normalized->size(); ++i)
      if (t.dim((*normalized)[i]) == 0)
        return builder_.error(site.span, site.callee + ": " + target + "(): Expected reduction dim " +
                                             std::to_string(requested[i]) + " to have non-zero size.");
  }
  Attrs attrs;
  attrs.set("dim", requested.empty() ? *normalized : requested);
  attrs.set("keepdim", keepdim);
  TensorType out{reduced_shape(t.shape, *normalized, keepdim), t.dtype};
  if (target == "sum" && (t.dtype == DType::Bool || t.dtype == DType::I32)) out.dtype = DType::I64;
  return emit(TorchNodeSpec{target, {x}, {}, std::move(attrs), out}, site);
}

Expected<TracedValue> TorchLibrary::softmax(const std::string& x, int64_t dim, const CallSite& site) {
  TESSERA_TRY(require_float(x, site));
  Expected<int64_t> d = normalize_dim(dim, type(x).rank());
  if (!d) return located(site, d.error());
  Attrs attrs;
  attrs.set("dim", dim);
  return emit(TorchNodeSpec{"softmax", {x}, {}, std::move(attrs), type(x)}, site);
}

Expected<TracedValue> TorchLibrary::transpose(const std::string& x, int64_t dim0, int64_t dim1, const CallSite& site) {
  const TensorType& t = type(x);
  Expected<int64_t> d0 = normalize_dim(dim0, t.rank());
  if (!d0) return located(site, d0.error());
  Expected<int64_t> d1 = normalize_dim(dim1, t.rank());
  if (!d1) return located(site, d1.error());
  TensorType out = t;
  if (t.rank() > 0) std::swap(out.shape[static_cast<size_t>(*d0)], out.shape[static_cast<size_t>(*d1)]);
  Attrs attrs;
  attrs.set("dim0", dim0);
  attrs.set("dim1", dim1);
  return emit(TorchNodeSpec{"transpose", {x}, {}, std::move(attrs), out}, site);
}

Expected<TracedValue> TorchLibrary::reshape(const std::string& x, const std::vector<int64_t>& shape,
                                            const CallSite& site) {
  const TensorType& t = type(x);
  Expected<Shape> out = reshape_shape(t.shape, shape);
  if (!out) return located(site, out.error());
  Attrs attrs;
  attrs.set("shape", shape_ints(*out));
  return emit(TorchNodeSpec{"reshape", {x}, {}, std::move(attrs), TensorType{*out, t.dtype}}, site);
}

Expected<TracedValue> TorchLibrary::unsqueeze(const std::string& x, int64_t dim, const CallSite& site) {
  const TensorType& t = type(x);
  Expected<int64_t> d = normalize_dim(dim, t.rank() + 1);
  if (!d) return located(site, d.error());
  TensorType out = t;
  out.shape.insert(out.shape.begin() + *d, Dim(1));
  Attrs attrs;
  attrs.set("dim", dim);
  return emit(TorchNodeSpec{"unsqueeze", {x}, {}, std::move(attrs), out}, site);
}

Expected<TracedValue> TorchLibrary::gelu(const std::string& x, const std::string& approximate, const CallSite& site) {
  Attrs attrs;
  attrs.set("approximate", approximate);
  return unary_op("gelu", x, site, std::move(attrs));
}

Expected<TracedValue> TorchLibrary::norm(const std::string& target, const std::string& x,
                                         const std::vector<int64_t>& shape, const std::optional<std::string>& weight,
                                         const std::optional<std::string>& bias, std::optional<double> eps,
                                         const CallSite& site) {
  TESSERA_TRY(require_float(x, site));
  const TensorType& t = type(x);
  if (shape.empty()) return builder_.error(site.span, site.callee + ": normalized_shape must not be empty");
  for (int64_t d : shape)
    if (d <= 0) return builder_.error(site.span, site.callee + ": normalized_shape must be positive, got " + ints_str(shape));
  bool matches = t.rank() >= static_cast<int64_t>(shape.size());
  for (size_t i = 0; matches && i < shape.size(); ++i)
    matches = t.shape[t.shape.size() - shape.size() + i].value() == shape[i];
  if (!matches)
    return builder_.error(site.span, site.callee + ": input of shape " + shape_str(t.shape) +
                                         " does not end with normalized_shape " + ints_str(shape));
  std::vector<std::string> inputs = {x};
  for (const auto& [name, param] : {std::pair{"weight", weight}, std::pair{"bias", bias}}) {
    if (!param) continue;
    const TensorType& p = type(*param);
    if (shape_ints(p.shape) != shape)
      return builder_.error(site.span, site.callee + ": " + name + " of shape " + shape_str(p.shape) +
                                           " does not match normalized_shape " + ints_str(shape));
    // A weight or bias of another floating dtype is allowed (nn.RMSNorm's float32 weight on a bfloat16
    // input): PyTorch computes in float32 and the result has the input's dtype.
    if (!dtype_is_float(p.dtype))
      return builder_.error(site.span, site.callee + ": " + name + " must be floating point, got " +
                                           std::string(dtype_name(p.dtype)));
    inputs.push_back(*param);
  }
  // PyTorch's layer_norm mixes dtypes only as a float32 weight and bias on a bfloat16 or float16
  // input (nn.LayerNorm's float32 parameters on a float64 input raise).
  if (target == "layer_norm") {
    bool mixed = false;
    for (const std::optional<std::string>& param : {weight, bias}) mixed = mixed || (param && type(*param).dtype != t.dtype);
    if (mixed) {
      for (const std::optional<std::string>& param : {weight, bias})
        if (param && type(*param).dtype != DType::F32)
          return builder_.error(site.span, site.callee + ": mixed dtype (CPU): expect parameter to have scalar type of Float");
      if (t.dtype != DType::BF16 && t.dtype != DType::F16)
        return builder_.error(site.span, site.callee + ": mixed dtype (CPU): all inputs must share same datatype. (input " +
                                             std::string(dtype_name(t.dtype)) + ", parameters float32)");
    }
  }
  double e = eps.value_or(kRmsNormDefaultEps);
  if (!(e >= 0)) return builder_.error(site.span, site.callee + ": eps must be non-negative");
  Attrs attrs;
  attrs.set("normalized_shape", shape);
  attrs.set("eps", e);
  return emit(TorchNodeSpec{target, std::move(inputs), {}, std::move(attrs), t}, site);
}

Expected<TracedValue> TorchLibrary::linear(const std::string& x, const std::string& weight,
                                           const std::optional<std::string>& bias, const CallSite& site) {
  const TensorType& tx = type(x);
  const TensorType& tw = type(weight);
  if (tw.rank() == 1) return linear_vector_weight(x, weight, bias, site);
  if (tw.rank() != 2)
    return builder_.error(site.span, site.callee + ": weight must be 2-D (out_features, in_features) or 1-D, got shape " +
                                         shape_str(tw.shape));
  if (tx.rank() < 1 || tx.dim(tx.rank() - 1) != tw.dim(1))
    return builder_.error(site.span, site.callee + ": input of shape " + shape_str(tx.shape) +
                                         " does not match weight of shape " + shape_str(tw.shape) + " (expected " +
                                         std::to_string(tw.dim(1)) + " input features)");
  // PyTorch's matmul refuses mixed dtypes; nn.Linear's parameters are float32 unless created with
  // dtype=, so a float16 input needs nn.Linear(..., dtype=torch.float16).
  if (tx.dtype != tw.dtype)
    return builder_.error(site.span, site.callee + ": mat1 and mat2 must have the same dtype, but got " +
                                         std::string(dtype_name(tx.dtype)) + " (input) and " +
                                         std::string(dtype_name(tw.dtype)) + " (weight)");
  std::vector<std::string> inputs = {x, weight};
  if (bias) {
    const TensorType& tb = type(*bias);
    if (tb.rank() != 1 || tb.dim(0) != tw.dim(0))
      return builder_.error(site.span, site.callee + ": bias of shape " + shape_str(tb.shape) +
                                           " does not match out_features " + std::to_string(tw.dim(0)));
    if (tb.dtype != tx.dtype)
      return builder_.error(site.span, site.callee + ": bias is " + std::string(dtype_name(tb.dtype)) +
                                           " but the input is " + std::string(dtype_name(tx.dtype)));
    inputs.push_back(*bias);
  }
  TensorType out = tx;
  out.shape.back() = tw.shape[0];
  return emit(TorchNodeSpec{"linear", std::move(inputs), {}, {}, out}, site);
}

// ---- issue 3 coverage -------------------------------------------------------------------------

void TorchLibrary::register_attention_and_embedding() {
  const std::string f = "torch.nn.functional.";
  functions_.emplace(f + "embedding", FunctionEntry{CallSignature("input, weight, padding_idx=None, max_norm=None"),
                                                    [this](const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string ids, a.tensor("input"));
    TESSERA_ASSIGN_OR_RETURN(std::string weight, a.tensor("weight"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<int64_t> padding_idx, a.optional_integer("padding_idx"));
    (void)padding_idx;  // only changes gradients, not the forward pass
    if (!a.is_none("max_norm"))
      return a.error("max_norm", "F.embedding(max_norm=...) renormalizes the weight in place and is not supported");
    return embedding(ids, weight, a.site());
  }});
  functions_.emplace(f + "scaled_dot_product_attention",
                     FunctionEntry{CallSignature("query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, "
                                                 "scale=None, enable_gqa=False"),
                                   [this](const BoundArguments& a) -> Expected<TracedValue> {
    TESSERA_ASSIGN_OR_RETURN(std::string q, a.tensor("query"));
    TESSERA_ASSIGN_OR_RETURN(std::string k, a.tensor("key"));
    TESSERA_ASSIGN_OR_RETURN(std::string v, a.tensor("value"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<std::string> mask, a.optional_tensor("attn_mask"));
    TESSERA_ASSIGN_OR_RETURN(double dropout, a.number("dropout_p"));
    if (dropout != 0.0) return a.error("dropout_p", "dropout_p must be 0 (inference only), got " + std::to_string(dropout));
    TESSERA_ASSIGN_OR_RETURN(bool is_causal, a.boolean("is_causal"));
    TESSERA_ASSIGN_OR_RETURN(std::optional<double> scale, a.optional_number("scale"));
    TESSERA_ASSIGN_OR_RETURN(bool enable_gqa, a.boolean("enable_gqa"));
    if (mask) return attention_with_mask(q, k, v, *mask, is_causal, scale, enable_gqa, a.site());
    return attention(q, k, v, is_causal, scale, enable_gqa, a.site());
  }});
}

Expected<TracedValue> TorchLibrary::make_randint(const BoundArguments& a) {
  const CallSite& site = a.site();
  const auto& args = a.value("args").as<SequenceValue>()->items;
  if (args.size() != 2 && args.size() != 3)
    return builder_.error(site.span, "torch.randint() expects (high, size) or (low, high, size)");
  auto integer = [&](const TracedValue& v, const char* what) -> Expected<int64_t> {
    if (const auto* i = v.as<int64_t>()) return *i;
    return a.error("args", std::string("torch.randint(): ") + what + " must be an int, got " + describe_value(v));
  };
  int64_t low = 0;
  if (args.size() == 3) {
    TESSERA_ASSIGN_OR_RETURN(low, integer(args[0], "low"));
  }
  TESSERA_ASSIGN_OR_RETURN(int64_t high, integer(args[args.size() - 2], "high"));
  TESSERA_TRY(require_exact_integer(TracedValue(low), site));
  TESSERA_TRY(require_exact_integer(TracedValue(high), site));
  if (high <= low)
    return a.error("args", "torch.randint(): random_ expects 'from' to be less than 'to', but got from=" +
                               std::to_string(low) + " >= to=" + std::to_string(high));
  const auto* size = args.back().as<SequenceValue>();
  if (!size) return a.error("args", "torch.randint(): size must be a tuple of ints, got " + describe_value(args.back()));
  std::vector<int64_t> sizes;
  for (const TracedValue& v : size->items) {
    const auto* i = v.as<int64_t>();
    if (!i || *i <= 0)
      return a.error("args", "torch.randint(): sizes must be positive ints, got " + describe_value(v));
    sizes.push_back(*i);
  }
  TESSERA_ASSIGN_OR_RETURN(std::optional<DType> dtype, a.optional_dtype("dtype"));
  DType dt = dtype.value_or(DType::I64);
  if (dt != DType::I32 && dt != DType::I64)
    return a.error("dtype", "torch.randint(): only int32 and int64 are supported, got " + std::string(dtype_name(dt)));
  // The input's `fill` holds the exclusive upper bound (see docs/torch-ops.md); a low other than 0
  // is added to an input of [0, high - low).
  TESSERA_ASSIGN_OR_RETURN(std::string id,
                           builder_.add_input(low == 0 ? site.name_hint : std::string(), "randint",
                                              static_cast<double>(high - low),
                                              TensorType{Shape(sizes.begin(), sizes.end()), dt}, site.span));
  if (low == 0) return TracedValue(TensorValue{id});
  return elementwise("add", TensorValue{id}, TracedValue(low), site);
}

Expected<TracedValue> TorchLibrary::binary_tensors(const std::string& target, const std::string& a,
                                                   const std::string& b, const CallSite& site) {
  Expected<Shape> shape = broadcast_shapes(type(a).shape, type(b).shape);
  if (!shape) return located(site, shape.error());
  TensorResultType result;
  result.add(type(a));
  result.add(type(b));
  return emit(TorchNodeSpec{target, {a, b}, {}, {}, TensorType{*shape, *result.result()}}, site);
}

Expected<TracedValue> TorchLibrary::where(const std::string& condition, const TracedValue& input,
                                          const TracedValue& other, const CallSite& site) {
  if (type(condition).dtype != DType::Bool)
    return builder_.error(site.span, site.callee + ": condition must be a bool tensor, got " +
                                         std::string(dtype_name(type(condition).dtype)));
  TorchNodeSpec spec;
  spec.target = "where";
  spec.inputs = {condition};
  Shape shape = type(condition).shape;
  TensorResultType tensors;
  const TracedValue* scalar = nullptr;
  int64_t position = 1;
  for (const TracedValue* v : {&input, &other}) {
    if (const auto* t = v->as<TensorValue>()) {
      Expected<Shape> s = broadcast_shapes(shape, type(t->node).shape);
      if (!s) return located(site, s.error());
      shape = *s;
      tensors.add(type(t->node));
      spec.inputs.push_back(t->node);
    } else if (v->is_number()) {
      spec.scalar_args.push_back({position, v->number()});
      scalar = v;
    } else {
      return builder_.error(site.span, site.callee + ": unsupported operand of type " + describe_value(*v) +
                                           " (expected a tensor or a number)");
    }
    ++position;
  }
  const std::optional<DType> tensor_dtype = tensors.result();
  DType dtype;
  if (!tensor_dtype) {
    dtype = input.is<double>() || other.is<double>() ? builder_.default_dtype()
            : input.is<bool>() && other.is<bool>()   ? DType::Bool
                                                     : DType::I64;
  } else if (scalar) {
    dtype = promote_with_scalar(*tensor_dtype, scalar->is<double>(), scalar->is<int64_t>(), builder_.default_dtype());
  } else {
    dtype = *tensor_dtype;
  }
  spec.type = TensorType{shape, dtype};
  return emit(std::move(spec), site);
}

Expected<TracedValue> TorchLibrary::extreme(const std::string& kind, const std::string& x,
                                            const TracedValue& dim_or_other, bool keepdim, const CallSite& site) {
  if (const auto* other = dim_or_other.as<TensorValue>())
    return binary_tensors(kind == "max" ? "maximum" : "minimum", x, other->node, site);
  const std::string values = kind == "max" ? "amax" : "amin";
  if (dim_or_other.is<NoneValue>()) {
    if (num_elements(type(x).shape) == 0)
      return builder_.error(site.span, site.callee + ": " + kind + "(): Expected reduction dim to be specified for "
                                       "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
    return reduction(values, x, std::nullopt, keepdim, site);
  }
  const auto* dim = dim_or_other.as<int64_t>();
  if (!dim)
    return builder_.error(site.span, site.callee + ": dim must be an int or None (or a tensor to compare with), got " +
                                         describe_value(dim_or_other));
  const TensorType& t = type(x);
  Expected<int64_t> d = normalize_dim(*dim, t.rank());
  if (!d) return located(site, d.error());
  if (t.rank() > 0) TESSERA_TRY(require_nonempty_reduction(kind, x, {*d}, site));
  // (values, indices); the graph drops whichever the program does not use.
  TESSERA_ASSIGN_OR_RETURN(TracedValue v, reduction(values, x, std::vector<int64_t>{*dim}, keepdim, site));
  Attrs attrs;
  attrs.set("dim", *d);
  attrs.set("keepdim", keepdim);
  std::vector<int64_t> reduced = t.rank() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{*d};
  CallSite indices_site = site;
  indices_site.name_hint.clear();
  TESSERA_ASSIGN_OR_RETURN(TracedValue i, emit(TorchNodeSpec{kind == "max" ? "argmax" : "argmin", {x}, {}, std::move(attrs),
                                                             TensorType{reduced_shape(t.shape, reduced, keepdim), DType::I64}},
                                               indices_site));
  return TracedValue(SequenceValue{{v, i}, false, {"values", "indices"}});
}

Expected<TracedValue> TorchLibrary::cast(const std::string& x, DType dtype, const CallSite& site) {
  TensorType out = type(x);
  if (out.dtype == dtype) return TracedValue(TensorValue{x});
  out.dtype = dtype;
  Attrs attrs;
  attrs.set("dtype", std::string(dtype_name(dtype)));
  return emit(TorchNodeSpec{"cast", {x}, {}, std::move(attrs), out}, site);
}

Expected<TracedValue> TorchLibrary::embedding(const std::string& indices, const std::string& weight,
                                              const CallSite& site) {
  const TensorType& ti = type(indices);
  const TensorType& tw = type(weight);
  if (ti.dtype != DType::I32 && ti.dtype != DType::I64)
    return builder_.error(site.span, site.callee + ": indices must be an int32 or int64 tensor, got " +
                                         std::string(dtype_name(ti.dtype)) +
                                         " (make them with torch.randint(high, size))");
  if (tw.rank() != 2)
    return builder_.error(site.span, site.callee + ": weight must be 2-D (num_embeddings, embedding_dim), got shape " +
                                         shape_str(tw.shape));
  // An index known now that is outside the table: PyTorch raises at the call, so does tracing.
  if (std::optional<std::pair<double, double>> ids = known_extremes(indices)) {
    const int64_t rows = tw.dim(0);
    const double bad = ids->first < 0 ? ids->first : ids->second >= static_cast<double>(rows) ? ids->second : 0.0;
    if (ids->first < 0 || ids->second >= static_cast<double>(rows))
      return builder_.error(site.span, site.callee + ": index out of range in self (index " +
                                           std::to_string(static_cast<int64_t>(bad)) + ", the weight has " +
                                           std::to_string(rows) + " rows)");
  }
  Shape shape = ti.shape;
  shape.push_back(tw.shape[1]);
  return emit(TorchNodeSpec{"embedding", {indices, weight}, {}, {}, TensorType{shape, tw.dtype}}, site);
}

Expected<TracedValue> TorchLibrary::attention(const std::string& q, const std::string& k, const std::string& v,
                                              bool is_causal, std::optional<double> scale, bool enable_gqa,
                                              const CallSite& site) {
  const TensorType& tq = type(q);
  const TensorType& tk = type(k);
  const TensorType& tv = type(v);
  TESSERA_TRY(require_float(q, site));
  if (tk.dtype != tq.dtype || tv.dtype != tq.dtype)
    return builder_.error(site.span, site.callee + ": query, key and value must have the same dtype, got " +
                                         std::string(dtype_name(tq.dtype)) + ", " + std::string(dtype_name(tk.dtype)) +
                                         " and " + std::string(dtype_name(tv.dtype)));
  // The batch dims broadcast, as the matmuls of PyTorch's math attention do (a query with more
  // batch dims than key and value, or size-1 batch dims): each operand is expanded to them first.
  const int64_t inner = enable_gqa && tq.rank() >= 3 ? 3 : 2;  // dims that are not batch dims
  if (tq.rank() >= inner && tk.rank() >= inner && tv.rank() >= inner) {
    auto batch_of = [&](const TensorType& t) { return Shape(t.shape.begin(), t.shape.end() - inner); };
    Expected<Shape> batch = broadcast_shapes(batch_of(tq), batch_of(tk));
    if (batch) batch = broadcast_shapes(*batch, batch_of(tv));
    if (!batch)
      return builder_.error(site.span, site.callee + ": batch dimensions of query " + shape_str(tq.shape) + ", key " +
                                           shape_str(tk.shape) + " and value " + shape_str(tv.shape) + " do not broadcast");
    if (batch_of(tq) != *batch || batch_of(tk) != *batch || batch_of(tv) != *batch) {
      CallSite mid = site;
      mid.name_hint.clear();
      std::vector<std::string> expanded;
      for (const std::string& x : {q, k, v}) {
        std::vector<int64_t> sizes;
        for (const Dim& d : *batch) sizes.push_back(d.value());
        for (int64_t i = type(x).rank() - inner; i < type(x).rank(); ++i) sizes.push_back(type(x).dim(i));
        TESSERA_ASSIGN_OR_RETURN(TracedValue e, expand(x, sizes, mid));
        expanded.push_back(e.as<TensorValue>()->node);
      }
      return attention(expanded[0], expanded[1], expanded[2], is_causal, scale, enable_gqa, site);
    }
  }
  const int64_t r = tq.rank();
  if (r < 2 || tk.rank() != r || tv.rank() != r)
    return builder_.error(site.span, site.callee + ": query, key and value must have the same rank (at least 2), got " +
                                         shape_str(tq.shape) + ", " + shape_str(tk.shape) + " and " + shape_str(tv.shape));
  const bool gqa = enable_gqa && r >= 3;
  const int64_t batch_rank = gqa ? r - 3 : r - 2;
  for (int64_t i = 0; i < batch_rank; ++i)
    if (tk.dim(i) != tq.dim(i) || tv.dim(i) != tq.dim(i))
      return builder_.error(site.span, site.callee + ": batch dimensions of query " + shape_str(tq.shape) + ", key " +
                                           shape_str(tk.shape) + " and value " + shape_str(tv.shape) + " must be equal");
  if (gqa) {
    int64_t hq = tq.dim(r - 3), hk = tk.dim(r - 3);
    if (tv.dim(r - 3) != hk || hk == 0 || hq % hk != 0)
      return builder_.error(site.span, site.callee + ": with enable_gqa the query heads (" + std::to_string(hq) +
                                           ") must be a multiple of the key/value heads (" + std::to_string(hk) + ", " +
                                           std::to_string(tv.dim(r - 3)) + ")");
  }
  if (tk.dim(r - 1) != tq.dim(r - 1))
    return builder_.error(site.span, site.callee + ": query and key must have the same embedding size, got " +
                                         shape_str(tq.shape) + " and " + shape_str(tk.shape));
  if (tv.dim(r - 2) != tk.dim(r - 2))
    return builder_.error(site.span, site.callee + ": key and value must have the same sequence length, got " +
                                         shape_str(tk.shape) + " and " + shape_str(tv.shape));
  double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(tq.dim(r - 1))));
  Attrs attrs;
  attrs.set("is_causal", is_causal);
  attrs.set("scale", s);
  attrs.set("enable_gqa", enable_gqa);
  Shape out = tq.shape;
  out.back() = tv.shape.back();
  return emit(TorchNodeSpec{"scaled_dot_product_attention", {q, k, v}, {}, std::move(attrs), TensorType{out, tq.dtype}},
              site);
}

// ---- operand types PyTorch refuses ----------------------------------------------------------

Status TorchLibrary::require_exact_integer(const TracedValue& v, const CallSite& site) const {
  const auto* i = v.as<int64_t>();
  constexpr auto kExact = static_cast<int64_t>(kExactIntegerLimit);
  if (!i || (*i < kExact && *i > -kExact)) return Status::ok();
  return builder_.error(site.span, site.callee + ": the integer " + std::to_string(*i) +
                                       " is not below 2^53 in magnitude: Tessera computes integers exactly only "
                                       "below 2^53 (its CPU evaluators hold values as doubles)");
}

Status TorchLibrary::reject_like_pytorch(const std::string& target, const std::vector<TracedValue>& operands,
                                         const CallSite& site) const {
  // The dtype an operand takes part as: a tensor's own; a Python scalar's bool / int64 / float.
  auto dtype_of = [&](const TracedValue& v) -> std::optional<DType> {
    if (const auto* t = v.as<TensorValue>()) return type(t->node).dtype;
    if (v.is<bool>()) return DType::Bool;
    if (v.is<int64_t>()) return DType::I64;
    if (v.is<double>()) return DType::F32;
    return std::nullopt;
  };
  auto fail = [&](const std::string& message) { return builder_.error(site.span, site.callee + ": " + message); };
  if ((target == "silu" || target == "gelu") && !operands.empty()) {
    const DType t = *dtype_of(operands[0]);
    if (!dtype_is_float(t))
      return fail(target + " is not implemented for " + std::string(dtype_name(t)) +
                  " tensors (PyTorch: \"" + (target == "silu" ? "silu_cpu" : "GeluKernelImpl") +
                  "\" not implemented); it needs a floating-point input");
  }
  // Floor division, remainder and floor have no bool kernel in PyTorch (a bool tensor with an int
  // operand promotes to int64 and is fine).
  if ((target == "floor_divide" || target == "remainder") && operands.size() == 2 &&
      dtype_of(operands[0]) == DType::Bool && dtype_of(operands[1]) == DType::Bool)
    return fail(std::string("\"") + (target == "floor_divide" ? "div_floor_cpu" : "remainder_cpu") +
                "\" not implemented for 'Bool' (PyTorch has no bool floor division or remainder; convert "
                "with .long() first)");
  if (target == "floor" && !operands.empty() && dtype_of(operands[0]) == DType::Bool)
    return fail("\"floor_vml_cpu\" not implemented for 'Bool' (PyTorch has no floor of a bool tensor)");
  if (target == "neg" && !operands.empty() && dtype_of(operands[0]) == DType::Bool)
    return fail("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                "mask, use the `~` or `logical_not()` operator instead.");
  if (target == "sub" && operands.size() == 2) {
    const bool a = dtype_of(operands[0]) == DType::Bool, b = dtype_of(operands[1]) == DType::Bool;
    if (a && b)
      return fail("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                  "`logical_xor()` operator instead.");
    if (a || b)
      return fail("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert "
                  "a mask, use the `~` or `logical_not()` operator instead.");
  }
  // An integer (or bool) tensor to a negative Python int power; a tensor exponent is not checked.
  if (target == "pow" && operands.size() == 2 && operands[0].is<TensorValue>() &&
      !dtype_is_float(*dtype_of(operands[0]))) {
    const auto* exponent = operands[1].as<int64_t>();
    if (exponent && *exponent < 0) return fail("Integers to negative integer powers are not allowed.");
  }
  return Status::ok();
}

}  // namespace tessera::torch_expr

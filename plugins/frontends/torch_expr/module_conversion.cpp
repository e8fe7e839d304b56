// Module conversion and mode: the nn.Module methods that convert a module's parameters or switch
// its mode and return the module itself, so that they chain (`Block(64).to(torch.bfloat16).eval()`)
// or stand alone as statements (`model.half()`): half, float, double, bfloat16, to(device, dtype),
// cuda, cpu, eval, train and requires_grad_. Each applies to the module and to all its submodules:
// the items of nn.ModuleList / nn.Sequential and the modules a user object holds in its attributes
// (a plain Python list of modules is not a submodule in PyTorch, and is left alone as there).
// docs/torch-ops.md ("Module conversion and mode") states the semantics;
// tests/unit/torch_module_conversion_test.cpp checks them, and the ConvertModule* programs of the
// differential corpus run them through every IR level and in PyTorch.
#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include "tracer.h"

namespace tessera::torch_expr {
namespace {

struct FloatConversion {
  const char* method;
  DType dtype;
};
constexpr FloatConversion kFloatConversions[] = {
    {"half", DType::F16}, {"float", DType::F32}, {"double", DType::F64}, {"bfloat16", DType::BF16}};

const std::vector<std::string>& module_method_names() {
  static const std::vector<std::string> names = {"half", "float", "double", "bfloat16", "to",
                                                 "cuda", "cpu",   "eval",   "train",    "requires_grad_"};
  return names;
}

// As PyTorch prints a dtype: "torch.int64".
std::string torch_dtype(DType d) { return "torch." + std::string(dtype_name(d)); }

// PyTorch's device types (c10::DeviceType, in the order its message lists them).
const std::vector<std::string>& device_types() {
  static const std::vector<std::string> types = {"cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl",
                                                 "ideep", "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan",
                                                 "mps", "meta", "hpu", "mtia", "privateuseone"};
  return types;
}

// A device argument: a string ("cuda", "cuda:1", "cpu") or an int (a CUDA device index). Where
// tensors live is Tessera's decision, so a CPU or CUDA device changes nothing; a malformed one gets
// PyTorch's message and PyTorch's other device types are refused. With `cuda_only` (Module.cuda)
// a CPU device is refused too, as in PyTorch.
Status check_device(const SourceText& source, const std::string& callee, const TracedValue& v, const SourceSpan& span,
                    bool cuda_only) {
  if (const auto* index = v.as<int64_t>()) {
    if (*index < 0) return source.error(span, "Device index must not be negative");
    return Status::ok();
  }
  const auto* text = v.as<std::string>();
  if (!text || v.is<bool>())
    return source.error(span, callee + "(): expected a device (a string such as 'cuda' or an int), got " +
                                  describe_value(v));
  const std::string& s = *text;
  const size_t colon = s.find(':');
  const std::string type = s.substr(0, colon);
  const auto& types = device_types();
  if (std::find(types.begin(), types.end(), type) == types.end()) {
    std::string list;
    for (const std::string& t : types) list += (list.empty() ? "" : ", ") + t;
    return source.error(span, "Expected one of " + list + " device type at start of device string: " + s);
  }
  if (colon != std::string::npos) {
    const std::string index = s.substr(colon + 1);
    const bool digits = !index.empty() && index.size() <= 9 &&
                        std::all_of(index.begin(), index.end(), [](unsigned char c) { return std::isdigit(c); });
    if (!digits || (index.size() > 1 && index[0] == '0')) return source.error(span, "Invalid device string: '" + s + "'");
  }
  if (type != "cpu" && type != "cuda")
    return source.error(span, callee + "(): device '" + s + "' is not supported: Tessera compiles for CUDA GPUs (and "
                                       "runs programs on its CPU simulator); use 'cuda' or 'cpu'");
  if (cuda_only && type != "cuda") return source.error(span, "Invalid device, must be cuda device");
  return Status::ok();
}

// nn.Module.to's forms (PyTorch's torch._C._nn._parse_to): to(device=None, dtype=None,
// non_blocking=False), to(dtype, non_blocking=False), to(tensor, non_blocking=False), and the
// keyword memory_format=, which Tessera refuses (it chooses layouts itself). Only floating-point
// dtypes are accepted; `copy` is refused, as in PyTorch.
Expected<std::optional<DType>> parse_module_to(const SourceText& source, const GraphBuilder& builder,
                                               const std::vector<ArgumentValue>& args, const CallSite& site) {
  const std::string callee = "nn.Module.to";
  std::optional<DType> dtype;
  SourceSpan dtype_span = site.span;
  bool have_device = false, have_dtype = false, first_is_device = false, non_blocking_given = false;
  size_t positional = 0;
  auto take_dtype = [&](const TracedValue& v, const SourceSpan& span, bool keyword) -> Status {
    if (have_dtype) return source.error(span, callee + "() got multiple values for argument 'dtype'");
    have_dtype = true;
    if (keyword && v.is<NoneValue>()) return Status::ok();
    const auto* d = v.as<DTypeValue>();
    if (!d) return source.error(span, callee + "(): dtype must be a torch dtype such as torch.float16, got " + describe_value(v));
    dtype = d->dtype;
    dtype_span = span;
    return Status::ok();
  };
  auto take_device = [&](const TracedValue& v, const SourceSpan& span) -> Status {
    if (have_device) return source.error(span, callee + "() got multiple values for argument 'device'");
    have_device = true;
    if (v.is<NoneValue>()) return Status::ok();
    return check_device(source, callee, v, span, false);
  };
  for (const ArgumentValue& a : args) {
    if (!a.keyword.empty()) continue;
    const size_t index = positional++;
    if (index == 0) {
      if (a.value.is<DTypeValue>()) {
        TESSERA_TRY(take_dtype(a.value, a.span, false));
      } else if (const auto* t = a.value.as<TensorValue>()) {
        // to(tensor): the tensor's dtype (and device, which placement ignores).
        have_dtype = have_device = true;
        dtype = builder.type_of(t->node).dtype;
        dtype_span = a.span;
      } else if (a.value.is<std::string>() || a.value.is<int64_t>() || a.value.is<NoneValue>()) {
        first_is_device = true;
        TESSERA_TRY(take_device(a.value, a.span));
      } else {
        return source.error(a.span, callee + "() expects a device, a dtype or a tensor, got " + describe_value(a.value));
      }
    } else if (index == 1 && first_is_device && (a.value.is<DTypeValue>() || a.value.is<NoneValue>())) {
      TESSERA_TRY(take_dtype(a.value, a.span, true));
    } else if (a.value.is<bool>() && !non_blocking_given) {
      non_blocking_given = true;  // non_blocking follows the device/dtype/tensor
    } else if (a.value.is<bool>()) {
      return source.error(a.span, ".to() does not accept copy argument");
    } else {
      return source.error(a.span, callee + "() got an unexpected positional argument: " + describe_value(a.value));
    }
  }
  for (const ArgumentValue& a : args) {
    if (a.keyword.empty()) continue;
    const SourceSpan span = SourceSpan::cover(a.keyword_span, a.span);  // `dtype=torch.int64`
    if (a.keyword == "dtype") {
      TESSERA_TRY(take_dtype(a.value, span, true));
    } else if (a.keyword == "device") {
      TESSERA_TRY(take_device(a.value, span));
    } else if (a.keyword == "non_blocking") {
      if (non_blocking_given) return source.error(span, callee + "() got multiple values for argument 'non_blocking'");
      if (!a.value.is<bool>())
        return source.error(span, callee + "(): non_blocking must be True or False, got " + describe_value(a.value));
    } else if (a.keyword == "copy") {
      return source.error(span, ".to() does not accept copy argument");
    } else if (a.keyword == "memory_format") {
      if (!a.value.is<NoneValue>())
        return source.error(a.keyword_span, callee + "(memory_format=...) is not supported: Tessera chooses the "
                                                     "memory layout of every tensor itself");
    } else {
      return source.error(a.keyword_span, callee + "() got an unexpected keyword argument '" + a.keyword + "'");
    }
  }
  if (dtype && !dtype_is_float(*dtype))
    return source.error(dtype_span, "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=" +
                                        torch_dtype(*dtype));
  return dtype;
}

TracedValue module_value(const ModuleMethodValue& method) {
  return std::visit([](const auto& m) { return TracedValue(m); }, method.module);
}

}  // namespace

bool Tracer::is_module_method(const std::string& name) {
  const auto& names = module_method_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

Expected<TracedValue> Tracer::call_module_method(const ModuleMethodValue& method, const std::vector<ArgumentValue>& args,
                                                 const CallSite& site) {
  const TracedValue self = module_value(method);
  const std::string& name = method.method;
  ModuleChange change;
  if (name == "to") {
    TESSERA_ASSIGN_OR_RETURN(change.dtype, parse_module_to(source_, builder_, args, site));
  } else {
    static const CallSignature no_arguments("");
    static const CallSignature cuda_signature("device=None");
    static const CallSignature train_signature("mode=True");
    static const CallSignature requires_grad_signature("requires_grad=True");
    const CallSignature& signature = name == "cuda"             ? cuda_signature
                                     : name == "train"          ? train_signature
                                     : name == "requires_grad_" ? requires_grad_signature
                                                                : no_arguments;
    TESSERA_ASSIGN_OR_RETURN(BoundArguments a, signature.bind(args, site, source_));
    for (const FloatConversion& c : kFloatConversions)
      if (name == c.method) change.dtype = c.dtype;
    if (name == "cuda" && !a.is_none("device"))
      TESSERA_TRY(check_device(source_, "nn.Module.cuda", a.value("device"), a.span("device"), true));
    if (name == "eval") change.training = false;
    if (name == "train") {
      const auto* mode = a.value("mode").as<bool>();
      if (!mode) return a.error("mode", "training mode is expected to be boolean");
      change.training = *mode;
    }
    // Tessera computes no gradients: requires_grad_ only checks its argument.
    if (name == "requires_grad_") TESSERA_TRY(a.boolean("requires_grad").status());
  }
  TESSERA_TRY(change_module_tree(self, change, site));
  return self;
}

Status Tracer::change_module_tree(const TracedValue& root, const ModuleChange& change, const CallSite& site) {
  // Depth first, each module once (a module may be shared, or hold itself: `self.me = self`).
  std::vector<TracedValue> pending = {root};
  std::set<const ModuleSlot*> visited;
  while (!pending.empty()) {
    TracedValue module = std::move(pending.back());
    pending.pop_back();
    ModuleSlot* slot = module_slot(module);
    if (!slot || !visited.insert(slot).second) continue;
    if (change.training) slot->training = *change.training;
    std::vector<TracedValue> children;
    if (const auto* m = module.as<ModuleValue>()) {
      if (change.dtype) TESSERA_TRY(library_.convert_module_parameters(*m->module, *change.dtype, site));
    } else if (const auto* c = module.as<ContainerValue>()) {
      children = c->container->items;
    } else if (const auto* o = module.as<UserObjectValue>()) {
      // PyTorch's train(mode) assigns self.training, replacing what the program stored there.
      if (change.training) o->object->attrs.erase("training");
      for (const auto& [attr, value] : o->object->attrs)
        if (module_slot(value)) children.push_back(value);
    }
    pending.insert(pending.end(), children.rbegin(), children.rend());
  }
  return Status::ok();
}

}  // namespace tessera::torch_expr

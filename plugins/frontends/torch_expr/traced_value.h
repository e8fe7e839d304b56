// TracedValue: what a torch_expr expression evaluates to during symbolic tracing. Python scalars
// and tuples are folded at trace time; tensors are graph nodes; modules, functions and classes are
// references into the torch catalog or into objects the program created.
//
// Objects (module instances, user classes and their instances, user functions) live in the
// Tracer's arena for the whole trace; values refer to them with plain non-owning pointers, so
// reference cycles (`self.me = self`) cannot leak.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tessera/ir/attr.h"
#include "tessera/ir/type.h"

namespace tessera::torch_expr {

struct FunctionDef;
struct ClassDef;
struct TracedValue;

struct NoneValue {};
struct EllipsisValue {};
struct TensorValue {
  std::string node;  // graph node id
};
struct SequenceValue {
  std::vector<TracedValue> items;
  bool is_list = false;
  std::vector<std::string> field_names;  // a named tuple's fields (torch.max's values, indices)
};
// The tuple of pieces that x.split / x.chunk / x.unbind cut from one tensor, kept uncut: a piece's
// node is created when the program first uses that piece (TorchLibrary::piece), so the pieces it
// never reads cost no nodes. Copies share the TensorPieces, so a piece used twice is one node.
// Only the tracer's eval_keeping_pieces() returns it; eval() turns it into a SequenceValue.
struct TensorPieces;  // torch_library.h
struct TensorPiecesValue {
  std::shared_ptr<TensorPieces> pieces;
};
struct DTypeValue {
  DType dtype = DType::F32;
};
// `torch`, `torch.nn`, `torch.nn.functional`.
struct NamespaceValue {
  std::string path;
};
// A catalog function: "torch.matmul", "torch.nn.functional.softmax", or the builtin "super".
struct FunctionValue {
  std::string name;
};
// A catalog module class: "torch.nn.Linear", and "torch.nn.Module" (the base of user classes).
struct ModuleClassValue {
  std::string name;
};
struct BuiltinModule;
struct ModuleValue {
  BuiltinModule* module = nullptr;
};
// `x.mean` before it is called.
struct TensorMethodValue {
  std::string node;
  std::string method;
};
struct UserClass;
struct UserObject;
struct UserFunction;
struct UserClassValue {
  UserClass* cls = nullptr;
};
struct UserObjectValue {
  UserObject* object = nullptr;
};
// A `def` function; with `self` set it is a bound method.
struct UserFunctionValue {
  UserFunction* function = nullptr;
  UserObject* self = nullptr;
};
// `super()` inside a method of `cls` running on `object`: attribute lookups start at cls's base.
struct SuperValue {
  UserObject* object = nullptr;
  UserClass* cls = nullptr;
};
// `super().__init__` (nn.Module's constructor): calling it does nothing.
struct ModuleInitValue {};
// nn.ModuleList / nn.Sequential.
struct ModuleContainer;
struct ContainerValue {
  ModuleContainer* container = nullptr;
};
// `model.half`, `model.to`, `model.eval` before the call: an nn.Module method that converts the
// module (builtin, user object or container) or switches its mode, and returns the module itself.
struct ModuleMethodValue {
  std::variant<ModuleValue, UserObjectValue, ContainerValue> module;
  std::string method;  // "half", "to", "eval", ...
};

struct TracedValue {
  std::variant<NoneValue, bool, int64_t, double, std::string, EllipsisValue, TensorValue,
               SequenceValue, TensorPiecesValue, DTypeValue, NamespaceValue, FunctionValue, ModuleClassValue,
               ModuleValue, TensorMethodValue, UserClassValue, UserObjectValue, UserFunctionValue,
               SuperValue, ModuleInitValue, ContainerValue, ModuleMethodValue>
      v;

  TracedValue() = default;
  template <class T>
  TracedValue(T value) : v(std::move(value)) {}  // NOLINT: values convert implicitly

  template <class T> bool is() const { return std::holds_alternative<T>(v); }
  template <class T> const T* as() const { return std::get_if<T>(&v); }
  template <class T> T* as() { return std::get_if<T>(&v); }
  bool is_number() const { return is<int64_t>() || is<double>() || is<bool>(); }
  // int / float / bool as a double (callers check is_number first).
  double number() const;
};

// Where an nn.Module instance sits in the program's module tree: parameter paths are the names
// on the way down from the root ("up.weight"). A module is bound the first time it is stored in
// a variable or in an attribute of another module; unbound modules sit at the root.
struct ModuleSlot {
  const ModuleSlot* parent = nullptr;
  std::string name;
  bool bound = false;
  // Tessera traces inference, so modules start in eval mode (PyTorch's start in training mode);
  // `.train()` / `.eval()` set this for a module and its submodules. Only the `training`
  // attribute (`self.training`) and nn.Dropout read it.
  bool training = false;

  // "up" for self.up of an anonymous root object, "" for an anonymous root.
  std::string path() const;
  // Binds an unbound module (first binding wins, as the module's identity is its first name).
  void bind(const ModuleSlot* new_parent, std::string new_name);
};

// An instance of a catalog module (nn.Linear(64, 16)). Its parameters are created as graph
// constants on the first call, in `dtype` (the constructor's `dtype=` or the last conversion such
// as `.half()`), else float32. A conversion after the first call replaces each entry of
// param_nodes by a `cast` of it, so later calls use the converted values.
struct BuiltinModule : ModuleSlot {
  std::string kind;            // "Linear"
  std::string display;         // "nn.Linear(64, 16)" for messages
  Attrs config;                // the constructor arguments, normalized
  std::optional<DType> dtype;  // from dtype=... or the last conversion, else float32
  bool params_created = false;
  std::string prefix;          // the resolved path prefix of the parameters
  std::map<std::string, std::string> param_nodes;  // "weight" -> "p_weight"
};

struct UserFunction {
  const FunctionDef* def = nullptr;
  std::string qualified_name;           // "M.forward" or "f"
  std::vector<TracedValue> defaults;    // one per parameter; NoneValue also when required
  std::vector<bool> has_default;
};

struct UserClass {
  const ClassDef* def = nullptr;
  std::string name;
  UserClass* base = nullptr;  // a user base class; null when the base is nn.Module itself
  std::map<std::string, UserFunction*> methods;
  std::map<std::string, TracedValue> class_attrs;
};

struct UserObject : ModuleSlot {
  UserClass* cls = nullptr;
  std::map<std::string, TracedValue> attrs;
};

// nn.ModuleList / nn.Sequential: an ordered list of modules, each bound under its index, so that
// parameter paths read "layers.0.proj.weight" as in PyTorch's state_dict.
struct ModuleContainer : ModuleSlot {
  std::string kind;  // "ModuleList" or "Sequential"
  std::vector<TracedValue> items;
};

// The module-tree slot of a module value (builtin, user object or container), else null.
ModuleSlot* module_slot(const TracedValue& v);

// For messages: "int", "float", "tensor", "tuple", "module torch.nn", "nn.Linear module", ...
std::string describe_value(const TracedValue& v);

}  // namespace tessera::torch_expr

// Describing traced values for messages, and module-tree paths for parameter names.
#include "traced_value.h"

namespace tessera::torch_expr {

double TracedValue::number() const {
  if (const auto* i = as<int64_t>()) return static_cast<double>(*i);
  if (const auto* d = as<double>()) return *d;
  if (const auto* b = as<bool>()) return *b ? 1.0 : 0.0;
  return 0.0;
}

std::string ModuleSlot::path() const {
  std::string parent_path = parent ? parent->path() : std::string();
  if (parent_path.empty()) return name;
  if (name.empty()) return parent_path;
  return parent_path + "." + name;
}

void ModuleSlot::bind(const ModuleSlot* new_parent, std::string new_name) {
  if (bound) return;
  // A module may not become its own ancestor (`self.child.me = self`): keep it at the root then.
  for (const ModuleSlot* p = new_parent; p; p = p->parent)
    if (p == this) return;
  parent = new_parent;
  name = std::move(new_name);
  bound = true;
}

ModuleSlot* module_slot(const TracedValue& v) {
  if (const auto* m = v.as<ModuleValue>()) return m->module;
  if (const auto* o = v.as<UserObjectValue>()) return o->object;
  if (const auto* c = v.as<ContainerValue>()) return c->container;
  return nullptr;
}

namespace {

std::string short_namespace(const std::string& path) {
  if (path == "torch.nn") return "nn";
  if (path == "torch.nn.functional") return "F";
  return path;
}

// "torch.nn.Linear" -> "nn.Linear"; "torch.nn.functional.relu" -> "F.relu".
std::string short_name(const std::string& qualified) {
  size_t dot = qualified.rfind('.');
  if (dot == std::string::npos) return qualified;
  return short_namespace(qualified.substr(0, dot)) + "." + qualified.substr(dot + 1);
}

}  // namespace

std::string describe_value(const TracedValue& v) {
  struct Visitor {
    std::string operator()(const NoneValue&) const { return "None"; }
    std::string operator()(bool) const { return "bool"; }
    std::string operator()(int64_t) const { return "int"; }
    std::string operator()(double) const { return "float"; }
    std::string operator()(const std::string&) const { return "str"; }
    std::string operator()(const EllipsisValue&) const { return "ellipsis"; }
    std::string operator()(const TensorValue&) const { return "tensor"; }
    std::string operator()(const SequenceValue& s) const { return s.is_list ? "list" : "tuple"; }
    std::string operator()(const TensorPiecesValue&) const { return "tuple"; }
    std::string operator()(const DTypeValue&) const { return "torch.dtype"; }
    std::string operator()(const NamespaceValue& n) const { return "module " + n.path; }
    std::string operator()(const FunctionValue& f) const { return "function " + short_name(f.name); }
    std::string operator()(const ModuleClassValue& c) const { return "class " + short_name(c.name); }
    std::string operator()(const ModuleValue& m) const { return "nn." + m.module->kind + " module"; }
    std::string operator()(const TensorMethodValue& m) const { return "tensor method '" + m.method + "'"; }
    std::string operator()(const UserClassValue& c) const { return "class " + c.cls->name; }
    std::string operator()(const UserObjectValue& o) const { return "'" + o.object->cls->name + "' object"; }
    std::string operator()(const UserFunctionValue& f) const {
      return (f.self ? "method " : "function ") + f.function->qualified_name;
    }
    std::string operator()(const SuperValue&) const { return "super()"; }
    std::string operator()(const ModuleInitValue&) const { return "method nn.Module.__init__"; }
    std::string operator()(const ContainerValue& c) const { return "nn." + c.container->kind + " module"; }
    std::string operator()(const ModuleMethodValue& m) const { return "method nn.Module." + m.method; }
  };
  return std::visit(Visitor{}, v.v);
}

}  // namespace tessera::torch_expr

// The Python that model code is written in, beyond straight-line statements: `for`
// loops and comprehensions (unrolled at trace time, with a bound on the statements they run),
// `if` on trace-time values, the builtins range/len/enumerate/zip/list/tuple/float/int/abs/min/
// max/sum, the math module, torch.finfo, and nn.ModuleList / nn.Sequential.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "spelling_suggestion.h"
#include "tracer.h"

namespace tessera::torch_expr {
namespace {

// Loops are unrolled: this bounds the statements (and comprehension elements) they may run, so a
// `for i in range(10**9)` is an error instead of a hang.
constexpr size_t kMaxUnrolledStatements = 20000;
constexpr int64_t kMaxRangeLength = 1 << 16;

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names = {"range", "len",   "enumerate", "zip", "list", "tuple",
                                                 "float", "int",   "abs",       "min", "max",  "sum",
                                                 "bool",  "round", "isinstance"};
  return names;
}

}  // namespace

bool Tracer::is_builtin(const std::string& name) {
  const auto& names = builtin_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

Status Tracer::count_unrolled(const SourceSpan& span, size_t statements) {
  unrolled_statements_ += statements;
  if (unrolled_statements_ <= kMaxUnrolledStatements) return Status::ok();
  return source_.error(span, "loops and comprehensions unroll to more than " + std::to_string(kMaxUnrolledStatements) +
                                 " statements; Tessera traces them by unrolling, so the trip count must stay small");
}

Expected<std::vector<TracedValue>> Tracer::iterate(const TracedValue& v, const SourceSpan& span) {
  if (const auto* seq = v.as<SequenceValue>()) return seq->items;
  if (const auto* c = v.as<ContainerValue>()) return c->container->items;
  if (v.is<TensorValue>())
    return source_.error(span, "iterating over a tensor is not supported; use x.unbind(0) to get its rows");
  return source_.error(span, describe_value(v) + " is not iterable");
}

Status Tracer::exec_for(const StmtNode& stmt, const ForStmt& loop, Frame& frame, std::optional<TracedValue>& returned) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue iter, eval(*loop.iter, frame));
  TESSERA_ASSIGN_OR_RETURN(std::vector<TracedValue> items, iterate(iter, loop.iter->span));
  for (const TracedValue& item : items) {
    TESSERA_TRY(count_unrolled(stmt.span, loop.body.size()));
    TESSERA_TRY(assign_to(*loop.target, item, frame));
    TESSERA_TRY(exec_block(loop.body, frame, returned));
    if (returned) break;
  }
  return Status::ok();
}

Status Tracer::exec_if(const IfStmt& branch, Frame& frame, std::optional<TracedValue>& returned) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue cond, eval(*branch.cond, frame));
  TESSERA_ASSIGN_OR_RETURN(bool taken, truth(cond, branch.cond->span));
  return exec_block(taken ? branch.body : branch.orelse, frame, returned);
}

Expected<TracedValue> Tracer::eval_comprehension(const ExprNode& e, const ComprehensionExpr& comp, Frame& frame) {
  TESSERA_ASSIGN_OR_RETURN(TracedValue iter, eval(*comp.iter, frame));
  TESSERA_ASSIGN_OR_RETURN(std::vector<TracedValue> items, iterate(iter, comp.iter->span));
  // The loop variable lives in the comprehension's own scope (Python 3), so it neither leaks nor
  // names a module it happens to hold.
  std::map<std::string, TracedValue> scope = frame.locals ? *frame.locals : std::map<std::string, TracedValue>{};
  Frame inner{&scope, frame.self, frame.method_class};
  SequenceValue out;
  out.is_list = true;
  for (const TracedValue& item : items) {
    TESSERA_TRY(count_unrolled(e.span, 1));
    TESSERA_TRY(assign_to(*comp.target, item, inner));
    bool keep = true;
    for (const ExprPtr& c : comp.conditions) {
      TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*c, inner));
      TESSERA_ASSIGN_OR_RETURN(keep, truth(v, c->span));
      if (!keep) break;
    }
    if (!keep) continue;
    TESSERA_ASSIGN_OR_RETURN(TracedValue v, eval(*comp.element, inner));
    out.items.push_back(std::move(v));
  }
  return TracedValue(std::move(out));
}

// ---- builtins ----------------------------------------------------------------------------------

Expected<TracedValue> Tracer::call_builtin(const std::string& name, const std::vector<ArgumentValue>& args,
                                           const CallSite& site, Frame& frame) {
  auto arity = [&](size_t lo, size_t hi) -> Status {
    for (const ArgumentValue& a : args)
      if (!a.keyword.empty())
        return source_.error(a.keyword_span, name + "() takes no keyword arguments here");
    if (args.size() >= lo && args.size() <= hi) return Status::ok();
    return source_.error(site.span, name + "() takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " +
                                                                                          std::to_string(hi)) +
                                        " argument(s), got " + std::to_string(args.size()));
  };
  auto integer = [&](const ArgumentValue& a) -> Expected<int64_t> {
    if (a.value.is<int64_t>() || a.value.is<bool>()) return static_cast<int64_t>(a.value.number());
    return source_.error(a.span, name + "(): expected an int, got " + describe_value(a.value));
  };
  if (name == "range") {
    TESSERA_TRY(arity(1, 3));
    int64_t start = 0, stop = 0, step = 1;
    if (args.size() == 1) {
      TESSERA_ASSIGN_OR_RETURN(stop, integer(args[0]));
    } else {
      TESSERA_ASSIGN_OR_RETURN(start, integer(args[0]));
      TESSERA_ASSIGN_OR_RETURN(stop, integer(args[1]));
      if (args.size() == 3) {
        TESSERA_ASSIGN_OR_RETURN(step, integer(args[2]));
      }
    }
    if (step == 0) return source_.error(args[2].span, "range() arg 3 must not be zero");
    SequenceValue out;
    out.is_list = true;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (static_cast<int64_t>(out.items.size()) >= kMaxRangeLength)
        return source_.error(site.span, "range() is too long to unroll (more than " + std::to_string(kMaxRangeLength) +
                                            " items)");
      out.items.push_back(i);
    }
    return TracedValue(std::move(out));
  }
  if (name == "len") {
    TESSERA_TRY(arity(1, 1));
    const TracedValue& v = args[0].value;
    if (const auto* seq = v.as<SequenceValue>()) return TracedValue(static_cast<int64_t>(seq->items.size()));
    if (const auto* c = v.as<ContainerValue>()) return TracedValue(static_cast<int64_t>(c->container->items.size()));
    if (const auto* s = v.as<std::string>()) return TracedValue(static_cast<int64_t>(s->size()));
    if (const auto* t = v.as<TensorValue>()) {
      (void)t;
      TESSERA_ASSIGN_OR_RETURN(TracedValue shape, library_.tensor_attribute(t->node, "shape", args[0].span, site));
      const auto& dims = shape.as<SequenceValue>()->items;
      if (dims.empty()) return source_.error(args[0].span, "len() of a 0-d tensor");
      return dims[0];
    }
    return source_.error(args[0].span, "object of type " + describe_value(v) + " has no len()");
  }
  if (name == "enumerate" || name == "zip" || name == "list" || name == "tuple") {
    if (name == "list" || name == "tuple") {
      TESSERA_TRY(arity(0, 1));
      SequenceValue out;
      out.is_list = name == "list";
      if (!args.empty()) {
        TESSERA_ASSIGN_OR_RETURN(out.items, iterate(args[0].value, args[0].span));
      }
      return TracedValue(std::move(out));
    }
    if (name == "enumerate") {
      int64_t start = 0;
      std::vector<TracedValue> items;
      for (const ArgumentValue& a : args) {
        if (a.keyword == "start" || (a.keyword.empty() && &a != &args[0])) {
          TESSERA_ASSIGN_OR_RETURN(start, integer(a));
        } else if (a.keyword.empty()) {
          TESSERA_ASSIGN_OR_RETURN(items, iterate(a.value, a.span));
        } else {
          return source_.error(a.keyword_span, "enumerate() got an unexpected keyword argument '" + a.keyword + "'");
        }
      }
      if (args.empty()) return source_.error(site.span, "enumerate() missing its iterable");
      SequenceValue out;
      out.is_list = true;
      for (size_t i = 0; i < items.size(); ++i)
        out.items.push_back(SequenceValue{{TracedValue(start + static_cast<int64_t>(i)), items[i]}, false, {}});
      return TracedValue(std::move(out));
    }
    TESSERA_TRY(arity(1, 8));
    std::vector<std::vector<TracedValue>> lists;
    size_t n = std::numeric_limits<size_t>::max();
    for (const ArgumentValue& a : args) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<TracedValue> items, iterate(a.value, a.span));
      n = std::min(n, items.size());
      lists.push_back(std::move(items));
    }
    SequenceValue out;
    out.is_list = true;
    for (size_t i = 0; i < n; ++i) {
      SequenceValue row;
      for (const auto& l : lists) row.items.push_back(l[i]);
      out.items.push_back(std::move(row));
    }
    return TracedValue(std::move(out));
  }
  if (name == "float" || name == "int" || name == "bool" || name == "round") {
    TESSERA_TRY(arity(name == "round" ? 1 : 0, name == "round" ? 2 : 1));
    if (args.empty()) return name == "float" ? TracedValue(0.0) : name == "int" ? TracedValue(int64_t{0}) : TracedValue(false);
    const TracedValue& v = args[0].value;
    if (v.is<TensorValue>())
      return source_.error(args[0].span, name + "() of a traced tensor needs its value, which is unknown at trace time");
    if (name == "float") {
      if (const auto* s = v.as<std::string>()) {
        std::string t = *s;
        std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (t == "inf" || t == "+inf" || t == "infinity") return TracedValue(std::numeric_limits<double>::infinity());
        if (t == "-inf" || t == "-infinity") return TracedValue(-std::numeric_limits<double>::infinity());
        if (t == "nan") return TracedValue(std::numeric_limits<double>::quiet_NaN());
        try {
          size_t used = 0;
          double d = std::stod(*s, &used);
          if (used == s->size()) return TracedValue(d);
        } catch (...) {
        }
        return source_.error(args[0].span, "could not convert string to float: '" + *s + "'");
      }
      if (!v.is_number()) return source_.error(args[0].span, "float() argument must be a number, got " + describe_value(v));
      return TracedValue(v.number());
    }
    if (name == "bool") {
      TESSERA_ASSIGN_OR_RETURN(bool b, truth(v, args[0].span));
      return TracedValue(b);
    }
    if (!v.is_number()) return source_.error(args[0].span, name + "() argument must be a number, got " + describe_value(v));
    double d = v.number();
    if (name == "round" && args.size() == 2) {
      TESSERA_ASSIGN_OR_RETURN(int64_t digits, integer(args[1]));
      double scale = std::pow(10.0, static_cast<double>(digits));
      return TracedValue(std::nearbyint(d * scale) / scale);
    }
    if (!std::isfinite(d)) return source_.error(args[0].span, "cannot convert " + std::to_string(d) + " to an integer");
    d = name == "round" ? std::nearbyint(d) : std::trunc(d);  // round() is banker's rounding, int() truncates
    if (std::fabs(d) >= 9.2e18) return source_.error(args[0].span, "integer too large");
    return TracedValue(static_cast<int64_t>(d));
  }
  if (name == "abs") {
    TESSERA_TRY(arity(1, 1));
    const TracedValue& v = args[0].value;
    if (v.is<TensorValue>()) return library_.call_function("torch.abs", args, site);
    if (v.is<double>()) return TracedValue(std::fabs(v.number()));
    if (v.is_number()) {
      int64_t i = static_cast<int64_t>(v.number());
      if (i == std::numeric_limits<int64_t>::min()) return source_.error(site.span, "integer overflow in abs()");
      return TracedValue(i < 0 ? -i : i);
    }
    return source_.error(args[0].span, "bad operand type for abs(): " + describe_value(v));
  }
  if (name == "min" || name == "max" || name == "sum") {
    std::vector<TracedValue> items;
    if (args.size() == 1) {
      TESSERA_ASSIGN_OR_RETURN(items, iterate(args[0].value, args[0].span));
    } else {
      for (const ArgumentValue& a : args) items.push_back(a.value);
    }
    if (name == "sum") {
      TracedValue total = int64_t{0};
      for (const TracedValue& v : items) {
        if (total.is<TensorValue>() || v.is<TensorValue>()) {
          CallSite s{"add", site.span, site.name_hint};
          TESSERA_ASSIGN_OR_RETURN(total, library_.binary(BinaryOp::Add, total, v, s));
        } else {
          TESSERA_ASSIGN_OR_RETURN(total, fold_binary(BinaryOp::Add, total, v, site.span, site.span));
        }
      }
      return total;
    }
    if (items.empty()) return source_.error(site.span, name + "() arg is an empty sequence");
    TracedValue best = items[0];
    for (size_t i = 1; i < items.size(); ++i) {
      if (items[i].is<TensorValue>() || best.is<TensorValue>())
        return source_.error(site.span, "builtin " + name + "() on tensors is not supported; use torch." +
                                            (name == "min" ? "minimum" : "maximum"));
      TESSERA_ASSIGN_OR_RETURN(TracedValue less, fold_compare(CompareOp::Lt, items[i], best, site.span));
      if (*less.as<bool>() == (name == "min")) best = items[i];
    }
    return best;
  }
  if (name.rfind("math.", 0) == 0) {
    const std::string fn = name.substr(5);
    const bool binary = fn == "pow";
    if (fn == "prod") {
      TESSERA_TRY(arity(1, 1));
      TESSERA_ASSIGN_OR_RETURN(std::vector<TracedValue> items, iterate(args[0].value, args[0].span));
      TracedValue total = int64_t{1};
      for (const TracedValue& v : items) {
        TESSERA_ASSIGN_OR_RETURN(total, fold_binary(BinaryOp::Mul, total, v, site.span, site.span));
      }
      return total;
    }
    TESSERA_TRY(arity(binary ? 2 : 1, binary ? 2 : 1));
    for (const ArgumentValue& a : args)
      if (!a.value.is_number())
        return source_.error(a.span, "math." + fn + "() needs a number (a traced tensor's value is unknown at trace time; "
                                                    "use torch." + fn + "), got " + describe_value(a.value));
    const double x = args[0].value.number();
    if (fn == "ceil" || fn == "floor" || fn == "isqrt") {
      if (!std::isfinite(x)) return source_.error(args[0].span, "cannot convert " + std::to_string(x) + " to an integer");
      if (fn == "isqrt" && (x < 0 || !args[0].value.is<int64_t>()))
        return source_.error(args[0].span, "math.isqrt() needs a non-negative int");
      double r = fn == "ceil" ? std::ceil(x) : fn == "floor" ? std::floor(x) : std::floor(std::sqrt(x));
      if (fn == "isqrt") {
        int64_t i = static_cast<int64_t>(r);
        while (i > 0 && i * i > static_cast<int64_t>(x)) --i;
        while ((i + 1) * (i + 1) <= static_cast<int64_t>(x)) ++i;
        return TracedValue(i);
      }
      if (std::fabs(r) >= 9.2e18) return source_.error(args[0].span, "integer too large");
      return TracedValue(static_cast<int64_t>(r));
    }
    if ((fn == "sqrt" && x < 0) || ((fn == "log" || fn == "log2" || fn == "log10") && x <= 0))
      return source_.error(args[0].span, "math domain error");
    if (fn == "sqrt") return TracedValue(std::sqrt(x));
    if (fn == "exp") return TracedValue(std::exp(x));
    if (fn == "log") return TracedValue(std::log(x));
    if (fn == "log2") return TracedValue(std::log2(x));
    if (fn == "log10") return TracedValue(std::log10(x));
    if (fn == "cos") return TracedValue(std::cos(x));
    if (fn == "sin") return TracedValue(std::sin(x));
    if (fn == "tan") return TracedValue(std::tan(x));
    if (fn == "atan") return TracedValue(std::atan(x));
    if (fn == "tanh") return TracedValue(std::tanh(x));
    if (fn == "fabs") return TracedValue(std::fabs(x));
    if (fn == "pow") return TracedValue(std::pow(x, args[1].value.number()));
  }
  if (name == "isinstance") {
    TESSERA_TRY(arity(2, 2));
    return source_.error(site.span, "isinstance() is not supported");
  }
  if (name == "finfo") {
    // torch.finfo(dtype): a named tuple of the float type's limits.
    if (args.size() > 1) return source_.error(site.span, "torch.finfo() takes at most one argument");
    DType dtype = DType::F32;
    if (!args.empty()) {
      const auto* d = args[0].value.as<DTypeValue>();
      if (!d) return source_.error(args[0].span, "torch.finfo() expects a dtype, got " + describe_value(args[0].value));
      dtype = d->dtype;
    }
    double max = 0, eps = 0, tiny = 0;
    int64_t bits = 32;
    switch (dtype) {
      case DType::F32: max = 3.4028234663852886e+38; eps = 1.1920928955078125e-07; tiny = 1.1754943508222875e-38; break;
      case DType::F16: max = 65504.0; eps = 0.0009765625; tiny = 6.103515625e-05; bits = 16; break;
      case DType::BF16: max = 3.3895313892515355e+38; eps = 0.0078125; tiny = 1.1754943508222875e-38; bits = 16; break;
      case DType::F64: max = 1.7976931348623157e+308; eps = 2.220446049250313e-16; tiny = 2.2250738585072014e-308; bits = 64; break;
      case DType::I32: case DType::I64: case DType::Bool:
        return source_.error(args[0].span, "torch.finfo() requires a floating point dtype, got " +
                                               std::string(dtype_name(dtype)) + " (use torch.iinfo)");
    }
    return TracedValue(SequenceValue{{TracedValue(-max), TracedValue(max), TracedValue(eps), TracedValue(tiny),
                                      TracedValue(tiny), TracedValue(bits), TracedValue(DTypeValue{dtype})},
                                     false,
                                     {"min", "max", "eps", "tiny", "smallest_normal", "bits", "dtype"}});
  }
  (void)frame;
  return source_.error(site.span, "builtin " + name + "() is not supported");
}

// ---- math --------------------------------------------------------------------------------------

Expected<TracedValue> Tracer::math_member(const std::string& name, const SourceSpan& span) {
  static const std::map<std::string, double> constants = {{"pi", std::numbers::pi},
                                                          {"e", std::numbers::e},
                                                          {"tau", 2 * std::numbers::pi},
                                                          {"inf", std::numeric_limits<double>::infinity()},
                                                          {"nan", std::numeric_limits<double>::quiet_NaN()}};
  static const std::vector<std::string> functions = {"sqrt", "exp", "log", "log2", "log10", "cos", "sin", "tan",
                                                     "atan", "tanh", "pow", "ceil", "floor", "fabs", "isqrt", "prod"};
  if (auto it = constants.find(name); it != constants.end()) return TracedValue(it->second);
  if (std::find(functions.begin(), functions.end(), name) != functions.end())
    return TracedValue(FunctionValue{"builtins.math." + name});
  std::vector<std::string> names = functions;
  for (const auto& [n, v] : constants) names.push_back(n);
  return source_.error(span, "math has no supported member '" + name + "'" + did_you_mean(name, names));
}

// ---- nn.ModuleList / nn.Sequential -------------------------------------------------------------

Expected<TracedValue> Tracer::construct_container(const std::string& kind, const std::vector<ArgumentValue>& args,
                                                  const CallSite& site) {
  auto c = std::make_unique<ModuleContainer>();
  c->kind = kind;
  std::vector<ArgumentValue> modules;
  if (kind == "ModuleList") {
    if (args.size() > 1 || (!args.empty() && !args[0].keyword.empty() && args[0].keyword != "modules"))
      return source_.error(site.span, "nn.ModuleList() takes one iterable of modules");
    if (!args.empty()) {
      TESSERA_ASSIGN_OR_RETURN(std::vector<TracedValue> items, iterate(args[0].value, args[0].span));
      for (TracedValue& v : items) modules.push_back(ArgumentValue{"", {}, std::move(v), args[0].span});
    }
  } else {
    for (const ArgumentValue& a : args) {
      if (!a.keyword.empty()) return source_.error(a.keyword_span, "nn.Sequential() takes modules as positional arguments");
      modules.push_back(a);
    }
  }
  for (const ArgumentValue& a : modules) {
    ModuleSlot* slot = module_slot(a.value);
    if (!slot) return source_.error(a.span, "nn." + kind + "() holds modules, got " + describe_value(a.value));
    c->items.push_back(a.value);
  }
  containers_.push_back(std::move(c));
  ModuleContainer* container = containers_.back().get();
  // Each module is named by its index under the container ("layers.0").
  for (size_t i = 0; i < container->items.size(); ++i) module_slot(container->items[i])->bind(container, std::to_string(i));
  return TracedValue(ContainerValue{container});
}

Expected<TracedValue> Tracer::container_item(ModuleContainer& c, const TracedValue& index, const SourceSpan& span) {
  if (!index.is<int64_t>() && !index.is<bool>())
    return source_.error(span, "nn." + c.kind + " indices must be integers, got " + describe_value(index));
  const int64_t n = static_cast<int64_t>(c.items.size());
  int64_t i = static_cast<int64_t>(index.number());
  if (i < -n || i >= n) return source_.error(span, "index " + std::to_string(i) + " is out of range for an nn." + c.kind +
                                                       " of " + std::to_string(n) + " modules");
  return c.items[static_cast<size_t>(i < 0 ? i + n : i)];
}

}  // namespace tessera::torch_expr

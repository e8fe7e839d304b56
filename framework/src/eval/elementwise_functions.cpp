// The scalar meaning of every elementwise function name (shared by Torch elementwise targets and
// Tensor IR ElementwiseOp fns), in double precision.
#include "elementwise_functions.h"

#include <cmath>
#include <map>

#include "tessera/eval/reference_evaluator.h"

namespace tessera {
namespace {

const std::map<std::string, ElementwiseFn>& elementwise_fns() {
  using A = const std::vector<double>&;
  static const std::map<std::string, ElementwiseFn> fns = {
      {"identity", {1, [](A a) { return a[0]; }}},
      // A conversion: the value is unchanged here; the typed definition it feeds (Assign's result
      // type) does the rounding to f16/bf16 or the truncation to an integer.
      {"cast", {1, [](A a) { return a[0]; }}},
      {"neg", {1, [](A a) { return -a[0]; }}},
      {"exp", {1, [](A a) { return std::exp(a[0]); }}},
      {"log", {1, [](A a) { return std::log(a[0]); }}},
      {"sqrt", {1, [](A a) { return std::sqrt(a[0]); }}},
      {"rsqrt", {1, [](A a) { return 1.0 / std::sqrt(a[0]); }}},
      {"tanh", {1, [](A a) { return std::tanh(a[0]); }}},
      {"sigmoid", {1, [](A a) { return 1.0 / (1.0 + std::exp(-a[0])); }}},
      {"abs", {1, [](A a) { return std::fabs(a[0]); }}},
      {"reciprocal", {1, [](A a) { return 1.0 / a[0]; }}},
      {"erf", {1, [](A a) { return std::erf(a[0]); }}},
      {"relu", {1, [](A a) { return a[0] > 0.0 ? a[0] : (std::isnan(a[0]) ? a[0] : 0.0); }}},
      {"silu", {1, [](A a) { return a[0] / (1.0 + std::exp(-a[0])); }}},
      {"sin", {1, [](A a) { return std::sin(a[0]); }}},
      {"cos", {1, [](A a) { return std::cos(a[0]); }}},
      {"square", {1, [](A a) { return a[0] * a[0]; }}},
      {"logical_not", {1, [](A a) { return a[0] == 0.0 ? 1.0 : 0.0; }}},
      {"add", {2, [](A a) { return a[0] + a[1]; }}},
      {"sub", {2, [](A a) { return a[0] - a[1]; }}},
      {"mul", {2, [](A a) { return a[0] * a[1]; }}},
      {"div", {2, [](A a) { return a[0] / a[1]; }}},
      {"pow", {2, [](A a) { return std::pow(a[0], a[1]); }}},
      // PyTorch propagates NaN through maximum/minimum (unlike std::fmax).
      {"maximum", {2, [](A a) { return std::isnan(a[0]) || std::isnan(a[1]) ? NAN : std::max(a[0], a[1]); }}},
      {"minimum", {2, [](A a) { return std::isnan(a[0]) || std::isnan(a[1]) ? NAN : std::min(a[0], a[1]); }}},
      {"lt", {2, [](A a) { return a[0] < a[1] ? 1.0 : 0.0; }}},
      {"le", {2, [](A a) { return a[0] <= a[1] ? 1.0 : 0.0; }}},
      {"eq", {2, [](A a) { return a[0] == a[1] ? 1.0 : 0.0; }}},
      {"ne", {2, [](A a) { return a[0] != a[1] ? 1.0 : 0.0; }}},
      {"gt", {2, [](A a) { return a[0] > a[1] ? 1.0 : 0.0; }}},
      {"ge", {2, [](A a) { return a[0] >= a[1] ? 1.0 : 0.0; }}},
      {"logical_and", {2, [](A a) { return a[0] != 0.0 && a[1] != 0.0 ? 1.0 : 0.0; }}},
      {"logical_or", {2, [](A a) { return a[0] != 0.0 || a[1] != 0.0 ? 1.0 : 0.0; }}},
      {"where", {3, [](A a) { return a[0] != 0.0 ? a[1] : a[2]; }}},
  };
  return fns;
}

}  // namespace

Expected<const ElementwiseFn*> find_elementwise_fn(const std::string& fn, size_t arity) {
  const auto& fns = elementwise_fns();
  auto it = fns.find(fn);
  if (it == fns.end()) return make_error("unknown elementwise function '" + fn + "'");
  if (arity != it->second.arity)
    return make_error("elementwise function '" + fn + "' takes " + std::to_string(it->second.arity) +
                      " argument(s), got " + std::to_string(arity));
  return &it->second;
}

Expected<double> apply_elementwise_fn(const std::string& fn, const std::vector<double>& args) {
  TESSERA_ASSIGN_OR_RETURN(const ElementwiseFn* f, find_elementwise_fn(fn, args.size()));
  return f->apply(args);
}

}  // namespace tessera

// compare_values: max absolute / relative error between two sets of node values (integer and bool
// tensors: exact, any difference is an infinite relative error).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tessera/eval/reference_evaluator.h"
#include "tessera/support/internal_check.h"

namespace tessera {

std::string ValueComparison::str() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "max abs %.3g, max rel %.3g", max_abs_error, max_rel_error);
  std::string s = buf;
  if (!worst_node.empty()) s += " at " + worst_node + "[" + std::to_string(worst_flat_index) + "]";
  return s + " over " + std::to_string(elements) + " elements";
}

Expected<ValueComparison> compare_values(const ValueMap& expected, const ValueMap& actual,
                                         const std::vector<std::string>& names, double rel_floor) {
  std::vector<std::string> ids = names;
  if (ids.empty()) {
    for (const auto& [id, value] : expected)
      if (actual.count(id)) ids.push_back(id);
    if (ids.empty()) return make_error("compare_values: the two value sets have no node in common");
  }
  ValueComparison c;
  for (const std::string& id : ids) {
    auto e = expected.find(id);
    auto a = actual.find(id);
    if (e == expected.end()) return make_error("compare_values: no expected value for '" + id + "'").at_node(id);
    if (a == actual.end()) return make_error("compare_values: no actual value for '" + id + "'").at_node(id);
    if (e->second.type.shape != a->second.type.shape || e->second.data.size() != a->second.data.size())
      return make_error("compare_values: '" + id + "' is " + a->second.type.str() + " but " +
                        e->second.type.str() + " was expected")
          .at_node(id);
    // Integers and bools must match exactly: any difference is an infinite relative error, so no
    // tolerance passes it (a relative measure would let a large value be off by a few).
    const bool exact = !dtype_is_float(e->second.type.dtype) || !dtype_is_float(a->second.type.dtype);
    for (size_t i = 0; i < e->second.data.size(); ++i) {
      double ev = e->second.data[i];
      double av = a->second.data[i];
      double abs_err;
      if (std::isnan(ev) || std::isnan(av)) {
        abs_err = std::isnan(ev) && std::isnan(av) ? 0.0 : INFINITY;
      } else if (std::isinf(ev) || std::isinf(av)) {
        abs_err = ev == av ? 0.0 : INFINITY;
      } else {
        abs_err = std::fabs(av - ev);
      }
      double rel_err = abs_err == 0.0 ? 0.0 : exact ? INFINITY : abs_err / std::max(std::fabs(ev), rel_floor);
      c.max_abs_error = std::max(c.max_abs_error, abs_err);
      if (rel_err > c.max_rel_error || c.worst_node.empty()) {
        if (rel_err > c.max_rel_error) c.max_rel_error = rel_err;
        c.worst_node = id;
        c.worst_flat_index = static_cast<int64_t>(i);
      }
      ++c.elements;
    }
  }
  return c;
}



Expected<ValueComparison> compare_output(const ValueMap& expected, const ValueMap& actual,
                                         const std::string& name) {
  auto e = expected.find(name);
  if (e == expected.end()) return make_error("compare_output: no expected value for '" + name + "'").at_node(name);
  double scale = 0.0;
  for (double v : e->second.data) {
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  }
  return compare_values(expected, actual, {name}, std::max(kOutputRelFloorScale * scale, 1e-30));
}

double default_output_rtol(DType dtype) {
  switch (dtype) {
    case DType::F16: return 5e-3;
    case DType::BF16: return 2e-2;
    case DType::F64: return 1e-9;  // both sides compute in double; only the summation order differs
    case DType::F32: case DType::I32: case DType::I64: case DType::Bool: return 1e-4;
  }
  TESSERA_UNREACHABLE("a DType value is one of the declared dtypes");
}

}  // namespace tessera

// compare_values: max absolute / relative error between two sets of node values (integer and bool
// tensors: exact, any difference is an infinite relative error); the output check's tolerance policy.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/op.h"
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

OutputTolerance dtype_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16: return {dtype, 0x1p-7, 1.0, 0x1p-14};
    case DType::BF16: return {dtype, 0x1p-4, 1.0, 0x1p-126};
    case DType::F32: return {dtype, 1e-4, 0.1, 0x1p-126};
    case DType::F64: return {dtype, 1e-9, 1e-3, 0x1p-1022};
    case DType::I32: case DType::I64: case DType::Bool: return {dtype, 0.0, 0.0, 0.0};
  }
  TESSERA_UNREACHABLE("a DType value is one of the declared dtypes");
}

double default_output_rtol(DType dtype) { return dtype_tolerance(dtype).rtol; }

namespace {

// A Torch IR node whose elements are elements of its inputs (a view, a copy, a gather): it rounds
// nothing, so its dtype is no precision of the path (a bf16 input unsqueezed and cast to f32 is f32).
bool moves_elements_only(const Node& n) {
  const auto* op = n.op_as<TorchOp>();
  if (!op) return false;
  static const std::set<std::string, std::less<>> kMoves = {"reshape", "unsqueeze", "permute", "transpose",
                                                            "expand",  "slice",     "cat",     "embedding"};
  return kMoves.count(op->target) > 0;
}

}  // namespace

OutputTolerance output_tolerance(const Graph& g, const std::string& id) {
  const Node* out = g.find(id);
  if (!out) return dtype_tolerance(DType::F32);
  if (!dtype_is_float(out->type.dtype)) return dtype_tolerance(out->type.dtype);
  OutputTolerance t = dtype_tolerance(out->type.dtype);
  // Every computed node the output depends on (a DAG: each node visited once).
  std::vector<const Node*> stack = {out};
  std::set<std::string> seen = {id};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    const bool given = n->op_as<InputOp>() || n->op_as<ConstantOp>();
    if (!given && !moves_elements_only(*n) && dtype_is_float(n->type.dtype)) {
      const OutputTolerance d = dtype_tolerance(n->type.dtype);
      if (d.rtol > t.rtol) {
        t.rtol = d.rtol;
        t.precision = d.precision;
      }
      t.rms_fraction = std::max(t.rms_fraction, d.rms_fraction);
      t.smallest_normal = std::max(t.smallest_normal, d.smallest_normal);
    }
    for (const std::string& in : n->inputs)
      if (const Node* m = g.find(in); m && seen.insert(in).second) stack.push_back(m);
  }
  return t;
}

Expected<ValueComparison> compare_output(const ValueMap& expected, const ValueMap& actual, const std::string& name,
                                         const OutputTolerance& tolerance) {
  auto e = expected.find(name);
  if (e == expected.end()) return make_error("compare_output: no expected value for '" + name + "'").at_node(name);
  double sum_squares = 0.0;
  int64_t finite = 0;
  for (double v : e->second.data) {
    if (!std::isfinite(v)) continue;
    sum_squares += v * v;
    ++finite;
  }
  const double rms = finite > 0 ? std::sqrt(sum_squares / static_cast<double>(finite)) : 0.0;
  const double floor = std::max({tolerance.rms_fraction * rms, tolerance.smallest_normal, 1e-300});
  return compare_values(expected, actual, {name}, floor);
}

Expected<ValueComparison> compare_output(const ValueMap& expected, const ValueMap& actual,
                                         const std::string& name) {
  auto e = expected.find(name);
  if (e == expected.end()) return make_error("compare_output: no expected value for '" + name + "'").at_node(name);
  return compare_output(expected, actual, name, dtype_tolerance(e->second.type.dtype));
}

}  // namespace tessera

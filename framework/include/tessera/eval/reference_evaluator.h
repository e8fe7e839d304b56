// The CPU evaluators: what every IR level is checked against.
//
//   evaluate_reference  runs Torch IR in double precision with straightforward, independent
//                       implementations of every torch target of docs/torch-ops.md (never derived
//                       from a decomposition, so it can catch a wrong one).
//   evaluate_tensor_ir  runs Tensor IR: Elementwise, Reduce, IndexMap (coordinate expressions
//                       evaluated per output element) and Gather.
//
// Both take the values of the InputOp nodes (see make_inputs) and return the value of every node,
// by id; ConstantOp nodes are filled by constant_data. Errors (unknown target or fn, bad attrs,
// shape mismatch, missing input) are Diagnostics attached to the node.
//
// Elementwise functions (ElementwiseOp::fn, and the Torch elementwise targets of the same names)
// are those of tessera/ir/elementwise_fn.h, computed by apply_elementwise_fn. Comparisons give
// 1 / 0. Results are converted to the node's dtype (conform_to_dtype).
//
// Tensor IR semantics the interpreter checks (each violation is an error naming the node):
//   Elementwise  every Var operand has the output shape (or is a single element); Exprs over the
//                operands are allowed as arguments (`mul(x, 0.5)`).
//   Reduce       axis may be negative; the node's shape must be the input's with that axis set
//                to 1 (keepdim) or removed.
//   IndexMap     one coord name per output dim; per output element the first source whose
//                predicate holds (or has none) is read; index Exprs use floor division/modulo;
//                a read outside the source, or an element no source covers, is an error.
//   Gather       out shape = table[:axis] + ids.shape + table[axis+1:]; an id outside the
//                table is an error.
#pragma once

#include <string>
#include <vector>

#include "tessera/eval/tensor_value.h"
#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera {

Expected<ValueMap> evaluate_reference(const Graph& torch_graph, const ValueMap& inputs);
Expected<ValueMap> evaluate_tensor_ir(const Graph& tensor_graph, const ValueMap& inputs);

// How far `actual` is from `expected`, over the tensors of both maps.
struct ValueComparison {
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;   // |a - e| / max(|e|, rel_floor)
  std::string worst_node;       // node with the largest relative error
  int64_t worst_flat_index = -1;
  int64_t elements = 0;         // elements compared
  bool within(double rel_tol) const { return max_rel_error <= rel_tol; }
  std::string str() const;      // "max abs 1.2e-07, max rel 3.4e-08 at rms_norm[17] over 4096 elements"
};

// Compares the tensors named in `names` (all ids present in both maps when empty). A name missing
// from either map, or a type mismatch, is an error. NaN against non-NaN counts as infinite error;
// equal infinities and NaN against NaN count as exact.
Expected<ValueComparison> compare_values(const ValueMap& expected, const ValueMap& actual,
                                         const std::vector<std::string>& names = {}, double rel_floor = 1e-6);

// The tolerance of the output check (tessera run, bench, ab, the simulator and random-knob tests).
// An element's error is |a - e| / max(|e|, floor), floor = max(rms_fraction * rms(e),
// smallest_normal), and the output passes when the largest is <= rtol:
//   * relative where values are large;
//   * absolute at a fraction of the tensor's RMS where values are near 0 (a cancellation such as
//     x - mean, or a long sum, leaves an absolute error of many ulps of the operands' scale in
//     elements that end up near 0, and the operands' scale is the output's scale);
//   * absolute at rtol * the smallest normal number of the precision below it, where the values
//     are subnormal and a rounding step is an absolute quantity (two f16 softmax probabilities of
//     ~4e-6 may differ by a few subnormal steps of 6e-8).
// The precision is the narrowest floating-point dtype any computed value on the path to the
// output is stored in (output_tolerance): a float64 result of float32 work is as accurate as
// float32, a float32 result of an f16 softmax as accurate as f16. Given inputs and constants do not
// count (both sides read the same values), nor do Torch IR nodes that only move elements (reshape,
// unsqueeze, permute, transpose, expand, slice, cat, embedding): they round nothing.
struct OutputTolerance {
  DType precision = DType::F32;  // where rtol comes from
  double rtol = 0;               // 0: exact (integer and bool outputs)
  double rms_fraction = 0;
  double smallest_normal = 0;
};

// The tolerance of one dtype. f16 and bf16: rtol eight units in the last place of 1.0 (2^-7 and
// 2^-4) with a floor at the tensor's RMS. The reference rounds every f16/bf16 op's output as
// PyTorch eager does and the kernels round at the same points, so a correct kernel is off by one
// ulp where a rounding flips; one-ulp errors in every op of a path of a few dozen ops compound to
// about five or six ulps in the worst of thousands of elements (random signs). f32: 1e-4 with a
// floor at 0.1 RMS (kernels compute in f32 against a double reference, so every op differs). f64:
// 1e-9 at 1e-3 RMS (both sides compute in double). Integers and bools: exact.
OutputTolerance dtype_tolerance(DType dtype);

// The tolerance of node `id` of `g` (best the Torch IR graph, where every intermediate dtype is a
// node's): the output's own dtype and every computed node it depends on (not inputs, constants or
// nodes that only move elements) contribute, the loosest of each term wins. An integer or bool
// node is exact; an id not in `g` gets dtype_tolerance(F32).
OutputTolerance output_tolerance(const Graph& g, const std::string& id);

// Compares output `name` as above (`tolerance` gives the floor; `within(tolerance.rtol)` is the
// verdict). Without a tolerance, the expected value's own dtype's.
Expected<ValueComparison> compare_output(const ValueMap& expected, const ValueMap& actual, const std::string& name,
                                         const OutputTolerance& tolerance);
Expected<ValueComparison> compare_output(const ValueMap& expected, const ValueMap& actual,
                                         const std::string& name);

// dtype_tolerance(dtype).rtol.
double default_output_rtol(DType dtype);

}  // namespace tessera

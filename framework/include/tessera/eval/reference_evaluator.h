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

// How a compiled program's output `name` is checked against the reference (tessera run, the
// simulator and random-knob tests): the relative error of an element is
// |a - e| / max(|e|, 1e-2 * max|e| over the tensor) — relative where values are large, and
// absolute at 1% of the tensor's scale where values are near 0. An f32 program cannot do better
// than that against a double-precision reference: a cancellation (x - mean) or a long f32 sum
// (a K = 512 dot product) leaves an absolute error of many f32 ulps of the operands' scale in
// elements that end up near 0.
inline constexpr double kOutputRelFloorScale = 1e-2;
Expected<ValueComparison> compare_output(const ValueMap& expected, const ValueMap& actual,
                                         const std::string& name);

// The relative tolerance (compare_output's measure) an output of `dtype` must meet: 1e-4 for f32
// and wider types; 5e-3 for f16 and 2e-2 for bf16 (about ten and three units in the last place of
// their 11 and 8 significant bits). The reference rounds every f16/bf16 op's output as PyTorch eager
// does and the kernels round at the same points, so what remains is an f32-vs-double difference
// that flips a rounding now and then.
double default_output_rtol(DType dtype);

}  // namespace tessera

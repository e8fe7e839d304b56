// fold_empty_tensors: the last step of tracing. PyTorch programs make zero-size tensors on purpose
// (partial RoPE's `x[..., rot:]` with rot == head_dim, a KV cache `past[:, :, :0]` at the first
// step, a `split` section of 0), and the tracer records them as Torch IR nodes whose shapes hold
// a 0, exactly where PyTorch has one. No IR after the frontend has zero-size values, so this step
// removes them, computing what PyTorch computes for every non-empty value that reads one:
//
//   cat                  the empty operands are dropped (one operand left: a reshape to its own shape)
//   sum                  over an empty dim: a `full` of 0
//   mean                 over an empty dim: a `full` of NaN (0 / 0, as PyTorch)
//   matmul               contracting over K = 0: a `full` of 0
//   linear               with in_features 0: the bias expanded to the result's shape, else a `full` of 0
//   scaled_dot_product_attention with no keys (S = 0): a `full` of 0 (PyTorch's math: softmax over
//                        nothing times no values)
//
// Every other node with an empty operand has an empty result itself (elementwise ops broadcast 0
// with 1 only, layout ops keep the element count) and disappears with the empty values; a program
// whose output is empty, and any other non-empty node reading an empty value, is a located error.
// The errors PyTorch raises for empty inputs (amax over an empty dim, ...) are raised by the
// tracer at the call. docs/torch-ops.md ("Empty tensors") lists the rules; tests in
// tests/unit/torch_empty_tensors_test.cpp.
#pragma once

#include "source_text.h"
#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera::torch_expr {

// True when the type has a dimension of size 0 (no elements).
bool is_empty_tensor(const TensorType& type);

// Rewrites `graph` (traced Torch IR, pruned to its outputs) so that no node reads an empty value;
// the empty nodes are left unused for the caller to prune. Errors are located with `source`.
Status fold_empty_tensors(Graph& graph, const SourceText& source);

}  // namespace tessera::torch_expr

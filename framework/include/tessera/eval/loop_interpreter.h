// evaluate_loop_ir: runs a Loop IR graph on the CPU, in double precision, one node (buffer) at a
// time, executing each LoopOp's statement tree directly.
//
// Accepts a graph whose compute nodes are all LoopOps (InputOp / ConstantOp leaves are filled as
// the other evaluators fill them: inputs from `inputs`, constants from constant_data). A LoopOp
// node may load from its inputs and from its own output buffer (the node id), and writes only its
// own output buffer.
//
// Statements: Loop (begin <= var < end, step 1), Cond, Let, Load, Assign (the elementwise fn names
// of reference_evaluator.h), Select, Init / Accum (op add, mul, max, min, or any binary elementwise
// fn), Write (the value is converted to the node's dtype). Names are lexically scoped: a name bound
// in a body is visible in that body and the bodies nested in it.
//
// Errors (each names the node and the statement): a load or write out of bounds, a load of an
// output element not yet written, an output element never written, a write to a buffer other than
// the node's own, a load of a buffer that is not an input of the node, an unknown name or fn, a
// statement kind that is not Loop IR, a non-LoopOp compute node, integer division by zero.
//
// Returns the value of every node, by id.
#pragma once

#include "tessera/eval/tensor_value.h"
#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera {

Expected<ValueMap> evaluate_loop_ir(const Graph& loop_graph, const ValueMap& inputs);

}  // namespace tessera

// Deterministic data for program inputs and constants.
//
// Every backend (reference evaluator, interpreters, simulator, CUDA target) fills InputOp and
// ConstantOp nodes through these functions, so all of them see bit-identical data. The random
// generator is Tessera's own (splitmix64 + Box-Muller), never <random>'s distributions, whose
// output differs between standard libraries.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tessera/eval/tensor_value.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"
#include "tessera/support/status.h"

namespace tessera {

// splitmix64: a tiny, well-mixed 64-bit generator with a fully specified sequence.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();         // in [0, 1), 53 random bits
  double normal();          // N(0, 1) by Box-Muller (one value per call, the cosine branch)

 private:
  uint64_t state_;
};

// `count` values: randn -> N(0,1), rand -> U[0,1), randint -> integers uniform in [0, fill),
// zeros, ones, full -> `fill`.
// An unknown init is an error naming it.
Expected<std::vector<double>> generate_data(const std::string& init, uint64_t seed, double fill, int64_t count);

// The data of a ConstantOp of type `type` (the one function every backend uses):
//   `checkpoint` -> the tensor `path` of that safetensors file, memory-mapped and converted from
//     F32 / F16 / BF16 to the dtype. The file is checked first: gone, a size or modification time
//     other than the recorded one, a missing tensor, another shape or a non-float dtype is an error
//     naming the file and the tensor (never a crash or stale data);
//   non-empty `values` -> those values (exactly one per element, or a single value broadcast);
//   init randn -> N(0,1) * scale from `seed`; rand -> U[0,1) * scale; full -> scale;
//   zeros / ones.
Expected<TensorValue> constant_data(const ConstantOp& op, const TensorType& type);

// The same data in consecutive row-major windows of at most `window` elements: `sink(first,
// values)` for each window in order, the values exactly what constant_data returns at those
// positions; an error from `sink` stops the walk and is returned. For consumers that convert the
// data further (the CUDA target's upload) without holding a whole tensor as doubles.
Status constant_data_windows(const ConstantOp& op, const TensorType& type, int64_t window,
                             const std::function<Status(int64_t first, std::span<const double> values)>& sink);

// The data of an InputOp: init randn / rand draw from a stream derived from (`seed`, `node_id`), so
// adding an input does not change the others; zeros / ones / full as named. Every value is what
// the dtype stores (round_to_storage: f32 / f16 / bf16 rounding, integers truncated), for inputs
// and constants alike, so the reference sees exactly the data a GPU buffer would hold.
Expected<TensorValue> input_data(const InputOp& op, const TensorType& type, const std::string& node_id, uint64_t seed);

// Data for every InputOp of `graph`, by node id. Inputs whose init is unknown are left out (the
// evaluators then report them as missing, naming the node).
ValueMap make_inputs(const Graph& graph, uint64_t seed);

// Adds the data of every ConstantOp of `graph` to `values`, by node id. Every consumer of an input
// map (the evaluators, the targets, --save-io) takes a ConstantOp's value from the map when it is
// there, instead of generating it again: a caller that runs one program several ways (check, run,
// save, time) generates its parameters once. The values are exactly constant_data's.
Status add_constants(const Graph& graph, ValueMap& values);

// The given value of ConstantOp node `n` in `values`, or null when the map has none; a value of
// another type is an error naming the node.
Expected<const TensorValue*> given_constant(const Node& n, const ValueMap& values);

// The value of ConstantOp node `n` (whose op is `op`) for a consumer that keeps its own copy (the
// evaluators, the simulator): the given one when `values` holds it, else constant_data. Errors name
// the node.
Expected<TensorValue> constant_value(const Node& n, const ConstantOp& op, const ValueMap& values);

}  // namespace tessera

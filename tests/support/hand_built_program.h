// For evaluator tests that build small graphs by hand: the graph, the input values the test gives
// it, and the shorthand those tests share.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/eval/tensor_value.h"
#include "tessera/ir/graph.h"

namespace tessera::test {

inline TensorType f32(Shape s) { return TensorType{std::move(s), DType::F32}; }

// Dialect-specific builders (TorchProgram, TensorProgram) derive from this and add their ops.
struct HandBuiltProgram {
  Graph g;
  ValueMap inputs;

  void input(const std::string& id, Shape shape, std::vector<double> data, DType dt = DType::F32) {
    TensorType t{std::move(shape), dt};
    g.add(id, std::make_unique<InputOp>(), {}, t);
    inputs[id] = TensorValue(t, std::move(data));
  }
};

}  // namespace tessera::test

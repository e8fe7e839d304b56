// A kernel's identity for tuning: the structural hash of a kernel node up to buffer names.
//
// Two kernels get the same hash when the runner's kernel sharing would treat them as equal (the
// same op, statements, launch, parameters and recorded knob values, with every graph buffer they
// name written as its position among the node's buffers), except that the inputs' producers count
// only by their types (a task compiled alone, its inputs made program inputs, keeps its hash) and
// the recorded choices only by their values (a replayed schedule hashes like the tuned one), and
// the kernel's name is left out (a split-K partial kernel is named after its original node). The
// hash is stable across runs, machines and builds: tuning databases store it.
#pragma once

#include <cstdint>
#include <optional>

#include "tessera/ir/graph.h"

namespace tessera {

// nullopt when `n` is not a Loop, Tile or Kernel IR kernel, or names an input `g` lacks.
std::optional<uint64_t> kernel_structural_hash(const Graph& g, const Node& n);

}  // namespace tessera

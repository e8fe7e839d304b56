// Tuning tasks: the distinct kernels of a program, each compiled alone while it is tuned.
//
// A program's kernels are taken as they enter the tile stage (fused Loop IR) and grouped by
// kernel_structural_hash: the layers of a model share one task per kernel shape, weighted by how
// many kernels it stands for. Each task gets a graph of its own — the kernel, its inputs as program
// inputs (constants kept as they are) — so a trial compiles one kernel, not the program.
#pragma once

#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/support/status.h"
#include "tessera/tune/tuner.h"

namespace tessera {

struct TuningTaskGraph {
  TuneTask task;
  Graph graph;                       // the kernel alone; its output is the graph's output
  std::vector<std::string> members;  // the program's kernels it stands for, in graph order
};

// The tasks of `g` (a graph at the end of the loop stage) in the graph order of their first kernel.
// An error naming the node when a kernel cannot be hashed (an input the graph lacks).
Expected<std::vector<TuningTaskGraph>> extract_tuning_tasks(const Graph& g);

// The task hash of every kernel of `g`, by node id (for reporting which kernels a database covers).
Expected<std::vector<std::pair<std::string, uint64_t>>> kernel_task_hashes(const Graph& g);

}  // namespace tessera

// The summary `tessera compile MODEL` prints: kernels, distinct kernels (structurally equal kernels
// counted once), parameters and FLOPs per token.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/ir/graph.h"

namespace tessera::cli {

struct ModelSummary {
  int64_t tokens = 0;             // tokens one run processes (prefill: S; decode: 1)
  int64_t parameters = 0;         // elements of the named parameters, each once (a tied lm_head once)
  double flops = 0;               // of the matmuls, linears and attention (2 per multiply-add)
  int64_t kernels = 0;
  int64_t distinct_kernels = 0;
};

// Parameters and FLOPs, from the Torch IR graph.
void count_model(const Graph& torch_graph, ModelSummary& summary);

// Kernels of the compiled graph (Loop, Tile, Kernel or CUDA IR), and how many of them are
// distinct: CUDA kernels with the same source (the cuda target compiles each source once), or
// kernels equal up to their buffer names (what the pipeline schedules once, kernel_sharing.h), so
// the layers' copies of one kernel count once.
void count_kernels(const Graph& compiled, ModelSummary& summary);

std::string print_model_summary(const std::string& model, const std::string& stage, const ModelSummary& summary,
                                double seconds);

}  // namespace tessera::cli

// Applying a KernelPass to a graph (see pass.h): run_on on a copy of every node the pass applies
// to, on up to `threads` threads, then the copies replace the nodes in graph order. Shared by
// KernelPass::run and the pipeline runner.
#pragma once

#include <string>
#include <vector>

#include "kernel_sharing.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"

namespace tessera {

// One rewritten node's printout before and after, for the runner's -vv diff.
struct AppliedNodeText {
  std::string id, before, after;
};

// Returns the first failure in graph order (the graph is then unchanged). Skips and diagnostics
// of the applications are joined into `ctx` in graph order. With `texts`, records the printout of
// every node run_on was applied to. With `groups` (and no tuner or replay source in `ctx`),
// run_on runs once per group of kernels equal up to their buffer names and the other members take
// that result with their own buffers (kernel_sharing.h); `groups` keeps the grouping for the next
// kernel pass. Without, every node is rewritten on its own.
Status apply_kernel_pass(KernelPass& pass, Graph& g, PassContext& ctx, int threads,
                         std::vector<AppliedNodeText>* texts, KernelGroups* groups);

}  // namespace tessera

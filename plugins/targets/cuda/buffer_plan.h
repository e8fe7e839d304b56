// BufferPlan: which device allocation ("slot") holds each node's buffer. See buffer_plan.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera {

// One node's buffer, in graph order.
struct BufferUse {
  std::string id;
  int64_t bytes = 0;
  std::vector<std::string> inputs;  // buffers a kernel reads (empty for inputs and constants)
  bool kernel = false;              // produced by a kernel (else uploaded before any launch)
  bool output = false;              // a graph output: never freed
};

class BufferPlan {
 public:
  // Plans `uses`: uploaded buffers are all live from the start; a kernel's buffer is allocated
  // when it runs. A buffer is free after its last consumer kernel (never before its own kernel
  // ran, never while that kernel runs); a new buffer takes the smallest free slot that fits (the
  // lowest index on a tie), else a new slot. With `keep_uploaded`, inputs and constants are never
  // freed (a benchmark runs the program many times over the same inputs).
  static Expected<BufferPlan> plan(const std::vector<BufferUse>& uses, bool keep_uploaded = false);
  // The uses of a graph of InputOp / ConstantOp / CudaOp nodes (sizes from the node types).
  static std::vector<BufferUse> uses_of(const Graph& g);

  int slot(const std::string& id) const { return slot_of_.at(id); }
  const std::map<std::string, int>& slots() const { return slot_of_; }
  const std::vector<int64_t>& slot_bytes() const { return slot_bytes_; }

 private:
  std::map<std::string, int> slot_of_;
  std::vector<int64_t> slot_bytes_;
};

}  // namespace tessera

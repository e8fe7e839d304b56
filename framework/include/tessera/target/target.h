// Target: lowers a Kernel IR graph to something that runs, and runs it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/support/status.h"
#include "tessera/target/device.h"

namespace tessera {

struct TargetOptions {
  std::string arch;                 // sm_90, ...
  const DeviceDesc* device = nullptr;
  std::string cache_dir;
};

// Inputs and outputs of one program run, by buffer name, as f32 host arrays.
struct HostBuffers {
  std::vector<std::pair<std::string, std::vector<float>>> buffers;
};

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  // Whether this target can run on this machine now (e.g. a CUDA driver and GPU are present);
  // on false, `why` says what is missing.
  virtual bool available(std::string* why) const = 0;
  // Runs a graph (lowered as far as this target needs) on `inputs`, producing its outputs.
  virtual Expected<HostBuffers> execute(const Graph& g, const HostBuffers& inputs,
                                        const TargetOptions& options) = 0;
};

}  // namespace tessera

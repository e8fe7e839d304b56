// Frontend: turns a program text (a `-c` expression, a model directory, ...) into a Torch IR graph.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/ir/type.h"
#include "tessera/support/diagnostics.h"
#include "tessera/support/status.h"

namespace tessera {

struct FrontendInput {
  std::string text;               // the program text (or a path / model id for file frontends)
  std::string file = "<-c>";      // name used in diagnostics
};

struct FrontendOptions {
  DType dtype = DType::F32;       // default dtype of created tensors (--dtype)
  uint64_t seed = 0;              // base seed for parameters
  // Where the frontend appends its warnings (located, Severity::Warning: what PyTorch warns about
  // and runs anyway, such as softmax's implicit dim); dropped when null.
  std::vector<Diagnostic>* warnings = nullptr;
};

class Frontend {
 public:
  virtual ~Frontend() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  // On error the Diagnostic carries file:line:col and the source line for the caret display.
  virtual Expected<Graph> import(const FrontendInput& input, const FrontendOptions& options) = 0;
};

}  // namespace tessera

// Whether a torch target names an elementwise function (ir/elementwise_fn.h), without building
// the "unknown function" error parse_elementwise_fn returns for every other target: the tracer asks
// this of every op it creates, and composing that message (a did-you-mean search over every
// function name) once cost a fifth of tracing a large split.
#pragma once

#include <string_view>

#include "tessera/ir/elementwise_fn.h"

namespace tessera::torch_expr {

inline const ElementwiseFnInfo* elementwise_target(std::string_view target) {
  for (const ElementwiseFnInfo& f : kElementwiseFns)
    if (f.name == target) return &f;
  return nullptr;
}

}  // namespace tessera::torch_expr

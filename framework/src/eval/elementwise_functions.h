// Lookup of the scalar elementwise functions (see reference_evaluator.h for the list), so the
// evaluators resolve a name once per node rather than once per element.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tessera/support/status.h"

namespace tessera {

struct ElementwiseFn {
  size_t arity;
  std::function<double(const std::vector<double>&)> apply;
};

// The function named `fn`; an unknown name or an arity other than `arity` is an error.
Expected<const ElementwiseFn*> find_elementwise_fn(const std::string& fn, size_t arity);

}  // namespace tessera

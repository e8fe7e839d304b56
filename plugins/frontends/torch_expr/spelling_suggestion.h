// Spelling suggestions for "did you mean 'RMSNorm'?" in unknown-name errors.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/support/spelling.h"

namespace tessera::torch_expr {

using tessera::closest_spelling;  // tessera/support/spelling.h


// "; did you mean 'RMSNorm'?" or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace tessera::torch_expr

// The emit_cuda pass (see emit_cuda_pass.cpp).
#pragma once

#include <memory>

#include "tessera/pass/pass.h"

namespace tessera {

std::unique_ptr<Pass> make_emit_cuda_pass();

}  // namespace tessera

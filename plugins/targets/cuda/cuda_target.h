// The cuda target (see cuda_target.cpp).
#pragma once

#include <memory>

#include "tessera/target/target.h"

namespace tessera {

std::unique_ptr<Target> make_cuda_target();

}  // namespace tessera

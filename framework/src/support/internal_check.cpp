// The one failure path of TESSERA_INTERNAL_CHECK (tessera/support/internal_check.h).
#include "tessera/support/internal_check.h"

#include <cstdio>
#include <cstdlib>

namespace tessera {

void internal_check_failed(const char* invariant, const char* file, int line) {
  std::fprintf(stderr, "tessera: internal error: %s (%s:%d)\n", invariant, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace tessera

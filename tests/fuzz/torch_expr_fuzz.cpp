// libFuzzer target: torch_expr (see fuzz_entries.h; run with scripts/fuzz.sh torch_expr).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)tessera::fuzz::fuzz_one_torch_expr(data, size);
  return 0;
}

// libFuzzer target: ir_text (see fuzz_entries.h; run with scripts/fuzz.sh ir_text).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)tessera::fuzz::fuzz_one_ir_text(data, size);
  return 0;
}

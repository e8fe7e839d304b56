// libFuzzer target: Hugging Face config.json files (the hf frontend's reader). See docs/fuzzing.md.
#include "fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tessera::fuzz::fuzz_one_hf_config(data, size);
  return 0;
}

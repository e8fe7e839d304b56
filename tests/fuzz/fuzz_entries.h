// The fuzz targets' entry functions: each hands one input to one reader of outside text and checks
// that the reader answers with a value or an error (Expected/Status), never a crash, hang, abort or
// leak. The libFuzzer targets (<name>_fuzz.cpp, built with TESSERA_FUZZ=ON by scripts/fuzz.sh) call
// them with generated inputs; tests/unit/fuzz_regressions_test.cpp calls them, in the normal build,
// with every file of tests/fuzz/regressions/<name>/. Each returns whether the input was accepted.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::fuzz {

// A torch_expr program (`tessera compile -c`), traced to Torch IR; an accepted graph is verified
// and printed.
bool fuzz_one_torch_expr(const uint8_t* data, size_t size);

// A pipeline YAML file (pipelines/*.yaml), parsed and shape-checked (not validated against a
// registry: which passes exist depends on the loaded plugins).
bool fuzz_one_pipeline_yaml(const uint8_t* data, size_t size);

// A graph's JSON form (`--emit-json`, `compile --from-ir`); an accepted graph is verified,
// printed and written back to JSON.
bool fuzz_one_ir_json(const uint8_t* data, size_t size);

// Printed IR (parse_graph, ir/parser.h); an accepted graph is verified and printed.
bool fuzz_one_ir_text(const uint8_t* data, size_t size);

// A safetensors file (`run --save-io`, hf checkpoints); an accepted file is encoded again, and the
// view reader of checkpoints converts every tensor's values.
bool fuzz_one_safetensors(const uint8_t* data, size_t size);

// A Hugging Face config.json (the hf frontend's parse_model_config); an accepted config gets its
// RoPE frequencies computed.
bool fuzz_one_hf_config(const uint8_t* data, size_t size);

}  // namespace tessera::fuzz

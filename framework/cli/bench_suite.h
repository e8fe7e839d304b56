// The benchmark suite file (bench/suite.yaml) `tessera bench` runs: a version and a list of
// entries, each one program of a model's layer at one shape. Format:
//
//   version: 1
//   entries:
//     - id: tinyllama-prefill128-f32-rmsnorm_input   # unique, [a-z0-9_.-]+
//       family: norm       # norm | softmax | elementwise | projection | attention | mlp | layer
//       model: TinyLlama-1.1B   # TinyLlama-1.1B | Qwen2.5-7B | Llama-3-8B
//       phase: prefill     # prefill | decode
//       seq: 128           # query tokens, >= 1 (1 for decode)
//       kv: 0              # decode: KV-cache positions attended (> 0); prefill: 0
//       dtype: f32         # f32 | bf16
//       tiers: [quick, full]   # every entry is in full; some also in quick
//       flops: 1234        # optional: the program's model-level FLOPs
//       program: |         # valid for `tessera compile -c` and for PyTorch
//         ...
//
// Reading checks every key (unknown, missing, duplicate or ill-typed keys and values are errors
// with the file:line:col of the offending node) so a bad suite fails before anything compiles.
// Tests: tests/unit/bench_suite_test.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tessera/support/status.h"

namespace tessera::cli {

struct SuiteEntry {
  std::string id;
  std::string family;
  std::string model;
  std::string phase;
  int64_t seq = 0;
  int64_t kv = 0;
  std::string dtype;
  std::vector<std::string> tiers;
  std::optional<double> flops;
  std::string program;
  int line = 0;  // of the entry in the suite file

  bool in_tier(const std::string& tier) const;
};

struct Suite {
  std::string file;
  int version = 0;
  std::vector<SuiteEntry> entries;
};

// The values the format allows, in the order reports list them.
const std::vector<std::string>& suite_families();
const std::vector<std::string>& suite_models();

Expected<Suite> parse_suite(const std::string& yaml_text, const std::string& file);
Expected<Suite> load_suite(const std::string& path);

// The entries of `tier` (quick | full), in file order; with `ids`, only those (each must exist and
// be in the tier; an unknown id is an error naming the closest ones).
Expected<std::vector<const SuiteEntry*>> select_entries(const Suite& suite, const std::string& tier,
                                                        const std::vector<std::string>& ids);

// "a,b,,c" -> {a, b, c}: the --entries list of bench and tune.
std::vector<std::string> split_entry_ids(const std::string& s);

}  // namespace tessera::cli

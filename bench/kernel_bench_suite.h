// The entries of a benchmark suite file (bench/suite.yaml, format in bench/README.md) that
// `tessera_kernel_bench --suite FILE [--tier T] [--entries ID,...]` benchmarks. See
// kernel_bench_suite.cpp; tests: tests/unit/kernel_bench_test.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tessera/support/status.h"

namespace tessera {

struct SuiteEntry {
  std::string id;
  std::vector<std::string> tiers;
  std::string program;
};

// Reads `version: 1` and each entry's id ([a-z0-9_.-]+, unique), tiers (a list) and program (a
// non-empty string); the other keys of an entry (family, model, shape, dtype, flops) describe it
// and are not needed to benchmark it. Errors name the file, line and column.
Expected<std::vector<SuiteEntry>> read_suite_file(const std::string& path);
Expected<std::vector<SuiteEntry>> parse_suite(const std::string& text, const std::string& path);

// The entries in tier `tier` (all when empty), then only those named in `ids` (all when empty),
// in file order. Naming an id the file lacks, or one outside `tier`, is an error.
Expected<std::vector<SuiteEntry>> select_suite_entries(const std::vector<SuiteEntry>& entries,
                                                       const std::string& tier, const std::vector<std::string>& ids);

}  // namespace tessera

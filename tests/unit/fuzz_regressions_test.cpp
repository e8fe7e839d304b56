// Replays tests/fuzz/regressions/<target>/: every input that ever crashed or hung a fuzz target
// (tests/fuzz, docs/fuzzing.md), through the same entry function the libFuzzer target calls. Each
// must return (an accepted input or an error value) within a bound far above its normal time, so a
// reintroduced crash fails this test in the normal build, and a reintroduced hang or blow-up past
// the bound does too. What the entries accept is not checked here: the readers' own tests do that.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_entries.h"

namespace tessera::fuzz {
namespace {

namespace fs = std::filesystem;

// A regression that once hung or ran away; a return takes well under a second in a release build.
constexpr std::chrono::seconds kReturnBound{30};

struct FuzzTarget {
  const char* name;  // the folder under tests/fuzz/regressions/
  bool (*entry)(const uint8_t*, size_t);
};

const FuzzTarget kTargets[] = {
    {"torch_expr", fuzz_one_torch_expr}, {"pipeline_yaml", fuzz_one_pipeline_yaml},
    {"ir_json", fuzz_one_ir_json},       {"ir_text", fuzz_one_ir_text},
    {"safetensors", fuzz_one_safetensors},
    {"hf_config", fuzz_one_hf_config},
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class FuzzRegressions : public ::testing::TestWithParam<FuzzTarget> {};

TEST_P(FuzzRegressions, EveryInputReturns) {
  const fs::path folder = fs::path(TESSERA_SOURCE_DIR) / "tests/fuzz/regressions" / GetParam().name;
  if (!fs::is_directory(fs::path(TESSERA_SOURCE_DIR) / "tests/fuzz"))
    GTEST_SKIP() << "no source tree here (" << TESSERA_SOURCE_DIR << "): the regressions live in it";
  ASSERT_TRUE(fs::is_directory(folder)) << folder;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << folder << " holds no input";
  for (const fs::path& file : files) {
    const std::string bytes = read_bytes(file);
    const auto start = std::chrono::steady_clock::now();
    (void)GetParam().entry(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_LT(elapsed, kReturnBound) << file << " took "
                                     << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
                                     << " ms";
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzRegressions, ::testing::ValuesIn(kTargets),
                         [](const ::testing::TestParamInfo<FuzzTarget>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tessera::fuzz

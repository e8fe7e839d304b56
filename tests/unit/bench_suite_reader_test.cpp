// The suite file reader of `tessera bench` (framework/cli/bench_suite.h): the fixture suite reads
// back field by field, every malformed suite is refused with its file:line:col, and entries are
// selected by tier and id.
#include <gtest/gtest.h>

#include <string>

#include "framework/cli/bench_suite.h"

namespace tessera::cli {
namespace {

const std::string kFixture = std::string(TESSERA_SOURCE_DIR) + "/tests/bench/suite_fixture.yaml";

// One valid entry; tests replace one line of it.
const char* kEntry = R"(version: 1
entries:
  - id: a-prefill-f32-norm
    family: norm
    model: TinyLlama-1.1B
    phase: prefill
    seq: 128
    kv: 0
    dtype: f32
    tiers: [quick, full]
    program: |
      import torch
      torch.relu(torch.randn(4, 4))
)";

std::string with(const std::string& from, const std::string& to) {
  std::string s = kEntry;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
  return s;
}

std::string error_of(const std::string& yaml) {
  auto suite = parse_suite(yaml, "suite.yaml");
  return suite ? std::string() : suite.error().render();
}

TEST(BenchSuite, ReadsTheFixture) {
  auto suite = load_suite(kFixture);
  ASSERT_TRUE(suite) << suite.error().render();
  EXPECT_EQ(suite->version, 1);
  ASSERT_EQ(suite->entries.size(), 3u);
  const SuiteEntry& norm = suite->entries[0];
  EXPECT_EQ(norm.id, "fixture-prefill16-f32-rmsnorm");
  EXPECT_EQ(norm.family, "norm");
  EXPECT_EQ(norm.model, "TinyLlama-1.1B");
  EXPECT_EQ(norm.phase, "prefill");
  EXPECT_EQ(norm.seq, 16);
  EXPECT_EQ(norm.kv, 0);
  EXPECT_EQ(norm.dtype, "f32");
  EXPECT_EQ(norm.tiers, (std::vector<std::string>{"quick", "full"}));
  EXPECT_FALSE(norm.flops);
  EXPECT_EQ(norm.program, "import torch\nimport torch.nn as nn\nnn.RMSNorm(256)(torch.randn(1, 16, 256))\n");
  const SuiteEntry& softmax = suite->entries[1];
  EXPECT_EQ(softmax.phase, "decode");
  EXPECT_EQ(softmax.kv, 512);
  ASSERT_TRUE(softmax.flops);
  EXPECT_EQ(*softmax.flops, 10240);
  EXPECT_EQ(suite->entries[2].dtype, "bf16");
}

TEST(BenchSuite, SelectsByTierAndId) {
  auto suite = load_suite(kFixture);
  ASSERT_TRUE(suite);
  auto quick = select_entries(*suite, "quick", {});
  ASSERT_TRUE(quick);
  ASSERT_EQ(quick->size(), 2u);
  EXPECT_EQ((*quick)[1]->id, "fixture-prefill8-bf16-proj");
  auto full = select_entries(*suite, "full", {});
  ASSERT_TRUE(full);
  EXPECT_EQ(full->size(), 3u);
  // File order whatever the order asked.
  auto two = select_entries(*suite, "full", {"fixture-prefill8-bf16-proj", "fixture-prefill16-f32-rmsnorm"});
  ASSERT_TRUE(two);
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0]->id, "fixture-prefill16-f32-rmsnorm");

  auto typo = select_entries(*suite, "full", {"fixture-prefill16-f32-rmsnrom"});
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().render().find("has no entry 'fixture-prefill16-f32-rmsnrom'"), std::string::npos);
  EXPECT_NE(typo.error().render().find("did you mean 'fixture-prefill16-f32-rmsnorm'?"), std::string::npos);
  auto not_quick = select_entries(*suite, "quick", {"fixture-decode-f32-softmax"});
  ASSERT_FALSE(not_quick);
  EXPECT_NE(not_quick.error().message.find("is not in the quick tier"), std::string::npos);
  EXPECT_FALSE(select_entries(*suite, "slow", {}));
  EXPECT_FALSE(select_entries(*suite, "full", {"fixture-decode-f32-softmax", "fixture-decode-f32-softmax"}));
}

TEST(BenchSuite, AcceptsTheMinimalEntry) { EXPECT_EQ(error_of(kEntry), ""); }

struct BadSuite {
  const char* what;
  std::string yaml;
  const char* where;     // file:line:col
  const char* message;   // a piece of the message
};

TEST(BenchSuite, RefusesMalformedSuitesWithLocations) {
  const std::vector<BadSuite> cases = {
      {"not YAML", "version: 1\nentries: [\n", "suite.yaml:3:1", "invalid YAML"},
      {"empty", "", "suite.yaml", "empty suite file"},
      {"a list", "- 1\n", "suite.yaml:1:1", "a suite file is a map"},
      {"version 2", with("version: 1", "version: 2"), "suite.yaml:1:10", "unsupported suite version '2'"},
      {"no entries", "version: 1\n", "suite.yaml:1:1", "missing key 'entries'"},
      {"empty entries", "version: 1\nentries: []\n", "suite.yaml:2:10", "non-empty list"},
      {"unknown top key", std::string(kEntry) + "extra: 1\n", "suite.yaml:14:1", "unknown key 'extra' at the top level"},
      {"unknown entry key", with("    kv: 0", "    kv: 0\n    kvv: 1"), "suite.yaml:9:5", "unknown key 'kvv' in an entry"},
      {"duplicate key", with("    kv: 0", "    kv: 0\n    kv: 0"), "suite.yaml:9:5", "duplicate key 'kv'"},
      {"missing key", with("    dtype: f32\n", ""), "suite.yaml:3:5", "entry 'a-prefill-f32-norm' has no 'dtype'"},
      {"bad id", with("id: a-prefill-f32-norm", "id: A Norm"), "suite.yaml:3:9", "an entry id is a non-empty name"},
      {"bad family", with("family: norm", "family: nrom"), "suite.yaml:4:13", "family must be one of"},
      {"bad model", with("model: TinyLlama-1.1B", "model: GPT-2"), "suite.yaml:5:12", "model must be one of"},
      {"bad phase", with("phase: prefill", "phase: train"), "suite.yaml:6:12", "phase must be one of prefill, decode"},
      {"bad dtype", with("dtype: f32", "dtype: f16"), "suite.yaml:9:12", "dtype must be one of f32, bf16"},
      {"seq not a number", with("seq: 128", "seq: many"), "suite.yaml:7:10", "seq must be a non-negative integer"},
      {"seq zero", with("seq: 128", "seq: 0"), "suite.yaml:7:10", "at least 1"},
      {"seq quoted", with("seq: 128", "seq: \"128\""), "suite.yaml:7:10", "seq must be a non-negative integer"},
      {"negative kv", with("kv: 0", "kv: -4"), "suite.yaml:8:9", "kv must be a non-negative integer"},
      {"prefill with kv", with("kv: 0", "kv: 512"), "suite.yaml:8:9", "a prefill entry has kv: 0"},
      {"decode without kv", with("phase: prefill", "phase: decode"), "suite.yaml:8:9", "attends kv > 0"},
      {"decode with seq 128", with("phase: prefill\n    seq: 128\n    kv: 0", "phase: decode\n    seq: 128\n    kv: 512"),
       "suite.yaml:7:10", "a decode entry has seq: 1"},
      {"tiers without full", with("tiers: [quick, full]", "tiers: [quick]"), "suite.yaml:10:12", "must list full"},
      {"unknown tier", with("tiers: [quick, full]", "tiers: [quick, fulll]"), "suite.yaml:10:20", "a tier must be one of"},
      {"tier twice", with("tiers: [quick, full]", "tiers: [full, full]"), "suite.yaml:10:19", "listed twice"},
      {"negative flops", with("    kv: 0", "    kv: 0\n    flops: -1"), "suite.yaml:9:12", "flops must be a non-negative number"},
      {"empty program", with("program: |\n      import torch\n      torch.relu(torch.randn(4, 4))\n", "program: \"  \"\n"),
       "suite.yaml:11:14", "program must be the program's text"},
      {"duplicate id", std::string(kEntry) + std::string(kEntry).substr(std::string(kEntry).find("  - id")),
       "suite.yaml:14:9", "duplicate entry id 'a-prefill-f32-norm'"},
  };
  for (const BadSuite& c : cases) {
    const std::string error = error_of(c.yaml);
    ASSERT_FALSE(error.empty()) << c.what << ": accepted";
    EXPECT_EQ(error.rfind(std::string(c.where) + ": error: ", 0), 0u) << c.what << ": " << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << c.what << ": " << error;
  }
}

TEST(BenchSuite, TypoHints) {
  const std::string error = error_of(with("family: norm", "family: nrom"));
  EXPECT_NE(error.find("did you mean 'norm'?"), std::string::npos) << error;
  const std::string key = error_of(with("    kv: 0", "    kv: 0\n    tier: [full]"));
  EXPECT_NE(key.find("did you mean 'tiers'?"), std::string::npos) << key;
}

TEST(BenchSuite, MissingFileIsAnError) {
  auto suite = load_suite("/nonexistent/suite.yaml");
  ASSERT_FALSE(suite);
  EXPECT_NE(suite.error().render().find("/nonexistent/suite.yaml: error: cannot read the suite file"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::cli

// Tests of bench/suite.yaml, the LLM kernel suite that `tessera bench`, the kernel benchmarks and
// bench/pytorch_baseline.py read: the schema every reader relies on (bench/README.md, "Suite"),
// the quick tier's coverage, and that every program traces through the torch_expr frontend with
// the entry's dtype on every input, parameter and output. That every program is valid Python
// whose bf16 modules carry dtype=torch.bfloat16 (Tessera gives a module without dtype= its
// input's dtype, PyTorch gives it float32) is checked by tests/python/suite_test.py; compiling
// them all to CUDA is `tessera bench --dry-run`'s job.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"

namespace tessera {
namespace {

const std::set<std::string> kFamilies = {"norm", "softmax", "elementwise", "projection", "attention", "mlp", "layer"};
const std::set<std::string> kModels = {"TinyLlama-1.1B", "Qwen2.5-7B", "Llama-3-8B"};
const std::map<std::string, DType> kDTypes = {{"f32", DType::F32}, {"bf16", DType::BF16}};

struct SuiteEntry {
  std::string id, family, model, phase, dtype, program;
  int64_t seq = 0, kv = 0;
  bool quick = false;
};

// Reads and checks one entry; a schema violation is a test failure naming the entry.
SuiteEntry read_entry(const YAML::Node& e, size_t index) {
  SuiteEntry out;
  const std::string at = "entry " + std::to_string(index);
  for (const char* key : {"id", "family", "model", "phase", "seq", "kv", "dtype", "tiers", "program"})
    EXPECT_TRUE(e[key].IsDefined()) << at << " lacks '" << key << "'";
  for (const auto& kv : e) {
    static const std::set<std::string> known = {"id",    "family", "model", "phase", "seq",
                                                "kv",    "dtype",  "tiers", "flops", "program"};
    EXPECT_TRUE(known.count(kv.first.as<std::string>())) << at << ": unknown key " << kv.first.as<std::string>();
  }
  out.id = e["id"].as<std::string>("");
  out.family = e["family"].as<std::string>("");
  out.model = e["model"].as<std::string>("");
  out.phase = e["phase"].as<std::string>("");
  out.dtype = e["dtype"].as<std::string>("");
  out.program = e["program"].as<std::string>("");
  out.seq = e["seq"].as<int64_t>(-1);
  out.kv = e["kv"].as<int64_t>(-1);
  const std::string where = at + " (" + out.id + ")";
  EXPECT_TRUE(std::regex_match(out.id, std::regex("[a-z0-9_.-]+"))) << where << ": id is not [a-z0-9_.-]+";
  EXPECT_TRUE(kFamilies.count(out.family)) << where << ": unknown family " << out.family;
  EXPECT_TRUE(kModels.count(out.model)) << where << ": unknown model " << out.model;
  EXPECT_TRUE(kDTypes.count(out.dtype)) << where << ": unknown dtype " << out.dtype;
  if (out.phase == "prefill") {
    EXPECT_GT(out.seq, 0) << where;
    EXPECT_EQ(out.kv, 0) << where << ": a prefill entry has kv 0";
  } else if (out.phase == "decode") {
    EXPECT_EQ(out.seq, 1) << where << ": a decode step has one query token";
    EXPECT_TRUE(out.kv == 512 || out.kv == 2048) << where << ": decode kv is 512 or 2048, got " << out.kv;
  } else {
    ADD_FAILURE() << where << ": unknown phase " << out.phase;
  }
  if (e["flops"].IsDefined()) {
    EXPECT_GT(e["flops"].as<int64_t>(0), 0) << where << ": flops must be positive";
  }
  const YAML::Node tiers = e["tiers"];
  EXPECT_TRUE(tiers.IsSequence()) << where << ": tiers is not a list";
  std::set<std::string> tier_names;
  for (const auto& t : tiers) tier_names.insert(t.as<std::string>(""));
  EXPECT_TRUE(tier_names.count("full")) << where << ": every entry is in the full tier";
  for (const auto& t : tier_names) EXPECT_TRUE(t == "quick" || t == "full") << where << ": unknown tier " << t;
  out.quick = tier_names.count("quick") > 0;
  EXPECT_FALSE(out.program.empty()) << where << ": empty program";
  return out;
}

class BenchSuiteTest : public test::BuiltPluginsTest {
 protected:
  static void SetUpTestSuite() {
    BuiltPluginsTest::SetUpTestSuite();
    try {
      YAML::Node root = YAML::LoadFile(TESSERA_SOURCE_DIR "/bench/suite.yaml");
      version_ = root["version"].as<int>(0);
      const YAML::Node list = root["entries"];
      if (!list.IsSequence()) {
        suite_error_ = "'entries' is not a list";
        return;
      }
      for (size_t i = 0; i < list.size(); ++i) entries_.push_back(list[i]);
    } catch (const YAML::Exception& e) {
      suite_error_ = e.what();
    }
  }
  static void TearDownTestSuite() {
    entries_.clear();
    BuiltPluginsTest::TearDownTestSuite();
  }

  void SetUp() override {
    ASSERT_TRUE(suite_error_.empty()) << "bench/suite.yaml: " << suite_error_;
    ASSERT_FALSE(entries_.empty()) << "bench/suite.yaml has no entries";
  }

  std::vector<SuiteEntry> read_all() const {
    std::vector<SuiteEntry> out;
    for (size_t i = 0; i < entries_.size(); ++i) out.push_back(read_entry(entries_[i], i));
    return out;
  }

  static inline std::string suite_error_;
  static inline int version_ = 0;
  static inline std::vector<YAML::Node> entries_;
};

TEST_F(BenchSuiteTest, SchemaHoldsForEveryEntry) {
  EXPECT_EQ(version_, 1);
  std::set<std::string> ids;
  for (const SuiteEntry& e : read_all()) EXPECT_TRUE(ids.insert(e.id).second) << "id " << e.id << " appears twice";
}

TEST_F(BenchSuiteTest, SuiteCoversEveryModelFamilyAndShape) {
  std::vector<SuiteEntry> all = read_all();
  std::map<std::string, int> per_dtype;
  std::set<std::string> seen;
  for (const SuiteEntry& e : all) {
    ++per_dtype[e.dtype];
    seen.insert(e.model + "/" + e.family + "/" + e.phase + "/" + std::to_string(e.seq) + "/" +
                std::to_string(e.kv) + "/" + e.dtype);
  }
  EXPECT_GE(per_dtype["f32"], 84);
  EXPECT_GT(per_dtype["bf16"], 0);
  // Every model and family at every prefill length and decode cache length, in both dtypes.
  for (const std::string& model : kModels)
    for (const std::string& family : kFamilies)
      for (const std::string dtype : {"f32", "bf16"}) {
        for (int seq : {32, 128, 512, 2048})
          EXPECT_TRUE(seen.count(model + "/" + family + "/prefill/" + std::to_string(seq) + "/0/" + dtype))
              << model << " " << family << " prefill " << seq << " " << dtype << " missing";
        for (int kv : {512, 2048})
          EXPECT_TRUE(seen.count(model + "/" + family + "/decode/1/" + std::to_string(kv) + "/" + dtype))
              << model << " " << family << " decode kv " << kv << " " << dtype << " missing";
      }
}

TEST_F(BenchSuiteTest, QuickTierIsSmallAndCoversEveryFamilyModelPhaseAndDtype) {
  std::set<std::string> families, models, phases, dtypes;
  int quick = 0;
  for (const SuiteEntry& e : read_all()) {
    if (!e.quick) continue;
    ++quick;
    families.insert(e.family);
    models.insert(e.model);
    phases.insert(e.phase);
    dtypes.insert(e.dtype);
  }
  EXPECT_GE(quick, 25);
  EXPECT_LE(quick, 35);
  EXPECT_EQ(families, kFamilies);
  EXPECT_EQ(models, kModels);
  EXPECT_EQ(phases, (std::set<std::string>{"prefill", "decode"}));
  EXPECT_EQ(dtypes, (std::set<std::string>{"f32", "bf16"}));
}

// Every program traces; its inputs, parameters and outputs all have the entry's dtype.
TEST_F(BenchSuiteTest, EveryProgramTracesToTorchIrInItsDtype) {
  ASSERT_TRUE(load_error_.empty()) << load_error_;
  std::unique_ptr<Frontend> frontend = host_->registry().make_frontend("torch_expr");
  ASSERT_NE(frontend, nullptr);
  for (const SuiteEntry& e : read_all()) {
    auto want = kDTypes.find(e.dtype);
    if (want == kDTypes.end()) continue;  // reported by the schema test
    Expected<Graph> g = frontend->import(FrontendInput{e.program, e.id}, FrontendOptions{});
    if (!g) {
      ADD_FAILURE() << e.id << " does not trace:\n" << g.error().render();
      continue;
    }
    int inputs = 0, params = 0;
    for (const Node* n : g->nodes()) {
      const bool is_input = n->op_as<InputOp>() != nullptr;
      const bool is_param = n->op_as<ConstantOp>() != nullptr;
      inputs += is_input;
      params += is_param;
      if (is_input || is_param) {
        EXPECT_EQ(n->type.dtype, want->second) << e.id << ": " << n->id() << " is " << dtype_name(n->type.dtype);
      }
    }
    EXPECT_GT(inputs, 0) << e.id << " has no inputs";
    if (e.family != "attention" && e.family != "softmax" && e.family != "elementwise") {
      EXPECT_GT(params, 0) << e.id << " has no parameters";
    }
    EXPECT_FALSE(g->outputs().empty()) << e.id;
    for (const std::string& out : g->outputs()) {
      const Node* n = g->find(out);
      ASSERT_NE(n, nullptr) << e.id << ": output " << out;
      EXPECT_EQ(n->type.dtype, want->second) << e.id << ": output " << out << " is " << dtype_name(n->type.dtype);
    }
  }
}

}  // namespace
}  // namespace tessera

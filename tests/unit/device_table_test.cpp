// Unit tests for DeviceTable: the shipped table, lookups, the default-table search, and every
// validation error with its file:line:col.
#include <gtest/gtest.h>

#include <string>

#include "tessera/target/device.h"

namespace tessera {
namespace {

// One valid device; tests splice a bad line in to provoke each error.
std::string device_yaml(const std::string& extra_field = "", const std::string& name = "h100",
                        const std::string& arch = "sm_90") {
  return "devices:\n"
         "  - name: " + name + "\n"
         "    full_name: Test GPU\n"
         "    arch: " + arch + "\n"
         "    sm_count: 132\n"
         "    smem_per_block: 232448\n"
         "    smem_per_sm: 233472\n"
         "    regs_per_sm: 65536\n"
         "    max_blocks_per_sm: 32\n"
         "    l2_bytes: 52428800\n"
         "    dram_gbps: 3350\n"
         "    fp32_tflops: 66.9\n"
         "    tensor_tflops_bf16: 989\n" + extra_field;
}

TEST(DeviceTableTest, ShippedTableDescribesEveryDocumentedDevice) {
  Expected<DeviceTable> t = DeviceTable::load_file(TESSERA_SOURCE_DIR "/data/devices.yaml");
  ASSERT_TRUE(t) << t.error().render();
  std::vector<std::string> names;
  for (const DeviceDesc& d : t->all()) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"h100", "h200", "a100", "l40s", "rtx4090", "rtx5090"}));
  for (const DeviceDesc& d : t->all()) {
    EXPECT_TRUE(is_known_arch(d.arch)) << d.name;
    EXPECT_GT(d.sm_count, 0) << d.name;
    EXPECT_LE(d.smem_per_block, d.smem_per_sm) << d.name;
  }
  const DeviceDesc* h100 = t->find("h100");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->arch, "sm_90");
  EXPECT_EQ(h100->sm_count, 132);
  EXPECT_EQ(h100->smem_per_block, 232448);
  EXPECT_DOUBLE_EQ(h100->dram_gbps, 3350);
  EXPECT_DOUBLE_EQ(h100->fp32_tflops, 66.9);
  EXPECT_EQ(h100->warp_size, 32);
  // The occupancy limits the static kernel report reads (CUDA's per-compute-capability table).
  EXPECT_EQ(h100->max_blocks_per_sm, 32);
  EXPECT_EQ(h100->smem_reserved_per_block, 1024);
  EXPECT_EQ(h100->reg_alloc_unit, 256);
  EXPECT_EQ(t->find("l40s")->max_blocks_per_sm, 24);
  EXPECT_EQ(t->find("rtx5090")->max_blocks_per_sm, 24);
  EXPECT_EQ(t->find("a100")->max_blocks_per_sm, 32);
}

TEST(DeviceTableTest, FindByNameAndArch) {
  Expected<DeviceTable> t = DeviceTable::load_file(TESSERA_SOURCE_DIR "/data/devices.yaml");
  ASSERT_TRUE(t) << t.error().render();
  EXPECT_EQ(t->find("b200"), nullptr);
  ASSERT_NE(t->find_by_arch("sm_80"), nullptr);
  EXPECT_EQ(t->find_by_arch("sm_80")->name, "a100");
  EXPECT_EQ(t->find_by_arch("sm_90")->name, "h100") << "first device with the arch wins";
  EXPECT_EQ(t->find_by_arch("sm_86"), nullptr);
}

// `--arch sm_90a`: the H100 compiled for the arch-specific variant, whose kernels may use wgmma;
// it is not another device of the table (all() lists each device once).
TEST(DeviceTableTest, ArchSpecificVariantIsTheBaseDeviceWithTheVariantsFeatures) {
  Expected<DeviceTable> t = DeviceTable::load_file(TESSERA_SOURCE_DIR "/data/devices.yaml");
  ASSERT_TRUE(t) << t.error().render();
  const DeviceDesc* base = t->find_by_arch("sm_90");
  const DeviceDesc* variant = t->find_by_arch("sm_90a");
  ASSERT_NE(base, nullptr);
  ASSERT_NE(variant, nullptr);
  EXPECT_EQ(variant->name, "h100");
  EXPECT_EQ(variant->arch, "sm_90a");
  EXPECT_EQ(variant->sm_count, base->sm_count);
  EXPECT_TRUE(variant->features.wgmma);
  EXPECT_FALSE(base->features.wgmma);
  for (const DeviceDesc& d : t->all()) EXPECT_NE(d.arch, "sm_90a");
}

// Passes ask the features, one table: cp.async from sm_80, TMA and clusters from sm_90, wgmma
// only in sm_90a; every device of the table carries its arch's.
TEST(DeviceTableTest, EveryArchHasItsFeatures) {
  EXPECT_EQ(arch_features("sm_80"), (ArchFeatures{.cp_async = true, .mma_sync = true}));
  EXPECT_EQ(arch_features("sm_89"), (ArchFeatures{.cp_async = true, .mma_sync = true}));
  EXPECT_EQ(arch_features("sm_90"), (ArchFeatures{.cp_async = true, .mma_sync = true, .tma = true, .clusters = true}));
  EXPECT_EQ(arch_features("sm_90a"),
            (ArchFeatures{.cp_async = true, .mma_sync = true, .tma = true, .clusters = true, .wgmma = true}));
  EXPECT_EQ(arch_features("sm_100"), (ArchFeatures{.cp_async = true, .mma_sync = true, .tma = true, .clusters = true}));
  EXPECT_EQ(arch_features("sm_75"), ArchFeatures{});
  Expected<DeviceTable> t = DeviceTable::load_default();
  ASSERT_TRUE(t) << t.error().render();
  for (const DeviceDesc& d : t->all()) EXPECT_EQ(d.features, arch_features(d.arch)) << d.name;
}

TEST(DeviceTableTest, DefaultTableIsFoundNextToTheLibrary) {
  Expected<DeviceTable> t = DeviceTable::load_default();
  ASSERT_TRUE(t) << t.error().render();
  EXPECT_NE(t->find("rtx5090"), nullptr);
}

TEST(DeviceTableTest, OptionalFieldsKeepTheirDefaults) {
  Expected<DeviceTable> t = DeviceTable::parse(device_yaml("    warp_size: 32\n"), "t.yaml");
  ASSERT_TRUE(t) << t.error().render();
  ASSERT_EQ(t->all().size(), 1u);
  EXPECT_EQ(t->all()[0].max_threads_per_block, 1024);
  EXPECT_EQ(t->all()[0].full_name, "Test GPU");
}

TEST(DeviceTableTest, KnownArchs) {
  EXPECT_TRUE(is_known_arch("sm_90a"));
  EXPECT_TRUE(is_known_arch("sm_120"));
  EXPECT_FALSE(is_known_arch("sm_91"));
  EXPECT_FALSE(is_known_arch(""));
  EXPECT_EQ(known_archs().front(), "sm_80");
}

TEST(DeviceTableTest, UnknownFieldIsLocated) {
  Expected<DeviceTable> t = DeviceTable::parse(device_yaml("    memory_type: hbm3\n"), "dev.yaml");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().loc.str(), "dev.yaml:14:5");
  EXPECT_NE(t.error().message.find("unknown device field 'memory_type'"), std::string::npos)
      << t.error().message;
  EXPECT_EQ(t.error().source_line, "    memory_type: hbm3");
}

TEST(DeviceTableTest, IllTypedValueIsLocatedAtTheValue) {
  std::string text = device_yaml();
  text.replace(text.find("sm_count: 132"), 13, "sm_count: many");
  Expected<DeviceTable> t = DeviceTable::parse(text, "dev.yaml");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "device field 'sm_count' must be an integer, got 'many'");
  EXPECT_EQ(t.error().loc.str(), "dev.yaml:5:15");
}

TEST(DeviceTableTest, NonPositiveSizeIsRejected) {
  std::string text = device_yaml();
  text.replace(text.find("dram_gbps: 3350"), 15, "dram_gbps: -1");
  Expected<DeviceTable> t = DeviceTable::parse(text, "dev.yaml");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "device field 'dram_gbps' must be positive, got -1");
  EXPECT_EQ(t.error().loc.line, 11);
}

TEST(DeviceTableTest, MissingRequiredFieldNamesTheDevice) {
  std::string text = device_yaml();
  text.erase(text.find("    l2_bytes:"), std::string("    l2_bytes: 52428800\n").size());
  Expected<DeviceTable> t = DeviceTable::parse(text, "dev.yaml");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "device 'h100' lacks the required field 'l2_bytes'");
  EXPECT_EQ(t.error().loc.str(), "dev.yaml:2:5");
}

// The static kernel report's occupancy needs the resident-block limit: no default stands in for it.
TEST(DeviceTableTest, MaxBlocksPerSmIsRequired) {
  std::string text = device_yaml();
  text.erase(text.find("    max_blocks_per_sm:"), std::string("    max_blocks_per_sm: 32\n").size());
  Expected<DeviceTable> t = DeviceTable::parse(text, "dev.yaml");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "device 'h100' lacks the required field 'max_blocks_per_sm'");
}

TEST(DeviceTableTest, UnknownArchIsRejected) {
  Expected<DeviceTable> t = DeviceTable::parse(device_yaml("", "x", "sm_91"), "dev.yaml");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("unknown architecture 'sm_91'"), std::string::npos);
  EXPECT_EQ(t.error().loc.str(), "dev.yaml:4:11");
}

TEST(DeviceTableTest, DuplicateDeviceNamesTheFirstDefinition) {
  std::string two = device_yaml();
  std::string second = device_yaml();
  two += second.substr(second.find("  - name"));
  Expected<DeviceTable> t = DeviceTable::parse(two, "dev.yaml");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "device 'h100' is defined twice (first at dev.yaml:2:11)");
  EXPECT_EQ(t.error().loc.line, 14);
}

TEST(DeviceTableTest, YamlSyntaxErrorIsLocated) {
  Expected<DeviceTable> t = DeviceTable::parse("devices:\n  - name: [h100\n", "bad.yaml");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().loc.file, "bad.yaml");
  EXPECT_GE(t.error().loc.line, 2);
}

TEST(DeviceTableTest, WrongShapesAreErrors) {
  EXPECT_FALSE(DeviceTable::parse("- a\n- b\n", "s.yaml"));
  EXPECT_FALSE(DeviceTable::parse("devices: 3\n", "s.yaml"));
  EXPECT_FALSE(DeviceTable::parse("devices:\n  - 3\n", "s.yaml"));
  Expected<DeviceTable> t = DeviceTable::parse("gpus: []\n", "s.yaml");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "unknown key 'gpus' (expected 'devices')");
  EXPECT_EQ(t.error().loc.str(), "s.yaml:1:1");
}

TEST(DeviceTableTest, MissingFileIsAnError) {
  Expected<DeviceTable> t = DeviceTable::load_file("/nonexistent/devices.yaml");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("/nonexistent/devices.yaml"), std::string::npos);
}

}  // namespace
}  // namespace tessera

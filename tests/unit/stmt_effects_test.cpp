// The statement-effect queries (tessera/ir/stmt_effects.h) on bodies parsed from their printouts.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tessera/ir/parser.h"
#include "tessera/ir/stmt_effects.h"

namespace tessera {
namespace {

Body parsed(const std::string& text) {
  Expected<Body> body = parse_body(text, "<test>");
  EXPECT_TRUE(body) << body.error().render();
  return body ? *body : Body{};
}

using Names = std::set<std::string>;

// A reduction with an element-wise epilogue: the row loop writes y, the inner loop only reads x.
constexpr const char* kReduction =
    "for a0 in 0..16:  # free\n"
    "  acc0 = init(0.0)\n"
    "  for a1 in 0..64:  # reduce\n"
    "    in0 = load x[a0, a1]\n"
    "    v0 = mul(in0, in0)\n"
    "    acc0 <- add(acc0, v0)\n"
    "  v1 = sqrt(acc0)\n"
    "  y[a0] = v1\n";

TEST(StmtEffects, WrittenBuffersAreTheTargetsOfWrites) {
  Body body = parsed(kReduction);
  EXPECT_EQ(written_buffers(body), (Names{"y"}));
  const auto* row = body[0].as<Loop>();
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(written_buffers(Body{row->body[1]}), Names{});  // the inner loop writes nothing
}

TEST(StmtEffects, ModifiedNamesIncludeUpdatedAccumulators) {
  Body body = parsed(kReduction);
  const auto* row = body[0].as<Loop>();
  ASSERT_NE(row, nullptr);
  // The inner loop binds a1, in0 and v0 and updates acc0, which the row loop bound outside it.
  EXPECT_EQ(modified_names(Body{row->body[1]}), (Names{"a1", "acc0", "in0", "v0"}));
  EXPECT_EQ(modified_names(body), (Names{"a0", "a1", "acc0", "in0", "v0", "v1"}));
}

TEST(StmtEffects, BindingCountsCountEveryBinding) {
  Body body = parsed(
      "for a0 in 0..4:\n"
      "  v0 = add(1.0, 2.0)\n"
      "for a1 in 0..4:\n"
      "  v0 = add(1.0, 3.0)\n"
      "  y[a1] = v0\n");
  std::map<std::string, int> counts = binding_counts(body);
  EXPECT_EQ(counts["v0"], 2);
  EXPECT_EQ(counts["a0"], 1);
  EXPECT_EQ(counts["a1"], 1);
}

TEST(StmtEffects, CollectivesSynchronizeAndStagesWriteTheirSlab) {
  Body body = parsed(
      "Tile(axes=(a0:32=THREAD, a1:8=BLOCK)):\n"
      "  x_smem = Stage(x, origin=(a1, 0), slab=(a2:64@1))\n"
      "  acc0 = init(0.0)\n"
      "  StridedLoop(a2 = a0; < 64; += 32):  # reduce\n"
      "    in0 = load x_smem[a2]\n"
      "    acc0 <- add(acc0, in0)\n"
      "  Combine(acc0, op=add)\n"
      "  if a0 == 0:\n"
      "    y[a1] = acc0\n");
  EXPECT_TRUE(contains_synchronization(body));
  EXPECT_EQ(written_buffers(body), (Names{"x_smem", "y"}));
  const auto* tile = body[0].as<Tile>();
  ASSERT_NE(tile, nullptr);
  EXPECT_FALSE(contains_synchronization(Body{tile->body[2]}));  // the StridedLoop
  EXPECT_TRUE(contains_synchronization(Body{tile->body[3]}));   // the Combine
  EXPECT_EQ(modified_names(Body{tile->body[3]}), Names{"acc0"});
}

TEST(StmtEffects, OnlyLoadsAssignsAndSelectsComputeValuesOnly) {
  Body body = parsed(
      "in0 = load x[0]\n"
      "v0 = mul(in0, 2.0)\n"
      "v1 = select(0 < 1, v0, in0)\n"
      "acc0 = init(0.0)\n"
      "acc0 <- add(acc0, v1)\n"
      "y[0] = acc0\n");
  ASSERT_EQ(body.size(), 6u);
  EXPECT_TRUE(computes_value_only(body[0]));
  EXPECT_TRUE(computes_value_only(body[1]));
  EXPECT_TRUE(computes_value_only(body[2]));
  EXPECT_FALSE(computes_value_only(body[3]));
  EXPECT_FALSE(computes_value_only(body[4]));
  EXPECT_FALSE(computes_value_only(body[5]));
}

}  // namespace
}  // namespace tessera

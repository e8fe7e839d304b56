// Ring-buffered Stages (Stage slot/slots) and ring Smem (Smem slots): printed, parsed, serialized,
// compared and hashed through the reflection machinery, and verified; a plain Stage prints as
// before. The passes that make rings are tested by tests/golden/double_buffer/ and
// tests/golden/pipeline_k_outer/, the simulator's ring reports by tests/unit/sim_target_test.cpp.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tessera/ir/parser.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/stmt.h"
#include "tessera/ir/verifier.h"

namespace tessera {
namespace {

const char* kRingText =
    "for a3 in 0..8:  # reduce\n"
    "  x_smem = Stage(x, origin=(0, a3 * 32), slab=(a2:32@1), slot=a3 % 2, slots=2) async\n"
    "  AsyncWait(keep=0)\n"
    "  in0 = load x_smem[a3 % 2, 5]\n";

Stage ring_stage(int64_t slots, Expr slot) {
  Stage s{"x_smem", "x", {Expr::int_(0), Expr::var("a3") * 32}, {SlabDim{"a2", 32, 1}}, StageTransport::Async, 0};
  s.slots = slots;
  s.slot = std::move(slot);
  return s;
}

TEST(RingStage, PrintsParsesAndPrintsAgain) {
  auto parsed = parse_body(kRingText, "ring.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_body(*parsed), kRingText);
  const auto* stage = (*parsed)[0].as<Loop>()->body[0].as<Stage>();
  ASSERT_NE(stage, nullptr);
  EXPECT_EQ(stage->slots, 2);
  EXPECT_EQ(stage->slot.str(), "a3 % 2");
}

TEST(RingStage, PlainStagePrintsWithoutRingFields) {
  EXPECT_EQ(print_stmt(ring_stage(1, Expr::int_(0))),
            "x_smem = Stage(x, origin=(0, a3 * 32), slab=(a2:32@1)) async\n");
  auto parsed = parse_body("x_smem = Stage(x, origin=(0, 0), slab=(a2:32@1))\n", "plain.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ((*parsed)[0].as<Stage>()->slots, 1);
  EXPECT_EQ((*parsed)[0].as<Stage>()->slot.str(), "0");
}

TEST(RingStage, SlotsAndSlotTakePartInEqualityAndHash) {
  const Stmt a = ring_stage(2, Expr::var("a3") % 2);
  const Stmt same = ring_stage(2, Expr::var("a3") % 2);
  const Stmt more_slots = ring_stage(3, Expr::var("a3") % 2);
  const Stmt other_slot = ring_stage(2, (Expr::var("a3") + 1) % 2);
  EXPECT_TRUE(structurally_equal(a, same));
  EXPECT_EQ(structural_hash(a), structural_hash(same));
  EXPECT_FALSE(structurally_equal(a, more_slots));
  EXPECT_NE(structural_hash(a), structural_hash(more_slots));
  EXPECT_FALSE(structurally_equal(a, other_slot));
  EXPECT_NE(structural_hash(a), structural_hash(other_slot));
}

TEST(RingStage, JsonRoundTripKeepsTheRing) {
  Smem ring{"x_smem", DType::F32, {2, 32}};
  ring.slots = 2;
  const Body body = {ring_stage(2, Expr::var("a3") % 2), ring};
  auto back = body_from_json(body_to_json(body));
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(*back, body));
  EXPECT_EQ((*back)[0].as<Stage>()->slots, 2);
  EXPECT_EQ((*back)[1].as<Smem>()->slots, 2);
}

TEST(RingStage, JsonWrittenBeforeRingsReadsAsNoRing) {
  nlohmann::json j = body_to_json({ring_stage(1, Expr::int_(0))});
  j[0].erase("slots");
  j[0].erase("slot");
  auto back = body_from_json(j);
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_EQ((*back)[0].as<Stage>()->slots, 1);
}

TEST(RingSmem, PrintsParsesAndPrintsAgain) {
  const std::string text = "Smem x_smem: f32[3, 8, 32] slots=3\n";
  auto parsed = parse_body(text, "ring_smem.kir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_body(*parsed), text);
  EXPECT_EQ((*parsed)[0].as<Smem>()->slots, 3);
}

void expect_error(const Status& s, const std::string& needle) {
  ASSERT_FALSE(s) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

// The Stage in the K loop that binds a3.
Body in_k_loop(Stage s) { return {Loop{"a3", Expr::int_(0), Expr::int_(8), LoopRole::Reduce, 0, {std::move(s)}}}; }

TEST(RingVerifier, ChecksSlotCountsAndTheRingShape) {
  EXPECT_TRUE(verify_body(in_k_loop(ring_stage(2, Expr::var("a3") % 2)), Dialect::Tile, "k"));
  expect_error(verify_body(in_k_loop(ring_stage(1, Expr::var("a3"))), Dialect::Tile, "k"),
               "a Stage without a ring (slots=1) fills slot 0, not slot a3");
  expect_error(verify_body(in_k_loop(ring_stage(9, Expr::int_(0))), Dialect::Tile, "k"), "slots=9 is not from 1 to 8");
  expect_error(verify_body(in_k_loop(ring_stage(0, Expr::int_(0))), Dialect::Tile, "k"), "slots=0 is not from 1 to 8");
  Smem bad{"x_smem", DType::F32, {3, 32}};
  bad.slots = 2;
  expect_error(verify_body({bad}, Dialect::Kernel, "k"),
               "Smem x_smem is a ring of 2 slots, so its first dimension must be 2");
  Smem good{"x_smem", DType::F32, {2, 32}};
  good.slots = 2;
  EXPECT_TRUE(verify_body({good}, Dialect::Kernel, "k"));
}

}  // namespace
}  // namespace tessera

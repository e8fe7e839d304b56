// stage_tma_boxes (tessera/ir/stmt.h): which TMA box copies move a Stage's slab, the one rule
// tma_copy, double_buffer and materialize read. A slab fits one box; a first dim over 256 elements
// is cut into the fewest equal boxes that tile it; everything the hardware or the row-major landing
// refuses is an error saying why.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/ir/stmt.h"
#include "tessera/ir/type.h"

namespace tessera {
namespace {

Stage row_stage(std::vector<SlabDim> slab, int64_t slots = 1) {
  Stage s{"x_smem", "x", {Expr::var("a1"), Expr::int_(0)}, std::move(slab), StageTransport::Sync, 0};
  s.slots = slots;
  return s;
}

TensorType f32(Shape shape, DType dtype = DType::F32) { return TensorType{std::move(shape), dtype}; }

TEST(TmaBoxes, ASlabWithinTheLimitsIsOneBox) {
  Expected<TmaBoxes> b = stage_tma_boxes(row_stage({{"a2", 8, 0}, {"a3", 32, 1}}), f32({64, 512}));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->box, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(b->copies, 1);
}

TEST(TmaBoxes, ALongFirstDimIsCutIntoTheFewestEqualBoxes) {
  Expected<TmaBoxes> b = stage_tma_boxes(row_stage({{"a2", 2048, 1}}), f32({4, 2048}));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->box, (std::vector<int64_t>{1, 256}));
  EXPECT_EQ(b->copies, 8);
  EXPECT_EQ(b->step_dim, 1);
  // 2400 f32: boxes of 160 (the largest 128-byte multiple that tiles the row); 3072 bf16: 256.
  b = stage_tma_boxes(row_stage({{"a2", 2400, 1}}), f32({4, 2400}));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->box[1], 160);
  EXPECT_EQ(b->copies, 15);
  b = stage_tma_boxes(row_stage({{"a2", 3072, 1}}), f32({4, 3072}, DType::BF16));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->box[1], 256);
  EXPECT_EQ(b->copies, 12);
  // A row of 1000 f32 has no such box size (no multiple of 32 elements divides it).
  b = stage_tma_boxes(row_stage({{"a2", 1000, 1}}), f32({4, 1000}));
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("128-byte multiples"), std::string::npos) << b.error().message;
}

// split_inner_for_swizzle's layout: 128 columns of a 32-row slab as 4 blocks of 32 columns
// (`a5:4@1*32`), one 32x32 box per block, box b reading columns 32b.. and landing at block b.
TEST(TmaBoxes, ColumnBlocksTakeOneBoxEach) {
  Stage s = row_stage({{"a5", 4, 1, 32}, {"a4", 32, 0}, {"a6", 32, 1}});
  s.swizzle = SmemSwizzle::B128;
  Expected<TmaBoxes> b = stage_tma_boxes(s, f32({512, 512}));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->box, (std::vector<int64_t>{32, 32}));
  EXPECT_EQ(b->copies, 4);
  EXPECT_EQ(b->step_dim, 1);
  EXPECT_EQ(b->source_step, 32);
  EXPECT_EQ(b->slab_step, 1);
  // Blocks that are not the inner dim's extent apart, or reach past the source, are refused; so
  // is a strided dim anywhere else.
  EXPECT_FALSE(stage_tma_boxes(row_stage({{"a5", 4, 1, 64}, {"a4", 32, 0}, {"a6", 32, 1}}), f32({512, 512})));
  Expected<TmaBoxes> wide = stage_tma_boxes(row_stage({{"a5", 8, 1, 32}, {"a4", 32, 0}, {"a6", 32, 1}}), f32({512, 128}));
  ASSERT_FALSE(wide);
  EXPECT_NE(wide.error().message.find("outside the source"), std::string::npos) << wide.error().message;
  Expected<TmaBoxes> strided = stage_tma_boxes(row_stage({{"a4", 32, 0, 2}, {"a6", 32, 1}}), f32({512, 512}));
  ASSERT_FALSE(strided);
  EXPECT_NE(strided.error().message.find("steps 2"), std::string::npos) << strided.error().message;
}

TEST(TmaBoxes, WhatNoBoxCopyCanMoveIsRefusedWithTheReason) {
  auto why = [](const Stage& s, const TensorType& t) {
    Expected<TmaBoxes> b = stage_tma_boxes(s, t);
    return b ? std::string("accepted") : b.error().message;
  };
  EXPECT_NE(why(row_stage({{"a2", 8, 0}, {"a3", 512, 1}}), f32({64, 512})).find("only the slab's first dim is cut"),
            std::string::npos);
  EXPECT_NE(why(row_stage({{"a3", 32, 1}, {"a2", 8, 0}}), f32({64, 512})).find("dim order"), std::string::npos);
  EXPECT_NE(why(row_stage({{"a2", 31, 1}}), f32({4, 31})).find("not a multiple of 16"), std::string::npos);
  Stage padded = row_stage({{"a2", 8, 0}, {"a3", 32, 1}});
  padded.pad = 1;
  EXPECT_NE(why(padded, f32({64, 512})).find("padded"), std::string::npos);
  // 8 x 4 f32 boxes are 128 bytes: a ring of them is fine; 4 x 4 (64 bytes) cannot ring.
  EXPECT_EQ(why(row_stage({{"a2", 8, 0}, {"a3", 4, 1}}, 2), f32({64, 512})), "accepted");
  EXPECT_NE(why(row_stage({{"a2", 4, 0}, {"a3", 4, 1}}, 2), f32({64, 512})).find("128-byte aligned"), std::string::npos);
  Stage swizzled = row_stage({{"a2", 8, 0}, {"a3", 64, 1}});
  swizzled.swizzle = SmemSwizzle::B128;
  EXPECT_NE(why(swizzled, f32({64, 512})).find("wider than the 128B swizzle"), std::string::npos);
}

}  // namespace
}  // namespace tessera

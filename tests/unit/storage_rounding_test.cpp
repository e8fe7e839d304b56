// round_to_storage: what a GPU buffer of each dtype holds (the simulator stores through it).
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/eval/tensor_value.h"

namespace tessera {
namespace {

TEST(StorageRounding, F16RoundsToElevenBitsTiesToEven) {
  EXPECT_EQ(round_to_storage(1.0 + std::ldexp(1.0, -11), DType::F16), 1.0);  // tie -> even
  EXPECT_EQ(round_to_storage(1.0 + 3 * std::ldexp(1.0, -11), DType::F16), 1.0 + std::ldexp(1.0, -9));
  EXPECT_EQ(round_to_storage(1.0 + std::ldexp(1.2, -11), DType::F16), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(round_to_storage(65504.0, DType::F16), 65504.0);
  EXPECT_TRUE(std::isinf(round_to_storage(65520.0, DType::F16)));
  EXPECT_EQ(round_to_storage(std::ldexp(1.0, -24), DType::F16), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(round_to_storage(std::ldexp(1.0, -25), DType::F16), 0.0);                   // tie -> even (0)
  EXPECT_EQ(round_to_storage(-3.0, DType::F16), -3.0);
}

TEST(StorageRounding, Bf16KeepsEightBitsAndTheFloatRange) {
  EXPECT_EQ(round_to_storage(1.0 + std::ldexp(1.0, -8), DType::BF16), 1.0);  // tie -> even
  EXPECT_EQ(round_to_storage(1.0 + 3 * std::ldexp(1.0, -8), DType::BF16), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(round_to_storage(3.0e38, DType::BF16), 0x1.c4p+127);  // bf16 0x7F62: large values stay finite
  EXPECT_EQ(round_to_storage(0.1, DType::BF16), 0.10009765625);
}

TEST(StorageRounding, F32IsFloatAndIntegersTruncate) {
  EXPECT_EQ(round_to_storage(0.1, DType::F32), static_cast<double>(0.1f));
  EXPECT_EQ(round_to_storage(-2.7, DType::I64), -2.0);
  EXPECT_EQ(round_to_storage(0.5, DType::Bool), 1.0);
  EXPECT_TRUE(std::isnan(round_to_storage(NAN, DType::BF16)));
}

}  // namespace
}  // namespace tessera

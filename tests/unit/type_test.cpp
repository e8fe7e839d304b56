// Unit tests for dtypes, shapes, tensor types and Python-like attribute rendering.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tessera/ir/attr.h"
#include "tessera/ir/type.h"

namespace tessera {
namespace {

TEST(TypeTest, DTypeNames) {
  EXPECT_EQ(dtype_name(DType::F32), "float32");
  EXPECT_EQ(dtype_name(DType::F16), "float16");
  EXPECT_EQ(dtype_name(DType::BF16), "bfloat16");
  EXPECT_EQ(dtype_name(DType::I32), "int32");
  EXPECT_EQ(dtype_name(DType::I64), "int64");
  EXPECT_EQ(dtype_name(DType::Bool), "bool");
  EXPECT_EQ(dtype_short_name(DType::F32), "f32");
  EXPECT_EQ(dtype_short_name(DType::F16), "f16");
  EXPECT_EQ(dtype_short_name(DType::BF16), "bf16");
  EXPECT_EQ(dtype_short_name(DType::I32), "i32");
  EXPECT_EQ(dtype_short_name(DType::I64), "i64");
  EXPECT_EQ(dtype_short_name(DType::Bool), "bool");
}

TEST(TypeTest, ParseDTypeAcceptsBothSpellingsAndRejectsOthers) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool}) {
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
    EXPECT_EQ(parse_dtype(dtype_short_name(t)), t);
  }
  EXPECT_EQ(parse_dtype("float"), std::nullopt);
  EXPECT_EQ(parse_dtype(""), std::nullopt);
  EXPECT_EQ(parse_dtype("F32"), std::nullopt);
  EXPECT_EQ(parse_dtype("float32 "), std::nullopt);
}

TEST(TypeTest, DTypeBytesAndFloatness) {
  EXPECT_EQ(dtype_bytes(DType::F32), 4);
  EXPECT_EQ(dtype_bytes(DType::F16), 2);
  EXPECT_EQ(dtype_bytes(DType::BF16), 2);
  EXPECT_EQ(dtype_bytes(DType::I32), 4);
  EXPECT_EQ(dtype_bytes(DType::I64), 8);
  EXPECT_EQ(dtype_bytes(DType::Bool), 1);
  EXPECT_TRUE(dtype_is_float(DType::F32));
  EXPECT_TRUE(dtype_is_float(DType::F16));
  EXPECT_TRUE(dtype_is_float(DType::BF16));
  EXPECT_FALSE(dtype_is_float(DType::I32));
  EXPECT_FALSE(dtype_is_float(DType::I64));
  EXPECT_FALSE(dtype_is_float(DType::Bool));
}

TEST(TypeTest, NumElements) {
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({7}), 7);
  EXPECT_EQ(num_elements({16, 64}), 1024);
  EXPECT_EQ(num_elements({2, 0, 3}), 0);
  EXPECT_EQ(num_elements({1, 32, 2048}), 65536);
}

TEST(TypeTest, ShapeStr) {
  EXPECT_EQ(shape_str({}), "()");
  EXPECT_EQ(shape_str({7}), "(7,)");
  EXPECT_EQ(shape_str({16, 64}), "(16, 64)");
  EXPECT_EQ(shape_str({1, 32, 2048}), "(1, 32, 2048)");
}

TEST(TypeTest, TensorTypeStrAndEquality) {
  TensorType t{{16, 64}, DType::F32};
  EXPECT_EQ(t.str(), "(16, 64) float32");
  EXPECT_EQ((TensorType{{}, DType::Bool}).str(), "() bool");
  EXPECT_EQ((TensorType{{5}, DType::BF16}).str(), "(5,) bfloat16");
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.dim(1), 64);
  EXPECT_EQ(t, (TensorType{{16, 64}, DType::F32}));
  EXPECT_FALSE(t == (TensorType{{16, 64}, DType::F16}));
  EXPECT_FALSE(t == (TensorType{{64, 16}, DType::F32}));
}

TEST(AttrTest, ScalarsPrintLikePython) {
  EXPECT_EQ(attr_str(true), "True");
  EXPECT_EQ(attr_str(false), "False");
  EXPECT_EQ(attr_str(int64_t{-1}), "-1");
  EXPECT_EQ(attr_str(int64_t{2048}), "2048");
  EXPECT_EQ(attr_str(std::string("tanh")), "'tanh'");
  EXPECT_EQ(attr_str(std::string("it's")), "\"it's\"");
  EXPECT_EQ(attr_str(std::string("a\\b\n")), "'a\\\\b\\n'");
}

TEST(AttrTest, FloatsPrintShortestRoundTripPythonStyle) {
  EXPECT_EQ(attr_str(1e-6), "1e-06");
  EXPECT_EQ(attr_str(1e-5), "1e-05");
  EXPECT_EQ(attr_str(0.0001), "0.0001");
  EXPECT_EQ(attr_str(0.5), "0.5");
  EXPECT_EQ(attr_str(2.0), "2.0");
  EXPECT_EQ(attr_str(0.0), "0.0");
  EXPECT_EQ(attr_str(-0.0), "-0.0");
  EXPECT_EQ(attr_str(-2.5), "-2.5");
  EXPECT_EQ(attr_str(0.1), "0.1");
  EXPECT_EQ(attr_str(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(attr_str(2048.0), "2048.0");
  EXPECT_EQ(attr_str(1e15), "1000000000000000.0");
  EXPECT_EQ(attr_str(1e16), "1e+16");
  EXPECT_EQ(attr_str(1.5e20), "1.5e+20");
  EXPECT_EQ(attr_str(123.456), "123.456");
  EXPECT_EQ(attr_str(1e-300), "1e-300");
  EXPECT_EQ(attr_str(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(attr_str(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(attr_str(std::nan("")), "nan");
}

TEST(AttrTest, IntListsPrintAsTuples) {
  EXPECT_EQ(attr_str(std::vector<int64_t>{1024}), "(1024,)");
  EXPECT_EQ(attr_str(std::vector<int64_t>{1, 2}), "(1, 2)");
  EXPECT_EQ(attr_str(std::vector<int64_t>{}), "()");
  EXPECT_EQ(attr_str(std::vector<int64_t>{0, -1, 2}), "(0, -1, 2)");
}

TEST(AttrTest, AttrsKeepInsertionOrderAndReplaceInPlace) {
  Attrs a;
  EXPECT_TRUE(a.empty());
  a.set("dim", int64_t{-1});
  a.set("keepdim", true);
  a.set("eps", 1e-6);
  a.set("dim", int64_t{2});
  ASSERT_EQ(a.items().size(), 3u);
  EXPECT_EQ(a.items()[0].first, "dim");
  EXPECT_EQ(a.items()[1].first, "keepdim");
  EXPECT_EQ(a.items()[2].first, "eps");
  EXPECT_EQ(a.get_int("dim", 0), 2);
  EXPECT_FALSE(a.empty());
}

TEST(AttrTest, TypedGettersFallBackOnMissingOrWrongType) {
  Attrs a;
  a.set("dim", int64_t{3});
  a.set("eps", 0.25);
  a.set("keepdim", true);
  a.set("approximate", std::string("tanh"));
  a.set("shape", std::vector<int64_t>{4, 5});
  EXPECT_TRUE(a.has("eps"));
  EXPECT_FALSE(a.has("missing"));
  EXPECT_EQ(a.find("missing"), nullptr);
  ASSERT_NE(a.find("shape"), nullptr);
  EXPECT_EQ(attr_str(*a.find("shape")), "(4, 5)");

  EXPECT_EQ(a.get_int("dim", -7), 3);
  EXPECT_EQ(a.get_int("missing", -7), -7);
  EXPECT_EQ(a.get_int("eps", -7), -7);
  EXPECT_EQ(a.get_float("eps", 9.0), 0.25);
  EXPECT_EQ(a.get_float("dim", 9.0), 3.0);  // ints are accepted as floats
  EXPECT_EQ(a.get_float("keepdim", 9.0), 9.0);
  EXPECT_TRUE(a.get_bool("keepdim", false));
  EXPECT_FALSE(a.get_bool("dim", false));
  EXPECT_EQ(a.get_string("approximate", "none"), "tanh");
  EXPECT_EQ(a.get_string("dim", "none"), "none");
}

TEST(AttrTest, Equality) {
  Attrs a, b;
  a.set("x", int64_t{1});
  b.set("x", int64_t{1});
  EXPECT_EQ(a, b);
  b.set("x", 1.0);
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace tessera

// Unit tests for the knob schema helpers: type names and checks, descriptions, typing YAML
// scalars by content, and the YAML spelling of values (which must read back unchanged).
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/pass/knob.h"

namespace tessera {
namespace {

TEST(KnobTest, TypeNames) {
  EXPECT_EQ(knob_type_name(KnobType::Bool), "bool");
  EXPECT_EQ(knob_type_name(KnobType::Int), "int");
  EXPECT_EQ(knob_type_name(KnobType::Float), "float");
  EXPECT_EQ(knob_type_name(KnobType::String), "string");
  EXPECT_EQ(knob_type_name(KnobType::IntList), "int-list");
}

TEST(KnobTest, ValueTypeChecks) {
  EXPECT_TRUE(knob_value_has_type(AttrValue(int64_t{4}), KnobType::Int));
  EXPECT_FALSE(knob_value_has_type(AttrValue(4.0), KnobType::Int));
  EXPECT_FALSE(knob_value_has_type(AttrValue(true), KnobType::Int));
  EXPECT_TRUE(knob_value_has_type(AttrValue(int64_t{4}), KnobType::Float));  // ints widen to float
  EXPECT_TRUE(knob_value_has_type(AttrValue(0.5), KnobType::Float));
  EXPECT_TRUE(knob_value_has_type(AttrValue(false), KnobType::Bool));
  EXPECT_FALSE(knob_value_has_type(AttrValue(int64_t{0}), KnobType::Bool));
  EXPECT_TRUE(knob_value_has_type(AttrValue(std::string("x")), KnobType::String));
  EXPECT_FALSE(knob_value_has_type(AttrValue(std::string("x")), KnobType::IntList));
  EXPECT_TRUE(knob_value_has_type(AttrValue(std::vector<int64_t>{1, 2}), KnobType::IntList));
}

TEST(KnobTest, DescribeKnobWithCandidatesAndHelp) {
  KnobSpec k{"BN", KnobType::Int, {int64_t{32}, int64_t{64}, int64_t{128}}, std::nullopt, "threads per block"};
  EXPECT_EQ(describe_knob(k), "BN (int, default: heuristic, candidates: 32, 64, 128) \u2014 threads per block");
}

TEST(KnobTest, DescribeKnobWithDefaultAndNoHelp) {
  KnobSpec k{"swizzle", KnobType::Bool, {}, AttrValue(true), ""};
  EXPECT_EQ(describe_knob(k), "swizzle (bool, default: true)");
}

TEST(KnobTest, ParsesScalarsByContent) {
  EXPECT_EQ(parse_knob_value("true"), AttrValue(true));
  EXPECT_EQ(parse_knob_value("False"), AttrValue(false));
  EXPECT_EQ(parse_knob_value("128"), AttrValue(int64_t{128}));
  EXPECT_EQ(parse_knob_value("-3"), AttrValue(int64_t{-3}));
  EXPECT_EQ(parse_knob_value("+7"), AttrValue(int64_t{7}));
  EXPECT_EQ(parse_knob_value("1.41"), AttrValue(1.41));
  EXPECT_EQ(parse_knob_value("1e-3"), AttrValue(1e-3));
  EXPECT_EQ(parse_knob_value(".5"), AttrValue(0.5));
  EXPECT_EQ(parse_knob_value("-.inf"), AttrValue(-HUGE_VAL));
  EXPECT_EQ(parse_knob_value("tanh"), AttrValue(std::string("tanh")));
  EXPECT_EQ(parse_knob_value("sm_90"), AttrValue(std::string("sm_90")));
  EXPECT_EQ(parse_knob_value("1.2.3"), AttrValue(std::string("1.2.3")));
  EXPECT_EQ(parse_knob_value("0x10"), AttrValue(std::string("0x10")));
  // Beyond int64: kept as text, so that a type check rejects it with the text the user wrote.
  EXPECT_EQ(parse_knob_value("99999999999999999999"), AttrValue(std::string("99999999999999999999")));
  EXPECT_EQ(parse_knob_value("auto"), std::nullopt);
  auto nan = parse_knob_value(".nan");
  ASSERT_TRUE(nan && std::holds_alternative<double>(*nan));
  EXPECT_TRUE(std::isnan(std::get<double>(*nan)));
}

TEST(KnobTest, SpellsValuesAsYaml) {
  EXPECT_EQ(knob_value_str(AttrValue(true)), "true");
  EXPECT_EQ(knob_value_str(AttrValue(int64_t{-64})), "-64");
  EXPECT_EQ(knob_value_str(AttrValue(1.0)), "1.0");  // stays a float when read back
  EXPECT_EQ(knob_value_str(AttrValue(1.41)), "1.41");
  EXPECT_EQ(knob_value_str(AttrValue(1e20)), "1e+20");
  EXPECT_EQ(knob_value_str(AttrValue(HUGE_VAL)), ".inf");
  EXPECT_EQ(knob_value_str(AttrValue(std::vector<int64_t>{1, 2, 3})), "[1, 2, 3]");
  EXPECT_EQ(knob_value_str(AttrValue(std::vector<int64_t>{})), "[]");
  EXPECT_EQ(knob_value_str(AttrValue(std::string("row_major"))), "row_major");
}

TEST(KnobTest, QuotesStringsThatWouldReadAsSomethingElse) {
  EXPECT_EQ(knob_value_str(AttrValue(std::string("128"))), "\"128\"");
  EXPECT_EQ(knob_value_str(AttrValue(std::string("auto"))), "\"auto\"");
  EXPECT_EQ(knob_value_str(AttrValue(std::string("true"))), "\"true\"");
  EXPECT_EQ(knob_value_str(AttrValue(std::string(""))), "\"\"");
  EXPECT_EQ(knob_value_str(AttrValue(std::string("null"))), "\"null\"");
  EXPECT_EQ(knob_value_str(AttrValue(std::string("a: b"))), "\"a: b\"");
  EXPECT_EQ(knob_value_str(AttrValue(std::string("[x]"))), "\"[x]\"");
  EXPECT_EQ(knob_value_str(AttrValue(std::string("say \"hi\"\n"))), "\"say \\\"hi\\\"\\n\"");
}

TEST(KnobTest, PlainSpellingsReadBackToTheSameValue) {
  const std::vector<AttrValue> values = {AttrValue(false), AttrValue(int64_t{0}), AttrValue(int64_t{-9}),
                                         AttrValue(0.1), AttrValue(-2.5e-7), AttrValue(3.0),
                                         AttrValue(std::string("ldg")), AttrValue(-HUGE_VAL)};
  for (const AttrValue& v : values) {
    std::string text = knob_value_str(v);
    EXPECT_EQ(parse_knob_value(text), v) << text;
  }
}

}  // namespace
}  // namespace tessera

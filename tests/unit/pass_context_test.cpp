// Unit tests for PassContext::choose (pinned > tuner > replay > heuristic, out-of-candidate answers
// falling through, recording on the node, errors) and for the seeded RandomChoiceSource.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>

#include "tessera/ir/graph.h"
#include "tessera/pass/pass_context.h"
#include "tessera/tune/choice_source.h"

namespace tessera {
namespace {

// Answers every request with one fixed value (or nothing), and counts the requests it saw.
class FixedChoiceSource final : public ChoiceSource {
 public:
  FixedChoiceSource(std::string name, std::optional<AttrValue> answer) : name_(std::move(name)), answer_(std::move(answer)) {}
  std::string_view name() const override { return name_; }
  std::optional<AttrValue> choose(const ChoiceRequest& request) override {
    ++requests;
    last_candidates = request.candidates;
    last_pass = request.key.pass;
    keys.push_back(request.key);
    return answer_;
  }
  int requests = 0;
  std::vector<AttrValue> last_candidates;
  std::string last_pass;
  std::vector<DecisionKey> keys;

 private:
  std::string name_;
  std::optional<AttrValue> answer_;
};

std::vector<KnobSpec> launch_geometry_knobs() {
  return {
      KnobSpec{"BN", KnobType::Int, {int64_t{32}, int64_t{64}, int64_t{128}}, std::nullopt, "threads per block"},
      KnobSpec{"swizzle", KnobType::Bool, {}, std::nullopt, ""},
      KnobSpec{"order", KnobType::String, {}, std::nullopt, ""},
      KnobSpec{"ratio", KnobType::Float, {}, std::nullopt, ""},
  };
}

KnobPin pin(std::string knob, AttrValue value, int line = 3, int col = 22) {
  return KnobPin{std::move(knob), std::move(value), SourceLoc{"p.yaml", line, col, 2}};
}

class PassContextTest : public ::testing::Test {
 protected:
  PassContext make(std::vector<KnobPin> pins, ChoiceSource* tuner = nullptr, ChoiceSource* replay = nullptr) {
    return PassContext("launch_geometry", "t:004_launch_geometry", launch_geometry_knobs(), std::move(pins),
                       {tuner, replay}, &device_, &diags_);
  }
  static std::vector<AttrValue> bn_candidates() { return {int64_t{32}, int64_t{64}, int64_t{128}}; }

  DeviceDesc device_{};
  DiagnosticEngine diags_;
  Node node_ = [] {
    Node n;
    n.set_id("k0");
    return n;
  }();
};

TEST_F(PassContextTest, HeuristicDecidesWhenNothingElseDoes) {
  PassContext ctx = make({});
  Expected<AttrValue> v = ctx.choose("BN", node_, bn_candidates(), AttrValue(int64_t{64}));
  ASSERT_TRUE(v) << v.error().render();
  EXPECT_EQ(*v, AttrValue(int64_t{64}));
  ASSERT_EQ(node_.choices.size(), 1u);
  EXPECT_EQ(node_.choices[0], (KnobChoice{"launch_geometry", "BN", int64_t{64}, "heuristic"}));
}

TEST_F(PassContextTest, ReplayBeatsHeuristic) {
  FixedChoiceSource replay("replay", AttrValue(int64_t{32}));
  PassContext ctx = make({}, nullptr, &replay);
  Expected<AttrValue> v = ctx.choose("BN", node_, bn_candidates(), AttrValue(int64_t{64}));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, AttrValue(int64_t{32}));
  EXPECT_EQ(node_.choices.at(0).source, "replay");
}

TEST_F(PassContextTest, TunerBeatsReplay) {
  FixedChoiceSource tuner("tuner", AttrValue(int64_t{128}));
  FixedChoiceSource replay("replay", AttrValue(int64_t{32}));
  PassContext ctx = make({}, &tuner, &replay);
  Expected<AttrValue> v = ctx.choose("BN", node_, bn_candidates(), AttrValue(int64_t{64}));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, AttrValue(int64_t{128}));
  EXPECT_EQ(node_.choices.at(0).source, "tuner");
  EXPECT_EQ(replay.requests, 0);  // asked only when the tuner has no answer
  EXPECT_EQ(tuner.last_pass, "launch_geometry");
  EXPECT_EQ(tuner.last_candidates, bn_candidates());
}

TEST_F(PassContextTest, PinnedBeatsTuner) {
  FixedChoiceSource tuner("tuner", AttrValue(int64_t{128}));
  PassContext ctx = make({pin("BN", int64_t{32})}, &tuner);
  Expected<AttrValue> v = ctx.choose("BN", node_, bn_candidates(), AttrValue(int64_t{64}));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, AttrValue(int64_t{32}));
  EXPECT_EQ(node_.choices.at(0).source, "pinned");
  EXPECT_EQ(tuner.requests, 0);
}

TEST_F(PassContextTest, AnswersOutsideTheCandidatesFallThrough) {
  FixedChoiceSource tuner("tuner", AttrValue(int64_t{100}));                  // not a candidate
  FixedChoiceSource replay("replay", AttrValue(std::string("wide")));  // wrong type
  PassContext ctx = make({}, &tuner, &replay);
  Expected<AttrValue> v = ctx.choose("BN", node_, bn_candidates(), AttrValue(int64_t{64}));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, AttrValue(int64_t{64}));
  EXPECT_EQ(node_.choices.at(0).source, "heuristic");
  EXPECT_EQ(tuner.requests, 1);
  EXPECT_EQ(replay.requests, 1);
}

TEST_F(PassContextTest, TunerWithoutAnAnswerFallsThroughToReplay) {
  FixedChoiceSource tuner("tuner", std::nullopt);
  FixedChoiceSource replay("replay", AttrValue(int64_t{128}));
  PassContext ctx = make({}, &tuner, &replay);
  Expected<AttrValue> v = ctx.choose("BN", node_, bn_candidates(), AttrValue(int64_t{64}));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, AttrValue(int64_t{128}));
  EXPECT_EQ(node_.choices.at(0).source, "replay");
}

TEST_F(PassContextTest, PinnedValueOutsideTheCandidatesIsAnError) {
  PassContext ctx = make({pin("BN", int64_t{128})});
  // For this node only 32 and 64 are valid (say, the row is short).
  Expected<AttrValue> v = ctx.choose("BN", node_, {int64_t{32}, int64_t{64}}, AttrValue(int64_t{64}));
  ASSERT_FALSE(v);
  const Diagnostic& d = v.error();
  EXPECT_EQ(d.node, "k0");
  EXPECT_EQ(d.pass, "t:004_launch_geometry");
  EXPECT_NE(d.message.find("knob 'BN' of pass 'launch_geometry' is pinned to 128"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("p.yaml:3:22"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("node 'k0': 32, 64"), std::string::npos) << d.message;
  EXPECT_TRUE(node_.choices.empty());
}

TEST_F(PassContextTest, StaticCandidatesApplyWhenThePassGivesNone) {
  PassContext ctx = make({pin("BN", int64_t{100})});
  Expected<AttrValue> v = ctx.choose("BN", node_, {}, AttrValue(int64_t{64}));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("32, 64, 128"), std::string::npos) << v.error().message;
}

TEST_F(PassContextTest, PinWithoutCandidatesIsTakenAsIs) {
  PassContext ctx = make({pin("order", std::string("col_major"))});
  Expected<AttrValue> v = ctx.choose("order", node_, {}, AttrValue(std::string("row_major")));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, AttrValue(std::string("col_major")));
}

TEST_F(PassContextTest, UndeclaredKnobIsAnInternalErrorNamingThePass) {
  PassContext ctx = make({});
  Expected<AttrValue> v = ctx.choose("BM", node_, {}, AttrValue(int64_t{1}));
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("internal error"), std::string::npos);
  EXPECT_NE(v.error().message.find("'launch_geometry'"), std::string::npos);
  EXPECT_NE(v.error().message.find("'BM'"), std::string::npos);
}

TEST_F(PassContextTest, ChoosingAgainReplacesTheRecord) {
  FixedChoiceSource tuner("tuner", AttrValue(int64_t{128}));
  PassContext first = make({});
  PassContext second = make({}, &tuner);
  ASSERT_TRUE(first.choose("BN", node_, bn_candidates(), AttrValue(int64_t{64})));
  ASSERT_TRUE(first.choose("swizzle", node_, {AttrValue(false), AttrValue(true)}, AttrValue(true)));
  ASSERT_TRUE(second.choose("BN", node_, bn_candidates(), AttrValue(int64_t{64})));
  ASSERT_EQ(node_.choices.size(), 2u);
  EXPECT_EQ(node_.choices[0], (KnobChoice{"launch_geometry", "BN", int64_t{128}, "tuner"}));
  EXPECT_EQ(node_.choices[1], (KnobChoice{"launch_geometry", "swizzle", true, "heuristic"}));
}

TEST_F(PassContextTest, ChooseIntAndChooseBool) {
  PassContext ctx = make({pin("swizzle", false)});
  Expected<int64_t> bn = ctx.choose_int("BN", node_, {32, 64}, 32);
  ASSERT_TRUE(bn);
  EXPECT_EQ(*bn, 32);
  Expected<bool> swizzle = ctx.choose_bool("swizzle", node_, true);
  ASSERT_TRUE(swizzle);
  EXPECT_FALSE(*swizzle);
  EXPECT_EQ(node_.choices.at(1), (KnobChoice{"launch_geometry", "swizzle", false, "pinned"}));
}

TEST_F(PassContextTest, ChooseIntRejectsAPinOfTheWrongType) {
  PassContext ctx = make({pin("BN", std::string("big"))});
  Expected<int64_t> bn = ctx.choose_int("BN", node_, {32, 64}, 32);
  ASSERT_FALSE(bn);
  EXPECT_NE(bn.error().message.find("expects int"), std::string::npos) << bn.error().message;
}

TEST_F(PassContextTest, IntegerPinOfAFloatKnobIsAFloat) {
  PassContext ctx = make({pin("ratio", int64_t{2})});
  Expected<AttrValue> v = ctx.choose("ratio", node_, {}, AttrValue(0.5));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, AttrValue(2.0));
}

TEST_F(PassContextTest, SkipsAndErrorsNameTheNodeAndMarker) {
  PassContext ctx = make({});
  EXPECT_EQ(ctx.pass_name(), "launch_geometry");
  EXPECT_EQ(ctx.marker(), "t:004_launch_geometry");
  ctx.skip(node_, "row too short");
  ASSERT_EQ(ctx.skips().size(), 1u);
  EXPECT_EQ(ctx.skips()[0].node, "k0");
  EXPECT_EQ(ctx.skips()[0].reason, "row too short");
  Diagnostic d = ctx.error_at(node_, "boom");
  EXPECT_EQ(d.render(), "error: in pass t:004_launch_geometry at node 'k0': boom\n");
}

Graph two_kernel_graph() {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{4, 8}, DType::F32});
  g.add("y", std::make_unique<InputOp>(), {}, TensorType{{4, 8}, DType::F32});
  return g;
}

// Two compilations in one process, interleaved: each context answers from its own pins only.
TEST_F(PassContextTest, TwoContextsOnTwoGraphCopiesKeepTheirOwnAnswers) {
  Graph original = two_kernel_graph();
  Graph a = original;
  Graph b = original;
  PassContext ctx_a = make({pin("BN", int64_t{32})});
  PassContext ctx_b = make({pin("BN", int64_t{64})});
  for (const char* id : {"x", "y"}) {
    Expected<int64_t> va = ctx_a.choose_int("BN", *a.find(id), {32, 64, 128}, 128);
    Expected<int64_t> vb = ctx_b.choose_int("BN", *b.find(id), {32, 64, 128}, 128);
    ASSERT_TRUE(va && vb);
    EXPECT_EQ(*va, 32);
    EXPECT_EQ(*vb, 64);
  }
  for (const char* id : {"x", "y"}) {
    EXPECT_EQ(a.find(id)->choices, (std::vector<KnobChoice>{{"launch_geometry", "BN", int64_t{32}, "pinned"}}));
    EXPECT_EQ(b.find(id)->choices, (std::vector<KnobChoice>{{"launch_geometry", "BN", int64_t{64}, "pinned"}}));
    EXPECT_TRUE(original.find(id)->choices.empty());
  }
}

// ---- RandomChoiceSource ------------------------------------------------------------------------

// One draw for each of `count` decisions (keys differing in their kernel hash).
std::vector<AttrValue> draw(RandomChoiceSource& source, const Node& node, const std::vector<AttrValue>& candidates,
                            int count) {
  AttrValue heuristic(int64_t{0});
  std::vector<AttrValue> out;
  for (int i = 0; i < count; ++i) {
    const DecisionKey key{static_cast<uint64_t>(i) * 7919u, "p", "K", 0};
    std::optional<AttrValue> v = source.choose(ChoiceRequest{key, "t:001_p", node, candidates, heuristic});
    EXPECT_TRUE(v.has_value());
    if (v) out.push_back(*v);
  }
  return out;
}

TEST(RandomChoiceSourceTest, SameSeedSameChoices) {
  Node node;
  node.set_id("k0");
  const std::vector<AttrValue> candidates = {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}, int64_t{16}};
  RandomChoiceSource a(42), b(42), c(43);
  std::vector<AttrValue> from_a = draw(a, node, candidates, 64);
  EXPECT_EQ(from_a, draw(b, node, candidates, 64));
  EXPECT_NE(from_a, draw(c, node, candidates, 64));
  EXPECT_EQ(a.name(), "sampled");
}

TEST(RandomChoiceSourceTest, PicksEveryCandidateAndNothingElse) {
  Node node;
  const std::vector<AttrValue> candidates = {std::string("a"), std::string("b"), std::string("c")};
  RandomChoiceSource source(7);
  std::map<std::string, int> counts;
  for (const AttrValue& v : draw(source, node, candidates, 3000)) ++counts[std::get<std::string>(v)];
  ASSERT_EQ(counts.size(), 3u);
  for (const auto& [value, count] : counts) {
    EXPECT_GT(count, 850) << value;  // uniform: about 1000 each
    EXPECT_LT(count, 1150) << value;
  }
}

TEST(RandomChoiceSourceTest, NoCandidatesNoAnswer) {
  Node node;
  RandomChoiceSource source(1);
  std::vector<AttrValue> none;
  AttrValue heuristic(int64_t{3});
  const DecisionKey key{1, "p", "K", 0};
  EXPECT_EQ(source.choose(ChoiceRequest{key, "t:001_p", node, none, heuristic}), std::nullopt);
}

// A key is answered the same way whenever it is asked: the order of asks does not matter.
TEST(RandomChoiceSourceTest, AnswersByKeyNotByOrder) {
  Node node;
  const std::vector<AttrValue> candidates = {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}, int64_t{16}};
  AttrValue heuristic(int64_t{1});
  RandomChoiceSource source(11);
  std::vector<DecisionKey> keys;
  for (int i = 0; i < 40; ++i) keys.push_back(DecisionKey{static_cast<uint64_t>(i), "p", i % 2 ? "K" : "M", i % 3});
  std::vector<AttrValue> forward, backward(keys.size());
  for (const DecisionKey& k : keys) forward.push_back(*source.choose(ChoiceRequest{k, "t:001_p", node, candidates, heuristic}));
  for (size_t i = keys.size(); i-- > 0;)
    backward[i] = *source.choose(ChoiceRequest{keys[i], "t:001_p", node, candidates, heuristic});
  EXPECT_EQ(forward, backward);
  EXPECT_EQ(std::set<AttrValue>(forward.begin(), forward.end()).size(), candidates.size());
}

TEST(RandomChoiceSourceTest, DrivesPassContextAsTheTuner) {
  Node node;
  node.set_id("k0");
  RandomChoiceSource source(5);
  DeviceDesc device;
  DiagnosticEngine diags;
  PassContext ctx("launch_geometry", "t:001_launch_geometry", launch_geometry_knobs(), {}, {&source, nullptr}, &device,
                  &diags);
  // Each ask of the knob on the node is its own decision (ordinal 0, 1, ...).
  std::set<int64_t> seen;
  for (int i = 0; i < 50; ++i) {
    Expected<int64_t> v = ctx.choose_int("BN", node, {32, 64, 128}, 64);
    ASSERT_TRUE(v);
    seen.insert(*v);
    EXPECT_EQ(node.choices.at(0).source, "sampled");
  }
  EXPECT_EQ(seen, (std::set<int64_t>{32, 64, 128}));
}

TEST(PassContextKeyTest, KeysNameThePassKnobAndOrdinal) {
  Node node;
  node.set_id("k0");
  FixedChoiceSource tuner("tuner", std::nullopt);
  DeviceDesc device;
  DiagnosticEngine diags;
  PassContext ctx("launch_geometry", "t:001_launch_geometry", launch_geometry_knobs(), {}, {&tuner, nullptr}, &device,
                  &diags);
  ASSERT_TRUE(ctx.choose_int("BN", node, {32, 64}, 64));
  ASSERT_TRUE(ctx.choose_int("BN", node, {32, 64}, 64));
  ASSERT_TRUE(ctx.choose_bool("swizzle", node, false));
  ASSERT_EQ(tuner.keys.size(), 3u);
  EXPECT_EQ(tuner.keys[0].pass, "launch_geometry");
  EXPECT_EQ(tuner.keys[0].knob, "BN");
  EXPECT_EQ(tuner.keys[0].ordinal, 0);
  EXPECT_EQ(tuner.keys[1].ordinal, 1);
  EXPECT_EQ(tuner.keys[2].knob, "swizzle");
  EXPECT_EQ(tuner.keys[2].ordinal, 0);
  // A fork starts its own count: each application of a kernel pass asks from ordinal 0.
  PassContext application = ctx.fork();
  ASSERT_TRUE(application.choose_int("BN", node, {32, 64}, 64));
  EXPECT_EQ(tuner.keys[3].ordinal, 0);
  EXPECT_EQ(tuner.keys[0].str(), "launch_geometry.BN@0000000000000000");
  EXPECT_EQ(tuner.keys[1].str(), "launch_geometry.BN@0000000000000000#1");
}

}  // namespace
}  // namespace tessera

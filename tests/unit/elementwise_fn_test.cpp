// Tests of the elementwise function table (tessera/ir/elementwise_fn.h): the table is well formed
// (unique names, arities, CUDA spellings that only name their own operands), lookup by name with
// did-you-mean hints, the PyTorch edge cases of the double-precision implementations (NaN through
// maximum/relu, infinities), the combine ops, and that the verifier rejects an unknown function in
// IR text and JSON with an error naming the node and the statement. The per-function agreement of
// the evaluators with the simulator is in sim_target_test.cpp, NVRTC compiles of every spelling in
// cuda_emitter_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/verifier.h"

namespace tessera {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

double apply(ElementwiseFn fn, std::vector<double> args) { return apply_elementwise_fn(fn, args); }

TEST(ElementwiseFnTable, EveryEntryIsWellFormed) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < std::size(kElementwiseFns); ++i) {
    const ElementwiseFnInfo& f = kElementwiseFns[i];
    SCOPED_TRACE(std::string(f.name));
    EXPECT_EQ(static_cast<size_t>(f.fn), i) << "kElementwiseFns is indexed by ElementwiseFn";
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate name";
    EXPECT_GE(f.arity, 1u);
    EXPECT_LE(f.arity, 3u);
    EXPECT_FALSE(f.semantics.empty());
    // Placeholders are {N}, {N:op} or {N:atom} with N an operand; every operand is used.
    std::set<size_t> used;
    std::string_view c = f.cuda_f32;
    for (size_t at = c.find('{'); at != std::string_view::npos; at = c.find('{', at + 1)) {
      size_t close = c.find('}', at);
      ASSERT_NE(close, std::string_view::npos) << "unclosed placeholder in " << c;
      std::string_view ref = c.substr(at + 1, close - at - 1);
      ASSERT_FALSE(ref.empty());
      size_t operand = static_cast<size_t>(ref[0] - '0');
      EXPECT_LT(operand, f.arity) << "placeholder {" << ref << "} in " << c;
      std::string_view how = ref.size() > 1 ? ref.substr(1) : std::string_view();
      EXPECT_TRUE(how.empty() || how == ":op" || how == ":atom") << "placeholder {" << ref << "} in " << c;
      used.insert(operand);
    }
    EXPECT_EQ(used.size(), f.arity) << "the CUDA spelling " << c << " ignores an operand";
  }
  for (const CombineFnInfo& c : kCombineFns) EXPECT_EQ(fn_info(c.fn).arity, 2u) << c.name;
}

TEST(ElementwiseFnTable, NamesResolveWithArityAndSuggestions) {
  for (const ElementwiseFnInfo& f : kElementwiseFns) {
    Expected<ElementwiseFn> parsed = parse_elementwise_fn(f.name);
    ASSERT_TRUE(parsed) << f.name;
    EXPECT_EQ(*parsed, f.fn);
    EXPECT_EQ(name_of(f.fn), f.name);
    EXPECT_TRUE(resolve_elementwise_fn(f.name, f.arity));
  }
  Expected<ElementwiseFn> typo = parse_elementwise_fn("sigmod");
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().message, "unknown elementwise function 'sigmod' (did you mean 'sigmoid'?)");
  Expected<ElementwiseFn> far = parse_elementwise_fn("frobnicate");
  ASSERT_FALSE(far);
  EXPECT_EQ(far.error().message, "unknown elementwise function 'frobnicate'");
  Expected<ElementwiseFn> arity = resolve_elementwise_fn("add", 1);
  ASSERT_FALSE(arity);
  EXPECT_EQ(arity.error().message, "elementwise function 'add' takes 2 argument(s), got 1");
}

TEST(ElementwiseFnTable, ImplementationsFollowPyTorchAtTheEdges) {
  using F = ElementwiseFn;
  // NaN propagates through maximum/minimum and relu (torch.maximum, F.relu), unlike fmax.
  EXPECT_TRUE(std::isnan(apply(F::Maximum, {kNan, 1.0})));
  EXPECT_TRUE(std::isnan(apply(F::Maximum, {1.0, kNan})));
  EXPECT_TRUE(std::isnan(apply(F::Minimum, {-kInf, kNan})));
  EXPECT_TRUE(std::isnan(apply(F::Relu, {kNan})));
  EXPECT_EQ(apply(F::Relu, {-kInf}), 0.0);
  EXPECT_EQ(apply(F::Relu, {kInf}), kInf);
  EXPECT_EQ(apply(F::Maximum, {-kInf, 3.0}), 3.0);
  // Infinities and zeros.
  EXPECT_EQ(apply(F::Sigmoid, {-kInf}), 0.0);
  EXPECT_EQ(apply(F::Sigmoid, {kInf}), 1.0);
  EXPECT_EQ(apply(F::Rsqrt, {0.0}), kInf);
  EXPECT_EQ(apply(F::Log, {0.0}), -kInf);
  EXPECT_TRUE(std::isnan(apply(F::Sqrt, {-1.0})));
  EXPECT_EQ(apply(F::Reciprocal, {0.0}), kInf);
  EXPECT_EQ(apply(F::Div, {-1.0, 0.0}), -kInf);
  EXPECT_TRUE(std::isnan(apply(F::Div, {0.0, 0.0})));
  EXPECT_EQ(apply(F::Pow, {kNan, 0.0}), 1.0);
  EXPECT_EQ(apply(F::Tanh, {-kInf}), -1.0);
  // Comparisons with NaN: only ne holds.
  EXPECT_EQ(apply(F::Eq, {kNan, kNan}), 0.0);
  EXPECT_EQ(apply(F::Ne, {kNan, kNan}), 1.0);
  EXPECT_EQ(apply(F::Lt, {kNan, 1.0}), 0.0);
  EXPECT_EQ(apply(F::Ge, {kNan, 1.0}), 0.0);
  EXPECT_EQ(apply(F::Where, {1.0, 2.0, 3.0}), 2.0);
  EXPECT_TRUE(std::isnan(apply(F::Where, {0.0, 2.0, kNan})));
  EXPECT_EQ(apply(F::LogicalAnd, {kNan, 1.0}), 1.0);  // NaN is nonzero, as in torch.logical_and
  EXPECT_EQ(apply(F::LogicalNot, {-0.0}), 1.0);
}

TEST(CombineFnTable, SpellingsAliasesAndMeaning) {
  for (const CombineFnInfo& c : kCombineFns) {
    Expected<CombineFn> parsed = parse_combine_fn(c.name);
    ASSERT_TRUE(parsed) << c.name;
    EXPECT_EQ(*parsed, c.op);
    Expected<CombineFn> alias = parse_combine_fn(name_of(c.fn));
    ASSERT_TRUE(alias) << name_of(c.fn);
    EXPECT_EQ(*alias, c.op);
  }
  Expected<CombineFn> bad = parse_combine_fn("xor");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "unknown accumulation op 'xor' (expected add, mul, max, min)");
  EXPECT_TRUE(std::isnan(apply_combine_fn(CombineFn::Max, kNan, 1.0)));
  EXPECT_TRUE(std::isnan(apply_combine_fn(CombineFn::Min, 1.0, kNan)));
  EXPECT_EQ(apply_combine_fn(CombineFn::Max, -kInf, 2.0), 2.0);
  EXPECT_EQ(apply_combine_fn(CombineFn::Mul, 3.0, 0.5), 1.5);
}

// ---- the verifier ------------------------------------------------------------------------------

const char* kLoopText = R"(x: (4,) float32

=== k_y(x) -> y: (4,) float32 ===
  for a0 in 0..4:  # free
    in0 = load x[a0]
    v0 = FN(in0)
    y[a0] = v0

return y
)";

std::string with_fn(const std::string& fn) {
  std::string text = kLoopText;
  text.replace(text.find("FN"), 2, fn);
  return text;
}

TEST(ElementwiseFnVerifier, KnownFunctionsVerify) {
  Expected<Graph> g = parse_graph(with_fn("relu"), "relu.txt");
  ASSERT_TRUE(g) << g.error().render();
  Status s = verify_graph(*g, Dialect::Loop);
  EXPECT_TRUE(s) << s.message();
}

TEST(ElementwiseFnVerifier, AnUnknownFunctionInIrTextIsAnErrorAtItsName) {
  Expected<Graph> g = parse_graph(with_fn("rleu"), "typo.txt");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().render(),
            "typo.txt:6:10: error: unknown elementwise function 'rleu' (did you mean 'relu'?)\n"
            "      v0 = rleu(in0)\n"
            "           ^~~~\n");
}

TEST(ElementwiseFnVerifier, AWrongArityIsAnError) {
  Expected<Graph> g = parse_graph(with_fn("add"), "arity.txt");
  ASSERT_TRUE(g) << g.error().render();
  Status s = verify_graph(*g, Dialect::Loop);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("elementwise function 'add' takes 2 argument(s), got 1"), std::string::npos)
      << s.error().message;
}

TEST(ElementwiseFnVerifier, AnUnknownFunctionInJsonIsAnErrorAtItsPath) {
  Expected<Graph> g = parse_graph(with_fn("relu"), "relu.txt");
  ASSERT_TRUE(g) << g.error().render();
  std::string json = graph_to_json_text(*g);
  size_t at = json.find("\"relu\"");
  ASSERT_NE(at, std::string::npos) << json;
  json.replace(at, 6, "\"frobnicate\"");
  Expected<Graph> read = graph_from_json_text(json, "bad.json");
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("'frobnicate' is not an elementwise function name"), std::string::npos)
      << read.error().message;
  EXPECT_NE(read.error().message.find(".op"), std::string::npos) << read.error().message;
}

TEST(ElementwiseFnVerifier, AccumCombineAndTreeHalveNameACombineOp) {
  const char* text = R"(x: (4,) float32

=== k_y(x) -> y: (1,) float32 ===
  acc0 = init(0.0)
  for a0 in 0..4:  # reduce
    in0 = load x[a0]
    acc0 <- OP(acc0, in0)
  y[0] = acc0

return y
)";
  for (const char* op : {"add", "mul", "max", "min", "maximum"}) {
    std::string t = text;
    t.replace(t.find("OP"), 2, op);
    Expected<Graph> g = parse_graph(t, "accum.txt");
    ASSERT_TRUE(g) << g.error().render();
    Status s = verify_graph(*g, Dialect::Loop);
    EXPECT_TRUE(s) << op << ": " << s.message();
  }
  std::string t = text;
  t.replace(t.find("OP"), 2, "sub");
  Expected<Graph> g = parse_graph(t, "accum.txt");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().render(),
            "accum.txt:7:13: error: unknown accumulation op 'sub' (expected add, mul, max, min)\n"
            "      acc0 <- sub(acc0, in0)\n"
            "              ^~~\n");
  // Combine and TreeHalve name theirs with `op=`, read the same way.
  const char* combine = R"(x: (4,) float32

=== k_y(x) -> y: (1,) float32 ===
  acc0 = init(0.0)
  Combine(acc0, op=xor)
  y[0] = acc0

return y
)";
  g = parse_graph(combine, "combine.txt");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().render().find("combine.txt:5:20: error: unknown accumulation op 'xor'"), std::string::npos)
      << g.error().render();
}

TEST(ElementwiseFnVerifier, TensorIrElementwiseNamesAFunction) {
  const char* text = R"(x: (4,) float32

y = sigmod(x) -> (4,) float32

return y
)";
  // A call of no Tensor IR function can only be Torch IR; a Tensor IR reader says why it is not.
  Expected<Graph> g = parse_graph(text, "tensor.txt");
  ASSERT_TRUE(g) << g.error().render();
  Status s = verify_graph(*g, Dialect::Tensor);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().node, "y");
  EXPECT_NE(s.error().message.find("unknown elementwise function 'sigmod' (did you mean 'sigmoid'?)"), std::string::npos)
      << s.error().message;
  // Beside Tensor IR lines (an IndexMap has no Torch IR reading), the parser names the line.
  const char* mixed = R"(x: (4,) float32

t = x[i] -> (4,) float32
y = sigmod(t) -> (4,) float32

return y
)";
  g = parse_graph(mixed, "mixed.txt");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().render().find("line 4 is Torch IR (unknown elementwise function 'sigmod' (did you mean "
                                    "'sigmoid'?))"),
            std::string::npos)
      << g.error().render();
}

}  // namespace
}  // namespace tessera

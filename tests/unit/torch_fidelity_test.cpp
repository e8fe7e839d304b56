// Fidelity to PyTorch: the dtype rules, values and refusals of the torch_expr frontend checked
// against what PyTorch 2.15 does (each expectation here was read off real PyTorch), and integer
// exactness through the reference evaluator, the simulator and the output check. The programs
// whose values matter are also in the differential corpus (tests/support/program_corpus.h), which
// the PyTorch oracle (tests/pytorch_oracle) runs in PyTorch itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "framework/src/eval/safetensors_file.h"
#include "support/built_plugins.h"
#include "support/cli_runner.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

using test::run_cli;

class TorchFidelityTest : public test::TorchExprFrontendTest {
 protected:
  // Each program runs on the simulator and its integer outputs match the reference exactly.
  static void expect_exact_on_simulator(std::initializer_list<const char*> programs) {
    for (const char* program : programs) {
      test::CliResult r = run_cli({"run", "--target", "sim", "-c", program});
      EXPECT_EQ(r.exit_code, 0) << program << "\n" << r.out << r.err;
      EXPECT_NE(r.out.find("exact)  ok"), std::string::npos) << program << "\n" << r.out;
    }
  }

  // The reference evaluator's value of the program's output on seed-0 inputs.
  TensorValue reference_output(const std::string& text) {
    Graph g = trace(text);
    Expected<ValueMap> values = evaluate_reference(g, make_inputs(g, 0));
    if (!values) {
      ADD_FAILURE() << values.error().render();
      return {};
    }
    return values->at(g.outputs()[0]);
  }

};

TensorType tt(Shape shape, DType dtype) { return TensorType{std::move(shape), dtype}; }

// ---- dtype rules ------------------------------------------------------------------------------

TEST_F(TorchFidelityTest, BoolAndInt32SumsAreInt64) {
  EXPECT_EQ(output_type("torch.ones(2, 3, dtype=torch.bool).sum()"), tt({}, DType::I64));
  EXPECT_EQ(output_type("torch.ones(2, 3, dtype=torch.int32).sum(-1)"), tt({2}, DType::I64));
  TensorValue six = reference_output("torch.ones(2, 3, dtype=torch.bool).sum()");
  ASSERT_EQ(six.data.size(), 1u);
  EXPECT_EQ(six.data[0], 6.0);
}

TEST_F(TorchFidelityTest, FullTakesItsDtypeFromTheFillValue) {
  EXPECT_EQ(output_type("torch.full((2, 3), 7)"), tt({2, 3}, DType::I64));
  EXPECT_EQ(output_type("torch.full((2, 3), True)"), tt({2, 3}, DType::Bool));
  EXPECT_EQ(output_type("torch.full((2, 3), 7.0)"), tt({2, 3}, DType::F32));
  EXPECT_EQ(output_type("torch.full((2, 3), 7, dtype=torch.float16)"), tt({2, 3}, DType::F16));
}

// PyTorch's result_type: dimensioned tensors > 0-dim tensors > Python scalars, by category.
TEST_F(TorchFidelityTest, ZeroDimTensorsPromoteLikeScalars) {
  EXPECT_EQ(output_type("torch.randn(3, 4, dtype=torch.float16) + torch.randn(())"), tt({3, 4}, DType::F16));
  EXPECT_EQ(output_type("torch.ones(3, dtype=torch.int64) + torch.randn(())"), tt({3}, DType::F32));
  EXPECT_EQ(output_type("torch.ones(3, dtype=torch.int32) + torch.ones((), dtype=torch.int64)"), tt({3}, DType::I32));
  EXPECT_EQ(output_type("torch.ones(3, dtype=torch.bool) + torch.ones((), dtype=torch.int64)"), tt({3}, DType::I64));
  EXPECT_EQ(output_type("torch.ones((), dtype=torch.int32) + torch.ones((), dtype=torch.float16)"), tt({}, DType::F16));
  EXPECT_EQ(output_type("torch.ones((), dtype=torch.float16) + torch.ones(())"), tt({}, DType::F32));
  EXPECT_EQ(output_type("torch.ones(3, dtype=torch.bfloat16) + torch.ones((), dtype=torch.float16)"),
            tt({3}, DType::BF16));
  EXPECT_EQ(output_type("torch.maximum(torch.ones(3, dtype=torch.float16), torch.ones(()))"), tt({3}, DType::F16));
  EXPECT_EQ(output_type("torch.where(torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.float16), "
                        "torch.ones(()))"),
            tt({3}, DType::F16));
  // Two dimensioned tensors still promote as before.
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.float16) + torch.randn(3)"), tt({3}, DType::F32));
}

TEST_F(TorchFidelityTest, RankZeroReductions) {
  EXPECT_EQ(output_type("torch.randn(()).sum(0)"), tt({}, DType::F32));
  EXPECT_EQ(output_type("torch.randn(()).sum(-1)"), tt({}, DType::F32));
  EXPECT_EQ(output_type("torch.randn(()).max(0)[0]"), tt({}, DType::F32));
  EXPECT_EQ(output_type("torch.randn(()).max(0)[1]"), tt({}, DType::I64));
  EXPECT_EQ(output_type("torch.softmax(torch.randn(()), 0)"), tt({}, DType::F32));
  EXPECT_EQ(output_type("torch.softmax(torch.randn(()), -1)"), tt({}, DType::F32));
  TensorValue one = reference_output("torch.softmax(torch.randn(()), -1)");
  ASSERT_EQ(one.data.size(), 1u);
  EXPECT_EQ(one.data[0], 1.0);
}

// ---- norms and module parameters --------------------------------------------------------------

// eps=None is float32's epsilon for every input dtype (PyTorch computes f16/bf16 norms in f32):
// rms_norm of a constant row is 1.
TEST_F(TorchFidelityTest, RmsNormDefaultEpsIsFloat32EpsForHalfInputs) {
  for (const char* dtype : {"bfloat16", "float16", "float32"}) {
    const std::string program = std::string("F.rms_norm(torch.full((2, 8), 0.05, dtype=torch.") + dtype + "), (8,))";
    Graph g = trace(program);
    const Node* n = g.find(g.outputs()[0]);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->op_as<TorchOp>()->attrs.get_float("eps", 0.0), 1.1920928955078125e-07) << dtype;
    TensorValue out = reference_output(program);
    for (double v : out.data) EXPECT_NEAR(v, 1.0, 1e-2) << dtype;
  }
}

TEST_F(TorchFidelityTest, ModuleParametersStayFloat32UnlessCreatedWithADtype) {
  Graph g = trace("nn.RMSNorm(8)(torch.randn(2, 8, dtype=torch.bfloat16))");
  EXPECT_EQ(g.find("p_weight")->type, tt({8}, DType::F32));
  EXPECT_EQ(g.find(g.outputs()[0])->type, tt({2, 8}, DType::BF16));  // the input's dtype, as PyTorch
  Graph ln = trace("nn.LayerNorm(8)(torch.randn(2, 8, dtype=torch.float16))");
  EXPECT_EQ(ln.find("p_weight")->type, tt({8}, DType::F32));
  EXPECT_EQ(ln.find(ln.outputs()[0])->type, tt({2, 8}, DType::F16));
  Graph half = trace("nn.Linear(8, 16, dtype=torch.float16)(torch.randn(2, 8, dtype=torch.float16))");
  EXPECT_EQ(half.find("p_weight")->type, tt({16, 8}, DType::F16));
}

// ---- what PyTorch refuses -----------------------------------------------------------------------

TEST_F(TorchFidelityTest, LinearRefusesAnInputOfAnotherDtype) {
  expect_refused("nn.Linear(8, 16)(torch.randn(2, 8, dtype=torch.float16))",
                 "mat1 and mat2 must have the same dtype, but got float16 (input) and float32 (weight)", 1, 1);
  expect_refused("x = torch.randn(2, 8, dtype=torch.bfloat16)\nF.linear(x, torch.randn(16, 8))",
                 "mat1 and mat2 must have the same dtype", 2, 1);
}

TEST_F(TorchFidelityTest, SiluAndGeluRefuseIntegerTensors) {
  expect_refused("ids = torch.randint(0, 5, (4,))\nF.silu(ids)", "silu is not implemented for int64", 2, 1);
  expect_refused("ids = torch.randint(0, 5, (4,), dtype=torch.int32)\nF.gelu(ids)", "gelu is not implemented for int32",
                 2, 1);
  expect_refused("m = torch.ones(4, dtype=torch.bool)\nnn.SiLU()(m)", "silu is not implemented for bool", 2, 1);
}

TEST_F(TorchFidelityTest, BoolTensorsRefuseMinus) {
  const std::string m = "m = torch.ones(4, dtype=torch.bool)\n";
  expect_refused(m + "m - m", "Subtraction, the `-` operator, with two bool tensors is not supported", 2, 1);
  expect_refused(m + "1 - m", "Subtraction, the `-` operator, with a bool tensor is not supported", 2, 1);
  expect_refused(m + "torch.sub(m, 1)", "with a bool tensor is not supported", 2, 1);
  expect_refused(m + "-m", "Negation, the `-` operator, on a bool tensor is not supported", 2, 1);
  expect_refused(m + "torch.neg(m)", "Negation, the `-` operator, on a bool tensor is not supported", 2, 1);
  trace("m = torch.ones(4, dtype=torch.bool)\nm + m");  // only minus is refused
}

TEST_F(TorchFidelityTest, IntegersToNegativeIntegerPowersAreRefused) {
  expect_refused("a = torch.randint(0, 5, (4,))\na ** -1", "Integers to negative integer powers are not allowed.", 2, 1);
  expect_refused("a = torch.randint(0, 5, (4,), dtype=torch.int32)\ntorch.pow(a, -2)",
                 "Integers to negative integer powers are not allowed.", 2, 1);
  EXPECT_EQ(output_type("a = torch.randint(0, 5, (4,))\na ** -1.0"), tt({4}, DType::F32));
  EXPECT_EQ(output_type("a = torch.randint(0, 5, (4,))\na ** 2"), tt({4}, DType::I64));
}

TEST_F(TorchFidelityTest, ViewOfANonContiguousTensorIsRefusedWhereNoViewExists) {
  expect_refused("x = torch.randn(2, 3, 4)\nx.transpose(1, 2).view(2, -1)",
                 "view size is not compatible with input tensor's size and stride", 2, 1);
  expect_refused("x = torch.randn(4, 6)\nx.t().view(24)", "Use .reshape(...) instead", 2, 1);
  expect_refused("x = torch.randn(4, 6)\nx[:, :3].view(12)", "view size is not compatible", 2, 1);
  // Views PyTorch makes: splitting a dim, dims that stay contiguous with each other, after contiguous().
  trace("x = torch.randn(2, 3, 4)\nx.transpose(1, 2).view(2, 4, 3)");
  trace("x = torch.randn(2, 3, 4)\nx.transpose(1, 2).view(2, 2, 2, 3)");
  trace("x = torch.randn(2, 3, 4)\nx.transpose(0, 1).view(3, 2, 2, 2)");
  trace("x = torch.randn(2, 3, 4)\nx.transpose(1, 2).contiguous().view(2, -1)");
  trace("x = torch.randn(2, 3, 4)\nx.transpose(1, 2).reshape(2, -1)");
  trace("x = torch.randn(4, 6)\nx[1:3].view(12)");
  trace("x = torch.randn(4, 6)\nx[:, ::2].view(12)");  // strides (6, 2): still one chunk
  trace("x = torch.randn(2, 3)\n(x.t() * 2).contiguous().view(6)");
  // Elementwise results keep the layout of their first operand of the output's shape.
  expect_refused("x = torch.randn(4, 6)\n(x.t() * 2).view(24)", "view size is not compatible", 2, 1);
  expect_refused("x = torch.randn(4, 6)\ny = torch.randn(6, 4)\ntorch.exp(x.t() + y).view(24)",
                 "view size is not compatible", 3, 1);
  expect_refused("x = torch.randn(4, 6)\n(x.t() + torch.randn(4)).view(24)", "view size is not compatible", 2, 1);
  trace("x = torch.randn(4, 6)\ny = torch.randn(6, 4)\n(y + x.t()).view(24)");
  trace("x = torch.randn(4, 6)\nx[:, ::2].exp().view(12)");
  trace("x = torch.randn(4, 1)\nx.expand(4, 6).exp().view(24)");
  trace("x = torch.randn(2, 3, 4)\nx.transpose(0, 2).sum(0).view(6)");
}

// ---- integers are exact end to end ----------------------------------------------------------------

// Values are doubles in the evaluators: integers from 2^53 on could not be exact, so they are refused.
TEST_F(TorchFidelityTest, IntegersBeyondTwoToThe53AreRefused) {
  expect_refused("torch.full((2,), 1152921504606846976)", "is not below 2^53", 1, 1);
  expect_refused("a = torch.randint(0, 5, (4,))\na + 9007199254740993", "is not below 2^53", 2, 1);
  expect_refused("a = torch.randint(0, 5, (4,))\na - 9007199254740992", "is not below 2^53", 2, 1);
  trace("a = torch.randint(0, 5, (4,))\na + 9007199254740991");
}

// An int64 result from 2^53 on is an error in every evaluator, never a silently rounded value
// (randint(0, 5) * 2^52 + 1 reaches 2^54 + 1, which a double holds as 2^54).
TEST_F(TorchFidelityTest, Int64ResultsFromTwoToThe53AreErrorsNotRoundedValues) {
  const char* program = "a = torch.randint(0, 5, (64,))\na * 4503599627370496 + 1";
  Graph g = trace(program);
  Expected<ValueMap> values = evaluate_reference(g, make_inputs(g, 0));
  ASSERT_FALSE(values) << "the reference evaluator answered a value past 2^53";
  EXPECT_NE(values.error().message.find("is not below 2^53"), std::string::npos) << values.error().message;
  EXPECT_FALSE(values.error().node.empty());
  test::CliResult r = run_cli({"run", "--target", "sim", "-c", program});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("is not below 2^53"), std::string::npos) << r.out << r.err;
  expect_exact_on_simulator({"a = torch.randint(0, 5, (64,))\na * 1125899906842624 + 1"});  // below 2^53: exact
}

// int32 arithmetic wraps around, as in PyTorch (2147483647 * 2 == -2).
TEST_F(TorchFidelityTest, Int32ArithmeticWraps) {
  TensorValue v = reference_output("torch.full((2,), 2147483647, dtype=torch.int32) * 2 + 1");
  ASSERT_EQ(v.data.size(), 2u);
  EXPECT_EQ(v.data[0], -1.0);
  test::CliResult r = run_cli({"run", "--target", "sim", "-c", "torch.full((2,), 2147483647, dtype=torch.int32) * 2 + 1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(TorchFidelityTest, IntegerOutputsAreComparedExactly) {
  TensorType t = tt({2}, DType::I64);
  ValueMap expected{{"y", TensorValue(t, {16777218.0, 5.0})}};
  ValueMap off_by_two{{"y", TensorValue(t, {16777216.0, 5.0})}};
  Expected<ValueComparison> cmp = compare_output(expected, off_by_two, "y");
  ASSERT_TRUE(cmp);
  EXPECT_FALSE(cmp->within(default_output_rtol(DType::F32))) << cmp->str();
  EXPECT_FALSE(cmp->within(1.0)) << "an integer difference must fail every tolerance";
  ValueMap same{{"y", TensorValue(t, {16777218.0, 5.0})}};
  EXPECT_TRUE(compare_output(expected, same, "y")->within(0.0));
}

TEST_F(TorchFidelityTest, LargeIntegersSurviveTheSimulatorExactly) {
  test::TempDir dir;
  const std::string io = dir.path() + "/io.safetensors";
  test::CliResult r = run_cli({"run", "--target", "sim", "--save-io", io, "-c",
                               "torch.full((2,), 16777217, dtype=torch.int64) + 1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("exact)  ok"), std::string::npos) << r.out;
  Expected<SafetensorsFile> file = read_safetensors_file(io);
  ASSERT_TRUE(file) << file.error().render();
  for (const SafetensorsTensor& t : file->tensors) {
    if (t.name != "add") continue;
    ASSERT_EQ(t.dtype, DType::I64);
    ASSERT_EQ(t.bytes.size(), 16u);
    int64_t v[2];
    std::memcpy(v, t.bytes.data(), sizeof v);
    EXPECT_EQ(v[0], 16777218);
    EXPECT_EQ(v[1], 16777218);
    return;
  }
  ADD_FAILURE() << "no output 'add' in " << io;
}

TEST_F(TorchFidelityTest, Int32SumsAndBoolSumsAreExactOnTheSimulator) {
  expect_exact_on_simulator({"torch.randint(0, 2147483647, (300,), dtype=torch.int32).sum()",
                              "torch.randint(0, 2147483647, (4, 70), dtype=torch.int32).sum(-1)",
                              "torch.ones(2, 3, dtype=torch.bool).sum()",
                              "(torch.randn(7, 33) > 0).sum(0)"});
}


// ---- floor division, remainder and floor (each expectation read off PyTorch 2.15) -------------

TEST_F(TorchFidelityTest, FloorDivisionFollowsPyTorchsTypeRules) {
  const std::string a = "torch.ones(3, dtype=torch.int32)";
  EXPECT_EQ(output_type(a + " // " + a), tt({3}, DType::I32));
  EXPECT_EQ(output_type(a + " // 2"), tt({3}, DType::I32));
  EXPECT_EQ(output_type("2 // " + a), tt({3}, DType::I32));
  EXPECT_EQ(output_type(a + " // 2.0"), tt({3}, DType::F32));
  EXPECT_EQ(output_type(a + " // torch.ones((), dtype=torch.int64)"), tt({3}, DType::I32));
  EXPECT_EQ(output_type("torch.ones(3, dtype=torch.bool) // 2"), tt({3}, DType::I64));
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.float16) // 2"), tt({3}, DType::F16));
  EXPECT_EQ(output_type("torch.randn(3) % 2"), tt({3}, DType::F32));
  EXPECT_EQ(output_type("torch.remainder(2, " + a + ")"), tt({3}, DType::I32));
  EXPECT_EQ(output_type("torch.floor_divide(" + a + ", torch.ones(3, dtype=torch.int64))"), tt({3}, DType::I64));
  EXPECT_EQ(output_type("torch.div(" + a + ", 2, rounding_mode='floor')"), tt({3}, DType::I32));
  EXPECT_EQ(output_type("torch.floor(" + a + ")"), tt({3}, DType::I32));
  EXPECT_EQ(output_type("torch.randn(3).floor()"), tt({3}, DType::F32));
}

TEST_F(TorchFidelityTest, FloorDivisionRoundsTowardMinusInfinity) {
  const std::string a = "torch.tensor([-7, 7, -8, 5, 0])", b = "torch.tensor([2, -2, 3, 5, -3])";
  auto values = [&](const std::string& program) { return reference_output(program).data; };
  EXPECT_EQ(values(a + " // " + b), (std::vector<double>{-4, -4, -3, 1, 0}));
  EXPECT_EQ(values(a + " % " + b), (std::vector<double>{1, -1, 1, 0, 0}));
  EXPECT_EQ(values("torch.div(" + a + ", " + b + ", rounding_mode='floor')"), (std::vector<double>{-4, -4, -3, 1, 0}));
  EXPECT_EQ(values("2 // " + b), (std::vector<double>{1, -1, 0, 0, -1}));
  EXPECT_EQ(values("torch.remainder(-3, " + b + ")"), (std::vector<double>{1, -1, 0, 2, 0}));
  // Floats: the floor of the exact quotient (1 // 0.1 is 9, not floor(1 / 0.1) = 10), Python's
  // signed zero, and IEEE division by zero.
  EXPECT_EQ(values("torch.tensor([1.0, -7.5, 7.5]) // torch.tensor([0.1, 2.0, -2.0])"), (std::vector<double>{9, -4, -4}));
  std::vector<double> zero = values("torch.tensor([0.0]) // torch.tensor([-3.0])");
  ASSERT_EQ(zero.size(), 1u);
  EXPECT_TRUE(zero[0] == 0.0 && std::signbit(zero[0]));
  std::vector<double> by_zero = values("torch.tensor([-7.5, 7.5, 0.0]) // 0");
  ASSERT_EQ(by_zero.size(), 3u);
  EXPECT_EQ(by_zero[0], -INFINITY);
  EXPECT_EQ(by_zero[1], INFINITY);
  EXPECT_TRUE(std::isnan(by_zero[2]));
  EXPECT_EQ(values("torch.tensor([-7.5, 7.5]) % -2"), (std::vector<double>{-1.5, -0.5}));
  EXPECT_TRUE(std::isnan(values("torch.tensor([3.0]) % 0")[0]));
  EXPECT_EQ(values("torch.tensor([-2.5, 2.5, -0.5]).floor()"), (std::vector<double>{-3, 2, -1}));
  // int32 wraps as in PyTorch: INT_MIN // -1 is INT_MIN.
  EXPECT_EQ(values("torch.full((1,), -2147483648, dtype=torch.int32) // -1"), (std::vector<double>{-2147483648.0}));
}

TEST_F(TorchFidelityTest, FloorDivisionIsExactOnTheSimulator) {
  expect_exact_on_simulator({"torch.tensor([-7, 7, -8, 5, 0]) // torch.tensor([2, -2, 3, 5, -3])",
                              "torch.randint(0, 100, (7, 33)) % 7 - torch.randint(0, 100, (7, 33)) // -3",
                              "torch.full((3,), 9007199254740991) // 2",
                              "torch.randint(0, 100, (33,), dtype=torch.int32) // torch.tensor(-7, dtype=torch.int32)"});
}

TEST_F(TorchFidelityTest, BoolFloorDivisionRemainderAndFloorAreRefused) {
  expect_refused("m = torch.randn(3) > 0\nm // m", "\"div_floor_cpu\" not implemented for 'Bool'", 2, 1);
  expect_refused("m = torch.randn(3) > 0\ntorch.remainder(m, True)", "\"remainder_cpu\" not implemented for 'Bool'", 2, 1);
  expect_refused("m = torch.randn(3) > 0\nm.floor()", "\"floor_vml_cpu\" not implemented for 'Bool'", 2, 1);
}

// PyTorch (CPU) raises ZeroDivisionError for an integer x // 0 or x % 0; Tessera's evaluators
// report the same at run time (the program traces: the divisor is data).
TEST_F(TorchFidelityTest, IntegerDivisionByZeroIsAnEvaluationError) {
  for (const char* program : {"torch.randint(0, 5, (4,)) // torch.zeros(4, dtype=torch.int64)",
                              "torch.randint(0, 5, (4,), dtype=torch.int32) % 0"}) {
    Graph g = trace(program);
    Expected<ValueMap> values = evaluate_reference(g, make_inputs(g, 0));
    ASSERT_FALSE(values) << program;
    EXPECT_NE(values.error().message.find("ZeroDivisionError"), std::string::npos) << values.error().render();
    test::CliResult r = run_cli({"run", "--target", "sim", "-c", program});
    EXPECT_EQ(r.exit_code, 1) << program << "\n" << r.out;
    EXPECT_NE((r.out + r.err).find("ZeroDivisionError"), std::string::npos) << program << "\n" << r.out << r.err;
  }
}


// ---- float64 (each expectation read off PyTorch 2.15) -----------------------------------------

// f64 wins over every other float type; a 0-dim f64 tensor or a Python float does not promote a
// dimensioned float tensor, but a 0-dim f64 does promote an integer one (PyTorch's result_type).
TEST_F(TorchFidelityTest, Float64PromotesLikePyTorch) {
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.float64) + torch.randn(3)"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.bfloat16) * torch.randn(3, dtype=torch.double)"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.randn(3) + torch.randn((), dtype=torch.float64)"), tt({3}, DType::F32));
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.float16) + torch.randn((), dtype=torch.float64)"), tt({3}, DType::F16));
  EXPECT_EQ(output_type("torch.ones(3, dtype=torch.int64) + torch.randn((), dtype=torch.float64)"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.ones(3, dtype=torch.int64) // torch.randn((), dtype=torch.float64)"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.float64) * 2.5"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.float64) > torch.randn(3)"), tt({3}, DType::Bool));
  EXPECT_EQ(output_type("torch.randn(3).double()"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.randn(3).to(torch.float64)"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.bfloat16).to(dtype=torch.double)"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.randn(3).type('torch.DoubleTensor')"), tt({3}, DType::F64));
  EXPECT_EQ(output_type("torch.randn(3, dtype=torch.float64).float()"), tt({3}, DType::F32));
  EXPECT_EQ(output_type("torch.randn(2, 3, dtype=torch.float64).sum(-1)"), tt({2}, DType::F64));
  EXPECT_EQ(output_type("torch.softmax(torch.randn(2, 3, dtype=torch.float64), -1)"), tt({2, 3}, DType::F64));
  EXPECT_EQ(output_type("torch.arange(4, dtype=torch.float64)"), tt({4}, DType::F64));
}

// f64 keeps what f32 would round away, in the reference evaluator and on the simulator.
TEST_F(TorchFidelityTest, Float64KeepsDoublePrecision) {
  TensorValue v = reference_output("torch.full((2,), 1.0, dtype=torch.float64) + 1e-12");
  ASSERT_EQ(v.data.size(), 2u);
  EXPECT_EQ(v.data[0], 1.0 + 1e-12);
  TensorValue eps = reference_output("torch.full((1,), torch.finfo(torch.float64).eps, dtype=torch.float64)");
  ASSERT_EQ(eps.data.size(), 1u);
  EXPECT_EQ(eps.data[0], 2.220446049250313e-16);
  test::TempDir dir;
  const std::string io = dir.path() + "/io.safetensors";
  test::CliResult r = run_cli({"run", "--target", "sim", "--save-io", io, "-c",
                               "x = torch.randn(7, 33, dtype=torch.float64)\n(x + 1e-12) - x"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Expected<SafetensorsFile> file = read_safetensors_file(io);
  ASSERT_TRUE(file) << file.error().render();
  bool found = false;
  for (const SafetensorsTensor& t : file->tensors) {
    EXPECT_EQ(t.dtype, DType::F64) << t.name;
    if (t.name != "sub") continue;
    found = true;
    ASSERT_EQ(t.bytes.size(), 7u * 33u * 8u);
    std::vector<double> d(7 * 33);
    std::memcpy(d.data(), t.bytes.data(), t.bytes.size());
    for (double e : d) EXPECT_NEAR(e, 1e-12, 1e-15) << "in f32, (x + 1e-12) - x would be 0";
  }
  EXPECT_TRUE(found) << "no output 'sub' in " << io;
}

// ---- the outside checks' findings ------------------------------------------------------------

// where(c, int_tensor, 0.5) is float in PyTorch; the simulator selected in int64 and truncated 0.5.
TEST_F(TorchFidelityTest, WhereOfAnIntegerTensorAndAFloatScalarIsFloatEverywhere) {
  const char* program = "m = torch.randint(0, 5, (4, 6))\ntorch.where(m > 2, m, 0.5)";
  EXPECT_EQ(output_type(program), tt({4, 6}, DType::F32));
  TensorValue v = reference_output(program);
  EXPECT_NE(std::find(v.data.begin(), v.data.end(), 0.5), v.data.end());
  test::CliResult r = run_cli({"run", "--target", "sim", "-c", program});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("where  max abs err 0  max rel err 0"), std::string::npos) << r.out;
  r = run_cli({"run", "--target", "sim", "-c", "m = torch.randint(0, 5, (4, 6))\ntorch.where(m > 2, 1.5, m)"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(TorchFidelityTest, IntegerTensorsThroughExpAndSqrtAreFloat) {
  EXPECT_EQ(output_type("torch.exp(torch.randint(0, 5, (4,)))"), tt({4}, DType::F32));
  EXPECT_EQ(output_type("torch.randint(0, 5, (4,), dtype=torch.int32).sqrt()"), tt({4}, DType::F32));
  EXPECT_EQ(output_type("torch.sqrt(torch.ones(4, dtype=torch.bool))"), tt({4}, DType::F32));
  test::CliResult r = run_cli({"run", "--target", "sim", "-c", "m = torch.randint(0, 5, (4, 6))\ntorch.exp(m) + m.sqrt()"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// torch.randint(low, high, size): what the outside checks' integer exp/sqrt programs were refused
// for (only low=0 was supported): an input of [0, high - low) plus low.
TEST_F(TorchFidelityTest, RandintTakesALowBound) {
  EXPECT_EQ(output_type("torch.randint(1, 10, (4,))"), tt({4}, DType::I64));
  EXPECT_EQ(output_type("torch.randint(-3, 5, (2, 3), dtype=torch.int32)"), tt({2, 3}, DType::I32));
  TensorValue v = reference_output("torch.randint(-3, 5, (400,))");
  ASSERT_EQ(v.data.size(), 400u);
  EXPECT_EQ(*std::min_element(v.data.begin(), v.data.end()), -3.0);
  EXPECT_EQ(*std::max_element(v.data.begin(), v.data.end()), 4.0);
  expect_refused("torch.randint(5, 5, (4,))", "random_ expects 'from' to be less than 'to', but got from=5 >= to=5", 1, 15);
  test::CliResult r = run_cli({"run", "--target", "sim", "-c", "m = torch.randint(1, 10, (4, 6))\ntorch.sqrt(m) + m.exp()"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// cat promotes like PyTorch's result_type over all its tensors (the others are converted).
TEST_F(TorchFidelityTest, CatOfMixedDtypesPromotes) {
  EXPECT_EQ(output_type("torch.cat([torch.randn(2, 3), torch.randn(2, 3, dtype=torch.float16)])"), tt({4, 3}, DType::F32));
  EXPECT_EQ(output_type("torch.cat([torch.randn(2, 3, dtype=torch.bfloat16), torch.randn(1, 3, dtype=torch.float16)])"),
            tt({3, 3}, DType::F32));
  EXPECT_EQ(output_type("torch.cat([torch.randint(0, 5, (2, 3)), torch.randn(2, 3, dtype=torch.float16)], 1)"),
            tt({2, 6}, DType::F16));
  EXPECT_EQ(output_type("torch.cat([torch.ones(2, dtype=torch.bool), torch.ones(3, dtype=torch.int32)])"),
            tt({5}, DType::I32));
  EXPECT_EQ(output_type("torch.stack([torch.randn(3, dtype=torch.float16), torch.randn(3, dtype=torch.float64)])"),
            tt({2, 3}, DType::F64));
  // A legacy (0,) operand is skipped for the shape but counts for the dtype, as in PyTorch.
  EXPECT_EQ(output_type("x = torch.randn(4)\ntorch.cat([torch.randint(0, 5, (2, 3)), x[4:]])"), tt({2, 3}, DType::F32));
  test::CliResult r = run_cli({"run", "--target", "sim", "-c",
                               "a = torch.randn(2, 3)\nb = torch.randn(2, 3, dtype=torch.float16)\ntorch.cat([a, b])"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// F.softmax / F.log_softmax / nn.Softmax without dim: PyTorch's implicit dim (0 for 0-, 1- and 3-D
// inputs, else 1) and its deprecation warning, located at the call.
TEST_F(TorchFidelityTest, SoftmaxWithoutDimTakesTheImplicitDimAndWarns) {
  struct Case {
    const char* program;
    const char* node;
    int64_t dim;
  };
  for (const Case& c : {Case{"F.softmax(torch.randn(2, 3, 4))", "softmax", 0}, Case{"F.softmax(torch.randn(5))", "softmax", 0},
                        Case{"F.softmax(torch.randn(2, 3))", "softmax", 1},
                        Case{"F.softmax(torch.randn(2, 3, 4, 5))", "softmax", 1},
                        Case{"nn.Softmax()(torch.randn(2, 3, 4))", "softmax", 0},
                        Case{"F.log_softmax(torch.randn(2, 3, 4))", "amax", 0}}) {
    SCOPED_TRACE(c.program);
    std::vector<Diagnostic> warnings;
    FrontendOptions options;
    options.warnings = &warnings;
    Graph g = trace(c.program, options);
    const Node* n = g.find(c.node);
    ASSERT_NE(n, nullptr) << print_graph(g);
    const auto* op = n->op_as<TorchOp>();
    ASSERT_NE(op, nullptr);
    const std::vector<int64_t>* dims = std::get_if<std::vector<int64_t>>(op->attrs.find("dim"));
    EXPECT_EQ(dims ? dims->front() : op->attrs.get_int("dim", -99), c.dim) << print_graph(g);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].severity, Severity::Warning);
    EXPECT_NE(warnings[0].message.find("Implicit dimension choice for "), std::string::npos) << warnings[0].message;
    EXPECT_NE(warnings[0].message.find(" has been deprecated. Change the call to include dim=X as an argument."),
              std::string::npos);
    EXPECT_EQ(warnings[0].loc.line, 1);
    EXPECT_EQ(warnings[0].loc.col, 1);
  }
  test::CliResult r = run_cli({"run", "--target", "sim", "-c", "x = torch.randn(2, 3, 4)\nF.softmax(x)"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("<-c>:2:1: warning: Implicit dimension choice for softmax has been deprecated."), std::string::npos)
      << r.err;
  // An explicit dim warns nothing.
  r = run_cli({"run", "--target", "sim", "-c", "F.softmax(torch.randn(2, 3, 4), dim=-1)"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// The batch dims of attention broadcast, as in PyTorch's math attention (matmuls).
TEST_F(TorchFidelityTest, AttentionBroadcastsBatchDims) {
  const std::string f = "import torch.nn.functional as F\n";
  EXPECT_EQ(output_type(f + "F.scaled_dot_product_attention(torch.randn(2, 3, 5, 8), torch.randn(3, 7, 8), torch.randn(3, 7, 6))"),
            tt({2, 3, 5, 6}, DType::F32));
  EXPECT_EQ(output_type(f + "F.scaled_dot_product_attention(torch.randn(2, 3, 5, 8), torch.randn(1, 3, 7, 8), "
                            "torch.randn(7, 8), is_causal=True)"),
            tt({2, 3, 5, 8}, DType::F32));
  EXPECT_EQ(output_type(f + "F.scaled_dot_product_attention(torch.randn(3, 5, 8), torch.randn(2, 3, 7, 8), "
                            "torch.randn(2, 3, 7, 8))"),
            tt({2, 3, 5, 8}, DType::F32));
  expect_refused(f + "F.scaled_dot_product_attention(torch.randn(2, 3, 5, 8), torch.randn(4, 7, 8), torch.randn(4, 7, 8))",
                 "batch dimensions of query (2, 3, 5, 8), key (4, 7, 8) and value (4, 7, 8) do not broadcast", 2, 1);
  test::CliResult r = run_cli({"run", "--target", "sim", "-c",
                               f + "F.scaled_dot_product_attention(torch.randn(2, 3, 5, 8), torch.randn(3, 7, 8), "
                                   "torch.randn(3, 7, 8))"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// F.linear with a 1-D weight is x @ weight: the last dim is contracted away.
TEST_F(TorchFidelityTest, LinearWithAOneDimensionalWeight) {
  const std::string f = "import torch.nn.functional as F\n";
  EXPECT_EQ(output_type(f + "F.linear(torch.randn(3, 4), torch.randn(4))"), tt({3}, DType::F32));
  EXPECT_EQ(output_type(f + "F.linear(torch.randn(4), torch.randn(4), torch.randn(()))"), tt({}, DType::F32));
  EXPECT_EQ(output_type(f + "F.linear(torch.randn(2, 3, 4), torch.randn(4), torch.randn(3))"), tt({2, 3}, DType::F32));
  expect_refused(f + "F.linear(torch.randn(3, 4), torch.randn(5))", "does not match the 1-D weight of shape (5,)", 2, 1);
  expect_refused(f + "F.linear(torch.randn(3, 4), torch.randn(4), torch.randn(2))", "does not broadcast", 2, 1);
  TensorValue v = reference_output("x = torch.full((2, 3), 2.0)\nF.linear(x, torch.full((3,), 0.5), torch.full((), 1.0))");
  ASSERT_EQ(v.data.size(), 2u);
  EXPECT_EQ(v.data[0], 4.0);  // 3 * 2 * 0.5 + 1
  test::CliResult r = run_cli({"run", "--target", "sim", "-c", f + "F.linear(torch.randn(3, 4), torch.randn(4), torch.randn(()))"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// An embedding index known when tracing and outside the table: PyTorch's IndexError at the call.
TEST_F(TorchFidelityTest, EmbeddingIndexKnownOutOfRangeIsRefused) {
  const std::string f = "import torch.nn.functional as F\nw = torch.randn(10, 4)\n";
  expect_refused(f + "F.embedding(torch.tensor([1, 10]), w)", "index out of range in self (index 10, the weight has 10 rows)",
                 3, 1);
  expect_refused(f + "F.embedding(torch.tensor([[-1, 2]]), w)", "index out of range in self (index -1", 3, 1);
  expect_refused(f + "F.embedding(torch.arange(12).reshape(3, 4), w)", "index out of range in self (index 11", 3, 1);
  expect_refused("e = nn.Embedding(10, 4)\ne(torch.full((2,), 10))", "index out of range in self", 2, 1);
  expect_refused(f + "F.embedding(torch.cat([torch.zeros(2, dtype=torch.int64), torch.arange(8, 12)]), w)",
                 "index out of range in self", 3, 1);
  // In range, or not known when tracing: accepted.
  trace(f + "F.embedding(torch.arange(10), w)");
  trace(f + "F.embedding(torch.randint(0, 10, (5,)), w)");
  trace(f + "F.embedding(torch.arange(12)[2:], w)");
}

// PyTorch's layer_norm takes float32 parameters on a bfloat16 or float16 input, and nothing else
// mixed: nn.LayerNorm(32) (float32) on a float64 input raises.
TEST_F(TorchFidelityTest, LayerNormRefusesMixedDtypesAsPyTorchDoes) {
  expect_refused("nn.LayerNorm(32)(torch.randn(2, 7, 32, dtype=torch.float64))",
                 "mixed dtype (CPU): all inputs must share same datatype.", 1, 1);
  expect_refused("x = torch.randn(2, 32, dtype=torch.float16)\nF.layer_norm(x, (32,), torch.randn(32, dtype=torch.bfloat16))",
                 "mixed dtype (CPU): expect parameter to have scalar type of Float", 2, 1);
  EXPECT_EQ(output_type("nn.LayerNorm(32)(torch.randn(2, 32, dtype=torch.bfloat16))"), tt({2, 32}, DType::BF16));
  EXPECT_EQ(output_type("nn.LayerNorm(32, dtype=torch.float64)(torch.randn(2, 32, dtype=torch.float64))"),
            tt({2, 32}, DType::F64));
  EXPECT_EQ(output_type("nn.LayerNorm(32).double()(torch.randn(2, 32, dtype=torch.float64))"), tt({2, 32}, DType::F64));
}

}  // namespace
}  // namespace tessera

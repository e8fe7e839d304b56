// The output check's tolerance policy (output_tolerance / compare_output, docs/cli.md "The tolerance
// policy"): the precision is the narrowest float dtype computed on an output's path; a correct
// program whose every op is off by one unit in the last place passes; an output read at a wrong
// index fails; subnormal f16 outputs a few rounding steps apart pass.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/ir/op.h"

namespace tessera {
namespace {

class OutputToleranceTest : public test::TorchExprFrontendTest {};

FrontendOptions in_dtype(DType dtype) {
  FrontendOptions options;
  options.dtype = dtype;
  return options;
}

// One unit in the last place of `v` stored as `dtype` (the subnormal spacing below the smallest
// normal number).
double ulp_of(double v, DType dtype) {
  int mantissa_bits = 0, min_exponent = 0;
  switch (dtype) {
    case DType::F16: mantissa_bits = 10; min_exponent = -14; break;
    case DType::BF16: mantissa_bits = 7; min_exponent = -126; break;
    case DType::F32: mantissa_bits = 23; min_exponent = -126; break;
    case DType::F64: mantissa_bits = 52; min_exponent = -1022; break;
    case DType::I32: case DType::I64: case DType::Bool: return 0.0;
  }
  const int exponent = v == 0.0 ? min_exponent : std::max(std::ilogb(v), min_exponent);
  return std::ldexp(1.0, exponent - mantissa_bits);
}

// Evaluates `g` as a correct but differently rounding implementation would: every computed node's
// every element is moved one ulp of its dtype up or down (a fixed pseudo-random pattern), and the
// nodes after it compute from the moved values. Node by node: the nodes already computed become
// inputs of a copy of the graph holding their moved values.
ValueMap evaluate_one_ulp_per_op(const Graph& g, const ValueMap& inputs) {
  ValueMap values = inputs;
  std::vector<std::string> computed;
  uint64_t pattern = 0x9e3779b97f4a7c15ull;
  for (const Node* n : g.nodes()) {
    if (n->op_as<InputOp>() || n->op_as<ConstantOp>()) continue;
    Graph step = g;
    for (const std::string& id : computed) {
      step.find(id)->op = std::make_unique<InputOp>();
      step.find(id)->inputs = std::vector<std::string>{};
    }
    step.outputs() = {n->id()};
    Expected<ValueMap> r = evaluate_reference(step, values);
    if (!r) {
      ADD_FAILURE() << r.error().render();
      return values;
    }
    TensorValue v = r->at(n->id());
    for (double& x : v.data) {
      pattern = pattern * 6364136223846793005ull + 1442695040888963407ull;
      const double step_size = ulp_of(x, n->type.dtype);
      if (std::isfinite(x)) x += (pattern >> 63) ? step_size : -step_size;
    }
    values[n->id()] = std::move(v);
    computed.push_back(n->id());
  }
  return values;
}

TEST_F(OutputToleranceTest, PrecisionIsTheNarrowestComputedDtypeOnThePath) {
  // Float32 work returned as float64 is checked as float32, not against float64's 1e-9.
  Graph g = trace("x=torch.randn(8,8); (x @ x).double()");
  OutputTolerance t = output_tolerance(g, g.outputs()[0]);
  EXPECT_EQ(t.precision, DType::F32);
  EXPECT_EQ(t.rtol, default_output_rtol(DType::F32));
  // A float16 softmax returned as float32 is checked as float16.
  g = trace("h=torch.randn(4,16, dtype=torch.float16); torch.softmax(h, -1).float()");
  t = output_tolerance(g, g.outputs()[0]);
  EXPECT_EQ(t.precision, DType::F16);
  EXPECT_EQ(t.rtol, default_output_rtol(DType::F16));
  EXPECT_EQ(t.smallest_normal, std::ldexp(1.0, -14));
  // A float16 input read into float32 work: the input is given to both sides alike.
  g = trace("h=torch.randn(4,16, dtype=torch.float16); torch.softmax(h.float(), -1)");
  EXPECT_EQ(output_tolerance(g, g.outputs()[0]).precision, DType::F32);
  // bf16 and f16 on one path: the looser of each term.
  g = trace("a=torch.randn(4, dtype=torch.bfloat16); b=torch.randn(4, dtype=torch.float16); "
            "(a * 2).float() + (b * 2).float()");
  t = output_tolerance(g, g.outputs()[0]);
  EXPECT_EQ(t.precision, DType::BF16);
  EXPECT_EQ(t.smallest_normal, std::ldexp(1.0, -14));
  // Nodes that only move elements round nothing: a bf16 input unsqueezed, then cast, is f32 work.
  g = trace("h=torch.randn(4, 6, dtype=torch.bfloat16); torch.stack([h, torch.randn(4, 6)]) * 2");
  EXPECT_EQ(output_tolerance(g, g.outputs()[0]).precision, DType::F32);
  // Integer outputs are exact whatever their path computes in.
  g = trace("x=torch.randn(4,16); torch.argmax(x.half() * 2, -1)");
  EXPECT_EQ(output_tolerance(g, g.outputs()[0]).rtol, 0.0);
}

// Programs of each kind of op the check meets: matmuls, reductions, softmax, norms, residual sums
// with cancellation; in f32, bf16 and f16 (the programs' tensors and parameters in that dtype).
const char* const kPrograms[] = {
    "x=torch.randn(4,64); w=torch.randn(64,96) / 8; p=torch.softmax(x @ w, -1); "
    "ln=nn.LayerNorm(96); ln(p * 96 + (x @ w)) + x[:, :1]",
    "import torch.nn.functional as F\n"
    "x=torch.randn(2,8,64); n=nn.RMSNorm(64); up=nn.Linear(64,128); gate=nn.Linear(64,128); down=nn.Linear(128,64)\n"
    "h=n(x); x + down(F.silu(gate(h)) * up(h))",
    "import torch.nn.functional as F\n"
    "q=torch.randn(1,4,8,16); k=torch.randn(1,4,8,16); v=torch.randn(1,4,8,16)\n"
    "F.scaled_dot_product_attention(q, k, v, is_causal=True).sum(1)",
    "x=torch.randn(3, 65536); torch.softmax(x.float(), dim=-1).type_as(x)",
};

TEST_F(OutputToleranceTest, OneUlpPerOpPassesAndAWrongIndexFails) {
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    for (const char* program : kPrograms) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + ": " + program);
      Graph g = trace(program, in_dtype(dtype));
      const ValueMap inputs = make_inputs(g, 0);
      Expected<ValueMap> expected = evaluate_reference(g, inputs);
      ASSERT_TRUE(expected) << expected.error().render();
      const std::string out = g.outputs()[0];
      const OutputTolerance tolerance = output_tolerance(g, out);

      ValueMap rounded_differently = evaluate_one_ulp_per_op(g, inputs);
      Expected<ValueComparison> ulp = compare_output(*expected, rounded_differently, out, tolerance);
      ASSERT_TRUE(ulp) << ulp.error().render();
      EXPECT_TRUE(ulp->within(tolerance.rtol)) << ulp->str() << " (rtol " << tolerance.rtol << ")";
      EXPECT_GT(ulp->max_abs_error, 0.0);  // the planted error reached the output

      // Each element read one place further along its row (the last element from the row's start).
      const TensorValue& e = expected->at(out);
      const int64_t row = e.type.shape.back().value();
      ValueMap shifted = *expected;
      for (size_t i = 0; i < e.data.size(); ++i)
        shifted[out].data[i] = e.data[i - i % row + (i % row + 1) % row];
      Expected<ValueComparison> wrong = compare_output(*expected, shifted, out, tolerance);
      ASSERT_TRUE(wrong);
      EXPECT_FALSE(wrong->within(tolerance.rtol)) << wrong->str();

      // One element swapped with its neighbour, the smallest wrong index (where the two differ by
      // half the larger or more, as random data's neighbours mostly do).
      ValueMap swapped = *expected;
      size_t at = e.data.size() / 2;
      while (at + 1 < e.data.size() &&
             !(std::fabs(e.data[at] - e.data[at + 1]) >= 0.5 * std::max(std::fabs(e.data[at]), std::fabs(e.data[at + 1]))))
        ++at;
      ASSERT_LT(at + 1, e.data.size());
      std::swap(swapped[out].data[at], swapped[out].data[at + 1]);
      Expected<ValueComparison> one = compare_output(*expected, swapped, out, tolerance);
      ASSERT_TRUE(one);
      EXPECT_FALSE(one->within(tolerance.rtol)) << one->str();
    }
  }
}

// torch.softmax over 262144 keys returned in f16: probabilities of ~4e-6 are f16 subnormals
// (spacing 2^-24 = 6e-8), and two correct evaluations may differ by a couple of steps.
TEST_F(OutputToleranceTest, Float16SubnormalsAFewStepsApartPass) {
  Graph g = trace("x=torch.randn(3, 262144, dtype=torch.float16); torch.softmax(x.float(), dim=-1).half()");
  const std::string out = g.outputs()[0];
  Expected<ValueMap> expected = evaluate_reference(g, make_inputs(g, 0));
  ASSERT_TRUE(expected) << expected.error().render();
  const OutputTolerance tolerance = output_tolerance(g, out);
  ValueMap actual = *expected;
  const double step = std::ldexp(1.0, -24);
  int subnormal = 0;
  for (double& v : actual[out].data) {
    if (v < std::ldexp(1.0, -14)) ++subnormal;
    v += 2 * step;
  }
  EXPECT_GT(subnormal, 1000);
  Expected<ValueComparison> c = compare_output(*expected, actual, out, tolerance);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->within(tolerance.rtol)) << c->str();
  // Half the row's values off by their own size is still a mismatch.
  for (size_t i = 0; i < actual[out].data.size(); i += 2) actual[out].data[i] = 2 * expected->at(out).data[i];
  c = compare_output(*expected, actual, out, tolerance);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->within(tolerance.rtol)) << c->str();
}

}  // namespace
}  // namespace tessera

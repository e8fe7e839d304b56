// Module conversion and mode in the torch_expr frontend: `.half()`, `.bfloat16()`, `.float()`,
// `.double()`, `.to(...)`, `.cuda()`, `.cpu()`, `.eval()`, `.train()`, `.requires_grad_()` on
// nn.Module values, as PyTorch 2.15 does them (each expectation was read off real PyTorch): they
// return the module itself, reach every submodule (user classes' module attributes, nn.ModuleList /
// nn.Sequential items) but not modules in plain lists, convert parameters created later as well as
// parameters an earlier call already made (a `cast` of the existing constants), and refuse at the
// call what PyTorch refuses. The ConvertModule* programs of the differential corpus
// (tests/support/program_corpus.h) check the values through every IR level and in PyTorch itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/op.h"
#include "tessera/ir/printer.h"

namespace tessera {
namespace {

class TorchModuleConversionTest : public test::TorchExprFrontendTest {
 protected:
  // The dtype of every module parameter (ConstantOp) of the traced program, by path.
  std::map<std::string, DType> parameter_dtypes(const Graph& g) {
    std::map<std::string, DType> out;
    for (const Node* n : g.nodes())
      if (const auto* c = n->op_as<ConstantOp>()) out[c->path] = n->type.dtype;
    return out;
  }

};

TensorType tt(Shape shape, DType dtype) { return TensorType{std::move(shape), dtype}; }

// ---- the spellings -----------------------------------------------------------------------------

TEST_F(TorchModuleConversionTest, EverySpellingConvertsTheParametersAndReturnsTheModule) {
  struct Case {
    const char* conversion;  // appended to `nn.Linear(8, 16)`
    const char* input_dtype;
    DType params;
  };
  const Case cases[] = {
      {".half()", "float16", DType::F16},
      {".bfloat16()", "bfloat16", DType::BF16},
      {".double()", "float64", DType::F64},
      {".float()", "float32", DType::F32},
      {".to(torch.float16)", "float16", DType::F16},
      {".to(torch.bfloat16)", "bfloat16", DType::BF16},
      {".to(torch.double)", "float64", DType::F64},
      {".to(dtype=torch.float16)", "float16", DType::F16},
      {".to('cuda', torch.float16)", "float16", DType::F16},
      {".to('cuda:0', dtype=torch.bfloat16)", "bfloat16", DType::BF16},
      {".to(device='cpu', dtype=torch.float64)", "float64", DType::F64},
      {".to(torch.float16, non_blocking=True)", "float16", DType::F16},
      {".to(torch.randn(3, dtype=torch.bfloat16))", "bfloat16", DType::BF16},
      {".to('cuda')", "float32", DType::F32},
      {".to(0)", "float32", DType::F32},
      {".to(device)", "float32", DType::F32},
      {".to()", "float32", DType::F32},
      {".cuda()", "float32", DType::F32},
      {".cuda(0)", "float32", DType::F32},
      {".cpu()", "float32", DType::F32},
      {".eval()", "float32", DType::F32},
      {".train(False)", "float32", DType::F32},
      {".requires_grad_(False)", "float32", DType::F32},
      // Each returns the module, so they chain; the last dtype wins.
      {".eval().half()", "float16", DType::F16},
      {".half().eval().requires_grad_(False)", "float16", DType::F16},
      {".to('cuda').to(torch.bfloat16).cuda()", "bfloat16", DType::BF16},
      {".half().float()", "float32", DType::F32},
      {".bfloat16().to(device, torch.float16)", "float16", DType::F16},
  };
  for (const Case& c : cases) {
    const std::string program = std::string("device = 'cuda'\nm = nn.Linear(8, 16)") + c.conversion +
                                "\nm(torch.randn(2, 8, dtype=torch." + c.input_dtype + "))";
    Graph g = trace(program);
    ASSERT_EQ(g.outputs().size(), 1u) << program;
    EXPECT_EQ(g.find(g.outputs()[0])->type, tt({2, 16}, c.params)) << program;
    EXPECT_EQ(parameter_dtypes(g), (std::map<std::string, DType>{{"m.weight", c.params}, {"m.bias", c.params}}))
        << program << "\n" << print_graph(g);
  }
}

TEST_F(TorchModuleConversionTest, ConversionAsAStatementConvertsTheModuleInPlace) {
  Graph g = trace("m = nn.Linear(8, 16)\nm.half()\nm(torch.randn(2, 8, dtype=torch.float16))");
  EXPECT_EQ(parameter_dtypes(g), (std::map<std::string, DType>{{"m.weight", DType::F16}, {"m.bias", DType::F16}}));
  Graph h = trace("m = nn.Sequential(nn.Linear(8, 16), nn.ReLU())\nm.to(torch.bfloat16)\nm.eval()\n"
                  "m(torch.randn(2, 8, dtype=torch.bfloat16))");
  EXPECT_EQ(parameter_dtypes(h),
            (std::map<std::string, DType>{{"m.0.weight", DType::BF16}, {"m.0.bias", DType::BF16}}));
}

// nn.Linear(..., dtype=torch.float16).float() converts back to float32 (PyTorch's .float()).
TEST_F(TorchModuleConversionTest, ConstructorDtypeThenFloatConvertsBack) {
  Graph g = trace("nn.Linear(8, 16, dtype=torch.float16).float()(torch.randn(2, 8))");
  EXPECT_EQ(parameter_dtypes(g), (std::map<std::string, DType>{{"weight", DType::F32}, {"bias", DType::F32}}));
  EXPECT_EQ(output_type("nn.RMSNorm(8, dtype=torch.bfloat16).to(torch.float64)(torch.randn(2, 8, dtype=torch.float64))"),
            tt({2, 8}, DType::F64));
}

// Without a conversion PyTorch keeps float32 parameters: a float32 nn.Linear on float16 input is
// its error, also when the module sits in a converted model but outside its module tree.
TEST_F(TorchModuleConversionTest, UnconvertedModulesKeepFloat32Parameters) {
  expect_refused("nn.Linear(8, 16)(torch.randn(2, 8, dtype=torch.float16))",
                 "mat1 and mat2 must have the same dtype, but got float16 (input) and float32 (weight)", 1, 1);
  // A plain list of modules is no submodule (PyTorch registers only Module-valued attributes).
  expect_refused("class M(nn.Module):\n"
                 "    def __init__(self):\n"
                 "        super().__init__()\n"
                 "        self.registered = nn.Linear(8, 8)\n"
                 "        self.plain = [nn.Linear(8, 8)]\n"
                 "    def forward(self, x):\n"
                 "        return self.plain[0](self.registered(x))\n"
                 "M().half()(torch.randn(2, 8, dtype=torch.float16))",
                 "mat1 and mat2 must have the same dtype, but got float16 (input) and float32 (weight)", 7, 16);
}

// ---- recursion ----------------------------------------------------------------------------------

TEST_F(TorchModuleConversionTest, ConversionReachesEverySubmodule) {
  const std::string program =
      "class MLP(nn.Module):\n"
      "    def __init__(self, d):\n"
      "        super().__init__()\n"
      "        self.up = nn.Linear(d, 2 * d)\n"
      "        self.down = nn.Sequential(nn.GELU(), nn.Linear(2 * d, d, bias=False))\n"
      "    def forward(self, x):\n"
      "        return self.down(self.up(x))\n"
      "class Block(nn.Module):\n"
      "    def __init__(self, d):\n"
      "        super().__init__()\n"
      "        self.embed = nn.Embedding(10, d)\n"
      "        self.norms = nn.ModuleList([nn.RMSNorm(d), nn.LayerNorm(d)])\n"
      "        self.mlp = MLP(d)\n"
      "        self.scale = 0.5\n"
      "    def forward(self, ids):\n"
      "        h = self.embed(ids)\n"
      "        for norm in self.norms:\n"
      "            h = h + self.mlp(norm(h)) * self.scale\n"
      "        return h\n"
      "model = Block(8).to(torch.bfloat16)\n"
      "model(torch.randint(0, 10, (2, 5)))";
  Graph g = trace(program);
  const std::map<std::string, DType> expected = {
      {"model.embed.weight", DType::BF16},     {"model.norms.0.weight", DType::BF16},
      {"model.norms.1.weight", DType::BF16},   {"model.norms.1.bias", DType::BF16},
      {"model.mlp.up.weight", DType::BF16},    {"model.mlp.up.bias", DType::BF16},
      {"model.mlp.down.1.weight", DType::BF16}};
  EXPECT_EQ(parameter_dtypes(g), expected) << print_graph(g);
  EXPECT_EQ(g.find(g.outputs()[0])->type, tt({2, 5, 8}, DType::BF16));
  // The integer input is no parameter: it keeps its dtype.
  EXPECT_EQ(g.find("x")->type, tt({2, 5}, DType::I64));
}

// A module shared by two parents, or one holding itself, is converted once.
TEST_F(TorchModuleConversionTest, SharedAndSelfReferencingModulesAreConvertedOnce) {
  Graph g = trace(
      "class M(nn.Module):\n"
      "    def __init__(self, shared):\n"
      "        super().__init__()\n"
      "        self.a = shared\n"
      "        self.b = shared\n"
      "        self.me = self\n"
      "    def forward(self, x):\n"
      "        return self.b(self.a(x))\n"
      "M(nn.Linear(8, 8)).double()(torch.randn(2, 8, dtype=torch.float64))");
  EXPECT_EQ(parameter_dtypes(g), (std::map<std::string, DType>{{"a.weight", DType::F64}, {"a.bias", DType::F64}}));
}

// A class that defines a method named like nn.Module's (here `half`) gets its own method.
TEST_F(TorchModuleConversionTest, AMethodOfTheClassWinsOverNnModules) {
  Graph g = trace(
      "class M(nn.Module):\n"
      "    def half(self, x):\n"
      "        return x * 0.5\n"
      "M().half(torch.randn(3))");
  EXPECT_NE(g.find("mul"), nullptr) << print_graph(g);
}

// ---- conversion after a call ------------------------------------------------------------------

// The parameters exist after the first call: later calls use a `cast` of them (PyTorch converts
// the same tensors in place), the earlier call keeps its float32 ones, and no new parameter is made.
TEST_F(TorchModuleConversionTest, ConversionAfterACallCastsTheExistingParameters) {
  Graph g = trace(
      "m = nn.Linear(8, 16)\n"
      "x = torch.randn(2, 8)\n"
      "a = m(x)\n"
      "m.half()\n"
      "b = m(x.half())\n"
      "(a, b)");
  EXPECT_EQ(parameter_dtypes(g), (std::map<std::string, DType>{{"m.weight", DType::F32}, {"m.bias", DType::F32}}));
  ASSERT_EQ(g.outputs().size(), 2u);
  const Node* a = g.find(g.outputs()[0]);
  const Node* b = g.find(g.outputs()[1]);
  EXPECT_EQ(a->type, tt({2, 16}, DType::F32));
  EXPECT_EQ(b->type, tt({2, 16}, DType::F16));
  EXPECT_EQ(a->inputs, (std::vector<std::string>{"x", "p_m_weight", "p_m_bias"}));
  ASSERT_EQ(b->inputs.size(), 3u);
  for (const auto& [cast_id, param] : {std::pair<std::string, std::string>{b->inputs[1], "p_m_weight"},
                                       std::pair<std::string, std::string>{b->inputs[2], "p_m_bias"}}) {
    const Node* cast = g.find(cast_id);
    ASSERT_NE(cast, nullptr);
    ASSERT_NE(cast->op_as<TorchOp>(), nullptr) << print_graph(g);
    EXPECT_EQ(cast->op_as<TorchOp>()->target, "cast");
    EXPECT_EQ(cast->inputs, std::vector<std::string>{param});
    EXPECT_EQ(cast->type.dtype, DType::F16);
    EXPECT_EQ(cast->loc.line, 4) << "the cast is made where the program converts the module";
  }
  EXPECT_EQ(b->inputs[1], "p_m_weight_float16");
}

// Converting to float16 and back rounds the weights, as PyTorch does: the later call differs from
// the earlier one by that rounding only.
TEST_F(TorchModuleConversionTest, ConvertingToHalfAndBackRoundsTheWeights) {
  Graph g = trace(
      "m = nn.Linear(64, 32)\n"
      "x = torch.randn(4, 64)\n"
      "a = m(x)\n"
      "m.half()\n"
      "m.float()\n"
      "m(x) - a");
  Expected<ValueMap> values = evaluate_reference(g, make_inputs(g, 0));
  ASSERT_TRUE(values) << values.error().render();
  const auto& diff = values->at(g.outputs()[0]).data;
  double largest = 0;
  for (double d : diff) largest = std::max(largest, std::fabs(d));
  EXPECT_GT(largest, 0.0) << "the weights were not rounded to float16";
  EXPECT_LT(largest, 0.05);
}

// Calls before the conversion share the parameters; a conversion to the dtype they already have
// adds no node.
TEST_F(TorchModuleConversionTest, ConversionToTheSameDtypeAddsNoCast) {
  Graph g = trace("m = nn.Linear(8, 16)\nx = torch.randn(2, 8)\na = m(x)\nm.float()\nm.to('cuda')\nb = m(x)\n(a, b)");
  for (const Node* n : g.nodes()) {
    if (const auto* op = n->op_as<TorchOp>()) {
      EXPECT_NE(op->target, "cast") << print_graph(g);
    }
  }
  EXPECT_EQ(g.find(g.outputs()[1])->inputs, (std::vector<std::string>{"x", "p_m_weight", "p_m_bias"}));
}

// ---- training mode ----------------------------------------------------------------------------

// Modules start in eval mode (Tessera traces inference); .train() switches the tree to training
// mode, where `self.training` reads True; .eval() and .train(False) switch it back.
TEST_F(TorchModuleConversionTest, TrainAndEvalSetTheTrainingFlagOfTheTree) {
  const std::string cls =
      "class M(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.inner = nn.Sequential(nn.Identity())\n"
      "    def forward(self, x):\n"
      "        return x * 2 if self.training else x + 1\n";
  auto target_of_output = [&](const std::string& call) {
    Graph g = trace(cls + call);
    const Node* out = g.find(g.outputs()[0]);
    const auto* op = out ? out->op_as<TorchOp>() : nullptr;
    return op ? op->target : std::string("(not a torch op)");
  };
  EXPECT_EQ(target_of_output("M()(torch.randn(3))"), "add");
  EXPECT_EQ(target_of_output("M().train()(torch.randn(3))"), "mul");
  EXPECT_EQ(target_of_output("M().train(True)(torch.randn(3))"), "mul");
  EXPECT_EQ(target_of_output("M().train().eval()(torch.randn(3))"), "add");
  EXPECT_EQ(target_of_output("M().train().train(mode=False)(torch.randn(3))"), "add");
  // The flag reaches submodules, and builtin modules and containers expose it.
  EXPECT_EQ(output_type(cls + "m = M().train()\nx = torch.randn(3)\nx * 2 if m.inner.training else x.half()").dtype,
            DType::F32);
  EXPECT_EQ(output_type(cls + "m = M().train()\nm.eval()\nx = torch.randn(3)\nx * 2 if m.inner[0].training else x.half()")
                .dtype,
            DType::F16);
  // PyTorch's train(mode) assigns self.training, replacing what __init__ stored there.
  EXPECT_EQ(target_of_output("class N(M):\n"
                             "    def __init__(self):\n"
                             "        super().__init__()\n"
                             "        self.training = True\n"
                             "N().eval()(torch.randn(3))"),
            "add");
}

// Dropout is the identity in eval mode; in training mode it is random, which Tessera does not
// compile: an error at the dropout call (p = 0 stays the identity).
TEST_F(TorchModuleConversionTest, DropoutInTrainingModeIsRefusedAtItsCall) {
  expect_refused("m = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1)).train()\nm(torch.randn(2, 8))",
                 "nn.Dropout is in training mode (the program called .train())", 2, 1);
  expect_refused("class M(nn.Module):\n"
                 "    def forward(self, x):\n"
                 "        return F.dropout(x, 0.1, self.training)\n"
                 "M().train()(torch.randn(3))",
                 "F.dropout with training=True is random", 3, 34);
  EXPECT_EQ(output_type("nn.Sequential(nn.Dropout(0.0), nn.ReLU()).train()(torch.randn(3))"), tt({3}, DType::F32));
  EXPECT_EQ(output_type("nn.Sequential(nn.Dropout(0.1)).train().eval()(torch.randn(3))"), tt({3}, DType::F32));
  expect_refused("nn.Dropout(1.5)", "dropout probability has to be between 0 and 1, but got 1.5", 1, 12);
}

// ---- what PyTorch refuses ---------------------------------------------------------------------

TEST_F(TorchModuleConversionTest, NonFloatingDtypesAreRefusedAtTheArgument) {
  expect_refused("nn.Linear(8, 16).to(torch.int64)",
                 "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.int64", 1, 21);
  expect_refused("m = nn.Linear(8, 16)\nm.to(dtype=torch.bool)",
                 "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.bool", 2, 6);
  expect_refused("m = nn.Linear(8, 16)\nm.to('cuda', torch.int32)", "but got desired dtype=torch.int32", 2, 14);
  expect_refused("m = nn.Linear(8, 16)\nm.to(torch.randint(0, 3, (2,)))", "but got desired dtype=torch.int64", 2, 6);
}

TEST_F(TorchModuleConversionTest, DevicesOtherThanCpuAndCudaAreRefused) {
  expect_refused("nn.Linear(8, 16).to('mps')", "device 'mps' is not supported", 1, 21);
  expect_refused("nn.Linear(8, 16).to(device='meta')", "device 'meta' is not supported", 1, 21);
  expect_refused("nn.Linear(8, 16).to('gpu')",
                 "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, "
                 "vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: gpu",
                 1, 21);
  expect_refused("nn.Linear(8, 16).to('cuda:x')", "Invalid device string: 'cuda:x'", 1, 21);
  expect_refused("nn.Linear(8, 16).to(-1)", "Device index must not be negative", 1, 21);
  expect_refused("nn.Linear(8, 16).cuda('cpu')", "Invalid device, must be cuda device", 1, 23);
}

TEST_F(TorchModuleConversionTest, MalformedCallsAreRefusedAtTheCall) {
  expect_refused("nn.Linear(8, 16).to(torch.float16, 'cuda')", "unexpected positional argument", 1, 36);
  expect_refused("nn.Linear(8, 16).to(torch.float16, dtype=torch.float32)",
                 "got multiple values for argument 'dtype'", 1, 36);
  expect_refused("nn.Linear(8, 16).to(2.5)", "expects a device, a dtype or a tensor, got float", 1, 21);
  expect_refused("nn.Linear(8, 16).to(sizes=3)", "unexpected keyword argument 'sizes'", 1, 21);
  expect_refused("nn.Linear(8, 16).to(torch.float16, copy=True)", ".to() does not accept copy argument", 1, 36);
  expect_refused("nn.Linear(8, 16).to('cpu', torch.float16, True, True)", ".to() does not accept copy argument", 1, 49);
  // Tessera chooses memory layouts itself: the memory formats are not part of the torch namespace.
  expect_refused("nn.Linear(8, 16).to(memory_format=torch.channels_last)", "torch has no function or attribute "
                 "'channels_last'", 1, 41);
  expect_refused("nn.Linear(8, 16).train('yes')", "training mode is expected to be boolean", 1, 24);
  expect_refused("nn.Linear(8, 16).half(1)", "but 1 was given", 1, 23);
  expect_refused("nn.Linear(8, 16).requires_grad_('no')", "requires_grad", 1, 33);
  // Other attributes of modules stay unsupported.
  expect_refused("nn.Linear(8, 16).weight", "attribute 'weight' of nn.Linear module is not supported yet", 1, 18);
  expect_refused("nn.Sequential(nn.ReLU()).zero_grad()", "nn.Sequential module has no attribute 'zero_grad'", 1, 26);
}

}  // namespace
}  // namespace tessera

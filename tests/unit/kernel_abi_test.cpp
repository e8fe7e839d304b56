// Tests of the kernel ABI (docs/ir.md "Kernel parameters and launch", docs/targets.md): typed
// scalar and tensor-map parameters, 2-D grids, cluster dims and dynamic shared memory through the
// printer, JSON, the verifier, emit_cuda (+ NVRTC for sm_90), the sim target and the cuda runtime's
// argument packing (LaunchArgs, tensor-map encoding with its swizzle, fill and element strides,
// and the stand-in driver's checks of those arguments), plus RMSNorm over a 64 KB row, which needs
// dynamic shared memory. One test runs both kernels on a GPU through the cuda target and skips
// with the driver's reason where there is none.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "plugins/targets/cuda/launch_args.h"
#include "support/built_plugins.h"
#include "support/test_paths.h"
#include "support/nvrtc_check.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/pipeline.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"

#if TESSERA_HAVE_CUDA && defined(TESSERA_FAKE_CUDA_DIR)
#include <cuda.h>
#endif

namespace tessera {
namespace {

Expr v(const char* name) { return Expr::var(name); }
Expr i(int64_t value) { return Expr::int_(value); }

KernelParam scalar(const std::string& name, DType dtype, std::optional<Interval> range = std::nullopt) {
  KernelParam p;
  p.name = name;
  p.kind = ParamKind::Scalar;
  p.dtype = dtype;
  p.range = range;
  return p;
}

KernelParam tensor_map(const std::string& name, const std::string& buffer, std::vector<int64_t> box) {
  KernelParam p;
  p.name = name;
  p.kind = ParamKind::TensorMap;
  p.tensor_map.buffer = buffer;
  p.tensor_map.box = std::move(box);
  return p;
}

KernelParam buffer(const std::string& name, DType dtype, bool written) {
  KernelParam p;
  p.name = name;
  p.dtype = dtype;
  p.written = written;
  return p;
}

// y[r, c] = x[(r + pos) % 8, c] * scale over an 8 x 64 f32 matrix: a 2-D grid of (2, 8) blocks of
// 32 threads, blockIdx.y picking the row; `pos` (i32 in [0, 7]) and `scale` (f32) are scalars.
Graph roll_kernel() {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{8, 64}, DType::F32});
  auto op = std::make_unique<KernelOp>();
  op->name = "k_roll";
  op->grid = {2, 8, 1};
  op->block = {32, 1, 1};
  op->params = {scalar("pos", DType::I32, Interval{0, 7}), scalar("scale", DType::F32)};
  op->body = {Let{"a0", v("blockIdx.x") * 32 + v("threadIdx.x")},
              Let{"a1", v("blockIdx.y")},
              Load{"in0", "x", {(v("a1") + v("pos")) % 8, v("a0")}},
              Assign{"v0", ElementwiseFn::Mul, {v("in0"), v("scale")}},
              Write{"y", {v("a1"), v("a0")}, v("v0")}};
  g.add("y", std::move(op), {"x"}, TensorType{{8, 64}, DType::F32});
  g.outputs() = {"y"};
  return g;
}

class KernelAbiTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_ = h100();
    ASSERT_NE(device_, nullptr);
  }

  Status emit(Graph& g) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass("emit_cuda");
    if (!pass) return make_error("no emit_cuda pass");
    DiagnosticEngine diags;
    PassContext ctx("emit_cuda", "c:001_emit_cuda", pass->knobs(), {}, {}, device_, &diags);
    return pass->run(g, ctx);
  }

  Expected<TargetRun> simulate(const Graph& g, const ValueMap& inputs, ScalarArgs scalars) {
    std::unique_ptr<Target> sim = host_->registry().make_target("sim");
    if (!sim) return make_error("no sim target");
    TargetOptions options;
    options.device = device_;
    options.scalars = std::move(scalars);
    return sim->execute(g, inputs, options);
  }

  const DeviceDesc* device_ = nullptr;
};

#ifdef TESSERA_HAVE_CUDA
using test::nvrtc_compile;
#endif

// ---- Kernel IR: printer, JSON, verifier -----------------------------------------------------

TEST_F(KernelAbiTest, ScalarKernelPrintsItsParamsAndRoundTripsJson) {
  Graph g = roll_kernel();
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("kernel k_roll  grid=(2, 8, 1) block=(32, 1, 1)  inputs: x  outputs: y: (8, 64) float32  "
                      "params: pos: i32 in [0, 7], scale: f32\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("in0 = load x[(a1 + pos) % 8, a0]"), std::string::npos) << text;
  Status verified = verify_graph(g, Dialect::Kernel);
  EXPECT_TRUE(verified) << verified.message();

  Expected<Graph> back = graph_from_json_text(graph_to_json_text(g), "<test>");
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(g, *back));
  EXPECT_EQ(print_graph(*back), text);

  // Each new field takes part in equality.
  for (auto edit : std::vector<std::function<void(KernelOp&)>>{
           [](KernelOp& k) { k.params[0].range = Interval{0, 6}; },
           [](KernelOp& k) { k.params[1].dtype = DType::I64; },
           [](KernelOp& k) { k.cluster = {2, 1, 1}; },
           [](KernelOp& k) { k.dynamic_smem = 64; }}) {
    Graph changed = g;
    edit(*changed.find("y")->op_as<KernelOp>());
    EXPECT_FALSE(structurally_equal(g, changed));
  }
}

TEST_F(KernelAbiTest, ClusterDynamicSmemAndTensorMapPrintAndRoundTrip) {
  Graph g = roll_kernel();
  auto* k = g.find("y")->op_as<KernelOp>();
  k->cluster = {2, 1, 1};
  k->dynamic_smem = 65536;
  k->params.push_back(tensor_map("tmap_x", "x", {1, 64}));
  k->body.insert(k->body.begin(), Smem{"x_smem", DType::F32, {16384}});
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("kernel k_roll  grid=(2, 8, 1) block=(32, 1, 1) cluster=(2, 1, 1) smem=65536 dynamic  "
                      "inputs: x  outputs: y: (8, 64) float32  params: pos: i32 in [0, 7], scale: f32, tmap_x: tensor_map(x, box=(1, 64))\n"),
            std::string::npos)
      << text;
  Status verified = verify_graph(g, Dialect::Kernel);
  EXPECT_TRUE(verified) << verified.message();
  Expected<Graph> back = graph_from_json_text(graph_to_json_text(g), "<test>");
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(g, *back));
}

TEST_F(KernelAbiTest, VerifierRejectsBadParamsAndGeometry) {
  struct Case {
    const char* what;
    std::function<void(KernelOp&)> edit;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"duplicate", [](KernelOp& k) { k.params[1].name = "pos"; }, "repeats the name"},
      {"buffer name", [](KernelOp& k) { k.params[1].name = "x"; }, "repeats the name"},
      {"hardware", [](KernelOp& k) { k.params[1].name = "threadIdx.x"; }, "repeats the name"},
      {"buffer kind", [](KernelOp& k) { k.params[1].kind = ParamKind::Buffer; }, "is a buffer"},
      {"bool scalar", [](KernelOp& k) { k.params[0].dtype = DType::Bool; }, "must be i32, i64 or f32"},
      {"float range", [](KernelOp& k) { k.params[1].range = Interval{0, 1}; }, "has a range"},
      {"empty range", [](KernelOp& k) { k.params[0].range = Interval{3, 2}; }, "has a range"},
      {"tmap buffer", [](KernelOp& k) { k.params.push_back(tensor_map("t", "w", {1, 64})); }, "covers 'w'"},
      {"tmap rank", [](KernelOp& k) { k.params.push_back(tensor_map("t", "x", {64})); }, "needs a box"},
      {"tmap box", [](KernelOp& k) { k.params.push_back(tensor_map("t", "x", {1, 512})); }, "box dimension"},
      {"grid.y", [](KernelOp& k) { k.grid = {1, 70000, 1}; }, "exceeds CUDA's limits"},
      {"block.z", [](KernelOp& k) { k.block = {1, 1, 65}; }, "exceeds CUDA's limits"},
      {"threads", [](KernelOp& k) { k.block = {64, 32, 1}; }, "more than 1024 threads"},
      {"cluster size", [](KernelOp& k) { k.cluster = {2, 1}; }, "three positive sizes"},
      {"cluster divides", [](KernelOp& k) { k.cluster = {1, 3, 1}; }, "does not divide the grid"},
      {"smem too small",
       [](KernelOp& k) {
         k.body.insert(k.body.begin(), Smem{"s", DType::F32, {1024}});
         k.dynamic_smem = 1024;
       },
       "does not hold the kernel's Smem arrays (4096 bytes)"},
      {"redefined scalar", [](KernelOp& k) { k.body.push_back(Let{"pos", i(0)}); },
       "'pos' is a kernel parameter and cannot be redefined"},
      {"scalar as buffer", [](KernelOp& k) { k.body.push_back(Load{"in9", "pos", {i(0)}}); },
       "not a buffer"},
      {"tmap as buffer",
       [](KernelOp& k) {
         k.params.push_back(tensor_map("tmap_x", "x", {1, 64}));
         k.body.push_back(Load{"in9", "tmap_x", {i(0), i(0)}});
       },
       "tensor map 'tmap_x' is used as a buffer"},
      {"undeclared scalar", [](KernelOp& k) { k.params.pop_back(); }, "'scale' is used before it is defined"},
  };
  for (const Case& c : cases) {
    Graph g = roll_kernel();
    c.edit(*g.find("y")->op_as<KernelOp>());
    Status s = verify_graph(g, Dialect::Kernel);
    ASSERT_FALSE(s) << c.what;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.what << ": " << s.message();
  }
}

// ---- emit_cuda + NVRTC ----------------------------------------------------------------------

TEST_F(KernelAbiTest, ScalarKernelEmitsTypedParamsAndCompiles) {
  Graph g = roll_kernel();
  Status s = emit(g);
  ASSERT_TRUE(s) << s.message();
  const auto* op = g.find("y")->op_as<CudaOp>();
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->grid, (std::vector<int64_t>{2, 8, 1}));
  EXPECT_EQ(op->params, (std::vector<KernelParam>{buffer("x", DType::F32, false), buffer("y", DType::F32, true),
                                                  scalar("pos", DType::I32, Interval{0, 7}),
                                                  scalar("scale", DType::F32)}));
  EXPECT_NE(op->source.find("void k_roll(const float* __restrict__ x, float* __restrict__ y, int pos, float scale)"),
            std::string::npos)
      << op->source;
  // The declared range makes a1 + pos non-negative: C's % is floor modulo here.
  EXPECT_NE(op->source.find("x[(a1 + pos) % 8 * 64 + a0]"), std::string::npos) << op->source;
  EXPECT_NE(print_graph(g).find("args: x, y, pos: i32 in [0, 7], scale: f32\n"), std::string::npos) << print_graph(g);
#ifdef TESSERA_HAVE_CUDA
  EXPECT_EQ(nvrtc_compile(*op, "sm_90"), "");
#endif
}

TEST_F(KernelAbiTest, TensorMapParamIsAGridConstantCUtensorMap) {
  Graph g = roll_kernel();
  auto* k = g.find("y")->op_as<KernelOp>();
  k->params.push_back(tensor_map("tmap_x", "x", {1, 64}));
  k->cluster = {1, 2, 1};
  ASSERT_TRUE(verify_graph(g, Dialect::Kernel));
  Status s = emit(g);
  ASSERT_TRUE(s) << s.message();
  const auto* op = g.find("y")->op_as<CudaOp>();
  EXPECT_NE(op->source.find("float scale, const __grid_constant__ CUtensorMap tmap_x)"), std::string::npos)
      << op->source;
  EXPECT_EQ(op->cluster, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(op->params.back(), tensor_map("tmap_x", "x", {1, 64}));
  Expected<Graph> back = graph_from_json_text(graph_to_json_text(g), "<test>");
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(g, *back));
#ifdef TESSERA_HAVE_CUDA
  EXPECT_EQ(nvrtc_compile(*op, "sm_90"), "");
#endif
}

TEST_F(KernelAbiTest, DynamicSmemIsCarvedAtAlignedOffsets) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, TensorType{{3}, DType::F32});
  auto op = std::make_unique<KernelOp>();
  op->name = "k_carve";
  op->block = {4, 1, 1};
  op->dynamic_smem = 96;
  op->body = {Smem{"a_smem", DType::F16, {3}}, Smem{"b_smem", DType::F32, {16}}, Let{"a0", v("threadIdx.x")},
              Cond{v("a0") < i(3),
                   {Load{"in0", "x", {v("a0")}}, Write{"b_smem", {v("a0")}, Expr::value("in0")},
                    Assign{"v1", ElementwiseFn::Cast, {Expr::value("in0")}, ValueType::scalar(DType::F16)},
                    Write{"a_smem", {v("a0")}, Expr::value("v1")},
                    Load{"in1", "a_smem", {v("a0")}, ValueType::scalar(DType::F16)},
                    Assign{"v2", ElementwiseFn::Cast, {Expr::value("in1")}}, Load{"in2", "b_smem", {v("a0")}},
                    Assign{"v0", ElementwiseFn::Add, {Expr::value("v2"), Expr::value("in2")}},
                    Write{"y", {v("a0")}, Expr::value("v0")}},
                   {}}};
  g.add("y", std::move(op), {"x"}, TensorType{{3}, DType::F32});
  g.outputs() = {"y"};
  std::vector<SmemSlot> layout = smem_layout(g.find("y")->op_as<KernelOp>()->body);
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[1].offset, 16);  // 6 bytes of f16, then the next 16-byte boundary
  EXPECT_EQ(smem_layout_bytes(g.find("y")->op_as<KernelOp>()->body), 80);
  ASSERT_TRUE(verify_graph(g, Dialect::Kernel));

  TensorValue x = TensorValue::filled(TensorType{{3}, DType::F32});
  x.data = {1.0, 2.0, 3.0};
  Expected<TargetRun> run = simulate(g, {{"x", x}}, {});
  ASSERT_TRUE(run) << run.error().render();
  EXPECT_EQ(run->outputs.at("y").data, (std::vector<double>{2.0, 4.0, 6.0}));

  Status s = emit(g);
  ASSERT_TRUE(s) << s.message();
  const auto* cuda = g.find("y")->op_as<CudaOp>();
  EXPECT_EQ(cuda->dynamic_smem, 96);
  EXPECT_NE(cuda->source.find("  extern __shared__ __align__(16) unsigned char tessera_smem[];\n"
                              "  __half* a_smem = reinterpret_cast<__half*>(tessera_smem + 0);  // 3 elements\n"
                              "  float* b_smem = reinterpret_cast<float*>(tessera_smem + 16);  // 16 elements\n"),
            std::string::npos)
      << cuda->source;
#ifdef TESSERA_HAVE_CUDA
  EXPECT_EQ(nvrtc_compile(*cuda, "sm_90"), "");
#endif
}

// ---- sim ------------------------------------------------------------------------------------

TEST_F(KernelAbiTest, SimRunsTheScalarKernelOverItsTwoDimensionalGrid) {
  Graph g = roll_kernel();
  TensorValue x = TensorValue::filled(TensorType{{8, 64}, DType::F32});
  for (size_t e = 0; e < x.data.size(); ++e) x.data[e] = static_cast<double>(e % 97) - 40.0;
  for (int64_t pos : {0, 3, 7}) {
    Expected<TargetRun> run = simulate(g, {{"x", x}}, {{"pos", pos}, {"scale", 0.5}});
    ASSERT_TRUE(run) << run.error().render();
    const TensorValue& y = run->outputs.at("y");
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t c = 0; c < 64; ++c)
        ASSERT_EQ(y.data[static_cast<size_t>(r * 64 + c)], x.data[static_cast<size_t>((r + pos) % 8 * 64 + c)] * 0.5)
            << "pos " << pos << " at " << r << ", " << c;
    ASSERT_EQ(run->launches.size(), 1u);
    EXPECT_EQ(run->launches[0].grid, (std::vector<int64_t>{2, 8, 1}));
  }
}

TEST_F(KernelAbiTest, SimChecksScalarArguments) {
  Graph g = roll_kernel();
  ValueMap inputs{{"x", TensorValue::filled(TensorType{{8, 64}, DType::F32})}};
  struct Case {
    ScalarArgs scalars;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{{{{"scale", 1.0}}, "scalar parameter pos: i32 in [0, 7]: no value given"},
                                         {{{"pos", int64_t{8}}, {"scale", 1.0}}, "the value 8 is outside its declared range"},
                                         {{{"pos", 1.5}, {"scale", 1.0}}, "needs an integer value"}}) {
    Expected<TargetRun> run = simulate(g, inputs, c.scalars);
    ASSERT_FALSE(run) << c.message;
    EXPECT_NE(run.error().message.find(c.message), std::string::npos) << run.error().message;
  }
}

// ---- the cuda runtime's argument packing ----------------------------------------------------

TEST(LaunchArgsTest, PacksEveryKindAtItsAlignment) {
  const std::vector<KernelParam> params = {buffer("x", DType::F32, false), buffer("y", DType::F32, true),
                                           scalar("pos", DType::I32), scalar("scale", DType::F32),
                                           scalar("n", DType::I64), tensor_map("tmap_x", "x", {1, 64})};
  LaunchArgValues values;
  values.buffers = {{"x", 0x7f0000001000}, {"y", 0x7f0000002000}};
  values.scalars = {{"pos", int64_t{-3}}, {"scale", int64_t{2}}, {"n", int64_t{1} << 40}};
  TensorMapBytes map;
  for (size_t k = 0; k < map.opaque.size(); ++k) map.opaque[k] = 0x0101010101010101ull * k;
  values.tensor_maps["tmap_x"] = map;
  Expected<LaunchArgs> args = LaunchArgs::pack(params, values);
  ASSERT_TRUE(args) << args.error().message;
  const std::vector<ArgSlot>& s = args->slots();
  ASSERT_EQ(s.size(), 6u);
  const size_t offsets[] = {0, 8, 16, 20, 24, 64}, sizes[] = {8, 8, 4, 4, 8, 128};
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(s[k].offset, offsets[k]) << k;
    EXPECT_EQ(s[k].size, sizes[k]) << k;
  }
  EXPECT_EQ(args->size(), 192u);

  void** p = args->kernel_params();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[5]) % 64, 0u);  // CUtensorMap by value is 64-byte aligned
  uint64_t address = 0;
  std::memcpy(&address, p[1], 8);
  EXPECT_EQ(address, 0x7f0000002000u);
  int32_t pos = 0;
  std::memcpy(&pos, p[2], 4);
  EXPECT_EQ(pos, -3);
  float scale = 0;
  std::memcpy(&scale, p[3], 4);
  EXPECT_EQ(scale, 2.0f);
  int64_t n = 0;
  std::memcpy(&n, p[4], 8);
  EXPECT_EQ(n, int64_t{1} << 40);
  EXPECT_EQ(std::memcmp(p[5], map.opaque.data(), 128), 0);
}

TEST(LaunchArgsTest, PacksTheRollKernelsArguments) {
  // The launch of roll_kernel() after emit_cuda: two device pointers, then the i32 and the f32.
  const std::vector<KernelParam> params = {buffer("x", DType::F32, false), buffer("y", DType::F32, true),
                                           scalar("pos", DType::I32, Interval{0, 7}), scalar("scale", DType::F32)};
  LaunchArgValues values;
  values.buffers = {{"x", 0x1000}, {"y", 0x2000}};
  values.scalars = {{"pos", int64_t{3}}, {"scale", 0.5}};
  Expected<LaunchArgs> args = LaunchArgs::pack(params, values);
  ASSERT_TRUE(args) << args.error().message;
  EXPECT_EQ(args->size(), 24u);
  const unsigned char* d = args->data();
  int32_t pos = 0;
  float scale = 0;
  std::memcpy(&pos, d + 16, 4);
  std::memcpy(&scale, d + 20, 4);
  EXPECT_EQ(pos, 3);
  EXPECT_EQ(scale, 0.5f);
}

TEST(LaunchArgsTest, RejectsMissingAndIllTypedValues) {
  struct Case {
    KernelParam param;
    LaunchArgValues values;
    const char* message;
  };
  LaunchArgValues none;
  LaunchArgValues too_big;
  too_big.scalars = {{"pos", int64_t{1} << 33}};
  LaunchArgValues fraction;
  fraction.scalars = {{"pos", 0.5}};
  LaunchArgValues out_of_range;
  out_of_range.scalars = {{"pos", int64_t{9}}};
  const std::vector<Case> cases = {
      {buffer("x", DType::F32, false), none, "kernel argument x: const f32*: no device buffer"},
      {scalar("pos", DType::I32), none, "kernel argument pos: i32: no value given"},
      {scalar("pos", DType::I32), too_big, "8589934592 does not fit in i32"},
      {scalar("pos", DType::I64), fraction, "needs an integer value"},
      {scalar("pos", DType::I32, Interval{0, 7}), out_of_range, "the value 9 is outside its declared range"},
      {tensor_map("t", "x", {1, 64}), none, "no encoded tensor map"},
  };
  for (const Case& c : cases) {
    Expected<LaunchArgs> args = LaunchArgs::pack({c.param}, c.values);
    ASSERT_FALSE(args) << c.message;
    EXPECT_NE(args.error().message.find(c.message), std::string::npos) << args.error().message;
  }
}

TEST(LaunchArgsTest, EncodesATensorMapInnermostFirst) {
  KernelParam p = tensor_map("tmap_x", "x", {2, 1, 64});
  Expected<TensorMapEncoding> e = encode_tensor_map(p, TensorType{{8, 32, 256}, DType::BF16}, 0x10000);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->data_type, TensorMapEncoding::DataType::BFloat16);
  EXPECT_EQ(e->rank, 3u);
  EXPECT_EQ(e->global_dim, (std::vector<uint64_t>{256, 32, 8}));
  EXPECT_EQ(e->global_strides, (std::vector<uint64_t>{512, 512 * 32}));
  EXPECT_EQ(e->box_dim, (std::vector<uint32_t>{64, 1, 2}));
  EXPECT_EQ(e->element_strides, (std::vector<uint32_t>{1, 1, 1}));

  p.tensor_map.box = {1, 2, 64};
  e = encode_tensor_map(p, TensorType{{8, 32, 256}, DType::BF16}, 0x10000);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->box_dim, (std::vector<uint32_t>{64, 2, 1}));

  // What the driver would reject, caught with the parameter named.
  EXPECT_FALSE(encode_tensor_map(p, TensorType{{8, 32, 256}, DType::BF16}, 0x10008));     // misaligned address
  EXPECT_FALSE(encode_tensor_map(p, TensorType{{8, 32, 250}, DType::BF16}, 0x10000));     // 500-byte rows
  p.tensor_map.box = {1, 2, 4};
  Expected<TensorMapEncoding> narrow = encode_tensor_map(p, TensorType{{8, 32, 256}, DType::BF16}, 0x10000);
  ASSERT_FALSE(narrow);
  EXPECT_NE(narrow.error().message.find("tmap_x: tensor_map(x, box=(1, 2, 4)): the box's inner row (8 bytes)"),
            std::string::npos)
      << narrow.error().message;
}

TEST(LaunchArgsTest, EncodesTheSwizzleFillAndElementStrides) {
  KernelParam p = tensor_map("tmap_w", "w", {64, 32});
  p.tensor_map.swizzle = SmemSwizzle::B128;
  p.tensor_map.oob_fill = TensorMapOobFill::Nan;
  p.tensor_map.element_strides = {1, 2};
  Expected<TensorMapEncoding> e = encode_tensor_map(p, TensorType{{256, 512}, DType::F32}, 0x20000);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->box_dim, (std::vector<uint32_t>{32, 64}));
  EXPECT_EQ(e->element_strides, (std::vector<uint32_t>{2, 1}));  // innermost first, like the dims
  EXPECT_EQ(e->swizzle, SmemSwizzle::B128);
  EXPECT_EQ(e->oob_fill, TensorMapOobFill::Nan);
  // The defaults: no swizzle, zeros outside the buffer, every element.
  e = encode_tensor_map(tensor_map("tmap_w", "w", {64, 32}), TensorType{{256, 512}, DType::F32}, 0x20000);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->element_strides, (std::vector<uint32_t>{1, 1}));
  EXPECT_EQ(e->swizzle, SmemSwizzle::None);
  EXPECT_EQ(e->oob_fill, TensorMapOobFill::Zero);
  // Each swizzle takes an inner row up to its span: 32 bytes for 32B, 64 for 64B.
  for (auto [swizzle, widest] : {std::pair{SmemSwizzle::B32, int64_t{8}}, std::pair{SmemSwizzle::B64, int64_t{16}}}) {
    p.tensor_map.swizzle = swizzle;
    p.tensor_map.box = {64, widest};
    EXPECT_TRUE(encode_tensor_map(p, TensorType{{256, 512}, DType::F32}, 0x20000)) << spelling(swizzle);
    p.tensor_map.box = {64, widest * 2};
    EXPECT_FALSE(encode_tensor_map(p, TensorType{{256, 512}, DType::F32}, 0x20000)) << spelling(swizzle);
  }

  // What the driver would refuse, with the parameter named.
  struct Case {
    std::function<void(KernelParam&)> change;
    DType dtype;
    const char* message;
  };
  const std::vector<Case> cases = {
      {[](KernelParam& q) { q.tensor_map.box = {8, 64}; }, DType::F32,
       "kernel argument tmap_w: tensor_map(w, box=(8, 64), swizzle=128B): the box's inner row (256 bytes) is wider "
       "than its 128B swizzle's 128-byte span"},
      {[](KernelParam& q) { q.tensor_map.element_strides = {1, 9}; }, DType::F32,
       "tmap_w: tensor_map(w, box=(64, 32), swizzle=128B, element_strides=(1, 9)): the element stride of dimension 1 (9) "
       "is not in 1..8"},
      {[](KernelParam& q) { q.tensor_map.element_strides = {0, 1}; }, DType::F32,
       "the element stride of dimension 0 (0) is not in 1..8"},
      {[](KernelParam& q) { q.tensor_map.element_strides = {2}; }, DType::F32,
       "element_strides needs one stride per dimension of the buffer"},
      {[](KernelParam& q) { q.tensor_map.oob_fill = TensorMapOobFill::Nan; }, DType::I32,
       "tmap_w: tensor_map(w, box=(64, 32), swizzle=128B, oob=nan): the NaN fill needs a floating-point buffer, not i32"},
  };
  for (const Case& c : cases) {
    KernelParam q = tensor_map("tmap_w", "w", {64, 32});
    q.tensor_map.swizzle = SmemSwizzle::B128;
    c.change(q);
    Expected<TensorMapEncoding> refused = encode_tensor_map(q, TensorType{{256, 512}, c.dtype}, 0x20000);
    ASSERT_FALSE(refused) << c.message;
    EXPECT_NE(refused.error().message.find(c.message), std::string::npos) << refused.error().message;
  }
}

#if TESSERA_HAVE_CUDA && defined(TESSERA_FAKE_CUDA_DIR)
// The stand-in driver (tests/support/fake_cuda) checks cuTensorMapEncodeTiled's arguments as the
// driver does: what encode_tensor_map produces passes, each out-of-range argument is refused. Run in
// a child process, which loads the fake by its path.
TEST(LaunchArgsTest, TheFakeDriverChecksTensorMapArgumentsLikeTheDriver) {
  auto check = [] {
    void* lib = dlopen(TESSERA_FAKE_CUDA_DIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) std::_Exit(2);
    using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto get_proc = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
    void* init = nullptr;
    void* encode = nullptr;
    get_proc("cuInit", &init, CUDA_VERSION, 0, nullptr);
    get_proc("cuTensorMapEncodeTiled", &encode, CUDA_VERSION, 0, nullptr);
    if (!init || !encode) std::_Exit(3);
    reinterpret_cast<decltype(&::cuInit)>(init)(0);
    const auto encode_tiled = reinterpret_cast<decltype(&::cuTensorMapEncodeTiled)>(encode);

    KernelParam p = tensor_map("tmap_w", "w", {8, 32});
    p.tensor_map.swizzle = SmemSwizzle::B128;
    p.tensor_map.oob_fill = TensorMapOobFill::Nan;
    p.tensor_map.element_strides = {2, 1};
    Expected<TensorMapEncoding> e = encode_tensor_map(p, TensorType{{64, 512}, DType::F32}, 0x20000);
    if (!e) std::_Exit(4);
    CUtensorMap map;
    auto call = [&](CUtensorMapDataType type, const std::vector<uint32_t>& box, const std::vector<uint32_t>& strides,
                    CUtensorMapSwizzle swizzle, CUtensorMapFloatOOBfill fill) {
      return encode_tiled(&map, type, e->rank, reinterpret_cast<void*>(e->address), e->global_dim.data(),
                          e->global_strides.data(), box.data(), strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                          CU_TENSOR_MAP_L2_PROMOTION_NONE, fill);
    };
    const auto f32 = CU_TENSOR_MAP_DATA_TYPE_FLOAT32, i32 = CU_TENSOR_MAP_DATA_TYPE_INT32;
    const auto sw128 = CU_TENSOR_MAP_SWIZZLE_128B;
    const auto nan = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
    int failures = 0;
    auto expect = [&](CUresult got, CUresult want, const char* what) {
      if (got != want) {
        std::fprintf(stderr, "%s: got %d, want %d\n", what, static_cast<int>(got), static_cast<int>(want));
        ++failures;
      }
    };
    expect(call(f32, e->box_dim, e->element_strides, sw128, nan), CUDA_SUCCESS, "the encoding");
    expect(call(f32, e->box_dim, {1, 9}, sw128, nan), CUDA_ERROR_INVALID_VALUE, "element stride 9");
    expect(call(f32, e->box_dim, {0, 1}, sw128, nan), CUDA_ERROR_INVALID_VALUE, "element stride 0");
    // (An enum value outside the enum's range cannot be passed without undefined behaviour, which
    // the sanitizer build reports, so the stand-in's range checks are not driven from here.)
    expect(call(f32, {64, 8}, e->element_strides, sw128, nan), CUDA_ERROR_INVALID_VALUE, "a 256-byte row in 128B");
    expect(call(f32, {64, 8}, e->element_strides, CU_TENSOR_MAP_SWIZZLE_NONE, nan), CUDA_SUCCESS, "no swizzle");
    expect(call(f32, {2, 8}, e->element_strides, CU_TENSOR_MAP_SWIZZLE_NONE, nan), CUDA_ERROR_INVALID_VALUE,
           "an 8-byte row");
    expect(call(i32, e->box_dim, e->element_strides, sw128, nan), CUDA_ERROR_INVALID_VALUE, "NaN fill of i32");
    expect(call(i32, e->box_dim, e->element_strides, sw128, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), CUDA_SUCCESS, "zero fill of i32");
    std::_Exit(failures == 0 ? 0 : 1);
  };
  EXPECT_EXIT(check(), ::testing::ExitedWithCode(0), "");
}
#endif

// ---- RMSNorm over a 64 KB row: dynamic shared memory ----------------------------------------

TEST_F(KernelAbiTest, RmsNormOver16384ColumnsStagesTheRowInDynamicSharedMemory) {
  Expected<PipelineSpec> spec = load_pipeline_file(test::default_pipeline_path());
  ASSERT_TRUE(spec) << spec.error().render();
  // 132 rows, one per SM of the H100: with fewer, split_reduce would spread each row over blocks
  // (and stage slices of it instead of the whole row).
  const std::string program = "nn.RMSNorm(16384)(torch.randn(1,132,16384))";
  Graph g = trace(program);
  Graph reference_graph = g;
  Status s = lower(g, *spec, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/true);
  ASSERT_TRUE(s) << s.message();
  const Node* kernel = nullptr;
  for (const Node* n : g.nodes())
    if (n->op_as<KernelOp>() && n->op_as<KernelOp>()->dynamic_smem > 0) kernel = n;
  ASSERT_NE(kernel, nullptr) << print_graph(g);
  const KernelOp& k = *kernel->op_as<KernelOp>();
  EXPECT_GT(k.dynamic_smem, device_->smem_per_block_static);
  EXPECT_LE(k.dynamic_smem, device_->smem_per_block);
  EXPECT_NE(print_graph(g).find("smem=" + std::to_string(k.dynamic_smem) + " dynamic"), std::string::npos);
  EXPECT_NE(print_body(k.body).find("Smem x_smem: f32[16384]"), std::string::npos) << print_body(k.body);

  ValueMap inputs = make_inputs(reference_graph, 7);
  Expected<ValueMap> expected = evaluate_reference(reference_graph, inputs);
  ASSERT_TRUE(expected) << expected.error().render();
  Expected<TargetRun> run = simulate(g, inputs, {});
  ASSERT_TRUE(run) << run.error().render();
  for (const std::string& out : g.outputs()) {
    const TensorValue& want = expected->at(out);
    const TensorValue& got = run->outputs.at(out);
    ASSERT_EQ(want.data.size(), got.data.size());
    for (size_t e = 0; e < want.data.size(); ++e)
      ASSERT_NEAR(got.data[e], want.data[e], 1e-4 * (1 + std::abs(want.data[e]))) << out << "[" << e << "]";
  }

  // emit replaces the node's KernelOp (and `k` with it) by a CudaOp: keep what is compared.
  const int64_t kernel_dynamic_smem = k.dynamic_smem;
  const std::string kernel_id = kernel->id();
  Status emitted = emit(g);
  ASSERT_TRUE(emitted) << emitted.message();
  const auto* cuda = g.find(kernel_id)->op_as<CudaOp>();
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->dynamic_smem, kernel_dynamic_smem);
  EXPECT_NE(cuda->source.find("extern __shared__ __align__(16) unsigned char tessera_smem[];"), std::string::npos);
  EXPECT_EQ(cuda->source.find("__shared__ __align__(16) float"), std::string::npos) << cuda->source;
#ifdef TESSERA_HAVE_CUDA
  EXPECT_EQ(nvrtc_compile(*cuda, "sm_90"), "");
#endif
}

// ---- on a GPU (skipped with the driver's reason without one) --------------------------------

TEST_F(KernelAbiTest, GpuRunsTheScalarKernelAndTheDynamicSmemRmsNorm) {
  std::unique_ptr<Target> cuda = host_->registry().make_target("cuda");
  ASSERT_NE(cuda, nullptr);
  std::string why;
  if (!cuda->available(&why)) GTEST_SKIP() << why;

  Graph g = roll_kernel();
  ASSERT_TRUE(emit(g));
  TensorValue x = TensorValue::filled(TensorType{{8, 64}, DType::F32});
  for (size_t e = 0; e < x.data.size(); ++e) x.data[e] = static_cast<double>(e % 97) - 40.0;
  TargetOptions options;
  options.scalars = {{"pos", int64_t{5}}, {"scale", 0.5}};
  Expected<TargetRun> run = cuda->execute(g, {{"x", x}}, options);
  ASSERT_TRUE(run) << run.error().render();
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 64; ++c)
      ASSERT_EQ(run->outputs.at("y").data[static_cast<size_t>(r * 64 + c)],
                x.data[static_cast<size_t>((r + 5) % 8 * 64 + c)] * 0.5);

  Expected<PipelineSpec> spec = load_pipeline_file(test::default_pipeline_path());
  ASSERT_TRUE(spec) << spec.error().render();
  Graph reference = trace("nn.RMSNorm(16384)(torch.randn(1,8,16384))");
  Graph lowered = reference;
  ASSERT_TRUE(lower(lowered, *spec, Dialect::Cuda, device_));
  ValueMap inputs = make_inputs(reference, 7);
  Expected<ValueMap> expected = evaluate_reference(reference, inputs);
  ASSERT_TRUE(expected) << expected.error().render();
  Expected<TargetRun> norm = cuda->execute(lowered, inputs, TargetOptions{});
  ASSERT_TRUE(norm) << norm.error().render();
  for (const std::string& out : lowered.outputs()) {
    const TensorValue& want = expected->at(out);
    const TensorValue& got = norm->outputs.at(out);
    for (size_t e = 0; e < want.data.size(); ++e)
      ASSERT_NEAR(got.data[e], want.data[e], 1e-4 * (1 + std::abs(want.data[e]))) << out << "[" << e << "]";
  }
}

}  // namespace
}  // namespace tessera

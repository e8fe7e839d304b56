// The layout of a shared-memory array (the `align` and `swizzle` of Smem and of the buffer a
// Stage declares, docs/ir.md "Shared-memory layout"): printed only when not the default, parsed,
// JSON round-tripped, part of the structure, verified (a power of two from 16 to 1024; a swizzle
// needs its repeating pattern's alignment), carried from a Stage to its Smem by materialize and
// kept by pad_smem and the Kernel IR passes of the default pipeline, honoured by smem_layout, the
// CUDA emitter (static `__align__`, dynamic carving), the simulator's shared-memory accounting and
// the Tile IR passes' budgets (padding included).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/built_plugins.h"
#include "support/hand_built_program.h"
#include "support/nvrtc_check.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

Expr V(const char* n) { return Expr::var(n); }
Expr I(int64_t v) { return Expr::int_(v); }
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Smem smem(std::string name, DType dtype, std::vector<int64_t> shape, int64_t align = kSmemAlign,
          SmemSwizzle swizzle = SmemSwizzle::None) {
  Smem s{std::move(name), dtype, std::move(shape)};
  s.align = align;
  s.swizzle = swizzle;
  return s;
}

TEST(SmemLayoutTest, PrintsOnlyWhatDiffersFromTheDefaultAndParsesBack) {
  EXPECT_EQ(print_body({smem("x_smem", DType::F32, {2048})}), "Smem x_smem: f32[2048]\n");
  EXPECT_EQ(print_body({smem("t", DType::F16, {64, 64}, 1024, SmemSwizzle::B128)}),
            "Smem t: f16[64, 64] align=1024 swizzle=128B\n");
  EXPECT_EQ(print_body({smem("t", DType::F16, {64}, 128)}), "Smem t: f16[64] align=128\n");
  EXPECT_EQ(print_body({smem("t", DType::F16, {64}, kSmemAlign, SmemSwizzle::B32)}), "Smem t: f16[64] swizzle=32B\n");
  for (const char* text : {"Smem t: f16[64, 64] align=1024 swizzle=128B\n", "Smem t: f32[8] align=512 swizzle=64B\n",
                           "Smem t: f32[8] align=256 swizzle=32B\n", "Smem t: f32[8] align=32\n",
                           "Smem t: f32[8]\n"}) {
    Expected<Body> parsed = parse_body(text, "smem.tir");
    ASSERT_TRUE(parsed) << text << parsed.error().render();
    EXPECT_EQ(print_body(*parsed), text);
  }
  Expected<Body> parsed = parse_body("Smem t: f32[8]\n", "smem.tir");
  ASSERT_TRUE(parsed);
  EXPECT_EQ((*parsed)[0].as<Smem>()->align, kSmemAlign);
  EXPECT_EQ((*parsed)[0].as<Smem>()->swizzle, SmemSwizzle::None);
  // `swizzle=none` is accepted and prints as the default it is.
  parsed = parse_body("Smem t: f32[8] swizzle=none\n", "smem.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_body(*parsed), "Smem t: f32[8]\n");
  // Bad spellings are located errors.
  Expected<Body> bad = parse_body("Smem t: f32[8] swizzle=96B\n", "smem.tir");
  ASSERT_FALSE(bad);
  EXPECT_TRUE(contains(bad.error().render(), "smem.tir:1:24")) << bad.error().render();
  EXPECT_TRUE(contains(bad.error().message, "expected a shared-memory swizzle (none, 32B, 64B, 128B), not '96B'"))
      << bad.error().message;
  bad = parse_body("Smem t: f32[8] align=big\n", "smem.tir");
  ASSERT_FALSE(bad);
  EXPECT_TRUE(contains(bad.error().render(), "smem.tir:1:")) << bad.error().render();
}

TEST(SmemLayoutTest, AStagePrintsAndParsesItsLayoutAfterTransportAndPad) {
  for (const char* text : {"x_smem = Stage(x, origin=(0, a1), slab=(a2:64@1)) tma pad=1 align=1024 swizzle=128B\n",
                           "x_smem = Stage(x, origin=(0, a1), slab=(a2:64@1)) align=128\n",
                           "x_smem = Stage(x, origin=(0, a1), slab=(a2:64@1)) swizzle=32B\n",
                           "x_smem = Stage(x, origin=(0, a1), slab=(a2:64@1)) async pad=2\n",
                           "x_smem = Stage(x, origin=(0, a1), slab=(a2:64@1))\n"}) {
    Expected<Body> parsed = parse_body(text, "stage.tir");
    ASSERT_TRUE(parsed) << text << parsed.error().render();
    EXPECT_EQ(print_body(*parsed), text);
    nlohmann::json j = body_to_json(*parsed);
    Expected<Body> back = body_from_json(j);
    ASSERT_TRUE(back) << back.error().render();
    EXPECT_TRUE(structurally_equal(*back, *parsed)) << text;
  }
  Expected<Body> parsed = parse_body("x_smem = Stage(x, origin=(0, a1), slab=(a2:64@1)) tma align=1024 swizzle=128B\n", "s.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  const Stage* st = (*parsed)[0].as<Stage>();
  EXPECT_EQ(st->transport, StageTransport::Tma);
  EXPECT_EQ(st->pad, 0);
  EXPECT_EQ(st->align, 1024);
  EXPECT_EQ(st->swizzle, SmemSwizzle::B128);
}

TEST(SmemLayoutTest, JsonRoundTripsAndTheLayoutIsPartOfTheStructure) {
  const Body body = {smem("t", DType::F16, {64, 64}, 1024, SmemSwizzle::B128)};
  nlohmann::json j = body_to_json(body);
  EXPECT_EQ(j[0]["align"], 1024);
  EXPECT_EQ(j[0]["swizzle"], "128B");
  Expected<Body> back = body_from_json(j);
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(*back, body));
  EXPECT_EQ(structural_hash(*back), structural_hash(body));
  const Body other_align = {smem("t", DType::F16, {64, 64}, 512, SmemSwizzle::B128)};
  const Body other_swizzle = {smem("t", DType::F16, {64, 64}, 1024, SmemSwizzle::B64)};
  EXPECT_FALSE(structurally_equal(body, other_align));
  EXPECT_FALSE(structurally_equal(body, other_swizzle));
  EXPECT_NE(structural_hash(body), structural_hash(other_align));
  EXPECT_NE(structural_hash(body), structural_hash(other_swizzle));
  // JSON written before the layout existed has neither key: the defaults.
  nlohmann::json old = body_to_json({smem("x_smem", DType::F32, {8})});
  old[0].erase("align");
  old[0].erase("swizzle");
  Expected<Body> old_back = body_from_json(old);
  ASSERT_TRUE(old_back) << old_back.error().render();
  EXPECT_EQ((*old_back)[0].as<Smem>()->align, kSmemAlign);
  EXPECT_EQ((*old_back)[0].as<Smem>()->swizzle, SmemSwizzle::None);
  j[0]["swizzle"] = "256B";
  Expected<Body> bad = body_from_json(j);
  ASSERT_FALSE(bad);
  EXPECT_TRUE(contains(bad.error().message, "'256B' is not a shared-memory swizzle")) << bad.error().message;
}

// A kernel that copies x (f32[16]) to y through `b_smem`, declared after a 6-byte `a_smem`.
test::HandBuiltProgram copy_kernel(Smem b, int64_t dynamic_smem) {
  test::HandBuiltProgram p;
  std::vector<double> x;
  for (int i = 0; i < 16; ++i) x.push_back(0.5 * i - 3.0);
  p.input("x", {16}, x);
  auto k = std::make_unique<KernelOp>();
  k->name = "k_copy";
  k->block = {16, 1, 1};
  k->dynamic_smem = dynamic_smem;
  const std::string name = b.name;
  k->body = {smem("a_smem", DType::F16, {3}), std::move(b), Let{"a0", V("threadIdx.x")},
             Load{"in0", "x", {V("a0")}}, Write{name, {V("a0")}, Expr::value("in0")}, Sync{},
             Load{"in1", name, {I(15) - V("a0")}}, Write{"y", {V("a0")}, Expr::value("in1")}};
  p.g.add("y", std::move(k), {"x"}, test::f32({16}));
  p.g.outputs() = {"y"};
  return p;
}

std::string kernel_verifier_error(Smem b) {
  test::HandBuiltProgram p = copy_kernel(std::move(b), 0);
  Status s = verify_graph(p.g, Dialect::Kernel);
  return s ? std::string() : s.message();
}

TEST(SmemLayoutTest, VerifierChecksTheAlignmentAndTheSwizzlePattern) {
  EXPECT_EQ(kernel_verifier_error(smem("b_smem", DType::F32, {16}, 1024, SmemSwizzle::B128)), "");
  EXPECT_EQ(kernel_verifier_error(smem("b_smem", DType::F32, {16}, 512, SmemSwizzle::B64)), "");
  EXPECT_EQ(kernel_verifier_error(smem("b_smem", DType::F32, {16}, 256, SmemSwizzle::B32)), "");
  EXPECT_EQ(kernel_verifier_error(smem("b_smem", DType::F32, {16}, 16)), "");
  for (int64_t bad : {0, 8, 24, 2048, -16}) {
    std::string msg = kernel_verifier_error(smem("b_smem", DType::F32, {16}, bad));
    EXPECT_TRUE(contains(msg, "kernel IR statement `Smem b_smem: f32[16] align=" + std::to_string(bad) +
                                  "`: align=" + std::to_string(bad) + " is not a power of two from 16 to 1024"))
        << msg;
  }
  std::string msg = kernel_verifier_error(smem("b_smem", DType::F32, {16}, 512, SmemSwizzle::B128));
  EXPECT_TRUE(contains(msg, "swizzle=128B repeats every 1024 bytes, so the array needs align=1024 or more (it has "
                            "align=512)"))
      << msg;
  msg = kernel_verifier_error(smem("b_smem", DType::F32, {16}, kSmemAlign, SmemSwizzle::B32));
  EXPECT_TRUE(contains(msg, "swizzle=32B repeats every 256 bytes")) << msg;
}

TEST(SmemLayoutTest, LayoutPlacesEachArrayAtItsAlignmentAndCountsThePadding) {
  const Body body = {smem("a_smem", DType::F16, {3}), smem("b_smem", DType::F32, {16}, 1024),
                     smem("c_smem", DType::F32, {1})};
  std::vector<SmemSlot> slots = smem_layout(body);
  ASSERT_EQ(slots.size(), 3u);
  EXPECT_EQ(slots[0].offset, 0);
  EXPECT_EQ(slots[1].offset, 1024);  // 6 bytes, then padding up to 1024
  EXPECT_EQ(slots[2].offset, 1088);  // the default 16 again
  EXPECT_EQ(smem_layout_bytes(body), 1092);
  EXPECT_EQ(smem_layout_align(body), 1024);
  EXPECT_EQ(smem_layout_align({smem("a_smem", DType::F16, {3})}), kSmemAlign);
}

TEST(SmemLayoutTest, TheFootprintBoundsTheLayoutInAnyOrder) {
  EXPECT_EQ(smem_footprint_bytes(6, kSmemAlign), 16);
  EXPECT_EQ(smem_footprint_bytes(64, kSmemAlign), 64);
  EXPECT_EQ(smem_footprint_bytes(6, 1024), 16 + 1008);
  // Every order of a few arrays lays out within the sum of their footprints.
  std::vector<Smem> arrays = {smem("a", DType::F16, {3}), smem("b", DType::F32, {16}, 1024), smem("c", DType::F32, {5}, 256),
                              smem("d", DType::F16, {1})};
  int64_t bound = 0;
  for (const Smem& a : arrays) {
    int64_t elems = 1;
    for (int64_t d : a.shape) elems *= d;
    bound += smem_footprint_bytes(elems * dtype_bytes(a.dtype), a.align);
  }
  std::vector<size_t> order = {0, 1, 2, 3};
  do {
    Body body;
    for (size_t i : order) body.push_back(arrays[i]);
    EXPECT_LE(smem_layout_bytes(body), bound);
  } while (std::next_permutation(order.begin(), order.end()));
}

class SmemLayoutTargetsTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override { ASSERT_TRUE(load_error_.empty()) << load_error_; }

  Status run_pass(Graph& g, const std::string& name, const DeviceDesc* device = h100()) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass(name);
    if (!pass) return make_error("no pass " + name);
    DiagnosticEngine diags;
    PassContext ctx(name, "k:001_" + name, pass->knobs(), {}, {}, device, &diags);
    return pass->run(g, ctx);
  }

  Expected<TargetRun> simulate(const test::HandBuiltProgram& p) {
    std::unique_ptr<Target> sim = host_->registry().make_target("sim");
    if (!sim) return make_error("no sim target");
    TargetOptions options;
    options.device = h100();
    return sim->execute(p.g, p.inputs, options);
  }

  static void expect_reversed(const TargetRun& run) {
    const std::vector<double>& y = run.outputs.at("y").data;
    ASSERT_EQ(y.size(), 16u);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(y[static_cast<size_t>(i)], 0.5 * (15 - i) - 3.0) << i;
  }
};

TEST_F(SmemLayoutTargetsTest, StaticArraysAreDeclaredWithTheirAlignment) {
  test::HandBuiltProgram p = copy_kernel(smem("b_smem", DType::F32, {16}, 1024, SmemSwizzle::B128), 0);
  ASSERT_TRUE(verify_graph(p.g, Dialect::Kernel)) << verify_graph(p.g, Dialect::Kernel).message();
  Expected<TargetRun> run = simulate(p);
  ASSERT_TRUE(run) << run.error().render();
  expect_reversed(*run);

  // The Kernel IR passes that follow materialize in the default pipeline keep the layout.
  for (const char* pass : {"vectorize_loads", "canonicalize"}) {
    Status s = run_pass(p.g, pass);
    ASSERT_TRUE(s) << pass << ": " << s.message();
  }
  EXPECT_TRUE(contains(print_graph(p.g), "Smem b_smem: f32[16] align=1024 swizzle=128B")) << print_graph(p.g);

  Status s = run_pass(p.g, "emit_cuda");
  ASSERT_TRUE(s) << s.message();
  const auto* cuda = p.g.find("y")->op_as<CudaOp>();
  ASSERT_NE(cuda, nullptr);
  EXPECT_TRUE(contains(cuda->source, "__shared__ __align__(16) __half a_smem[3];")) << cuda->source;
  EXPECT_TRUE(contains(cuda->source, "__shared__ __align__(1024) float b_smem[16];")) << cuda->source;
#ifdef TESSERA_HAVE_CUDA
  EXPECT_EQ(test::nvrtc_compile(*cuda, "sm_90"), "");
#endif
}

TEST_F(SmemLayoutTargetsTest, TheDynamicBufferIsCarvedAtAlignedOffsets) {
  // 1088 bytes: a_smem at 0, b_smem at 1024.
  test::HandBuiltProgram p = copy_kernel(smem("b_smem", DType::F32, {16}, 1024), 1088);
  ASSERT_TRUE(verify_graph(p.g, Dialect::Kernel)) << verify_graph(p.g, Dialect::Kernel).message();
  Expected<TargetRun> run = simulate(p);
  ASSERT_TRUE(run) << run.error().render();
  expect_reversed(*run);
  Status s = run_pass(p.g, "emit_cuda");
  ASSERT_TRUE(s) << s.message();
  const auto* cuda = p.g.find("y")->op_as<CudaOp>();
  ASSERT_NE(cuda, nullptr);
  EXPECT_TRUE(contains(cuda->source, "  extern __shared__ __align__(1024) unsigned char tessera_smem[];\n"
                                     "  __half* a_smem = reinterpret_cast<__half*>(tessera_smem + 0);  // 3 elements\n"
                                     "  float* b_smem = reinterpret_cast<float*>(tessera_smem + 1024);  // 16 elements\n"))
      << cuda->source;
#ifdef TESSERA_HAVE_CUDA
  EXPECT_EQ(test::nvrtc_compile(*cuda, "sm_90"), "");
#endif

  // 96 bytes would hold the arrays unpadded (6 + 64), not at their alignment.
  test::HandBuiltProgram small = copy_kernel(smem("b_smem", DType::F32, {16}, 1024), 96);
  Status v = verify_graph(small.g, Dialect::Kernel);
  ASSERT_FALSE(v);
  EXPECT_TRUE(contains(v.message(), "dynamic shared memory of 96 bytes does not hold the kernel's Smem arrays (1088 "
                                    "bytes)"))
      << v.message();
}

TEST_F(SmemLayoutTargetsTest, MaterializeCarriesAStagesLayoutToItsSmemAndPadSmemKeepsIt) {
  // A 32 x 32 transpose through a staged slab, its buffer 1024-byte aligned and 128B-swizzled.
  Stage stage{"x_smem", "x", {I(0), I(0)}, {SlabDim{"a0", 32, 0}, SlabDim{"a1", 32, 1}}, StageTransport::Sync, 0};
  stage.align = 1024;
  stage.swizzle = SmemSwizzle::B128;
  Tile tile{{TileAxis{"a0", 32, AxisBinding::Thread}, TileAxis{"a1", 32, AxisBinding::Thread}},
            {stage, Load{"in0", "x_smem", {V("a0"), V("a1")}}, Write{"out", {V("a1"), V("a0")}, Expr::value("in0")}}};
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, test::f32({32, 32}));
  auto op = std::make_unique<TileOp>();
  op->name = "k_out";
  op->body = {Stmt(std::move(tile))};
  g.add("out", std::move(op), {"x"}, test::f32({32, 32}));
  g.outputs() = {"out"};
  ASSERT_TRUE(verify_graph(g, Dialect::Tile)) << verify_graph(g, Dialect::Tile).message();
  for (const char* pass : {"pad_smem", "launch_geometry", "materialize"}) {
    Status s = run_pass(g, pass);
    ASSERT_TRUE(s) << pass << ": " << s.message();
  }
  const std::string printed = print_graph(g);
  EXPECT_TRUE(contains(printed, "Smem x_smem: f32[32, 33] align=1024 swizzle=128B")) << printed;  // padded by pad_smem
  ASSERT_TRUE(verify_graph(g, Dialect::Kernel)) << verify_graph(g, Dialect::Kernel).message();

  // The verifier checks a Stage's layout like an Smem's.
  Stage bad_stage{"x_smem", "x", {I(0), I(0)}, {SlabDim{"a0", 32, 1}}, StageTransport::Sync, 0};
  bad_stage.align = 512;
  bad_stage.swizzle = SmemSwizzle::B128;
  Tile bad{{TileAxis{"a0", 32, AxisBinding::Thread}}, {bad_stage}};
  Graph h;
  h.add("x", std::make_unique<InputOp>(), {}, test::f32({32, 32}));
  auto bad_op = std::make_unique<TileOp>();
  bad_op->name = "k_out";
  bad_op->body = {Stmt(std::move(bad))};
  h.add("out", std::move(bad_op), {"x"}, test::f32({32, 32}));
  h.outputs() = {"out"};
  Status v = verify_graph(h, Dialect::Tile);
  ASSERT_FALSE(v);
  EXPECT_TRUE(contains(v.message(), "swizzle=128B repeats every 1024 bytes, so the array needs align=1024 or more"))
      << v.message();
}

TEST_F(SmemLayoutTargetsTest, PadSmemBudgetsTheAlignmentPaddingMaterializeWillLayOut) {
  // w_smem (9 floats) then x_smem (a transposed 32 x 32 slab at align=1024). Padding x_smem's rows
  // by 1 would avoid bank conflicts, but materialize would lay it out at 1024 + 32 * 33 * 4 =
  // 5248 bytes, past a 5200-byte budget (the unaligned sum, 36 + 4224, fits): pad_smem must not
  // offer it, and the unpadded layout (1024 + 4096) then materializes.
  Stage x_stage{"x_smem", "x", {I(0), I(0)}, {SlabDim{"a0", 32, 0}, SlabDim{"a1", 32, 1}}, StageTransport::Sync, 0};
  x_stage.align = 1024;
  Tile tile{{TileAxis{"a0", 32, AxisBinding::Thread}, TileAxis{"a1", 32, AxisBinding::Thread}},
            {Stage{"w_smem", "w", {I(0)}, {SlabDim{"a2", 9, 0}}, StageTransport::Sync, 0}, x_stage,
             Load{"in0", "x_smem", {V("a0"), V("a1")}}, Load{"in1", "w_smem", {I(4)}},
             Assign{"v0", ElementwiseFn::Add, {Expr::value("in0"), Expr::value("in1")}},
             Write{"out", {V("a1"), V("a0")}, Expr::value("v0")}}};
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, test::f32({32, 32}));
  g.add("w", std::make_unique<InputOp>(), {}, test::f32({9}));
  auto op = std::make_unique<TileOp>();
  op->name = "k_out";
  op->body = {Stmt(std::move(tile))};
  g.add("out", std::move(op), {"x", "w"}, test::f32({32, 32}));
  g.outputs() = {"out"};
  ASSERT_TRUE(verify_graph(g, Dialect::Tile)) << verify_graph(g, Dialect::Tile).message();

  DeviceDesc device = *h100();
  device.smem_per_block = 5200;
  device.smem_per_block_static = 5200;
  for (const char* pass : {"pad_smem", "launch_geometry", "materialize"}) {
    Status s = run_pass(g, pass, &device);
    ASSERT_TRUE(s) << pass << ": " << s.message();
  }
  const auto* kernel = g.find("out")->op_as<KernelOp>();
  ASSERT_NE(kernel, nullptr);
  EXPECT_TRUE(contains(print_graph(g), "Smem x_smem: f32[32, 32] align=1024")) << print_graph(g);
  EXPECT_LE(smem_layout_bytes(kernel->body), 5200);
}

TEST_F(SmemLayoutTargetsTest, TheStaticLimitCountsAlignmentPadding) {
  // 48800 + 256 bytes fit the 48 KB static limit; at align=1024 b_smem starts at 49152 and does not.
  auto kernel = [](int64_t align) {
    test::HandBuiltProgram p;
    p.input("x", {64}, std::vector<double>(64, 1.0));
    auto k = std::make_unique<KernelOp>();
    k->name = "k_big";
    k->block = {64, 1, 1};
    k->body = {smem("a_smem", DType::F32, {12200}), smem("b_smem", DType::F32, {64}, align),
               Let{"a0", V("threadIdx.x")}, Load{"in0", "x", {V("a0")}},
               Write{"b_smem", {V("a0")}, Expr::value("in0")}, Sync{},
               Load{"in1", "b_smem", {V("a0")}}, Write{"y", {V("a0")}, Expr::value("in1")}};
    p.g.add("y", std::move(k), {"x"}, test::f32({64}));
    p.g.outputs() = {"y"};
    return p;
  };
  test::HandBuiltProgram fits = kernel(kSmemAlign);
  Expected<TargetRun> run = simulate(fits);
  ASSERT_TRUE(run) << run.error().render();
  ASSERT_TRUE(run_pass(fits.g, "emit_cuda"));

  test::HandBuiltProgram padded = kernel(1024);
  ASSERT_TRUE(verify_graph(padded.g, Dialect::Kernel)) << verify_graph(padded.g, Dialect::Kernel).message();
  run = simulate(padded);
  ASSERT_FALSE(run);
  EXPECT_TRUE(contains(run.error().message, "49408")) << run.error().render();
  Status s = run_pass(padded.g, "emit_cuda");
  ASSERT_FALSE(s);
  EXPECT_TRUE(contains(s.message(), "static shared memory of 49408 bytes exceeds the device's 49152-byte limit"))
      << s.message();
}

}  // namespace
}  // namespace tessera

// Tests of the register_tile pass, loaded as a plugin the way users load it.
//   - The dependence split on hand-written Tile IR: which statements stay shared across the
//     replicas (the reused operand), which are replicated, what becomes a register array, where a
//     value computed before a loop is recomputed, and when the pass declines (with its reason).
//     Each rewritten kernel is also lowered by materialize and run on `sim` next to the same kernel
//     with TN=1: the outputs must be bit-identical (the pass keeps every output's operations).
//   - The knob: the heuristic on the 64x128x96 matmul (too small a grid), on the same kernel over a
//     larger grid, and on a kernel without reuse.
//   - Corpus programs (matmul, projections, GatedMLP, SDPA) through the default pipeline with each
//     TN > 1 pinned: Kernel IR holds `f32[TN]` arrays and `sim` agrees with the reference evaluator.
//   - The emitted CUDA of a tiled matmul compiles with NVRTC (when built with CUDA).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "support/nvrtc_check.h"
#include "support/sanitizer_build.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/pipeline.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

// The 64x128x96 matmul as the default pipeline hands it to register_tile.
constexpr const char* kMatmul = R"(x: (64, 128) float32
w: (128, 96) float32

kernel k_matmul_reduce  inputs: x, w  outputs: matmul: (64, 96) float32
  Tile(axes=(a0:128=THREAD, a1:2=THREAD, a2:32=BLOCK)):
    x_smem = Stage(x, origin=(a2 * 2, 0), slab=(a1:2@0, a3:128@1)) async
    w_smem = Stage(w, origin=(0, 0), slab=(a3:128@0, a0:128@1)) async
    AsyncWait(keep=0)
    if a0 < 96:
      acc0 = init(0.0)
      for a3 in 0..128:  # reduce
        in0 = load x_smem[a1, a3]
        in1 = load w_smem[a3, a0]
        v0 = mul(in0, in1)
        acc0 <- add(acc0, v0)
      matmul[a2 * 2 + a1, a0] = acc0

return matmul
)";

// A projection whose bias is loaded before the reduce loop and used after it.
constexpr const char* kBiasBeforeLoop = R"(x: (4, 16) float32
w: (16, 40) float32
b: (40,) float32

kernel k_y_reduce  inputs: x, w, b  outputs: y: (4, 40) float32
  Tile(axes=(a0:64=THREAD, a1:4=BLOCK)):
    if a0 < 40:
      in0 = load b[a0]
      acc0 = init(0.0)
      for a2 in 0..16:  # reduce
        in1 = load x[a1, a2]
        in2 = load w[a2, a0]
        v0 = mul(in1, in2)
        acc0 <- add(acc0, v0)
      v1 = add(acc0, in0)
      y[a1, a0] = v1

return y
)";

// A causal mask around the reduction, with the masked elements written in the else branch.
constexpr const char* kCausal = R"(q: (128, 8) float32
k: (128, 8) float32

kernel k_s_reduce  inputs: q, k  outputs: s: (128, 128) float32
  Tile(axes=(a0:128=THREAD, a1:128=BLOCK)):
    if a0 <= a1:
      acc0 = init(0.0)
      for a2 in 0..8:  # reduce
        in0 = load q[a1, a2]
        in1 = load k[a0, a2]
        v0 = mul(in0, in1)
        acc0 <- add(acc0, v0)
      s[a1, a0] = acc0
    else:
      s[a1, a0] = -inf

return s
)";

// A value read from the accumulator after the reduce loop, then written by a free loop.
constexpr const char* kEpilogueLoop = R"(x: (16,) float32
w: (16, 32) float32

kernel k_y_reduce  inputs: x, w  outputs: y: (3, 32) float32
  Tile(axes=(a0:32=THREAD)):
    acc0 = init(0.0)
    for a1 in 0..16:  # reduce
      in0 = load x[a1]
      in1 = load w[a1, a0]
      v0 = mul(in0, in1)
      acc0 <- add(acc0, v0)
    v1 = mul(acc0, 2.0)
    for a2 in 0..3:  # free
      v2 = add(v1, a2)
      y[a2, a0] = v2

return y
)";

// A value read from an accumulator that a later loop still updates: it cannot move.
constexpr const char* kReadBeforeUpdate = R"(x: (8,) float32
w: (8, 32) float32

kernel k_y_reduce  inputs: x, w  outputs: y: (32,) float32
  Tile(axes=(a0:32=THREAD)):
    acc0 = init(1.0)
    for a1 in 0..8:  # reduce
      in0 = load x[a1]
      in1 = load w[a1, a0]
      v0 = mul(acc0, in1)
      for a2 in 0..2:  # reduce
        acc0 <- add(acc0, v0)
      acc0 <- add(acc0, in0)
    y[a0] = acc0

return y
)";

// A row sum with one row per thread: no operand is shared by the replicas.
constexpr const char* kRowSum = R"(x: (64, 16) float32

kernel k_s_reduce  inputs: x  outputs: s: (64,) float32
  Tile(axes=(a0:64=THREAD)):
    acc0 = init(0.0)
    for a1 in 0..16:  # reduce
      in0 = load x[a0, a1]
      acc0 <- add(acc0, in0)
    s[a0] = acc0

return s
)";

constexpr const char* kElementwise = R"(x: (64,) float32

kernel k_y  inputs: x  outputs: y: (64,) float32
  Tile(axes=(a0:64=THREAD)):
    in0 = load x[a0]
    v0 = mul(in0, 2.0)
    y[a0] = v0

return y
)";

constexpr const char* kOddExtent = R"(x: (33, 8) float32

kernel k_s_reduce  inputs: x  outputs: s: (33,) float32
  Tile(axes=(a0:33=THREAD)):
    acc0 = init(0.0)
    for a1 in 0..8:  # reduce
      in0 = load x[a0, a1]
      acc0 <- add(acc0, in0)
    s[a0] = acc0

return s
)";

// The matmul in the shape launch_geometry hands a large block tile on: 64 columns x 16 rows of
// outputs (tail guards on both: 60 x 13), one thread per output before register_tile.
constexpr const char* kMatmul2D = R"(x: (13, 40) float32
w: (40, 60) float32

kernel k_matmul_reduce  inputs: x, w  outputs: matmul: (13, 60) float32
  Tile(axes=(a0:64=THREAD, a1:16=THREAD)):
    x_smem = Stage(x, origin=(0, 0), slab=(a1:16@0, a2:40@1)) async
    w_smem = Stage(w, origin=(0, 0), slab=(a2:40@0, a0:64@1)) async
    AsyncWait(keep=0)
    if a0 < 60 && a1 < 13:
      acc0 = init(0.0)
      for a2 in 0..40:  # reduce
        in0 = load x_smem[a1, a2]
        in1 = load w_smem[a2, a0]
        v0 = mul(in0, in1)
        acc0 <- add(acc0, v0)
      matmul[a1, a0] = acc0

return matmul
)";

// The 128 x 64 block tile of a 1024 x 128 x 1024 matmul (128 blocks grouped by 8): 8192 outputs,
// more than a block may have threads.
constexpr const char* kLargeTile = R"(x: (1024, 128) float32
w: (128, 1024) float32

kernel k_matmul_reduce  inputs: x, w  outputs: matmul: (1024, 1024) float32
  Tile(axes=(a0:128=THREAD, a1:64=THREAD, a2:128=BLOCK)):
    acc0 = init(0.0)
    for a3 in 0..4:  # reduce
      x_smem = Stage(x, origin=((a2 / 64 * 8 + a2 % 8) * 64, a3 * 32), slab=(a1:64@0, a4:32@1)) async
      w_smem = Stage(w, origin=(a3 * 32, a2 % 64 / 8 * 128), slab=(a4:32@0, a0:128@1)) async
      AsyncWait(keep=0)
      for a4 in 0..32:  # reduce
        in0 = load x_smem[a1, a4]
        in1 = load w_smem[a4, a0]
        v0 = mul(in0, in1)
        acc0 <- add(acc0, v0)
    matmul[(a2 / 64 * 8 + a2 % 8) * 64 + a1, a2 % 64 / 8 * 128 + a0] = acc0

return matmul
)";

// A causal mask over a block of 8 columns x 4 rows, masked elements written in the else branch:
// with TM=4 the row axis keeps one thread, whose replicas must still see their own rows in the
// negated condition.
constexpr const char* kCausal2D = R"(q: (4, 8) float32
k: (8, 8) float32

kernel k_s_reduce  inputs: q, k  outputs: s: (4, 8) float32
  Tile(axes=(a0:8=THREAD, a1:4=THREAD)):
    if a0 <= a1:
      acc0 = init(0.0)
      for a2 in 0..8:  # reduce
        in0 = load q[a1, a2]
        in1 = load k[a0, a2]
        v0 = mul(in0, in1)
        acc0 <- add(acc0, v0)
      s[a1, a0] = acc0
    else:
      s[a1, a0] = -inf

return s
)";

// Two THREAD axes index the output of a reduction, but no operand belongs to one axis alone: the
// rows of x depend on both, w on neither. A 2-D tile would reuse nothing a 1-D one does not.
constexpr const char* kNoRowOperand = R"(x: (4, 8, 16) float32
w: (16,) float32

kernel k_y_reduce  inputs: x, w  outputs: y: (4, 8) float32
  Tile(axes=(a0:8=THREAD, a1:4=THREAD)):
    acc0 = init(0.0)
    for a2 in 0..16:  # reduce
      in0 = load x[a1, a0, a2]
      in1 = load w[a2]
      v0 = mul(in0, in1)
      acc0 <- add(acc0, v0)
    y[a1, a0] = acc0

return y
)";

// Where each buffer is loaded: inside a replica loop (an unrolled `# free` loop) or not, and how
// many replica loops deep.
struct LoadPlaces final : StmtVisitor {
  std::map<std::string, int> replicated, shared, depth_of;
  int depth = 0;
  void visit_Load(const Load& s) override {
    (depth > 0 ? replicated : shared)[s.buffer]++;
    depth_of[s.buffer] = depth;
  }
  void visit_Loop(const Loop& s) override {
    const bool replica = s.role == LoopRole::Free && s.unroll > 0;
    depth += replica;
    StmtVisitor::visit_Loop(s);
    depth -= replica;
  }
};

// The register arrays a body declares, as printed types.
std::vector<std::string> array_types(const Body& body) {
  struct Finder final : StmtVisitor {
    std::vector<std::string> out;
    void visit_Init(const Init& s) override {
      if (s.type.is_array()) out.push_back(s.type.str());
    }
  } finder;
  finder.visit(body);
  return finder.out;
}

class RegisterTileTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_ = h100();
    ASSERT_NE(device_, nullptr);
  }

  static Graph parse(const std::string& text) {
    Expected<Graph> g = parse_graph(text, "<test>");
    EXPECT_TRUE(g) << g.error().render();
    return g ? std::move(*g) : Graph();
  }

  Status run_pass(const std::string& name, Graph& g, std::vector<KnobPin> pins = {},
                  std::vector<PassContext::Skip>* skips = nullptr) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass(name);
    if (!pass) return make_error("pass '" + name + "' is not registered");
    PassContext ctx(name, "t:00x_" + name, pass->knobs(), std::move(pins), {}, device_, &diags_);
    ctx.set_graph(&g);
    Status s = pass->run(g, ctx);
    if (skips) skips->insert(skips->end(), ctx.skips().begin(), ctx.skips().end());
    return s;
  }

  // register_tile on parsed Tile IR, TN (and TM) pinned unless 0; the result must verify.
  Graph tiled(const std::string& text, int64_t tn, std::vector<PassContext::Skip>* skips = nullptr, int64_t tm = 0) {
    Graph g = parse(text);
    std::vector<KnobPin> pins;
    if (tn != 0) pins.push_back(KnobPin{"TN", AttrValue(tn), {}});
    if (tm != 0) pins.push_back(KnobPin{"TM", AttrValue(tm), {}});
    Status s = run_pass("register_tile", g, pins, skips);
    EXPECT_TRUE(s) << s.message();
    Status v = verify_graph(g, Dialect::Tile);
    EXPECT_TRUE(v) << v.message() << "\n" << print_graph(g);
    return g;
  }

  static const Body& body_of(const Graph& g, const std::string& id) {
    static const Body empty;
    const Node* n = g.find(id);
    const auto* op = n ? n->op_as<TileOp>() : nullptr;
    return op ? op->body : empty;
  }

  // materialize + sim of the Tile IR graph `g`.
  Expected<ValueMap> simulate(Graph g, const ValueMap& inputs) {
    Status m = run_pass("materialize", g);
    if (!m) return m.error();
    std::unique_ptr<Target> sim = host_->registry().make_target("sim");
    if (!sim) return make_error("no sim target");
    Expected<TargetRun> run = sim->execute(g, inputs, TargetOptions{.arch = device_->arch, .device = device_, .cache_dir = ""});
    if (!run) return run.error();
    return run->outputs;
  }

  // The kernel tiled with `tn` (and `tm`) computes exactly what it computes untiled.
  void expect_same_outputs_as_untiled(const std::string& text, int64_t tn, int64_t tm = 0) {
    Graph base = tiled(text, 1, nullptr, tm == 0 ? 0 : 1);
    Graph tiled_graph = tiled(text, tn, nullptr, tm);
    ValueMap inputs = make_inputs(base, 3);
    Expected<ValueMap> want = simulate(base, inputs);
    ASSERT_TRUE(want) << want.error().render();
    Expected<ValueMap> got = simulate(tiled_graph, inputs);
    ASSERT_TRUE(got) << got.error().render() << "\n" << print_graph(tiled_graph);
    for (const std::string& out : base.outputs()) {
      Expected<ValueComparison> cmp = compare_output(*want, *got, out);
      ASSERT_TRUE(cmp) << cmp.error().render();
      EXPECT_GT(cmp->elements, 0);
      EXPECT_EQ(cmp->max_abs_error, 0.0) << "TN=" << tn << " TM=" << tm << ": " << cmp->str() << "\n"
                                         << print_graph(tiled_graph);
    }
  }

  // The default pipeline with register_tile's TN pinned.
  static Expected<PipelineSpec> default_pipeline_with_tn(int64_t tn) {
    std::ifstream in(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    const std::string entry = "register_tile,";
    const size_t at = yaml.find(entry);
    if (at == std::string::npos) return make_error("pipelines/default.yaml has no `register_tile,` entry");
    yaml.replace(at, entry.size(), "register_tile: {TN: " + std::to_string(tn) + "},");
    return parse_pipeline(yaml, "default.yaml (TN pinned)");
  }

  // The default pipeline with the large block tile and its division pinned: launch_geometry's
  // BN=128, BM=64 and register_tile's TN=4, TM=8 (the default for large grids, here for any).
  static Expected<PipelineSpec> default_pipeline_with_large_tile() {
    std::ifstream in(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string yaml = text.str();
    for (const auto& [entry, pinned] : std::vector<std::pair<std::string, std::string>>{
             {"launch_geometry,", "launch_geometry: {BN: 128, BM: 64},"},
             {"register_tile,", "register_tile: {TN: 4, TM: 8},"}}) {
      const size_t at = yaml.find(entry);
      if (at == std::string::npos) return make_error("pipelines/default.yaml has no `" + entry + "` entry");
      yaml.replace(at, entry.size(), pinned);
    }
    return parse_pipeline(yaml, "default.yaml (large tile pinned)");
  }

  const DeviceDesc* device_ = nullptr;
  DiagnosticEngine diags_;
};

TEST_F(RegisterTileTest, MatmulSharesTheRowOperandAndReplicatesTheColumns) {
  Graph g = tiled(kMatmul, 4);
  const Body& body = body_of(g, "matmul");
  ASSERT_EQ(body.size(), 1u);
  const Tile* tile = body[0].as<Tile>();
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->axes[0].extent, 32) << "128 threads along a0 become 32 with 4 outputs each";
  EXPECT_EQ(tile->axes[1].extent, 2);
  LoadPlaces places;
  places.visit(body);
  EXPECT_EQ(places.shared["x_smem"], 1) << "the x row element is loaded once per k step for all replicas";
  EXPECT_EQ(places.replicated["x_smem"], 0);
  EXPECT_EQ(places.replicated["w_smem"], 1);
  EXPECT_EQ(array_types(body), std::vector<std::string>{"f32[4]"});
  const std::string text = print_body(body);
  // The tail guard a0 < 96 holds for replicas 0..2 of every thread and is checked per replica.
  EXPECT_NE(text.find("if a0 + a4 * 32 < 96:"), std::string::npos) << text;
  EXPECT_NE(text.find("matmul[a2 * 2 + a1, a0 + a5 * 32] = acc0[a5]"), std::string::npos) << text;
  EXPECT_NE(text.find("for a4 in 0..4:  # free, unroll 4"), std::string::npos) << text;
  // The Stages are untouched.
  EXPECT_NE(text.find("w_smem = Stage(w, origin=(0, 0), slab=(a3:128@0, a0:128@1)) async"), std::string::npos) << text;
  for (int64_t tn : {2, 4, 8}) expect_same_outputs_as_untiled(kMatmul, tn);
}

TEST_F(RegisterTileTest, ConditionOnTheAxisIsPushedIntoTheReplicas) {
  Graph g = tiled(kCausal, 4);
  const std::string text = print_body(body_of(g, "s"));
  // Then-region: replica 0 passes whenever any replica does (a0 <= a0 + r * 32 <= a1).
  EXPECT_NE(text.find("\n  if a0 <= a1:\n    f32[4] acc0 = init(0.0)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("if a0 + a3 * 32 <= a1:"), std::string::npos) << text;
  // Else-region: the negated condition, entered when the last replica is masked.
  EXPECT_NE(text.find("\n  if a1 < a0 + 96:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("if a1 < a0 + a5 * 32:"), std::string::npos) << text;
  LoadPlaces places;
  places.visit(body_of(g, "s"));
  EXPECT_EQ(places.shared["q"], 1) << text;
  for (int64_t tn : {2, 4, 8}) expect_same_outputs_as_untiled(kCausal, tn);
}

TEST_F(RegisterTileTest, ValueComputedBeforeTheLoopIsRecomputedWhereItIsUsed) {
  Graph g = tiled(kBiasBeforeLoop, 2);
  const Body& body = body_of(g, "y");
  LoadPlaces places;
  places.visit(body);
  EXPECT_EQ(places.replicated["b"], 1) << print_body(body);
  EXPECT_EQ(places.shared["b"], 0) << print_body(body);
  EXPECT_EQ(places.shared["x"], 1) << print_body(body);
  // The bias is loaded in the replica loop of the write, after the reduce loop.
  const std::string text = print_body(body);
  EXPECT_LT(text.find("# reduce"), text.find("load b[")) << text;
  for (int64_t tn : {2, 4, 8}) expect_same_outputs_as_untiled(kBiasBeforeLoop, tn);
}

TEST_F(RegisterTileTest, AccumulatorValueIsRecomputedInsideALaterLoopWhenFinal) {
  Graph g = tiled(kEpilogueLoop, 4);
  const std::string text = print_body(body_of(g, "y"));
  EXPECT_NE(text.find("mul(acc0[a"), std::string::npos) << text;
  EXPECT_EQ(array_types(body_of(g, "y")), std::vector<std::string>{"f32[4]"});
  for (int64_t tn : {2, 4, 8}) expect_same_outputs_as_untiled(kEpilogueLoop, tn);
}

TEST_F(RegisterTileTest, AccumulatorValueIsNotMovedPastALaterUpdate) {
  std::vector<PassContext::Skip> skips;
  Graph g = tiled(kReadBeforeUpdate, 4, &skips);
  ASSERT_EQ(skips.size(), 1u);
  EXPECT_NE(skips[0].reason.find("`v0`"), std::string::npos) << skips[0].reason;
  EXPECT_EQ(print_graph(g), print_graph(parse(kReadBeforeUpdate)));
}

TEST_F(RegisterTileTest, DeclinesKernelsItDoesNotApplyTo) {
  struct Case {
    const char* text;
    const char* node;
    const char* reason;
  };
  const std::string loads_own_output = std::string(kRowSum).replace(std::string(kRowSum).find("s[a0] = acc0"),
                                                                    12, "in1 = load s[a0]\n    s[a0] = in1");
  const std::string axis_dependent_init =
      std::string(kRowSum).replace(std::string(kRowSum).find("acc0 = init(0.0)"), 16, "acc0 = init(a0)");
  for (const Case& c : std::vector<Case>{
           {kElementwise, "y", "no reduce loop feeds an accumulator indexed by a THREAD axis"},
           {kOddExtent, "s", "extent 33, which no TN > 1 divides"},
           {loads_own_output.c_str(), "s", "it loads `s`, which it also writes"},
           {axis_dependent_init.c_str(), "s", "`acc0` starts from a value that depends on the axis"}}) {
    std::vector<PassContext::Skip> skips;
    Graph g = tiled(c.text, 0, &skips);
    ASSERT_EQ(skips.size(), 1u) << c.text;
    EXPECT_EQ(skips[0].node, c.node);
    EXPECT_NE(skips[0].reason.find(c.reason), std::string::npos) << skips[0].reason;
    EXPECT_TRUE(g.find(c.node)->choices.empty()) << "the knob is asked only where the pass applies";
    EXPECT_EQ(print_graph(g), print_graph(parse(c.text)));
  }
}

TEST_F(RegisterTileTest, HeuristicTilesReusedOperandsOfLargeGridsOnly) {
  // 32 blocks of 256 threads: a quarter of them would leave fewer than 4 warps per SM of an H100.
  Graph small = tiled(kMatmul, 0);
  EXPECT_NE(print_graph(small).find("register_tile.TN=1 (heuristic)"), std::string::npos) << print_graph(small);
  // The same kernel over 512 blocks (M = 1024) keeps enough warps with 4 outputs per thread.
  std::string large_text = kMatmul;
  large_text.replace(large_text.find("a2:32=BLOCK"), 11, "a2:512=BLOCK");
  large_text.replace(large_text.find("x: (64, 128)"), 12, "x: (1024, 128)");
  large_text.replace(large_text.find("matmul: (64, 96)"), 16, "matmul: (1024, 96)");
  Graph matmul = tiled(large_text, 0);
  EXPECT_NE(print_graph(matmul).find("register_tile.TN=4 (heuristic)"), std::string::npos) << print_graph(matmul);
  EXPECT_EQ(array_types(body_of(matmul, "matmul")), std::vector<std::string>{"f32[4]"});
  Graph row_sum = tiled(kRowSum, 0);
  EXPECT_NE(print_graph(row_sum).find("register_tile.TN=1 (heuristic)"), std::string::npos) << print_graph(row_sum);
  EXPECT_TRUE(array_types(body_of(row_sum, "s")).empty());
  expect_same_outputs_as_untiled(kRowSum, 4);
}

TEST_F(RegisterTileTest, TwoDimensionalTileLoadsEachOperandOncePerRowOrColumn) {
  Graph g = tiled(kMatmul2D, 4, nullptr, 8);
  const Body& body = body_of(g, "matmul");
  ASSERT_EQ(body.size(), 1u);
  const Tile* tile = body[0].as<Tile>();
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->axes[0].extent, 16) << "64 columns of threads become 16 with 4 columns each";
  EXPECT_EQ(tile->axes[1].extent, 2) << "16 rows of threads become 2 with 8 rows each";
  EXPECT_EQ(array_types(body), std::vector<std::string>{"f32[8][4]"});
  LoadPlaces places;
  places.visit(body);
  // x's element of a row is loaded in the row loop, once for the 4 columns; w's in the column loop.
  EXPECT_EQ(places.replicated["x_smem"], 1);
  EXPECT_EQ(places.depth_of["x_smem"], 1);
  EXPECT_EQ(places.replicated["w_smem"], 1);
  EXPECT_EQ(places.depth_of["w_smem"], 2);
  const std::string text = print_body(body);
  // The tail guard's row term guards the row loop's body, its column term the column loop's.
  EXPECT_NE(text.find("    for a3 in 0..8:  # free, unroll 8\n      if a1 + a3 * 2 < 13:\n"
                      "        in0 = load x_smem[a1 + a3 * 2, a2]\n"
                      "        for a4 in 0..4:  # free, unroll 4\n"
                      "          if a0 + a4 * 16 < 60:\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("acc0[a3, a4] <- add(acc0[a3, a4], v0)"), std::string::npos) << text;
  EXPECT_NE(text.find("matmul[a1 + a5 * 2, a0 + a6 * 16] = acc0[a5, a6]"), std::string::npos) << text;
  // The Stages are untouched: the block tile stays 64 x 16.
  EXPECT_NE(text.find("w_smem = Stage(w, origin=(0, 0), slab=(a2:40@0, a0:64@1)) async"), std::string::npos) << text;
  for (const auto& [tn, tm] : std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {4, 8}, {8, 4}, {1, 4}, {2, 1}})
    expect_same_outputs_as_untiled(kMatmul2D, tn, tm);
}

TEST_F(RegisterTileTest, TwoDimensionalCausalMaskKeepsEachReplicasRow) {
  Graph g = tiled(kCausal2D, 2, nullptr, 4);
  const std::string text = print_body(body_of(g, "s"));
  // The masked side: replica (q, r) writes -inf where its row q (a1 + q, a1 = 0) is below its
  // column a0 + r * 4.
  EXPECT_NE(text.find("      if a7 < a0 + a8 * 4:\n        s[a7, a0 + a8 * 4] = -inf"), std::string::npos) << text;
  for (const auto& [tn, tm] : std::vector<std::pair<int64_t, int64_t>>{{2, 4}, {1, 4}, {8, 4}, {4, 2}, {2, 2}})
    expect_same_outputs_as_untiled(kCausal2D, tn, tm);
}

TEST_F(RegisterTileTest, TmIsAskedOnlyWhereTwoAxesQualify) {
  Graph one_axis = tiled(kBiasBeforeLoop, 2);
  EXPECT_EQ(print_graph(one_axis).find("register_tile.TM"), std::string::npos) << print_graph(one_axis);
  Graph no_row_operand = tiled(kNoRowOperand, 2);
  EXPECT_EQ(print_graph(no_row_operand).find("register_tile.TM"), std::string::npos) << print_graph(no_row_operand);
  EXPECT_EQ(array_types(body_of(no_row_operand, "y")), std::vector<std::string>{"f32[2]"});
  // 128 x 2 outputs: a block tile of at most 256 outputs keeps one row per thread.
  Graph small = tiled(kMatmul, 0);
  EXPECT_NE(print_graph(small).find("register_tile.TN=1 (heuristic), register_tile.TM=1 (heuristic)"),
            std::string::npos)
      << print_graph(small);
  // 64 x 16 outputs (1024) are more than 256: 2 x 2 per thread bring the block to 32 x 8 threads.
  Graph larger = tiled(kMatmul2D, 0);
  EXPECT_NE(print_graph(larger).find("register_tile.TN=2 (heuristic), register_tile.TM=2 (heuristic)"),
            std::string::npos)
      << print_graph(larger);
  EXPECT_EQ(array_types(body_of(larger, "matmul")), std::vector<std::string>{"f32[2][2]"});
}

TEST_F(RegisterTileTest, HeuristicDividesALargeBlockTileIntoFourByEightOutputs) {
  Graph g = tiled(kLargeTile, 0);
  const std::string printed = print_graph(g);
  EXPECT_NE(printed.find("register_tile.TN=4 (heuristic), register_tile.TM=8 (heuristic)"), std::string::npos)
      << printed;
  const Tile* tile = body_of(g, "matmul")[0].as<Tile>();
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->axes[0].extent * tile->axes[1].extent, 256) << printed;
  EXPECT_EQ(array_types(body_of(g, "matmul")), std::vector<std::string>{"f32[8][4]"});
}

TEST_F(RegisterTileTest, LargeBlockTileCandidatesKeepTheBlockWithinTheDevice) {
  // 8192 outputs: TN=1 would need TM=8 (1024 threads); pinning TM=4 with it leaves 2048 threads.
  Graph g = parse(kLargeTile);
  Status s = run_pass("register_tile", g, {KnobPin{"TN", AttrValue(int64_t{1}), {}}, KnobPin{"TM", AttrValue(int64_t{4}), {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("not among the candidates"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("8"), std::string::npos) << s.message();
}

TEST_F(RegisterTileTest, AThreadHoldsAtMost32Outputs) {
  Graph g = parse(kLargeTile);
  Status s = run_pass("register_tile", g, {KnobPin{"TN", AttrValue(int64_t{8}), {}}, KnobPin{"TM", AttrValue(int64_t{8}), {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("knob 'TM' of pass 'register_tile' is pinned to 8, which is not among the candidates at "
                             "node 'matmul': 1, 2, 4"),
            std::string::npos)
      << s.message();
  Graph fits = tiled(kLargeTile, 8, nullptr, 4);
  EXPECT_EQ(array_types(body_of(fits, "matmul")), std::vector<std::string>{"f32[4][8]"});
}

TEST_F(RegisterTileTest, ALargeBlockTileItCannotDivideIsAnError) {
  // 2048 threads of an elementwise kernel: nothing register_tile applies to.
  std::string text = kElementwise;
  text.replace(text.find("x: (64,)"), 8, "x: (2048,)");
  text.replace(text.find("y: (64,)"), 8, "y: (2048,)");
  text.replace(text.find("a0:64=THREAD"), 12, "a0:2048=THREAD");
  Graph g = parse(text);
  Status s = run_pass("register_tile", g);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("2048 threads, more than the device's 1024"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("no reduce loop feeds an accumulator"), std::string::npos) << s.message();
}

// Corpus programs of each family register_tile is for, through the whole default pipeline.
class RegisterTileCorpusTest : public RegisterTileTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(RegisterTileCorpusTest, EveryTNMakesArraysAndSimulatesLikeTheReference) {
  const std::string program = GetParam();
  for (int64_t tn : {2, 4, 8}) {
    Expected<PipelineSpec> pipeline = default_pipeline_with_tn(tn);
    ASSERT_TRUE(pipeline) << pipeline.error().render();
    Graph torch = trace(program);
    Graph g = torch;
    Status st = lower(g, *pipeline, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/true);
    ASSERT_TRUE(st) << "TN=" << tn << ":\n" << st.error().render();
    int arrays = 0;
    for (const Node* n : g.nodes())
      if (const auto* k = n->op_as<KernelOp>())
        for (const std::string& t : array_types(k->body)) arrays += t == "f32[" + std::to_string(tn) + "]";
    EXPECT_GT(arrays, 0) << "TN=" << tn << ": no register array\n" << print_graph(g);

    ValueMap inputs = make_inputs(torch, 7);
    Expected<ValueMap> expected = evaluate_reference(torch, inputs);
    ASSERT_TRUE(expected) << expected.error().render();
    std::unique_ptr<Target> sim = host_->registry().make_target("sim");
    Expected<TargetRun> run = sim->execute(g, inputs, TargetOptions{.arch = device_->arch, .device = device_, .cache_dir = ""});
    ASSERT_TRUE(run) << "TN=" << tn << ": " << run.error().render() << "\n" << print_graph(g);
    for (const std::string& out : torch.outputs()) {
      Expected<ValueComparison> cmp = compare_output(*expected, run->outputs, out);
      ASSERT_TRUE(cmp) << cmp.error().render();
      EXPECT_TRUE(cmp->within(1e-4)) << "TN=" << tn << ": " << cmp->str() << "\n" << print_graph(g);
    }
  }
}

#ifdef TESSERA_HAVE_CUDA
TEST_P(RegisterTileCorpusTest, TiledCudaCompilesWithNvrtc) {
  Expected<PipelineSpec> pipeline = default_pipeline_with_tn(2);
  ASSERT_TRUE(pipeline) << pipeline.error().render();
  Graph g = trace(GetParam());
  Status st = lower(g, *pipeline, Dialect::Cuda, device_);
  ASSERT_TRUE(st) << st.error().render();
  int arrays = 0;
  for (const Node* n : g.nodes()) {
    const auto* op = n->op_as<CudaOp>();
    if (op == nullptr) continue;
    arrays += op->source.find("[2];") != std::string::npos;
    EXPECT_EQ(test::nvrtc_compile(*op, device_->arch), "") << n->id();
  }
  EXPECT_GT(arrays, 0) << "no kernel declares a register array";
}
#endif

INSTANTIATE_TEST_SUITE_P(
    Families, RegisterTileCorpusTest,
    ::testing::ValuesIn(test::sanitizer_share(std::vector<const char*>{
                      "x=torch.randn(64,128); w=torch.randn(128,96); torch.matmul(x, w)",
                      "x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); "
                      "torch.relu(torch.matmul(x + bias, w))",
                      "nn.Linear(33, 7)(torch.randn(2, 5, 33))",
                      "x=torch.randn(1,256); w=torch.randn(256,300); torch.matmul(x, w)",
                      "import torch.nn.functional as F; x=torch.randn(1,7,64); wg=torch.randn(64,33); "
                      "wu=torch.randn(64,33); F.silu(torch.matmul(x,wg))*torch.matmul(x,wu)",
                      "import torch.nn.functional as F; q=torch.randn(1,4,7,16); k=torch.randn(1,2,9,16); "
                      "v=torch.randn(1,2,9,8); F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)",
                      "import torch.nn.functional as F; q=torch.randn(2,3,5,8); k=torch.randn(2,3,5,8); "
                      "v=torch.randn(2,3,5,8); F.scaled_dot_product_attention(q, k, v, scale=0.3)"})));

// Programs with rows under the large block tile (128 x 64 outputs, 4 x 8 per thread), tails
// included: f32[8][4] arrays in Kernel IR, 256 threads per block, sim agrees with the reference.
class RegisterTile2DCorpusTest : public RegisterTileTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(RegisterTile2DCorpusTest, LargeTileMakesTwoDimensionalArraysAndSimulatesLikeTheReference) {
  Expected<PipelineSpec> pipeline = default_pipeline_with_large_tile();
  ASSERT_TRUE(pipeline) << pipeline.error().render();
  Graph torch = trace(GetParam());
  Graph g = torch;
  Status st = lower(g, *pipeline, Dialect::Kernel, device_, std::nullopt, /*verify_each=*/true);
  ASSERT_TRUE(st) << st.error().render();
  int arrays = 0;
  for (const Node* n : g.nodes())
    if (const auto* k = n->op_as<KernelOp>()) {
      for (const std::string& t : array_types(k->body)) arrays += t == "f32[8][4]";
      EXPECT_LE(k->block[0] * k->block[1] * k->block[2], device_->max_threads_per_block) << n->id();
    }
  EXPECT_GT(arrays, 0) << "no f32[8][4] register array\n" << print_graph(g);
  ValueMap inputs = make_inputs(torch, 11);
  Expected<ValueMap> expected = evaluate_reference(torch, inputs);
  ASSERT_TRUE(expected) << expected.error().render();
  std::unique_ptr<Target> sim = host_->registry().make_target("sim");
  Expected<TargetRun> run = sim->execute(g, inputs, TargetOptions{.arch = device_->arch, .device = device_, .cache_dir = ""});
  ASSERT_TRUE(run) << run.error().render() << "\n" << print_graph(g);
  for (const std::string& out : torch.outputs()) {
    Expected<ValueComparison> cmp = compare_output(*expected, run->outputs, out);
    ASSERT_TRUE(cmp) << cmp.error().render();
    EXPECT_TRUE(cmp->within(1e-4)) << cmp->str() << "\n" << print_graph(g);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Families, RegisterTile2DCorpusTest,
    ::testing::ValuesIn(test::sanitizer_share(std::vector<const char*>{
                      "x=torch.randn(33,129); w=torch.randn(129,77); torch.matmul(x, w)",
                      "x=torch.randn(130,64); w=torch.randn(64,256); torch.matmul(x, w)",
                      "a=torch.randn(3,70,40); b=torch.randn(3,40,130); torch.bmm(a, b)",
                      "nn.Linear(48, 140)(torch.randn(2, 50, 48))",
                      "import torch.nn.functional as F; x=torch.randn(1,70,64); wg=torch.randn(64,133); "
                      "wu=torch.randn(64,133); F.silu(torch.matmul(x,wg))*torch.matmul(x,wu)",
                      "x=torch.randn(66,96); w=torch.randn(96,160); r=torch.randn(66,160); torch.matmul(x, w) + r"})));

#ifdef TESSERA_HAVE_CUDA
TEST_F(RegisterTileTest, LargeTileMatmulCudaCompilesWithNvrtc) {
  Graph g = trace("x=torch.randn(2048,2048); w=torch.randn(2048,2048); torch.matmul(x, w)");
  Expected<PipelineSpec> pipeline = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
  ASSERT_TRUE(pipeline) << pipeline.error().render();
  Status st = lower(g, *pipeline, Dialect::Cuda, device_);
  ASSERT_TRUE(st) << st.error().render();
  const auto* op = g.find("matmul")->op_as<CudaOp>();
  ASSERT_NE(op, nullptr) << print_graph(g);
  EXPECT_NE(op->source.find("float acc0[8][4];"), std::string::npos) << op->source;
  EXPECT_EQ(op->block[0] * op->block[1] * op->block[2], 256) << "32 x 8 threads with 4 x 8 outputs each";
  EXPECT_EQ(test::nvrtc_compile(*op, device_->arch), "");
}

TEST_F(RegisterTileTest, TiledMatmulCudaCompilesWithNvrtc) {
  Expected<PipelineSpec> pipeline = default_pipeline_with_tn(4);
  ASSERT_TRUE(pipeline) << pipeline.error().render();
  Graph g = trace("x=torch.randn(64,128); w=torch.randn(128,96); torch.matmul(x, w)");
  Status st = lower(g, *pipeline, Dialect::Cuda, device_);
  ASSERT_TRUE(st) << st.error().render();
  const auto* op = g.find("matmul")->op_as<CudaOp>();
  ASSERT_NE(op, nullptr) << print_graph(g);
  EXPECT_NE(op->source.find("float acc0[4];"), std::string::npos) << op->source;
  EXPECT_EQ(op->block[0] * op->block[1] * op->block[2], 64) << "32 x 2 threads with 4 outputs each";
  EXPECT_EQ(test::nvrtc_compile(*op, device_->arch), "");
}
#endif

}  // namespace
}  // namespace tessera

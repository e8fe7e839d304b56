// Tests of the shared-memory tile passes (chunk_reduce, stage_inputs, async_copy, pad_smem) on
// hand-built TileOp graphs, loaded as plugins the way users load them: slab extraction, origin
// disagreement, the shared-memory budget, STAGE values that name inputs by position (equal for every
// layer's copy of a kernel), chunking of long rows, the async transport by arch, and the pad that
// removes the bank conflicts of a transposed 32x32 access.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "support/test_paths.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/kernel_identity.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/pipeline.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

Expr var(const std::string& n) { return Expr::var(n); }
Expr lit(int64_t v) { return Expr::int_(v); }

class SmemPassesTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_.arch = "sm_90";
    device_.features = arch_features(device_.arch);
    device_.smem_per_block = 49152;
    device_.warp_size = 32;
  }

  // A graph of inputs (name, shape) and one TileOp node `out` of `out_shape` with `tile`.
  static Graph kernel_graph(const std::vector<std::pair<std::string, Shape>>& inputs, Shape out_shape, Tile tile) {
    Graph g;
    std::vector<std::string> ids;
    for (const auto& [id, shape] : inputs) {
      g.add(id, std::make_unique<InputOp>(), {}, TensorType{shape, DType::F32});
      ids.push_back(id);
    }
    auto op = std::make_unique<TileOp>();
    op->name = "k_out";
    op->body = {Stmt(std::move(tile))};
    g.add("out", std::move(op), ids, TensorType{std::move(out_shape), DType::F32});
    g.outputs() = {"out"};
    return g;
  }

  Status run_pass(const std::string& name, Graph& g, std::vector<KnobPin> pins = {}) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass(name);
    if (!pass) return make_error("pass '" + name + "' is not registered");
    PassContext ctx(name, "t:00x_" + name, pass->knobs(), std::move(pins), {}, &device_, &diags_);
    Status s = pass->run(g, ctx);
    skips_ = ctx.skips();
    if (s) {
      Status v = verify_graph(g, Dialect::Tile);
      if (!v) return v;
    }
    return s;
  }

  static const Tile& tile_of(const Graph& g) {
    return *g.find("out")->op_as<TileOp>()->body[0].as<Tile>();
  }
  static std::string body_text(const Graph& g) { return print_body(g.find("out")->op_as<TileOp>()->body); }
  static const KnobChoice* choice(const Graph& g, const std::string& knob) {
    for (const KnobChoice& c : g.find("out")->choices)
      if (c.knob == knob) return &c;
    return nullptr;
  }
  std::string skip_text() const {
    std::string s;
    for (const auto& skip : skips_) s += skip.reason + "\n";
    return s;
  }

  // RMSNorm-like row kernel over x: (rows, n): a reduce StridedLoop and a free one, both loading x
  // (the free one from row a1 + free_row_offset).
  static Tile row_kernel(int64_t rows, int64_t n, int64_t threads = 256, int64_t free_row_offset = 0) {
    Body reduce = {Load{"in0", "x", {var("a1"), var("a2")}}, Assign{"v0", ElementwiseFn::Mul, {var("in0"), var("in0")}},
                   Accum{"acc0", CombineFn::Add, var("v0")}};
    Body free = {Load{"in1", "x", {simplify(var("a1") + free_row_offset), var("a3")}},
                 Assign{"v1", ElementwiseFn::Mul, {var("in1"), var("acc0")}},
                 Write{"out", {var("a1"), var("a3")}, var("v1")}};
    return Tile{{TileAxis{"a0", threads, AxisBinding::Thread}, TileAxis{"a1", rows, AxisBinding::Block}},
                {Init{"acc0", Expr::float_(0.0)},
                 StridedLoop{"a2", var("a0"), lit(n), lit(threads), LoopRole::Reduce, 0, reduce},
                 Combine{"acc0", CombineFn::Add, CombineScope::Block},
                 StridedLoop{"a3", var("a0"), lit(n), lit(threads), LoopRole::Free, 0, free}}};
  }

  DeviceDesc device_{};
  DiagnosticEngine diags_;
  std::vector<PassContext::Skip> skips_;
};

TEST_F(SmemPassesTest, StageInputsExtractsTheRowSlabAndRewritesLoads) {
  Graph g = kernel_graph({{"x", {8, 2048}}}, {8, 2048}, row_kernel(8, 2048));
  ASSERT_TRUE(run_pass("stage_inputs", g));
  const Tile& tile = tile_of(g);
  const auto* stage = tile.body[0].as<Stage>();
  ASSERT_NE(stage, nullptr) << body_text(g);
  EXPECT_EQ(stage->dst, "x_smem");
  EXPECT_EQ(stage->buffer, "x");
  ASSERT_EQ(stage->origin.size(), 2u);
  EXPECT_EQ(stage->origin[0].str(), "a1");
  EXPECT_EQ(stage->origin[1].str(), "0");
  ASSERT_EQ(stage->slab.size(), 1u);
  EXPECT_EQ(stage->slab[0].extent, 2048);
  EXPECT_EQ(stage->slab[0].source_dim, 1);
  EXPECT_NE(body_text(g).find("in0 = load x_smem[a2]"), std::string::npos) << body_text(g);
  EXPECT_NE(body_text(g).find("in1 = load x_smem[a3]"), std::string::npos) << body_text(g);
  EXPECT_EQ(body_text(g).find("load x["), std::string::npos) << body_text(g);
  ASSERT_NE(choice(g, "STAGE"), nullptr);
  EXPECT_EQ(choice(g, "STAGE")->value, AttrValue(std::string("in0")));  // x, by its position
}

TEST_F(SmemPassesTest, LoadsDisagreeingOnTheOriginAreNotACandidate) {
  // The free loop reads the next row: its origin (a1 + 1, 0) differs from (a1, 0).
  Graph g = kernel_graph({{"x", {9, 2048}}}, {8, 2048}, row_kernel(8, 2048, 256, 1));
  ASSERT_TRUE(run_pass("stage_inputs", g));
  EXPECT_EQ(body_text(g).find("Stage("), std::string::npos) << body_text(g);
  EXPECT_NE(skip_text().find("disagree on the slab origin"), std::string::npos) << skip_text();
  EXPECT_EQ(choice(g, "STAGE"), nullptr);  // no candidate: nothing to decide
}

TEST_F(SmemPassesTest, SingleUseCoalescedInputIsACandidateButNotStagedByTheHeuristic) {
  // One load per element, every thread its own element: staging cannot save a global read.
  Tile tile{{TileAxis{"a0", 256, AxisBinding::Thread}, TileAxis{"a1", 8, AxisBinding::Block}},
            {StridedLoop{"a2", var("a0"), lit(2048), lit(256), LoopRole::Free, 0,
                         {Load{"in0", "x", {var("a1"), var("a2")}}, Write{"out", {var("a1"), var("a2")}, var("in0")}}}}};
  Graph g = kernel_graph({{"x", {8, 2048}}}, {8, 2048}, tile);
  ASSERT_TRUE(run_pass("stage_inputs", g));
  EXPECT_EQ(body_text(g).find("Stage("), std::string::npos) << body_text(g);
  ASSERT_NE(choice(g, "STAGE"), nullptr);
  EXPECT_EQ(choice(g, "STAGE")->value, AttrValue(std::string("none")));
  // Pinning it stages it anyway.
  Graph pinned = kernel_graph({{"x", {8, 2048}}}, {8, 2048}, tile);
  ASSERT_TRUE(run_pass("stage_inputs", pinned, {KnobPin{"STAGE", std::string("in0"), {}}}));
  EXPECT_NE(body_text(pinned).find("x_smem = Stage(x, origin=(a1, 0), slab=(a2:2048@1))"), std::string::npos)
      << body_text(pinned);
}

TEST_F(SmemPassesTest, StagingRespectsTheSharedMemoryBudget) {
  // Two reused 1024-float rows (4 KB each) under a 6 KB budget: only one fits.
  device_.smem_per_block = 6 * 1024;
  Body reduce = {Load{"in0", "x", {var("a1"), var("a2")}}, Load{"in1", "y", {var("a1"), var("a2")}},
                 Assign{"v0", ElementwiseFn::Mul, {var("in0"), var("in1")}}, Accum{"acc0", CombineFn::Add, var("v0")}};
  Body free = {Load{"in2", "x", {var("a1"), var("a3")}}, Load{"in3", "y", {var("a1"), var("a3")}},
               Assign{"v1", ElementwiseFn::Mul, {var("in2"), var("in3")}}, Assign{"v2", ElementwiseFn::Mul, {var("v1"), var("acc0")}},
               Write{"out", {var("a1"), var("a3")}, var("v2")}};
  Tile tile{{TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 4, AxisBinding::Block}},
            {Init{"acc0", Expr::float_(0.0)}, StridedLoop{"a2", var("a0"), lit(1024), lit(128), LoopRole::Reduce, 0, reduce},
             Combine{"acc0", CombineFn::Add, CombineScope::Block}, StridedLoop{"a3", var("a0"), lit(1024), lit(128), LoopRole::Free, 0, free}}};
  Graph g = kernel_graph({{"x", {4, 1024}}, {"y", {4, 1024}}}, {4, 1024}, tile);
  ASSERT_TRUE(run_pass("stage_inputs", g));
  EXPECT_NE(body_text(g).find("x_smem = Stage("), std::string::npos) << body_text(g);
  EXPECT_EQ(body_text(g).find("y_smem = Stage("), std::string::npos) << body_text(g);
  // Both together are not a candidate, so pinning them is an error naming the candidates.
  Graph pinned = kernel_graph({{"x", {4, 1024}}, {"y", {4, 1024}}}, {4, 1024}, tile);
  Status s = run_pass("stage_inputs", pinned, {KnobPin{"STAGE", std::string("in0,in1"), {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("not among the candidates"), std::string::npos) << s.message();

  // A slab larger than the whole budget is never a candidate.
  device_.smem_per_block = 2 * 1024;
  Graph small = kernel_graph({{"x", {4, 1024}}, {"y", {4, 1024}}}, {4, 1024}, tile);
  ASSERT_TRUE(run_pass("stage_inputs", small));
  EXPECT_EQ(body_text(small).find("Stage("), std::string::npos) << body_text(small);
  EXPECT_NE(skip_text().find("exceeds the 2048 bytes"), std::string::npos) << skip_text();
}

// STAGE names inputs by position, so the value chosen for one layer's kernel is the value of every
// other layer's copy, and is among its candidates when replayed there (a buffer name is not).
TEST_F(SmemPassesTest, StageValuesNameInputPositionsSoLayersRecordTheSameValue) {
  // A norm-like row kernel with inputs (b, x): x is read twice (reused), b once per element by
  // its own thread (not reused), so the heuristic stages the second input only.
  auto norm_kernel = [](const std::string& b, const std::string& x, const std::string& out) {
    Body reduce = {Load{"in0", x, {var("a1"), var("a2")}}, Assign{"v0", ElementwiseFn::Mul, {var("in0"), var("in0")}},
                   Accum{"acc0", CombineFn::Add, var("v0")}};
    Body free = {Load{"in1", x, {var("a1"), var("a3")}}, Load{"in2", b, {var("a1"), var("a3")}},
                 Assign{"v1", ElementwiseFn::Mul, {var("in1"), var("acc0")}},
                 Assign{"v2", ElementwiseFn::Add, {var("v1"), var("in2")}},
                 Write{out, {var("a1"), var("a3")}, var("v2")}};
    return Tile{{TileAxis{"a0", 256, AxisBinding::Thread}, TileAxis{"a1", 8, AxisBinding::Block}},
                {Init{"acc0", Expr::float_(0.0)},
                 StridedLoop{"a2", var("a0"), lit(2048), lit(256), LoopRole::Reduce, 0, reduce},
                 Combine{"acc0", CombineFn::Add, CombineScope::Block},
                 StridedLoop{"a3", var("a0"), lit(2048), lit(256), LoopRole::Free, 0, free}}};
  };
  // Layers 3 and 4: the same kernel on each layer's buffers (layer 4 reads layer 3's output).
  auto two_layers = [&] {
    Graph g;
    for (const std::string id : {"l3_b", "l3_x", "l4_b"})
      g.add(id, std::make_unique<InputOp>(), {}, TensorType{{8, 2048}, DType::F32});
    const std::vector<std::pair<std::string, std::string>> layers = {{"l3", "l3_x"}, {"l4", "l3_out"}};
    for (const auto& [layer, x] : layers) {
      auto op = std::make_unique<TileOp>();
      op->name = "k_" + layer + "_out_reduce";
      op->body = {Stmt(norm_kernel(layer + "_b", x, layer + "_out"))};
      g.add(layer + "_out", std::move(op), {layer + "_b", x}, TensorType{{8, 2048}, DType::F32});
    }
    g.outputs() = {"l4_out"};
    return g;
  };
  Graph g = two_layers();
  ASSERT_TRUE(run_pass("stage_inputs", g));  // KernelPass::run: each node on its own, no sharing
  for (const char* id : {"l3_out", "l4_out"}) {
    const Node& n = *g.find(id);
    ASSERT_EQ(n.choices.size(), 1u) << id;
    EXPECT_EQ(n.choices[0].value, AttrValue(std::string("in1"))) << id;
  }
  const std::string l4_text = print_body(g.find("l4_out")->op_as<TileOp>()->body);
  EXPECT_NE(l4_text.find("l3_out_smem = Stage(l3_out, "), std::string::npos) << l4_text;
  EXPECT_EQ(l4_text.find("l4_b_smem"), std::string::npos) << l4_text;
  EXPECT_EQ(kernel_structural_hash(g, *g.find("l3_out")), kernel_structural_hash(g, *g.find("l4_out")));

  // A value recorded on layer 3 replays on layer 4 (here: pinned for both), whatever it stages.
  Graph pinned = two_layers();
  ASSERT_TRUE(run_pass("stage_inputs", pinned, {KnobPin{"STAGE", std::string("in0,in1"), {}}}));
  const std::string pinned_text = print_body(pinned.find("l4_out")->op_as<TileOp>()->body);
  EXPECT_NE(pinned_text.find("l4_b_smem = Stage(l4_b, "), std::string::npos) << pinned_text;
  EXPECT_NE(pinned_text.find("l3_out_smem = Stage(l3_out, "), std::string::npos) << pinned_text;

  // A buffer name is no STAGE value: the error lists the roles.
  Graph named = two_layers();
  Status s = run_pass("stage_inputs", named, {KnobPin{"STAGE", std::string("l3_x"), {}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("candidates at node 'l3_out': none, in0, in1, \"in0,in1\""), std::string::npos)
      << s.message();
}

// Through the default pipeline: two RMSNorms on their own inputs and weights (the layers of a
// model) are one kernel structure, rewritten once and handed to the other (kernel sharing), and
// record one STAGE value that stages something. Also when an input is called like a role: the
// value `in0` of the kernel reading buffer `in0` is not a buffer name to rename for the other.
TEST_F(SmemPassesTest, TwoRmsNormLayersOfAProgramRecordTheSameStageValue) {
  Expected<PipelineSpec> spec = load_pipeline_file(test::default_pipeline_path());
  ASSERT_TRUE(spec) << spec.error().render();
  auto stage_value = [](const Node& n) {
    for (const KnobChoice& c : n.choices)
      if (c.pass == "stage_inputs" && c.knob == "STAGE") return c.value;
    return AttrValue(std::string("(none recorded)"));
  };
  for (const std::string first : {"a", "in0"}) {
    SCOPED_TRACE(first);
    Graph g = trace(first + " = torch.randn(1, 32, 2048)\nb = torch.randn(1, 32, 2048)\n(nn.RMSNorm(2048)(" + first +
                    "), nn.RMSNorm(2048)(b))");
    ASSERT_TRUE(lower(g, *spec, Dialect::Tile, h100()));
    std::vector<const Node*> staged;
    for (const Node* n : g.nodes())
      if (n->op_as<TileOp>()) staged.push_back(n);
    ASSERT_EQ(staged.size(), 2u) << print_graph(g);
    EXPECT_EQ(stage_value(*staged[0]), AttrValue(std::string("in0"))) << print_graph(g);
    EXPECT_EQ(stage_value(*staged[1]), AttrValue(std::string("in0"))) << print_graph(g);
    EXPECT_EQ(kernel_structural_hash(g, *staged[0]), kernel_structural_hash(g, *staged[1]));
  }
}

TEST_F(SmemPassesTest, ChunkReduceSplitsARowThatDoesNotFit) {
  // 32768 floats = 128 KB per row > 48 KB: chunks of 8192 (32 KB) fit.
  Graph g = kernel_graph({{"x", {4, 32768}}}, {4, 32768}, row_kernel(4, 32768));
  ASSERT_TRUE(run_pass("chunk_reduce", g));
  ASSERT_NE(choice(g, "CHUNK"), nullptr);
  EXPECT_EQ(choice(g, "CHUNK")->value, AttrValue(int64_t{8192}));
  const std::string text = body_text(g);
  EXPECT_NE(text.find("for a2 in 0..4:  # reduce\n    StridedLoop(a3 = a2 * 8192 + a0; < a2 * 8192 + 8192; += 256):  # reduce"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("for a4 in 0..4:  # free"), std::string::npos) << text;

  // Then stage_inputs stages x per chunk when pinned (one load per chunk loop: not reused).
  ASSERT_TRUE(run_pass("stage_inputs", g, {KnobPin{"STAGE", std::string("in0"), {}}}));
  const std::string staged = body_text(g);
  EXPECT_NE(staged.find("x_smem = Stage(x, origin=(a1, a2 * 8192), slab=(a3:8192@1))"), std::string::npos) << staged;
  EXPECT_NE(staged.find("load x_smem[a3 - a2 * 8192]"), std::string::npos) << staged;
}

TEST_F(SmemPassesTest, ChunkReduceLeavesARowThatFitsAndHandlesARaggedTail) {
  Graph fits = kernel_graph({{"x", {4, 2048}}}, {4, 2048}, row_kernel(4, 2048));
  ASSERT_TRUE(run_pass("chunk_reduce", fits));
  EXPECT_EQ(body_text(fits).find("for "), std::string::npos) << body_text(fits);
  ASSERT_NE(choice(fits, "CHUNK"), nullptr);
  EXPECT_EQ(choice(fits, "CHUNK")->value, AttrValue(int64_t{0}));

  // 20000 is not a multiple of the chunk: the last chunk stops at N.
  Graph ragged = kernel_graph({{"x", {4, 20000}}}, {4, 20000}, row_kernel(4, 20000));
  ASSERT_TRUE(run_pass("chunk_reduce", ragged, {KnobPin{"CHUNK", int64_t{8192}, {}}}));
  EXPECT_NE(body_text(ragged).find("for a2 in 0..3:  # reduce\n    StridedLoop(a3 = a2 * 8192 + a0; < min(a2 * 8192 + 8192, 20000)"),
            std::string::npos)
      << body_text(ragged);
}

TEST_F(SmemPassesTest, AsyncCopyNeedsSm80) {
  Tile tile = row_kernel(8, 2048);
  Graph g = kernel_graph({{"x", {8, 2048}}}, {8, 2048}, tile);
  ASSERT_TRUE(run_pass("stage_inputs", g));
  Graph old_arch = g;

  ASSERT_TRUE(run_pass("async_copy", g));
  const std::string text = body_text(g);
  EXPECT_NE(text.find("x_smem = Stage(x, origin=(a1, 0), slab=(a2:2048@1)) async\n  AsyncWait(keep=0)\n"),
            std::string::npos)
      << text;

  device_.arch = "sm_75";
  device_.features = arch_features(device_.arch);
  ASSERT_TRUE(run_pass("async_copy", old_arch));
  EXPECT_EQ(body_text(old_arch).find("async"), std::string::npos) << body_text(old_arch);
  EXPECT_NE(skip_text().find("sm_75"), std::string::npos) << skip_text();
}

// A 32x32 transpose through shared memory: lanes walk a column (a0 is the fast THREAD axis and
// indexes the slab's rows), so without padding all 32 lanes hit one bank.
Tile transpose_tile() {
  return Tile{{TileAxis{"a0", 32, AxisBinding::Thread}, TileAxis{"a1", 32, AxisBinding::Thread}},
              {Stage{"x_smem", "x", {lit(0), lit(0)}, {SlabDim{"a0", 32, 0}, SlabDim{"a1", 32, 1}}, StageTransport::Sync, 0},
               Load{"in0", "x_smem", {var("a0"), var("a1")}}, Write{"out", {var("a1"), var("a0")}, var("in0")}}};
}

TEST_F(SmemPassesTest, PadRemovesTheBankConflictOfATransposedAccess) {
  Graph g = kernel_graph({{"x", {32, 32}}}, {32, 32}, transpose_tile());
  ASSERT_TRUE(run_pass("pad_smem", g));
  const auto* stage = tile_of(g).body[0].as<Stage>();
  ASSERT_NE(stage, nullptr);
  EXPECT_EQ(stage->pad, 1) << body_text(g);  // 33-float rows: lane i hits bank i
  ASSERT_NE(choice(g, "PAD"), nullptr);
  EXPECT_EQ(choice(g, "PAD")->source, "heuristic");

  // A row-wise (coalesced) read has no conflict: the smallest pad, 0, wins.
  Tile rowwise = transpose_tile();
  rowwise.body[1] = Load{"in0", "x_smem", {var("a1"), var("a0")}};
  Graph h = kernel_graph({{"x", {32, 32}}}, {32, 32}, rowwise);
  ASSERT_TRUE(run_pass("pad_smem", h));
  EXPECT_EQ(tile_of(h).body[0].as<Stage>()->pad, 0);
}

// A warp of 8 x 4 threads, each reading 4 adjacent columns (a register tile's replicas, as
// permute_register_tile leaves them) of its row. Read scalar, lanes of 4 rows hit the same banks
// (4-way) and a pad of 1 would fix that; but vectorize_loads reads the 4 columns as one 16-byte
// access while the row stays a multiple of 4 floats, and those quarter-warp requests are
// conflict-free unpadded: PAD=0, which keeps them vector reads. With 3 replicas (no vector read)
// the pad of 1 wins.
TEST_F(SmemPassesTest, PadKeepsTheVectorReadsOfAdjacentReplicas) {
  auto tile = [](int64_t replicas) {
    return Tile{{TileAxis{"a0", 8, AxisBinding::Thread}, TileAxis{"a1", 4, AxisBinding::Thread}},
                {Stage{"x_smem", "x", {lit(0), lit(0)}, {SlabDim{"a4", 4, 0}, SlabDim{"a5", 32, 1}}, StageTransport::Sync, 0},
                 Loop{"a3", lit(0), lit(replicas), LoopRole::Free, replicas,
                      {Load{"in0", "x_smem", {var("a1"), var("a0") * 4 + var("a3")}},
                       Write{"out", {var("a1"), var("a0") * 4 + var("a3")}, Expr::value("in0")}}}}};
  };
  Graph g = kernel_graph({{"x", {4, 32}}}, {4, 32}, tile(4));
  ASSERT_TRUE(run_pass("pad_smem", g));
  EXPECT_EQ(tile_of(g).body[0].as<Stage>()->pad, 0) << body_text(g);
  Graph scalar = kernel_graph({{"x", {4, 32}}}, {4, 32}, tile(3));
  ASSERT_TRUE(run_pass("pad_smem", scalar));
  EXPECT_EQ(tile_of(scalar).body[0].as<Stage>()->pad, 1) << body_text(scalar);
}

TEST_F(SmemPassesTest, PadStaysWithinTheBudgetAndSkipsOneDimensionalSlabs) {
  // The unpadded 4 KB slab exactly fills the budget: no pad fits, so 0 is the only candidate.
  device_.smem_per_block = 32 * 32 * 4;
  Graph g = kernel_graph({{"x", {32, 32}}}, {32, 32}, transpose_tile());
  ASSERT_TRUE(run_pass("pad_smem", g));
  EXPECT_EQ(tile_of(g).body[0].as<Stage>()->pad, 0);
  Graph pinned = kernel_graph({{"x", {32, 32}}}, {32, 32}, transpose_tile());
  EXPECT_FALSE(run_pass("pad_smem", pinned, {KnobPin{"PAD", int64_t{1}, {}}}));

  device_.smem_per_block = 49152;

  Graph row = kernel_graph({{"x", {8, 2048}}}, {8, 2048}, row_kernel(8, 2048));
  ASSERT_TRUE(run_pass("stage_inputs", row));
  ASSERT_TRUE(run_pass("pad_smem", row));
  EXPECT_NE(skip_text().find("1-D"), std::string::npos) << skip_text();
  EXPECT_EQ(choice(row, "PAD"), nullptr);
}

}  // namespace
}  // namespace tessera

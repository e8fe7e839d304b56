// Hand-built IR shared by the IR core tests (stmt, graph, serialize, verifier, printer goldens):
// a body that uses every statement kind, and one small, valid graph per stage.
#pragma once

#include <limits>
#include <memory>
#include <string>

#include "tessera/ir/graph.h"
#include "tessera/ir/stmt.h"

namespace tessera::ir_fixtures {

inline Expr var(const std::string& name) { return Expr::var(name); }      // an index variable
inline Expr val(const std::string& name) { return Expr::value(name); }    // an SSA value
inline Expr lit(int64_t v) { return Expr::int_(v); }
inline Expr flt(double v) { return Expr::float_(v); }

inline TensorType f32(Shape shape) { return TensorType{std::move(shape), DType::F32}; }

// One statement of every kind in TESSERA_STMT_KINDS (the printer golden stmt_kinds.txt shows it).
// It is a printing/serialization fixture, not a valid kernel of any one dialect.
inline Body every_stmt_kind_body() {
  Body tile_body;
  tile_body.push_back(Let{"a2", var("blockIdx.x")});
  tile_body.push_back(Init{"acc0", flt(0.0)});
  tile_body.push_back(
      Stage{"x_stage", "x", {lit(0), var("a1"), lit(0)}, {SlabDim{"a4", 4, 2, 512}, SlabDim{"a3", 512, 2}},
            StageTransport::Async, 4});
  tile_body.push_back(AsyncWait{1});
  tile_body.push_back(SlabMap{"h_smem", DType::F32, {8, 32}, "a5",
                              {Load{"in5", "x_stage", {lit(1), var("a5") / 32, var("a5") % 32}},
                               Assign{"v4", ElementwiseFn::Relu, {val("in5")}},
                               Write{"h_smem", {var("a5") / 32, var("a5") % 32}, val("v4")}}});
  tile_body.push_back(StridedLoop{
      "a3",
      var("a0"),
      lit(2048),
      lit(256),
      LoopRole::Reduce,
      4,
      {Load{"in0", "x_stage", {var("a3")}}, Assign{"v0", ElementwiseFn::Mul, {val("in0"), val("in0")}},
       Accum{"acc0", CombineFn::Add, val("v0")}}});
  tile_body.push_back(Combine{"acc0", CombineFn::Add, CombineScope::Warp});
  tile_body.push_back(
      CpAsyncCopy{"x_smem", {lit(0), var("a0")}, "x", {var("a1") * 2048 + var("a0")}, 4});
  tile_body.push_back(CpAsyncCommit{});
  tile_body.push_back(CpAsyncWait{0});
  tile_body.push_back(MbarrierArrive{"bar0", Expr::int_(0), 8192});
  tile_body.push_back(TmaLoad{"x_smem", {}, "tmap_x", {lit(0), var("a1")}, "bar0", Expr::int_(0)});
  tile_body.push_back(MbarrierWait{"bar0", lit(0), lit(0)});
  tile_body.push_back(Sync{});
  tile_body.push_back(WarpShuffle{"v1", val("acc0"), ShuffleMode::Xor, 16, 32});
  tile_body.push_back(TreeHalve{"acc0_smem", var("a0"), 256, CombineFn::Add});
  tile_body.push_back(
      VectorLoad{{"in1", "in2", "in3", "in4"}, "x", {lit(0), var("a1"), var("a0") * 4}});
  tile_body.push_back(Loop{"a4",
                           lit(0),
                           lit(4),
                           LoopRole::Free,
                           0,
                           {Select{"v2", var("a4") < lit(2), val("in1"), val("in2")},
                            Cond{var("a0") < lit(16),
                                 {Write{"y", {lit(0), var("a1"), var("a0")}, val("v2")}},
                                 {Assign{"v3", ElementwiseFn::Relu, {val("v2")}}}}}});
  tile_body.push_back(VectorStore{
      "y", {lit(0), var("a1"), var("a0") * 4}, {val("in1"), val("in2"), val("in3"), val("in4")}});
  tile_body.push_back(ClusterSync{});
  tile_body.push_back(DsmemLoad{"in5", "acc0_smem", {lit(0)}, var("a1") % 8});
  tile_body.push_back(Init{"acc1", flt(0.0), ValueType{DType::F32, 1, {2, 4}}});
  tile_body.push_back(Fragment{"frag0", ValueType{DType::BF16, 1, {8}}});
  tile_body.push_back(Fragment{"frag1", ValueType{DType::BF16, 1, {2, 4}}});
  tile_body.push_back(LdMatrix{"frag0", {}, "a_smem", {var("a0") % 16, var("a0") / 16 % 2 * 8}, 4});
  tile_body.push_back(
      LdMatrix{"frag1", {lit(1)}, "b_smem", {var("a0") % 16, lit(8)}, 2, LdMatrixLayout::Trans});
  tile_body.push_back(MmaSync{"acc1", {lit(1)}, "frag0", {}, "frag1", {lit(1)}});
  tile_body.push_back(Init{"acc2", flt(0.0), ValueType{DType::F32, 1, {2, 32}}});
  tile_body.push_back(WgmmaFence{});
  tile_body.push_back(WgmmaMma{"acc2", {lit(1)}, 64, DType::BF16, "a_smem", {lit(0), var("a5") * 16}, 16, 1024,
                               SmemSwizzle::B128, "b_smem", {lit(8), lit(0)}, 128, 256, SmemSwizzle::None});
  tile_body.push_back(WgmmaCommit{});
  tile_body.push_back(WgmmaWait{1});
  tile_body.push_back(SetMaxNReg{RegisterAction::Inc, 232});
  tile_body.push_back(NamedBarrier{1, 256});

  Body body;
  body.push_back(Smem{"x_smem", DType::F32, {2, 2048}});
  body.push_back(Smem{"acc0_smem", DType::F32, {256}});
  body.push_back(MbarrierInit{"bar0", 1});
  body.push_back(Tile{{TileAxis{"a0", 256, AxisBinding::Thread}, TileAxis{"a1", 32, AxisBinding::Block}}, tile_body,
                      TileProducer::Warpgroup});
  return body;
}

// ---- one graph per stage: relu(matmul(x + bias, w)) and RMSNorm, as in the design seeds ----

inline void add_input(Graph& g, const std::string& id, Shape shape) {
  g.add(id, std::make_unique<InputOp>(), {}, f32(std::move(shape)));
}

inline void add_param(Graph& g, const std::string& id, const std::string& path, Shape shape,
                      uint64_t seed) {
  auto op = std::make_unique<ConstantOp>();
  op->path = path;
  op->seed = seed;
  g.add(id, std::move(op), {}, f32(std::move(shape)));
}

inline Graph torch_graph() {
  Graph g;
  add_input(g, "x", {16, 64});
  add_input(g, "bias", {64});
  add_param(g, "w", "proj.weight", {64, 16}, 7);
  auto add = std::make_unique<TorchOp>();
  add->target = "add";
  g.add("add", std::move(add), {"x", "bias"}, f32({16, 64}));
  auto matmul = std::make_unique<TorchOp>();
  matmul->target = "matmul";
  matmul->attrs.set("has_bias", false);
  g.add("matmul", std::move(matmul), {"add", "w"}, f32({16, 16}));
  auto relu = std::make_unique<TorchOp>();
  relu->target = "relu";
  g.add("relu", std::move(relu), {"matmul"}, f32({16, 16}));
  auto scaled = std::make_unique<TorchOp>();
  scaled->target = "mul";
  scaled->scalar_args = {{1, 0.5}};
  g.add("scaled", std::move(scaled), {"relu"}, f32({16, 16}));
  auto softmax = std::make_unique<TorchOp>();
  softmax->target = "softmax";
  softmax->attrs.set("dim", int64_t{-1});
  g.add("softmax", std::move(softmax), {"scaled"}, f32({16, 16}));
  g.outputs() = {"softmax"};
  return g;
}

inline std::unique_ptr<IndexMapOp> index_map(std::vector<std::string> coords, std::string buffer,
                                             ExprList index) {
  auto op = std::make_unique<IndexMapOp>();
  op->coords = std::move(coords);
  op->sources.push_back(IndexMapSource{std::move(buffer), std::move(index), Expr(), Expr()});
  return op;
}

inline std::unique_ptr<ElementwiseOp> elementwise(ElementwiseFn fn, ExprList args) {
  auto op = std::make_unique<ElementwiseOp>();
  op->fn = fn;
  op->args = std::move(args);
  return op;
}

inline Graph tensor_graph() {
  Graph g;
  add_input(g, "x", {16, 64});
  add_input(g, "bias", {64});
  add_param(g, "w", "proj.weight", {64, 16}, 7);
  add_param(g, "table", "embed.weight", {100, 16}, 3);
  auto ids = std::make_unique<InputOp>();
  ids->init = "zeros";
  g.add("ids", std::move(ids), {}, TensorType{{16}, DType::I64});
  g.add("bias_bc", index_map({"i", "j"}, "bias", {var("j")}), {"bias"}, f32({16, 64}));
  g.add("w_bc", index_map({"i", "j", "k"}, "w", {var("j"), var("k")}), {"w"}, f32({16, 64, 16}));
  g.add("add", elementwise(ElementwiseFn::Add, {var("x"), var("bias_bc")}), {"x", "bias_bc"}, f32({16, 64}));
  g.add("add_bc", index_map({"i", "j", "k"}, "add", {var("i"), var("j")}), {"add"},
        f32({16, 64, 16}));
  g.add("prod", elementwise(ElementwiseFn::Mul, {var("add_bc"), var("w_bc")}), {"add_bc", "w_bc"},
        f32({16, 64, 16}));
  auto red = std::make_unique<ReduceOp>();
  red->fn = CombineFn::Add;
  red->axis = -2;
  g.add("red", std::move(red), {"prod"}, f32({16, 1, 16}));
  g.add("matmul", index_map({"i", "j"}, "red", {var("i"), lit(0), var("j")}), {"red"},
        f32({16, 16}));
  g.add("relu", elementwise(ElementwiseFn::Relu, {var("matmul")}), {"matmul"}, f32({16, 16}));
  auto total = std::make_unique<ReduceOp>();
  total->fn = CombineFn::Max;
  total->axis = 1;
  total->keepdim = false;
  g.add("total", std::move(total), {"relu"}, f32({16}));
  auto gather = std::make_unique<GatherOp>();
  g.add("emb", std::move(gather), {"table", "ids"}, f32({16, 16}));
  auto cat = std::make_unique<IndexMapOp>();
  cat->coords = {"i", "j"};
  cat->sources.push_back(IndexMapSource{"relu", {var("i"), var("j")}, Expr(), var("i") < lit(16)});
  cat->sources.push_back(
      IndexMapSource{"emb", {var("i") - lit(16), var("j")}, Expr(), var("i") < lit(32)});
  cat->sources.push_back(
      IndexMapSource{"", {}, flt(-std::numeric_limits<double>::infinity()), Expr()});
  g.add("cat", std::move(cat), {"relu", "emb"}, f32({40, 16}));
  g.add("scaled", elementwise(ElementwiseFn::Mul, {var("cat"), flt(0.125)}), {"cat"}, f32({40, 16}));
  g.outputs() = {"scaled", "total"};
  return g;
}

inline Graph loop_graph() {
  Graph g;
  add_input(g, "x", {16, 64});
  add_input(g, "bias", {64});
  add_param(g, "w", "proj.weight", {64, 16}, 7);
  auto op = std::make_unique<LoopOp>();
  op->name = "merged_relu";
  Body reduce_body = {Load{"in0", "bias", {var("a2")}},
                      Load{"in1", "x", {var("a0"), var("a2")}},
                      Load{"in2", "w", {var("a2"), var("a1")}},
                      Assign{"v0", ElementwiseFn::Add, {val("in1"), val("in0")}},
                      Assign{"v1", ElementwiseFn::Mul, {val("v0"), val("in2")}},
                      Accum{"acc0", CombineFn::Add, val("v1")}};
  Body n_body = {Init{"acc0", flt(0.0)}, Loop{"a2", lit(0), lit(64), LoopRole::Reduce, 0, reduce_body},
                 Assign{"v2", ElementwiseFn::Relu, {val("acc0")}},
                 Write{"relu", {var("a0"), var("a1")}, val("v2")}};
  op->body = {
      Loop{"a0", lit(0), lit(16), LoopRole::Free, 0, {Loop{"a1", lit(0), lit(16), LoopRole::Free, 0, n_body}}}};
  g.add("relu", std::move(op), {"bias", "x", "w"}, f32({16, 16}));
  g.outputs() = {"relu"};
  return g;
}

inline void add_rms_norm_inputs(Graph& g) {
  add_input(g, "x", {1, 32, 2048});
  add_param(g, "p_weight", "weight", {2048}, 11);
}

inline std::vector<KnobChoice> rms_norm_choices() {
  return {KnobChoice{"launch_geometry", "BN", int64_t{128}, "heuristic"},
          KnobChoice{"stage_inputs", "STAGE", std::string("in0"), "pinned"}};
}

inline Graph tile_graph() {
  Graph g;
  add_rms_norm_inputs(g);
  auto op = std::make_unique<TileOp>();
  op->name = "k_rms_norm_reduce";
  Body reduce = {Load{"in0", "x_smem", {var("a2")}},
                 Assign{"v1", ElementwiseFn::Mul, {val("in0"), val("in0")}},
                 Accum{"acc0", CombineFn::Add, val("v1")}};
  Body normalize = {Load{"in1", "x_smem", {var("a3")}}, Load{"in2", "p_weight", {var("a3")}},
                    Assign{"v5", ElementwiseFn::Mul, {val("in1"), val("v4")}},
                    Assign{"v6", ElementwiseFn::Mul, {val("v5"), val("in2")}},
                    Write{"rms_norm", {lit(0), var("a1"), var("a3")}, val("v6")}};
  Body tile = {
      Assign{"v0", ElementwiseFn::Reciprocal, {lit(2048)}},
      Stage{"x_smem", "x", {lit(0), var("a1"), lit(0)}, {SlabDim{"a2", 2048, 2}}, StageTransport::Sync, 0},
      Init{"acc0", flt(0.0)},
      StridedLoop{"a2", var("a0"), lit(2048), lit(256), LoopRole::Reduce, 0, reduce},
      Combine{"acc0", CombineFn::Add, CombineScope::Block},
      Assign{"v2", ElementwiseFn::Mul, {val("acc0"), val("v0")}},
      Assign{"v3", ElementwiseFn::Add, {val("v2"), flt(1e-06)}},
      Assign{"v4", ElementwiseFn::Rsqrt, {val("v3")}},
      StridedLoop{"a3", var("a0"), lit(2048), lit(256), LoopRole::Free, 4, normalize}};
  op->body = {Tile{{TileAxis{"a0", 256, AxisBinding::Thread}, TileAxis{"a1", 32, AxisBinding::Block}}, tile}};
  Node& n = g.add("rms_norm", std::move(op), {"x", "p_weight"}, f32({1, 32, 2048}));
  n.choices = rms_norm_choices();
  g.outputs() = {"rms_norm"};
  return g;
}

inline Graph kernel_graph() {
  Graph g;
  add_rms_norm_inputs(g);
  auto op = std::make_unique<KernelOp>();
  op->name = "k_rms_norm_reduce";
  op->grid = {32, 1, 1};
  op->block = {256, 1, 1};
  Body copy = {CpAsyncCopy{"x_smem", {var("a2")}, "x", {var("a1") * 2048 + var("a2")}, 4}};
  Body reduce = {Load{"in0", "x_smem", {var("a3")}},
                 Assign{"v0", ElementwiseFn::Mul, {val("in0"), val("in0")}},
                 Accum{"acc0", CombineFn::Add, val("v0")}};
  Body normalize = {Load{"in2", "x_smem", {var("a4")}}, Load{"in3", "p_weight", {var("a4")}},
                    Assign{"v4", ElementwiseFn::Mul, {val("in2"), val("v3")}},
                    Assign{"v5", ElementwiseFn::Mul, {val("v4"), val("in3")}},
                    Write{"rms_norm", {lit(0), var("a1"), var("a4")}, val("v5")}};
  op->body = {Let{"a1", var("blockIdx.x")},
              Let{"a0", var("threadIdx.x")},
              Init{"acc0", flt(0.0)},
              Smem{"x_smem", DType::F32, {2048}},
              StridedLoop{"a2", var("a0"), lit(2048), lit(256), LoopRole::None, 0, copy},
              CpAsyncCommit{},
              CpAsyncWait{0},
              Sync{},
              StridedLoop{"a3", var("a0"), lit(2048), lit(256), LoopRole::Reduce, 0, reduce},
              Smem{"acc0_smem", DType::F32, {256}},
              Write{"acc0_smem", {var("a0")}, val("acc0")},
              Sync{},
              TreeHalve{"acc0_smem", var("a0"), 256, CombineFn::Add},
              Load{"in1", "acc0_smem", {lit(0)}},
              Assign{"v1", ElementwiseFn::Mul, {val("in1"), flt(0.00048828125)}},
              Assign{"v2", ElementwiseFn::Add, {val("v1"), flt(1e-06)}},
              Assign{"v3", ElementwiseFn::Rsqrt, {val("v2")}},
              StridedLoop{"a4", var("a0"), lit(2048), lit(256), LoopRole::Free, 0, normalize}};
  Node& n = g.add("rms_norm", std::move(op), {"x", "p_weight"}, f32({1, 32, 2048}));
  n.choices = rms_norm_choices();
  g.outputs() = {"rms_norm"};
  return g;
}

inline KernelParam buffer_param(std::string name, bool written = false) {
  KernelParam p;
  p.name = std::move(name);
  p.written = written;
  return p;
}

inline Graph cuda_graph() {
  Graph g;
  add_rms_norm_inputs(g);
  auto op = std::make_unique<CudaOp>();
  op->name = "k_rms_norm_reduce";
  op->grid = {32, 1, 1};
  op->block = {256, 1, 1};
  op->dynamic_smem = 1024;
  op->params = {buffer_param("x"), buffer_param("p_weight"), buffer_param("rms_norm", true)};
  op->source =
      "extern \"C\" __global__ __launch_bounds__(256) void k_rms_norm_reduce(\n"
      "    const float* x, const float* p_weight, float* rms_norm) {\n"
      "  int a1 = blockIdx.x;\n"
      "  int a0 = threadIdx.x;\n"
      "}\n";
  Node& n = g.add("rms_norm", std::move(op), {"x", "p_weight"}, f32({1, 32, 2048}));
  n.choices = rms_norm_choices();
  g.outputs() = {"rms_norm"};
  return g;
}

}  // namespace tessera::ir_fixtures

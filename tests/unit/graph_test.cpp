// Graph and Node: deep copies, editing (add, insert_before, erase, replace_uses), lookup, users,
// the index staying true through every edit (also through Node::inputs), the invariants edits
// keep (errors instead of dangling references), unique ids, the stage, and the one-node printers
// (declarations, line forms, knob lines).
#include "tessera/ir/graph.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tessera/ir/printer.h"
#include "unit/ir_fixtures.h"

namespace tessera {
namespace {

using namespace ir_fixtures;

std::vector<std::string> ids(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->id());
  return out;
}

TEST(Graph, CopyIsDeep) {
  Graph original = tensor_graph();
  Graph copy = original;
  ASSERT_EQ(ids(copy), ids(original));
  EXPECT_NE(copy.find("add")->op.get(), original.find("add")->op.get());
  copy.find("add")->op_as<ElementwiseOp>()->fn = ElementwiseFn::Sub;
  copy.find("add")->inputs.push_back("w");
  copy.outputs().push_back("add");
  EXPECT_EQ(original.find("add")->op_as<ElementwiseOp>()->fn, ElementwiseFn::Add);
  EXPECT_EQ(original.find("add")->inputs.size(), 2u);
  EXPECT_EQ(original.outputs(), (std::vector<std::string>{"scaled", "total"}));
}

TEST(Graph, CopyAssignmentReplacesContents) {
  Graph g = torch_graph();
  g = loop_graph();
  EXPECT_EQ(ids(g), (std::vector<std::string>{"x", "bias", "w", "relu"}));
  Graph& self = g;
  g = self;  // self-assignment keeps the graph intact
  EXPECT_EQ(ids(g), (std::vector<std::string>{"x", "bias", "w", "relu"}));
  EXPECT_NE(g.find("relu")->op_as<LoopOp>(), nullptr);
}

TEST(Graph, NodeCopyClonesTheOpAndKeepsChoicesAndLoc) {
  Graph g = tile_graph();
  Node n = *g.find("rms_norm");
  n.loc = SourceLoc{"<-c>", 1, 5, 3};
  Node copy = n;
  EXPECT_NE(copy.op.get(), n.op.get());
  EXPECT_EQ(copy.choices, n.choices);
  EXPECT_EQ(copy.loc.col, 5);
  EXPECT_EQ(copy.dialect(), Dialect::Tile);
}

TEST(Graph, AddFindAndOrder) {
  Graph g;
  add_input(g, "x", {4});
  g.add("y", elementwise(ElementwiseFn::Exp, {var("x")}), {"x"}, f32({4}));
  EXPECT_EQ(g.size(), 2u);
  EXPECT_TRUE(g.contains("y"));
  EXPECT_FALSE(g.contains("z"));
  EXPECT_EQ(g.find("z"), nullptr);
  const Graph& cg = g;
  EXPECT_EQ(cg.find("y")->inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(ids(g), (std::vector<std::string>{"x", "y"}));
}

TEST(Graph, InsertBeforeSplicesAtThePosition) {
  Graph g = tensor_graph();
  Expected<Node*> n = g.insert_before("add", "bias_neg", elementwise(ElementwiseFn::Neg, {var("bias_bc")}), {"bias_bc"},
                                      f32({16, 64}));
  ASSERT_TRUE(n) << n.error().render();
  EXPECT_EQ((*n)->id(), "bias_neg");
  std::vector<std::string> order = ids(g);
  auto pos = std::find(order.begin(), order.end(), "bias_neg");
  ASSERT_NE(pos, order.end());
  EXPECT_EQ(*(pos + 1), "add");
  EXPECT_EQ(g.users("bias_bc"), (std::vector<std::string>{"bias_neg", "add"}));  // graph order
}

TEST(Graph, InsertBeforeAMissingNodeIsAnError) {
  Graph g = tensor_graph();
  const std::vector<std::string> before = ids(g);
  Expected<Node*> n = g.insert_before("no_such", "y", elementwise(ElementwiseFn::Neg, {var("x")}), {"x"}, f32({16, 64}));
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("before 'no_such': no such node"), std::string::npos) << n.error().message;
  EXPECT_EQ(ids(g), before);  // nothing appended
  EXPECT_FALSE(g.contains("y"));
  EXPECT_TRUE(g.users("x") == std::vector<std::string>{"add"});
}

TEST(Graph, InsertBeforeWithATakenIdIsAnError) {
  Graph g = tensor_graph();
  Expected<Node*> n = g.insert_before("add", "relu", elementwise(ElementwiseFn::Neg, {var("x")}), {"x"}, f32({16, 64}));
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("the id is taken"), std::string::npos) << n.error().message;
  EXPECT_EQ(g.find("relu")->op_as<ElementwiseOp>()->fn, ElementwiseFn::Relu);
}

// Many splices at one place exhaust the gaps between order keys; users() stays in graph order.
TEST(Graph, RepeatedInsertsAtOnePlaceKeepTheOrder) {
  Graph g = tensor_graph();
  std::string before = "add";
  for (int i = 0; i < 100; ++i) {
    std::string id = "neg" + std::to_string(i);
    ASSERT_TRUE(g.insert_before(before, id, elementwise(ElementwiseFn::Neg, {var("x")}), {"x"}, f32({16, 64})));
    before = id;  // each one before the previous: always the same gap
  }
  std::vector<std::string> users = g.users("x");
  ASSERT_EQ(users.size(), 101u);
  EXPECT_EQ(users.front(), "neg99");
  EXPECT_EQ(users[98], "neg1");
  EXPECT_EQ(users.back(), "add");
  std::vector<std::string> order = ids(g);
  std::vector<std::string> graph_order_users;
  for (const std::string& id : order)
    if (std::find(users.begin(), users.end(), id) != users.end()) graph_order_users.push_back(id);
  EXPECT_EQ(users, graph_order_users);
}

TEST(Graph, EraseRemovesOnlyThatNode) {
  Graph g = tensor_graph();
  size_t before = g.size();
  g.outputs() = {"total"};
  ASSERT_TRUE(g.erase("scaled"));
  EXPECT_EQ(g.size(), before - 1);
  EXPECT_FALSE(g.contains("scaled"));
  EXPECT_EQ(g.find("scaled"), nullptr);
  EXPECT_TRUE(g.contains("cat"));
  EXPECT_TRUE(g.users("cat").empty());  // the erased node no longer uses it
  EXPECT_FALSE(g.has_users("cat"));
}

TEST(Graph, EraseOfAUsedNodeIsAnErrorAndChangesNothing) {
  Graph g = tensor_graph();
  const std::vector<std::string> before = ids(g);
  Status st = g.erase("relu");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("node 'total' still uses it"), std::string::npos) << st.error().message;
  EXPECT_EQ(st.error().node, "relu");
  EXPECT_EQ(ids(g), before);
  EXPECT_EQ(g.users("relu"), (std::vector<std::string>{"total", "cat"}));
}

TEST(Graph, EraseOfAnOutputOrAMissingNodeIsAnError) {
  Graph g = tensor_graph();
  Status output = g.erase("scaled");
  ASSERT_FALSE(output);
  EXPECT_NE(output.error().message.find("it is a program output"), std::string::npos);
  EXPECT_TRUE(g.contains("scaled"));
  Status missing = g.erase("nothing");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no such node"), std::string::npos);
}

// `erase(n.id)` hands erase a view into the node it destroys.
TEST(Graph, EraseTakesAViewIntoTheErasedNode) {
  Graph g = tensor_graph();
  g.outputs() = {"total"};
  Node* scaled = g.find("scaled");
  ASSERT_TRUE(g.erase(scaled->id()));
  EXPECT_FALSE(g.contains("scaled"));
  EXPECT_EQ(g.unique_id("scaled"), "scaled");
}

TEST(Graph, AssigningInputsUpdatesTheUseLists) {
  Graph g = tensor_graph();
  Node& add = *g.find("add");
  add.inputs = {"x", "x"};
  EXPECT_EQ(g.users("x"), std::vector<std::string>{"add"});  // once per user
  EXPECT_TRUE(g.users("bias_bc").empty());
  ASSERT_TRUE(g.erase("bias_bc"));  // no longer used
  add.inputs.push_back("bias");
  EXPECT_EQ(g.users("bias"), std::vector<std::string>{"add"});
  add.inputs = {"x"};
  EXPECT_TRUE(g.users("bias").empty());
  EXPECT_EQ(g.users("x"), std::vector<std::string>{"add"});
  Node detached = add;  // a copy belongs to no graph: editing it leaves the graph alone
  detached.inputs = {"w"};
  EXPECT_TRUE(g.users("w") == std::vector<std::string>{"w_bc"});
  EXPECT_EQ(add.inputs, std::vector<std::string>{"x"});
}

TEST(Graph, CopiesAndMovesKeepTheirOwnIndex) {
  Graph original = tensor_graph();
  Graph copy = original;
  copy.find("add")->inputs = {"x"};
  EXPECT_EQ(original.users("bias_bc"), std::vector<std::string>{"add"});
  EXPECT_TRUE(copy.users("bias_bc").empty());
  Graph moved = std::move(copy);
  moved.find("add")->inputs = {"x", "bias_bc"};  // the nodes still report to their (moved) graph
  EXPECT_EQ(moved.users("bias_bc"), std::vector<std::string>{"add"});
  EXPECT_FALSE(moved.erase("scaled"));  // an output: refused
  Graph reassigned;
  reassigned = std::move(moved);
  EXPECT_EQ(reassigned.users("relu"), (std::vector<std::string>{"total", "cat"}));
  EXPECT_EQ(reassigned.find("relu")->id(), "relu");
}

TEST(Graph, UniqueIdAddsTheFirstFreeSuffix) {
  Graph g;
  EXPECT_EQ(g.unique_id("add"), "add");
  add_input(g, "add", {1});
  EXPECT_EQ(g.unique_id("add"), "add_1");
  add_input(g, "add_1", {1});
  EXPECT_EQ(g.unique_id("add"), "add_2");
}

// The first free suffix, also when names are taken out of order or freed again.
TEST(Graph, UniqueIdReusesFreedSuffixesAndSkipsTakenOnes) {
  Graph g;
  for (const char* id : {"v", "v_1", "v_3", "v_01", "w_2"}) add_input(g, id, {1});
  EXPECT_EQ(g.unique_id("v"), "v_2");
  add_input(g, "v_2", {1});
  EXPECT_EQ(g.unique_id("v"), "v_4");  // v_3 was taken before
  ASSERT_TRUE(g.erase("v_1"));
  EXPECT_EQ(g.unique_id("v"), "v_1");
  add_input(g, "v_1", {1});
  EXPECT_EQ(g.unique_id("v"), "v_4");
  EXPECT_EQ(g.unique_id("w"), "w");
  EXPECT_EQ(g.unique_id("v_1"), "v_1_1");
  EXPECT_EQ(g.unique_id("v_0"), "v_0");
}

// Many nodes named from one base: each id is the next suffix (the index makes this linear).
TEST(Graph, UniqueIdOverManyNodes) {
  Graph g;
  add_input(g, "y", {1});
  for (int i = 1; i <= 5000; ++i) {
    std::string id = g.unique_id("y");
    ASSERT_EQ(id, "y_" + std::to_string(i));
    add_input(g, id, {1});
  }
  EXPECT_EQ(g.size(), 5001u);
}

TEST(Graph, UsersInGraphOrderOncePerUser) {
  Graph g = tensor_graph();
  g.add("sq", elementwise(ElementwiseFn::Mul, {var("relu"), var("relu")}), {"relu", "relu"}, f32({16, 16}));
  EXPECT_EQ(g.users("relu"), (std::vector<std::string>{"total", "cat", "sq"}));
  EXPECT_TRUE(g.users("scaled").empty());
  EXPECT_TRUE(g.has_users("relu"));
  EXPECT_FALSE(g.has_users("scaled"));
  EXPECT_FALSE(g.has_users("nothing"));
}

// The pieces of a large split: many users of one value, erased newest first (as a pruning pass
// erases them). Each erase once searched the value's whole use list (quadratic in the pieces); the
// use lists stay exact through it (the bounded time is ctest torch_expr_large_split's).
TEST(Graph, ErasingManyUsersOfOneValueKeepsItsUsersExact) {
  Graph g;
  add_input(g, "x", {4});
  constexpr int kUsers = 20000;
  for (int i = 0; i < kUsers; ++i)
    g.add("u_" + std::to_string(i), elementwise(ElementwiseFn::Neg, {var("x")}), {"x"}, f32({4}));
  g.add("both", elementwise(ElementwiseFn::Add, {var("x"), var("x")}), {"x", "x"}, f32({4}));  // two slots, one user
  ASSERT_TRUE(g.erase("both"));
  for (int i = kUsers - 1; i >= kUsers / 2; --i) ASSERT_TRUE(g.erase("u_" + std::to_string(i)));
  const std::vector<std::string> users = g.users("x");
  ASSERT_EQ(users.size(), size_t{kUsers / 2});
  EXPECT_EQ(users.front(), "u_0");  // in graph order
  EXPECT_EQ(users.back(), "u_" + std::to_string(kUsers / 2 - 1));
  for (int i = kUsers / 2 - 1; i >= 0; --i) ASSERT_TRUE(g.erase("u_" + std::to_string(i)));
  EXPECT_FALSE(g.has_users("x"));
  EXPECT_TRUE(g.erase("x"));
}

TEST(Graph, StageIsTheMostLoweredDialect) {
  Graph inputs_only;
  add_input(inputs_only, "x", {1});
  EXPECT_EQ(inputs_only.stage(), Dialect::Core);
  EXPECT_EQ(Graph().stage(), Dialect::Core);
  EXPECT_EQ(torch_graph().stage(), Dialect::Torch);
  EXPECT_EQ(tensor_graph().stage(), Dialect::Tensor);
  EXPECT_EQ(loop_graph().stage(), Dialect::Loop);
  EXPECT_EQ(tile_graph().stage(), Dialect::Tile);
  EXPECT_EQ(kernel_graph().stage(), Dialect::Kernel);
  EXPECT_EQ(cuda_graph().stage(), Dialect::Cuda);
  Graph mixed = tensor_graph();  // mid-lowering: one node already a loop nest
  auto loop = std::make_unique<LoopOp>();
  mixed.add("late", std::move(loop), {"scaled"}, f32({40, 16}));
  EXPECT_EQ(mixed.stage(), Dialect::Loop);
}

TEST(Graph, ReplaceUsesRewritesInputsOutputsAndOpReferences) {
  Graph g = tensor_graph();
  g.add("relu2", elementwise(ElementwiseFn::Relu, {var("matmul")}), {"matmul"}, f32({16, 16}));
  g.outputs().push_back("relu");
  g.replace_uses("relu", "relu2");
  EXPECT_EQ(g.find("total")->inputs, std::vector<std::string>{"relu2"});
  EXPECT_EQ(g.find("cat")->inputs, (std::vector<std::string>{"relu2", "emb"}));
  EXPECT_EQ(g.find("cat")->op_as<IndexMapOp>()->sources[0].buffer, "relu2");
  EXPECT_EQ(g.outputs().back(), "relu2");
  EXPECT_EQ(g.find("relu")->id(), "relu");  // the producer itself is untouched

  g.replace_uses("matmul", "red");
  EXPECT_EQ(g.find("relu")->op_as<ElementwiseOp>()->args[0].str(), "red");
  // The use lists follow: matmul is free to go, red has both users.
  EXPECT_FALSE(g.has_users("matmul"));
  EXPECT_EQ(g.users("red"), (std::vector<std::string>{"matmul", "relu", "relu2"}));
  EXPECT_TRUE(g.users("relu").empty());
  EXPECT_EQ(g.users("relu2"), (std::vector<std::string>{"total", "cat"}));
  ASSERT_TRUE(g.erase("matmul"));
  EXPECT_EQ(g.users("red"), (std::vector<std::string>{"relu", "relu2"}));
}

TEST(Graph, ReplaceUsesRewritesKernelBodiesAndCudaArguments) {
  Graph g = loop_graph();
  add_input(g, "x2", {16, 64});
  g.replace_uses("x", "x2");
  const Body& body = g.find("relu")->op_as<LoopOp>()->body;
  EXPECT_NE(print_body(body).find("in1 = load x2[a0, a2]"), std::string::npos) << print_body(body);
  EXPECT_EQ(print_body(body).find("load x["), std::string::npos);
  EXPECT_EQ(g.find("relu")->inputs, (std::vector<std::string>{"bias", "x2", "w"}));

  Graph c = cuda_graph();
  add_input(c, "p2", {2048});
  c.replace_uses("p_weight", "p2");
  std::vector<std::string> args;
  for (const KernelParam& p : c.find("rms_norm")->op_as<CudaOp>()->params) args.push_back(p.name);
  EXPECT_EQ(args, (std::vector<std::string>{"x", "p2", "rms_norm"}));
}

// ---- printing single nodes ----

TEST(Printer, InputDeclarations) {
  Graph g;
  add_input(g, "x", {16, 64});
  auto zeros = std::make_unique<InputOp>();
  zeros->init = "zeros";
  g.add("z", std::move(zeros), {}, TensorType{{3}, DType::I64});
  auto full = std::make_unique<InputOp>();
  full->init = "full";
  full->fill = 0.5;
  g.add("h", std::move(full), {}, TensorType{{}, DType::BF16});
  EXPECT_EQ(print_value_decl(*g.find("x")), "x: (16, 64) float32");
  EXPECT_EQ(print_value_decl(*g.find("z")), "z: (3,) int64  # zeros");
  EXPECT_EQ(print_value_decl(*g.find("h")), "h: () bfloat16  # full(0.5)");
}

TEST(Printer, ConstantDeclarations) {
  Graph g;
  add_param(g, "p_weight", "up.weight", {2048}, 7);
  auto scaled = std::make_unique<ConstantOp>();
  scaled->path = "lm_head.weight";
  scaled->seed = 3;
  scaled->scale = 0.02;
  g.add("p_head", std::move(scaled), {}, f32({4, 8}));
  auto values = std::make_unique<ConstantOp>();
  values->values = {1, 2, 3, 4, 5, 6, 7, 8, 9.5};
  g.add("c0", std::move(values), {}, f32({9}));
  auto ones = std::make_unique<ConstantOp>();
  ones->path = "norm.weight";
  ones->init = "ones";
  g.add("p_norm", std::move(ones), {}, f32({8}));
  EXPECT_EQ(print_value_decl(*g.find("p_weight")),
            "p_weight: (2048,) float32 = param up.weight  # randn seed=7");
  EXPECT_EQ(print_value_decl(*g.find("p_head")),
            "p_head: (4, 8) float32 = param lm_head.weight  # randn seed=3 scale=0.02");
  EXPECT_EQ(print_value_decl(*g.find("c0")),
            "c0: (9,) float32 = const  # values=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, ... (9 "
            "values)]");
  EXPECT_EQ(print_value_decl(*g.find("p_norm")),
            "p_norm: (8,) float32 = param norm.weight  # ones");
}

TEST(Printer, TorchScalarsAreSplicedAtTheirPositions) {
  Graph g;
  add_input(g, "x", {4});
  auto sub = std::make_unique<TorchOp>();
  sub->target = "rsub";
  sub->scalar_args = {{0, 1.0}};
  g.add("r", std::move(sub), {"x"}, f32({4}));
  auto clamp = std::make_unique<TorchOp>();
  clamp->target = "clamp";
  clamp->scalar_args = {{2, 6.0}, {1, 0.0}};
  g.add("c", std::move(clamp), {"r"}, f32({4}));
  EXPECT_EQ(print_node(g, *g.find("r")), "r = rsub(1.0, x) -> (4,) float32\n");
  EXPECT_EQ(print_node(g, *g.find("c")), "c = clamp(r, 0.0, 6.0) -> (4,) float32\n");
}

TEST(Printer, TensorLineForms) {
  Graph g = tensor_graph();
  EXPECT_EQ(print_node(g, *g.find("bias_bc")), "bias_bc = bias[j] -> (16, 64) float32\n");
  EXPECT_EQ(print_node(g, *g.find("red")), "red = sum(prod, axis=-2) -> (16, 1, 16) float32\n");
  EXPECT_EQ(print_node(g, *g.find("total")),
            "total = max(relu, axis=1, keepdim=False) -> (16,) float32\n");
  EXPECT_EQ(print_node(g, *g.find("emb")),
            "emb = gather(table, ids, axis=0) -> (16, 16) float32\n");
  EXPECT_EQ(print_node(g, *g.find("cat")),
            "cat = select(i < 16: relu[i, j], i < 32: emb[i - 16, j], -inf) -> (40, 16) float32\n");
}

TEST(Printer, KnobChoicesPrintBeforeTheNode) {
  Graph g = tile_graph();
  std::string text = print_node(g, *g.find("rms_norm"));
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "# knobs: launch_geometry.BN=128 (heuristic), stage_inputs.STAGE='in0' (pinned)");
}

// A CUDA kernel's header shows its shared memory as the sum it is: the static __shared__ arrays the
// source declares and the dynamic bytes of the launch (smem=0 once hid 8 KB of static arrays).
TEST(Printer, CudaHeaderShowsStaticAndDynamicSharedMemory) {
  auto printed = [](const std::string& declarations) {
    Graph g;
    add_input(g, "x", {4});
    auto op = std::make_unique<CudaOp>();
    op->name = "k";
    op->dynamic_smem = 64;
    op->source = "extern \"C\" __global__ void k(const float* x, float* y) {\n" + declarations +
                 "  extern __shared__ __align__(16) unsigned char tessera_smem[];\n}\n";
    g.add("y", std::move(op), {"x"}, f32({4}));
    return print_graph(g);
  };
  const std::string both = printed("  __shared__ __align__(16) float a_smem[8];\n  __shared__ long long b_smem[2];\n");
  EXPECT_NE(both.find("// kernel k  grid=(1, 1, 1) block=(1, 1, 1) smem=48 static + 64 dynamic  args: "),
            std::string::npos)
      << both;
  EXPECT_NE(printed("").find("smem=0 static + 64 dynamic"), std::string::npos);
  // A declaration of another form is not guessed at.
  EXPECT_NE(printed("  __shared__ float2 c_smem[4];\n").find("smem=? static + 64 dynamic"), std::string::npos);
}

TEST(Printer, NodeWithoutOpDoesNotCrash) {
  Graph g;
  g.add("broken", nullptr, {}, f32({1}));
  EXPECT_EQ(print_node(g, *g.find("broken")), "broken = <no op> -> (1,) float32\n");
  EXPECT_EQ(print_graph(g), "broken = <no op> -> (1,) float32\n\nreturn\n");
}

}  // namespace
}  // namespace tessera

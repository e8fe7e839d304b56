// The uniformity rules (ir/uniformity.h) and the verifier's check that collectives sit under
// uniform control flow in Tile IR.
#include "tessera/ir/uniformity.h"

#include <gtest/gtest.h>

#include "ir_fixtures.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/verifier.h"

namespace tessera {
namespace {

using ir_fixtures::flt;
using ir_fixtures::lit;
using ir_fixtures::var;

const std::vector<TileAxis> kAxes = {TileAxis{"a0", 128, AxisBinding::Thread}, TileAxis{"a1", 64, AxisBinding::Block}};
const Stmt kCombine = Combine{"acc0", CombineFn::Add, CombineScope::Block};

// A Tile IR graph y = x whose Tile body starts with `extra`.
Graph tile_graph_with(Body extra) {
  Graph g;
  ir_fixtures::add_input(g, "x", {64, 128});
  Body tile = {Load{"in0", "x", {var("a1"), var("a0")}}, Write{"y", {var("a1"), var("a0")}, var("in0")}};
  tile.insert(tile.begin(), extra.begin(), extra.end());
  auto op = std::make_unique<TileOp>();
  op->name = "k_y";
  op->body = {Tile{kAxes, std::move(tile)}};
  g.add("y", std::move(op), {"x"}, ir_fixtures::f32({64, 128}));
  g.outputs() = {"y"};
  return g;
}

std::optional<Stmt> divergent(Body extra) {
  return first_divergent_collective({Tile{kAxes, std::move(extra)}});
}

TEST(Uniformity, CollectivesUnderUniformControlAreReachedByEveryThread) {
  Init init{"acc0", flt(0.0)};
  // At the top of the Tile, in a loop with constant bounds, under a condition on a BLOCK axis.
  EXPECT_FALSE(divergent({init, kCombine}));
  EXPECT_FALSE(divergent({init, Loop{"a2", lit(0), lit(4), LoopRole::Free, 0, {kCombine}}}));
  EXPECT_FALSE(divergent({init, Cond{var("a1") < lit(3), {kCombine}, {}}}));
  // A value computed from uniform names is uniform, and so is a loop bounded by it.
  Body uniform_value = {init, Assign{"v0", ElementwiseFn::Mul, {var("a1"), lit(2)}, ValueType::scalar(DType::I64)},
                        Loop{"a2", lit(0), Expr::value("v0"), LoopRole::Free, 0, {kCombine}}};
  EXPECT_FALSE(divergent(uniform_value));
  // After a block Combine the accumulator is uniform: a condition on it is too.
  EXPECT_FALSE(divergent({init, kCombine, Cond{Expr::value("acc0") < flt(1.0), {Stage{}}, {}}}));
}

TEST(Uniformity, CollectivesUnderThreadDependentControlAreFound) {
  Init init{"acc0", flt(0.0)};
  std::optional<Stmt> found = divergent({init, Cond{var("a0") < lit(16), {kCombine}, {}}});
  ASSERT_TRUE(found);
  EXPECT_EQ(print_stmt(*found), "Combine(acc0, op=add)\n");
  // A strided loop starting at the thread axis, and a loop bounded by a loaded per-thread value.
  EXPECT_TRUE(divergent({StridedLoop{"a2", var("a0"), lit(128), lit(128), LoopRole::Free, 0, {AsyncWait{0}}}}));
  EXPECT_TRUE(divergent({Load{"in9", "x", {var("a1"), var("a0")}},
                         Loop{"a2", lit(0), Expr::value("in9"), LoopRole::Free, 0, {init, kCombine}}}));
  // A value computed under thread-dependent control is not uniform, even from uniform operands.
  Body shadowed = {init,
                   Cond{var("a0") < lit(1), {Assign{"v0", ElementwiseFn::Add, {var("a1"), lit(1)}, ValueType::scalar(DType::I64)}}, {}},
                   Cond{Expr::value("v0") < lit(2), {kCombine}, {}}};
  EXPECT_TRUE(divergent(shadowed));
  // The else branch is checked too.
  EXPECT_TRUE(divergent({init, Cond{var("a0") < lit(16), {}, {kCombine}}}));
}

TEST(Uniformity, TheVerifierRefusesADivergentCollectiveInTileIr) {
  Graph ok = tile_graph_with({Init{"acc0", flt(0.0)}, Cond{var("a1") < lit(3), {kCombine}, {}}});
  Status s = verify_graph(ok, Dialect::Tile);
  EXPECT_TRUE(s) << s.message();

  Graph bad = tile_graph_with({Init{"acc0", flt(0.0)}, Cond{var("a0") < lit(16), {kCombine}, {}}});
  s = verify_graph(bad, Dialect::Tile);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().node, "y");
  EXPECT_NE(s.error().message.find("collective statement `Combine(acc0, op=add)` is under a thread-dependent loop "
                                   "or condition"),
            std::string::npos)
      << s.error().message;
}

}  // namespace
}  // namespace tessera

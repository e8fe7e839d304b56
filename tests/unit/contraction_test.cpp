// The contraction analysis (ir/contraction.h): which loop is K, which operands are A and B, which
// Tile axes are M, N and batch, and the rewrite hook the matmul passes share.
#include "tessera/ir/contraction.h"

#include <gtest/gtest.h>

#include "tessera/ir/parser.h"

namespace tessera {
namespace {

Tile tile_of(const std::string& text) {
  Expected<Body> body = parse_body(text, "<test>");
  if (!body) {
    ADD_FAILURE() << body.error().render();
    return Tile{};
  }
  EXPECT_EQ(body->size(), 1u);
  return *(*body)[0].as<Tile>();
}

TEST(Contraction, FindsKAndTheRolesOfAMatmulsAxesAndOperands) {
  Tile t = tile_of(
      "Tile(axes=(a0:64=PARALLEL, a1:48=PARALLEL)):\n"
      "  acc0 = init(0.0)\n"
      "  for a2 in 0..128:  # reduce\n"
      "    in0 = load x[a0, a2]\n"
      "    in1 = load w[a2, a1]\n"
      "    v0 = mul(in0, in1)\n"
      "    acc0 <- add(acc0, v0)\n"
      "  matmul[a0, a1] = acc0\n");
  std::vector<Contraction> cs = find_contractions(t);
  ASSERT_EQ(cs.size(), 1u);
  const Contraction& c = cs[0];
  EXPECT_EQ(c.k, "a2");
  EXPECT_EQ(c.k_extent(), 128);
  EXPECT_TRUE(c.guards.empty());
  EXPECT_EQ(c.index, 1u);
  EXPECT_EQ(c.a().buffer, "x");
  EXPECT_EQ(c.b().buffer, "w");
  EXPECT_EQ(c.a().k_dims, std::vector<size_t>{1});
  EXPECT_EQ(c.b().k_dims, std::vector<size_t>{0});
  EXPECT_EQ(c.m_axes, std::vector<std::string>{"a0"});
  EXPECT_EQ(c.n_axes, std::vector<std::string>{"a1"});
  EXPECT_TRUE(c.batch_axes.empty());
  EXPECT_EQ(c.accumulators, std::vector<std::string>{"acc0"});
  EXPECT_EQ(contraction_loop(t, c).var, "a2");
}

TEST(Contraction, BatchAxesGuardsAndAPrologueOperandThatSharesAsAxes) {
  // A bmm under a tail guard, with a scale loaded along K beside A (the fused RMSNorm weight):
  // B is the first operand whose axes differ from A's.
  Tile t = tile_of(
      "Tile(axes=(a0:128=THREAD, a1:2=BLOCK, a2:8=BLOCK)):\n"
      "  if a0 < 96:\n"
      "    acc0 = init(0.0)\n"
      "    for a3 in 0..64:  # reduce\n"
      "      in0 = load x[a1, a2, a3]\n"
      "      in1 = load g[a3]\n"
      "      v0 = mul(in0, in1)\n"
      "      in2 = load w[a1, a3, a0]\n"
      "      v1 = mul(v0, in2)\n"
      "      acc0 <- add(acc0, v1)\n"
      "    y[a1, a2, a0] = acc0\n");
  std::vector<Contraction> cs = find_contractions(t);
  ASSERT_EQ(cs.size(), 1u);
  const Contraction& c = cs[0];
  EXPECT_EQ(c.guards, std::vector<size_t>{0});
  EXPECT_EQ(c.operands.size(), 3u);
  EXPECT_EQ(c.a().buffer, "x");
  EXPECT_EQ(c.b().buffer, "g");  // first whose axes differ from x's: g uses none
  EXPECT_EQ(c.batch_axes, (std::vector<std::string>{}));
  EXPECT_EQ(c.m_axes, (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(contraction_loop(t, c).var, "a3");
  // The rewrite hook replaces the loop inside the guard and leaves the rest.
  Tile replaced = replace_contraction_loop(t, c, {});
  const auto* guard = replaced.body[0].as<Cond>();
  ASSERT_NE(guard, nullptr);
  EXPECT_EQ(guard->then_body.size(), 2u);
  EXPECT_TRUE(find_contractions(replaced).empty());
}

TEST(Contraction, BatchedMatmulHasBatchAxes) {
  Tile t = tile_of(
      "Tile(axes=(a0:4=PARALLEL, a1:16=PARALLEL, a2:8=PARALLEL)):\n"
      "  acc0 = init(0.0)\n"
      "  for a3 in 0..32:  # reduce\n"
      "    in0 = load q[a0, a1, a3]\n"
      "    in1 = load k[a0, a3, a2]\n"
      "    v0 = mul(in0, in1)\n"
      "    acc0 <- add(acc0, v0)\n"
      "  s[a0, a1, a2] = acc0\n");
  std::vector<Contraction> cs = find_contractions(t);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].batch_axes, std::vector<std::string>{"a0"});
  EXPECT_EQ(cs[0].m_axes, std::vector<std::string>{"a1"});
  EXPECT_EQ(cs[0].n_axes, std::vector<std::string>{"a2"});
}

TEST(Contraction, AKLoopCutIntoSlabsIsStillOne) {
  // chunk_matmul_k's form with a shorter last slab (K = 100, slabs of 32).
  Tile t = tile_of(
      "Tile(axes=(a0:64=PARALLEL, a1:96=PARALLEL)):\n"
      "  acc0 = init(0.0)\n"
      "  for a2 in 0..4:  # reduce\n"
      "    for a3 in 0..min(a2 * (-32) + 100, 32):  # reduce\n"
      "      in0 = load x[a0, a2 * 32 + a3]\n"
      "      in1 = load w[a2 * 32 + a3, a1]\n"
      "      v0 = mul(in0, in1)\n"
      "      acc0 <- add(acc0, v0)\n"
      "  y[a0, a1] = acc0\n");
  std::vector<Contraction> cs = find_contractions(t);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_TRUE(cs[0].chunked());
  EXPECT_EQ(cs[0].k, "a2");
  EXPECT_EQ(cs[0].k_step, "a3");
  EXPECT_EQ(cs[0].slab_depth, 32);
  EXPECT_EQ(cs[0].k_extent(), 128);  // slabs * depth: an upper bound
  EXPECT_EQ(cs[0].m_axes, std::vector<std::string>{"a0"});
  EXPECT_EQ(cs[0].n_axes, std::vector<std::string>{"a1"});
  EXPECT_EQ(cs[0].a().k_dims, std::vector<size_t>{1});
}

TEST(Contraction, ReductionsThatAreNotContractions) {
  // One operand (a row sum), a free loop, a nested loop in the step, an accumulator declared inside
  // the loop, a loop with a non-literal bound: none is a contraction.
  const char* not_contractions[] = {
      "Tile(axes=(a0:16=PARALLEL)):\n  acc0 = init(0.0)\n  for a1 in 0..64:  # reduce\n"
      "    in0 = load x[a0, a1]\n    acc0 <- add(acc0, in0)\n  s[a0] = acc0\n",
      "Tile(axes=(a0:16=PARALLEL)):\n  acc0 = init(0.0)\n  for a1 in 0..64:  # free\n"
      "    in0 = load x[a0, a1]\n    in1 = load w[a1]\n    v0 = mul(in0, in1)\n    acc0 <- add(acc0, v0)\n"
      "  s[a0] = acc0\n",
      "Tile(axes=(a0:16=PARALLEL)):\n  acc0 = init(0.0)\n  for a1 in 0..64:  # reduce\n"
      "    for a2 in 0..2:  # free\n      in0 = load x[a0, a1]\n      in1 = load w[a1, a2]\n"
      "      v0 = mul(in0, in1)\n      acc0 <- add(acc0, v0)\n  s[a0] = acc0\n",
      "Tile(axes=(a0:16=BLOCK)):\n  for a1 in 0..64:  # reduce\n    acc0 = init(0.0)\n"
      "    in0 = load x[a0, a1]\n    in1 = load w[a1]\n    v0 = mul(in0, in1)\n    acc0 <- add(acc0, v0)\n",
      "Tile(axes=(a0:16=PARALLEL)):\n  acc0 = init(0.0)\n  for a1 in 0..min(a0, 64):  # reduce\n"
      "    in0 = load x[a0, a1]\n    in1 = load w[a1]\n    v0 = mul(in0, in1)\n    acc0 <- add(acc0, v0)\n"
      "  s[a0] = acc0\n",
  };
  for (const char* text : not_contractions) EXPECT_TRUE(find_contractions(tile_of(text)).empty()) << text;
}

// Loop IR: attention's P V per head. The heads (a1) index P and V alike: a batch dimension, not
// rows; P's rows are the queries (a2). A decode step (one query a head) has one row; a buffer read
// beside no other operand of its dtype is no product's operand.
TEST(LoopContraction, CountsTheRowsOnlyTheOperandIndexes) {
  auto body_of = [](const std::string& text) {
    Expected<Body> body = parse_body(text, "<test>");
    EXPECT_TRUE(body) << (body ? "" : body.error().render());
    return body ? *body : Body{};
  };
  auto pv = [&](int queries) {
    return body_of("for a1 in 0..32:  # free\n"
                   "  for a2 in 0.." + std::to_string(queries) + ":  # free\n"
                   "    for a3 in 0..64:  # free\n"
                   "      acc0 = init(0.0)\n"
                   "      for a4 in 0..128:  # reduce\n"
                   "        bf16 in0 = load p[0, a1, a2, a4]\n"
                   "        v0 = cast(in0)\n"
                   "        bf16 in1 = load v[0, a1 / 8, a4, a3]\n"
                   "        v1 = cast(in1)\n"
                   "        v2 = mul(v0, v1)\n"
                   "        acc0 <- add(acc0, v2)\n"
                   "      out[0, a1, a2, a3] = acc0\n");
  };
  std::optional<LoopContraction> prefill = loop_contraction_reading(pv(128), "p");
  ASSERT_TRUE(prefill);
  EXPECT_EQ(prefill->depth, 128);
  EXPECT_EQ(prefill->rows, 128);
  EXPECT_EQ(prefill->dtype, DType::BF16);
  std::optional<LoopContraction> decode = loop_contraction_reading(pv(1), "p");
  ASSERT_TRUE(decode);
  EXPECT_EQ(decode->rows, 1);
  // As B (V read along k), the rows counted are V's own columns.
  std::optional<LoopContraction> as_b = loop_contraction_reading(pv(128), "v");
  ASSERT_TRUE(as_b);
  EXPECT_EQ(as_b->rows, 64);
  EXPECT_FALSE(loop_contraction_reading(body_of("for a0 in 0..16:  # free\n"
                                                "  acc0 = init(0.0)\n"
                                                "  for a1 in 0..64:  # reduce\n"
                                                "    bf16 in0 = load p[a0, a1]\n"
                                                "    v0 = cast(in0)\n"
                                                "    f32 in1 = load g[a1]\n"
                                                "    v1 = mul(v0, in1)\n"
                                                "    acc0 <- add(acc0, v1)\n"
                                                "  out[a0] = acc0\n"),
                                        "p"));
}

}  // namespace
}  // namespace tessera

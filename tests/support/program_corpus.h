// The differential corpus: the programs every lowering stage is checked on against the reference
// evaluator (decompose at Tensor IR, lift and fuse at Loop IR). Covers every op of the torch_expr
// coverage list, odd sizes (1, 7, 33, 1000), negative dims, keepdim on and off, broadcasting
// corners, and the programs (shapes reduced where a double-precision evaluator would be slow).
#pragma once

#include <string>
#include <vector>

namespace tessera::test {

struct CorpusProgram {
  const char* name;  // also the test name suffix
  const char* text;  // a torch_expr program
};

inline const std::vector<CorpusProgram>& differential_corpus() {
  static const std::vector<CorpusProgram> corpus = {
      {"SeedReluMatmulBias",
       "x=torch.randn(16,64); bias=torch.randn(64); w=torch.randn(64,16); torch.relu(torch.matmul(x + bias, w))"},
      {"RMSNormModule",
       "nn.RMSNorm(2048)(torch.randn(1,3,2048))"},
      {"SoftmaxModule",
       "torch.nn.Softmax(dim=-1)(torch.randn(1,3,33,77))"},
      {"LayerNormClass",
       "class LN(torch.nn.Module):\n"
       "    def forward(self, x):\n"
       "        m = x.mean(-1, keepdim=True)\n"
       "        v = ((x - m) ** 2).mean(-1, keepdim=True)\n"
       "        return (x - m) * torch.rsqrt(v + 1e-6)\n"
       "LN()(torch.randn(7, 1000))"},
      {"FunctionalRMSNorm",
       "import torch; import torch.nn.functional as F; x=torch.randn((1,7,1024)); w=torch.randn((1024,)); F.rms_norm(x, (1024,), w, eps=1e-6)"},
      {"GatedMLP",
       "import torch.nn.functional as F; x=torch.randn(1,7,64); wg=torch.randn(64,33); wu=torch.randn(64,33); F.silu(torch.matmul(x,wg))*torch.matmul(x,wu)"},
      {"SdpaCausalGqa",
       "import torch.nn.functional as F; q=torch.randn(1,4,7,16); k=torch.randn(1,2,9,16); v=torch.randn(1,2,9,8); F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)"},
      {"SdpaPlainWithScale",
       "import torch.nn.functional as F; q=torch.randn(2,3,5,8); k=torch.randn(2,3,5,8); v=torch.randn(2,3,5,8); F.scaled_dot_product_attention(q, k, v, scale=0.3)"},
      {"BroadcastingCorners_1",
       "a=torch.randn(7,1,33); b=torch.randn(1,5,1); a + b"},
      {"BroadcastingCorners_2",
       "a=torch.randn(1); b=torch.randn(7,33); a * b - 2.5"},
      {"BroadcastingCorners_3",
       "a=torch.randn(7,33); 1 - a / 3"},
      {"UnaryMath_1",
       "x=torch.rand(7,33); torch.sqrt(x) + torch.rsqrt(x + 1) + torch.exp(-x) + torch.tanh(x)"},
      {"UnaryMath_2",
       "x=torch.randn(33); torch.sigmoid(x) * torch.abs(x) + torch.relu(x) + x ** 2"},
      {"UnaryMath_3",
       "import torch.nn.functional as F; x=torch.randn(7,33); F.gelu(x) + F.gelu(x, approximate='tanh')"},
      {"UnaryMath_4",
       "x=torch.randn(7,33); torch.sin(x) * x.cos() + torch.erf(x).square() - torch.square(x).neg()"},
      {"Reductions_1",
       "x=torch.randn(7,33,5); x.sum(-2)"},
      {"Reductions_2",
       "x=torch.randn(7,33,5); x.mean(1, keepdim=True)"},
      {"Reductions_3",
       "x=torch.randn(7,33,5); torch.amax(x, dim=-1, keepdim=False)"},
      {"Reductions_4",
       "x=torch.randn(7,33,5); x.sum()"},
      {"Reductions_5",
       "x=torch.randn(7,33,5); x.mean((0, 2))"},
      {"MatmulShapes_1",
       "a=torch.randn(33); b=torch.randn(33,7); a @ b"},
      {"MatmulShapes_2",
       "a=torch.randn(5,33); b=torch.randn(33); a @ b"},
      {"MatmulShapes_3",
       "a=torch.randn(2,1,5,33); b=torch.randn(3,33,7); torch.matmul(a, b)"},
      {"MatmulShapes_4",
       "a=torch.randn(3,5,33); b=torch.randn(3,33,7); torch.bmm(a, b)"},
      {"LinearAndNorms_1",
       "nn.Linear(33, 7)(torch.randn(2, 5, 33))"},
      {"LinearAndNorms_2",
       "nn.Linear(33, 1, bias=False)(torch.randn(33))"},
      {"LinearAndNorms_3",
       "nn.LayerNorm(33)(torch.randn(7, 33))"},
      {"LinearAndNorms_4",
       "nn.LayerNorm((5, 33))(torch.randn(7, 5, 33))"},
      {"LayoutOps_1",
       "x=torch.randn(6,35); x.reshape(5, 7, 6) * 2"},
      {"LayoutOps_2",
       "x=torch.randn(6,35); x.transpose(0, -1).unsqueeze(1) + 1"},
      {"LayoutOps_3",
       "x=torch.randn(2,3,5); x.view(6, 5).t() * 1"},
      {"SliceCatStackChunk_1",
       "x=torch.randn(4,6); y=torch.randn(4,3); torch.cat([x, y, x], dim=-1)"},
      {"SliceCatStackChunk_2",
       "x=torch.randn(4,6); torch.stack([x, x * 2], dim=1)"},
      {"SliceCatStackChunk_3",
       "x=torch.randn(5,9); x[1:4, ::2] + 1"},
      {"SliceCatStackChunk_4",
       "x=torch.randn(5,9); x[..., -3:] * 3"},
      {"SliceCatStackChunk_5",
       "x=torch.randn(4,6); a, b = x.chunk(2, dim=-1); a * b"},
      {"PermuteExpandSqueezeFlatten_1",
       "x=torch.randn(2,3,4); x.permute(2, 0, 1) * 1"},
      {"PermuteExpandSqueezeFlatten_2",
       "x=torch.randn(3,1); x.expand(3, 5) + 0"},
      {"PermuteExpandSqueezeFlatten_3",
       "x=torch.randn(4,1,6); x.squeeze(1).flatten() * 2"},
      {"WhereMinMaxComparisonsCasts_1",
       "x=torch.randn(4,6); torch.where(x > 0, x, 0.5)"},
      {"WhereMinMaxComparisonsCasts_2",
       "x=torch.randn(4,6); y=torch.randn(6); torch.maximum(x, y) + torch.minimum(x, y)"},
      {"WhereMinMaxComparisonsCasts_3",
       "x=torch.randn(4,6); (x < 0.1).float() + (x >= 0).float()"},
      {"WhereMinMaxComparisonsCasts_4",
       "x=torch.randn(4,6); torch.amin(x, dim=0) + torch.max(x, 0)[0]"},
      {"WhereMinMaxComparisonsCasts_5",
       "x=torch.randn(7,8); torch.log(x.abs() + 1) * torch.reciprocal(x)"},
      {"ArgmaxArgminTakeTheFirstHit_1",
       "x=torch.randn(4,7); torch.max(x, -1)[1]"},
      {"ArgmaxArgminTakeTheFirstHit_2",
       "x=torch.randn(4,7); torch.min(x, 0, keepdim=True)[1]"},
      {"ArgmaxArgminTakeTheFirstHit_3",
       "x=torch.zeros(3,5); torch.max(x, 1)[1]"},
      {"EmbeddingIsAGather",
       "ids=torch.randint(0, 10, (3, 5)); nn.Embedding(10, 8)(ids)"},
      // Typed values: integer arithmetic stays i64, mixed int/float promotes to float, comparisons
      // are bool (cast when they feed arithmetic), and the SwiGLU product of an LLM MLP.
      {"IntegerArithmetic",
       "ids=torch.randint(0, 10, (4, 6)); ids * 3 + 1"},
      {"MixedIntFloat",
       "ids=torch.randint(0, 10, (4, 6)); x=torch.randn(4, 6); x * ids + (ids > 4).float()"},
      {"IntMaskSumAndSelect",
       "x=torch.randn(4, 6); y=torch.randn(4, 6); m=(x > 0).int() * (y < 0.5).int(); "
       "torch.where(m == 1, x, y) + m.sum(-1, keepdim=True)"},
      {"SwiGLUProduct",
       "import torch.nn.functional as F; g=torch.randn(4, 2048); u=torch.randn(4, 2048); F.silu(g) * u"},
      {"ModuleWithRotateHalf",
       "class Block(nn.Module):\n"
       "    def __init__(self):\n"
       "        super().__init__()\n"
       "        self.emb = nn.Embedding(50, 16)\n"
       "        self.norm = nn.RMSNorm(16)\n"
       "        self.proj = nn.Linear(16, 16)\n"
       "    def forward(self, ids):\n"
       "        q = self.proj(self.norm(self.emb(ids)))\n"
       "        x1 = q[..., :8]\n"
       "        x2 = q[..., 8:]\n"
       "        rot = torch.cat((-x2, x1), dim=-1)\n"
       "        return q * 0.5 + rot * 0.25\n"
       "Block()(torch.randint(0, 50, (2, 7)))"},
      // Fidelity to PyTorch (each checked in PyTorch itself by tests/pytorch_oracle): bool and int32
      // sums are int64 and exact, integers stay exact past 2^24, torch.full infers its dtype, 0-dim
      // tensors promote like scalars, rank-0 reductions, norms' float32 default eps and parameters.
      {"BoolSumIsInt64",
       "m=torch.ones(2, 3, dtype=torch.bool); m.sum() + m.sum(-1, keepdim=True)"},
      {"MaskCountsAreExact",
       "x=torch.randn(7, 33); (x > 0).sum(0) * 3 - (x < 0.5).sum(-1, keepdim=True)"},
      {"LargeIntegersStayExact",
       "a=torch.full((2, 3), 16777217, dtype=torch.int64); a + 1 - (a * 2 - 33554434)"},
      {"Int32SumIsExact",
       "a=torch.randint(0, 2147483647, (4, 70), dtype=torch.int32); a.sum(-1) + a.sum()"},
      {"Int32ArithmeticWraps",
       "a=torch.randint(0, 2147483647, (8, 5), dtype=torch.int32); a * 3 + 5 - a"},
      {"FullInfersItsDtype",
       "torch.where(torch.full((2, 3), True), torch.full((2, 3), 7), 0) * 2"},
      {"ZeroDimTensorPromotesLikeAScalar",
       "x=torch.randn(3, 4, dtype=torch.float16); s=torch.randn(()); x * s + x"},
      {"ZeroDimIntKeepsTheTensorsIntType",
       "a=torch.randint(0, 100, (5,), dtype=torch.int32); b=torch.full((), 7, dtype=torch.int64); a * b + a"},
      {"RankZeroReductions",
       "x=torch.randn(()); x.sum(0) + x.sum(-1) + x.max(0)[0] + torch.softmax(x, 0) + x.amin(-1) + x.mean(0)"},
      {"RmsNormHalfInputDefaultEps",
       "F.rms_norm(torch.full((2, 8), 0.05, dtype=torch.bfloat16), (8,)) + F.rms_norm(torch.randn(2, 8, dtype=torch.bfloat16), (8,))"},
      {"RmsNormModuleFloat32WeightOnBFloat16",
       "nn.RMSNorm(64)(torch.randn(3, 64, dtype=torch.bfloat16))"},
      {"LayerNormModuleFloat32WeightOnFloat16",
       "nn.LayerNorm(64)(torch.randn(3, 64, dtype=torch.float16))"},
      {"ViewAfterContiguous",
       "x=torch.randn(2, 3, 4); x.transpose(1, 2).contiguous().view(2, -1) + x.transpose(0, 1).view(3, 2, 2, 2).reshape(2, 12)"}};
  return corpus;
}

inline std::string corpus_test_name(const CorpusProgram& p) { return p.name; }

}  // namespace tessera::test

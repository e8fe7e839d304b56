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
      // The suite's RoPE entries (bench/suite.yaml `*-rope`) at small sizes: rotate_half's cat fuses
      // into each output's kernel (fuse's SELECT RULE), k with fewer heads than q.
      {"RopeRotateHalfTwoOutputs",
       "def rotate_half(x):\n"
       "    x1 = x[..., : x.shape[-1] // 2]\n"
       "    x2 = x[..., x.shape[-1] // 2 :]\n"
       "    return torch.cat((-x2, x1), dim=-1)\n"
       "class RotaryEmbedding(nn.Module):\n"
       "    def forward(self, q, k, cos, sin):\n"
       "        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin\n"
       "RotaryEmbedding()(torch.randn(1, 4, 5, 8), torch.randn(1, 2, 5, 8), torch.randn(5, 8), torch.randn(5, 8))"},
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
       "nn.LayerNorm(64, dtype=torch.float32)(torch.randn(3, 64, dtype=torch.float16))"},
      {"ViewAfterContiguous",
       "x=torch.randn(2, 3, 4); x.transpose(1, 2).contiguous().view(2, -1) + x.transpose(0, 1).view(3, 2, 2, 2).reshape(2, 12)"},
      // The idioms LLM code is written in (docs/torch-ops.md, "Idioms"): each program also
      // runs in PyTorch with the same result.
      {"IdiomArangeDtypesAndSteps",
       "a = torch.arange(5); b = torch.arange(1, 4, 0.5); c = torch.arange(2, 11, 3, dtype=torch.float32)\n"
       "(a * 2 + 1).float().sum() + (b * b).sum() + c.sum()"},
      {"IdiomRopeOuterEinsumCat",
       "import torch\n"
       "inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 16, 2, dtype=torch.int64).float() / 16))\n"
       "t = torch.arange(9, dtype=torch.int64).type_as(inv_freq)\n"
       "freqs = torch.outer(t, inv_freq) + torch.einsum('i,j->ij', t, inv_freq)\n"
       "emb = torch.cat((freqs, freqs), dim=-1)\n"
       "q = torch.randn(2, 9, 16)\n"
       "q * emb.cos() + q * emb.sin()"},
      {"IdiomEinsumAttention",
       "q = torch.randn(1, 2, 5, 8); k = torch.randn(1, 2, 7, 8); v = torch.randn(1, 2, 7, 8); w = torch.randn(8, 6)\n"
       "s = torch.einsum('bhqd,bhkd->bhqk', q, k).softmax(-1)\n"
       "torch.einsum('...d,de->...e', torch.einsum('bhqk,bhkd->bhqd', s, v), w)"},
      {"IdiomRepeatInterleaveGqa",
       "q = torch.randn(1, 4, 5, 8); k = torch.randn(1, 2, 5, 8)\n"
       "k2 = torch.repeat_interleave(k, 2, dim=1)\n"
       "(q @ k2.transpose(-2, -1)) + k.repeat_interleave(3).reshape(1, 2, 5, 24)[..., :5].sum(1, keepdim=True)"},
      {"IdiomTrilTriuMaskedFill",
       "x = torch.randn(2, 5, 7)\n"
       "m = torch.ones(5, 7, dtype=torch.bool).tril(diagonal=1)\n"
       "torch.tril(x, -1) + x.triu(2) + x.masked_fill(~m, float('-inf')).softmax(-1)"},
      {"IdiomBoolMaskLogic",
       "a = torch.randn(4, 6); b = torch.randn(6)\n"
       "m = (a > 0) & (b < 0.5) | ~(a > 1)\n"
       "torch.where(m ^ (b > 0), a, b) + torch.logical_and(a > 0, b > 0).float()"},
      {"IdiomTensorIndexGather",
       "x = torch.randn(6, 3, 2); idx = torch.randint(0, 6, (2, 5)) - 3\n"
       "x[idx] * 2 + torch.randn(8)[torch.randint(0, 8, (2, 5, 1))].unsqueeze(-1)"},
      {"IdiomArgmaxArgminSpellings",
       "x = torch.randn(4, 7)\n"
       "torch.argmax(x, dim=-1, keepdim=True) + x.argmin(0) + torch.argmax(x) + x.argmin(keepdim=True)"},
      {"IdiomMaxValuesIndices",
       "x = torch.randn(4, 7); r = x.max(dim=-1); s = torch.min(x, 0, keepdim=True)\n"
       "r.values * r.indices.float() + s.values.sum() + s.indices.sum()"},
      {"IdiomLogSoftmax",
       "import torch.nn.functional as F\n"
       "x = torch.randn(3, 5)\n"
       "F.log_softmax(x, dim=1) + x.log_softmax(0) + torch.log_softmax(x, -1, dtype=torch.float32)"},
      {"IdiomSdpaBoolMaskGqa",
       "import torch.nn.functional as F\n"
       "q = torch.randn(1, 4, 6, 8); k = torch.randn(1, 2, 6, 8); v = torch.randn(1, 2, 6, 8)\n"
       "m = torch.ones(6, 6, dtype=torch.bool).tril()\n"
       "F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)"},
      {"IdiomSdpaAdditiveMask",
       "import torch.nn.functional as F\n"
       "q = torch.randn(2, 2, 5, 8); k = torch.randn(2, 2, 7, 8); v = torch.randn(2, 2, 7, 4); bias = torch.randn(2, 1, 5, 7)\n"
       "F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.5)"},
      {"IdiomSoftmaxDtypeHalf",
       "import torch.nn.functional as F\n"
       "x = torch.randn(3, 33, dtype=torch.float16); y = torch.randn(3, 33)\n"
       "F.softmax(x, dim=-1, dtype=torch.float32) + y.type_as(x.float()) + x.softmax(0, dtype=torch.float32).type(torch.float32)"},
      {"IdiomSequentialModuleListLoops",
       "import math\n"
       "import torch\n"
       "import torch.nn as nn\n"
       "import torch.nn.functional as F\n"
       "\n"
       "class Block(nn.Module):\n"
       "    def __init__(self, d):\n"
       "        super().__init__()\n"
       "        self.net = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Dropout(0.0), nn.Linear(2 * d, d))\n"
       "    def forward(self, x):\n"
       "        return x + self.net(x) / math.sqrt(2)\n"
       "\n"
       "class Model(nn.Module):\n"
       "    def __init__(self, d, n):\n"
       "        super().__init__()\n"
       "        self.layers = nn.ModuleList([Block(d) for _ in range(n)])\n"
       "    def forward(self, x):\n"
       "        for i, layer in enumerate(self.layers):\n"
       "            if i % 2 == 0:\n"
       "                x = layer(x)\n"
       "            else:\n"
       "                x = F.dropout(layer(x), p=0.1, training=self.training)\n"
       "        return x\n"
       "\n"
       "Model(16, 3)(torch.randn(2, 5, 16))"},
      {"IdiomClampVarStd",
       "x = torch.randn(5, 9)\n"
       "torch.clamp(x, min=-0.5, max=0.7) + x.clip(max=0.2) + x.clamp_min(0.1) + x.var(-1, keepdim=True) + x.std(0, unbiased=False) + torch.var(x, dim=1, correction=0, keepdim=True) + x.std()"},
      {"IdiomAlsoListOps",
       "x = torch.randn(6, 4); y = torch.randn(6, 4)\n"
       "a, b, c = torch.unbind(x.reshape(3, 2, 4), dim=0)\n"
       "z = torch.add(a, b, alpha=2) - torch.sub(2, c) + torch.div(1, y[:2]) + torch.div(y[2:4], 0.3, rounding_mode='trunc')\n"
       "w = torch.concatenate([z, abs(x[:2]) + torch.zeros_like(z) + torch.ones_like(z) * torch.full_like(z, 3.0)], axis=0)\n"
       "w.T.mT + torch.randn(size=(4, 4))"},
      {"IdiomTopkAndTensorLiteral",
       "x = torch.randn(4, 9); w = torch.tensor([[1.0, -2.0, 0.5], [3, 4, 5]])\n"
       "v, i = torch.topk(x, 3, dim=-1)\n"
       "r = x.topk(2, dim=0, largest=False)\n"
       "v * w[0] + i.float() + r.values.sum() + r.indices.sum() + torch.tensor(2) + w.sum()"},
      // A decoder written the way Hugging Face writes it: RoPE from arange/outer/cos/sin, GQA by
      // repeat_interleave, a causal mask from tril + masked_fill(finfo.min), softmax(dtype=float32).to(),
      // an nn.ModuleList built by a comprehension; the same text runs in PyTorch.
      {"IdiomHuggingFaceDecoder",
       "import math\n"
       "import torch\n"
       "import torch.nn as nn\n"
       "import torch.nn.functional as F\n"
       "\n"
       "\n"
       "def rotate_half(x):\n"
       "    x1 = x[..., : x.shape[-1] // 2]\n"
       "    x2 = x[..., x.shape[-1] // 2 :]\n"
       "    return torch.cat((-x2, x1), dim=-1)\n"
       "\n"
       "\n"
       "def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):\n"
       "    cos = cos.unsqueeze(unsqueeze_dim)\n"
       "    sin = sin.unsqueeze(unsqueeze_dim)\n"
       "    q_embed = (q * cos) + (rotate_half(q) * sin)\n"
       "    k_embed = (k * cos) + (rotate_half(k) * sin)\n"
       "    return q_embed, k_embed\n"
       "\n"
       "\n"
       "class RotaryEmbedding(nn.Module):\n"
       "    def __init__(self, dim, base=10000.0):\n"
       "        super().__init__()\n"
       "        self.inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))\n"
       "\n"
       "    def forward(self, x, seq_len):\n"
       "        t = torch.arange(seq_len, dtype=torch.int64).type_as(self.inv_freq)\n"
       "        freqs = torch.outer(t, self.inv_freq)\n"
       "        emb = torch.cat((freqs, freqs), dim=-1)\n"
       "        return emb.cos().to(x.dtype)[None], emb.sin().to(x.dtype)[None]\n"
       "\n"
       "\n"
       "class Attention(nn.Module):\n"
       "    def __init__(self, hidden_size, num_heads, num_key_value_heads):\n"
       "        super().__init__()\n"
       "        self.num_heads = num_heads\n"
       "        self.num_key_value_heads = num_key_value_heads\n"
       "        self.head_dim = hidden_size // num_heads\n"
       "        self.num_key_value_groups = num_heads // num_key_value_heads\n"
       "        self.q_proj = nn.Linear(hidden_size, num_heads * self.head_dim, bias=False)\n"
       "        self.k_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)\n"
       "        self.v_proj = nn.Linear(hidden_size, num_key_value_heads * self.head_dim, bias=False)\n"
       "        self.o_proj = nn.Linear(num_heads * self.head_dim, hidden_size, bias=False)\n"
       "        self.rotary_emb = RotaryEmbedding(self.head_dim)\n"
       "\n"
       "    def forward(self, hidden_states, attention_mask):\n"
       "        bsz, q_len, _ = hidden_states.size()\n"
       "        query_states = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)\n"
       "        key_states = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)\n"
       "        value_states = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)\n"
       "        cos, sin = self.rotary_emb(value_states, q_len)\n"
       "        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)\n"
       "        key_states = torch.repeat_interleave(key_states, self.num_key_value_groups, dim=1)\n"
       "        value_states = value_states.repeat_interleave(self.num_key_value_groups, dim=1)\n"
       "        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)\n"
       "        if attention_mask is not None:\n"
       "            attn_weights = attn_weights + attention_mask\n"
       "        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)\n"
       "        attn_weights = F.dropout(attn_weights, p=0.0, training=self.training)\n"
       "        attn_output = torch.matmul(attn_weights, value_states)\n"
       "        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)\n"
       "        return self.o_proj(attn_output)\n"
       "\n"
       "\n"
       "class MLP(nn.Module):\n"
       "    def __init__(self, hidden_size, intermediate_size):\n"
       "        super().__init__()\n"
       "        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)\n"
       "        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)\n"
       "        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)\n"
       "        self.act_fn = nn.SiLU()\n"
       "\n"
       "    def forward(self, x):\n"
       "        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))\n"
       "\n"
       "\n"
       "class DecoderLayer(nn.Module):\n"
       "    def __init__(self, hidden_size, num_heads, num_key_value_heads, intermediate_size):\n"
       "        super().__init__()\n"
       "        self.self_attn = Attention(hidden_size, num_heads, num_key_value_heads)\n"
       "        self.mlp = MLP(hidden_size, intermediate_size)\n"
       "        self.input_layernorm = nn.RMSNorm(hidden_size, eps=1e-6)\n"
       "        self.post_attention_layernorm = nn.RMSNorm(hidden_size, eps=1e-6)\n"
       "\n"
       "    def forward(self, hidden_states, attention_mask=None):\n"
       "        residual = hidden_states\n"
       "        hidden_states = self.input_layernorm(hidden_states)\n"
       "        hidden_states = self.self_attn(hidden_states, attention_mask)\n"
       "        hidden_states = residual + hidden_states\n"
       "        residual = hidden_states\n"
       "        hidden_states = self.post_attention_layernorm(hidden_states)\n"
       "        hidden_states = self.mlp(hidden_states)\n"
       "        return residual + hidden_states\n"
       "\n"
       "\n"
       "class Model(nn.Module):\n"
       "    def __init__(self, hidden_size=32, num_heads=4, num_key_value_heads=2, intermediate_size=64, num_layers=2):\n"
       "        super().__init__()\n"
       "        self.layers = nn.ModuleList(\n"
       "            [DecoderLayer(hidden_size, num_heads, num_key_value_heads, intermediate_size) for _ in range(num_layers)]\n"
       "        )\n"
       "        self.norm = nn.RMSNorm(hidden_size, eps=1e-6)\n"
       "\n"
       "    def forward(self, hidden_states):\n"
       "        seq_len = hidden_states.shape[1]\n"
       "        causal = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))\n"
       "        mask = torch.zeros(seq_len, seq_len, dtype=hidden_states.dtype)\n"
       "        mask = mask.masked_fill(~causal, torch.finfo(hidden_states.dtype).min)\n"
       "        for decoder_layer in self.layers:\n"
       "            hidden_states = decoder_layer(hidden_states, attention_mask=mask)\n"
       "        return self.norm(hidden_states)\n"
       "\n"
       "\n"
       "Model()(torch.randn(1, 7, 32))"},
      // Floor division and remainder (Python's // and %): integer types stay integer, floor
      // semantics for negatives, floats as PyTorch's div_floor_floating. Divisors are odd, never 0.
      {"FloorDivInt64",
       "a=torch.randint(0,100,(7,33)) - 50; b=torch.randint(0,7,(33,)) * 2 - 5; "
       "(a // b) * 1000 + a % b + (a // -3) * 7 + 100 // b - torch.remainder(-9, b)"},
      {"FloorDivInt32",
       "a=torch.randint(0,1000,(5,17),dtype=torch.int32) - 500; b=torch.randint(0,4,(5,1),dtype=torch.int32) * 2 + 1; "
       "torch.floor_divide(a, b) + torch.div(a, -b, rounding_mode='floor') * 3 + (a % 4).floor()"},
      {"FloorDivFloat",
       "x=torch.randn(7,33); y=torch.randn(33); "
       "x * 8 // y + torch.floor(x * 4) + (x * 8) % 0.75 + torch.remainder(x, -2.5) + 3 // y"},
      {"FloorDivHalfAndBool",
       "x=torch.randn(7,33,dtype=torch.float16); m=torch.randn(7,33) > 0; (x * 8 // 3).float() + (m // 2) + (m % 3) * 2"},
      {"FloorDivAugmentedAssign",
       "def f(a):\n"
       "    a //= 3\n"
       "    a %= 5\n"
       "    return a * 10 + a.div(2, rounding_mode='floor')\n"
       "f(torch.randint(0, 100, (9,)) - 50)"},
      // float64: dtype=torch.float64 / torch.double, .double(), .to(torch.float64); f64 wins over
      // f32 operands; elementwise math, floor division and reductions computed in double.
      {"Float64Elementwise",
       "x=torch.randn(7,33,dtype=torch.float64); y=torch.randn(33); "
       "(x * y + 0.1).exp() / (x.abs() + 1) + torch.floor(x * 3) + x // 0.3 + torch.sigmoid(x) * torch.tanh(y)"},
      {"Float64Reductions",
       "x=torch.randn(5,40,dtype=torch.double); "
       "torch.softmax(x, -1) + x.sum(-1, keepdim=True) + x.mean(0) + x.amax(-1, keepdim=True) + torch.sqrt(x * x).amin(0)"},
      {"Float64Conversions",
       "x=torch.randn(7,33); n=torch.randint(0,9,(33,)); "
       "(x.double() * 1e-3 + x.to(torch.float64).sum(0) + n + x.to(dtype=torch.double) ** 2).float() + x"},
      // Module conversion (docs/torch-ops.md, "Module conversion and mode"): a Hugging Face-style
      // model converted with .to(torch.bfloat16) (user classes, nn.ModuleList and builtin modules
      // inside), an fp16 nn.Sequential with .half().eval(), a model with an embedding converted with
      // .double() (the integer ids stay int64), and conversions after a first call made the
      // parameters. Half-precision outputs end in softmax or sigmoid: the Tensor IR interpreter keeps
      // half values unrounded, so an output near zero would fail decompose's relative check.
      {"ConvertModuleToBfloat16Block",
       "import torch\n"
       "import torch.nn as nn\n"
       "import torch.nn.functional as F\n"
       "\n"
       "\n"
       "class MLP(nn.Module):\n"
       "    def __init__(self, hidden_size, intermediate_size):\n"
       "        super().__init__()\n"
       "        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)\n"
       "        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)\n"
       "        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)\n"
       "\n"
       "    def forward(self, x):\n"
       "        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))\n"
       "\n"
       "\n"
       "class Model(nn.Module):\n"
       "    def __init__(self, hidden_size=32, intermediate_size=64, num_layers=2, vocab_size=16):\n"
       "        super().__init__()\n"
       "        self.layers = nn.ModuleList([MLP(hidden_size, intermediate_size) for _ in range(num_layers)])\n"
       "        self.norms = nn.ModuleList([nn.RMSNorm(hidden_size, eps=1e-6) for _ in range(num_layers)])\n"
       "        self.norm = nn.RMSNorm(hidden_size, eps=1e-6)\n"
       "        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)\n"
       "        self.dropout = nn.Dropout(0.1)\n"
       "\n"
       "    def forward(self, hidden_states):\n"
       "        for norm, mlp in zip(self.norms, self.layers):\n"
       "            hidden_states = hidden_states + self.dropout(mlp(norm(hidden_states)))\n"
       "        return torch.softmax(self.lm_head(self.norm(hidden_states)), dim=-1)\n"
       "\n"
       "\n"
       "model = Model(num_layers=1).to(torch.bfloat16).eval()\n"
       "model(torch.randn(1, 7, 32, dtype=torch.bfloat16))"},
      {"ConvertModuleHalfSequentialEval",
       "model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Dropout(0.1), nn.Linear(32, 8), nn.LayerNorm(8), "
       "nn.Softmax(dim=-1)).half().eval()\n"
       "model(torch.randn(3, 5, 16, dtype=torch.float16))"},
      {"ConvertModuleDoubleEmbedding",
       "class Net(nn.Module):\n"
       "    def __init__(self, vocab, d):\n"
       "        super().__init__()\n"
       "        self.embed = nn.Embedding(vocab, d)\n"
       "        self.norm = nn.LayerNorm(d)\n"
       "        self.head = nn.Linear(d, vocab, bias=False)\n"
       "\n"
       "    def forward(self, ids):\n"
       "        return torch.softmax(self.head(self.norm(self.embed(ids))), -1)\n"
       "\n"
       "\n"
       "net = Net(50, 16)\n"
       "net.double()\n"
       "net(torch.randint(0, 50, (2, 9)))"},
      {"ConvertModuleAfterCall",
       "m = nn.Linear(24, 12)\n"
       "x = torch.randn(5, 24)\n"
       "a = m(x)\n"
       "m.double()\n"
       "c = m(x.double())\n"
       "m.half()\n"
       "b = m(x.half())\n"
       "n = nn.RMSNorm(12, dtype=torch.bfloat16).float()\n"
       "(a, c, torch.sigmoid(b), n(a))"},
      // Empty tensors (docs/torch-ops.md, "Empty tensors"): made by slices, narrow and split as in
      // PyTorch and folded away by the frontend. Every input is also used non-emptily (an input
      // only read through an empty slice would be pruned).
      {"EmptyPartialRopePassThrough",
       "class Rope(nn.Module):\n"
       "    def __init__(self, hidden=16, heads=2, rotary_dim=8):\n"
       "        super().__init__()\n"
       "        self.heads = heads\n"
       "        self.head_dim = hidden // heads\n"
       "        self.rotary_dim = rotary_dim\n"
       "        self.q_proj = nn.Linear(hidden, hidden)\n"
       "\n"
       "    def forward(self, x, cos, sin):\n"
       "        b, s, _ = x.shape\n"
       "        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)\n"
       "        q_rot, q_pass = q[..., : self.rotary_dim], q[..., self.rotary_dim :]\n"
       "        x1 = q_rot[..., : q_rot.shape[-1] // 2]\n"
       "        x2 = q_rot[..., q_rot.shape[-1] // 2 :]\n"
       "        q_embed = q_rot * cos + torch.cat((-x2, x1), dim=-1) * sin\n"
       "        return torch.cat((q_embed, q_pass), dim=-1)\n"
       "\n"
       "Rope()(torch.randn(1, 5, 16), torch.randn(5, 8), torch.randn(5, 8))"},
      {"EmptyKvCacheFirstStep",
       "import torch.nn.functional as F\n"
       "def step(q, k, v):\n"
       "    past_k = torch.zeros(1, 2, 0, 8)\n"
       "    cache_v = torch.zeros(1, 2, 4, 8)\n"
       "    keys = torch.cat((past_k, k), dim=2)\n"
       "    values = torch.cat((cache_v[:, :, :0], v), dim=2)\n"
       "    return F.scaled_dot_product_attention(q, keys, values, is_causal=True)\n"
       "step(torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8), torch.randn(1, 2, 3, 8))"},
      {"EmptyReductionsInside",
       "def f(x, y):\n"
       "    e = x[:, 3:3]\n"
       "    s = e.sum(-1, keepdim=True)\n"
       "    out = y * torch.exp(s) + x + e.logsumexp(-1, keepdim=True).exp() + x.narrow(1, 1, 0).sum()\n"
       "    return out, e.mean(-1), e.any(-1), e.all(-1), e.var(-1), (e > 0).sum(-1)\n"
       "f(torch.randn(4, 6), torch.randn(4, 6))"},
      {"EmptyContractionK0",
       "import torch.nn.functional as F\n"
       "class M(nn.Module):\n"
       "    def __init__(self):\n"
       "        super().__init__()\n"
       "        self.proj = nn.Linear(8, 5)\n"
       "\n"
       "    def forward(self, x, w, b):\n"
       "        e = x[:, 8:]\n"
       "        z = e @ w[:0]\n"
       "        l = F.linear(e, w.t()[:, :0], b)\n"
       "        ein = torch.einsum('ik,jk->ij', e, w.t()[:, 4:])\n"
       "        return self.proj(x) + z + l + ein + w.sum(0)\n"
       "M()(torch.randn(3, 8), torch.randn(4, 5), torch.randn(5))"},
      {"EmptySplitPieces",
       "x=torch.randn(4, 6); a, b, c = x.split([3, 0, 3], dim=1); "
       "torch.cat((a, b.exp(), c * 2, x[:, 2:1]), 1) + torch.cat((x[:, 5:3], x[:, :2]), 1).sum(-1, keepdim=True)"},
      // narrow, any/all and logsumexp on non-empty values: rows of -inf give -inf (PyTorch's
      // infinite-max rule), integer inputs are cast to float32.
      {"LogsumexpAnyAllNarrow",
       "x=torch.randn(5, 7); n=torch.randint(0, 3, (5, 7)); "
       "y = torch.where(torch.arange(5)[:, None] < 2, float('-inf'), x); "
       "(y.logsumexp(-1), x.logsumexp((0, 1), keepdim=True), torch.logsumexp(n, 0), (n > 1).any(-1), n.all(0), "
       "torch.any(x > 2), x.narrow(1, -3, 2) * 2)"},
      // PyTorch's type promotion where the outside checks found Tessera apart from it: where of an
      // integer tensor and a float scalar is float, integer tensors (randint with a low bound)
      // through exp/sqrt, cat of mixed dtypes.
      {"PromotionWhereExpCat",
       "m=torch.randint(0, 5, (4, 6)); a=torch.randn(4, 6); b=torch.randn(4, 6, dtype=torch.float16); "
       "h=torch.randn(4, 6, dtype=torch.bfloat16); "
       "n=torch.randint(1, 10, (4, 6), dtype=torch.int32); "
       "(torch.where(m > 2, m, 0.5), torch.where(m > 2, 1.5, m), torch.exp(m) + torch.sqrt(m), n.sqrt() * n.rsqrt(), "
       "torch.cat([a, b], 0), torch.cat([m, a], 1), torch.stack([b, h]))"},
      // What PyTorch runs and Tessera refused: F.softmax / F.log_softmax / nn.Softmax without dim
      // (PyTorch's implicit dim: 0 for 3-D, 1 for 4-D), F.linear with a 1-D weight, attention whose
      // query has more batch dims than key and value.
      {"ImplicitSoftmaxDimVectorLinearBroadcastSdpa",
       "import torch.nn.functional as F; x=torch.randn(3, 4, 5); y=torch.randn(2, 3, 4, 5); w=torch.randn(5); "
       "c=torch.randn(()); q=torch.randn(2, 3, 5, 8); k=torch.randn(3, 7, 8); v=torch.randn(3, 7, 6); "
       "(F.softmax(x), F.log_softmax(y), nn.Softmax()(y), F.linear(x, w), F.linear(w, w, c), "
       "F.scaled_dot_product_attention(q, k, v))"}};
  return corpus;
}

inline std::string corpus_test_name(const CorpusProgram& p) { return p.name; }

}  // namespace tessera::test

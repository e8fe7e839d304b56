#!/usr/bin/env python3
"""Writes bench/suite.yaml: the LLM kernel suite (format: bench/README.md, "Suite").

Every entry is one PyTorch program (valid for `tessera compile -c` and for real PyTorch) holding
one piece of a decoder LLM's forward pass at one model's real sizes, for prefill at several
sequence lengths and for one decode step over a KV cache. Python 3 standard library only; the
output is deterministic, and tests check that the committed suite.yaml equals it.

    python3 bench/make_suite.py > bench/suite.yaml        (or: --out bench/suite.yaml)
"""

import argparse
import sys

# The sizes each program needs, copied from the publishers' config.json files so that the repo does
# not depend on them. `head_dim` is hidden_size / num_attention_heads (none of these configs gives
# it explicitly); q/k/v bias follows the architecture (Qwen2ForCausalLM always has it,
# LlamaForCausalLM has attention_bias: false).
MODELS = [
    {
        # TinyLlama/TinyLlama-1.1B-Chat-v1.0, config.json (LlamaForCausalLM)
        "name": "TinyLlama-1.1B", "slug": "tinyllama",
        "hidden": 2048, "intermediate": 5632, "heads": 32, "kv_heads": 4, "head_dim": 64,
        "vocab": 32000, "rms_eps": 1e-05, "qkv_bias": False,
    },
    {
        # Qwen/Qwen2.5-7B, config.json (Qwen2ForCausalLM: q/k/v projections carry a bias)
        "name": "Qwen2.5-7B", "slug": "qwen2.5-7b",
        "hidden": 3584, "intermediate": 18944, "heads": 28, "kv_heads": 4, "head_dim": 128,
        "vocab": 152064, "rms_eps": 1e-06, "qkv_bias": True,
    },
    {
        # meta-llama/Meta-Llama-3-8B, config.json (LlamaForCausalLM, attention_bias: false)
        "name": "Llama-3-8B", "slug": "llama3-8b",
        "hidden": 4096, "intermediate": 14336, "heads": 32, "kv_heads": 8, "head_dim": 128,
        "vocab": 128256, "rms_eps": 1e-05, "qkv_bias": False,
    },
]

PREFILL_SEQS = [32, 128, 512, 2048]   # query tokens, batch 1
DECODE_KVS = [512, 2048]              # KV-cache positions the decode step attends (new token included)
DTYPES = ["f32", "bf16"]

# (kind, family) in the order entries are written. `rmsnorm` stands for both the input and the
# post-attention RMSNorm of a layer: they are the same program (same size, eps and shape).
KINDS = [
    ("rmsnorm", "norm"),
    ("qkv_proj", "projection"),
    ("rope", "elementwise"),
    ("attention", "attention"),
    ("o_proj_residual", "projection"),
    ("swiglu", "mlp"),
    ("down_proj_residual", "projection"),
    ("final_norm_lm_head", "projection"),
    ("softmax", "softmax"),
    ("decoder_layer", "layer"),
]

# The quick tier: every kind once per model (30 entries), at a mid size. Each model takes the
# configurations in a different rotation so that every kind is seen at prefill 128, prefill 512 and
# decode (KV 512), and the dtype alternates so that both dtypes appear for every kind.
QUICK_CONFIGS = [("prefill", 128, 0), ("prefill", 512, 0), ("decode", 1, 512)]

# Tessera's IR holds computed intermediates of at most 2^44 elements (framework/src/ir/verifier.cpp),
# and a Linear lowers through its (tokens, out, in) iteration space: a program whose Linear exceeds
# that does not compile, so its entries are left out (listed in the suite's header and in
# bench/README.md). No entry of today's models and lengths comes near it.
MAX_ITERATION_SPACE = 1 << 44

PREAMBLE = """import torch
import torch.nn as nn
import torch.nn.functional as F
"""

ROTATE_HALF = """def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)
"""


class Shape:
    """The sizes of one entry: model dims plus its phase, query tokens and attended positions."""

    def __init__(self, model, phase, seq, kv, dtype):
        self.m = model
        self.phase = phase
        self.seq = seq            # query tokens (1 for decode)
        self.kv = kv              # 0 for prefill
        self.dtype = dtype
        self.keys = seq if phase == "prefill" else kv   # positions every query attends at most

    # `, dtype=torch.bfloat16` for bf16 programs; f32 programs use PyTorch's default dtype.
    def dt(self):
        return ", dtype=torch.bfloat16" if self.dtype == "bf16" else ""

    def randn(self, *dims):
        return "torch.randn(" + ", ".join(str(d) for d in dims) + self.dt() + ")"

    def linear(self, name, fan_in, fan_out, bias=False):
        b = "True" if bias else "False"
        return f"        self.{name} = nn.Linear({fan_in}, {fan_out}, bias={b}{self.dt()})\n"

    def rmsnorm(self, name):
        return f"        self.{name} = nn.RMSNorm({self.m['hidden']}, eps={self.m['rms_eps']!r}{self.dt()})\n"


def module(name, init_lines, forward_sig, body, helpers=""):
    init = ""
    if init_lines:
        init = "    def __init__(self):\n        super().__init__()\n" + "".join(init_lines)
    return (PREAMBLE + helpers + f"class {name}(nn.Module):\n" + init +
            f"    def forward(self, {forward_sig}):\n" + body)


def program(kind, s):
    """Returns (program text, flops or None) of one kind at one shape."""
    m = s.m
    hid, inter, hq, hkv, hd = m["hidden"], m["intermediate"], m["heads"], m["kv_heads"], m["head_dim"]
    S = s.seq
    qdim, kvdim = hq * hd, hkv * hd
    causal = s.phase == "prefill"
    # Multiply-adds count 2 FLOPs. Causal attention computes only the unmasked score positions
    # (S(S+1)/2 per head); a decode query attends every cached position.
    pairs = S * (S + 1) // 2 if causal else S * s.keys
    attn_flops = 4 * hq * hd * pairs
    qkv_flops = 2 * S * hid * (qdim + 2 * kvdim)
    o_flops = 2 * S * qdim * hid
    mlp_up_flops = 2 * S * hid * 2 * inter
    down_flops = 2 * S * inter * hid
    sdpa = ("F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)" if causal
            else "F.scaled_dot_product_attention(q, k, v, enable_gqa=True)")

    if kind == "rmsnorm":
        text = module("RMSNormBlock", [s.rmsnorm("norm")], "x", "        return self.norm(x)\n")
        return text + f"RMSNormBlock()({s.randn(1, S, hid)})\n", None
    if kind == "qkv_proj":
        bias = m["qkv_bias"]
        text = module("QKVProjection",
                      [s.linear("q_proj", hid, qdim, bias), s.linear("k_proj", hid, kvdim, bias),
                       s.linear("v_proj", hid, kvdim, bias)],
                      "x", "        return self.q_proj(x), self.k_proj(x), self.v_proj(x)\n")
        return text + f"QKVProjection()({s.randn(1, S, hid)})\n", qkv_flops
    if kind == "rope":
        text = module("RotaryEmbedding", [], "q, k, cos, sin",
                      "        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin\n",
                      helpers=ROTATE_HALF)
        args = [s.randn(1, hq, S, hd), s.randn(1, hkv, S, hd), s.randn(S, hd), s.randn(S, hd)]
        return text + f"RotaryEmbedding()({', '.join(args)})\n", None
    if kind == "attention":
        text = module("Attention", [], "q, k, v", f"        return {sdpa}\n")
        args = [s.randn(1, hq, S, hd), s.randn(1, hkv, s.keys, hd), s.randn(1, hkv, s.keys, hd)]
        return text + f"Attention()({', '.join(args)})\n", attn_flops
    if kind == "o_proj_residual":
        text = module("OutputProjection", [s.linear("o_proj", qdim, hid)], "attn, residual",
                      "        return residual + self.o_proj(attn)\n")
        return text + f"OutputProjection()({s.randn(1, S, qdim)}, {s.randn(1, S, hid)})\n", o_flops
    if kind == "swiglu":
        text = module("GateUp", [s.linear("gate_proj", hid, inter), s.linear("up_proj", hid, inter)], "x",
                      "        return F.silu(self.gate_proj(x)) * self.up_proj(x)\n")
        return text + f"GateUp()({s.randn(1, S, hid)})\n", mlp_up_flops
    if kind == "down_proj_residual":
        text = module("DownProjection", [s.linear("down_proj", inter, hid)], "h, residual",
                      "        return residual + self.down_proj(h)\n")
        return text + f"DownProjection()({s.randn(1, S, inter)}, {s.randn(1, S, hid)})\n", down_flops
    if kind == "final_norm_lm_head":
        text = module("LMHead", [s.rmsnorm("norm"), s.linear("lm_head", hid, m["vocab"])], "x",
                      "        return self.lm_head(self.norm(x))\n")
        return text + f"LMHead()({s.randn(1, S, hid)})\n", 2 * S * hid * m["vocab"]
    if kind == "softmax":
        text = module("ScoreSoftmax", [], "scores", "        return torch.softmax(scores, dim=-1)\n")
        return text + f"ScoreSoftmax()({s.randn(1, hq, S, s.keys)})\n", None
    if kind == "decoder_layer":
        return decoder_layer(s, sdpa), qkv_flops + attn_flops + o_flops + mlp_up_flops + down_flops
    raise ValueError(kind)


def decoder_layer(s, sdpa):
    """One Llama/Qwen2 decoder layer. Decode appends the new token's k and v to a cache holding
    kv - 1 earlier positions (as a concatenating KV cache does) and returns the hidden state."""
    m = s.m
    hid, inter, hq, hkv, hd = m["hidden"], m["intermediate"], m["heads"], m["kv_heads"], m["head_dim"]
    S = s.seq
    bias = m["qkv_bias"]
    init = [s.rmsnorm("input_layernorm"),
            s.linear("q_proj", hid, hq * hd, bias), s.linear("k_proj", hid, hkv * hd, bias),
            s.linear("v_proj", hid, hkv * hd, bias), s.linear("o_proj", hq * hd, hid),
            s.rmsnorm("post_attention_layernorm"),
            s.linear("gate_proj", hid, inter), s.linear("up_proj", hid, inter), s.linear("down_proj", inter, hid)]
    decode = s.phase == "decode"
    sig = "x, cos, sin, k_cache, v_cache" if decode else "x, cos, sin"
    body = (
        "        h = self.input_layernorm(x)\n"
        f"        q = self.q_proj(h).view(1, {S}, {hq}, {hd}).transpose(1, 2)\n"
        f"        k = self.k_proj(h).view(1, {S}, {hkv}, {hd}).transpose(1, 2)\n"
        f"        v = self.v_proj(h).view(1, {S}, {hkv}, {hd}).transpose(1, 2)\n"
        "        q = q * cos + rotate_half(q) * sin\n"
        "        k = k * cos + rotate_half(k) * sin\n")
    if decode:
        body += ("        k = torch.cat((k_cache, k), dim=2)\n"
                 "        v = torch.cat((v_cache, v), dim=2)\n")
    body += (
        f"        a = {sdpa}\n"
        f"        x = x + self.o_proj(a.transpose(1, 2).reshape(1, {S}, {hq * hd}))\n"
        "        h = self.post_attention_layernorm(x)\n"
        "        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))\n")
    text = module("DecoderLayer", init, sig, body, helpers=ROTATE_HALF)
    args = [s.randn(1, S, hid), s.randn(S, hd), s.randn(S, hd)]
    if decode:
        args += [s.randn(1, hkv, s.kv - 1, hd), s.randn(1, hkv, s.kv - 1, hd)]
    return text + f"DecoderLayer()({', '.join(args)})\n"


def left_out_reason(kind, s):
    """Why Tessera cannot compile this entry, or None."""
    if kind == "final_norm_lm_head":
        space = s.seq * s.m["vocab"] * s.m["hidden"]
        if space > MAX_ITERATION_SPACE:
            return (f"lm_head's iteration space {s.seq} x {s.m['vocab']} x {s.m['hidden']} = {space} "
                    f"elements is over Tessera's 2^44 limit")
    return None


def configs():
    for seq in PREFILL_SEQS:
        yield ("prefill", seq, 0)
    for kv in DECODE_KVS:
        yield ("decode", 1, kv)


def is_quick(model_index, kind_index, phase, seq, kv, dtype):
    rotation = (model_index + kind_index) % len(QUICK_CONFIGS)
    quick_dtype = DTYPES[(model_index + kind_index) % 2]
    return QUICK_CONFIGS[rotation] == (phase, seq, kv) and dtype == quick_dtype


def entries(left_out=None):
    """The suite's entries; the ones Tessera cannot compile go to `left_out` as (id, reason)."""
    out = []
    for dtype in DTYPES:
        for mi, model in enumerate(MODELS):
            for phase, seq, kv in configs():
                shape = Shape(model, phase, seq, kv, dtype)
                where = f"prefill{seq}" if phase == "prefill" else f"decode-kv{kv}"
                for ki, (kind, family) in enumerate(KINDS):
                    entry_id = f"{model['slug']}-{where}-{dtype}-{kind}"
                    reason = left_out_reason(kind, shape)
                    if reason:
                        if left_out is not None:
                            left_out.append((entry_id, reason))
                        continue
                    text, flops = program(kind, shape)
                    quick = is_quick(mi, ki, phase, seq, kv, dtype)
                    out.append({
                        "id": entry_id,
                        "family": family, "model": model["name"], "phase": phase, "seq": seq, "kv": kv,
                        "dtype": dtype, "tiers": ["quick", "full"] if quick else ["full"],
                        "flops": flops, "program": text,
                    })
    return out


def render(items, left_out):
    lines = [
        "# The LLM kernel suite: generated by bench/make_suite.py (do not edit by hand; format and",
        "# method in bench/README.md, \"Suite\").",
    ]
    if left_out:
        lines.append("# Left out (Tessera cannot compile them yet):")
        lines += [f"#   {entry_id}: {reason}" for entry_id, reason in left_out]
    lines += ["version: 1", "entries:"]
    for e in items:
        lines.append(f"  - id: {e['id']}")
        for key in ("family", "model", "phase", "seq", "kv", "dtype"):
            lines.append(f"    {key}: {e[key]}")
        lines.append(f"    tiers: [{', '.join(e['tiers'])}]")
        if e["flops"] is not None:
            lines.append(f"    flops: {e['flops']}")
        lines.append("    program: |")
        for line in e["program"].splitlines():
            lines.append(("      " + line) if line else "")
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write here instead of stdout")
    args = parser.parse_args(argv)
    left_out = []
    text = render(entries(left_out), left_out)
    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

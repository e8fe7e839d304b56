#!/usr/bin/env python3
"""Check Tessera's hf frontend against Hugging Face transformers.

    python3 bench/hf_check.py [--tessera build/bin/tessera] [--target sim|cuda] [--dtype f32|bf16]
        [--seq-len 8] [--cache-len 16] [--seed N] [--work-dir DIR] [--keep]

For each architecture (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM) it builds a tiny random
model from a config (2 layers, hidden 64, 4 heads, 2 KV heads, vocab 128), perturbs every parameter
(norm weights too, so none is the identity), saves it with `save_pretrained` (safetensors), and runs

  * prefill: `tessera run DIR --seq-len S --save-io IO`, then the model in transformers on the token
    ids Tessera used (read back from IO), comparing the logits;
  * decode: `tessera run DIR --decode --cache-len C --save-io IO`: one step at the position Tessera
    drew, with a KV cache of zeros (Tessera's cache inputs), against transformers given a cache of
    zeros of that length, comparing the logits and the new cache entries.

Tolerances (max |a - b| / max |b| over the tensor): 1e-4 for f32, 2e-2 for bf16.
Exit status: 0 all checks pass, 1 a mismatch or a Tessera failure, 77 transformers / PyTorch missing
(the reason is printed).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

TOLERANCE = {"f32": 1e-4, "bf16": 2e-2}
ARCHITECTURES = ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM")


def tiny_config(architecture):
    common = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=128, max_position_embeddings=256, rms_norm_eps=1e-5,
                  tie_word_embeddings=False, hidden_act="silu")
    if architecture == "LlamaForCausalLM":
        from transformers import LlamaConfig
        return LlamaConfig(rope_theta=10000.0, **common)
    if architecture == "Qwen2ForCausalLM":
        from transformers import Qwen2Config
        common["tie_word_embeddings"] = True   # as Qwen2.5-0.5B
        return Qwen2Config(rope_theta=1000000.0, **common)
    from transformers import Qwen3Config
    return Qwen3Config(rope_theta=1000000.0, head_dim=16, **common)


def build_model(architecture, seed):
    import torch
    import transformers
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(tiny_config(architecture)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / (p.shape[-1] ** 0.5))
    return model


def run_tessera(tessera, model_dir, flags, io_path, target, dtype, seed=0):
    cmd = [tessera, "run", model_dir, *flags, "--target", target, "--dtype", dtype, "--seed", str(seed),
           "--save-io", io_path]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("tessera failed (exit %d): %s\n%s%s" % (r.returncode, " ".join(cmd), r.stdout, r.stderr))


def relative_error(actual, expected):
    import torch
    a, b = actual.double(), expected.double()
    scale = b.abs().max().item() or 1.0
    return (a - b).abs().max().item() / scale


def check_prefill(args, architecture, model, model_dir):
    import torch
    from safetensors.torch import load_file
    io = os.path.join(model_dir, "prefill-io.safetensors")
    run_tessera(args.tessera, model_dir, ["--seq-len", str(args.seq_len)], io, args.target, args.dtype,
                 seed=args.seed)
    tensors = load_file(io)
    ids = tensors["input_ids"].long()
    with torch.no_grad():
        expected = model(input_ids=ids).logits
    return relative_error(tensors["logits"].float(), expected.float())


def check_decode(args, architecture, model, model_dir):
    import torch
    from safetensors.torch import load_file
    from transformers import DynamicCache
    io = os.path.join(model_dir, "decode-io.safetensors")
    run_tessera(args.tessera, model_dir, ["--decode", "--cache-len", str(args.cache_len)], io, args.target, args.dtype,
                 seed=args.seed)
    tensors = load_file(io)
    ids = tensors["input_ids"].long()
    pos = int(tensors["position"].item())
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    dtype = next(model.parameters()).dtype
    cache = DynamicCache(config=cfg)
    if pos > 0:  # Tessera's caches start as zeros: the same past in transformers
        for layer in range(cfg.num_hidden_layers):
            zeros = torch.zeros(1, cfg.num_key_value_heads, pos, head_dim, dtype=dtype)
            cache.update(zeros, zeros.clone(), layer)
    with torch.no_grad():
        out = model(input_ids=ids, past_key_values=cache, position_ids=torch.tensor([[pos]]),
                    cache_position=torch.tensor([pos]), use_cache=True)
    worst = relative_error(tensors["logits"].float(), out.logits.float())
    for layer in range(cfg.num_hidden_layers):
        layer_cache = out.past_key_values.layers[layer]
        for name, ref in (("k", layer_cache.keys), ("v", layer_cache.values)):
            mine = tensors["l%d_%s_cache_next" % (layer, name)][:, :, pos, :]
            worst = max(worst, relative_error(mine.float(), ref[:, :, pos, :].float()))
    return worst, pos


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tessera", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "tessera"))
    parser.add_argument("--target", default="sim", choices=("sim", "cuda"))
    parser.add_argument("--dtype", default="f32", choices=tuple(TOLERANCE))
    parser.add_argument("--seq-len", type=int, default=8)
    parser.add_argument("--cache-len", type=int, default=16)
    parser.add_argument("--seed", type=int, default=3,
                        help="seed of Tessera's inputs: the token ids and the decode position (default 3)")
    parser.add_argument("--work-dir", help="where the models are saved (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the saved models")
    args = parser.parse_args()
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import safetensors  # noqa: F401
    except ImportError as e:
        print("hf_check: skipped: %s (needs PyTorch, transformers and safetensors)" % e)
        return 77
    if not os.path.exists(args.tessera):
        print("hf_check: no tessera binary at %s (--tessera PATH)" % args.tessera)
        return 1

    import torch
    work = args.work_dir or tempfile.mkdtemp(prefix="tessera-hf-check-")
    tolerance = TOLERANCE[args.dtype]
    failures = 0
    try:
        for i, architecture in enumerate(ARCHITECTURES):
            model = build_model(architecture, seed=i)
            if args.dtype == "bf16":
                model = model.to(torch.bfloat16)
            model_dir = os.path.join(work, architecture)
            model.save_pretrained(model_dir, safe_serialization=True)
            try:
                prefill = check_prefill(args, architecture, model, model_dir)
                decode, pos = check_decode(args, architecture, model, model_dir)
            except RuntimeError as e:
                print("%-18s FAILED: %s" % (architecture, e))
                failures += 1
                continue
            ok = prefill <= tolerance and decode <= tolerance
            failures += not ok
            print("%-18s prefill(seq %d) rel err %.2e   decode(position %d of %d) rel err %.2e   %s" %
                  (architecture, args.seq_len, prefill, pos, args.cache_len, decode, "ok" if ok else "MISMATCH"))
    finally:
        if not args.keep and not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    print("hf_check: %d of %d architectures match transformers (%s, %s, tolerance %g)" %
          (len(ARCHITECTURES) - failures, len(ARCHITECTURES), args.target, args.dtype, tolerance))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

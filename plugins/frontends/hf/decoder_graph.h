// The Torch IR of a decoder-only LLM (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM), built
// directly from a ModelConfig with the ops of docs/torch-ops.md, as transformers computes it:
//
//   x = embedding(input_ids, embed_tokens)
//   per layer:  h = rms_norm(x, input_layernorm)
//               q, k, v = linear(h, q/k/v_proj [, bias])      (Qwen2: bias; Qwen3: rms_norm per head)
//               q, k = q * cos + rotate_half(q) * sin, ...     (RoPE, rope_theta, Llama-3 scaling)
//               a = causal GQA attention(q, k, v)
//               x = x + linear(a, o_proj)
//               h = rms_norm(x, post_attention_layernorm)
//               x = x + linear(silu(linear(h, gate_proj)) * linear(h, up_proj), down_proj)
//   logits = linear(rms_norm(x, norm), lm_head)                (lm_head = embed_tokens when tied)
//
// Every layer comes from one function (the layer template) that differs only in the layer's
// parameter names, so identical layers lower to structurally identical kernels. cos/sin are
// computed once from the positions and shared by the layers.
//
// Prefill (`seq_len` S): input `input_ids` (1, S) int64; positions 0..S-1; causal
// scaled_dot_product_attention. Decode (`cache_len` C): inputs `input_ids` (1, 1), `position` (1,)
// int64 (the token's position, a run-time value: one compiled step serves every position) and per
// layer `lN_k_cache`, `lN_v_cache` (1, kv_heads, C, head_dim); the step writes the new key and
// value at `position` (outputs `lN_k_cache_next`, `lN_v_cache_next`, the caches of the next step)
// and attends to cache slots 0..position. `layer`: only that layer, from an input hidden state `x`.
//
// Parameters are ConstantOps named `p_<tensor name with . as _>` whose path is the checkpoint's
// tensor name (`model.layers.0.self_attn.q_proj.weight`). With a checkpoint, each refers to its
// tensor (ConstantOp::checkpoint: the file's absolute path, size and modification time), whose
// bytes are read and converted to the compile dtype only when a backend needs them
// (constant_data), so building the graph costs the same with weights as without; without one they
// are deterministic pseudo-random (seeded by the tensor name; never materialized until a run needs
// them): linear weights and biases randn * 1/sqrt(in_features), embeddings randn, norm weights ones.
//
// Tests: tests/e2e/hf_models_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "checkpoint.h"
#include "model_config.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/type.h"

namespace tessera::hf {

struct DecoderOptions {
  int64_t seq_len = 128;           // prefill tokens
  bool decode = false;             // one decode step instead of prefill
  int64_t cache_len = 512;         // decode: KV-cache slots
  std::optional<int64_t> layer;    // only this layer
  DType dtype = DType::F32;
  uint64_t seed = 0;
};

// The graph of the model; checks `weights` (names, shapes, dtypes) against the config first.
Expected<Graph> build_decoder_graph(const ModelConfig& config, const DecoderOptions& options,
                                    const Checkpoint* weights);

// Checkpoint tensors the model needs, by name, with their shapes.
std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(const ModelConfig& config);

}  // namespace tessera::hf

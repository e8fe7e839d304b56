// ModelConfig: what the hf frontend reads from a Hugging Face `config.json` — the decoder's sizes
// and the architecture's variations (q/k/v bias, per-head q/k RMSNorm, tied lm_head, RoPE base and
// Llama-3 scaling). Reading is strict: an unsupported architecture is an error naming it and
// listing the supported ones; a missing, ill-typed or out-of-range key, or a setting the graph does
// not implement (another activation, sliding-window attention, an MLP bias), is an error located at
// the file, line and key.
//
// Tests: tests/unit/hf_frontend_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/support/status.h"

namespace tessera::hf {

enum class Architecture { Llama, Qwen2, Qwen3 };

// The `architectures` names Tessera builds, in the order error messages list them.
const std::vector<std::string>& supported_architectures();

// rope_scaling {"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
// "original_max_position_embeddings"} (Llama 3.1 and later).
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  std::string file;                 // the config.json it was read from (messages)
  std::string architecture_name;    // "LlamaForCausalLM", ...
  Architecture architecture = Architecture::Llama;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::optional<Llama3RopeScaling> rope_scaling;
  bool qkv_bias = false;            // Qwen2 always; Llama with attention_bias
  bool o_bias = false;              // Llama with attention_bias
  bool qk_norm = false;             // Qwen3
  bool tie_word_embeddings = false;
};

// Outside JSON (config.json, the checkpoint index) is checked before it is parsed: at most
// kMaxJsonBytes long and nested at most kMaxJsonDepth deep, so no file can exhaust memory or the
// stack of the parser. An error names `file` and the byte where the nesting passed the limit.
inline constexpr size_t kMaxJsonBytes = size_t{64} << 20;
inline constexpr int kMaxJsonDepth = 32;
Status check_outside_json(std::string_view text, const std::string& file);

// Parses `text`, the contents of `file`.
Expected<ModelConfig> parse_model_config(const std::string& text, const std::string& file);
Expected<ModelConfig> read_model_config(const std::string& file);

// RoPE inverse frequencies, head_dim / 2 of them: theta^(-2i / head_dim), adjusted by the Llama-3
// rope_scaling when the config has one (as transformers' `_compute_llama3_parameters`).
std::vector<double> rope_inverse_frequencies(const ModelConfig& config);

}  // namespace tessera::hf

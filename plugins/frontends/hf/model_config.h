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
  std::string text;                 // its contents (to locate keys in later messages)
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

// What Tessera accepts of each size, checked (with the sizes' consistency with each other) before
// anything is sized by them: a value past its bound is an error naming the key, at once, instead of
// gigabytes of graph. The bounds are far above every published decoder (the largest have 126
// layers, head_dim 256, hidden_size 16384 and vocabularies of 256k).
struct ConfigBound {
  const char* key;
  int64_t max;
};
inline constexpr ConfigBound kMaxHiddenSize{"hidden_size", int64_t{1} << 16};
inline constexpr ConfigBound kMaxIntermediateSize{"intermediate_size", int64_t{1} << 18};
inline constexpr ConfigBound kMaxLayers{"num_hidden_layers", 1024};
inline constexpr ConfigBound kMaxHeads{"num_attention_heads", 1024};
inline constexpr ConfigBound kMaxKvHeads{"num_key_value_heads", 1024};
inline constexpr ConfigBound kMaxHeadDim{"head_dim", 2048};
inline constexpr ConfigBound kMaxVocabSize{"vocab_size", int64_t{1} << 22};
inline constexpr ConfigBound kMaxPositions{"max_position_embeddings", int64_t{1} << 22};
// num_attention_heads x head_dim, the width of the q projection (and of o_proj's input).
inline constexpr int64_t kMaxAttentionWidth = int64_t{1} << 16;

// A JSON syntax error in `text` (the contents of `file`) as a located error: file:line:col of the
// byte where the parser stopped (`byte`, 1-based, as nlohmann's parse_error gives it) and its
// reason (`parser_message`) without the library's "[json.exception...] parse error at ..." prefix.
Diagnostic json_syntax_error(const std::string& text, const std::string& file, const std::string& what,
                             size_t byte, const std::string& parser_message);

// Parses `text`, the contents of `file`.
Expected<ModelConfig> parse_model_config(const std::string& text, const std::string& file);
Expected<ModelConfig> read_model_config(const std::string& file);

// An error located at `key` in the config's file (line and column of its first occurrence).
Diagnostic config_key_error(const ModelConfig& config, const std::string& key, std::string message);

// RoPE inverse frequencies, head_dim / 2 of them: theta^(-2i / head_dim), adjusted by the Llama-3
// rope_scaling when the config has one (as transformers' `_compute_llama3_parameters`).
std::vector<double> rope_inverse_frequencies(const ModelConfig& config);

}  // namespace tessera::hf

// Reading config.json (see model_config.h).
#include "model_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tessera::hf {

namespace {

using json = nlohmann::json;

// Locates `"key"` in the text (its first occurrence: config.json files are flat objects), so an
// error points at the line a person edits. Without it the error names the file and the key.
Diagnostic config_error(const std::string& text, const std::string& file, const std::string& key, std::string message) {
  Diagnostic d = make_error("config.json key '" + key + "': " + std::move(message));
  d.loc.file = file;
  const size_t at = key.empty() ? std::string::npos : text.find("\"" + key + "\"");
  if (at != std::string::npos) {
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < at; ++i)
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    d.loc.line = line;
    d.loc.col = static_cast<int>(at - line_start) + 1;
    d.loc.length = static_cast<int>(key.size()) + 2;
    d.source_line = source_line_of(text, line);
  }
  return d;
}

class ConfigReader {
 public:
  ConfigReader(const json& doc, const std::string& text, const std::string& file) : doc_(doc), text_(text), file_(file) {}

  Diagnostic error(const std::string& key, std::string message) const { return config_error(text_, file_, key, std::move(message)); }
  bool has(const std::string& key) const { return doc_.contains(key) && !doc_[key].is_null(); }

  // A positive integer at most `bound.max`; `fallback` when absent (nullopt: required).
  Expected<int64_t> positive(const ConfigBound& bound, std::optional<int64_t> fallback = std::nullopt) const {
    const std::string key = bound.key;
    if (!has(key)) {
      if (fallback) return *fallback;
      return error(key, "missing (a positive integer)");
    }
    const json& v = doc_[key];
    if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<uint64_t>() == 0 : v.get<int64_t>() <= 0))
      return error(key, "is " + v.dump() + ", not a positive integer");
    // Unsigned values past int64 are compared as unsigned, so none wraps to a small one.
    if (v.get<uint64_t>() > static_cast<uint64_t>(bound.max))
      return error(key, "is " + v.dump() + ", larger than Tessera accepts (at most " + std::to_string(bound.max) + ")");
    return v.get<int64_t>();
  }

  Expected<double> positive_number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    const json& v = doc_[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      return error(key, "is " + v.dump() + ", not a positive number");
    return v.get<double>();
  }

  Expected<bool> boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = doc_[key];
    if (!v.is_boolean()) return error(key, "is " + v.dump() + ", not true or false");
    return v.get<bool>();
  }

  const json& operator[](const std::string& key) const { return doc_[key]; }

 private:
  const json& doc_;
  const std::string& text_;
  const std::string& file_;
};

// RoPE scaling: `rope_scaling` (transformers 4 configs), or `rope_parameters` (transformers 5,
// which also holds rope_theta) read by `key`.
Expected<std::optional<Llama3RopeScaling>> read_rope_scaling(const ConfigReader& r, const std::string& key) {
  if (!r.has(key)) return std::optional<Llama3RopeScaling>();
  const json& s = r[key];
  if (!s.is_object()) return r.error(key, "is " + s.dump() + ", not an object or null");
  std::string type;
  for (const char* key : {"rope_type", "type"})
    if (s.contains(key) && s[key].is_string()) {
      type = s[key].get<std::string>();
      break;
    }
  if (type == "default") return std::optional<Llama3RopeScaling>();
  if (type != "llama3")
    return r.error(key, "rope_type '" + type + "' is not supported (Tessera implements the default RoPE and 'llama3')");
  Llama3RopeScaling out;
  auto number = [&](const char* field_key, double& field) -> Status {
    if (!s.contains(field_key)) return r.error(key, std::string("missing '") + field_key + "'");
    if (!s[field_key].is_number() || !(s[field_key].get<double>() > 0))
      return r.error(key, std::string("'") + field_key + "' is " + s[field_key].dump() + ", not a positive number");
    field = s[field_key].get<double>();
    return Status::ok();
  };
  TESSERA_TRY(number("factor", out.factor));
  TESSERA_TRY(number("low_freq_factor", out.low_freq_factor));
  TESSERA_TRY(number("high_freq_factor", out.high_freq_factor));
  double original = 0;
  TESSERA_TRY(number("original_max_position_embeddings", original));
  if (original > static_cast<double>(kMaxPositions.max))
    return r.error(key, "'original_max_position_embeddings' is " + s["original_max_position_embeddings"].dump() +
                            ", larger than Tessera accepts (at most " + std::to_string(kMaxPositions.max) + ")");
  out.original_max_position_embeddings = static_cast<int64_t>(original);
  if (!(out.high_freq_factor > out.low_freq_factor))
    return r.error(key, "'high_freq_factor' must be larger than 'low_freq_factor'");
  return std::optional<Llama3RopeScaling>(out);
}

}  // namespace

Status check_outside_json(std::string_view text, const std::string& file) {
  auto error = [&](std::string message) {
    Diagnostic d = make_error(std::move(message));
    d.loc.file = file;
    return d;
  };
  if (text.size() > kMaxJsonBytes)
    return error("the file has " + std::to_string(text.size()) + " bytes, more than the " +
                 std::to_string(kMaxJsonBytes >> 20) + " MB Tessera reads as JSON");
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return error("byte " + std::to_string(i) + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                     " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::ok();
}

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> names = {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM"};
  return names;
}

Diagnostic json_syntax_error(const std::string& text, const std::string& file, const std::string& what,
                             size_t byte, const std::string& parser_message) {
  const SourceLoc loc = source_loc_at(text, file, byte > 0 ? byte - 1 : 0);  // `byte` is 1-based
  std::string reason = parser_message;
  if (const size_t at = reason.find(": "); at != std::string::npos) reason = reason.substr(at + 2);
  Diagnostic d = make_error(what + " is not valid JSON: " + reason);
  d.at(loc, source_line_of(text, loc.line));
  return d;
}

Diagnostic config_key_error(const ModelConfig& config, const std::string& key, std::string message) {
  return config_error(config.text, config.file, key, std::move(message));
}

Expected<ModelConfig> parse_model_config(const std::string& text, const std::string& file) {
  TESSERA_TRY(check_outside_json(text, file));
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return json_syntax_error(text, file, "config.json", e.byte, e.what());
  } catch (const json::exception& e) {
    Diagnostic d = make_error(std::string("config.json is not valid JSON: ") + e.what());
    d.loc.file = file;
    return d;
  }
  if (!doc.is_object()) {
    Diagnostic d = make_error("config.json is not a JSON object");
    d.loc.file = file;
    return d;
  }
  ConfigReader r(doc, text, file);
  ModelConfig c;
  c.file = file;
  c.text = text;

  std::string supported;
  for (const std::string& a : supported_architectures()) supported += (supported.empty() ? "" : ", ") + a;
  if (!r.has("architectures") || !r["architectures"].is_array() || r["architectures"].size() != 1 ||
      !r["architectures"][0].is_string())
    return r.error("architectures", "expected a list of one architecture name (supported: " + supported + ")");
  c.architecture_name = r["architectures"][0].get<std::string>();
  if (c.architecture_name == "LlamaForCausalLM") c.architecture = Architecture::Llama;
  else if (c.architecture_name == "Qwen2ForCausalLM") c.architecture = Architecture::Qwen2;
  else if (c.architecture_name == "Qwen3ForCausalLM") c.architecture = Architecture::Qwen3;
  else
    return r.error("architectures", "architecture '" + c.architecture_name + "' is not supported (supported: " +
                                        supported + ")");

  TESSERA_ASSIGN_OR_RETURN(c.hidden_size, r.positive(kMaxHiddenSize));
  TESSERA_ASSIGN_OR_RETURN(c.intermediate_size, r.positive(kMaxIntermediateSize));
  TESSERA_ASSIGN_OR_RETURN(c.num_layers, r.positive(kMaxLayers));
  TESSERA_ASSIGN_OR_RETURN(c.num_heads, r.positive(kMaxHeads));
  TESSERA_ASSIGN_OR_RETURN(c.num_kv_heads, r.positive(kMaxKvHeads, c.num_heads));
  TESSERA_ASSIGN_OR_RETURN(c.vocab_size, r.positive(kMaxVocabSize));
  TESSERA_ASSIGN_OR_RETURN(c.max_position_embeddings, r.positive(kMaxPositions, 2048));
  if (c.architecture == Architecture::Qwen3 && !r.has("head_dim"))
    return r.error("head_dim", "missing (Qwen3ForCausalLM gives head_dim explicitly)");
  if (!r.has("head_dim") && c.hidden_size % c.num_heads != 0)
    return r.error("num_attention_heads", std::to_string(c.num_heads) + " does not divide hidden_size " +
                                              std::to_string(c.hidden_size) + " (and no head_dim is given)");
  TESSERA_ASSIGN_OR_RETURN(c.head_dim, r.positive(kMaxHeadDim, c.hidden_size / c.num_heads));
  if (c.head_dim % 2 != 0) return r.error("head_dim", std::to_string(c.head_dim) + " is odd; RoPE rotates halves of each head");
  if (c.num_heads % c.num_kv_heads != 0)
    return r.error("num_key_value_heads", std::to_string(c.num_kv_heads) + " does not divide num_attention_heads " +
                                              std::to_string(c.num_heads));
  if (c.num_heads * c.head_dim > kMaxAttentionWidth)
    return r.error(r.has("head_dim") ? "head_dim" : "num_attention_heads",
                   "num_attention_heads " + std::to_string(c.num_heads) + " x head_dim " + std::to_string(c.head_dim) +
                       " = " + std::to_string(c.num_heads * c.head_dim) +
                       ", wider than the attention Tessera accepts (at most " + std::to_string(kMaxAttentionWidth) + ")");
  TESSERA_ASSIGN_OR_RETURN(c.rms_norm_eps, r.positive_number("rms_norm_eps", 1e-6));
  TESSERA_ASSIGN_OR_RETURN(c.rope_theta, r.positive_number("rope_theta", 10000.0));
  TESSERA_ASSIGN_OR_RETURN(c.rope_scaling, read_rope_scaling(r, "rope_scaling"));
  if (r.has("rope_parameters")) {  // transformers 5: theta and scaling in one object
    const json& p = r["rope_parameters"];
    if (!p.is_object()) return r.error("rope_parameters", "is " + p.dump() + ", not an object");
    if (p.contains("rope_theta")) {
      if (!p["rope_theta"].is_number() || !(p["rope_theta"].get<double>() > 0))
        return r.error("rope_parameters", "'rope_theta' is " + p["rope_theta"].dump() + ", not a positive number");
      c.rope_theta = p["rope_theta"].get<double>();
    }
    TESSERA_ASSIGN_OR_RETURN(c.rope_scaling, read_rope_scaling(r, "rope_parameters"));
  }
  if (r.has("layer_types")) {
    const json& types = r["layer_types"];
    if (!types.is_array()) return r.error("layer_types", "is " + types.dump() + ", not a list");
    if (static_cast<int64_t>(types.size()) != c.num_layers)
      return r.error("layer_types", "lists " + std::to_string(types.size()) + " layers, but num_hidden_layers is " +
                                        std::to_string(c.num_layers));
    for (const json& t : types)
      if (!t.is_string() || t.get<std::string>() != "full_attention")
        return r.error("layer_types", "has " + t.dump() + "; Tessera builds \"full_attention\" layers only");
  }
  TESSERA_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.boolean("tie_word_embeddings", false));

  if (r.has("hidden_act") && (!r["hidden_act"].is_string() || r["hidden_act"].get<std::string>() != "silu"))
    return r.error("hidden_act", "is " + r["hidden_act"].dump() + "; Tessera builds the SwiGLU MLP of \"silu\" only");
  TESSERA_ASSIGN_OR_RETURN(bool sliding, r.boolean("use_sliding_window", false));
  if (sliding) return r.error("use_sliding_window", "sliding-window attention is not supported");
  TESSERA_ASSIGN_OR_RETURN(bool mlp_bias, r.boolean("mlp_bias", false));
  if (mlp_bias) return r.error("mlp_bias", "MLP projections with bias are not supported");
  TESSERA_ASSIGN_OR_RETURN(bool attention_bias, r.boolean("attention_bias", false));
  switch (c.architecture) {
    case Architecture::Llama:
      c.qkv_bias = c.o_bias = attention_bias;
      break;
    case Architecture::Qwen2:
      c.qkv_bias = true;  // Qwen2Attention: q/k/v always carry a bias, o_proj never
      break;
    case Architecture::Qwen3:
      c.qkv_bias = c.o_bias = attention_bias;
      c.qk_norm = true;
      break;
  }
  return c;
}

Expected<ModelConfig> read_model_config(const std::string& file) {
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(file, ec); !ec && size > kMaxJsonBytes) {
    Diagnostic d = make_error("config.json has " + std::to_string(size) + " bytes, more than the " +
                              std::to_string(kMaxJsonBytes >> 20) + " MB Tessera reads as JSON");
    d.loc.file = file;
    return d;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    Diagnostic d = make_error("cannot read config.json");
    d.loc.file = file;
    return d;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), file);
}

std::vector<double> rope_inverse_frequencies(const ModelConfig& c) {
  std::vector<double> inv(static_cast<size_t>(c.head_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i)
    inv[i] = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(c.head_dim));
  if (!c.rope_scaling) return inv;
  const Llama3RopeScaling& s = *c.rope_scaling;
  const double old_context = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / s.low_freq_factor;
  const double high_freq_wavelen = old_context / s.high_freq_factor;
  for (double& f : inv) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen > low_freq_wavelen) {
      f /= s.factor;  // low frequencies: scaled fully
    } else if (wavelen >= high_freq_wavelen) {
      // Medium frequencies: interpolated between scaled and unscaled.
      const double smooth = (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = (1 - smooth) * f / s.factor + smooth * f;
    }
  }
  return inv;
}

}  // namespace tessera::hf

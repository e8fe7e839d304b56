// Building a decoder LLM's Torch IR from its config (see decoder_graph.h).
#include "decoder_graph.h"

#include <cmath>
#include <limits>
#include <set>

#include "tessera/ir/op.h"

namespace tessera::hf {

namespace {

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

enum class ParamInit { Linear, Embedding, Norm };

class DecoderBuilder {
 public:
  DecoderBuilder(const ModelConfig& c, const DecoderOptions& o, const Checkpoint* w) : c_(c), o_(o), weights_(w) {}

  Expected<Graph> build();

 private:
  using Ids = std::vector<std::string>;

  TensorType type(std::vector<int64_t> shape, std::optional<DType> dtype = std::nullopt) const {
    return TensorType{Shape(shape.begin(), shape.end()), dtype.value_or(o_.dtype)};
  }
  std::vector<int64_t> shape_of(const std::string& id) const {
    std::vector<int64_t> s;
    for (const Dim& d : g_.find(id)->type.shape) s.push_back(d.value());
    return s;
  }

  std::string op(const std::string& id, const std::string& target, Ids inputs, TensorType out, Attrs attrs = {},
                 std::vector<std::pair<int64_t, double>> scalars = {}) {
    auto o = std::make_unique<TorchOp>();
    o->target = target;
    o->attrs = std::move(attrs);
    o->scalar_args = std::move(scalars);
    const std::string name = g_.unique_id(id);
    g_.add(name, std::move(o), std::move(inputs), std::move(out));
    return name;
  }

  Expected<std::string> param(const std::string& path, std::vector<int64_t> shape, ParamInit init);

  std::string linear(const std::string& id, const std::string& x, const std::string& w, const std::string& bias = {}) {
    std::vector<int64_t> out = shape_of(x);
    out.back() = shape_of(w)[0];
    Ids in = {x, w};
    if (!bias.empty()) in.push_back(bias);
    return op(id, "linear", in, type(out));
  }
  std::string rms_norm(const std::string& id, const std::string& x, const std::string& w) {
    Attrs a;
    a.set("normalized_shape", std::vector<int64_t>{shape_of(w)[0]});
    a.set("eps", c_.rms_norm_eps);
    return op(id, "rms_norm", {x, w}, g_.find(x)->type, a);
  }
  std::string reshape(const std::string& id, const std::string& x, std::vector<int64_t> shape) {
    Attrs a;
    a.set("shape", shape);
    return op(id, "reshape", {x}, type(shape, g_.find(x)->type.dtype), a);
  }
  std::string transpose(const std::string& id, const std::string& x, int64_t d0, int64_t d1) {
    std::vector<int64_t> s = shape_of(x);
    std::swap(s[static_cast<size_t>(d0)], s[static_cast<size_t>(d1)]);
    Attrs a;
    a.set("dim0", d0);
    a.set("dim1", d1);
    return op(id, "transpose", {x}, type(s, g_.find(x)->type.dtype), a);
  }
  // Elementwise with broadcasting: the output shape is given by the caller.
  std::string ew(const std::string& id, const std::string& fn, Ids in, std::vector<int64_t> out, DType dtype) {
    return op(id, fn, std::move(in), type(std::move(out), dtype));
  }

  Status rope_tables(const std::string& positions, int64_t n);
  std::string rope(const std::string& prefix, const std::string& t);
  Expected<std::string> layer(int64_t index, const std::string& x);
  std::string decode_attention(const std::string& prefix, const std::string& q, const std::string& k,
                               const std::string& v);

  const ModelConfig& c_;
  const DecoderOptions& o_;
  const Checkpoint* weights_;
  Graph g_;
  std::string cos_, sin_;              // (tokens, head_dim)
  std::string position_, slots_;       // decode: the step's position (1,), cache slot ids (C,)
  std::string slot_hit_, slot_valid_;  // decode: slot == position (C, 1); slot <= position (C,)
  Ids outputs_;
  Ids cache_outputs_;
};

Expected<std::string> DecoderBuilder::param(const std::string& path, std::vector<int64_t> shape, ParamInit init) {
  std::string id = "p_" + path;
  for (char& ch : id)
    if (ch == '.') ch = '_';
  if (g_.contains(id)) return id;  // the tied embedding, used twice
  auto c = std::make_unique<ConstantOp>();
  c->path = path;
  if (weights_) {
    const Checkpoint::Entry* e = weights_->find(path);
    if (!e) return make_error("checkpoint: missing tensor '" + path + "'");
    c->checkpoint = e->ref;  // by reference: read (and converted) only where a backend needs it
  } else {
    c->seed = splitmix64(fnv1a64(path) ^ splitmix64(o_.seed));
    switch (init) {
      case ParamInit::Linear:
        c->init = "randn";
        c->scale = 1.0 / std::sqrt(static_cast<double>(shape.back()));
        break;
      case ParamInit::Embedding:
        c->init = "randn";
        break;
      case ParamInit::Norm:
        c->init = "ones";
        break;
    }
  }
  g_.add(id, std::move(c), {}, type(shape));
  return id;
}

Status DecoderBuilder::rope_tables(const std::string& positions, int64_t n) {
  const int64_t half = c_.head_dim / 2;
  auto inv = std::make_unique<ConstantOp>();
  inv->values = rope_inverse_frequencies(c_);
  g_.add("rope_inv_freq", std::move(inv), {}, type({half}, DType::F32));
  Attrs to_f32;
  to_f32.set("dtype", std::string("float32"));
  const std::string pos = op("rope_positions", "cast", {positions}, type({n}, DType::F32), to_f32);
  const std::string col = reshape("rope_positions_col", pos, {n, 1});
  const std::string freqs = ew("rope_freqs", "mul", {col, "rope_inv_freq"}, {n, half}, DType::F32);
  Attrs cat;
  cat.set("dim", int64_t{1});
  const std::string emb = op("rope_angles", "cat", {freqs, freqs}, type({n, c_.head_dim}, DType::F32), cat);
  cos_ = ew("rope_cos", "cos", {emb}, {n, c_.head_dim}, DType::F32);
  sin_ = ew("rope_sin", "sin", {emb}, {n, c_.head_dim}, DType::F32);
  if (o_.dtype != DType::F32) {  // transformers casts cos/sin to the activations' dtype
    Attrs to;
    to.set("dtype", std::string(dtype_name(o_.dtype)));
    cos_ = op("rope_cos_cast", "cast", {cos_}, type({n, c_.head_dim}), to);
    sin_ = op("rope_sin_cast", "cast", {sin_}, type({n, c_.head_dim}), to);
  }
  return Status::ok();
}

// t * cos + rotate_half(t) * sin, rotate_half(t) = cat(-t[..., D/2:], t[..., :D/2]).
std::string DecoderBuilder::rope(const std::string& prefix, const std::string& t) {
  const std::vector<int64_t> s = shape_of(t);
  const int64_t d = c_.head_dim, half = d / 2;
  std::vector<int64_t> hs = s;
  hs.back() = half;
  auto slice = [&](const std::string& id, int64_t start, int64_t end) {
    Attrs a;
    a.set("dim", int64_t{3});
    a.set("start", start);
    a.set("end", end);
    a.set("step", int64_t{1});
    return op(id, "slice", {t}, type(hs), a);
  };
  const std::string x1 = slice(prefix + "_x1", 0, half);
  const std::string x2 = slice(prefix + "_x2", half, d);
  const std::string neg = ew(prefix + "_neg", "neg", {x2}, hs, o_.dtype);
  Attrs cat;
  cat.set("dim", int64_t{3});
  const std::string rot = op(prefix + "_rot", "cat", {neg, x1}, type(s), cat);
  const std::string a = ew(prefix + "_cos", "mul", {t, cos_}, s, o_.dtype);
  const std::string b = ew(prefix + "_sin", "mul", {rot, sin_}, s, o_.dtype);
  return ew(prefix + "_rope", "add", {a, b}, s, o_.dtype);
}

// One decode step's attention over the static cache: the new key/value written at `position`,
// then softmax(q k^T * scale, masked to slots 0..position) v.
std::string DecoderBuilder::decode_attention(const std::string& prefix, const std::string& q, const std::string& k,
                                             const std::string& v) {
  const int64_t hq = c_.num_heads, hkv = c_.num_kv_heads, d = c_.head_dim, cl = o_.cache_len;
  std::vector<int64_t> cache = {1, hkv, cl, d};
  std::string next[2];
  const std::string fresh[2] = {k, v};
  const char* names[2] = {"k", "v"};
  for (int i = 0; i < 2; ++i) {
    auto in = std::make_unique<InputOp>();
    in->init = "zeros";
    const std::string cache_in = prefix + "_" + names[i] + "_cache";
    g_.add(cache_in, std::move(in), {}, type(cache));
    next[i] = op(prefix + "_" + names[i] + "_cache_next", "where", {slot_hit_, fresh[i], cache_in}, type(cache));
    cache_outputs_.push_back(next[i]);
  }
  std::string keys = next[0], values = next[1];
  if (hq != hkv) {  // grouped-query attention: each kv head serves hq / hkv query heads
    const int64_t group = hq / hkv;
    std::string* expanded[2] = {&keys, &values};
    const char* bases[2] = {"_keys", "_values"};
    for (int i = 0; i < 2; ++i) {
      const std::string base = prefix + bases[i];
      Attrs un;
      un.set("dim", int64_t{2});
      const std::string u = op(base + "_unsq", "unsqueeze", {*expanded[i]}, type({1, hkv, 1, cl, d}), un);
      Attrs ex;
      ex.set("shape", std::vector<int64_t>{1, hkv, group, cl, d});
      const std::string e = op(base + "_expand", "expand", {u}, type({1, hkv, group, cl, d}), ex);
      *expanded[i] = reshape(base + "_heads", e, {1, hq, cl, d});
    }
  }
  const std::string kt = transpose(prefix + "_keys_t", keys, 2, 3);
  const std::string scores = op(prefix + "_scores", "matmul", {q, kt}, type({1, hq, 1, cl}));
  const std::string scaled =
      op(prefix + "_scaled", "mul", {scores}, type({1, hq, 1, cl}), {}, {{1, 1.0 / std::sqrt(static_cast<double>(d))}});
  const std::string masked = op(prefix + "_masked", "where", {slot_valid_, scaled}, type({1, hq, 1, cl}), {},
                                {{2, -std::numeric_limits<double>::infinity()}});
  Attrs sm;
  sm.set("dim", int64_t{-1});
  const std::string p = op(prefix + "_probs", "softmax", {masked}, type({1, hq, 1, cl}), sm);
  return op(prefix + "_attn", "matmul", {p, values}, type({1, hq, 1, d}));
}

Expected<std::string> DecoderBuilder::layer(int64_t index, const std::string& x) {
  const std::string pre = "model.layers." + std::to_string(index) + ".";
  const std::string id = "l" + std::to_string(index);
  const int64_t h = c_.hidden_size, hq = c_.num_heads, hkv = c_.num_kv_heads, d = c_.head_dim;
  const int64_t inter = c_.intermediate_size;
  const int64_t s = o_.decode ? 1 : o_.seq_len;

  TESSERA_ASSIGN_OR_RETURN(std::string w_in, param(pre + "input_layernorm.weight", {h}, ParamInit::Norm));
  const std::string hn = rms_norm(id + "_input_norm", x, w_in);

  std::string qkv[3];
  const char* proj[3] = {"q", "k", "v"};
  const int64_t heads[3] = {hq, hkv, hkv};
  for (int i = 0; i < 3; ++i) {
    const std::string p = pre + "self_attn." + proj[i] + "_proj.";
    TESSERA_ASSIGN_OR_RETURN(std::string w, param(p + "weight", {heads[i] * d, h}, ParamInit::Linear));
    std::string b;
    if (c_.qkv_bias) {
      TESSERA_ASSIGN_OR_RETURN(b, param(p + "bias", {heads[i] * d}, ParamInit::Linear));
    }
    const std::string y = linear(id + "_" + proj[i], hn, w, b);
    qkv[i] = reshape(id + "_" + proj[i] + "_heads", y, {1, s, heads[i], d});
  }
  if (c_.qk_norm) {  // Qwen3: RMSNorm over head_dim, per head, before RoPE
    for (int i = 0; i < 2; ++i) {
      TESSERA_ASSIGN_OR_RETURN(std::string w,
                               param(pre + "self_attn." + proj[i] + "_norm.weight", {d}, ParamInit::Norm));
      qkv[i] = rms_norm(id + "_" + proj[i] + "_norm", qkv[i], w);
    }
  }
  for (int i = 0; i < 3; ++i) qkv[i] = transpose(id + "_" + proj[i] + "_t", qkv[i], 1, 2);  // (1, heads, s, d)
  const std::string q = rope(id + "_q", qkv[0]);
  const std::string k = rope(id + "_k", qkv[1]);

  std::string attn;
  if (o_.decode) {
    attn = decode_attention(id, q, k, qkv[2]);
  } else {
    Attrs a;
    a.set("is_causal", true);
    a.set("scale", 1.0 / std::sqrt(static_cast<double>(d)));
    a.set("enable_gqa", hq != hkv);
    attn = op(id + "_attn", "scaled_dot_product_attention", {q, k, qkv[2]}, type({1, hq, s, d}), a);
  }
  const std::string merged = reshape(id + "_attn_merged", transpose(id + "_attn_t", attn, 1, 2), {1, s, hq * d});
  TESSERA_ASSIGN_OR_RETURN(std::string wo, param(pre + "self_attn.o_proj.weight", {h, hq * d}, ParamInit::Linear));
  std::string bo;
  if (c_.o_bias) {
    TESSERA_ASSIGN_OR_RETURN(bo, param(pre + "self_attn.o_proj.bias", {h}, ParamInit::Linear));
  }
  const std::string o = linear(id + "_o", merged, wo, bo);
  const std::string x1 = ew(id + "_attn_residual", "add", {x, o}, {1, s, h}, o_.dtype);

  TESSERA_ASSIGN_OR_RETURN(std::string w_post, param(pre + "post_attention_layernorm.weight", {h}, ParamInit::Norm));
  const std::string hp = rms_norm(id + "_post_norm", x1, w_post);
  TESSERA_ASSIGN_OR_RETURN(std::string wg, param(pre + "mlp.gate_proj.weight", {inter, h}, ParamInit::Linear));
  TESSERA_ASSIGN_OR_RETURN(std::string wu, param(pre + "mlp.up_proj.weight", {inter, h}, ParamInit::Linear));
  TESSERA_ASSIGN_OR_RETURN(std::string wd, param(pre + "mlp.down_proj.weight", {h, inter}, ParamInit::Linear));
  const std::string gate = ew(id + "_gate_silu", "silu", {linear(id + "_gate", hp, wg)}, {1, s, inter}, o_.dtype);
  const std::string prod = ew(id + "_swiglu", "mul", {gate, linear(id + "_up", hp, wu)}, {1, s, inter}, o_.dtype);
  const std::string down = linear(id + "_down", prod, wd);
  return ew(id + "_out", "add", {x1, down}, {1, s, h}, o_.dtype);
}

Expected<Graph> DecoderBuilder::build() {
  const int64_t s = o_.decode ? 1 : o_.seq_len;
  const int64_t h = c_.hidden_size;

  // Positions: prefill 0..S-1 (a constant); decode the step's position (an input).
  if (o_.decode) {
    auto pos = std::make_unique<InputOp>();
    pos->init = "randint";
    pos->fill = static_cast<double>(o_.cache_len);
    position_ = "position";
    g_.add(position_, std::move(pos), {}, type({1}, DType::I64));
    auto slots = std::make_unique<ConstantOp>();
    for (int64_t i = 0; i < o_.cache_len; ++i) slots->values.push_back(static_cast<double>(i));
    slots_ = "cache_slots";
    g_.add(slots_, std::move(slots), {}, type({o_.cache_len}, DType::I64));
    const std::string col = reshape("cache_slots_col", slots_, {o_.cache_len, 1});
    slot_hit_ = ew("cache_slot_hit", "eq", {col, position_}, {o_.cache_len, 1}, DType::Bool);
    slot_valid_ = ew("cache_slot_valid", "le", {slots_, position_}, {o_.cache_len}, DType::Bool);
    TESSERA_TRY(rope_tables(position_, 1));
  } else {
    auto pos = std::make_unique<ConstantOp>();
    for (int64_t i = 0; i < s; ++i) pos->values.push_back(static_cast<double>(i));
    g_.add("positions", std::move(pos), {}, type({s}, DType::I64));
    TESSERA_TRY(rope_tables("positions", s));
  }

  if (o_.layer) {
    auto x = std::make_unique<InputOp>();
    g_.add("x", std::move(x), {}, type({1, s, h}));
    TESSERA_ASSIGN_OR_RETURN(std::string out, layer(*o_.layer, "x"));
    outputs_.push_back(out);
  } else {
    auto ids = std::make_unique<InputOp>();
    ids->init = "randint";
    ids->fill = static_cast<double>(c_.vocab_size);
    g_.add("input_ids", std::move(ids), {}, type({1, s}, DType::I64));
    TESSERA_ASSIGN_OR_RETURN(std::string embed,
                             param("model.embed_tokens.weight", {c_.vocab_size, h}, ParamInit::Embedding));
    std::string x = op("embed", "embedding", {"input_ids", embed}, type({1, s, h}));
    for (int64_t l = 0; l < c_.num_layers; ++l) {
      TESSERA_ASSIGN_OR_RETURN(x, layer(l, x));
    }
    TESSERA_ASSIGN_OR_RETURN(std::string wn, param("model.norm.weight", {h}, ParamInit::Norm));
    const std::string xn = rms_norm("final_norm", x, wn);
    std::string head = embed;
    if (!c_.tie_word_embeddings) {
      TESSERA_ASSIGN_OR_RETURN(head, param("lm_head.weight", {c_.vocab_size, h}, ParamInit::Linear));
    }
    outputs_.push_back(linear("logits", xn, head));
  }
  for (const std::string& c : cache_outputs_) outputs_.push_back(c);
  // Nodes no output needs (the unused rope casts of a graph without layers) are dropped.
  std::set<std::string> live(outputs_.begin(), outputs_.end());
  std::vector<const Node*> nodes = std::as_const(g_).nodes();
  std::vector<std::string> dead;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (live.count((*it)->id())) live.insert((*it)->inputs.begin(), (*it)->inputs.end());
    else dead.push_back((*it)->id());
  }
  for (const std::string& id : dead) TESSERA_TRY(g_.erase(id));
  g_.outputs() = outputs_;
  return std::move(g_);
}

}  // namespace

std::vector<std::pair<std::string, std::vector<int64_t>>> expected_tensors(const ModelConfig& c) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  const int64_t h = c.hidden_size, d = c.head_dim, inter = c.intermediate_size;
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, h}});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out.push_back({p + "input_layernorm.weight", {h}});
    const std::pair<const char*, int64_t> projections[3] = {{"q", c.num_heads}, {"k", c.num_kv_heads}, {"v", c.num_kv_heads}};
    for (const auto& [name, heads] : projections) {
      out.push_back({p + "self_attn." + name + "_proj.weight", {heads * d, h}});
      if (c.qkv_bias) out.push_back({p + "self_attn." + name + "_proj.bias", {heads * d}});
    }
    if (c.qk_norm) {
      out.push_back({p + "self_attn.q_norm.weight", {d}});
      out.push_back({p + "self_attn.k_norm.weight", {d}});
    }
    out.push_back({p + "self_attn.o_proj.weight", {h, c.num_heads * d}});
    if (c.o_bias) out.push_back({p + "self_attn.o_proj.bias", {h}});
    out.push_back({p + "post_attention_layernorm.weight", {h}});
    out.push_back({p + "mlp.gate_proj.weight", {inter, h}});
    out.push_back({p + "mlp.up_proj.weight", {inter, h}});
    out.push_back({p + "mlp.down_proj.weight", {h, inter}});
  }
  out.push_back({"model.norm.weight", {h}});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {c.vocab_size, h}});
  return out;
}

namespace {

// The config's sizes against the checkpoint's tensors, key by key, before any tensor is checked
// one by one: a size the checkpoint contradicts is an error at that key in config.json, naming the
// tensor that shows it (a config whose num_hidden_layers or head_dim disagrees with the weights is
// the config's mistake far more often than a damaged checkpoint's).
Status check_config_against_checkpoint(const ModelConfig& c, const Checkpoint& weights) {
  auto shape_of = [&](const std::string& name) -> const std::vector<int64_t>* {
    const Checkpoint::Entry* e = weights.find(name);
    return e ? &e->tensor->shape : nullptr;
  };
  // Layers: model.layers.N.* for every N below num_hidden_layers, and none above.
  const std::string layers_prefix = "model.layers.";
  std::set<int64_t> layers;
  for (const auto& [name, entry] : weights.tensors()) {
    if (name.rfind(layers_prefix, 0) != 0) continue;
    const size_t dot = name.find('.', layers_prefix.size());
    const std::string index = name.substr(layers_prefix.size(), dot - layers_prefix.size());
    if (index.empty() || index.size() > 9 || index.find_first_not_of("0123456789") != std::string::npos) continue;
    layers.insert(std::stoll(index));
  }
  if (!layers.empty() && *layers.rbegin() >= c.num_layers)
    return config_key_error(c, "num_hidden_layers",
                            "is " + std::to_string(c.num_layers) + ", but the checkpoint has layer " +
                                std::to_string(*layers.rbegin()) + " (tensors model.layers." +
                                std::to_string(*layers.rbegin()) + ".*)");
  for (int64_t l = 0; l < c.num_layers; ++l)
    if (!layers.count(l))
      return config_key_error(c, "num_hidden_layers",
                              "is " + std::to_string(c.num_layers) + ", but the checkpoint has no tensor of layer " +
                                  std::to_string(l) + " (model.layers." + std::to_string(l) + ".*)" +
                                  (layers.empty() ? std::string()
                                                  : "; it has layers " + std::to_string(*layers.begin()) + ".." +
                                                        std::to_string(*layers.rbegin())));
  // One size of a tensor against the config value(s) that give it.
  auto check = [&](const std::string& tensor, size_t dim, int64_t expected, const std::string& key,
                   const std::string& what) -> Status {
    const std::vector<int64_t>* shape = shape_of(tensor);
    if (!shape || shape->size() <= dim || (*shape)[dim] == expected) return Status::ok();
    return config_key_error(c, key, what + " = " + std::to_string(expected) + ", but checkpoint tensor '" + tensor +
                                        "' has shape " + shape_text(*shape));
  };
  // A q projection of the wrong width: head_dim's fault when the config gives it, else the heads'.
  const std::string heads_key = c.text.find("\"head_dim\"") != std::string::npos ? "head_dim" : "num_attention_heads";
  TESSERA_TRY(check("model.embed_tokens.weight", 0, c.vocab_size, "vocab_size", "vocab_size"));
  TESSERA_TRY(check("model.embed_tokens.weight", 1, c.hidden_size, "hidden_size", "hidden_size"));
  if (c.qk_norm) TESSERA_TRY(check("model.layers.0.self_attn.q_norm.weight", 0, c.head_dim, "head_dim", "head_dim"));
  const std::string heads_times_dim =
      "num_attention_heads " + std::to_string(c.num_heads) + " x head_dim " + std::to_string(c.head_dim);
  TESSERA_TRY(check("model.layers.0.self_attn.q_proj.weight", 0, c.num_heads * c.head_dim, heads_key, heads_times_dim));
  TESSERA_TRY(check("model.layers.0.self_attn.k_proj.weight", 0, c.num_kv_heads * c.head_dim, "num_key_value_heads",
                    "num_key_value_heads " + std::to_string(c.num_kv_heads) + " x head_dim " +
                        std::to_string(c.head_dim)));
  TESSERA_TRY(check("model.layers.0.mlp.gate_proj.weight", 0, c.intermediate_size, "intermediate_size",
                    "intermediate_size"));
  return Status::ok();
}

}  // namespace

Expected<Graph> build_decoder_graph(const ModelConfig& config, const DecoderOptions& options,
                                    const Checkpoint* weights) {
  if (weights) {
    TESSERA_TRY(check_config_against_checkpoint(config, *weights));
    // Every tensor the model needs, of the right shape and a floating dtype; nothing else (a tied
    // checkpoint may still carry lm_head.weight, which is then unused).
    std::set<std::string> needed;
    for (const auto& [name, shape] : expected_tensors(config)) {
      needed.insert(name);
      const Checkpoint::Entry* e = weights->find(name);
      if (!e)
        return make_error("checkpoint: missing tensor '" + name + "' (shape " + shape_text(shape) + ") that " +
                          config.architecture_name + " needs");
      if (e->tensor->shape != shape)
        return make_error("checkpoint: tensor '" + name + "' has shape " + shape_text(e->tensor->shape) +
                          ", but the config needs " + shape_text(shape))
            .at(SourceLoc{e->file});
      // F64 checkpoints are not read: the decoder's weights are F32, F16 or BF16.
      if (!dtype_is_float(e->tensor->dtype) || e->tensor->dtype == DType::F64)
        return make_error("checkpoint: tensor '" + name + "' is " +
                          std::string(safetensors_dtype_name(e->tensor->dtype)) + "; weights must be F32, F16 or BF16")
            .at(SourceLoc{e->file});
    }
    for (const auto& [name, entry] : weights->tensors())
      if (!needed.count(name) && !(config.tie_word_embeddings && name == "lm_head.weight"))
        return make_error("checkpoint: unexpected tensor '" + name + "' (" + config.architecture_name +
                          " with this config has no such parameter)")
            .at(SourceLoc{entry.file});
  }
  return DecoderBuilder(config, options, weights).build();
}

}  // namespace tessera::hf

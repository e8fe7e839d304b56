// The hf frontend (plugins/frontends/hf) end to end: tiny Llama, Qwen2 and Qwen3 models (2 layers,
// hidden 64, 4 heads, 2 KV heads, vocab 128) with weights the test writes to safetensors, compiled
// with the default pipeline and run on the simulator against the reference evaluator, for prefill
// and for three consecutive decode steps (whose logits must equal the prefill's at the same
// positions); checkpoint parameters as references to their tensors (printout, JSON, the data read
// at run time; a TinyLlama-size sparse checkpoint compiled without reading its weights; a file
// changed or deleted after the compile is an error at run); config.json and checkpoint errors
// (unsupported architecture, missing / unexpected / misshapen tensors, sharded checkpoints,
// corrupt files) and the CLI (`compile MODEL`, `--layer`).
// The comparison with transformers itself is bench/hf_check.py (needs PyTorch).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/src/eval/safetensors_file.h"
#include "plugins/frontends/hf/model_config.h"
#include "support/built_plugins.h"
#include "support/cli_runner.h"
#include "tessera/eval/constant_data.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

struct TinyModel {
  std::string architecture;
  bool tied = false;
  int layers = 2;
};

std::string tiny_config(const TinyModel& m) {
  std::string extra;
  if (m.architecture == "Qwen3ForCausalLM") extra = R"("head_dim": 16, "attention_bias": false, )";
  return std::string("{\n") + R"(  "architectures": [")" + m.architecture + R"("],)" + "\n" +
         R"(  "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": )" + std::to_string(m.layers) +
         R"(, "num_attention_heads": 4,)" + "\n" +
         R"(  "num_key_value_heads": 2, "vocab_size": 128, "max_position_embeddings": 64, "rms_norm_eps": 1e-05,)" +
         "\n  " + extra + R"("rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": )" +
         (m.tied ? "true" : "false") + "\n}\n";
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

// The tensors of a checkpoint of `c`, by name, with their shapes (transformers' names).
std::vector<std::pair<std::string, std::vector<int64_t>>> checkpoint_tensors(const hf::ModelConfig& c) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) { out.emplace_back(name, std::move(shape)); };
  const int64_t h = c.hidden_size, d = c.head_dim;
  add("model.embed_tokens.weight", {c.vocab_size, h});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {h});
    add(p + "post_attention_layernorm.weight", {h});
    for (auto [name, heads] : {std::pair{"q", c.num_heads}, std::pair{"k", c.num_kv_heads}, std::pair{"v", c.num_kv_heads}}) {
      add(p + "self_attn." + name + "_proj.weight", {heads * d, h});
      if (c.qkv_bias) add(p + "self_attn." + name + "_proj.bias", {heads * d});
    }
    if (c.qk_norm) {
      add(p + "self_attn.q_norm.weight", {d});
      add(p + "self_attn.k_norm.weight", {d});
    }
    add(p + "self_attn.o_proj.weight", {h, c.num_heads * d});
    add(p + "mlp.gate_proj.weight", {c.intermediate_size, h});
    add(p + "mlp.up_proj.weight", {c.intermediate_size, h});
    add(p + "mlp.down_proj.weight", {h, c.intermediate_size});
  }
  add("model.norm.weight", {h});
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, h});
  return out;
}

// Deterministic weights: linear weights ~ U(-1, 1) / sqrt(in), norms around 1, biases small.
SafetensorsFile tiny_weights(const hf::ModelConfig& c, uint64_t seed, DType dtype = DType::F32) {
  SafetensorsFile f;
  SplitMix64 rng(seed);
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const bool norm = name.find("norm") != std::string::npos;
    const bool bias = name.size() > 4 && name.substr(name.size() - 4) == "bias";
    const double scale = norm || bias ? 0.2 : 1.0 / std::sqrt(static_cast<double>(shape.back()));
    std::string bytes;
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>((norm ? 1.0 : 0.0) + scale * (2 * rng.uniform() - 1));
      if (dtype == DType::F32) {
        bytes.append(reinterpret_cast<const char*>(&v), 4);
      } else {  // bf16: the top half of the f32 (truncation is fine for test data)
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        const uint16_t top = static_cast<uint16_t>(bits >> 16);
        bytes.append(reinterpret_cast<const char*>(&top), 2);
      }
    }
    f.tensors.push_back({name, dtype, shape, bytes});
  };
  for (const auto& [name, shape] : checkpoint_tensors(c)) add(name, shape);
  return f;
}

// A BF16 checkpoint of `c` whose data section is a hole: the header is written, then the file is
// extended to its full size without writing (or storing) a byte of weights, so a checkpoint of
// billions of parameters costs no disk.
void write_sparse_checkpoint(const std::string& path, const hf::ModelConfig& c) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, shape] : checkpoint_tensors(c)) {
    uint64_t bytes = 2;
    for (int64_t d : shape) bytes *= static_cast<uint64_t>(d);
    header[name] = {{"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[static_cast<size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  write_text(path, head + text);
  fs::resize_file(path, 8 + text.size() + offset);
}

// Bytes of `path` in the page cache (mincore over a fresh mapping, which itself reads nothing):
// what some process has read (or written) of the file recently.
int64_t cached_bytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  ::fstat(fd, &st);
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return -1;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  const int rc = ::mincore(map, size, resident.data());
  ::munmap(map, size);
  if (rc != 0) return -1;
  int64_t pages = 0;
  for (unsigned char r : resident) pages += r & 1;
  return pages * static_cast<int64_t>(page);
}

// A model directory: config.json and (unless `weights` is false) model.safetensors.
std::string make_model_dir(const test::TempDir& tmp, const TinyModel& m, bool weights = true, DType dtype = DType::F32) {
  const fs::path dir = fs::path(tmp.path()) / m.architecture;
  fs::create_directories(dir);
  const std::string config = tiny_config(m);
  write_text(dir / "config.json", config);
  if (weights) {
    Expected<hf::ModelConfig> c = hf::parse_model_config(config, "config.json");
    EXPECT_TRUE(c) << c.error().render();
    Status st = write_safetensors_file((dir / "model.safetensors").string(), tiny_weights(*c, 11, dtype));
    EXPECT_TRUE(st) << st.message();
  }
  return dir.string();
}

class HfModelsTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    auto spec = load_pipeline_file(TESSERA_SOURCE_DIR "/pipelines/default.yaml");
    ASSERT_TRUE(spec) << spec.error().render();
    pipeline_ = std::move(*spec);
    ASSERT_TRUE(validate_pipeline(pipeline_, host_->registry()));
    ASSERT_NE(h100(), nullptr);
  }

  Expected<Graph> import(const std::string& text, DType dtype = DType::F32) {
    std::unique_ptr<Frontend> frontend = host_->registry().make_frontend("hf");
    EXPECT_NE(frontend, nullptr);
    if (!frontend) return make_error("no hf frontend");
    FrontendOptions options;
    options.dtype = dtype;
    return frontend->import(FrontendInput{text, "<model>"}, options);
  }

  Graph import_ok(const std::string& text, DType dtype = DType::F32) {
    Expected<Graph> g = import(text, dtype);
    if (!g) {
      ADD_FAILURE() << g.error().render();
      return Graph();
    }
    return std::move(*g);
  }

  std::string import_error(const std::string& text) {
    Expected<Graph> g = import(text);
    EXPECT_FALSE(g) << text << " imported";
    return g ? std::string() : g.error().render();
  }

  // Lowers to Kernel IR and runs on the simulator with `inputs`.
  ValueMap run_on_sim(const Graph& kernels, const ValueMap& inputs) {
    auto sim = host_->registry().make_target("sim");
    EXPECT_NE(sim, nullptr);
    TargetOptions to;
    to.arch = h100()->arch;
    to.device = h100();
    auto ran = sim->execute(kernels, inputs, to);
    EXPECT_TRUE(ran) << ran.error().render();
    return ran ? ran->outputs : ValueMap();
  }

  Graph lowered(const Graph& torch) {
    Graph g = torch;
    Status st = lower(g, pipeline_, Dialect::Kernel, h100());
    EXPECT_TRUE(st) << st.message();
    return g;
  }

  PipelineSpec pipeline_;
};

const TinyModel kTinyModels[] = {{"LlamaForCausalLM", false}, {"Qwen2ForCausalLM", true}, {"Qwen3ForCausalLM", false}};

// Max |a - b| over max |b|.
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return a.size() == b.size() ? diff / (scale > 0 ? scale : 1) : INFINITY;
}

TEST_F(HfModelsTest, TinyModelsMatchTheReferenceOnTheSimulatorForPrefill) {
  test::TempDir tmp;
  for (const TinyModel& m : kTinyModels) {
    SCOPED_TRACE(m.architecture);
    const std::string dir = make_model_dir(tmp, m);
    const Graph torch = import_ok(dir + " --seq-len 5");
    ASSERT_FALSE(HasFailure());
    const Graph kernels = lowered(torch);
    ValueMap inputs = make_inputs(torch, 3);
    auto expected = evaluate_reference(torch, inputs);
    ASSERT_TRUE(expected) << expected.error().render();
    ValueMap outputs = run_on_sim(kernels, inputs);
    ASSERT_EQ(torch.outputs(), std::vector<std::string>{"logits"});
    auto cmp = compare_output(*expected, outputs, "logits");
    ASSERT_TRUE(cmp) << cmp.error().render();
    EXPECT_TRUE(cmp->within(default_output_rtol(DType::F32))) << cmp->str();
    EXPECT_EQ(outputs.at("logits").type.shape, (Shape{1, 5, 128}));
  }
}

// One compiled decode step serves every position: three steps from an empty cache, each fed the
// caches the previous one wrote, give the prefill's logits at positions 0, 1, 2.
TEST_F(HfModelsTest, ThreeDecodeStepsEqualThePrefillAtTheSamePositions) {
  test::TempDir tmp;
  const std::vector<double> tokens = {17, 3, 101};
  for (const TinyModel& m : kTinyModels) {
    SCOPED_TRACE(m.architecture);
    const std::string dir = make_model_dir(tmp, m);
    const Graph prefill = import_ok(dir + " --seq-len 3");
    const Graph step = import_ok(dir + " --decode --cache-len 4");
    ASSERT_FALSE(HasFailure());
    ValueMap prefill_inputs;
    prefill_inputs["input_ids"] = TensorValue(TensorType{{1, 3}, DType::I64}, tokens);
    const ValueMap prefill_out = run_on_sim(lowered(prefill), prefill_inputs);
    ASSERT_TRUE(prefill_out.count("logits"));
    const std::vector<double>& all = prefill_out.at("logits").data;

    const Graph step_kernels = lowered(step);
    ValueMap inputs = make_inputs(step, 0);
    for (const std::string& id : step.outputs())
      if (id != "logits") {  // lN_k_cache_next: the cache inputs start as zeros
        const std::string in = id.substr(0, id.size() - 5);
        ASSERT_TRUE(inputs.count(in)) << in;
        for (double v : inputs.at(in).data) ASSERT_EQ(v, 0.0);
      }
    for (int pos = 0; pos < 3; ++pos) {
      SCOPED_TRACE("position " + std::to_string(pos));
      inputs["input_ids"] = TensorValue(TensorType{{1, 1}, DType::I64}, {tokens[static_cast<size_t>(pos)]});
      inputs["position"] = TensorValue(TensorType{{1}, DType::I64}, {static_cast<double>(pos)});
      auto expected = evaluate_reference(step, inputs);
      ASSERT_TRUE(expected) << expected.error().render();
      ValueMap out = run_on_sim(step_kernels, inputs);
      for (const std::string& id : step.outputs()) {
        auto cmp = compare_output(*expected, out, id);
        ASSERT_TRUE(cmp) << cmp.error().render();
        EXPECT_TRUE(cmp->within(default_output_rtol(DType::F32))) << id << ": " << cmp->str();
      }
      const std::vector<double> row(all.begin() + pos * 128, all.begin() + (pos + 1) * 128);
      EXPECT_LT(relative_difference(out.at("logits").data, row), 1e-4);
      for (const std::string& id : step.outputs())
        if (id != "logits") inputs[id.substr(0, id.size() - 5)] = out.at(id);  // the next step's cache
    }
  }
}

// Identical layers compile to identical kernels, compiled once: in a 4-layer model every kernel of
// layers 1..3 has the CUDA source of the same kernel of layer 1 (layer 0 reads the embedding
// instead of the previous layer's output), each launched with its own layer's buffers, and the
// distinct sources are one layer's kernels plus layer 0's embedding readers plus the kernels
// outside the layers, and each kernel records the knob values of layer 1's. The shared kernels
// still match the reference on the simulator.
TEST_F(HfModelsTest, IdenticalLayersShareTheirKernels) {
  test::TempDir tmp;
  for (TinyModel m : kTinyModels) {
    m.layers = 4;
    SCOPED_TRACE(m.architecture);
    const std::string dir = make_model_dir(tmp, m);
    const Graph torch = import_ok(dir + " --seq-len 5");
    ASSERT_FALSE(HasFailure());
    Graph cuda = torch;
    Status st = lower(cuda, pipeline_, Dialect::Cuda, h100());
    ASSERT_TRUE(st) << st.message();

    // The kernels of each layer, in graph order (a kernel belongs to layer N when its node is lN_...).
    std::vector<std::vector<const Node*>> layers(4);
    std::vector<const Node*> outside;
    std::set<std::string> sources;
    for (const Node* n : cuda.nodes()) {
      const auto* op = n->op_as<CudaOp>();
      if (op == nullptr) continue;
      sources.insert(op->name + "\n" + op->source);
      bool in_layer = false;
      for (int l = 0; l < 4; ++l)
        if (n->id().rfind("l" + std::to_string(l) + "_", 0) == 0) {
          layers[static_cast<size_t>(l)].push_back(n);
          in_layer = true;
        }
      if (!in_layer) outside.push_back(n);
    }
    const size_t per_layer = layers[1].size();
    ASSERT_GT(per_layer, 5u);
    size_t layer0_own = 0;
    for (size_t k = 0; k < layers[0].size() && k < per_layer; ++k)
      layer0_own += layers[0][k]->op_as<CudaOp>()->source != layers[1][k]->op_as<CudaOp>()->source;
    EXPECT_LE(layer0_own, 2u);
    for (int l = 2; l < 4; ++l) {
      SCOPED_TRACE("layer " + std::to_string(l));
      ASSERT_EQ(layers[static_cast<size_t>(l)].size(), per_layer);
      for (size_t k = 0; k < per_layer; ++k) {
        const auto& op = *layers[static_cast<size_t>(l)][k]->op_as<CudaOp>();
        const auto& first = *layers[1][k]->op_as<CudaOp>();
        EXPECT_EQ(op.name, first.name);
        EXPECT_EQ(op.source, first.source);
        // The same recorded knob values (stage_inputs' STAGE names inputs by position, not by the
        // layer's buffer names), so a decision tuned on one layer replays on every other.
        EXPECT_EQ(layers[static_cast<size_t>(l)][k]->choices, layers[1][k]->choices) << op.name;
        // Launched with this layer's weights: no buffer of another layer.
        for (const KernelParam& param : op.params) {
          if (param.name.rfind("p_model_layers_", 0) == 0) {
            EXPECT_EQ(param.name.rfind("p_model_layers_" + std::to_string(l) + "_", 0), 0u) << param.name;
          }
          for (int other = 0; other < 4; ++other) {
            if (other != l && other != l - 1) {
              EXPECT_NE(param.name.rfind("l" + std::to_string(other) + "_", 0), 0u) << param.name;
            }
          }
        }
      }
    }
    EXPECT_EQ(sources.size(), per_layer + layer0_own + outside.size());

    // Kernel IR of the same pipeline on the simulator against the reference evaluator.
    const Graph kernels = lowered(torch);
    ValueMap inputs = make_inputs(torch, 5);
    auto expected = evaluate_reference(torch, inputs);
    ASSERT_TRUE(expected) << expected.error().render();
    ValueMap outputs = run_on_sim(kernels, inputs);
    auto cmp = compare_output(*expected, outputs, "logits");
    ASSERT_TRUE(cmp) << cmp.error().render();
    EXPECT_TRUE(cmp->within(default_output_rtol(DType::F32))) << cmp->str();
  }
}

TEST_F(HfModelsTest, Bf16WeightsConvertToTheCompileDtype) {
  test::TempDir tmp;
  const std::string dir = make_model_dir(tmp, kTinyModels[0], true, DType::BF16);
  const Graph f32 = import_ok(dir + " --seq-len 2");
  const Graph bf16 = import_ok(dir + " --seq-len 2", DType::BF16);
  ASSERT_FALSE(HasFailure());
  const Node* w = f32.find("p_model_layers_0_mlp_up_proj_weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->type.dtype, DType::F32);
  Expected<TensorValue> values = constant_data(*w->op_as<ConstantOp>(), w->type);
  ASSERT_TRUE(values) << values.error().render();
  Expected<SafetensorsFile> file = read_safetensors_file(dir + "/model.safetensors");
  ASSERT_TRUE(file);
  const SafetensorsTensor* stored = file->find("model.layers.0.mlp.up_proj.weight");
  ASSERT_NE(stored, nullptr);
  Expected<std::vector<double>> exact =
      safetensors_values(SafetensorsTensorView{stored->name, stored->dtype, stored->shape, stored->bytes}, "file");
  ASSERT_TRUE(exact);
  EXPECT_EQ(values->data, *exact);  // every bf16 is an f32
  EXPECT_EQ(bf16.find("p_model_layers_0_mlp_up_proj_weight")->type.dtype, DType::BF16);
  EXPECT_EQ(bf16.find("logits")->type.dtype, DType::BF16);
  EXPECT_EQ(bf16.find("input_ids")->type.dtype, DType::I64);
}

// With a checkpoint, every parameter refers to its tensor (file, size, time) instead of holding
// its values: the printout names the tensor and the file, the JSON round-trips, and the data the
// backends read is the file's.
TEST_F(HfModelsTest, CheckpointParametersReferToTheirTensor) {
  test::TempDir tmp;
  const std::string dir = make_model_dir(tmp, kTinyModels[1]);
  const std::string file = (fs::path(dir) / "model.safetensors").string();
  const Graph g = import_ok(dir + " --seq-len 3");
  ASSERT_FALSE(HasFailure());
  Expected<SafetensorsFile> stored = read_safetensors_file(file);
  ASSERT_TRUE(stored);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  const CheckpointRef expected{file, static_cast<int64_t>(st.st_size),
                               static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  int params = 0;
  for (const Node* n : g.nodes()) {
    const auto* c = n->op_as<ConstantOp>();
    if (!c || c->path.empty()) continue;
    SCOPED_TRACE(n->id());
    ++params;
    ASSERT_TRUE(c->checkpoint);
    EXPECT_EQ(*c->checkpoint, expected);
    EXPECT_TRUE(c->values.empty());
    const SafetensorsTensor* t = stored->find(c->path);
    ASSERT_NE(t, nullptr);
    Expected<TensorValue> v = constant_data(*c, n->type);
    ASSERT_TRUE(v) << v.error().render();
    EXPECT_EQ(v->data, *safetensors_values(SafetensorsTensorView{t->name, t->dtype, t->shape, t->bytes}, file));
  }
  EXPECT_EQ(params, 1 + 2 * 12 + 1);  // embedding (tied: also the lm_head), 12 per layer, norm
  const std::string text = print_graph(g);
  EXPECT_NE(text.find("p_model_layers_0_mlp_up_proj_weight: (96, 64) float32 = param model.layers.0.mlp.up_proj.weight "
                      "from " + file + "  # file_bytes=" + std::to_string(expected.file_bytes) +
                      " modified_ns=" + std::to_string(expected.modified_ns) + "\n"),
            std::string::npos)
      << text.substr(0, 2000);
  Expected<Graph> back = graph_from_json_text(graph_to_json_text(g), "model.json");
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(*back, g));
  EXPECT_EQ(print_graph(*back), text);
  Expected<Graph> parsed = parse_graph(text, "model.tir");
  ASSERT_TRUE(parsed) << parsed.error().render();
  EXPECT_EQ(print_graph(*parsed), text);
  for (const Node* n : g.nodes())
    if (const auto* k = n->op_as<ConstantOp>(); k && k->checkpoint) {
      const Node* p = parsed->find(n->id());
      ASSERT_NE(p, nullptr) << n->id();
      ASSERT_NE(p->op_as<ConstantOp>(), nullptr) << n->id();
      EXPECT_EQ(p->op_as<ConstantOp>()->checkpoint, k->checkpoint) << n->id();
      EXPECT_EQ(p->op_as<ConstantOp>()->path, k->path) << n->id();
    }
}

// A checkpoint far beyond what could be copied into a program (TinyLlama-1.1B's config and tensor
// shapes, 1.1 G BF16 parameters in a sparse 2.2 GB file) compiles from its headers alone: the
// graph holds references, and none of the weight bytes is read.
TEST_F(HfModelsTest, ALargeCheckpointCompilesWithoutReadingItsWeights) {
  test::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "tinyllama";
  fs::create_directories(dir);
  const std::string config_text =
      test::read_file(TESSERA_SOURCE_DIR "/data/models/TinyLlama--TinyLlama-1.1B-Chat-v1.0/config.json");
  write_text(dir / "config.json", config_text);
  Expected<hf::ModelConfig> c = hf::parse_model_config(config_text, "config.json");
  ASSERT_TRUE(c) << c.error().render();
  const std::string file = (dir / "model.safetensors").string();
  write_sparse_checkpoint(file, *c);
  ASSERT_GT(fs::file_size(file), int64_t{2} << 30);
  const int64_t cached_before = cached_bytes(file);
  ASSERT_GE(cached_before, 0);

  const Graph with = import_ok(dir.string() + " --seq-len 4");
  const Graph without = import_ok("TinyLlama/TinyLlama-1.1B-Chat-v1.0 --seq-len 4");
  ASSERT_FALSE(HasFailure());
  int64_t parameters = 0, literal_values = 0;
  for (const Node* n : with.nodes())
    if (const auto* k = n->op_as<ConstantOp>()) {
      literal_values += static_cast<int64_t>(k->values.size());
      if (k->path.empty()) continue;
      EXPECT_TRUE(k->checkpoint) << n->id();
      parameters += num_elements(n->type.shape);
    }
  EXPECT_EQ(parameters, 1100048384);
  EXPECT_LT(literal_values, 100);  // the positions and RoPE frequencies, nothing of the weights
  EXPECT_EQ(with.nodes().size(), without.nodes().size());
  EXPECT_LT(graph_to_json_text(with).size(), 2 * graph_to_json_text(without).size());

  // The whole pipeline, in a process of its own; still nothing of the data section read: the
  // header's pages and the kernel's read-around of a mapping's fault (8 MB here) at most.
  test::CliResult r = test::run_cli({"compile", dir.string(), "--seq-len", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("parameters: 1.10 G (1100048384)"), std::string::npos) << r.out;
  const int64_t cached_after = cached_bytes(file);
  EXPECT_LT(cached_after, int64_t{64} << 20) << "of " << fs::file_size(file) << " bytes";

  // The check can fail: reading one tensor (the 131 MB embedding) brings its pages in.
  const Node* embed = with.find("p_model_embed_tokens_weight");
  ASSERT_NE(embed, nullptr);
  double sum = 0;
  Status read = constant_data_windows(*embed->op_as<ConstantOp>(), embed->type, int64_t{1} << 20,
                                      [&](int64_t, std::span<const double> values) {
                                        for (double v : values) sum += v;
                                        return Status::ok();
                                      });
  ASSERT_TRUE(read) << read.message();
  EXPECT_EQ(sum, 0.0);  // a hole reads as zeros
  EXPECT_GT(cached_bytes(file), int64_t{100} << 20);
}

// The weights are read when a run needs them: a checkpoint rewritten or deleted after the compile
// is an error naming the file and the tensor, on every backend, never stale data or a crash.
TEST_F(HfModelsTest, ACheckpointChangedOrGoneAfterTheCompileIsAnErrorAtRun) {
  test::TempDir tmp;
  const TinyModel m = kTinyModels[0];
  const std::string dir = make_model_dir(tmp, m);
  const std::string file = (fs::path(dir) / "model.safetensors").string();
  const Graph torch = import_ok(dir + " --seq-len 2");
  ASSERT_FALSE(HasFailure());
  const Graph kernels = lowered(torch);
  const ValueMap inputs = make_inputs(torch, 1);
  ASSERT_TRUE(evaluate_reference(torch, inputs));
  auto sim = host_->registry().make_target("sim");
  ASSERT_NE(sim, nullptr);
  TargetOptions to;
  to.arch = h100()->arch;
  to.device = h100();
  ASSERT_TRUE(sim->execute(kernels, inputs, to));

  auto expect_errors = [&](const std::string& why) {
    Expected<ValueMap> reference = evaluate_reference(torch, inputs);
    ASSERT_FALSE(reference);
    Expected<TargetRun> ran = sim->execute(kernels, inputs, to);
    ASSERT_FALSE(ran);
    for (const Diagnostic& d : {reference.error(), ran.error()}) {
      EXPECT_NE(d.message.find("cannot read tensor 'model.embed_tokens.weight' of checkpoint " + file + ": " + why),
                std::string::npos)
          << d.render();
      EXPECT_EQ(d.node, "p_model_embed_tokens_weight");
    }
  };
  // Rewritten with other weights of the same size (and a later time).
  Expected<hf::ModelConfig> c = hf::parse_model_config(tiny_config(m), "config.json");
  ASSERT_TRUE(c);
  ASSERT_TRUE(write_safetensors_file(file, tiny_weights(*c, 12)));
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(3));
  expect_errors("the file changed after the program was compiled (then ");
  // Deleted.
  fs::remove(file);
  expect_errors("No such file or directory (the file was there when the program was compiled)");

  // The same through the CLI: a graph saved as JSON, run after its checkpoint changed.
  const std::string dir2 = make_model_dir(tmp, kTinyModels[2]);
  const std::string json = tmp.path() + "/model.json";
  test::CliResult r = test::run_cli({"compile", dir2, "--seq-len", "2", "--ir", "torch", "--emit", "json", "-o", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_cli({"run", "--from-ir", json, "--target", "sim"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string file2 = (fs::path(dir2) / "model.safetensors").string();
  fs::last_write_time(file2, fs::last_write_time(file2) - std::chrono::seconds(60));
  r = test::run_cli({"run", "--from-ir", json, "--target", "sim"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("of checkpoint " + file2 + ": the file changed after the program was compiled"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cannot read tensor 'model."), std::string::npos) << r.err;
}

TEST_F(HfModelsTest, WithoutWeightsParametersAreSeededAndNotMaterialized) {
  const Graph g = import_ok("Qwen/Qwen2.5-7B --seq-len 4");
  ASSERT_FALSE(HasFailure());
  int64_t params = 0;
  for (const Node* n : g.nodes())
    if (const auto* c = n->op_as<ConstantOp>(); c && !c->path.empty()) {
      ++params;
      EXPECT_TRUE(c->values.empty()) << n->id();
      EXPECT_TRUE(c->init == "randn" || c->init == "ones") << n->id() << " " << c->init;
    }
  EXPECT_EQ(params, 1 + 28 * 12 + 1 + 1);  // embedding, 12 per layer (q/k/v biases), norm, lm_head
  // Deterministic: the same import twice is the same graph.
  EXPECT_EQ(print_graph(g), print_graph(import_ok("Qwen/Qwen2.5-7B --seq-len 4")));
}

// One layer of a decode step: its hidden state, the position and its caches in; its output and
// next caches out, with that layer's parameters.
TEST_F(HfModelsTest, OneDecodeLayer) {
  const Graph g = import_ok("Qwen/Qwen2.5-7B --decode --cache-len 8 --layer 3");
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(g.outputs(), (std::vector<std::string>{"l3_out", "l3_k_cache_next", "l3_v_cache_next"}));
  ASSERT_NE(g.find("l3_k_cache"), nullptr);
  EXPECT_EQ(g.find("l3_k_cache")->type.shape, (Shape{1, 4, 8, 128}));
  EXPECT_EQ(g.find("x")->type.shape, (Shape{1, 1, 3584}));
  EXPECT_EQ(g.find("position")->type, (TensorType{{1}, DType::I64}));
  EXPECT_NE(g.find("p_model_layers_3_self_attn_q_proj_bias"), nullptr);
  EXPECT_EQ(g.find("embed"), nullptr);
}

// The layers come from one template: layer 0 and layer 1 alone differ only in their names.
TEST_F(HfModelsTest, LayersAreOneTemplate) {
  auto layer_text = [&](int n) {
    std::string text = print_graph(import_ok("TinyLlama/TinyLlama-1.1B-Chat-v1.0 --seq-len 4 --layer " + std::to_string(n)));
    const std::string name = "layers_" + std::to_string(n) + "_", dotted = "layers." + std::to_string(n) + ".",
                      prefix = "l" + std::to_string(n) + "_";
    for (const auto& [from, to] : {std::pair{name, std::string("layers_N_")}, std::pair{dotted, std::string("layers.N.")},
                                   std::pair{prefix, std::string("lN_")}})
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    // Seeds derive from the parameter names, so they differ; everything else must not.
    for (size_t at = text.find("seed="); at != std::string::npos; at = text.find("seed=", at + 5)) {
      const size_t end = text.find_first_of(" \n", at);
      text.replace(at, end - at, "seed=S");
    }
    return text;
  };
  EXPECT_EQ(layer_text(0), layer_text(1));
}

TEST_F(HfModelsTest, KnownModelsBuildWithTheirShapes) {
  struct Known {
    const char* id;
    int64_t vocab, hidden, params;
  };
  for (const Known& k : {Known{"TinyLlama/TinyLlama-1.1B-Chat-v1.0", 32000, 2048, 2 + 22 * 9 + 1},
                         Known{"Qwen/Qwen2.5-0.5B", 151936, 896, 1 + 24 * 12 + 1},
                         Known{"Qwen/Qwen3-8B", 151936, 4096, 2 + 36 * 11 + 1},
                         Known{"meta-llama/Meta-Llama-3-8B", 128256, 4096, 2 + 32 * 9 + 1}}) {
    SCOPED_TRACE(k.id);
    const Graph g = import_ok(std::string(k.id) + " --seq-len 2");
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(g.find("logits")->type.shape, (Shape{1, 2, k.vocab}));
    EXPECT_EQ(g.find("embed")->type.shape, (Shape{1, 2, k.hidden}));
    int64_t params = 0;
    for (const Node* n : g.nodes())
      if (const auto* c = n->op_as<ConstantOp>(); c && !c->path.empty()) ++params;
    EXPECT_EQ(params, k.params);
  }
}

TEST_F(HfModelsTest, ConfigErrorsNameTheFileAndKey) {
  test::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "m";
  fs::create_directories(dir);
  std::string config = tiny_config({"MistralForCausalLM", false});
  write_text(dir / "config.json", config);
  std::string err = import_error(dir.string());
  EXPECT_NE(err.find("config.json:2:3: error: config.json key 'architectures': architecture 'MistralForCausalLM' "
                     "is not supported (supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)"),
            std::string::npos)
      << err;

  config = tiny_config({"LlamaForCausalLM", false});
  config.replace(config.find("\"num_attention_heads\": 4"), 24, "\"num_attention_heads\": 0");
  write_text(dir / "config.json", config);
  err = import_error(dir.string());
  EXPECT_NE(err.find("config.json:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("key 'num_attention_heads': is 0, not a positive integer"), std::string::npos) << err;

  config = tiny_config({"LlamaForCausalLM", false});
  config.replace(config.find("\"hidden_size\": 64, "), 19, "");
  write_text(dir / "config.json", config);
  err = import_error(dir.string());
  EXPECT_NE(err.find("key 'hidden_size': missing"), std::string::npos) << err;

  config = tiny_config({"LlamaForCausalLM", false});
  config.replace(config.find("\"silu\""), 6, "\"gelu\"");
  write_text(dir / "config.json", config);
  EXPECT_NE(import_error(dir.string()).find("key 'hidden_act'"), std::string::npos);

  // A syntax error is located like every other error, in the reader's words, not the library's.
  write_text(dir / "config.json", "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": 64 \"x\"\n}\n");
  err = import_error(dir.string());
  EXPECT_NE(err.find("config.json:3:23: error: config.json is not valid JSON: syntax error while parsing object - unexpected string literal; "
                     "expected '}'"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("json.exception"), std::string::npos) << err;
}

// Every size is bounded, and consistent with the others, before anything is sized by it: a
// head_dim of 2^31 once allocated 8 GiB of RoPE frequencies (std::bad_alloc), and 2^31 - 1 layers
// were built one after another until memory ran out.
TEST_F(HfModelsTest, ConfigSizesAreBoundedBeforeAnythingIsSized) {
  test::TempDir tmp;
  const fs::path dir = fs::path(tmp.path()) / "m";
  fs::create_directories(dir);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string config = tiny_config({"LlamaForCausalLM", false});
    const size_t at = config.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    config.replace(at, from.size(), to);
    write_text(dir / "config.json", config);
    return import_error(dir.string() + " --seq-len 2");
  };
  std::string err = with("\"rope_theta\"", "\"head_dim\": 2147483648, \"rope_theta\"");
  EXPECT_NE(err.find("config.json:5:3: error: config.json key 'head_dim': is 2147483648, larger than Tessera accepts "
                     "(at most 2048)"),
            std::string::npos)
      << err;
  err = with("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 2147483647");
  EXPECT_NE(err.find("config.json:3:47: error: config.json key 'num_hidden_layers': is 2147483647, larger than "
                     "Tessera accepts (at most 1024)"),
            std::string::npos)
      << err;
  err = with("\"vocab_size\": 128", "\"vocab_size\": 18446744073709551615");
  EXPECT_NE(err.find("key 'vocab_size': is 18446744073709551615, larger than Tessera accepts"), std::string::npos) << err;
  err = with("\"num_attention_heads\": 4", "\"num_attention_heads\": 0");
  EXPECT_NE(err.find("key 'num_attention_heads': is 0, not a positive integer"), std::string::npos) << err;
  // Sizes within their bounds whose product is not.
  err = with("\"num_attention_heads\": 4,", "\"num_attention_heads\": 1024, \"head_dim\": 2048,");
  EXPECT_NE(err.find("key 'head_dim': num_attention_heads 1024 x head_dim 2048 = 2097152, wider than the attention "
                     "Tessera accepts (at most 65536)"),
            std::string::npos)
      << err;
  err = with("\"rope_theta\"", "\"layer_types\": [\"full_attention\"], \"rope_theta\"");
  EXPECT_NE(err.find("key 'layer_types': lists 1 layers, but num_hidden_layers is 2"), std::string::npos) << err;

  // The CLI: an error at once, exit 1 (not an abort).
  with("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 2147483647");
  test::CliResult r = test::run_cli({"compile", dir.string(), "--seq-len", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("config.json:3:47: error: config.json key 'num_hidden_layers'"), std::string::npos) << r.err;
  with("\"rope_theta\"", "\"head_dim\": 2147483648, \"rope_theta\"");
  r = test::run_cli({"compile", dir.string(), "--seq-len", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("config.json:5:3: error: config.json key 'head_dim'"), std::string::npos) << r.err;
}

// The config's sizes against the checkpoint's: a disagreement is an error at the config's key,
// naming the tensor that shows it, before the tensors are checked one by one.
TEST_F(HfModelsTest, ConfigSizesMustAgreeWithTheCheckpoint) {
  test::TempDir tmp;
  const TinyModel two_layers = kTinyModels[2];  // Qwen3: head_dim given explicitly
  const std::string dir = make_model_dir(tmp, two_layers);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string config = tiny_config(two_layers);
    const size_t at = config.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    config.replace(at, from.size(), to);
    write_text(fs::path(dir) / "config.json", config);
    return import_error(dir + " --seq-len 2");
  };
  std::string err = with("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3");
  EXPECT_NE(err.find("config.json:3:47: error: config.json key 'num_hidden_layers': is 3, but the checkpoint has no "
                     "tensor of layer 2 (model.layers.2.*); it has layers 0..1"),
            std::string::npos)
      << err;
  err = with("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1");
  EXPECT_NE(err.find("key 'num_hidden_layers': is 1, but the checkpoint has layer 1 (tensors model.layers.1.*)"),
            std::string::npos)
      << err;
  err = with("\"head_dim\": 16", "\"head_dim\": 8");
  EXPECT_NE(err.find("config.json:5:3: error: config.json key 'head_dim': head_dim = 8, but checkpoint tensor "
                     "'model.layers.0.self_attn.q_norm.weight' has shape [16]"),
            std::string::npos)
      << err;
  err = with("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4");
  EXPECT_NE(err.find("key 'num_key_value_heads': num_key_value_heads 4 x head_dim 16 = 64, but checkpoint tensor "
                     "'model.layers.0.self_attn.k_proj.weight' has shape [32, 64]"),
            std::string::npos)
      << err;
  err = with("\"vocab_size\": 128", "\"vocab_size\": 256");
  EXPECT_NE(err.find("key 'vocab_size': vocab_size = 256, but checkpoint tensor 'model.embed_tokens.weight' has "
                     "shape [128, 64]"),
            std::string::npos)
      << err;
  err = with("\"intermediate_size\": 96", "\"intermediate_size\": 48");
  EXPECT_NE(err.find("key 'intermediate_size': intermediate_size = 48, but checkpoint tensor "
                     "'model.layers.0.mlp.gate_proj.weight' has shape [96, 64]"),
            std::string::npos)
      << err;
}

TEST_F(HfModelsTest, ModelAndOptionErrors) {
  std::string err = import_error("Qwen/Qwen9");
  EXPECT_NE(err.find("'Qwen/Qwen9' is neither a model directory nor a known model id (known: Qwen/Qwen2.5-0.5B, "),
            std::string::npos)
      << err;
  err = import_error("Qwen/Qwen2.5-7B --layer 28");
  EXPECT_NE(err.find("--layer 28 is out of range: Qwen/Qwen2.5-7B has 28 layers (0..27)"), std::string::npos) << err;
  EXPECT_NE(import_error("Qwen/Qwen2.5-7B --layer -1").find("out of range"), std::string::npos);
  EXPECT_NE(import_error("TinyLlama/TinyLlama-1.1B-Chat-v1.0 --seq-len 4096").find("max_position_embeddings"),
            std::string::npos);
  EXPECT_NE(import_error("Qwen/Qwen2.5-7B --decode --seq-len 4").find("--seq-len is for prefill"), std::string::npos);
  EXPECT_NE(import_error("Qwen/Qwen2.5-7B --cache-len 4").find("--cache-len applies to --decode"), std::string::npos);
  EXPECT_NE(import_error("Qwen/Qwen2.5-7B --sequence 4").find("unknown option '--sequence'"), std::string::npos);
}

TEST_F(HfModelsTest, CheckpointTensorsMustMatchTheConfig) {
  test::TempDir tmp;
  const TinyModel m = kTinyModels[0];
  const std::string dir = make_model_dir(tmp, m, false);
  Expected<hf::ModelConfig> c = hf::parse_model_config(tiny_config(m), "config.json");
  ASSERT_TRUE(c);
  const std::string file = dir + "/model.safetensors";
  auto with = [&](const std::function<void(SafetensorsFile&)>& edit) {
    SafetensorsFile f = tiny_weights(*c, 5);
    edit(f);
    EXPECT_TRUE(write_safetensors_file(file, f));
    return import_error(dir + " --seq-len 2");
  };
  auto erase = [](SafetensorsFile& f, const std::string& name) {
    std::erase_if(f.tensors, [&](const SafetensorsTensor& t) { return t.name == name; });
  };
  std::string err = with([&](SafetensorsFile& f) { erase(f, "model.layers.1.mlp.up_proj.weight"); });
  EXPECT_NE(err.find("missing tensor 'model.layers.1.mlp.up_proj.weight' (shape [96, 64])"), std::string::npos) << err;
  err = with([](SafetensorsFile& f) { f.tensors.push_back({"model.layers.0.self_attn.rotary_emb.inv_freq", DType::F32, {1}, std::string(4, '\0')}); });
  EXPECT_NE(err.find("unexpected tensor 'model.layers.0.self_attn.rotary_emb.inv_freq'"), std::string::npos) << err;
  err = with([&](SafetensorsFile& f) {
    for (SafetensorsTensor& t : f.tensors)
      if (t.name == "model.norm.weight") {
        t.shape = {32};
        t.bytes.resize(32 * 4);
      }
  });
  EXPECT_NE(err.find("tensor 'model.norm.weight' has shape [32], but the config needs [64]"), std::string::npos) << err;
  EXPECT_NE(err.find(file), std::string::npos) << err;
  err = with([&](SafetensorsFile& f) {
    for (SafetensorsTensor& t : f.tensors)
      if (t.name == "model.norm.weight") {
        t.dtype = DType::I32;
      }
  });
  EXPECT_NE(err.find("tensor 'model.norm.weight' is I32; weights must be F32, F16 or BF16"), std::string::npos) << err;
}

// A sharded checkpoint: the index's weight_map says which shard holds each tensor.
TEST_F(HfModelsTest, ShardedCheckpointsReadEveryShard) {
  test::TempDir tmp;
  const TinyModel m = kTinyModels[1];
  const std::string dir = make_model_dir(tmp, m, false);
  Expected<hf::ModelConfig> c = hf::parse_model_config(tiny_config(m), "config.json");
  ASSERT_TRUE(c);
  SafetensorsFile all = tiny_weights(*c, 5), first, second;
  std::string index = R"({"metadata": {}, "weight_map": {)";
  for (size_t i = 0; i < all.tensors.size(); ++i) {
    const bool one = i % 2 == 0;
    (one ? first : second).tensors.push_back(all.tensors[i]);
    index += (i ? ", \"" : "\"") + all.tensors[i].name + "\": \"model-0000" + (one ? "1" : "2") + "-of-00002.safetensors\"";
  }
  index += "}}";
  ASSERT_TRUE(write_safetensors_file(dir + "/model-00001-of-00002.safetensors", first));
  ASSERT_TRUE(write_safetensors_file(dir + "/model-00002-of-00002.safetensors", second));
  write_text(fs::path(dir) / "model.safetensors.index.json", index);
  ASSERT_TRUE(write_safetensors_file(tmp.path() + "/single.safetensors", all));

  // Each parameter refers to the shard the index names, and reads the values one file would give.
  auto parameter_values = [](const Graph& g) {
    std::map<std::string, std::vector<double>> values;
    for (const Node* n : g.nodes())
      if (const auto* k = n->op_as<ConstantOp>(); k && k->checkpoint) {
        Expected<TensorValue> v = constant_data(*k, n->type);
        EXPECT_TRUE(v) << v.error().render();
        if (v) values[n->id()] = v->data;
      }
    return values;
  };
  const Graph sharded = import_ok(dir + " --seq-len 2");
  ASSERT_FALSE(HasFailure());
  const bool norm_in_first = first.find("model.norm.weight") != nullptr;
  EXPECT_EQ(sharded.find("p_model_norm_weight")->op_as<ConstantOp>()->checkpoint->file,
            dir + (norm_in_first ? "/model-00001-of-00002.safetensors" : "/model-00002-of-00002.safetensors"));
  const auto from_shards = parameter_values(sharded);
  fs::rename(tmp.path() + "/single.safetensors", dir + "/model.safetensors");
  fs::remove(fs::path(dir) / "model.safetensors.index.json");
  fs::remove(fs::path(dir) / "model-00001-of-00002.safetensors");
  fs::remove(fs::path(dir) / "model-00002-of-00002.safetensors");
  const Graph single = import_ok(dir + " --seq-len 2");
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(single.nodes().size(), sharded.nodes().size());
  EXPECT_EQ(parameter_values(single), from_shards);
  EXPECT_EQ(from_shards.size(), checkpoint_tensors(*c).size());

  // An index that places a tensor in the wrong shard.
  ASSERT_TRUE(write_safetensors_file(dir + "/model-00001-of-00002.safetensors", first));
  ASSERT_TRUE(write_safetensors_file(dir + "/model-00002-of-00002.safetensors", second));
  fs::remove(fs::path(dir) / "model.safetensors");
  std::string wrong = index;
  const std::string moved = "\"model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\"";
  ASSERT_NE(wrong.find(moved), std::string::npos);
  wrong.replace(wrong.find(moved), moved.size(), "\"model.embed_tokens.weight\": \"model-00002-of-00002.safetensors\"");
  write_text(fs::path(dir) / "model.safetensors.index.json", wrong);
  std::string err = import_error(dir + " --seq-len 2");
  EXPECT_NE(err.find("tensor 'model.embed_tokens.weight' is here, but model.safetensors.index.json places it in "
                     "model-00002-of-00002.safetensors"),
            std::string::npos)
      << err;
  // Shards outside the directory are refused.
  write_text(fs::path(dir) / "model.safetensors.index.json", R"({"weight_map": {"a": "../x.safetensors"}})");
  err = import_error(dir + " --seq-len 2");
  EXPECT_NE(err.find("not a file of the model directory"), std::string::npos) << err;
  // A syntax error in the index is located there, in the reader's words.
  write_text(fs::path(dir) / "model.safetensors.index.json", "{\"weight_map\":\n  {\"a\" \"b\"}}");
  err = import_error(dir + " --seq-len 2");
  EXPECT_NE(err.find("model.safetensors.index.json:2:10: error: the checkpoint index is not valid JSON: syntax error "
                     "while parsing object separator"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("json.exception"), std::string::npos) << err;
}

// Corrupt checkpoint files are rejected with a message naming the file (and tensor), never a crash.
TEST_F(HfModelsTest, CorruptSafetensorsAreRejected) {
  test::TempDir tmp;
  const TinyModel m = kTinyModels[0];
  const std::string dir = make_model_dir(tmp, m, true);
  const std::string file = dir + "/model.safetensors";
  const std::string good = test::read_file(file);
  auto header_of = [](const std::string& text) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(text[static_cast<size_t>(i)]);
    return n;
  };
  auto with_header = [&](std::string header, const std::string& data) {
    header.append((8 - header.size() % 8) % 8, ' ');
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
  };
  struct Case {
    const char* what;
    std::string bytes;
    const char* message;
  };
  std::string past_end = good;
  past_end[0] = '\xf0';
  past_end[1] = '\xff';
  past_end[2] = '\x0f';
  const std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() - 100), "reach past the data section"},
      {"truncated in the header", good.substr(0, 8 + header_of(good) / 2), "reaches past the end"},
      {"header length past the end", past_end, "reaches past the end of the"},
      {"overlapping offsets",
       with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                   std::string(12, '\0')),
       "overlap tensor 'a'"},
      {"wrong dtype string", with_header(R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
       "dtype 'F33' is not a safetensors dtype"},
      {"huge shape",
       with_header(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", std::string(4, '\0')),
       "is too large to address"},
      {"not JSON", with_header("{\"a\": [}", ""), "the header is not valid JSON"},
      {"empty", "", "shorter than the 8-byte header length"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    write_text(file, c.bytes);
    const std::string err = import_error(dir + " --seq-len 2");
    EXPECT_NE(err.find(c.message), std::string::npos) << err;
    EXPECT_NE(err.find(file), std::string::npos) << err;
  }
}

TEST(HfModelConfig, Llama3RopeScalingFollowsTransformers) {
  const std::string text = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 131072, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}})";
  Expected<hf::ModelConfig> c = hf::parse_model_config(text, "config.json");
  ASSERT_TRUE(c) << c.error().render();
  ASSERT_TRUE(c->rope_scaling);
  const std::vector<double> scaled = hf::rope_inverse_frequencies(*c);
  hf::ModelConfig plain = *c;
  plain.rope_scaling.reset();
  const std::vector<double> base = hf::rope_inverse_frequencies(plain);
  ASSERT_EQ(scaled.size(), 64u);
  for (size_t i = 0; i < base.size(); ++i) {
    const double wavelen = 2 * std::numbers::pi / base[i];
    if (wavelen < 8192.0 / 4) EXPECT_DOUBLE_EQ(scaled[i], base[i]) << i;            // high frequencies kept
    else if (wavelen > 8192.0) EXPECT_DOUBLE_EQ(scaled[i], base[i] / 8) << i;       // low ones divided by factor
    else EXPECT_TRUE(scaled[i] < base[i] && scaled[i] > base[i] / 8) << i;          // interpolated between
  }
  // transformers' first and last values for Llama 3.1 (inv_freq[0] = 1, inv_freq[63] scaled by 1/8).
  EXPECT_DOUBLE_EQ(scaled[0], 1.0);
  EXPECT_NEAR(scaled[63], std::pow(500000.0, -126.0 / 128) / 8, 1e-15);
}

TEST(HfCli, CompileModelPrintsASummaryAndLayersReadably) {
  test::CliResult r = test::run_cli({"compile", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "--seq-len", "16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("model: TinyLlama/TinyLlama-1.1B-Chat-v1.0  (16 tokens per run)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernels: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters: 1.10 G (1100048384)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FLOPs per token: "), std::string::npos) << r.out;

  r = test::run_cli({"compile", "Qwen/Qwen2.5-0.5B", "--layer", "0", "--seq-len", "4", "--ir", "loop"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("=== merged_l0_"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("return l0_out"), std::string::npos) << r.out;

  r = test::run_cli({"compile", "Qwen/Qwen2.5-7B", "--layer", "28"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--layer 28 is out of range: Qwen/Qwen2.5-7B has 28 layers (0..27)"), std::string::npos) << r.err;

  r = test::run_cli({"compile", "-c", "torch.randn(2)", "--seq-len", "4"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("apply to a MODEL"), std::string::npos) << r.err;
}

TEST(HfCli, RunTinyModelOnTheSimulator) {
  test::TempDir tmp;
  const std::string dir = make_model_dir(tmp, kTinyModels[2]);
  test::CliResult r = test::run_cli({"run", dir, "--seq-len", "4", "--target", "sim"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("logits  max abs err"), std::string::npos) << r.out;
  r = test::run_cli({"run", dir, "--decode", "--cache-len", "8", "--target", "sim"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("l1_v_cache_next  max abs err"), std::string::npos) << r.out;
}

// The shipped models check against the reference in every compile dtype (the tolerance policy of
// docs/cli.md: in f16 the tolerance is f16's, measured against the output's RMS near 0): layer 0
// of the smallest shipped model on seeds 0..2, and of TinyLlama in f16 (the former check, relative
// with a floor at 1% of the largest value and f16's rtol 5e-3, failed both in f16). Every shipped
// model in every dtype on seeds 0..2 takes too long for a test: that sweep was run by hand.
void expect_layer_zero_ok(const std::string& model, const std::string& dtype, int seed) {
  SCOPED_TRACE(model + " --dtype " + dtype + " --seed " + std::to_string(seed));
  test::CliResult r = test::run_cli({"run", model, "--layer", "0", "--seq-len", "4", "--target", "sim", "--dtype", dtype,
                                     "--seed", std::to_string(seed)});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("l0_out  max abs err"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(")  ok\n"), std::string::npos) << r.out;
}

TEST(HfCli, ShippedModelLayerPassesItsCheckInFloat32) {
  for (int seed : {0, 1, 2}) expect_layer_zero_ok("Qwen/Qwen2.5-0.5B", "f32", seed);
}

TEST(HfCli, ShippedModelLayerPassesItsCheckInBfloat16) {
  for (int seed : {0, 1, 2}) expect_layer_zero_ok("Qwen/Qwen2.5-0.5B", "bf16", seed);
}

TEST(HfCli, ShippedModelLayerPassesItsCheckInFloat16) {
  for (int seed : {0, 1, 2}) expect_layer_zero_ok("Qwen/Qwen2.5-0.5B", "f16", seed);
}

TEST(HfCli, TinyLlamaLayerPassesItsCheckInFloat16) {
  expect_layer_zero_ok("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "f16", 1);
}

// The tiny test models (their weights in the files the test writes) in half precision: the logits
// and the decode step's caches pass their own check in bf16 and f16.
TEST(HfCli, TinyModelsPassTheirCheckInHalfPrecision) {
  test::TempDir tmp;
  for (const TinyModel& m : kTinyModels) {
    const std::string dir = make_model_dir(tmp, m);
    for (const char* dtype : {"bf16", "f16"}) {
      for (const char* seed : {"0", "1", "2"}) {
        SCOPED_TRACE(m.architecture + " --dtype " + dtype + " --seed " + seed);
        test::CliResult r = test::run_cli({"run", dir, "--seq-len", "8", "--target", "sim", "--dtype", dtype, "--seed", seed});
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
      }
    }
  }
}

// --check-intermediates compares every kernel's buffer in launch order; with a tolerance nothing
// meets, the first kernel is named with its IR.
TEST(HfCli, CheckIntermediatesNamesTheFirstDivergingKernel) {
  test::TempDir tmp;
  const std::string dir = make_model_dir(tmp, kTinyModels[0]);
  test::CliResult r = test::run_cli({"run", dir, "--seq-len", "4", "--target", "sim", "--check-intermediates"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: --check-intermediates: the outputs of all "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" kernels with a reference value agree with the reference"), std::string::npos) << r.err;
  r = test::run_cli({"run", dir, "--seq-len", "4", "--target", "sim", "--check-intermediates", "--rtol", "1e-15"});
  EXPECT_EQ(r.exit_code, 1);
  // The first kernel: the rotary cos table (the angles' torch.cat((freqs, freqs)) fused into it).
  EXPECT_NE(r.err.find("error: tessera run --check-intermediates: kernel k_rope_cos (launch 1, output "
                       "'rope_cos') diverges from the reference"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("kernel k_rope_cos  grid="), std::string::npos) << r.err;  // its IR
}

}  // namespace
}  // namespace tessera

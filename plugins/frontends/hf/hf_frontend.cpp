// The hf frontend plugin: a Hugging Face decoder LLM (a model directory with config.json and
// optional safetensors weights, or a known model id whose config ships with Tessera) -> Torch IR.
//
// Its program text is the model and the compile options, spelled as on the command line:
//   MODEL [--seq-len S | --decode [--cache-len C]] [--layer N]
// (`tessera compile MODEL ...` builds this text from its own flags). MODEL is a directory when one
// exists at that path, else a known id (known_model_ids()). The graph is decoder_graph.h's.
//
// Tests: tests/unit/hf_frontend_test.cpp, tests/e2e/hf_models_test.cpp.
#include <filesystem>
#include <memory>
#include <sstream>

#include "checkpoint.h"
#include "decoder_graph.h"
#include "model_config.h"
#include "tessera/frontend/frontend.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/install_paths.h"

namespace tessera::hf {
namespace {

namespace fs = std::filesystem;

// Model ids whose published config.json ships in data/models/<org>--<name>/.
const std::vector<std::string>& known_model_ids() {
  static const std::vector<std::string> ids = {"Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-7B", "Qwen/Qwen3-8B",
                                               "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "meta-llama/Meta-Llama-3-8B"};
  return ids;
}

struct Request {
  std::string model;
  DecoderOptions options;
};

Diagnostic request_error(const FrontendInput& input, std::string message) {
  Diagnostic d = make_error(std::move(message));
  d.loc.file = input.file;
  return d;
}

Expected<Request> parse_request(const FrontendInput& input) {
  std::istringstream words(input.text);
  std::vector<std::string> w;
  for (std::string s; words >> s;) w.push_back(s);
  if (w.empty()) return request_error(input, "no model given (a model directory or a known id such as Qwen/Qwen2.5-7B)");
  Request r;
  r.model = w[0];
  bool seq_given = false, cache_given = false;
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& flag = w[i];
    auto number = [&](int64_t& out) -> Status {
      if (i + 1 >= w.size()) return request_error(input, flag + " needs a number");
      const std::string& v = w[++i];
      size_t used = 0;
      long long n = 0;
      try {
        n = std::stoll(v, &used);
      } catch (...) {
        used = 0;
      }
      if (used != v.size() || v.empty()) return request_error(input, flag + " needs an integer, got '" + v + "'");
      out = n;
      return Status::ok();
    };
    if (flag == "--seq-len") {
      TESSERA_TRY(number(r.options.seq_len));
      seq_given = true;
    } else if (flag == "--cache-len") {
      TESSERA_TRY(number(r.options.cache_len));
      cache_given = true;
    } else if (flag == "--decode") {
      r.options.decode = true;
    } else if (flag == "--layer") {
      int64_t layer = 0;
      TESSERA_TRY(number(layer));
      r.options.layer = layer;
    } else {
      return request_error(input, "unknown option '" + flag + "' (expected --seq-len S, --decode, --cache-len C, --layer N)");
    }
  }
  if (r.options.decode && seq_given)
    return request_error(input, "--seq-len is for prefill; a decode step (--decode) takes one token and --cache-len C");
  if (cache_given && !r.options.decode) return request_error(input, "--cache-len applies to --decode only");
  return r;
}

// The directory of `model` (an existing directory, or the shipped config of a known id) and
// whether it is a directory the user gave (weights may then be there).
Expected<std::pair<std::string, bool>> resolve_model(const FrontendInput& input, const std::string& model) {
  std::error_code ec;
  if (fs::is_directory(model, ec)) {
    if (!fs::is_regular_file(fs::path(model) / "config.json", ec))
      return request_error(input, "model directory '" + model + "' has no config.json");
    return std::pair{model, true};
  }
  for (const std::string& id : known_model_ids()) {
    if (id != model) continue;
    std::string folder = id;
    folder.replace(folder.find('/'), 1, "--");
    TESSERA_ASSIGN_OR_RETURN(std::string config, find_data_file("models/" + folder + "/config.json"));
    return std::pair{fs::path(config).parent_path().string(), false};
  }
  std::string known;
  for (const std::string& id : known_model_ids()) known += (known.empty() ? "" : ", ") + id;
  return request_error(input, "'" + model + "' is neither a model directory nor a known model id (known: " + known + ")");
}

class HfFrontend final : public Frontend {
 public:
  std::string_view name() const override { return "hf"; }
  std::string_view summary() const override {
    return "Hugging Face decoder LLMs (Llama, Qwen2, Qwen3): a model directory (config.json, safetensors) or a "
           "known id -> Torch IR";
  }

  Expected<Graph> import(const FrontendInput& input, const FrontendOptions& options) override {
    TESSERA_ASSIGN_OR_RETURN(Request r, parse_request(input));
    TESSERA_ASSIGN_OR_RETURN(auto where, resolve_model(input, r.model));
    const auto& [dir, user_dir] = where;
    TESSERA_ASSIGN_OR_RETURN(ModelConfig config, read_model_config((fs::path(dir) / "config.json").string()));
    r.options.dtype = options.dtype;
    r.options.seed = options.seed;
    if (r.options.layer && (*r.options.layer < 0 || *r.options.layer >= config.num_layers))
      return request_error(input, "--layer " + std::to_string(*r.options.layer) + " is out of range: " + r.model +
                                      " has " + std::to_string(config.num_layers) + " layers (0.." +
                                      std::to_string(config.num_layers - 1) + ")");
    const int64_t tokens = r.options.decode ? r.options.cache_len : r.options.seq_len;
    const char* flag = r.options.decode ? "--cache-len" : "--seq-len";
    if (tokens < 1 || tokens > config.max_position_embeddings)
      return request_error(input, std::string(flag) + " " + std::to_string(tokens) + " is out of range: " + r.model +
                                      " takes 1.." + std::to_string(config.max_position_embeddings) +
                                      " positions (max_position_embeddings)");
    std::optional<Checkpoint> weights;
    if (user_dir) {
      TESSERA_ASSIGN_OR_RETURN(weights, Checkpoint::open(dir));
    }
    return build_decoder_graph(config, r.options, weights ? &*weights : nullptr);
  }
};

void register_hf(Registry& registry) {
  registry.add_frontend("hf", [] { return std::make_unique<HfFrontend>(); });
}

}  // namespace
}  // namespace tessera::hf

TESSERA_PLUGIN("hf", "0.1.0", tessera::hf::register_hf)

// Opening a model directory's safetensors checkpoint (see checkpoint.h).
#include "checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model_config.h"

namespace tessera::hf {

namespace fs = std::filesystem;

namespace {

Diagnostic file_error(const std::string& file, std::string message) {
  Diagnostic d = make_error(std::move(message));
  d.loc.file = file;
  return d;
}

// weight_map of model.safetensors.index.json: tensor name -> shard file name.
Expected<std::map<std::string, std::string>> read_index(const fs::path& index_path) {
  const std::string file = index_path.string();
  std::error_code ec;
  if (fs::file_size(index_path, ec) > kMaxJsonBytes && !ec)
    return file_error(file, "the checkpoint index is larger than " + std::to_string(kMaxJsonBytes >> 20) + " MB");
  std::ifstream in(index_path, std::ios::binary);
  if (!in) return file_error(file, "cannot read the checkpoint index");
  std::ostringstream text;
  text << in.rdbuf();
  TESSERA_TRY(check_outside_json(text.str(), file));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    return json_syntax_error(text.str(), file, "the checkpoint index", e.byte, e.what());
  } catch (const nlohmann::json::exception& e) {
    return file_error(file, std::string("the checkpoint index is not valid JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object())
    return file_error(file, "the checkpoint index has no 'weight_map' object");
  std::map<std::string, std::string> map;
  for (const auto& [name, shard] : doc["weight_map"].items()) {
    if (!shard.is_string())
      return file_error(file, "weight_map['" + name + "'] is " + shard.dump() + ", not a file name");
    const std::string s = shard.get<std::string>();
    // Shards are files of this directory: no path may leave it.
    if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..")
      return file_error(file, "weight_map['" + name + "'] names '" + s + "', not a file of the model directory");
    map[name] = s;
  }
  return map;
}

}  // namespace

Expected<std::optional<Checkpoint>> Checkpoint::open(const std::string& dir) {
  const fs::path root(dir);
  const fs::path index_path = root / "model.safetensors.index.json";
  const fs::path single = root / "model.safetensors";
  std::error_code ec;
  std::vector<std::string> present;  // *.safetensors files of the directory
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.path().extension() == ".safetensors") present.push_back(e.path().filename().string());
  std::sort(present.begin(), present.end());

  Checkpoint ck;
  std::map<std::string, std::string> index;  // tensor -> shard (sharded checkpoints)
  if (fs::exists(index_path, ec)) {
    TESSERA_ASSIGN_OR_RETURN(index, read_index(index_path));
    std::set<std::string> shards;
    for (const auto& [name, shard] : index) shards.insert(shard);
    ck.files_.assign(shards.begin(), shards.end());
  } else if (fs::exists(single, ec)) {
    ck.files_ = {"model.safetensors"};
  } else if (present.empty()) {
    return std::optional<Checkpoint>();
  } else {
    return file_error(dir, "holds " + present.front() +
                               " but neither model.safetensors nor model.safetensors.index.json (which lists the "
                               "shards of a sharded checkpoint)");
  }

  for (const std::string& name : ck.files_) {
    const std::string path = (root / name).string();
    TESSERA_ASSIGN_OR_RETURN(MappedSafetensors mapped, MappedSafetensors::open(path));
    auto shared = std::make_shared<MappedSafetensors>(std::move(mapped));
    const CheckpointRef ref{fs::absolute(root / name, ec).lexically_normal().string(), shared->stamp().bytes,
                            shared->stamp().modified_ns};
    if (ec) return file_error(path, "cannot make an absolute path of it: " + ec.message());
    for (const SafetensorsTensorView& t : shared->view().tensors) {
      if (!index.empty()) {
        auto listed = index.find(t.name);
        if (listed == index.end())
          return file_error(path, "tensor '" + t.name + "' is not listed in model.safetensors.index.json");
        if (listed->second != name)
          return file_error(path, "tensor '" + t.name + "' is here, but model.safetensors.index.json places it in " +
                                      listed->second);
      }
      auto [it, fresh] = ck.tensors_.emplace(t.name, Entry{&t, path, ref});
      if (!fresh) return file_error(path, "tensor '" + t.name + "' is also in " + it->second.file);
    }
    ck.mapped_.push_back(std::move(shared));
  }
  for (const auto& [name, shard] : index)
    if (!ck.tensors_.count(name))
      return file_error((root / shard).string(), "has no tensor '" + name +
                                                     "', which model.safetensors.index.json places there");
  return std::optional<Checkpoint>(std::move(ck));
}

const Checkpoint::Entry* Checkpoint::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

}  // namespace tessera::hf

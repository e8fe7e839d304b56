// Checkpoint: the weights of a model directory, memory-mapped. Either one `model.safetensors`, or
// the shards that `model.safetensors.index.json` lists (`weight_map`: tensor -> file). Every file
// goes through the bounds-checked reader (framework/src/eval/safetensors_file.h); the index must
// name plain files of the directory, and agree with the shards: a tensor the index places in a file
// that lacks it, a tensor in two files, or a shard tensor the index does not list is an error
// naming both. The mappings live as long as the Checkpoint: building a graph reads headers only;
// the graph's constants refer to the files (Entry::ref) and backends map them again when they
// need the data.
//
// Tests: tests/e2e/hf_models_test.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "framework/src/eval/safetensors_file.h"
#include "tessera/ir/op.h"
#include "tessera/support/status.h"

namespace tessera::hf {

class Checkpoint {
 public:
  // The checkpoint of `dir`; nullopt when the directory holds no `*.safetensors` file.
  static Expected<std::optional<Checkpoint>> open(const std::string& dir);

  struct Entry {
    const SafetensorsTensorView* tensor = nullptr;
    std::string file;  // the file holding it (messages)
    CheckpointRef ref;  // the file as a ConstantOp refers to it: absolute path, size, time
  };
  const Entry* find(const std::string& name) const;
  const std::map<std::string, Entry>& tensors() const { return tensors_; }
  // The files read, in order ("model.safetensors" or the shards), for the summary.
  const std::vector<std::string>& files() const { return files_; }

 private:
  std::vector<std::shared_ptr<MappedSafetensors>> mapped_;
  std::map<std::string, Entry> tensors_;
  std::vector<std::string> files_;
};

}  // namespace tessera::hf

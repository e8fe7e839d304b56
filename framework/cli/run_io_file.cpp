// The inputs, parameters and outputs of one run as a safetensors file (see run_io_file.h).
#include "run_io_file.h"

#include <set>

#include <nlohmann/json.hpp>

#include "plugins/targets/cuda/tensor_bytes.h"
#include "tessera/eval/constant_data.h"

namespace tessera::cli {

namespace {

SafetensorsTensor tensor_of(const std::string& name, const TensorValue& v) {
  SafetensorsTensor t;
  t.name = name;
  t.dtype = v.type.dtype;
  for (const Dim& d : v.type.shape) t.shape.push_back(d.value());
  t.bytes = TensorBytes::encode(v);  // the device encoding: what the target's buffers hold
  return t;
}

}  // namespace

Expected<SafetensorsFile> run_io_file(const Graph& torch_graph, const ValueMap& inputs, const ValueMap& outputs,
                                      const std::string& program) {
  SafetensorsFile file;
  std::set<std::string> written;
  nlohmann::ordered_json input_names = nlohmann::ordered_json::array();
  nlohmann::ordered_json params = nlohmann::ordered_json::object();
  nlohmann::ordered_json output_names = nlohmann::ordered_json::array();
  for (const Node* n : torch_graph.nodes()) {
    if (n->op_as<InputOp>()) {
      auto v = inputs.find(n->id());
      if (v == inputs.end()) return make_error("--save-io: input '" + n->id() + "' has no data").at_node(n->id());
      file.tensors.push_back(tensor_of(n->id(), v->second));
      written.insert(n->id());
      input_names.push_back(n->id());
    } else if (const auto* c = n->op_as<ConstantOp>()) {
      TESSERA_ASSIGN_OR_RETURN(const TensorValue* given, given_constant(*n, inputs));
      if (given) {
        file.tensors.push_back(tensor_of(n->id(), *given));
      } else {
        TESSERA_ASSIGN_OR_RETURN(TensorValue v, constant_data(*c, n->type));
        file.tensors.push_back(tensor_of(n->id(), v));
      }
      written.insert(n->id());
      params[n->id()] = c->path;
    }
  }
  for (const std::string& name : torch_graph.outputs()) {
    output_names.push_back(name);
    if (written.count(name)) continue;  // an input or parameter returned as is: stored once
    auto v = outputs.find(name);
    if (v == outputs.end()) return make_error("--save-io: the run produced no output '" + name + "'").at_node(name);
    file.tensors.push_back(tensor_of(name, v->second));
    written.insert(name);
  }
  file.metadata["tessera.inputs"] = input_names.dump();
  file.metadata["tessera.params"] = params.dump();
  file.metadata["tessera.outputs"] = output_names.dump();
  if (!program.empty()) file.metadata["tessera.program"] = program;
  return file;
}

Status save_run_io(const std::string& path, const Graph& torch_graph, const ValueMap& inputs,
                   const ValueMap& outputs, const std::string& program) {
  TESSERA_ASSIGN_OR_RETURN(SafetensorsFile file, run_io_file(torch_graph, inputs, outputs, program));
  return write_safetensors_file(path, file);
}

}  // namespace tessera::cli

// See fuzz_entries.h. An accepted input goes one step further (verify, print, write back) so that
// the code that trusts a reader's output is fuzzed too.
#include "fuzz/fuzz_entries.h"

#include <string>
#include <string_view>

#include "framework/src/eval/safetensors_file.h"
#include "plugins/frontends/hf/model_config.h"
#include "plugins/frontends/torch_expr/trace_program.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pipeline.h"

namespace tessera::fuzz {
namespace {

std::string as_text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// What every accepted graph goes through: the verifier at its own stage, then the printer.
void check_graph(const Graph& graph) {
  Status verified = verify_graph(graph, graph.stage());
  if (verified) (void)print_graph(graph);
}

}  // namespace

bool fuzz_one_torch_expr(const uint8_t* data, size_t size) {
  FrontendInput input;
  input.text = as_text(data, size);
  input.file = "<fuzz>";
  Expected<Graph> graph = torch_expr::trace_program(input, FrontendOptions{});
  if (!graph) return false;
  check_graph(*graph);
  return true;
}

bool fuzz_one_pipeline_yaml(const uint8_t* data, size_t size) {
  Expected<PipelineSpec> spec = parse_pipeline(as_text(data, size), "<fuzz>.yaml");
  return spec.has_value();
}

bool fuzz_one_ir_json(const uint8_t* data, size_t size) {
  Expected<Graph> graph = graph_from_json_text(as_text(data, size), "<fuzz>.json");
  if (!graph) return false;
  check_graph(*graph);
  (void)graph_to_json_text(*graph);
  return true;
}

bool fuzz_one_ir_text(const uint8_t* data, size_t size) {
  Expected<Graph> graph = parse_graph(std::string_view(reinterpret_cast<const char*>(data), size), "<fuzz>.ir");
  if (!graph) return false;
  check_graph(*graph);
  return true;
}

bool fuzz_one_safetensors(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The checkpoint path (hf frontend): the view parser and the conversion of every tensor's values.
  if (Expected<SafetensorsView> view = decode_safetensors_view(bytes, "<fuzz>.safetensors"))
    for (const SafetensorsTensorView& t : view->tensors) (void)safetensors_values(t, view->source);
  Expected<SafetensorsFile> file = decode_safetensors(bytes, "<fuzz>.safetensors");
  if (!file) return false;
  (void)encode_safetensors(*file);
  return true;
}

bool fuzz_one_hf_config(const uint8_t* data, size_t size) {
  Expected<hf::ModelConfig> config = hf::parse_model_config(as_text(data, size), "<fuzz>/config.json");
  if (!config) return false;
  (void)hf::rope_inverse_frequencies(*config);
  return true;
}

}  // namespace tessera::fuzz

// The file `tessera run --save-io` and `tessera bench` write: every input, parameter and output of
// one run under its Torch IR name, in safetensors format, so another tool (PyTorch, see
// bench/pytorch_baseline.py) can run the same program on the same data and compare outputs.
//
// `__metadata__` holds (each value a string):
//   tessera.inputs   JSON list of the input names, in graph order (x, x_1, ...)
//   tessera.params   JSON object {tensor name: dotted module path}
//   tessera.outputs  JSON list of the output names, in order
//   tessera.program  the program text (only when the program came from -c / a suite entry)
// Tensors keep their dtype (F32, BF16, F16, I32, I64, BOOL) and hold exactly what the target's
// buffers held, bit for bit.
#pragma once

#include <string>

#include "framework/src/eval/safetensors_file.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera::cli {

// `torch_graph` is the program's Torch IR; `inputs` the data of its InputOps (make_inputs);
// `outputs` the target's outputs. Parameters are regenerated with constant_data. An input or
// output missing from its map is an error naming it.
Expected<SafetensorsFile> run_io_file(const Graph& torch_graph, const ValueMap& inputs, const ValueMap& outputs,
                                      const std::string& program);

Status save_run_io(const std::string& path, const Graph& torch_graph, const ValueMap& inputs,
                   const ValueMap& outputs, const std::string& program);

}  // namespace tessera::cli

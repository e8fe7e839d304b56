// trace_program: the whole torch_expr frontend as one function (lexer -> parser -> tracer), what
// the plugin's Frontend::import runs. Kept outside the plugin entry so that a program can be traced
// without loading the plugin (the fuzz targets and their regression replay, tests/fuzz).
#pragma once

#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera::torch_expr {

// The Torch IR of `input.text`, or a located error. Never throws.
Expected<Graph> trace_program(const FrontendInput& input, const FrontendOptions& options);

}  // namespace tessera::torch_expr

// The torch_expr frontend plugin: `-c` programs (a small Python subset of PyTorch) -> Torch IR.
// Pipeline: SourceText -> Lexer (tokens) -> Parser (syntax tree) -> Tracer (graph), in trace_program.
#include <memory>

#include "tessera/frontend/frontend.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "trace_program.h"

namespace tessera::torch_expr {
namespace {

class TorchExprFrontend final : public Frontend {
 public:
  std::string_view name() const override { return "torch_expr"; }
  std::string_view summary() const override {
    return "PyTorch-style programs (-c): torch/nn/F calls, nn.Module classes, operators -> Torch IR";
  }

  Expected<Graph> import(const FrontendInput& input, const FrontendOptions& options) override {
    return trace_program(input, options);
  }
};

void register_torch_expr(Registry& registry) {
  registry.add_frontend("torch_expr", [] { return std::make_unique<TorchExprFrontend>(); });
}

}  // namespace
}  // namespace tessera::torch_expr

TESSERA_PLUGIN("torch_expr", "0.1.0", tessera::torch_expr::register_torch_expr)

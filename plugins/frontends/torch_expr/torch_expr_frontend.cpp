// The torch_expr frontend plugin: `-c` programs (a small Python subset of PyTorch) -> Torch IR.
// Pipeline: SourceText -> Lexer (tokens) -> Parser (syntax tree) -> Tracer (graph).
#include <memory>

#include "lexer.h"
#include "parser.h"
#include "tessera/frontend/frontend.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tracer.h"

namespace tessera::torch_expr {
namespace {

class TorchExprFrontend final : public Frontend {
 public:
  std::string_view name() const override { return "torch_expr"; }
  std::string_view summary() const override {
    return "PyTorch-style programs (-c): torch/nn/F calls, nn.Module classes, operators -> Torch IR";
  }

  Expected<Graph> import(const FrontendInput& input, const FrontendOptions& options) override {
    // Nothing below throws on bad input; this guard only keeps an internal failure (such as
    // std::bad_alloc on a pathological program) from crossing the plugin boundary.
    try {
      SourceText source(input.file, input.text);
      Lexer lexer(source);
      TESSERA_ASSIGN_OR_RETURN(std::vector<Token> tokens, lexer.tokenize());
      Parser parser(source, std::move(tokens));
      TESSERA_ASSIGN_OR_RETURN(Program program, parser.parse_program());
      Tracer tracer(source, options);
      return tracer.trace(program);
    } catch (const std::exception& e) {
      return make_error(std::string("internal error in the torch_expr frontend: ") + e.what());
    }
  }
};

void register_torch_expr(Registry& registry) {
  registry.add_frontend("torch_expr", [] { return std::make_unique<TorchExprFrontend>(); });
}

}  // namespace
}  // namespace tessera::torch_expr

TESSERA_PLUGIN("torch_expr", "0.1.0", tessera::torch_expr::register_torch_expr)

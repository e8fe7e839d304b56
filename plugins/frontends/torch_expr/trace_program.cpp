// See trace_program.h.
#include "trace_program.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "lexer.h"
#include "parser.h"
#include "source_text.h"
#include "tracer.h"

namespace tessera::torch_expr {

Expected<Graph> trace_program(const FrontendInput& input, const FrontendOptions& options) {
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

}  // namespace tessera::torch_expr

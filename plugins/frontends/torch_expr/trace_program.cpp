// See trace_program.h.
#include "trace_program.h"

#include <pthread.h>

#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lexer.h"
#include "parser.h"
#include "source_text.h"
#include "tessera/support/internal_check.h"
#include "tracer.h"

namespace tessera::torch_expr {

namespace {

// The parser and the tracer recurse once per nesting level, up to their limits (kMaxExprHeight in
// parser.cpp, kMaxNestingDepth in tracer.cpp). A sanitizer build's frames are several times larger
// than a release build's, so the frontend runs on a thread whose stack holds those limits in every
// build, rather than on whatever stack its caller has. Only touched pages are committed.
constexpr size_t kFrontendStackBytes = size_t{256} << 20;

Expected<Graph> trace_on_this_thread(const FrontendInput& input, const FrontendOptions& options) {
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

struct TraceJob {
  const FrontendInput* input;
  const FrontendOptions* options;
  std::optional<Expected<Graph>> result;
};

void* run_trace_job(void* arg) {
  auto* job = static_cast<TraceJob*>(arg);
  job->result.emplace(trace_on_this_thread(*job->input, *job->options));
  return nullptr;
}

}  // namespace

Expected<Graph> trace_program(const FrontendInput& input, const FrontendOptions& options) {
  TraceJob job{&input, &options, std::nullopt};
  pthread_attr_t attr;
  if (int rc = pthread_attr_init(&attr); rc != 0)
    return make_error(std::string("the torch_expr frontend could not set up its thread: ") + std::strerror(rc));
  int rc = pthread_attr_setstacksize(&attr, kFrontendStackBytes);
  pthread_t thread;
  if (rc == 0) rc = pthread_create(&thread, &attr, run_trace_job, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0)
    return make_error("the torch_expr frontend could not start its thread (" + std::to_string(kFrontendStackBytes >> 20) +
                      " MiB stack): " + std::strerror(rc));
  if (int joined = pthread_join(thread, nullptr); joined != 0)
    return make_error(std::string("the torch_expr frontend could not join its thread: ") + std::strerror(joined));
  TESSERA_INTERNAL_CHECK(job.result.has_value(), "the torch_expr frontend's thread leaves a result");
  return std::move(*job.result);
}

}  // namespace tessera::torch_expr

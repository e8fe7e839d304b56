// Compiling a program through a session's pipeline: the shared core of `compile`, `ab`, and later
// `run` / `tune`.
#pragma once

#include <iosfwd>
#include <optional>
#include <set>
#include <string>

#include "cli_session.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/runner.h"

namespace tessera::cli {

// A whole model for the hf frontend: a model directory or a known id, and its compile options.
struct ModelSource {
  std::string model;  // MODEL ("" = none)
  std::optional<int64_t> layer, seq_len, cache_len;
  bool decode = false;
  // The hf frontend's program text: MODEL and the flags given, spelled as on the command line.
  std::string frontend_text() const;
  bool any_flag() const { return layer || seq_len || cache_len || decode; }
};

struct ProgramSource {
  std::string expr;        // -c EXPR
  std::string file;        // -f FILE: the program text read from FILE (errors name FILE)
  std::string from_ir;     // --from-ir FILE (printed IR or graph JSON)
  std::string frontend = "torch_expr";
  std::string label = "<-c>";  // how errors in `expr` name its source (bench: the suite entry)
  ModelSource model;       // MODEL [--layer N] [--seq-len S | --decode --cache-len C] (the hf frontend)
};

// Adds the model flags (--seq-len, --decode, --cache-len, --layer) to an option set; MODEL itself
// is the command's positional argument (model_positional()).
void add_model_options(po::options_description& desc, ModelSource& model);
po::positional_options_description model_positional();

// Adds -c / -f / --from-ir / --frontend to an option set.
void add_program_options(po::options_description& desc, ProgramSource& src);

// The text of a -f FILE program; an error naming the file when it cannot be read.
Expected<std::string> read_program_file(const std::string& file);

// The program text a frontend traces: -c EXPR, or the contents of -f FILE. Errors go to `err`.
std::optional<std::string> program_text(const ProgramSource& src, std::ostream& err);

// Produces the input graph (frontend or JSON). Errors are printed to `err`.
std::optional<Graph> load_program(Session& s, const ProgramSource& src, std::ostream& err);

// Parses --ir: a stage name, checked against the pipeline (the stage must have passes, or be torch).
// Empty = the furthest stage of the pipeline.
std::optional<Dialect> resolve_stop_stage(const Session& s, const std::string& ir, std::ostream& err);

}  // namespace tessera::cli

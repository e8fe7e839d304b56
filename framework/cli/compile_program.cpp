// Loading the program to compile (frontend, printed IR or graph JSON) and resolving --ir.
#include "compile_program.h"

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "tessera/frontend/frontend.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/serialize.h"

namespace tessera::cli {

void add_program_options(po::options_description& desc, ProgramSource& src) {
  desc.add_options()
      ("expr,c", po::value(&src.expr)->value_name("EXPR"), "program text (PyTorch-style expression or module)")
      ("file,f", po::value(&src.file)->value_name("FILE"), "program text read from FILE (as -c takes it inline; errors name FILE:line:col)")
      ("from-ir", po::value(&src.from_ir)->value_name("FILE"), "start from a graph: printed Loop/Tile/Kernel IR (--ir output) or graph JSON (a dump or a reproducer)")
      ("frontend", po::value(&src.frontend)->value_name("NAME"), "frontend for -c (default torch_expr)");
}

std::string ModelSource::frontend_text() const {
  std::string text = model;
  if (seq_len) text += " --seq-len " + std::to_string(*seq_len);
  if (decode) text += " --decode";
  if (cache_len) text += " --cache-len " + std::to_string(*cache_len);
  if (layer) text += " --layer " + std::to_string(*layer);
  return text;
}

void add_model_options(po::options_description& desc, ModelSource& model) {
  desc.add_options()
      ("model", po::value(&model.model)->value_name("MODEL"), "a Hugging Face model directory (config.json, *.safetensors) or a known model id such as Qwen/Qwen2.5-7B (also the first positional argument)")
      ("layer", po::value<int64_t>()->value_name("N")->notifier([&model](int64_t v) { model.layer = v; }), "MODEL: compile layer N alone (input: its hidden state)")
      ("seq-len", po::value<int64_t>()->value_name("S")->notifier([&model](int64_t v) { model.seq_len = v; }), "MODEL: prefill of S tokens (default 128)")
      ("decode", po::bool_switch(&model.decode), "MODEL: one decode step with a static KV cache (the position is a run-time input)")
      ("cache-len", po::value<int64_t>()->value_name("C")->notifier([&model](int64_t v) { model.cache_len = v; }), "MODEL --decode: KV-cache slots (default 512)");
}

po::positional_options_description model_positional() {
  po::positional_options_description pos;
  pos.add("model", 1);
  return pos;
}

Expected<std::string> read_program_file(const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) return make_error("-f " + file + ": is a directory, not a program file");
  std::ifstream f(file, std::ios::binary);
  if (!f) return make_error("-f " + file + ": cannot read the file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<std::string> program_text(const ProgramSource& src, std::ostream& err) {
  if (src.file.empty()) return src.expr;
  Expected<std::string> text = read_program_file(src.file);
  if (!text) {
    report(err, text.error());
    return std::nullopt;
  }
  return std::move(*text);
}

std::optional<Graph> load_program(Session& s, const ProgramSource& src, std::ostream& err) {
  if (!src.file.empty()) {
    if (!src.expr.empty() || !src.from_ir.empty() || !src.model.model.empty()) {
      err << "error: give one program: -f FILE, -c EXPR, --from-ir FILE or a MODEL, not several\n";
      return std::nullopt;
    }
    std::optional<std::string> text = program_text(src, err);
    if (!text) return std::nullopt;
    ProgramSource from_file = src;
    from_file.file.clear();
    from_file.expr = std::move(*text);
    from_file.label = src.file;
    if (from_file.expr.find_first_not_of(" \t\r\n") == std::string::npos) {
      err << src.file << ": error: the program file is empty\n";
      return std::nullopt;
    }
    return load_program(s, from_file, err);
  }
  if (!src.model.model.empty()) {
    if (!src.expr.empty() || !src.from_ir.empty()) {
      err << "error: give a MODEL, -c EXPR or --from-ir FILE, not several\n";
      return std::nullopt;
    }
    auto frontend = s.host.registry().make_frontend("hf");
    if (!frontend) {
      err << "error: compiling a MODEL needs the hf frontend plugin, which is not loaded\n";
      return std::nullopt;
    }
    FrontendOptions opts;
    opts.dtype = s.dtype;
    auto g = frontend->import(FrontendInput{src.model.frontend_text(), src.model.model}, opts);
    if (!g) {
      report(err, g.error());
      return std::nullopt;
    }
    return std::move(*g);
  }
  if (src.model.any_flag()) {
    err << "error: --layer, --seq-len, --decode and --cache-len apply to a MODEL (tessera compile MODEL ...)\n";
    return std::nullopt;
  }
  if (!src.from_ir.empty() && !src.expr.empty()) {
    err << "error: give either -c EXPR or --from-ir FILE, not both\n";
    return std::nullopt;
  }
  if (!src.from_ir.empty()) {
    std::ifstream f(src.from_ir, std::ios::binary);
    if (!f) {
      err << "error: cannot read '" << src.from_ir << "'\n";
      return std::nullopt;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    // JSON is an object; printed IR never starts with `{`. So the content decides, not the name.
    const std::string text = ss.str();
    size_t first = text.find_first_not_of(" \t\r\n");
    bool json = first != std::string::npos && text[first] == '{';
    auto g = json ? graph_from_json_text(text, src.from_ir) : parse_graph(text, src.from_ir);
    if (!g) {
      report(err, g.error());
      return std::nullopt;
    }
    return std::move(*g);
  }
  if (src.expr.empty()) {
    err << "error: nothing to compile: give -c EXPR, -f FILE or --from-ir FILE\n";
    return std::nullopt;
  }
  auto frontend = s.host.registry().make_frontend(src.frontend);
  if (!frontend) {
    auto known = s.host.registry().names(ComponentKind::Frontend);
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    err << "error: no frontend named '" << src.frontend << "' is loaded (loaded: " << (list.empty() ? "none" : list) << ")\n";
    return std::nullopt;
  }
  FrontendOptions opts;
  opts.dtype = s.dtype;
  std::vector<Diagnostic> warnings;
  opts.warnings = &warnings;
  auto g = frontend->import(FrontendInput{src.expr, src.label}, opts);
  for (const Diagnostic& w : warnings) err << w.render();
  if (!g) {
    report(err, g.error());
    return std::nullopt;
  }
  return std::move(*g);
}

std::optional<Dialect> resolve_stop_stage(const Session& s, const std::string& ir, std::ostream& err) {
  if (ir.empty()) return s.pipeline.last_stage();
  auto d = parse_dialect(ir);
  if (!d || *d == Dialect::Core) {
    err << "error: unknown --ir stage '" << ir << "' (expected torch, tensor, loop, tile, kernel or cuda)\n";
    return std::nullopt;
  }
  if (*d != Dialect::Torch) {
    auto it = s.pipeline.stages.find(*d);
    if (it == s.pipeline.stages.end() || it->second.empty()) {
      err << "error: --ir " << ir << ": pipeline '" << s.pipeline.name << "' (" << s.pipeline.file
          << ") has no passes for stage '" << ir << "'; the furthest stage it reaches is '"
          << dialect_name(s.pipeline.last_stage()) << "'\n";
      return std::nullopt;
    }
  }
  return d;
}

}  // namespace tessera::cli

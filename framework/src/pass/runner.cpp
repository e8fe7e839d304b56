// PipelineRunner: runs the stages of a pipeline on a graph, with the debugging aids of the CLI:
// per-pass timing, IR printing after passes, per-application diffs (-vv), verification between
// passes, stage dumps, and a reproducer when a pass fails.
#include "tessera/pass/runner.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <utility>

#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/ir/verifier.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/registry.h"
#include "tessera/support/unified_diff.h"
#include "kernel_pass_application.h"

namespace tessera {

namespace fs = std::filesystem;

namespace {

constexpr Dialect kStageOrder[] = {Dialect::Torch, Dialect::Tensor, Dialect::Loop,
                                   Dialect::Tile,  Dialect::Kernel, Dialect::Cuda};

int stage_index(Dialect d) {
  for (int i = 0; i < 6; ++i)
    if (kStageOrder[i] == d) return i + 1;
  return 0;  // Core
}

// The printed form of every compute node, by id, in graph order (what -vv diffs compare).
std::vector<std::pair<std::string, std::string>> node_texts(const Graph& g) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Node* n : g.nodes())
    if (n->dialect() != Dialect::Core) out.emplace_back(n->id(), print_node(g, *n));
  return out;
}

// One -vv block: a hunk group per node whose printout changed, then the declined matches.
std::string application_diff(const std::string& marker,
                             const std::vector<std::pair<std::string, std::string>>& before,
                             const std::vector<std::pair<std::string, std::string>>& after,
                             const std::vector<PassContext::Skip>& skips) {
  std::map<std::string, const std::string*> old_text, new_text;
  for (const auto& [id, text] : before) old_text[id] = &text;
  for (const auto& [id, text] : after) new_text[id] = &text;
  std::ostringstream body;
  for (const auto& [id, text] : after) {
    auto it = old_text.find(id);
    if (it == old_text.end()) {
      body << "@@ matched at " << id << " (new) @@\n" << unified_diff("", text);
    } else if (*it->second != text) {
      body << "@@ matched at " << id << " (in-place) @@\n" << unified_diff(*it->second, text);
    }
  }
  for (const auto& [id, text] : before)
    if (!new_text.count(id)) body << "@@ matched at " << id << " (removed) @@\n" << unified_diff(text, "");
  std::ostringstream os;
  if (!body.str().empty()) os << ">>> " << marker << "\n" << body.str() << "<<< " << marker << "\n";
  for (const auto& s : skips) os << "--- " << marker << " skipped at " << s.node << ": " << s.reason << "\n";
  return os.str();
}

// Kernels equal up to their buffer names are rewritten once (kernel_sharing.h), unless a knob of
// the entry is pinned to a text value: an out-of-tree knob's value might name a buffer, and then
// mean one kernel, not its group (Tessera's knob values name roles: stage_inputs' STAGE `in1`).
bool shares_equal_kernels(const PassEntry& entry) {
  return std::none_of(entry.pins.begin(), entry.pins.end(),
                      [](const KnobPin& pin) { return std::holds_alternative<std::string>(pin.value); });
}

Status write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return make_error("cannot write '" + path.string() + "'");
  f << text;
  if (!f) return make_error("error writing '" + path.string() + "'");
  return Status::ok();
}

Status dump_stage(const std::string& dir, const std::string& stem, const Graph& g) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error("cannot create dump directory '" + dir + "': " + ec.message());
  TESSERA_TRY(write_text(fs::path(dir) / (stem + ".txt"), print_graph(g)));
  return write_text(fs::path(dir) / (stem + ".json"), graph_to_json_text(g));
}

// A pin that no node recorded a choice for was never asked for: the pass chose that knob for no
// kernel of the program (register_tile on a program without a matmul), so the pin changed nothing.
// That is said, at the pin, rather than ignored; the pass's skips (its reasons for leaving kernels
// alone) come as notes.
void warn_unasked_pins(const PassEntry& entry, const Graph& g, const PassContext& ctx, DiagnosticEngine& diags) {
  if (entry.pins.empty()) return;
  for (const KnobPin& pin : entry.pins) {
    bool asked = false;
    for (const Node* n : g.nodes()) {
      asked = std::any_of(n->choices.begin(), n->choices.end(),
                          [&](const KnobChoice& c) { return c.pass == entry.name && c.knob == pin.knob; });
      if (asked) break;
    }
    if (asked) continue;
    Diagnostic d = make_warning("pinned knob '" + pin.knob + ": " + knob_value_str(pin.value) + "' of pass '" +
                                entry.name + "' had no effect: the pass chose " + pin.knob +
                                " for no kernel of this program");
    d.at(pin.loc);
    constexpr size_t kShownSkips = 3;
    for (size_t i = 0; i < ctx.skips().size() && i < kShownSkips; ++i)
      d.note(entry.name + " skipped '" + ctx.skips()[i].node + "': " + ctx.skips()[i].reason);
    if (ctx.skips().size() > kShownSkips)
      d.note("and " + std::to_string(ctx.skips().size() - kShownSkips) + " more skips (-vv lists them)");
    diags.report(std::move(d));
  }
}

}  // namespace

PipelineRunner::PipelineRunner(const Registry& registry, const PipelineSpec& spec, RunnerOptions options)
    : registry_(registry), spec_(spec), opts_(std::move(options)) {}

// No pass run copies the graph. A KernelPass leaves the graph untouched when it fails, so the
// graph is its reproducer input. A whole-graph pass rewrites in place; its input is rebuilt only
// when it fails, by replaying the pipeline (deterministic) from a copy of the runner's input, taken
// once (choice sources answer by key, so a replay asks them the same questions and gets the same
// answers).
Status PipelineRunner::run(Graph& g, DiagnosticEngine& diags) {
  if (!opts_.device) return make_error("internal error: the pipeline runner needs a device description");
  TESSERA_TRY(verify_graph(g, g.stage()));
  if (!opts_.dump_dir.empty()) TESSERA_TRY(dump_stage(opts_.dump_dir, "0_input", g));
  std::optional<Graph> input;
  input.emplace(g);

  std::vector<Timing> timings;
  TESSERA_TRY(run_stages(g, diags, nullptr, input ? &*input : nullptr, &timings));

  if (opts_.time_passes && opts_.err) {
    std::ostream& err = *opts_.err;
    double total = 0;
    for (const auto& t : timings) total += t.ms;
    err << "===-------------------------------------------===\n"
        << "  pass execution time (total " << std::fixed << std::setprecision(3) << total << " ms)\n"
        << "===-------------------------------------------===\n";
    for (const auto& t : timings) {
      double pct = total > 0 ? 100.0 * t.ms / total : 0.0;
      err << "  " << std::setw(10) << std::setprecision(3) << t.ms << " ms  " << std::setw(5) << std::setprecision(1)
          << pct << "%  " << t.marker << "\n";
    }
  }
  return Status::ok();
}

Status PipelineRunner::run_stages(Graph& g, DiagnosticEngine& diags, const std::string* stop_before,
                                  const Graph* input, std::vector<Timing>* timings) const {
  // While rebuilding a failed pass's input (stop_before), nothing is printed, dumped or reported.
  const bool quiet = stop_before != nullptr;
  std::ostream* out = quiet ? nullptr : opts_.out;
  std::ostream* err = quiet ? nullptr : opts_.err;
  const int threads = std::max(spec_.threads, 1);
  // Kernels equal up to buffer names, kept from one kernel pass to the next (kernel_sharing.h).
  KernelGroups groups;

  for (Dialect stage : kStageOrder) {
    if (stage_index(stage) > stage_index(opts_.stop_after)) break;
    if (opts_.start_after && stage_index(stage) <= stage_index(*opts_.start_after)) continue;
    auto it = spec_.stages.find(stage);
    if (it == spec_.stages.end() || it->second.empty()) continue;
    // A graph that is already past this stage (e.g. loaded with --from-ir) skips it.
    if (stage_index(g.stage()) > stage_index(stage)) continue;

    size_t position = 0;
    for (const PassEntry& entry : it->second) {
      ++position;
      const std::string marker = pass_marker(stage, position, entry.name);
      if (stop_before && marker == *stop_before) return Status::ok();
      std::unique_ptr<Pass> pass = registry_.make_pass(entry.name);
      if (!pass) {
        Diagnostic d = make_error("unknown pass '" + entry.name + "'");
        d.at(entry.loc);
        return d;
      }
      PassContext ctx(entry.name, marker, pass->knobs(), entry.pins, {opts_.tuner, opts_.replay},
                      opts_.device, &diags);
      ctx.set_graph(&g);
      auto* kernel_pass = dynamic_cast<KernelPass*>(pass.get());
      const bool show_diff = !quiet && (opts_.verbosity >= 2 || opts_.print_diff.count(entry.name) > 0);

      // What -vv compares: every node's printout for a whole-graph pass, only the rewritten
      // nodes' for a kernel pass. Made only when asked for.
      std::vector<std::pair<std::string, std::string>> before_text, after_text;
      std::vector<AppliedNodeText> applied;
      std::optional<Graph> snapshot;  // the pass's input, when it cannot be rebuilt by a replay
      if (show_diff && !kernel_pass) before_text = node_texts(g);
      if (!input && !quiet && (!kernel_pass || opts_.verify_each)) snapshot.emplace(g);

      auto t0 = std::chrono::steady_clock::now();
      const bool share = kernel_pass && shares_equal_kernels(entry);
      if (!share) groups.invalidate();  // a whole-graph pass, or kernels rewritten one by one
      Status st = kernel_pass ? apply_kernel_pass(*kernel_pass, g, ctx, threads, show_diff ? &applied : nullptr,
                                                  share ? &groups : nullptr)
                              : pass->run(g, ctx);
      if (!kernel_pass) groups.invalidate();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (timings) timings->push_back({marker, ms});
      const bool unchanged = kernel_pass && !st;  // a failed kernel pass leaves the graph as it was

      if (st && opts_.verify_each && !quiet) {
        Status v = verify_graph_index(g);
        if (v) v = verify_graph(g, g.stage());
        if (!v) {
          Diagnostic d = std::move(v).error();
          d.message = "IR does not verify after the pass: " + d.message;
          st = Status(std::move(d));
        }
      }
      if (!st) {
        if (quiet) return st;
        if (unchanged) return fail(std::move(st).error(), marker, g);
        if (snapshot) return fail(std::move(st).error(), marker, *snapshot);
        return fail(std::move(st).error(), marker, input ? rebuild_input(marker, input) : Graph(g));
      }

      if (!quiet) warn_unasked_pins(entry, std::as_const(g), ctx, diags);
      if (opts_.verbosity >= 1 && err) *err << "[" << marker << "] " << std::fixed << std::setprecision(3) << ms << " ms\n";
      if (show_diff && out) {
        if (kernel_pass) {
          for (AppliedNodeText& a : applied) {
            before_text.emplace_back(a.id, std::move(a.before));
            after_text.emplace_back(a.id, std::move(a.after));
          }
        } else {
          after_text = node_texts(g);
        }
        *out << application_diff(marker, before_text, after_text, ctx.skips());
      }
      if (out && (opts_.print_ir_after_all || opts_.print_ir_after.count(entry.name)))
        *out << "// ----- IR after " << marker << " -----\n" << print_graph(g) << "\n";
    }

    if (quiet) continue;
    Status v = verify_graph(g, stage);
    if (!v) {
      Diagnostic d = std::move(v).error();
      d.message = "IR at the end of stage '" + std::string(dialect_name(stage)) + "' does not verify: " + d.message;
      return d;
    }
    if (!opts_.dump_dir.empty())
      TESSERA_TRY(dump_stage(opts_.dump_dir, std::to_string(stage_index(stage)) + "_" + std::string(dialect_name(stage)), g));
    if (opts_.on_stage_end) opts_.on_stage_end(stage, g);
  }
  if (stop_before) return make_error("internal error: pass " + *stop_before + " is not in the pipeline");
  return Status::ok();
}

Graph PipelineRunner::rebuild_input(const std::string& marker, const Graph* input) const {
  Graph g = *input;
  DiagnosticEngine ignored;
  Status st = run_stages(g, ignored, &marker, nullptr, nullptr);
  (void)st;  // the same passes succeeded a moment ago; were they to fail now, `g` is still the best guess
  return g;
}

Status PipelineRunner::fail(Diagnostic d, const std::string& marker, const Graph& input) const {
  if (d.pass.empty()) d.pass = marker;
  if (!d.node.empty()) {
    if (const Node* n = input.find(d.node); n && n->dialect() != Dialect::Core) {
      std::string text = print_node(input, *n);
      while (!text.empty() && text.back() == '\n') text.pop_back();
      d.note("IR of '" + d.node + "' before the pass:\n" + text);
    }
  }
  std::string dir_name = "tessera-reproducer-" + marker;
  std::replace(dir_name.begin(), dir_name.end(), ':', '_');
  fs::path dir = !opts_.reproducer_dir.empty() ? fs::path(opts_.reproducer_dir)
                 : !opts_.dump_dir.empty()     ? fs::path(opts_.dump_dir) / "reproducer"
                                               : fs::temp_directory_path() / dir_name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  Status w1 = ec ? Status(make_error(ec.message())) : write_text(dir / "input.json", graph_to_json_text(input));
  Status w2 = w1 ? write_text(dir / "pipeline.yaml", print_pipeline(spec_, registry_)) : w1;
  if (w2) {
    d.note("reproducer written to " + dir.string() + " (input.json, pipeline.yaml); replay with: tessera compile --from-ir " +
           (dir / "input.json").string() + " --pipeline " + (dir / "pipeline.yaml").string() + " --ir " +
           std::string(dialect_name(opts_.stop_after)));
  } else {
    d.note("could not write a reproducer to " + dir.string() + ": " + w2.error().message);
  }
  return d;
}

}  // namespace tessera

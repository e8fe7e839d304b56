// `tessera tune --calibrate RESULTS -o FILE`: fits the cost model's coefficients to measured kernel
// times and writes them in data/cost_model.yaml's format (docs/cost-model.md, "Calibration").
//
// RESULTS is either
//   * the output directory of `tessera bench` (or its report.json): every entry of report.json
//     with a kernels/<id>.json (the per-kernel table of `run --bench --json`) is recompiled from
//     the suite (report.json's `suite`, or --suite) for the device of the report, and each kernel's
//     features are paired with its measured median;
//   * a calibration file: {"format": "tessera-calibration", "version": 1, "device": "h100",
//     "programs": [{"program": "<-c text>", "bench": "<run --bench --json file>"} or
//     {"program": ..., "kernels": [{"node": ..., "median_us": ..., "registers": ...}]}]},
//     paths relative to the file.
// Kernels are matched by node id, so the programs must compile as they did when measured (same
// pipeline and Tessera version); a kernel that is not found is an error naming it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench_suite.h"
#include "cli_session.h"
#include "commands.h"
#include "compile_program.h"
#include "tessera/ir/op.h"
#include "tessera/pass/runner.h"
#include "tessera/target/cost_model.h"
#include "tessera/target/cost_model_calibration.h"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Expected<json> read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read " + path.string() + ": file not found or unreadable");
  std::ostringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) return make_error(path.string() + ": not valid JSON");
  return doc;
}

// One measured kernel: its node in the compiled program, its median and the compiler's registers.
struct MeasuredKernel {
  std::string node;
  double median_us = 0;
  int registers = 0;
};

Expected<std::vector<MeasuredKernel>> kernels_of(const json& list, const std::string& where) {
  if (!list.is_array()) return make_error(where + ": 'kernels' must be a list");
  std::vector<MeasuredKernel> out;
  for (const json& k : list) {
    if (!k.is_object() || !k.contains("node") || !k["node"].is_string() || !k.contains("median_us") ||
        !k["median_us"].is_number())
      return make_error(where + ": each kernel needs 'node' (text) and 'median_us' (a number)");
    MeasuredKernel m;
    m.node = k["node"].get<std::string>();
    m.median_us = k["median_us"].get<double>();
    if (k.contains("registers") && k["registers"].is_number_integer()) m.registers = k["registers"].get<int>();
    out.push_back(std::move(m));
  }
  return out;
}

// One program and the times measured for its kernels.
struct MeasuredProgram {
  std::string label;    // the suite entry or "<program N>"
  std::string program;  // torch_expr text
  std::vector<MeasuredKernel> kernels;
};

struct Results {
  std::string device;  // the device table's name of the GPU measured ("" = the session's)
  std::vector<MeasuredProgram> programs;
};

Expected<Results> read_bench_report(const json& report, const fs::path& dir, const std::string& suite_flag) {
  Results r;
  if (report.contains("device") && report["device"].is_object() && report["device"].contains("table_entry") &&
      report["device"]["table_entry"].is_string())
    r.device = report["device"]["table_entry"].get<std::string>();
  std::string suite_path = suite_flag;
  if (suite_path.empty()) {
    if (!report.contains("suite") || !report["suite"].is_string())
      return make_error((dir / "report.json").string() + " names no suite; give it with --suite FILE");
    suite_path = report["suite"].get<std::string>();
    if (!fs::exists(suite_path) && fs::exists(dir / suite_path)) suite_path = (dir / suite_path).string();
    if (!fs::exists(suite_path))
      return make_error((dir / "report.json").string() + " names the suite '" + suite_path +
                        "', which is not here (nor beside the report); give it with --suite FILE");
  }
  TESSERA_ASSIGN_OR_RETURN(Suite suite, load_suite(suite_path));
  if (!report.contains("entries") || !report["entries"].is_array())
    return make_error((dir / "report.json").string() + ": no 'entries' list");
  for (const json& e : report["entries"]) {
    if (!e.is_object() || !e.contains("id") || !e["id"].is_string()) continue;
    const std::string id = e["id"].get<std::string>();
    const fs::path kernels_file = dir / "kernels" / (id + ".json");
    if (!fs::exists(kernels_file)) continue;  // not timed (failed, or not run)
    const SuiteEntry* entry = nullptr;
    for (const SuiteEntry& s : suite.entries)
      if (s.id == id) entry = &s;
    if (entry == nullptr) return make_error("entry '" + id + "' of the report is not in the suite " + suite_path);
    TESSERA_ASSIGN_OR_RETURN(json timing, read_json(kernels_file));
    if (!timing.contains("kernels")) return make_error(kernels_file.string() + ": no 'kernels' list");
    TESSERA_ASSIGN_OR_RETURN(std::vector<MeasuredKernel> kernels, kernels_of(timing["kernels"], kernels_file.string()));
    r.programs.push_back(MeasuredProgram{id, entry->program, std::move(kernels)});
  }
  return r;
}

Expected<Results> read_calibration_file(const json& doc, const fs::path& file) {
  const std::string where = file.string();
  if (!doc.contains("version") || doc["version"] != 1)
    return make_error(where + ": unsupported calibration file version (this Tessera reads version 1)");
  Results r;
  if (doc.contains("device")) {
    if (!doc["device"].is_string()) return make_error(where + ": 'device' must be a device table name");
    r.device = doc["device"].get<std::string>();
  }
  if (!doc.contains("programs") || !doc["programs"].is_array()) return make_error(where + ": no 'programs' list");
  size_t index = 0;
  for (const json& p : doc["programs"]) {
    const std::string label = where + ": programs[" + std::to_string(index++) + "]";
    if (!p.is_object() || !p.contains("program") || !p["program"].is_string())
      return make_error(label + ": needs 'program' (the program text, as `tessera compile -c` takes it)");
    MeasuredProgram m{label, p["program"].get<std::string>(), {}};
    if (p.contains("kernels")) {
      TESSERA_ASSIGN_OR_RETURN(m.kernels, kernels_of(p["kernels"], label));
    } else if (p.contains("bench") && p["bench"].is_string()) {
      const fs::path bench = file.parent_path() / p["bench"].get<std::string>();
      TESSERA_ASSIGN_OR_RETURN(json timing, read_json(bench));
      if (!timing.contains("kernels")) return make_error(bench.string() + ": no 'kernels' list");
      TESSERA_ASSIGN_OR_RETURN(m.kernels, kernels_of(timing["kernels"], bench.string()));
    } else {
      return make_error(label + ": needs 'kernels' or 'bench' (a `tessera run --bench --json` file)");
    }
    r.programs.push_back(std::move(m));
  }
  return r;
}

Expected<Results> read_results(const std::string& results, const std::string& suite_flag) {
  fs::path path = results;
  if (fs::is_directory(path)) path /= "report.json";
  TESSERA_ASSIGN_OR_RETURN(json doc, read_json(path));
  if (!doc.is_object()) return make_error(path.string() + ": expected a JSON object");
  if (doc.contains("format") && doc["format"] == "tessera-calibration") return read_calibration_file(doc, path);
  if (doc.contains("entries") && doc.contains("suite")) return read_bench_report(doc, path.parent_path(), suite_flag);
  return make_error(path.string() +
                    ": neither a `tessera bench` report.json nor a calibration file ({\"format\": \"tessera-calibration\", ...})");
}

// The program compiled through the Kernel IR stage for `device`.
Expected<Graph> kernel_ir_of(Session& s, const MeasuredProgram& p, const DeviceDesc& device) {
  ProgramSource src;
  src.expr = p.program;
  src.label = "<" + p.label + ">";
  std::ostringstream log;
  std::optional<Graph> g = load_program(s, src, log);
  if (!g) return make_error(p.label + ": the program does not compile:\n" + log.str());
  RunnerOptions options;
  options.stop_after = Dialect::Kernel;
  options.device = &device;
  options.out = &log;
  options.err = &log;
  DiagnosticEngine diags;
  Status st = PipelineRunner(s.host.registry(), s.pipeline, options).run(*g, diags);
  if (!st) return make_error(p.label + ": " + st.error().render());
  return std::move(*g);
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v * 100);
  return buf;
}

}  // namespace

int calibrate_cost_model_command(const GlobalFlags& flags, const std::string& results, const std::string& suite) {
  std::unique_ptr<Session> s = open_session(flags, std::cerr);
  if (!s) return kExitUsage;
  Expected<Results> read = read_results(results, suite);
  if (!read) return report(std::cerr, read.error());
  // The device measured: the results' own, unless --device says otherwise.
  const DeviceDesc* device = s->device;
  if (flags.device.empty() && !read->device.empty()) {
    device = s->devices.find(read->device);
    if (device == nullptr) {
      std::cerr << "error: " << results << " was measured on '" << read->device
                << "', which the device table does not describe (give --device NAME)\n";
      return kExitError;
    }
  }
  Expected<CostModel> start = CostModel::load_default();
  if (!start) return report(std::cerr, start.error());

  std::vector<CalibrationSample> samples;
  for (const MeasuredProgram& p : read->programs) {
    Expected<Graph> g = kernel_ir_of(*s, p, *device);
    if (!g) return report(std::cerr, g.error());
    for (const MeasuredKernel& k : p.kernels) {
      const Node* n = g->find(k.node);
      if (n == nullptr || n->op_as<KernelOp>() == nullptr) {
        std::cerr << "error: " << p.label << ": kernel node '" << k.node
                  << "' is not in the recompiled program (measured with another pipeline or Tessera version?)\n";
        return kExitError;
      }
      Expected<KernelFeatures> f = start->features(*g, *n, *device, k.registers);
      if (!f) return report(std::cerr, f.error());
      samples.push_back(CalibrationSample{p.label + ": " + k.node, std::move(*f), k.median_us});
    }
  }
  CalibrationFit fit;
  Expected<CostModel> fitted = calibrate(*start, samples, &fit);
  if (!fitted) return report(std::cerr, fitted.error());
  fitted->set_calibration("fitted to " + std::to_string(fit.samples) + " kernel times of " + results + " on " +
                          device->name + "; relative error rms " + percent(fit.rms_error_before) + " (prior) -> " +
                          percent(fit.rms_error_after) + ", median " + percent(fit.median_error_after) + ", max " +
                          percent(fit.max_error_after));
  std::cerr << "calibration: " << fitted->calibration() << "\n";
  std::string fitted_list, kept_list;
  for (CostCoefficient c : fit.fitted) fitted_list += (fitted_list.empty() ? "" : ", ") + std::string(coefficient_key(c));
  for (CostCoefficient c : fit.kept) kept_list += (kept_list.empty() ? "" : ", ") + std::string(coefficient_key(c));
  std::cerr << "  fitted: " << (fitted_list.empty() ? "none" : fitted_list) << "\n";
  std::cerr << "  kept at the prior (no sample bound by their term): " << (kept_list.empty() ? "none" : kept_list)
            << "\n";
  if (fit.samples < fit.fitted.size())
    std::cerr << "  note: fewer kernel times (" << fit.samples << ") than fitted coefficients (" << fit.fitted.size()
              << "): the fit is not determined by the data alone; measure more kernels\n";
  return emit_output(flags, fitted->to_yaml(), std::cerr);
}

}  // namespace tessera::cli

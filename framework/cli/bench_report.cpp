// report.json and report.md of `tessera bench` (see bench_report.h).
#include "bench_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench_suite.h"

namespace tessera::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// µs with three significant figures or at least one decimal.
std::string fmt_us(double us) { return us >= 100 ? fmt(us, 1) : us >= 10 ? fmt(us, 2) : fmt(us, 3); }
std::string fmt_speedup(double s) { return fmt(s, 2) + "×"; }
std::string opt_us(const std::optional<double>& v) { return v ? fmt_us(*v) : "n/a"; }

ojson opt_json(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

std::optional<double> speedup(const TesseraResult& r, const std::optional<double>& baseline_us) {
  if (!r.timed || !(r.tessera_us > 0) || !baseline_us || !(*baseline_us > 0)) return std::nullopt;
  return *baseline_us / r.tessera_us;
}

double geomean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += std::log(x);
  return v.empty() ? 0 : std::exp(sum / static_cast<double>(v.size()));
}

// Peak compute the entry is compared with: FP32 for f32 programs, dense BF16 tensor cores for bf16.
double peak_tflops(const DeviceDesc& d, const std::string& dtype) {
  return dtype == "bf16" ? d.tensor_tflops_bf16 : d.fp32_tflops;
}

std::string first_line(const std::string& s) {
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// Markdown table cells must not contain pipes or newlines.
std::string cell(std::string s) {
  s = first_line(s);
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// Everything computed once per row and shared by both files.
struct Derived {
  const TesseraResult* r;
  const BaselineResult* b;  // nullptr: no baseline for this entry
  std::optional<double> vs_eager, vs_compiled;
  double gbps = 0, tflops = 0, pct_bw = 0, pct_compute = 0;
  std::string output_check;  // the verdict over both checks
};

std::string output_verdict(const TesseraResult& r, const BaselineResult* b) {
  if (!r.ran) return "not run";
  const std::string torch = b ? b->check : "skipped";
  if (r.check == "fail" || torch == "fail") return "FAIL";
  if (r.check == "pass" || torch == "pass") return "pass";
  return "unchecked";
}

struct Summary {
  std::string name;
  int entries = 0;
  std::vector<double> vs_eager, vs_compiled;
  int wins_eager = 0, wins_compiled = 0;
};

void add_to(Summary& s, const Derived& d) {
  ++s.entries;
  if (d.vs_eager) {
    s.vs_eager.push_back(*d.vs_eager);
    s.wins_eager += *d.vs_eager > 1;
  }
  if (d.vs_compiled) {
    s.vs_compiled.push_back(*d.vs_compiled);
    s.wins_compiled += *d.vs_compiled > 1;
  }
}

ojson summary_json(const Summary& s) {
  auto gm = [](const std::vector<double>& v) { return v.empty() ? ojson(nullptr) : ojson(geomean(v)); };
  return {{"entries", s.entries},
          {"geomean_speedup_vs_eager", gm(s.vs_eager)},
          {"geomean_speedup_vs_compiled", gm(s.vs_compiled)},
          {"compared_vs_eager", s.vs_eager.size()},
          {"compared_vs_compiled", s.vs_compiled.size()},
          {"wins_vs_eager", s.wins_eager},
          {"losses_vs_eager", static_cast<int>(s.vs_eager.size()) - s.wins_eager},
          {"wins_vs_compiled", s.wins_compiled},
          {"losses_vs_compiled", static_cast<int>(s.vs_compiled.size()) - s.wins_compiled}};
}

std::string summary_md_row(const Summary& s) {
  auto gm = [](const std::vector<double>& v) { return v.empty() ? std::string("n/a") : fmt_speedup(geomean(v)); };
  auto wl = [](int wins, size_t n) {
    return n == 0 ? std::string("n/a") : std::to_string(wins) + " / " + std::to_string(static_cast<int>(n) - wins);
  };
  return "| " + s.name + " | " + std::to_string(s.entries) + " | " + gm(s.vs_eager) + " | " + gm(s.vs_compiled) +
         " | " + wl(s.wins_eager, s.vs_eager.size()) + " | " + wl(s.wins_compiled, s.vs_compiled.size()) + " |\n";
}

}  // namespace

Expected<Baseline> parse_baseline_json(const std::string& text, const std::string& mode) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error("the baseline JSON is not valid JSON");
  if (!doc.is_object()) return make_error("the baseline JSON is not an object");
  Baseline b;
  b.available = true;
  b.mode = mode;
  auto str = [&](const char* key, const char* older_key) -> std::string {
    for (const char* k : {key, older_key})
      if (doc.contains(k) && doc[k].is_string()) return doc[k].get<std::string>();
    return "";
  };
  b.device = str("device", "device");
  b.torch = str("torch_version", "torch");
  b.cuda = str("cuda_version", "cuda");
  if (!doc.contains("entries") || !doc["entries"].is_array()) return make_error("the baseline JSON has no 'entries' list");
  size_t index = 0;
  for (const nlohmann::json& e : doc["entries"]) {
    const std::string where = "baseline entries[" + std::to_string(index++) + "]";
    if (!e.is_object() || !e.contains("id") || !e["id"].is_string())
      return make_error(where + " has no string 'id'");
    BaselineResult r;
    auto num = [&](const char* key, std::optional<double>& out) -> Status {
      if (!e.contains(key) || e[key].is_null()) return Status::ok();
      if (!e[key].is_number()) return make_error(where + " '" + key + "' is not a number or null");
      out = e[key].get<double>();
      return Status::ok();
    };
    TESSERA_TRY(num("eager_us", r.eager_us));
    TESSERA_TRY(num("compiled_us", r.compiled_us));
    TESSERA_TRY(num("eager_plain_us", r.eager_plain_us));
    TESSERA_TRY(num("compiled_plain_us", r.compiled_plain_us));
    TESSERA_TRY(num("compile_s", r.compile_s));
    if (e.contains("check") && !e["check"].is_null()) {
      const nlohmann::json& c = e["check"];
      if (!c.is_object() || !c.contains("status") || !c["status"].is_string())
        return make_error(where + " 'check' has no string 'status'");
      r.check = c["status"].get<std::string>();
      if (r.check != "pass" && r.check != "fail" && r.check != "skipped")
        return make_error(where + " check status '" + r.check + "' is not pass, fail or skipped");
      if (c.contains("max_abs") && c["max_abs"].is_number()) r.max_abs = c["max_abs"].get<double>();
      if (c.contains("max_rel") && c["max_rel"].is_number()) r.max_rel = c["max_rel"].get<double>();
      if (c.contains("detail") && c["detail"].is_string()) r.detail = c["detail"].get<std::string>();
    }
    if (e.contains("errors") && !e["errors"].is_null()) {
      if (!e["errors"].is_array()) return make_error(where + " 'errors' is not a list");
      for (const nlohmann::json& err : e["errors"]) r.errors.push_back(err.is_string() ? err.get<std::string>() : err.dump());
    }
    b.entries[e["id"].get<std::string>()] = r;
  }
  return b;
}

ReportFiles write_bench_report(const ReportContext& ctx, const std::vector<TesseraResult>& rows,
                               const Baseline& baseline) {
  std::vector<Derived> derived;
  for (const TesseraResult& r : rows) {
    Derived d;
    d.r = &r;
    auto it = baseline.entries.find(r.id);
    d.b = baseline.available && it != baseline.entries.end() ? &it->second : nullptr;
    if (d.b) {
      d.vs_eager = speedup(r, d.b->eager_us);
      d.vs_compiled = speedup(r, d.b->compiled_us);
    }
    if (r.timed && r.tessera_us > 0) {
      d.gbps = r.bytes / (r.tessera_us * 1e3);
      d.tflops = r.flops / (r.tessera_us * 1e6);
      d.pct_bw = ctx.peaks.dram_gbps > 0 ? 100 * d.gbps / ctx.peaks.dram_gbps : 0;
      const double peak = peak_tflops(ctx.peaks, r.dtype);
      d.pct_compute = peak > 0 ? 100 * d.tflops / peak : 0;
    }
    d.output_check = output_verdict(r, d.b);
    derived.push_back(d);
  }

  // Families in the suite's order, then any others by name; then everything.
  std::vector<std::string> families = suite_families();
  for (const TesseraResult& r : rows)
    if (std::find(families.begin(), families.end(), r.family) == families.end()) families.push_back(r.family);
  std::vector<Summary> per_family;
  Summary overall;
  overall.name = "all";
  for (const std::string& f : families) {
    Summary s;
    s.name = f;
    for (const Derived& d : derived)
      if (d.r->family == f) add_to(s, d);
    if (s.entries > 0) per_family.push_back(s);
  }
  for (const Derived& d : derived) add_to(overall, d);

  // Wins and losses against torch.compile (the stronger baseline), best and worst first.
  std::vector<const Derived*> compared;
  for (const Derived& d : derived)
    if (d.vs_compiled) compared.push_back(&d);
  std::stable_sort(compared.begin(), compared.end(),
                   [](const Derived* a, const Derived* b) { return *a->vs_compiled > *b->vs_compiled; });

  // ---- report.json
  ojson entries = ojson::array();
  for (const Derived& d : derived) {
    const TesseraResult& r = *d.r;
    ojson e = {{"id", r.id}, {"family", r.family}, {"model", r.model}, {"phase", r.phase}, {"seq", r.seq},
               {"kv", r.kv}, {"dtype", r.dtype}};
    e["tessera"] = {{"ran", r.ran},
                    {"timed", r.timed},
                    {"error", r.error.empty() ? ojson(nullptr) : ojson(r.error)},
                    {"us", r.timed ? ojson(r.tessera_us) : ojson(nullptr)},
                    {"cuda_graph_unavailable", r.graphs_unavailable.empty() ? ojson(nullptr) : ojson(r.graphs_unavailable)},
                    {"compile_s", r.compile_s},
                    {"host_s", {{"params", r.params_s}, {"reference", r.reference_s}, {"run", r.run_s}, {"save_io", r.save_io_s}}},
                    {"kernels", r.kernels},
                    {"kernels_from_cache", r.kernels_from_cache},
                    {"bytes", r.bytes},
                    {"flops", r.flops},
                    {"flops_source", r.flops_source},
                    {"gb_per_s", d.gbps},
                    {"tflop_per_s", d.tflops},
                    {"pct_peak_bandwidth", d.pct_bw},
                    {"pct_peak_compute", d.pct_compute},
                    {"check", {{"status", r.check}, {"detail", r.check_detail}}}};
    if (d.b) {
      e["pytorch"] = {{"eager_us", opt_json(d.b->eager_us)},
                      {"compiled_us", opt_json(d.b->compiled_us)},
                      {"eager_plain_us", opt_json(d.b->eager_plain_us)},
                      {"compiled_plain_us", opt_json(d.b->compiled_plain_us)},
                      {"compile_s", opt_json(d.b->compile_s)},
                      {"check", {{"status", d.b->check}, {"max_abs", opt_json(d.b->max_abs)},
                                 {"max_rel", opt_json(d.b->max_rel)}, {"detail", d.b->detail}}},
                      {"errors", d.b->errors}};
    } else {
      e["pytorch"] = nullptr;
    }
    e["speedup_vs_eager"] = opt_json(d.vs_eager);
    e["speedup_vs_compiled"] = opt_json(d.vs_compiled);
    e["output_check"] = d.output_check;
    entries.push_back(std::move(e));
  }
  ojson families_json = ojson::object();
  for (const Summary& s : per_family) families_json[s.name] = summary_json(s);
  ojson wins = ojson::array(), losses = ojson::array();
  for (const Derived* d : compared)
    (*d->vs_compiled > 1 ? wins : losses).push_back({{"id", d->r->id}, {"speedup_vs_compiled", *d->vs_compiled}});
  std::vector<std::string> failed;
  for (const TesseraResult& r : rows)
    if (!r.error.empty()) failed.push_back(r.id);

  ojson doc = {
      {"date", ctx.date},
      {"command", ctx.command},
      {"tessera_version", ctx.tessera_version},
      {"suite", ctx.suite_file},
      {"tier", ctx.tier},
      {"timing", ctx.timing},
      {"device", {{"name", ctx.title_device},
                  {"table_entry", ctx.peaks.name},
                  {"arch", ctx.peaks.arch},
                  {"peak_dram_gb_per_s", ctx.peaks.dram_gbps},
                  {"peak_fp32_tflop_per_s", ctx.peaks.fp32_tflops},
                  {"peak_bf16_tensor_tflop_per_s", ctx.peaks.tensor_tflops_bf16}}},
      {"baseline", baseline.available
                       ? ojson{{"available", true}, {"device", baseline.device}, {"torch", baseline.torch},
                               {"cuda", baseline.cuda}, {"mode", baseline.mode}, {"notes", baseline.notes}}
                       : ojson{{"available", false}, {"reason", baseline.reason}}},
      {"entries", std::move(entries)},
      {"summary", {{"families", std::move(families_json)},
                   {"overall", summary_json(overall)},
                   {"wins_vs_compiled", std::move(wins)},
                   {"losses_vs_compiled", std::move(losses)},
                   {"failed", failed}}},
      {"plot", ctx.plot_file.empty() ? ojson(nullptr) : ojson(ctx.plot_file)},
      {"notes", ctx.notes}};

  // ---- report.md
  std::ostringstream md;
  md << "# Tessera vs PyTorch: " << ctx.title_device << ", " << ctx.date << "\n\n";
  md << "- Command: `" << ctx.command << "`\n";
  md << "- Suite: `" << ctx.suite_file << "`, tier " << ctx.tier << ", " << rows.size() << " entries\n";
  md << "- Device: " << ctx.title_device << "; peaks from data/devices.yaml (`" << ctx.peaks.name << "`): "
     << fmt(ctx.peaks.dram_gbps, 0) << " GB/s DRAM, " << fmt(ctx.peaks.fp32_tflops, 1) << " TFLOP/s FP32 (f32 entries), "
     << fmt(ctx.peaks.tensor_tflops_bf16, 0) << " TFLOP/s dense BF16 tensor cores (bf16 entries)\n";
  md << "- Tessera " << ctx.tessera_version << ": " << ctx.timing << "\n";
  if (baseline.available)
    md << "- PyTorch " << baseline.torch << " (CUDA " << baseline.cuda << "), torch.compile mode `" << baseline.mode
       << "`\n";
  else
    md << "- PyTorch baseline: n/a (" << baseline.reason << ")\n";
  for (const std::string& n : baseline.notes) md << "- PyTorch baseline note: " << n << "\n";
  for (const std::string& n : ctx.notes) md << "- Note: " << n << "\n";
  for (const TesseraResult& r : rows)
    if (r.timed && !r.graphs_unavailable.empty())
      md << "- Note: " << r.id << " was timed as plain launches, not a CUDA graph (" << r.graphs_unavailable << ")\n";
  md << "\nSpeedup = PyTorch µs / Tessera µs: above 1 Tessera is faster.\n";

  md << "\n## Summary\n\n";
  md << "| family | entries | geomean × eager | geomean × compiled | wins / losses vs eager | wins / losses vs compiled |\n";
  md << "|---|---:|---:|---:|---:|---:|\n";
  for (const Summary& s : per_family) md << summary_md_row(s);
  md << summary_md_row(overall);

  if (!compared.empty()) {
    md << "\nWins over torch.compile (" << wins.size() << "): ";
    bool first = true;
    for (const Derived* d : compared)
      if (*d->vs_compiled > 1) {
        md << (first ? "" : ", ") << "`" << d->r->id << "` " << fmt_speedup(*d->vs_compiled);
        first = false;
      }
    if (first) md << "none";
    md << "\n\nLosses to torch.compile (" << losses.size() << "): ";
    first = true;
    for (auto it = compared.rbegin(); it != compared.rend(); ++it)
      if (*(*it)->vs_compiled <= 1) {
        md << (first ? "" : ", ") << "`" << (*it)->r->id << "` " << fmt_speedup(*(*it)->vs_compiled);
        first = false;
      }
    if (first) md << "none";
    md << "\n";
  }
  if (!failed.empty()) {
    md << "\nFailed in Tessera (" << failed.size() << ", left out of the geomeans):\n\n";
    for (const TesseraResult& r : rows)
      if (!r.error.empty()) md << "- `" << r.id << "`: " << cell(r.error) << "\n";
  }

  md << "\n## Plot\n\n";
  if (!ctx.plot_file.empty())
    md << "![speedup per entry by family](" << ctx.plot_file << ")\n";
  else
    md << "Plot skipped: " << ctx.plot_note << ".\n";

  md << "\n## Entries\n\n";
  md << "| entry | family | Tessera µs | eager µs | compiled µs | Tessera compile s | torch.compile s | × eager | × compiled "
        "| GB/s | % peak BW | TFLOP/s | % peak compute | check |\n";
  md << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const Derived& d : derived) {
    const TesseraResult& r = *d.r;
    md << "| `" << r.id << "` | " << r.family << " | ";
    if (!r.ran) {
      md << "failed | " << (d.b ? opt_us(d.b->eager_us) : "n/a") << " | " << (d.b ? opt_us(d.b->compiled_us) : "n/a")
         << " | " << fmt(r.compile_s, 2) << " | " << (d.b && d.b->compile_s ? fmt(*d.b->compile_s, 1) : "n/a")
         << " | n/a | n/a | n/a | n/a | n/a | n/a | not run |\n";
      continue;
    }
    std::string check = d.output_check + " (reference: " + r.check;
    if (d.b) check += "; PyTorch: " + d.b->check;
    check += ")";
    md << (r.timed ? fmt_us(r.tessera_us) : "not timed") << " | " << (d.b ? opt_us(d.b->eager_us) : "n/a") << " | "
       << (d.b ? opt_us(d.b->compiled_us) : "n/a") << " | " << fmt(r.compile_s, 2) << " | "
       << (d.b && d.b->compile_s ? fmt(*d.b->compile_s, 1) : "n/a") << " | "
       << (d.vs_eager ? fmt_speedup(*d.vs_eager) : "n/a") << " | "
       << (d.vs_compiled ? fmt_speedup(*d.vs_compiled) : "n/a") << " | ";
    if (r.timed)
      md << fmt(d.gbps, 0) << " | " << fmt(d.pct_bw, 1) << " | " << fmt(d.tflops, 2) << " | " << fmt(d.pct_compute, 1);
    else
      md << "n/a | n/a | n/a | n/a";
    md << " | " << cell(check) << " |\n";
  }

  // Checks that did not pass, with their details.
  bool any_note = false;
  for (const Derived& d : derived) {
    const TesseraResult& r = *d.r;
    if (!r.ran) continue;
    const bool ref_note = r.check != "pass" && !r.check_detail.empty();
    const bool torch_note = d.b && d.b->check != "pass" && !d.b->detail.empty();
    const bool torch_errors = d.b && !d.b->errors.empty();
    if (!ref_note && !torch_note && !torch_errors) continue;
    if (!any_note) md << "\n## Output checks\n\n";
    any_note = true;
    if (ref_note) md << "- `" << r.id << "` reference " << r.check << ": " << cell(r.check_detail) << "\n";
    if (torch_note) md << "- `" << r.id << "` PyTorch " << d.b->check << ": " << cell(d.b->detail) << "\n";
    if (torch_errors) {
      std::string all;
      for (const std::string& e : d.b->errors) all += (all.empty() ? "" : "; ") + first_line(e);
      md << "- `" << r.id << "` PyTorch raised: " << cell(all) << "\n";
    }
  }

  return {doc.dump(2) + "\n", md.str()};
}

}  // namespace tessera::cli

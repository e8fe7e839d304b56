// The report of `tessera bench` (framework/cli/bench_report.h), from synthetic Tessera rows and
// baseline JSON: speedups, geomeans per family and overall, wins and losses, percentages of the
// device's peaks, a missing baseline, failed entries and failed checks. No GPU involved.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "framework/cli/bench_report.h"
#include "framework/cli/cli_session.h"
#include "support/cli_runner.h"

namespace tessera::cli {
namespace {

TesseraResult row(const std::string& id, const std::string& family, double us, const std::string& dtype = "f32") {
  TesseraResult r;
  r.id = id;
  r.family = family;
  r.model = "TinyLlama-1.1B";
  r.phase = "prefill";
  r.seq = 128;
  r.dtype = dtype;
  r.ran = true;
  r.timed = true;
  r.tessera_us = us;
  r.compile_s = 0.25;
  r.kernels = 1;
  r.bytes = 3.35e6;      // 3.35 MB in `us` µs
  r.flops = 66.9e6;      // 66.9 MFLOP
  r.flops_source = "kernel IR";
  r.check = "pass";
  r.check_detail = "out: max rel err 1e-06 (rtol 0.0001)";
  return r;
}

DeviceDesc h100() {
  DeviceDesc d;
  d.name = "h100";
  d.arch = "sm_90";
  d.dram_gbps = 3350;
  d.fp32_tflops = 66.9;
  d.tensor_tflops_bf16 = 989;
  return d;
}

ReportContext context() {
  ReportContext c;
  c.title_device = "NVIDIA H100 80GB HBM3";
  c.peaks = h100();
  c.date = "2026-11-24";
  c.command = "tessera bench --suite bench/suite.yaml --tier quick";
  c.suite_file = "bench/suite.yaml";
  c.tier = "quick";
  c.tessera_version = "0.1.0";
  c.timing = "CUDA graph, L2 flushed";
  c.plot_note = "matplotlib is not installed";
  return c;
}

const char* kBaselineJson = R"({
  "device": "NVIDIA H100 80GB HBM3", "torch_version": "2.5.1", "cuda_version": "12.4", "l2_bytes": 52428800,
  "entries": [
    {"id": "norm-a", "eager_us": 20.0, "compiled_us": 10.0, "eager_plain_us": 15.0, "compiled_plain_us": 8.0,
     "compile_s": 3.5, "check": {"status": "pass", "max_abs": 1e-6, "max_rel": 1e-5, "detail": ""}},
    {"id": "norm-b", "eager_us": 5.0, "compiled_us": 2.5, "compile_s": 2.0,
     "check": {"status": "pass", "max_abs": 0, "max_rel": 0, "detail": ""}},
    {"id": "mlp-a", "eager_us": 100.0, "compiled_us": 80.0, "compile_s": 9.0,
     "check": {"status": "fail", "max_abs": 0.5, "max_rel": 0.3, "detail": "out: max rel 0.3 > 0.02"}},
    {"id": "mlp-b", "eager_us": null, "compiled_us": null, "compile_s": null,
     "check": {"status": "skipped", "detail": "the entry did not run"},
     "errors": ["OutOfMemoryError: CUDA out of memory\nTried to allocate 2 GiB"]}
  ]})";

std::vector<TesseraResult> rows() {
  std::vector<TesseraResult> r = {row("norm-a", "norm", 10.0), row("norm-b", "norm", 5.0),
                                  row("mlp-a", "mlp", 50.0, "bf16"), row("mlp-b", "mlp", 7.0)};
  return r;
}

nlohmann::json report_json(const std::vector<TesseraResult>& rs, const Baseline& b) {
  return nlohmann::json::parse(write_bench_report(context(), rs, b).json);
}

TEST(BenchReport, ParsesTheBaselineJson) {
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b) << b.error().render();
  EXPECT_TRUE(b->available);
  EXPECT_EQ(b->torch, "2.5.1");
  ASSERT_EQ(b->entries.size(), 4u);
  EXPECT_EQ(*b->entries["norm-a"].compiled_us, 10.0);
  EXPECT_EQ(*b->entries["norm-a"].eager_plain_us, 15.0);
  EXPECT_FALSE(b->entries["norm-b"].eager_plain_us);
  EXPECT_FALSE(b->entries["mlp-b"].eager_us);
  EXPECT_EQ(b->entries["mlp-a"].check, "fail");
  EXPECT_EQ(b->entries["mlp-b"].detail, "the entry did not run");
  ASSERT_EQ(b->entries["mlp-b"].errors.size(), 1u);
  EXPECT_EQ(b->cuda, "12.4");
  // The older key names are read too.
  auto old = parse_baseline_json(R"({"torch": "2.4", "cuda": "12.1", "entries": []})", "max-autotune");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->torch, "2.4");
  EXPECT_EQ(old->cuda, "12.1");
  EXPECT_EQ(old->mode, "max-autotune");
}

TEST(BenchReport, RejectsMalformedBaselineJson) {
  EXPECT_FALSE(parse_baseline_json("{not json", "default"));
  EXPECT_FALSE(parse_baseline_json("[]", "default"));
  auto no_entries = parse_baseline_json(R"({"device": "x"})", "default");
  ASSERT_FALSE(no_entries);
  EXPECT_NE(no_entries.error().message.find("entries"), std::string::npos);
  auto bad_number = parse_baseline_json(R"({"entries": [{"id": "a", "eager_us": "fast"}]})", "default");
  ASSERT_FALSE(bad_number);
  EXPECT_NE(bad_number.error().message.find("entries[0] 'eager_us'"), std::string::npos) << bad_number.error().message;
  EXPECT_FALSE(parse_baseline_json(R"({"entries": [{"id": "a", "errors": "boom"}]})", "default"));
  auto bad_status = parse_baseline_json(R"({"entries": [{"id": "a", "check": {"status": "ok"}}]})", "default");
  ASSERT_FALSE(bad_status);
  EXPECT_NE(bad_status.error().message.find("'ok'"), std::string::npos);
}

TEST(BenchReport, SpeedupsGeomeansWinsAndLosses) {
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b);
  const nlohmann::json j = report_json(rows(), *b);
  const auto& e = j["entries"];
  ASSERT_EQ(e.size(), 4u);
  EXPECT_DOUBLE_EQ(e[0]["speedup_vs_eager"].get<double>(), 2.0);     // 20 / 10
  EXPECT_DOUBLE_EQ(e[0]["speedup_vs_compiled"].get<double>(), 1.0);  // 10 / 10: not a win
  EXPECT_DOUBLE_EQ(e[1]["speedup_vs_compiled"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(e[2]["speedup_vs_compiled"].get<double>(), 1.6);
  EXPECT_TRUE(e[3]["speedup_vs_eager"].is_null());  // PyTorch has no time for it

  const auto& norm = j["summary"]["families"]["norm"];
  EXPECT_EQ(norm["entries"], 2);
  EXPECT_NEAR(norm["geomean_speedup_vs_eager"].get<double>(), std::sqrt(2.0 * 1.0), 1e-12);
  EXPECT_NEAR(norm["geomean_speedup_vs_compiled"].get<double>(), std::sqrt(1.0 * 0.5), 1e-12);
  EXPECT_EQ(norm["wins_vs_compiled"], 0);
  EXPECT_EQ(norm["losses_vs_compiled"], 2);
  const auto& mlp = j["summary"]["families"]["mlp"];
  EXPECT_EQ(mlp["entries"], 2);
  EXPECT_EQ(mlp["compared_vs_compiled"], 1);
  EXPECT_NEAR(mlp["geomean_speedup_vs_compiled"].get<double>(), 1.6, 1e-12);
  const auto& all = j["summary"]["overall"];
  EXPECT_EQ(all["entries"], 4);
  EXPECT_NEAR(all["geomean_speedup_vs_compiled"].get<double>(), std::cbrt(1.0 * 0.5 * 1.6), 1e-12);
  EXPECT_NEAR(all["geomean_speedup_vs_eager"].get<double>(), std::cbrt(2.0 * 1.0 * 2.0), 1e-12);
  EXPECT_EQ(all["wins_vs_eager"], 2);
  EXPECT_EQ(all["losses_vs_eager"], 1);
  ASSERT_EQ(j["summary"]["wins_vs_compiled"].size(), 1u);
  EXPECT_EQ(j["summary"]["wins_vs_compiled"][0]["id"], "mlp-a");
  ASSERT_EQ(j["summary"]["losses_vs_compiled"].size(), 2u);
  EXPECT_EQ(j["summary"]["losses_vs_compiled"][0]["id"], "norm-a");  // the closer loss first
  // Families appear in the suite's order (norm before mlp), not by name.
  const std::string text = write_bench_report(context(), rows(), *b).json;
  EXPECT_LT(text.find("\"norm\": {"), text.find("\"mlp\": {"));
}

TEST(BenchReport, PercentOfPeakUsesTheDtypesPeak) {
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b);
  const nlohmann::json j = report_json(rows(), *b);
  const auto& a = j["entries"][0]["tessera"];  // f32: 3.35 MB and 66.9 MFLOP in 10 µs
  EXPECT_NEAR(a["gb_per_s"].get<double>(), 335.0, 1e-9);
  EXPECT_NEAR(a["pct_peak_bandwidth"].get<double>(), 10.0, 1e-9);
  EXPECT_NEAR(a["tflop_per_s"].get<double>(), 6.69, 1e-9);
  EXPECT_NEAR(a["pct_peak_compute"].get<double>(), 10.0, 1e-9);
  const auto& m = j["entries"][2]["tessera"];  // bf16: against 989 TFLOP/s, 50 µs
  EXPECT_NEAR(m["pct_peak_compute"].get<double>(), 100 * (66.9e6 / 50e-6 / 1e12) / 989, 1e-9);
}

TEST(BenchReport, FailedChecksShowInBothFiles) {
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b);
  std::vector<TesseraResult> rs = rows();
  rs[1].check = "fail";
  rs[1].check_detail = "out: max rel err 0.5 (rtol 0.0001)";
  const ReportFiles files = write_bench_report(context(), rs, *b);
  const nlohmann::json j = nlohmann::json::parse(files.json);
  EXPECT_EQ(j["entries"][1]["output_check"], "FAIL");  // our reference check failed
  EXPECT_EQ(j["entries"][2]["output_check"], "FAIL");  // PyTorch disagrees with our outputs
  EXPECT_EQ(j["entries"][0]["output_check"], "pass");
  EXPECT_NE(files.markdown.find("`norm-b` reference fail: out: max rel err 0.5"), std::string::npos) << files.markdown;
  EXPECT_NE(files.markdown.find("`mlp-a` PyTorch fail: out: max rel 0.3 > 0.02"), std::string::npos);
  EXPECT_NE(files.markdown.find("`mlp-b` PyTorch raised: OutOfMemoryError: CUDA out of memory\n"), std::string::npos)
      << files.markdown;
  EXPECT_EQ(j["entries"][3]["pytorch"]["errors"].size(), 1u);
}

TEST(BenchReport, SkippedReferenceCheckFallsBackToPyTorchs) {
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b);
  std::vector<TesseraResult> rs = rows();
  rs[0].check = "skipped";
  rs[0].check_detail = "the reference would evaluate about 12.0 GFLOP";
  rs[3].check = "skipped";
  const ReportFiles files = write_bench_report(context(), rs, *b);
  const nlohmann::json j = nlohmann::json::parse(files.json);
  EXPECT_EQ(j["entries"][0]["output_check"], "pass");       // PyTorch checked it
  EXPECT_EQ(j["entries"][3]["output_check"], "unchecked");  // nobody did
  EXPECT_NE(files.markdown.find("`norm-a` reference skipped: the reference would evaluate"), std::string::npos);
}

TEST(BenchReport, MissingBaselineMakesPyTorchColumnsNotAvailable) {
  Baseline none;
  none.reason = "python3 could not import torch (No module named 'torch')";
  const ReportFiles files = write_bench_report(context(), rows(), none);
  const nlohmann::json j = nlohmann::json::parse(files.json);
  EXPECT_FALSE(j["baseline"]["available"].get<bool>());
  EXPECT_EQ(j["baseline"]["reason"], none.reason);
  EXPECT_TRUE(j["entries"][0]["pytorch"].is_null());
  EXPECT_TRUE(j["entries"][0]["speedup_vs_eager"].is_null());
  EXPECT_TRUE(j["summary"]["overall"]["geomean_speedup_vs_compiled"].is_null());
  EXPECT_EQ(j["summary"]["overall"]["entries"], 4);
  EXPECT_NE(files.markdown.find("PyTorch baseline: n/a (python3 could not import torch"), std::string::npos);
  EXPECT_NE(files.markdown.find("| all | 4 | n/a | n/a | n/a | n/a |"), std::string::npos) << files.markdown;
  EXPECT_NE(files.markdown.find("| `norm-a` | norm | 10.00 | n/a | n/a | 0.25 | n/a | n/a | n/a | 335 | 10.0 |"),
            std::string::npos)
      << files.markdown;
  EXPECT_NE(files.markdown.find("Plot skipped: matplotlib is not installed."), std::string::npos);
}

TEST(BenchReport, FailedEntriesAreListedAndLeftOutOfGeomeans) {
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b);
  std::vector<TesseraResult> rs = rows();
  rs[2].ran = false;
  rs[2].timed = false;
  rs[2].error = "NVRTC: kernel k_mm: too many resources requested\nmore detail";
  const ReportFiles files = write_bench_report(context(), rs, *b);
  const nlohmann::json j = nlohmann::json::parse(files.json);
  EXPECT_TRUE(j["entries"][2]["speedup_vs_compiled"].is_null());
  EXPECT_EQ(j["entries"][2]["output_check"], "not run");
  EXPECT_EQ(j["summary"]["failed"], nlohmann::json::array({"mlp-a"}));
  EXPECT_TRUE(j["summary"]["families"]["mlp"]["geomean_speedup_vs_compiled"].is_null());
  EXPECT_EQ(j["summary"]["wins_vs_compiled"].size(), 0u);
  EXPECT_NE(files.markdown.find("- `mlp-a`: NVRTC: kernel k_mm: too many resources requested\n"), std::string::npos)
      << files.markdown;
  EXPECT_EQ(files.markdown.find("more detail"), std::string::npos);
}

TEST(BenchReport, EntriesRunWithoutAClockAreCheckedButNotTimed) {
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b);
  std::vector<TesseraResult> rs = rows();
  for (TesseraResult& r : rs) r.timed = false;  // the sim target: checks and IO, no time
  const ReportFiles files = write_bench_report(context(), rs, *b);
  const nlohmann::json j = nlohmann::json::parse(files.json);
  EXPECT_TRUE(j["entries"][0]["tessera"]["us"].is_null());
  EXPECT_TRUE(j["entries"][0]["speedup_vs_eager"].is_null());
  EXPECT_EQ(j["entries"][0]["output_check"], "pass");
  EXPECT_TRUE(j["summary"]["failed"].empty());
  EXPECT_NE(files.markdown.find("| `norm-a` | norm | not timed | 20.00 | 10.00 | 0.25 | 3.5 | n/a | n/a | n/a | n/a | n/a "
                                "| n/a | pass (reference: pass; PyTorch: pass) |"),
            std::string::npos)
      << files.markdown;
}

TEST(BenchReport, PlotIsLinkedWhenThere) {
  ReportContext c = context();
  c.plot_file = "speedup.png";
  c.plot_note.clear();
  const ReportFiles files = write_bench_report(c, rows(), Baseline{});
  EXPECT_NE(files.markdown.find("![speedup per entry by family](speedup.png)"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(files.json)["plot"], "speedup.png");
}

// bench/plot_speedup.py draws the report's speedups (when python3 has matplotlib) and says why not.
TEST(BenchReport, PlotScriptDrawsTheReport) {
  if (std::system("python3 -c 'import matplotlib' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 with matplotlib is not available";
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b);
  test::TempDir tmp;
  const std::string report = tmp.write("report.json", write_bench_report(context(), rows(), *b).json);
  const std::string script = std::string(TESSERA_SOURCE_DIR) + "/bench/plot_speedup.py";
  const std::string png = tmp.path() + "/speedup.png";
  int status = std::system(("python3 '" + script + "' '" + report + "' '" + png + "' 2> '" + tmp.path() + "/log'").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << test::read_file(tmp.path() + "/log");
  EXPECT_EQ(test::read_file(png).substr(0, 8), "\x89PNG\r\n\x1a\n");
  // Without a baseline there is nothing to plot: exit 4 with the reason.
  const std::string bare = tmp.write("bare.json", write_bench_report(context(), rows(), Baseline{}).json);
  status = std::system(("python3 '" + script + "' '" + bare + "' '" + png + "' 2> '" + tmp.path() + "/log'").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4);
  EXPECT_NE(test::read_file(tmp.path() + "/log").find("no speedups to plot"), std::string::npos);
}

TEST(BenchReport, OutputIsDeterministic) {
  auto b = parse_baseline_json(kBaselineJson, "default");
  ASSERT_TRUE(b);
  const ReportFiles one = write_bench_report(context(), rows(), *b), two = write_bench_report(context(), rows(), *b);
  EXPECT_EQ(one.json, two.json);
  EXPECT_EQ(one.markdown, two.markdown);
}

TEST(BenchReport, DeviceForDriverName) {
  auto table = DeviceTable::load_default();  // data/devices.yaml
  ASSERT_TRUE(table) << table.error().render();
  auto name_of = [&](const std::string& driver) {
    const DeviceDesc* d = device_for_driver_name(*table, driver);
    return d ? d->name : std::string("none");
  };
  EXPECT_EQ(name_of("NVIDIA H100 80GB HBM3"), "h100");
  EXPECT_EQ(name_of("NVIDIA H200"), "h200");
  EXPECT_EQ(name_of("NVIDIA GeForce RTX 4090"), "rtx4090");
  EXPECT_EQ(name_of("NVIDIA A100-SXM4-80GB"), "a100");
  EXPECT_EQ(name_of("NVIDIA L40S"), "l40s");
  EXPECT_EQ(name_of("NVIDIA L4"), "none");
}

}  // namespace
}  // namespace tessera::cli

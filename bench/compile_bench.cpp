// Compile-speed benchmarks (CPU): how long the host takes for the pieces every compilation uses.
// Numbers are reported, never asserted.  Run: build/bench/tessera_bench
#include <benchmark/benchmark.h>

#include "tessera/frontend/frontend.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/serialize.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/plugin_host.h"
#include "tessera/support/install_paths.h"

namespace {

using namespace tessera;

const char* kRmsNorm = "nn.RMSNorm(2048)(torch.randn(1,32,2048))";
const char* kMlp =
    "import torch.nn.functional as F; x=torch.randn(1,128,1024); wg=torch.randn(1024,3072); "
    "wu=torch.randn(1024,3072); F.silu(torch.matmul(x,wg))*torch.matmul(x,wu)";

// Plugins are loaded once per benchmark run (as the CLI does once per process).
PluginHost& host() {
  static PluginHost* h = [] {
    auto* p = new PluginHost();
    if (!p->load_directory(builtin_plugin_directory())) std::abort();
    return p;
  }();
  return *h;
}

Graph import(const char* program) {
  auto fe = host().registry().make_frontend("torch_expr");
  auto g = fe->import(FrontendInput{program, "<-c>"}, FrontendOptions{});
  if (!g) std::abort();
  return std::move(*g);
}

void BM_Frontend(benchmark::State& state, const char* program) {
  auto fe = host().registry().make_frontend("torch_expr");
  for (auto _ : state) {
    auto g = fe->import(FrontendInput{program, "<-c>"}, FrontendOptions{});
    benchmark::DoNotOptimize(g);
  }
}
BENCHMARK_CAPTURE(BM_Frontend, rms_norm, kRmsNorm);
BENCHMARK_CAPTURE(BM_Frontend, gated_mlp, kMlp);

void BM_DefaultPipeline(benchmark::State& state) {
  auto path = find_data_file("pipelines/default.yaml");
  auto spec = load_pipeline_file(*path);
  auto devices = DeviceTable::load_default();
  RunnerOptions ro;
  ro.device = devices->find("h100");
  ro.stop_after = spec->last_stage();
  const Graph input = import(kMlp);
  for (auto _ : state) {
    Graph g = input;
    DiagnosticEngine diags;
    benchmark::DoNotOptimize(PipelineRunner(host().registry(), *spec, ro).run(g, diags));
  }
}
BENCHMARK(BM_DefaultPipeline);

void BM_PrintGraph(benchmark::State& state) {
  const Graph g = import(kMlp);
  for (auto _ : state) benchmark::DoNotOptimize(print_graph(g));
}
BENCHMARK(BM_PrintGraph);

void BM_JsonRoundTrip(benchmark::State& state) {
  const Graph g = import(kMlp);
  for (auto _ : state) benchmark::DoNotOptimize(graph_from_json_text(graph_to_json_text(g), "<bench>"));
}
BENCHMARK(BM_JsonRoundTrip);

void BM_SimplifyReshapeIndex(benchmark::State& state) {
  // The index a reshape (1, 32, 2048) -> (32, 2048) -> back produces.
  Expr a0 = Expr::var("a0"), a1 = Expr::var("a1");
  Expr flat = a0 * 2048 + a1;
  Expr e = (flat / 2048) * 2048 + flat % 2048;
  RangeMap ranges{{"a0", {0, 31}}, {"a1", {0, 2047}}};
  for (auto _ : state) benchmark::DoNotOptimize(simplify(e, ranges));
}
BENCHMARK(BM_SimplifyReshapeIndex);

}  // namespace

BENCHMARK_MAIN();

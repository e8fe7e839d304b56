// The static kernel report of every kernel of the benchmark suite's quick tier and of the op
// corpus, as one table: bench/kernel-report.md is this test's output, checked like a golden
// (TESSERA_UPDATE_GOLDENS=1 rewrites it). It is how a schedule change shows its effect on launch
// shapes, bytes and bounds across the suite in review, without a GPU. And no kernel of the suite
// may get the report's "fewer blocks than SMs" warning (more than 1 MB moved on fewer blocks than
// the device has SMs): large work is spread over the whole device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_suite.h"
#include "kernel_report_text.h"
#include "support/built_plugins.h"
#include "support/test_paths.h"
#include "support/program_corpus.h"
#include "tessera/pass/pipeline.h"
#include "tessera/target/kernel_report.h"

namespace tessera {
namespace {

constexpr const char* kTablePath = TESSERA_SOURCE_DIR "/bench/kernel-report.md";

std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string fixed(double v, int decimals) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(decimals) << v;
  return s.str();
}

struct MemoryBoundProgram {
  const char* name;
  const char* text;
};
const MemoryBoundProgram kMemoryBoundPrograms[] = {
    {"rmsnorm-32x4096-f32", "nn.RMSNorm(4096)(torch.randn(32,4096))"},
    {"rmsnorm-32x4096-bf16", "nn.RMSNorm(4096, dtype=torch.bfloat16)(torch.randn(32,4096, dtype=torch.bfloat16))"},
    {"rmsnorm-4096x4096-f32", "nn.RMSNorm(4096)(torch.randn(4096,4096))"},
    {"rmsnorm-4096x4096-bf16",
     "nn.RMSNorm(4096, dtype=torch.bfloat16)(torch.randn(4096,4096, dtype=torch.bfloat16))"},
    {"softmax-32x2048x2048-f32", "torch.softmax(torch.randn(32,2048,2048), dim=-1)"},
    {"softmax-32x2048x2048-bf16", "torch.softmax(torch.randn(32,2048,2048, dtype=torch.bfloat16), dim=-1)"},
    {"softmax-4x262144-f32", "torch.softmax(torch.randn(4,262144), dim=-1)"},
    {"softmax-4x262144-bf16", "torch.softmax(torch.randn(4,262144, dtype=torch.bfloat16), dim=-1)"},
    {"swiglu-product-128x14336-f32", "g=torch.randn(128,14336); u=torch.randn(128,14336); F.silu(g) * u"},
    {"swiglu-product-128x14336-bf16",
     "g=torch.randn(128,14336, dtype=torch.bfloat16); u=torch.randn(128,14336, dtype=torch.bfloat16); F.silu(g) * u"},
    {"rope-128x32x128-f32",
     "def rotate_half(x):\n    x1 = x[..., : x.shape[-1] // 2]\n    x2 = x[..., x.shape[-1] // 2 :]\n"
     "    return torch.cat((-x2, x1), dim=-1)\n"
     "q = torch.randn(1, 32, 128, 128); cos = torch.randn(128, 128); sin = torch.randn(128, 128)\n"
     "q * cos + rotate_half(q) * sin"},
    {"rope-128x32x128-bf16",
     "def rotate_half(x):\n    x1 = x[..., : x.shape[-1] // 2]\n    x2 = x[..., x.shape[-1] // 2 :]\n"
     "    return torch.cat((-x2, x1), dim=-1)\n"
     "q = torch.randn(1, 32, 128, 128, dtype=torch.bfloat16); cos = torch.randn(128, 128, dtype=torch.bfloat16); "
     "sin = torch.randn(128, 128, dtype=torch.bfloat16)\n"
     "q * cos + rotate_half(q) * sin"},
};

class KernelReportTableTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    auto spec = load_pipeline_file(test::default_pipeline_path());
    ASSERT_TRUE(spec) << spec.error().render();
    pipeline_ = std::move(*spec);
    device_ = h100();
    ASSERT_NE(device_, nullptr);
  }

  // The rows of one program, one per kernel; its warnings of fewer blocks than SMs go to `serial`.
  // With `totals`, a last row sums the program: its bytes, its minimum (every input read once,
  // every output written once) and its bound with kernels back to back.
  void add_rows(const std::string& program_name, const std::string& text, std::ostringstream& table,
                std::vector<std::string>& serial, bool totals = false, const DeviceDesc* device = nullptr) {
    if (device == nullptr) device = device_;
    Graph g = trace(text);
    ASSERT_FALSE(HasFailure()) << program_name;
    Status st = lower(g, pipeline_, Dialect::Kernel, device);
    ASSERT_TRUE(st) << program_name << ":\n" << st.error().render();
    auto reports = KernelReport::of_program(g);
    ASSERT_TRUE(reports) << program_name << ":\n" << reports.error().render();
    int64_t bytes = 0;
    double bound = 0;
    std::map<std::string, int64_t> minimum;  // buffer -> the most of it any kernel touches
    for (const KernelReport& r : *reports) {
      const KernelBound b = KernelBound::on(r, *device, 0);
      std::string warnings;
      for (const std::string& w : cli::kernel_report_warnings(r, *device)) {
        warnings += (warnings.empty() ? "" : "; ") + w;
        if (w.find("fewer than the") != std::string::npos) serial.push_back(program_name + " " + r.kernel + ": " + w);
      }
      table << "| " << program_name << " | " << r.kernel << " | " << grouped(r.blocks()) << " x "
            << r.threads_per_block() << " | " << b.blocks_per_sm << " | " << fixed(100.0 * b.first_wave_sms, 0)
            << "% | " << grouped(r.bytes) << " | " << grouped(r.min_bytes) << " | "
            << (r.min_bytes > 0 ? fixed(static_cast<double>(r.bytes) / static_cast<double>(r.min_bytes), 2) : "-")
            << " | " << grouped(static_cast<int64_t>(r.flops + r.tensor_flops)) << (r.flops_exact ? "" : " (at most)")
            << (r.tensor_flops > 0 ? " (tensor cores)" : "") << " | "
            << fixed(b.bound_us(), 2) << " " << (b.memory_bound() ? "memory" : "compute") << " | " << warnings
            << " |\n";
      bytes += r.bytes;
      bound += b.bound_us();
      for (const BufferTraffic& t : r.buffers)
        if (t.in_minimum) minimum[t.buffer] = std::max(minimum[t.buffer], t.touched_bytes());
    }
    if (!totals) return;
    int64_t min_bytes = 0;
    for (const auto& [buffer, b] : minimum) min_bytes += b;
    // The rate the program's minimum bytes move at when every kernel runs at its bound.
    const double tbps = bound > 0 ? static_cast<double>(min_bytes) / (bound * 1e-6) / 1e12 : 0;
    table << "| " << program_name << " | **all " << reports->size() << "** | | | | " << grouped(bytes) << " | "
          << grouped(min_bytes) << " | " << fixed(static_cast<double>(bytes) / static_cast<double>(min_bytes), 2)
          << " | | " << fixed(bound, 2) << " | minimum bytes at " << fixed(tbps, 2) << " TB/s |\n";
  }

  PipelineSpec pipeline_;
  const DeviceDesc* device_ = nullptr;
};

TEST_F(KernelReportTableTest, SuiteQuickTierAndCorpusMatchTheCommittedTable) {
  auto suite = cli::load_suite(TESSERA_SOURCE_DIR "/bench/suite.yaml");
  ASSERT_TRUE(suite) << suite.error().render();
  auto quick = cli::select_entries(*suite, "quick", {});
  ASSERT_TRUE(quick) << quick.error().render();

  const DeviceDesc& d = *device_;
  std::ostringstream table;
  table << "# Static kernel report: the suite's quick tier and the op corpus\n\n"
        << "Every kernel of `bench/suite.yaml`'s quick tier and of the op corpus "
           "(`tests/support/program_corpus.h`), compiled with `pipelines/default.yaml`'s heuristic schedules "
           "for the "
        << d.name << " (" << d.arch << ", " << d.sm_count << " SMs, " << fixed(d.dram_gbps, 0) << " GB/s DRAM, "
        << fixed(d.fp32_tflops, 1) << " TFLOP/s FP32, " << fixed(d.tensor_tflops_bf16, 0)
        << " TFLOP/s BF16 tensor cores), with the figures of the static kernel report (`tessera compile --emit report`, "
           "docs/cli.md): analytic, from the Kernel IR, never measured. Blocks per SM leave out the register "
           "limit (the kernels are not compiled here). The bound is the larger of DRAM time and compute time "
           "(FP32 FLOPs at the FP32 peak plus tensor-core FLOPs, marked, at the dense BF16 peak).\n\n"
        << "Written by `KernelReportTableTest` (`tests/e2e/kernel_report_table_test.cpp`), which fails when "
           "this file differs from what the compiler now produces; regenerate it with "
           "`TESSERA_UPDATE_GOLDENS=1 build/bin/tessera_tests --gtest_filter='KernelReportTableTest.*'` "
           "and review the diff like code.\n\n";
  const char* header =
      "| program | kernel | blocks x threads | blocks/SM | SMs busy | DRAM bytes | minimum | x min | FLOPs | bound (us) "
      "| warnings |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<std::string> suite_serial, corpus_serial;
  table << "## The suite's quick tier\n\n" << header;
  for (const cli::SuiteEntry* e : *quick) {
    add_rows(e->id, e->program, table, suite_serial);
    if (HasFailure()) return;
  }
  // The bf16 entries again for the sm_90a variant: their matmuls on warpgroup products.
  const DeviceDesc* sm90a = devices_->find_by_arch("sm_90a");
  ASSERT_NE(sm90a, nullptr);
  table << "\n## The quick tier's bf16 entries on sm_90a\n\nThe same bf16 entries compiled for the " << sm90a->name
        << "'s sm_90a variant (`--arch sm_90a`): their matmuls run on warpgroup products (wgmma, TMA-fed swizzled "
           "slabs) where the rows above use mma.sync; same peaks.\n\n"
        << header;
  for (const cli::SuiteEntry* e : *quick) {
    if (e->dtype != "bf16") continue;
    std::vector<std::string> sm90a_serial;
    add_rows(e->id, e->program, table, sm90a_serial, false, sm90a);
    if (HasFailure()) return;
    suite_serial.insert(suite_serial.end(), sm90a_serial.begin(), sm90a_serial.end());
  }
  table << "\n## Memory-bound kernels of a layer\n\nRMSNorm, softmax, the SwiGLU product and RoPE at the "
           "shapes docs/passes.md discusses, in f32 and bf16, each with a last row for the whole program.\n\n"
        << header;
  for (const MemoryBoundProgram& p : kMemoryBoundPrograms) {
    std::vector<std::string> ignored;
    add_rows(p.name, p.text, table, ignored, /*totals=*/true);
    if (HasFailure()) return;
  }
  table << "\n## The op corpus\n\n" << header;
  for (const test::CorpusProgram& p : test::differential_corpus()) {
    add_rows(p.name, p.text, table, corpus_serial);
    if (HasFailure()) return;
  }

  std::string serial;
  for (const std::string& s : suite_serial) serial += "\n  " + s;
  EXPECT_TRUE(suite_serial.empty()) << "suite kernels moving more than 1 MB on fewer blocks than SMs:" << serial;

  const std::string produced = table.str();
  if (const char* update = std::getenv("TESSERA_UPDATE_GOLDENS"); update != nullptr && std::string(update) == "1") {
    std::ofstream(kTablePath) << produced;
    return;
  }
  std::ifstream in(kTablePath);
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_EQ(committed.str(), produced)
      << "bench/kernel-report.md differs from the schedules the compiler now produces; regenerate it with "
         "TESSERA_UPDATE_GOLDENS=1 build/bin/tessera_tests --gtest_filter='KernelReportTableTest.*' and review the diff";
}

}  // namespace
}  // namespace tessera

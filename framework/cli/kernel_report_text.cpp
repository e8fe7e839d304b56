// The static kernel report's text (see kernel_report_text.h). Tests: tests/unit/kernel_report_test.cpp
// (the warnings, side by side), tests/e2e/cli_test.cpp and the goldens under tests/golden/kernel_report.
#include "kernel_report_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace tessera::cli {

// The serial-thread warning: a thread with at least this many FLOPs and this many times the
// average of the kernel's threads.
constexpr double kSerialThreadFlops = 4096;
constexpr double kSerialThreadRatio = 8;

namespace {


// 1234567 -> "1,234,567".
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string grouped(double v) { return grouped(static_cast<int64_t>(std::llround(v))); }

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string dims(const std::vector<int64_t>& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + ")";
}

std::string plural(int64_t n, const std::string& word) {
  return grouped(n) + " " + word + (n == 1 ? "" : "s");
}

// Three significant digits, at most `max_decimals` after the point: "159", "80.1", "0.00573".
std::string significant(double v, int max_decimals) {
  const int digits = v > 0 ? static_cast<int>(std::floor(std::log10(v))) : 0;
  return fixed(v, std::clamp(2 - digits, 0, max_decimals));
}

// Three significant digits in ns, us or ms: "159 ns", "80.1 us", "1.20 ms".
std::string micros(double us) {
  const char* unit = "us";
  double v = us;
  if (us < 1) {
    unit = "ns";
    v = us * 1e3;
  } else if (us >= 1e3) {
    unit = "ms";
    v = us / 1e3;
  }
  return significant(v, 3) + " " + unit;
}

std::string limit(int v) { return v > 0 ? std::to_string(v) : std::string("-"); }

ReportBlock kernel_block(const KernelReport& r, int nodes, const DeviceDesc& d, const KernelRegisters& registers,
                         const KernelTimes* measured) {
  ReportBlock lines;
  auto reg = registers.find(r.kernel);
  const int regs = reg == registers.end() ? 0 : reg->second;
  const KernelBound b = KernelBound::on(r, d, regs);
  lines.push_back(r.kernel + " -> " + r.node + (nodes > 1 ? "  (" + std::to_string(nodes) + " nodes)" : ""));
  lines.push_back("  launch    " + plural(r.blocks(), "block") + " x " + plural(r.threads_per_block(), "thread") +
                  "  grid " + dims(r.grid) + " block " + dims(r.block));
  std::string per_sm = "  per SM    ";
  per_sm += b.blocks_per_sm > 0 ? plural(b.blocks_per_sm, "block") : std::string("a block does not fit");
  per_sm += " (registers " + (regs > 0 ? limit(b.by_registers) + " at " + std::to_string(regs) + "/thread"
                                        : std::string("- (not compiled)"));
  per_sm += "; smem " + limit(b.by_smem) + " at " + grouped(b.smem_per_block) + " B";
  per_sm += "; threads " + limit(b.by_threads) + "; limit " + limit(b.by_block_limit) + ")";
  lines.push_back(per_sm);
  lines.push_back("  1st wave  " + grouped(std::min<int64_t>(r.blocks(), d.sm_count)) + " of " +
                  std::to_string(d.sm_count) + " SMs busy (" + fixed(100.0 * b.first_wave_sms, 1) + "%)");
  const double ratio = r.min_bytes > 0 ? static_cast<double>(r.bytes) / static_cast<double>(r.min_bytes) : 0;
  lines.push_back("  DRAM      " + grouped(r.bytes) + " B first touch, minimum " + grouped(r.min_bytes) + " B" +
                  (r.min_bytes > 0 ? " (" + fixed(ratio, 2) + "x)" : std::string(" (intermediates only)")));
  std::string buffers = "  buffers   ";
  bool first = true;
  for (const BufferTraffic& t : r.buffers) {
    if (!first) buffers += ", ";
    first = false;
    buffers += (t.written ? "writes " : "") + t.buffer + " " + grouped(t.touched_bytes());
    if (t.touched < t.elements) buffers += " of " + grouped(t.elements * dtype_bytes(t.dtype));
    buffers += " B";
    if (!t.in_minimum) buffers += " (intermediate)";
  }
  lines.push_back(buffers);
  std::string flops = "  FLOPs     " + std::string(r.flops_exact ? "" : "at most ") + grouped(r.flops);
  if (!r.flops_by_kind.empty()) {
    flops += " (";
    for (size_t i = 0; i < r.flops_by_kind.size(); ++i)
      flops += (i ? ", " : "") + r.flops_by_kind[i].kind + " " + grouped(r.flops_by_kind[i].count);
    flops += ")";
  }
  lines.push_back(flops);
  if (r.tensor_flops > 0) lines.push_back("  tensor    " + grouped(r.tensor_flops) + " FLOPs on the tensor cores (mma)");
  lines.push_back("  bound     " + micros(b.bound_us()) + " " + (b.memory_bound() ? "memory" : "compute") + " (DRAM " +
                  micros(b.dram_us) + (r.tensor_flops > 0 ? ", FP32 + tensor " : ", FP32 ") + micros(b.compute_us) + ")");
  if (measured)
    if (auto t = measured->find(r.kernel); t != measured->end())
      lines.push_back("  measured  " + micros(t->second) + " median" +
                      (t->second > 0 ? " (the bound is " + significant(100.0 * b.bound_us() / t->second, 5) + "% of it)"
                                     : std::string()));
  for (const std::string& w : kernel_report_warnings(r, d)) lines.push_back("  warning: " + w);
  return lines;
}

}  // namespace

std::vector<std::string> kernel_report_warnings(const KernelReport& r, const DeviceDesc& d) {
  std::vector<std::string> out;
  if (r.bytes > kLargeKernelBytes && r.blocks() < d.sm_count)
    out.push_back("moves " + grouped(r.bytes) + " B on " + plural(r.blocks(), "block") + ", fewer than the " +
                  std::to_string(d.sm_count) + " SMs");
  if (r.bytes > kLargeKernelBytes && r.bytes > 2 * r.min_bytes)
    out.push_back("moves " + grouped(r.bytes) + " B, more than twice its minimum " + grouped(r.min_bytes) + " B");
  // One thread doing the block's work (a loop left serial over a whole row): its latency, not the
  // roofline, sets the time. Found on a GPU: a decode RMSNorm's epilogue on thread 0 took 35 us
  // against a bound of 0.01 us.
  const double threads = static_cast<double>(r.blocks() * r.threads_per_block());
  const double average = threads > 0 ? r.flops / threads : 0;
  if (r.busiest_thread_flops >= kSerialThreadFlops && r.busiest_thread_flops > kSerialThreadRatio * average)
    out.push_back("its busiest thread runs " + grouped(static_cast<int64_t>(r.busiest_thread_flops)) + " FLOPs, " +
                  significant(r.busiest_thread_flops / std::max(average, 1.0), 3) + "x the average of its " +
                  grouped(static_cast<int64_t>(threads)) + " threads: the work is not spread over the block");
  return out;
}

std::vector<ReportBlock> kernel_report_blocks(const std::vector<KernelReport>& reports, const DeviceDesc& d,
                                              const KernelRegisters& registers, const KernelTimes* measured) {
  std::vector<ReportBlock> blocks;
  blocks.push_back({"static kernel report: " + d.name + " (" + d.arch + ", " + std::to_string(d.sm_count) + " SMs, " +
                    fixed(d.dram_gbps, 0) + " GB/s DRAM, " + fixed(d.fp32_tflops, 1) + " TFLOP/s FP32)"});
  std::map<std::string, int> nodes;
  for (const KernelReport& r : reports) ++nodes[r.kernel];
  std::set<std::string> shown;
  int64_t bytes = 0;
  double flops = 0, bound = 0;
  bool exact = true;
  std::map<std::string, int64_t> minimum;  // buffer -> the most of it any kernel touches
  for (const KernelReport& r : reports) {
    const auto reg = registers.find(r.kernel);
    const KernelBound b = KernelBound::on(r, d, reg == registers.end() ? 0 : reg->second);
    bytes += r.bytes;
    flops += r.flops + r.tensor_flops;
    bound += b.bound_us();
    exact = exact && r.flops_exact;
    for (const BufferTraffic& t : r.buffers)
      if (t.in_minimum) minimum[t.buffer] = std::max(minimum[t.buffer], t.touched_bytes());
    if (shown.insert(r.kernel).second) blocks.push_back(kernel_block(r, nodes.at(r.kernel), d, registers, measured));
  }
  int64_t min_bytes = 0;
  for (const auto& [buffer, b] : minimum) min_bytes += b;
  ReportBlock total;
  total.push_back("total     " + plural(static_cast<int64_t>(reports.size()), "kernel") + ": " + grouped(bytes) +
                  " B first touch, program minimum " + grouped(min_bytes) + " B" +
                  (min_bytes > 0 ? " (" + fixed(static_cast<double>(bytes) / static_cast<double>(min_bytes), 2) + "x)"
                                 : std::string()));
  total.push_back("          " + std::string(exact ? "" : "at most ") + grouped(flops) + " FLOPs, bound " + micros(bound) +
                  " (kernels back to back)");
  blocks.push_back(std::move(total));
  return blocks;
}

std::string kernel_report_text(const std::vector<KernelReport>& reports, const DeviceDesc& d,
                               const KernelRegisters& registers) {
  std::string out;
  for (const ReportBlock& block : kernel_report_blocks(reports, d, registers))
    for (const std::string& line : block) out += line + "\n";
  return out;
}

std::string side_by_side(const std::vector<ReportBlock>& left, const std::vector<ReportBlock>& right) {
  // Kernel blocks pair by position; the totals (last blocks) always pair with each other.
  std::vector<std::pair<const ReportBlock*, const ReportBlock*>> rows;
  const size_t body = std::max(left.size(), right.size()) - 1;
  for (size_t i = 0; i < body; ++i)
    rows.emplace_back(i + 1 < left.size() ? &left[i] : nullptr, i + 1 < right.size() ? &right[i] : nullptr);
  rows.emplace_back(&left.back(), &right.back());
  size_t width = 0;
  for (const ReportBlock& b : left)
    for (const std::string& line : b) width = std::max(width, line.size());
  std::string out;
  for (const auto& [l, r] : rows) {
    const size_t n = std::max(l ? l->size() : 0, r ? r->size() : 0);
    for (size_t i = 0; i < n; ++i) {
      std::string line = l && i < l->size() ? (*l)[i] : std::string();
      if (r && i < r->size()) line += std::string(width - line.size() + 2, ' ') + "| " + (*r)[i];
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace tessera::cli

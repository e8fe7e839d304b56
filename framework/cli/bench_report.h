// The report `tessera bench` writes: Tessera's measurement of every suite entry joined with the
// PyTorch baseline (bench/pytorch_baseline.py's JSON), as report.json and report.md. A pure
// function of its inputs (no clock, no GPU, no file access), so it is tested with synthetic rows.
//
// Speedup over a baseline = baseline µs / Tessera µs (> 1: Tessera is faster). Geomeans are taken
// per family and over all entries that have both times; an entry is a win over a baseline when its
// speedup exceeds 1. Achieved GB/s and TFLOP/s divide the Kernel IR's bytes and the entry's FLOPs
// (the suite's `flops:`, else the Kernel IR's count) by Tessera's time; the percentages compare them
// with the device's peaks from data/devices.yaml (DRAM bandwidth; FP32 for f32 entries, dense BF16
// tensor-core throughput for bf16 ones).
// Tests: tests/unit/bench_report_test.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/support/status.h"
#include "tessera/target/device.h"

namespace tessera::cli {

// One suite entry as Tessera ran it.
struct TesseraResult {
  std::string id, family, model, phase, dtype;
  int64_t seq = 0, kv = 0;
  bool ran = false;           // compiled, ran on the target and checked; its IO file is written
  bool timed = false;         // tessera_us holds its time (not on a target without a clock: sim)
  std::string error;          // what went wrong, first line ("" when nothing did)
  double tessera_us = 0;      // the whole program's median (CUDA graph replay, L2 flushed)
  std::string graphs_unavailable;  // why it was timed as plain launches instead ("" = as a CUDA graph)
  double compile_s = 0;       // frontend + pipeline + NVRTC (kernels from the cache count as fetched)
  // Host-side seconds of the other phases: generating the parameters, the reference check, the run
  // on the target (load, upload, the checked run and the timing), writing the IO file.
  double params_s = 0, reference_s = 0, run_s = 0, save_io_s = 0;
  int kernels = 0;
  int kernels_from_cache = 0;
  double bytes = 0;           // Kernel IR: the kernels' input and output buffers, summed
  double flops = 0;
  std::string flops_source;   // "suite" or "kernel IR"
  std::string check;          // reference check: "pass", "fail" or "skipped"
  std::string check_detail;   // the worst error, or why the check was skipped
};

// One entry of the PyTorch baseline; absent numbers are nullopt.
struct BaselineResult {
  std::optional<double> eager_us, compiled_us, eager_plain_us, compiled_plain_us, compile_s;
  std::string check = "skipped";  // pass | fail | skipped: PyTorch's outputs against Tessera's
  std::optional<double> max_abs, max_rel;
  std::string detail;
  std::vector<std::string> errors;  // what PyTorch raised (e.g. out of memory), when it did
};

struct Baseline {
  bool available = false;
  std::string reason;  // why not, when !available
  std::string device, torch, cuda, mode;
  std::map<std::string, BaselineResult> entries;  // by entry id
  std::vector<std::string> notes;                 // e.g. a batch of entries it could not run
};

// Parses the baseline script's JSON ({device, torch_version (or torch), cuda_version (or cuda),
// l2_bytes, entries: [{id, eager_us, compiled_us, eager_plain_us, compiled_plain_us, compile_s,
// check: {status, max_abs, max_rel, detail}, errors: [...]}]}); numbers may be null. A malformed
// document is an error naming the field.
Expected<Baseline> parse_baseline_json(const std::string& text, const std::string& mode);

struct ReportContext {
  std::string title_device;   // the GPU as the driver names it
  DeviceDesc peaks;           // the device table's description the percentages use
  std::string date;           // YYYY-MM-DD
  std::string command;        // the command line that made the report
  std::string suite_file, tier;
  std::string tessera_version;
  std::string timing;         // how Tessera's times were taken, one line
  std::string plot_file;      // the plot's file name beside report.md, "" when there is none
  std::string plot_note;      // why there is no plot
  std::vector<std::string> notes;  // anything else the reader must know, one line each
};

struct ReportFiles {
  std::string json;
  std::string markdown;
};

ReportFiles write_bench_report(const ReportContext& context, const std::vector<TesseraResult>& rows,
                               const Baseline& baseline);

}  // namespace tessera::cli

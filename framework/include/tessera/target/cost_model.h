// CostModel: the analytic latency of a Kernel IR kernel on a device description, the measurer the
// tuner uses without a GPU. Built on the static kernel report (first-touch bytes, FLOPs by kind,
// occupancy limits) and the warp-address enumeration (sectors per global access, shared-memory
// wavefronts). docs/cost-model.md gives every term and formula.
//
//   latency = launch_overhead + sum over waves of  max(terms of the wave)
//
// Each term is a linear combination of the coefficients in data/cost_model.yaml with inputs that
// the kernel and the device fix (KernelFeatures), so calibration (cost_model_calibration.h) fits
// the coefficients by least squares. Priors (l2_usable_fraction, the register estimate, the
// unroll assumed for unmarked loops) shape the inputs and are not fitted.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/support/status.h"
#include "tessera/target/device.h"

namespace tessera {

// The linear coefficients, each a key of data/cost_model.yaml.
enum class CostCoefficient : uint8_t {
  LaunchOverheadUs,    // per kernel launch
  DramEfficiency,      // fraction of peak DRAM bandwidth a saturated kernel reaches
  L2BandwidthVsDram,   // L2 bandwidth as a multiple of DRAM bandwidth
  DramLatencyNs,       // a DRAM round trip
  L2LatencyNs,         // an L2 hit's round trip
  SmemEfficiency,      // fraction of one shared-memory wavefront per SM per cycle reached
  Fp32Efficiency,      // fraction of peak FP32 (SIMT) throughput reached
  SfuCost,             // FP32 issue slots one SFU-class operation (exp, rsqrt, ...) costs
  TensorEfficiency,    // fraction of peak tensor-core throughput (mma.sync)
  IssueLatencyCycles,  // cycles between a warp's dependent instructions
};
inline constexpr size_t kCostCoefficients = 10;

// The throughput-bound terms of one wave; the largest is the wave's time.
enum class CostTerm : uint8_t {
  DramBandwidth,  // DRAM bytes / (peak x efficiency)
  L2Bandwidth,    // requested sector bytes / L2 bandwidth
  MemoryLatency,  // round trips a block's warps need for its bytes, with what they keep in flight
  SharedMemory,   // bank wavefronts of the busiest SM
  Fp32,           // SIMT FLOPs of the busiest SM
  Sfu,            // SFU-class operations of the busiest SM
  TensorCore,     // tensor-core FLOPs of the busiest SM
  IssueLatency,   // one warp's chain of dependent instructions
};
inline constexpr size_t kCostTerms = 8;

std::string_view coefficient_key(CostCoefficient c);  // "dram_efficiency"
std::string_view term_name(CostTerm t);                // "dram_bandwidth"
// The term a coefficient scales; nullopt for the launch overhead (outside the max).
std::optional<CostTerm> term_of(CostCoefficient c);

// Priors that shape the features: stated, documented, not fitted.
struct CostPriors {
  double l2_usable_fraction = 0.75;        // of l2_bytes, for re-read data to stay resident
  double register_base = 24;               // registers a thread needs besides its register arrays
  double registers_per_array_element = 1;  // per 32-bit element of a register array
  double unroll_when_unmarked = 2;         // iterations in flight of a loop without an unroll mark
};

// What one kernel on one device presents to the model, free of the linear coefficients.
struct KernelFeatures {
  std::string node, kernel;
  int64_t blocks = 0, threads_per_block = 0, warps_per_block = 0;
  int registers = 0;
  bool registers_estimated = false;  // from the IR (no compiler count given)
  int blocks_per_sm = 0;
  double first_touch_bytes = 0;  // KernelReport::bytes
  double requested_bytes = 0;    // global sectors x 32 B over every warp access (L2 traffic)
  double useful_bytes = 0;       // the distinct bytes those accesses move
  double dram_bytes = 0;         // first touch plus re-reads that miss L2
  double reused_footprint = 0;   // first-touch bytes of the buffers read more than once
  double smem_wavefronts = 0;    // over the whole grid
  double smem_ideal_wavefronts = 0;  // the same accesses without bank conflicts
  double simt_flops = 0, sfu_flops = 0, tensor_flops = 0;
  double bytes_in_flight_per_warp = 0;
  // Thread-block clusters: the kernel's ClusterSyncs. Each exchange waits for every block of the
  // cluster and then reads the others' shared memory: two round trips at L2 latency, which every
  // block pays whatever it keeps in flight (memory_latency, docs/cost-model.md).
  int64_t cluster_syncs = 0;
  // One group of identical waves: `count` waves of `blocks` blocks each, and the input each
  // coefficient multiplies in them (term = sum of coefficient x input, in microseconds).
  struct Wave {
    double count = 0;
    int64_t blocks = 0;
    std::array<double, kCostCoefficients> inputs{};
  };
  std::vector<Wave> waves;  // the full waves, then the last partial wave
};

struct KernelEstimate {
  double latency_us = 0;
  double launch_us = 0;
  std::array<double, kCostTerms> term_us{};  // each term summed over the waves (count-weighted)
  std::array<double, kCostTerms> bound_us{};  // the time of the waves each term bounds
  CostTerm bound = CostTerm::DramBandwidth;   // the term that bounds the most time
  KernelFeatures features;
};

class CostModel {
 public:
  // data/cost_model.yaml (find_data_file), the file `load` reads.
  static Expected<CostModel> load_default();
  static Expected<CostModel> load(const std::string& path);
  static Expected<CostModel> parse(const std::string& yaml_text, const std::string& file);
  // The model in the file format, byte-identical for the same model; calibration() becomes the
  // file's `calibration:` line.
  std::string to_yaml() const;

  Expected<KernelFeatures> features(const Graph& g, const Node& kernel, const DeviceDesc& d, int registers = 0) const;
  KernelEstimate estimate(const KernelFeatures& f) const;
  // The latency of one KernelOp node of `g`; `registers` per thread when the compiler's count is
  // known (0: estimated from the IR). An error when the node is not a kernel or does not fit.
  Expected<KernelEstimate> estimate(const Graph& g, const Node& kernel, const DeviceDesc& d, int registers = 0) const;

  double coefficient(CostCoefficient c) const { return coefficients_[static_cast<size_t>(c)]; }
  void set_coefficient(CostCoefficient c, double v) { coefficients_[static_cast<size_t>(c)] = v; }
  // The value the term multiplies its input by (an efficiency's inverse, a latency itself).
  double linear_value(CostCoefficient c) const;
  void set_linear_value(CostCoefficient c, double theta);
  const CostPriors& priors() const { return priors_; }
  const std::string& calibration() const { return calibration_; }
  void set_calibration(std::string note) { calibration_ = std::move(note); }

 private:
  std::array<double, kCostCoefficients> coefficients_{};
  CostPriors priors_;
  std::string calibration_ = "prior";
};

}  // namespace tessera

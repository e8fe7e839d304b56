// The analytic cost model (see cost_model.h and docs/cost-model.md): a kernel's features from the
// static kernel report and the warp-address enumeration, and its latency from the coefficients.
// The coefficient file: cost_model_file.cpp; calibration: cost_model_calibration.cpp.
// Tests: tests/unit/cost_model_test.cpp.
#include "tessera/target/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/op.h"
#include "tessera/ir/stmt.h"
#include "tessera/target/kernel_report.h"
#include "tessera/target/warp_access.h"

namespace tessera {

std::string_view coefficient_key(CostCoefficient c) {
  switch (c) {
    case CostCoefficient::LaunchOverheadUs: return "launch_overhead_us";
    case CostCoefficient::DramEfficiency: return "dram_efficiency";
    case CostCoefficient::L2BandwidthVsDram: return "l2_bandwidth_vs_dram";
    case CostCoefficient::DramLatencyNs: return "dram_latency_ns";
    case CostCoefficient::L2LatencyNs: return "l2_latency_ns";
    case CostCoefficient::SmemEfficiency: return "smem_efficiency";
    case CostCoefficient::Fp32Efficiency: return "fp32_efficiency";
    case CostCoefficient::SfuCost: return "sfu_cost";
    case CostCoefficient::TensorEfficiency: return "tensor_efficiency";
    case CostCoefficient::IssueLatencyCycles: return "issue_latency_cycles";
  }
  return "";
}

std::string_view term_name(CostTerm t) {
  switch (t) {
    case CostTerm::DramBandwidth: return "dram_bandwidth";
    case CostTerm::L2Bandwidth: return "l2_bandwidth";
    case CostTerm::MemoryLatency: return "memory_latency";
    case CostTerm::SharedMemory: return "shared_memory";
    case CostTerm::Fp32: return "fp32";
    case CostTerm::Sfu: return "sfu";
    case CostTerm::TensorCore: return "tensor_core";
    case CostTerm::IssueLatency: return "issue_latency";
  }
  return "";
}

std::optional<CostTerm> term_of(CostCoefficient c) {
  switch (c) {
    case CostCoefficient::LaunchOverheadUs: return std::nullopt;
    case CostCoefficient::DramEfficiency: return CostTerm::DramBandwidth;
    case CostCoefficient::L2BandwidthVsDram: return CostTerm::L2Bandwidth;
    case CostCoefficient::DramLatencyNs:
    case CostCoefficient::L2LatencyNs: return CostTerm::MemoryLatency;
    case CostCoefficient::SmemEfficiency: return CostTerm::SharedMemory;
    case CostCoefficient::Fp32Efficiency: return CostTerm::Fp32;
    case CostCoefficient::SfuCost: return CostTerm::Sfu;
    case CostCoefficient::TensorEfficiency: return CostTerm::TensorCore;
    case CostCoefficient::IssueLatencyCycles: return CostTerm::IssueLatency;
  }
  return std::nullopt;
}

namespace {

// Whether a coefficient enters its term as itself or as its inverse (an efficiency, a bandwidth
// multiple: the time divides by it).
bool enters_inverted(CostCoefficient c) {
  switch (c) {
    case CostCoefficient::DramEfficiency:
    case CostCoefficient::L2BandwidthVsDram:
    case CostCoefficient::SmemEfficiency:
    case CostCoefficient::Fp32Efficiency:
    case CostCoefficient::TensorEfficiency: return true;
    case CostCoefficient::LaunchOverheadUs:
    case CostCoefficient::DramLatencyNs:
    case CostCoefficient::L2LatencyNs:
    case CostCoefficient::SfuCost:
    case CostCoefficient::IssueLatencyCycles: return false;
  }
  return false;
}

// The execution unit an operation of the report's FLOP table runs on.
enum class ExecutionUnit : uint8_t { Fp32, Sfu };

ExecutionUnit unit_of(ElementwiseFn fn) {
  switch (fn) {
    // Transcendentals and divisions go through the SFU (MUFU: ex2, lg2, rsq, rcp, sin, cos).
    case ElementwiseFn::Exp:
    case ElementwiseFn::Log:
    case ElementwiseFn::Sqrt:
    case ElementwiseFn::Rsqrt:
    case ElementwiseFn::Tanh:
    case ElementwiseFn::Sigmoid:
    case ElementwiseFn::Reciprocal:
    case ElementwiseFn::Erf:
    case ElementwiseFn::Silu:
    case ElementwiseFn::Sin:
    case ElementwiseFn::Cos:
    case ElementwiseFn::Div:
    case ElementwiseFn::Pow: return ExecutionUnit::Sfu;
    case ElementwiseFn::Identity:
    case ElementwiseFn::Cast:
    case ElementwiseFn::Neg:
    case ElementwiseFn::Abs:
    case ElementwiseFn::Relu:
    case ElementwiseFn::Square:
    case ElementwiseFn::Floor:
    case ElementwiseFn::LogicalNot:
    case ElementwiseFn::Add:
    case ElementwiseFn::Sub:
    case ElementwiseFn::Mul:
    case ElementwiseFn::FloorDivide:
    case ElementwiseFn::Remainder:
    case ElementwiseFn::Maximum:
    case ElementwiseFn::Minimum:
    case ElementwiseFn::Lt:
    case ElementwiseFn::Le:
    case ElementwiseFn::Eq:
    case ElementwiseFn::Ne:
    case ElementwiseFn::Gt:
    case ElementwiseFn::Ge:
    case ElementwiseFn::LogicalAnd:
    case ElementwiseFn::LogicalOr:
    case ElementwiseFn::Where: return ExecutionUnit::Fp32;
  }
  return ExecutionUnit::Fp32;
}

// Register-array elements a thread holds (32-bit words): Init of an array type, at any depth, and
// tensor-core fragments (two 16-bit elements a register, as ldmatrix and mma take them).
class RegisterArrayCounter final : public StmtVisitor {
 public:
  double words = 0;
  void visit_Init(const Init& s) override {
    if (s.type.is_array())
      words += static_cast<double>(s.type.array_elements() * s.type.lanes) * std::max(dtype_bytes(s.type.dtype), 4) / 4;
  }
  void visit_Fragment(const Fragment& s) override {
    words += static_cast<double>(s.type.array_elements() * dtype_bytes(s.type.dtype)) / 4;
  }
};

// The SM clock in MHz: the device's, else what its FP32 peak implies with 128 lanes per SM.
double clock_mhz(const DeviceDesc& d) {
  if (d.clock_mhz > 0) return d.clock_mhz;
  return d.sm_count > 0 ? d.fp32_tflops * 1e6 / (d.sm_count * 256.0) : 1000;
}

}  // namespace

double CostModel::linear_value(CostCoefficient c) const {
  const double v = coefficient(c);
  return enters_inverted(c) ? 1 / v : v;
}

void CostModel::set_linear_value(CostCoefficient c, double theta) {
  set_coefficient(c, enters_inverted(c) ? 1 / theta : theta);
}

Expected<KernelFeatures> CostModel::features(const Graph& g, const Node& n, const DeviceDesc& d, int registers) const {
  TESSERA_ASSIGN_OR_RETURN(KernelReport report, KernelReport::of(g, n));
  const auto* k = n.op_as<KernelOp>();
  TESSERA_ASSIGN_OR_RETURN(WarpAccessMap warps, enumerate_warp_accesses(g, n, std::max(d.warp_size, 1)));
  constexpr int64_t kSectorBytes = 32;
  KernelFeatures f;
  f.node = report.node;
  f.kernel = report.kernel;
  f.blocks = report.blocks();
  f.threads_per_block = report.threads_per_block();
  f.warps_per_block = warps.warps_per_block;

  // Registers: the compiler's count, else the documented estimate from the IR.
  if (registers > 0) {
    f.registers = registers;
  } else {
    RegisterArrayCounter arrays;
    arrays.visit(k->body);
    f.registers = static_cast<int>(
        std::min(255.0, std::ceil(priors_.register_base + priors_.registers_per_array_element * arrays.words)));
    f.registers_estimated = true;
  }
  for (const Stmt& s : k->body) f.cluster_syncs += s.is<ClusterSync>();  // top level (the verifier's rule)
  const KernelBound bound = KernelBound::on(report, d, f.registers);
  f.blocks_per_sm = bound.blocks_per_sm;
  if (f.blocks_per_sm <= 0)
    return make_error("cost model: kernel '" + report.kernel + "' (node '" + report.node + "') does not fit on an SM of " +
                      d.name + " (" + std::to_string(f.threads_per_block) + " threads, " +
                      std::to_string(bound.smem_per_block) + " B of shared memory, " + std::to_string(f.registers) +
                      " registers per thread)");

  // Global traffic per buffer: sectors requested over the grid against the first touch.
  const double blocks = static_cast<double>(f.blocks);
  std::map<std::string, double> requested;  // by buffer
  std::map<int, double> loop_bytes;         // warp 0's sector bytes per iteration of each loop (-1: none)
  for (const WarpAccess& a : warps.accesses) {
    if (a.space == MemorySpace::Shared) {
      f.smem_wavefronts += static_cast<double>(bank_wavefronts(a)) * a.executions * blocks;
      const double ideal = std::ceil(static_cast<double>(a.active_lanes() * a.width_bytes) / 128.0);
      f.smem_ideal_wavefronts += std::max(ideal, 1.0) * a.executions * blocks;
      continue;
    }
    const double sectors = static_cast<double>(sectors_touched(a, kSectorBytes));
    requested[a.buffer] += sectors * kSectorBytes * a.executions * blocks;
    f.useful_bytes += static_cast<double>(unique_bytes(a)) * a.executions * blocks;
    if (a.warp == 0) loop_bytes[a.loop] += sectors * kSectorBytes;
  }
  f.first_touch_bytes = static_cast<double>(report.bytes);
  double rereads = 0;
  for (const BufferTraffic& b : report.buffers) {
    const double first = static_cast<double>(b.touched_bytes());
    auto it = requested.find(b.buffer);
    const double asked = it == requested.end() ? first : std::max(it->second, first);
    f.requested_bytes += asked;
    if (asked > first) {
      rereads += asked - first;
      f.reused_footprint += first;
    }
  }
  // Re-reads hit L2 while the re-read buffers fit in its usable part; beyond it, the share that
  // does not fit comes from DRAM again.
  const double usable_l2 = priors_.l2_usable_fraction * static_cast<double>(d.l2_bytes);
  const double miss = f.reused_footprint <= usable_l2 ? 0 : 1 - usable_l2 / f.reused_footprint;
  f.dram_bytes = f.first_touch_bytes + miss * rereads;

  // Bytes a warp keeps in flight: the loads and stores of one iteration of its busiest loop, times
  // the iterations the loop's unrolling lets it issue together.
  for (const auto& [loop, bytes] : loop_bytes) {
    double unroll = 1;
    if (loop >= 0) {
      const int64_t mark = warps.loops[static_cast<size_t>(loop)].unroll;
      unroll = mark > 0 ? static_cast<double>(mark) : priors_.unroll_when_unmarked;
    }
    f.bytes_in_flight_per_warp = std::max(f.bytes_in_flight_per_warp, bytes * unroll);
  }
  f.bytes_in_flight_per_warp = std::max<double>(f.bytes_in_flight_per_warp, kSectorBytes);

  f.tensor_flops = report.tensor_flops;
  for (const FlopCount& c : report.flops_by_kind) {
    Expected<ElementwiseFn> fn = parse_elementwise_fn(c.kind);
    const ExecutionUnit unit = fn ? unit_of(*fn) : ExecutionUnit::Fp32;
    switch (unit) {
      case ExecutionUnit::Fp32: f.simt_flops += c.count; break;
      case ExecutionUnit::Sfu: f.sfu_flops += c.count; break;
    }
  }

  // Waves: full ones hold every SM's resident blocks; the last holds the rest.
  const int64_t slots = static_cast<int64_t>(d.sm_count) * f.blocks_per_sm;
  const int64_t full = f.blocks / slots, tail = f.blocks % slots;
  const double per_block_dram = f.dram_bytes / blocks;
  const double per_block_l2 = f.requested_bytes / blocks;
  const double per_block_l2_hits = std::max(0.0, f.requested_bytes - f.dram_bytes) / blocks;
  const double per_block_wavefronts = f.smem_wavefronts / blocks;
  const double per_block_simt = f.simt_flops / blocks, per_block_sfu = f.sfu_flops / blocks;
  const double per_block_tensor = f.tensor_flops / blocks;
  const double ops_per_thread = (f.simt_flops + f.sfu_flops) / (blocks * static_cast<double>(f.threads_per_block));
  const double dram_us_per_byte = 1 / (d.dram_gbps * 1e3);
  const double sm_flops_per_us = d.fp32_tflops * 1e6 / d.sm_count;
  const double sm_tensor_per_us = d.tensor_tflops_bf16 * 1e6 / d.sm_count;
  const double in_flight_per_block = static_cast<double>(f.warps_per_block) * f.bytes_in_flight_per_warp;
  const double mhz = clock_mhz(d);
  auto wave = [&](double count, int64_t wave_blocks) {
    KernelFeatures::Wave w;
    w.count = count;
    w.blocks = wave_blocks;
    const double b = static_cast<double>(wave_blocks);
    // The busiest SM's resident blocks.
    const double busiest = static_cast<double>(std::min<int64_t>(f.blocks_per_sm, (wave_blocks + d.sm_count - 1) / d.sm_count));
    auto in = [&](CostCoefficient c) -> double& { return w.inputs[static_cast<size_t>(c)]; };
    in(CostCoefficient::DramEfficiency) = b * per_block_dram * dram_us_per_byte;
    in(CostCoefficient::L2BandwidthVsDram) = b * per_block_l2 * dram_us_per_byte;
    // Every block of the wave waits its round trips at once: bytes / bytes in flight, each a
    // latency (ns -> us).
    in(CostCoefficient::DramLatencyNs) = per_block_dram / in_flight_per_block * 1e-3;
    in(CostCoefficient::L2LatencyNs) =
        (per_block_l2_hits / in_flight_per_block + 2.0 * static_cast<double>(f.cluster_syncs)) * 1e-3;
    in(CostCoefficient::SmemEfficiency) = busiest * per_block_wavefronts / mhz;
    in(CostCoefficient::Fp32Efficiency) = busiest * per_block_simt / sm_flops_per_us;
    in(CostCoefficient::SfuCost) = busiest * per_block_sfu / sm_flops_per_us;
    in(CostCoefficient::TensorEfficiency) = sm_tensor_per_us > 0 ? busiest * per_block_tensor / sm_tensor_per_us : 0;
    in(CostCoefficient::IssueLatencyCycles) = ops_per_thread / mhz;
    return w;
  };
  if (full > 0) f.waves.push_back(wave(static_cast<double>(full), slots));
  if (tail > 0) f.waves.push_back(wave(1, tail));
  return f;
}

KernelEstimate CostModel::estimate(const KernelFeatures& f) const {
  KernelEstimate e;
  e.features = f;
  e.launch_us = coefficient(CostCoefficient::LaunchOverheadUs);
  e.latency_us = e.launch_us;
  for (const KernelFeatures::Wave& w : f.waves) {
    std::array<double, kCostTerms> terms{};
    for (size_t c = 0; c < kCostCoefficients; ++c) {
      const auto coef = static_cast<CostCoefficient>(c);
      if (auto t = term_of(coef)) terms[static_cast<size_t>(*t)] += linear_value(coef) * w.inputs[c];
    }
    const size_t top = static_cast<size_t>(std::max_element(terms.begin(), terms.end()) - terms.begin());
    for (size_t t = 0; t < kCostTerms; ++t) e.term_us[t] += w.count * terms[t];
    e.bound_us[top] += w.count * terms[top];
    e.latency_us += w.count * terms[top];
  }
  e.bound = static_cast<CostTerm>(std::max_element(e.bound_us.begin(), e.bound_us.end()) - e.bound_us.begin());
  return e;
}

Expected<KernelEstimate> CostModel::estimate(const Graph& g, const Node& kernel, const DeviceDesc& d,
                                             int registers) const {
  TESSERA_ASSIGN_OR_RETURN(KernelFeatures f, features(g, kernel, d, registers));
  return estimate(f);
}

}  // namespace tessera

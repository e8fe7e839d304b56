// Device descriptions: the numbers schedule heuristics read. Loaded from data/devices.yaml;
// no pass hard-codes a device number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/support/status.h"

namespace tessera {

// What an architecture's hardware and PTX can do, for the passes to ask instead of comparing arch
// numbers. One table (arch_features) gives them for every known arch.
struct ArchFeatures {
  bool cp_async = false;  // sm_80+: cp.async copies from global to shared memory
  bool mma_sync = false;  // sm_80+: warp-level bf16/f16 tensor-core mma.sync and ldmatrix
  bool tma = false;       // sm_90+: Tensor Memory Accelerator box copies, mbarrier transactions
  bool clusters = false;  // sm_90+: thread-block clusters, distributed shared memory
  bool wgmma = false;     // sm_90a: warpgroup MMA (wgmma.mma_async) and setmaxnreg
  bool operator==(const ArchFeatures&) const = default;
};

struct DeviceDesc {
  std::string name;          // short id: h100, h200, a100, l40s, rtx4090, rtx5090
  std::string full_name;     // "NVIDIA H100 80GB HBM3"
  std::string arch;          // sm_90
  int sm_count = 0;
  int64_t smem_per_block = 49152;    // bytes usable by one block (opt-in maximum, dynamic smem)
  int64_t smem_per_block_static = 49152;  // bytes of statically declared __shared__ per block
  int64_t smem_per_sm = 0;           // bytes
  int64_t regs_per_sm = 0;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 0;         // resident blocks per SM, whatever their size (0: not known)
  int64_t smem_reserved_per_block = 0;  // bytes the driver takes from the SM per resident block
  int reg_alloc_unit = 256;          // registers are allocated per warp in units of this many
  int warp_size = 32;
  int64_t l2_bytes = 0;
  double dram_gbps = 0;              // peak DRAM bandwidth, GB/s
  double fp32_tflops = 0;            // peak non-tensor-core FP32
  double tensor_tflops_bf16 = 0;     // dense
  double clock_mhz = 0;              // boost SM clock (0: not given; the cost model derives it)
  ArchFeatures features;             // arch_features(arch): the table fills it; a hand-built
                                     // description sets it with the arch
};

class DeviceTable {
 public:
  static Expected<DeviceTable> load_file(const std::string& path);
  static Expected<DeviceTable> parse(const std::string& yaml_text, const std::string& file);
  // The table shipped with Tessera: <libdir>/../share/tessera/devices.yaml next to libtessera.so
  // (build and install trees alike), else the source tree's data/devices.yaml.
  static Expected<DeviceTable> load_default();
  const DeviceDesc* find(const std::string& name) const;      // by short name
  // The first device with that arch; for an arch-specific variant (sm_90a) that no device lists,
  // the first device of its base arch (sm_90) compiled for the variant: the same numbers, the
  // variant's arch and features (`--arch sm_90a` is an H100 whose kernels may use wgmma).
  const DeviceDesc* find_by_arch(const std::string& arch) const;
  const std::vector<DeviceDesc>& all() const { return devices_; }

 private:
  std::vector<DeviceDesc> devices_;
  std::vector<DeviceDesc> variants_;  // arch-specific variants of listed devices (not in all())
};

// Known CUDA architectures: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_120.
bool is_known_arch(const std::string& arch);
// The features of a known arch (all false for an unknown one).
ArchFeatures arch_features(const std::string& arch);
// The compute capability an arch names, as a number ("sm_90a" -> 90); nullopt when the text is not
// sm_<digits>. Passes ask DeviceDesc::features instead.
std::optional<int> arch_number(const std::string& arch);
const std::vector<std::string>& known_archs();

}  // namespace tessera

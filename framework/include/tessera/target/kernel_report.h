// KernelReport: the static analysis of one Kernel IR kernel that `compile -v`, `run -v` and `ab`
// print (docs/cli.md "The static kernel report") and that schedule work reuses for its bytes and
// FLOP figures: the launch, the bytes it moves from DRAM counted at first touch against the
// program's minimum, and its FLOPs by kind. KernelBound puts a report on a device: blocks per SM,
// the first wave and the roofline bound. Computed from the IR alone, never measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ir/graph.h"
#include "tessera/target/device.h"

namespace tessera {

// The bytes beyond which a kernel's traffic is large (a decimal megabyte): the report warns when a
// large kernel runs on fewer blocks than the device has SMs, and the scheduling passes
// (split_reduce, split_matmul_k, launch_geometry) spread large work over the device.
inline constexpr int64_t kLargeKernelBytes = 1000 * 1000;

// One global buffer a kernel reads or writes.
struct BufferTraffic {
  std::string buffer;        // the graph node whose value the buffer holds
  DType dtype = DType::F32;
  int64_t elements = 0;      // the buffer's size
  int64_t touched = 0;       // distinct elements the kernel's accesses cover (<= elements)
  bool written = false;      // the kernel's output (else an input it reads)
  // Counted in the program's minimum: a program input or constant read, or a program output
  // written. Other buffers (intermediates between kernels) a fused program would not move.
  bool in_minimum = false;
  int64_t touched_bytes() const;
};

// The ops of one kind a kernel executes, summed over every thread of the grid.
struct FlopCount {
  std::string kind;  // an elementwise function's name: add, mul, rsqrt, exp, ...
  double count = 0;
};

struct KernelReport {
  std::string node;    // the graph node the kernel computes
  std::string kernel;  // the kernel's name
  std::vector<int64_t> grid{1, 1, 1};
  std::vector<int64_t> block{1, 1, 1};
  int64_t static_smem = 0;   // bytes of the Smem arrays when they are static __shared__ arrays
  int64_t dynamic_smem = 0;  // bytes of the kernel's dynamic shared memory

  std::vector<BufferTraffic> buffers;  // inputs in input order, then the output
  // Every distinct global element read or written, counted once (first touch: what DRAM must
  // supply or take when caches catch every re-read). Each access covers a box of the buffer (per
  // dimension its index's bounds and stride, clamped to the shape): exact for box-shaped accesses,
  // an upper bound otherwise.
  int64_t bytes = 0;
  // The bytes of the buffers with in_minimum: inputs read once, outputs written once.
  int64_t min_bytes = 0;

  // Every Assign (but identity and cast), Accum and the combines of a TreeHalve, by kind, in
  // first-seen order; a packed value counts each lane. Loops count their trips, conditions the
  // threads and iterations where they hold (enumerated); flops_exact is false where a condition
  // could not be decided (a data-dependent one, or too many points to enumerate): then both
  // branches count and the figures are upper bounds.
  std::vector<FlopCount> flops_by_kind;
  double flops = 0;
  bool flops_exact = true;
  // Tensor-core FLOPs, counted apart from the SIMT ones above: each MmaSync 2 M N K per warp that
  // executes it (a thread's share, 2 M N K / 32, per thread point as the others count).
  double tensor_flops = 0;
  // The busiest thread's FLOPs (counted as flops is), an upper bound: every loop at its largest
  // trip count for any thread, a condition's larger branch. Far above flops / threads, the work is
  // not spread over the block (one thread walking a whole row); no roofline shows that.
  double busiest_thread_flops = 0;

  int64_t blocks() const;
  int64_t threads_per_block() const;

  // `n` must be a KernelOp node of `g` (else an error naming the node).
  static Expected<KernelReport> of(const Graph& g, const Node& n);
  // The report of every KernelOp node of `g`, in graph order.
  static Expected<std::vector<KernelReport>> of_program(const Graph& g);
};

// A report placed on a device.
struct KernelBound {
  // Resident blocks per SM allowed by each limit (0 = that limit is not known, e.g. registers
  // before the kernel is compiled); blocks_per_sm is the smallest known one, 0 when a block does
  // not fit at all.
  int by_registers = 0, by_smem = 0, by_threads = 0, by_block_limit = 0;
  int blocks_per_sm = 0;
  int64_t smem_per_block = 0;  // static + dynamic + the driver's reserve
  // The fraction of the device's SMs with at least one block in the first wave.
  double first_wave_sms = 0;
  double dram_us = 0;     // bytes / peak DRAM bandwidth
  double compute_us = 0;  // flops / peak FP32 (CUDA cores) + tensor_flops / peak dense BF16 tensor cores
  double bound_us() const { return dram_us > compute_us ? dram_us : compute_us; }
  bool memory_bound() const { return dram_us >= compute_us; }

  // `registers`: per thread as the compiler reports them (0 = not known).
  static KernelBound on(const KernelReport& r, const DeviceDesc& d, int registers);
};

}  // namespace tessera

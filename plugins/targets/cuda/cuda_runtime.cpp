// CudaRuntime: runs a CUDA IR graph (InputOp, ConstantOp and CudaOp nodes) on device 0 through the
// Driver API, and times it.
//
// Running: the graph's buffers are planned by liveness (BufferPlan), one cuMemAlloc per slot;
// inputs and constants are converted to their dtype's bytes (TensorBytes) and uploaded, constants
// window by window from constant_data_windows (checkpoint tensors straight from the file); each
// kernel's cubin (from Target::build) is loaded as a module; kernels launch in graph order on one
// stream with their 3-D grid, block and dynamic shared memory (the opt-in limit is raised with
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES past the default per-block limit), each followed
// by a synchronize so a fault names its kernel; outputs are downloaded and converted back.
// Arguments follow CudaOp::params (LaunchArgs, launch_args.h): buffers' device addresses, scalars
// from the caller converted to their types, tensor maps encoded with cuTensorMapEncodeTiled from
// their buffer's address when the kernel loads (box, element strides, swizzle and out-of-bounds
// fill from the param's TensorMapSpec, checked by encode_tensor_map first). A kernel with cluster dims launches through
// cuLaunchKernelEx with the cluster-dimension attribute.
// Timing: see docs/targets.md "### Benchmarking" (CUDA events, warm-up until the median is stable,
// optional CUDA graph replay and L2 flush; a graph the driver will not capture or instantiate falls
// back to plain launches, with the reason in BenchReport::graphs_unavailable). prepare() keeps a program loaded for callers that time
// launch by launch themselves (TimedProgram, timing_extension.h), with the same events and warm-up.
// Every driver error names the call and, where one is at fault, the kernel and node.
// Tests: tests/unit/cuda_runtime_test.cpp (the GPU tests skip without a driver).
#include "cuda_runtime.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "buffer_plan.h"
#include "launch_args.h"
#include "tensor_bytes.h"
#include "tessera/eval/constant_data.h"

namespace tessera {

#if TESSERA_HAVE_CUDA

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string kernel_what(const Node& n, const CudaOp& op) { return "kernel " + op.name + ", node " + n.id(); }

// A tensor map's swizzle and out-of-bounds fill in the driver's enums.
CUtensorMapSwizzle cu_swizzle(SmemSwizzle s) {
  switch (s) {
    case SmemSwizzle::None: return CU_TENSOR_MAP_SWIZZLE_NONE;
    case SmemSwizzle::B32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case SmemSwizzle::B64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case SmemSwizzle::B128: return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;  // unreachable for a valid swizzle
}
CUtensorMapFloatOOBfill cu_oob_fill(TensorMapOobFill f) {
  switch (f) {
    case TensorMapOobFill::Zero: return CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;  // the box's outside reads as zeros
    case TensorMapOobFill::Nan: return CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  }
  return CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;  // unreachable for a valid fill
}

// Elements per host-to-device copy of a constant (8 MB as doubles): bounds the host memory an
// upload holds, whatever the tensor's size.
constexpr int64_t kUploadWindow = int64_t{1} << 20;

// The two events of a measurement and the optional L2-flush buffer, released on every path.
struct EventTimer {
  const DriverApi& cu;
  CUevent start = nullptr, stop = nullptr;
  CUdeviceptr flush = 0;
  size_t flush_bytes = 0;

  explicit EventTimer(const DriverApi& api) : cu(api) {}
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  ~EventTimer() {  // the caller has waited for the stream: nothing still uses these
    if (flush) cu.mem_free(flush);
    if (stop) cu.event_destroy(stop);
    if (start) cu.event_destroy(start);
  }

  // `l2_flush_bytes` > 0: a buffer that size is overwritten before every timed enqueue.
  Status init(size_t l2_flush_bytes) {
    TESSERA_CU(cu, event_create, "timing", &start, CU_EVENT_DEFAULT);
    TESSERA_CU(cu, event_create, "timing", &stop, CU_EVENT_DEFAULT);
    if (l2_flush_bytes > 0) {
      TESSERA_CU(cu, mem_alloc, "the L2 flush buffer", &flush, l2_flush_bytes);
      flush_bytes = l2_flush_bytes;
    }
    return Status::ok();
  }

  // One timed run of `enqueue` on `stream`: µs between two events recorded around it, after
  // waiting for the second (so the next run starts on an idle stream).
  template <class Enqueue>
  Expected<double> time(CUstream stream, Enqueue&& enqueue, const std::string& what) const {
    if (flush) TESSERA_CU(cu, memset_d8_async, "L2 flush", flush, 0, flush_bytes, stream);
    TESSERA_CU(cu, event_record, what, start, stream);
    TESSERA_TRY(enqueue());
    TESSERA_CU(cu, event_record, what, stop, stream);
    TESSERA_CU(cu, event_synchronize, what, stop);
    float ms = 0;
    TESSERA_CU(cu, event_elapsed_time, what, &ms, start, stop);
    return static_cast<double>(ms) * 1000.0;
  }
};

// Warm-up: timed runs of `timed` (a callable returning Expected<double>) until the median of the
// last 5 is within 2% of the median of the 5 before, or `max_runs`; returns how many ran.
template <class Timed>
Expected<int> warm_up(Timed&& timed, int max_runs) {
  std::vector<double> warm;
  while (static_cast<int>(warm.size()) < std::max(max_runs, 1)) {
    TESSERA_ASSIGN_OR_RETURN(double us, timed());
    warm.push_back(us);
    if (warm.size() >= 10) {
      const double last = median_of(std::vector<double>(warm.end() - 5, warm.end()));
      const double before = median_of(std::vector<double>(warm.end() - 10, warm.end() - 5));
      if (std::abs(last - before) <= 0.02 * before) break;
    }
  }
  return static_cast<int>(warm.size());
}

}  // namespace

struct CudaRuntime::Loaded {
  struct Kernel {
    const Node* node = nullptr;
    const CudaOp* op = nullptr;
    CUfunction fn = nullptr;
    LaunchArgs args;
    int registers = 0;
    int64_t static_smem = 0;
    int64_t bytes = 0;

    // What a timing reports about the kernel besides its times.
    KernelTiming info() const {
      KernelTiming kt;
      kt.node = node->id();
      kt.kernel = op->name;
      kt.grid = op->grid;
      kt.block = op->block;
      kt.dynamic_smem = op->dynamic_smem;
      kt.static_smem = static_smem;
      kt.registers = registers;
      kt.bytes = bytes;
      return kt;
    }
  };
  const DriverApi* api = nullptr;
  CUstream stream = nullptr;
  std::vector<CUdeviceptr> slots;
  std::vector<CUmodule> modules;
  std::vector<Kernel> kernels;
  std::map<std::string, CUdeviceptr> buffer;  // by node id

  ~Loaded() {  // best effort: a failed free cannot be reported from here
    for (CUdeviceptr p : slots) api->mem_free(p);
    for (CUmodule m : modules) api->module_unload(m);
    if (stream) api->stream_destroy(stream);
  }

  Status launch(Kernel& k) const {
    const CudaOp& op = *k.op;
    if (!op.cluster.empty()) {
      // Clusters are launch geometry like the grid: a launch attribute, not a property of the source.
      CUlaunchAttribute cluster{};
      cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      cluster.value.clusterDim.x = static_cast<unsigned>(op.cluster[0]);
      cluster.value.clusterDim.y = static_cast<unsigned>(op.cluster[1]);
      cluster.value.clusterDim.z = static_cast<unsigned>(op.cluster[2]);
      CUlaunchConfig config{};
      config.gridDimX = static_cast<unsigned>(op.grid[0]);
      config.gridDimY = static_cast<unsigned>(op.grid[1]);
      config.gridDimZ = static_cast<unsigned>(op.grid[2]);
      config.blockDimX = static_cast<unsigned>(op.block[0]);
      config.blockDimY = static_cast<unsigned>(op.block[1]);
      config.blockDimZ = static_cast<unsigned>(op.block[2]);
      config.sharedMemBytes = static_cast<unsigned>(op.dynamic_smem);
      config.hStream = stream;
      config.attrs = &cluster;
      config.numAttrs = 1;
      TESSERA_CU(*api, launch_kernel_ex, kernel_what(*k.node, op), &config, k.fn, k.args.kernel_params(), nullptr);
      return Status::ok();
    }
    TESSERA_CU(*api, launch_kernel, kernel_what(*k.node, op), k.fn, static_cast<unsigned>(op.grid[0]),
               static_cast<unsigned>(op.grid[1]), static_cast<unsigned>(op.grid[2]),
               static_cast<unsigned>(op.block[0]), static_cast<unsigned>(op.block[1]),
               static_cast<unsigned>(op.block[2]), static_cast<unsigned>(op.dynamic_smem), stream,
               k.args.kernel_params(), nullptr);
    return Status::ok();
  }

  // Every kernel once in graph order, each waited for so that a fault names its kernel and node;
  // the launches are recorded in `launches` when given.
  Status run_each_waited(std::vector<KernelLaunch>* launches) {
    for (Kernel& k : kernels) {
      if (Status s = launch(k); !s) return std::move(s).error().at_node(k.node->id());
      if (Status s = api->check(api->stream_synchronize(stream), "cuStreamSynchronize", kernel_what(*k.node, *k.op)); !s)
        return std::move(s).error().at_node(k.node->id());
      if (launches) launches->push_back(KernelLaunch{k.node->id(), k.op->name, k.op->grid, k.op->block});
    }
    return Status::ok();
  }

  // Every graph output, downloaded after the caller waited for the stream (the copies run on the
  // legacy stream, which does not wait for the non-blocking one).
  Expected<ValueMap> download_outputs(const Graph& g) const {
    ValueMap outputs;
    for (const std::string& out : g.outputs()) {
      const Node* n = g.find(out);
      if (!n || !buffer.count(out)) return make_error("target cuda: graph output '" + out + "' has no buffer");
      std::string bytes(static_cast<size_t>(num_elements(n->type.shape) * dtype_bytes(n->type.dtype)), '\0');
      if (!bytes.empty())
        TESSERA_CU(*api, memcpy_dtoh, "downloading output " + out, bytes.data(), buffer.at(out), bytes.size());
      Expected<TensorValue> v = TensorBytes::decode(bytes, n->type);
      if (!v) return std::move(v).error().at_node(out);
      outputs[out] = std::move(*v);
    }
    return outputs;
  }
};

Expected<std::unique_ptr<CudaRuntime>> CudaRuntime::open(std::shared_ptr<const DriverApi> api) {
  std::unique_ptr<CudaRuntime> rt(new CudaRuntime(std::move(api)));
  const DriverApi& cu = *rt->api_;
  TESSERA_CU(cu, device_get, "device 0", &rt->dev_, 0);
  TESSERA_CU(cu, primary_ctx_retain, "device 0", &rt->ctx_, rt->dev_);
  TESSERA_CU(cu, ctx_set_current, "device 0", rt->ctx_);
  char name[256] = {};
  TESSERA_CU(cu, device_get_name, "device 0", name, static_cast<int>(sizeof name - 1), rt->dev_);
  auto attr = [&](CUdevice_attribute a, int& v) { return cu.check(cu.device_get_attribute(&v, a, rt->dev_), "cuDeviceGetAttribute"); };
  int major = 0, minor = 0, sms = 0, smem_block = 0, smem_optin = 0, smem_sm = 0, regs_sm = 0, threads_block = 0,
      threads_sm = 0, blocks_sm = 0, smem_reserved = 0, warp = 0, l2 = 0;
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, smem_block));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, smem_optin));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, smem_sm));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, regs_sm));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, threads_block));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, threads_sm));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, blocks_sm));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, smem_reserved));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, warp));
  TESSERA_TRY(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, l2));
  DeviceDesc& d = rt->device_;
  d.name = name;
  d.full_name = name;
  d.arch = "sm_" + std::to_string(major) + std::to_string(minor);
  d.sm_count = sms;
  d.smem_per_block = std::max(smem_optin, smem_block);
  d.smem_per_block_static = smem_block;
  d.smem_per_sm = smem_sm;
  d.regs_per_sm = regs_sm;
  d.max_threads_per_block = threads_block;
  d.max_threads_per_sm = threads_sm;
  d.max_blocks_per_sm = blocks_sm;
  d.smem_reserved_per_block = smem_reserved;
  d.warp_size = warp;
  d.l2_bytes = l2;
  return rt;
}

CudaRuntime::~CudaRuntime() {
  if (ctx_) api_->primary_ctx_release(dev_);
}

Expected<std::unique_ptr<CudaRuntime::Loaded>> CudaRuntime::load(const Graph& g, const ValueMap& inputs,
                                                                 const std::vector<KernelBuild>& builds,
                                                                 const ScalarArgs& scalars, bool keep_uploaded) {
  const DriverApi& cu = *api_;
  const std::vector<BufferUse> uses = BufferPlan::uses_of(g);
  TESSERA_ASSIGN_OR_RETURN(BufferPlan plan, BufferPlan::plan(uses, keep_uploaded));
  auto l = std::make_unique<Loaded>();
  l->api = api_.get();
  // Non-blocking: it never synchronizes with the legacy stream, so it can be captured into a CUDA
  // graph; the synchronous copies (legacy stream) are ordered by explicit synchronizes instead.
  TESSERA_CU(cu, stream_create, "the run's stream", &l->stream, CU_STREAM_NON_BLOCKING);
  for (int64_t bytes : plan.slot_bytes()) {
    CUdeviceptr p = 0;
    TESSERA_CU(cu, mem_alloc, std::to_string(bytes) + " bytes", &p, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    l->slots.push_back(p);
  }
  std::map<std::string, int64_t> bytes_of;
  for (const BufferUse& u : uses) {
    l->buffer[u.id] = l->slots[static_cast<size_t>(plan.slot(u.id))];
    bytes_of[u.id] = u.bytes;
  }
  auto upload = [&](const Node& n, const TensorValue& v) -> Status {
    const std::string bytes = TensorBytes::encode(v);
    if (bytes.empty()) return Status::ok();
    TESSERA_CU(cu, memcpy_htod, "uploading node " + n.id(), l->buffer.at(n.id()), bytes.data(), bytes.size());
    return Status::ok();
  };
  size_t next_build = 0;
  std::map<std::string, CUmodule> module_of;  // by function name and image
  // The dynamic shared memory each function may use, as raised so far: nodes sharing a function
  // (and so its attribute) may launch it with different sizes, so the attribute only grows.
  std::map<CUfunction, int64_t> smem_allowed;
  for (const Node* n : g.nodes()) {
    if (n->op_as<InputOp>()) {
      auto it = inputs.find(n->id());
      if (it == inputs.end()) return make_error("target cuda: no value given for input '" + n->id() + "'").at_node(n->id());
      if (!(it->second.type == n->type))
        return make_error("target cuda: input '" + n->id() + "' is " + it->second.type.str() +
                          " but the graph declares " + n->type.str())
            .at_node(n->id());
      TESSERA_TRY(upload(*n, it->second));
    } else if (const auto* c = n->op_as<ConstantOp>()) {
      // Generated already by the caller (add_constants): uploaded from that value.
      Expected<const TensorValue*> given = given_constant(*n, inputs);
      if (!given) return std::move(given).error();
      if (*given) {
        TESSERA_TRY(upload(*n, **given));
        continue;
      }
      // Window by window: a checkpoint tensor goes from its mapped file to the device without
      // ever being held whole on the host, as doubles or as bytes.
      const size_t width = static_cast<size_t>(dtype_bytes(n->type.dtype));
      Status uploaded = constant_data_windows(
          *c, n->type, kUploadWindow, [&](int64_t first, std::span<const double> values) -> Status {
            const std::string bytes = TensorBytes::encode(values, n->type.dtype);
            const CUdeviceptr at = l->buffer.at(n->id()) + static_cast<CUdeviceptr>(first) * width;
            TESSERA_CU(cu, memcpy_htod, "uploading node " + n->id(), at, bytes.data(), bytes.size());
            return Status::ok();
          });
      if (!uploaded) return std::move(uploaded).error().at_node(n->id());
    } else if (const auto* op = n->op_as<CudaOp>()) {
      if (next_build >= builds.size() || builds[next_build].node != n->id())
        return make_error("target cuda: no compiled kernel for node " + n->id()).at_node(n->id());
      const KernelBuild& b = builds[next_build++];
      const std::string what = kernel_what(*n, *op);
      if (op->grid.size() != 3 || op->block.size() != 3)
        return make_error("target cuda: " + what + ": grid and block must have three dimensions").at_node(n->id());
      Loaded::Kernel k;
      k.node = n;
      k.op = op;
      // Nodes sharing a kernel (the layers of a model) share its module: loaded once.
      CUmodule& module = module_of[op->name + '\n' + b.binary];
      if (module == nullptr) {
        TESSERA_CU(cu, module_load_data, what, &module, b.binary.data());
        l->modules.push_back(module);
      }
      TESSERA_CU(cu, module_get_function, what, &k.fn, module, op->name.c_str());
      int regs = 0, static_smem = 0;
      TESSERA_CU(cu, func_get_attribute, what, &regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k.fn);
      TESSERA_CU(cu, func_get_attribute, what, &static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.fn);
      k.registers = regs;
      k.static_smem = static_smem;
      if (op->dynamic_smem + static_smem > device_.smem_per_block_static) {
        if (op->dynamic_smem + static_smem > device_.smem_per_block)
          return make_error("target cuda: " + what + " needs " + std::to_string(op->dynamic_smem + static_smem) +
                            " bytes of shared memory; the device allows " + std::to_string(device_.smem_per_block))
              .at_node(n->id());
        int64_t& allowed = smem_allowed[k.fn];
        if (op->dynamic_smem > allowed) {
          TESSERA_CU(cu, func_set_attribute, what, k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                     static_cast<int>(op->dynamic_smem));
          allowed = op->dynamic_smem;
        }
      }
      LaunchArgValues values;
      values.scalars = scalars;
      for (const KernelParam& p : op->params) {
        if (p.kind == ParamKind::Scalar) continue;
        const std::string& buffer = p.kind == ParamKind::Buffer ? p.name : p.tensor_map.buffer;
        auto it = l->buffer.find(buffer);
        const Node* buffer_node = g.find(buffer);
        if (it == l->buffer.end() || buffer_node == nullptr)
          return make_error("target cuda: " + what + ": argument " + p.str() + " names no buffer of the graph")
              .at_node(n->id());
        if (p.kind == ParamKind::Buffer) {
          values.buffers[p.name] = static_cast<uint64_t>(it->second);
          continue;
        }
        // The launch owns the descriptor: encoded here from the buffer's final address.
        Expected<TensorMapEncoding> e = encode_tensor_map(p, buffer_node->type, static_cast<uint64_t>(it->second));
        if (!e) return make_error("target cuda: " + what + ": " + e.error().message).at_node(n->id());
        static const CUtensorMapDataType kTypes[] = {CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                                     CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_DATA_TYPE_INT32,
                                                     CU_TENSOR_MAP_DATA_TYPE_INT64, CU_TENSOR_MAP_DATA_TYPE_UINT8,
                                                     CU_TENSOR_MAP_DATA_TYPE_FLOAT64};
        CUtensorMap map;
        TESSERA_CU(cu, tensor_map_encode_tiled, what + ", tensor map " + p.name, &map,
                   kTypes[static_cast<int>(e->data_type)], e->rank, reinterpret_cast<void*>(e->address),
                   e->global_dim.data(), e->global_strides.data(), e->box_dim.data(), e->element_strides.data(),
                   CU_TENSOR_MAP_INTERLEAVE_NONE, cu_swizzle(e->swizzle), CU_TENSOR_MAP_L2_PROMOTION_NONE,
                   cu_oob_fill(e->oob_fill));
        static_assert(sizeof(CUtensorMap) == sizeof(TensorMapBytes));
        std::memcpy(values.tensor_maps[p.name].opaque.data(), &map, sizeof map);
      }
      Expected<LaunchArgs> args = LaunchArgs::pack(op->params, values);
      if (!args) return make_error("target cuda: " + what + ": " + args.error().message).at_node(n->id());
      k.args = std::move(*args);
      for (const std::string& in : n->inputs) k.bytes += bytes_of[in];
      k.bytes += bytes_of[n->id()];
      l->kernels.push_back(std::move(k));
    } else {
      return make_error("target cuda runs CUDA IR; node " + n->id() + " is in " +
                        std::string(dialect_name(n->dialect())) + " IR")
          .at_node(n->id());
    }
  }
  // cuMemcpyHtoD from pageable memory may return before the DMA lands: wait for it before any
  // kernel on the non-blocking stream reads the buffers.
  TESSERA_CU(cu, stream_synchronize, "uploading the inputs", CU_STREAM_LEGACY);
  return l;
}

Expected<TargetRun> CudaRuntime::run(const Graph& g, const ValueMap& inputs, const std::vector<KernelBuild>& builds,
                                     const ScalarArgs& scalars) {
  const DriverApi& cu = *api_;
  TESSERA_CU(cu, ctx_set_current, "device 0", ctx_);
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Loaded> l, load(g, inputs, builds, scalars, /*keep_uploaded=*/false));
  TargetRun run;
  TESSERA_TRY(l->run_each_waited(&run.launches));
  TESSERA_ASSIGN_OR_RETURN(run.outputs, l->download_outputs(g));
  return run;
}

Expected<BenchReport> CudaRuntime::bench(const Graph& g, const ValueMap& inputs, const std::vector<KernelBuild>& builds,
                                         const BenchOptions& options, const ScalarArgs& scalars) {
  const DriverApi& cu = *api_;
  TESSERA_CU(cu, ctx_set_current, "device 0", ctx_);
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Loaded> l, load(g, inputs, builds, scalars, /*keep_uploaded=*/true));

  // The CUDA graph of --graphs, released on every path (after the timer: declared before it).
  struct CapturedGraph {
    const DriverApi& cu;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    ~CapturedGraph() {
      if (exec) cu.graph_exec_destroy(exec);
      if (graph) cu.graph_destroy(graph);
    }
  } captured{cu};
  const size_t flush_bytes = static_cast<size_t>(2 * device_.l2_bytes);
  const bool flush = options.flush_l2 && flush_bytes > 0;
  EventTimer timer(cu);
  TESSERA_TRY(timer.init(flush ? flush_bytes : 0));

  struct Stats {
    double median = 0, min = 0, max = 0;
    int warmup = 0;
  };
  // Warm-up (see warm_up), then `iterations` timed runs.
  auto measure = [&](auto&& enqueue, const std::string& what) -> Expected<Stats> {
    auto timed = [&] { return timer.time(l->stream, enqueue, what); };
    Stats s;
    TESSERA_ASSIGN_OR_RETURN(s.warmup, warm_up(timed, options.max_warmup));
    std::vector<double> runs;
    for (int i = 0; i < std::max(options.iterations, 1); ++i) {
      TESSERA_ASSIGN_OR_RETURN(double us, timed());
      runs.push_back(us);
    }
    s.median = median_of(runs);
    s.min = *std::min_element(runs.begin(), runs.end());
    s.max = *std::max_element(runs.begin(), runs.end());
    return s;
  };

  BenchReport report;
  report.device = device_.full_name;
  report.flushed_l2 = flush;
  if (options.outputs) {  // one checked run first
    TESSERA_TRY(l->run_each_waited(nullptr));
    TESSERA_ASSIGN_OR_RETURN(report.outputs, l->download_outputs(g));
  }
  for (Loaded::Kernel& k : l->kernels) {
    const std::string what = kernel_what(*k.node, *k.op);
    Expected<Stats> s = measure([&] { return l->launch(k); }, what);
    if (!s) return std::move(s).error().at_node(k.node->id());
    KernelTiming kt = k.info();
    kt.median_us = s->median;
    kt.min_us = s->min;
    kt.max_us = s->max;
    kt.warmup_runs = s->warmup;
    report.kernels.push_back(std::move(kt));
  }

  auto launch_all = [&]() -> Status {
    for (Loaded::Kernel& k : l->kernels)
      if (Status s = l->launch(k); !s) return s;
    return Status::ok();
  };
  // --graphs: capture and instantiate; when the driver refuses either, say why and time plain
  // launches instead, so one refusal does not cost the program its timing.
  if (options.use_graphs) {
    Status begun = cu.check(cu.stream_begin_capture(l->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                            "cuStreamBeginCapture", "capturing the program");
    Status captured_ok = begun;
    if (begun) {
      Status launched = launch_all();
      // Always ended once begun, so the stream leaves capture mode whatever happened inside.
      Status ended =
          cu.check(cu.stream_end_capture(l->stream, &captured.graph), "cuStreamEndCapture", "capturing the program");
      captured_ok = !launched ? launched : ended;
    }
    if (captured_ok)
      captured_ok = cu.check(cu.graph_instantiate(&captured.exec, captured.graph, 0), "cuGraphInstantiate",
                             "the program's CUDA graph");
    if (captured_ok) {
      report.used_graphs = true;
    } else {
      report.graphs_unavailable = captured_ok.error().message;  // DriverApi::check's one line
      TESSERA_CU(cu, stream_synchronize, "after a failed CUDA graph capture", l->stream);
    }
  }
  Expected<Stats> program =
      report.used_graphs
          ? measure([&] { return cu.check(cu.graph_launch(captured.exec, l->stream), "cuGraphLaunch", "the program's CUDA graph"); },
                    "the program as a CUDA graph")
          : measure(launch_all, "the whole program");
  if (!program) return std::move(program).error();
  report.program_median_us = program->median;
  report.program_min_us = program->min;
  report.program_max_us = program->max;
  TESSERA_CU(cu, stream_synchronize, "after timing", l->stream);
  return report;
}

// TimedProgram (timing_extension.h) over a Loaded program. Members are destroyed in reverse order:
// the timer and the loaded program (which free device memory) before the runtime releases the
// context; the destructor first makes that context current and waits for the stream.
class CudaTimedProgram final : public TimedProgram {
 public:
  CudaTimedProgram(std::unique_ptr<CudaRuntime> rt, const Graph& g) : rt_(std::move(rt)), graph_(g), timer_(*rt_->api_) {}
  ~CudaTimedProgram() override {
    const DriverApi& cu = *rt_->api_;
    if (cu.ctx_set_current(rt_->ctx_) == CUDA_SUCCESS && loaded_ && loaded_->stream)
      cu.stream_synchronize(loaded_->stream);  // best effort: nothing may still run on what is freed
  }

  Status load(const ValueMap& inputs, const std::vector<KernelBuild>& builds, const ScalarArgs& scalars,
              const TimingOptions& timing) {
    TESSERA_TRY(make_current());
    TESSERA_ASSIGN_OR_RETURN(loaded_, rt_->load(graph_, inputs, builds, scalars, /*keep_uploaded=*/true));
    const size_t flush_bytes = static_cast<size_t>(2 * rt_->device_.l2_bytes);
    TESSERA_TRY(timer_.init(timing.flush_l2 ? flush_bytes : 0));
    for (const CudaRuntime::Loaded::Kernel& k : loaded_->kernels) kernels_.push_back(k.info());
    for (const KernelBuild& b : builds)
      if (!b.cache_warning.empty()) {
        warnings_.push_back(b.cache_warning);
        break;
      }
    return Status::ok();
  }

  const DeviceDesc& device() const override { return rt_->device(); }
  const std::vector<KernelTiming>& kernels() const override { return kernels_; }
  const std::vector<std::string>& warnings() const override { return warnings_; }

  Expected<double> time_kernel(size_t i) override {
    TESSERA_TRY(check_kernel(i));
    TESSERA_TRY(make_current());
    return time_one_kernel(i);
  }
  Expected<double> time_program() override {
    TESSERA_TRY(make_current());
    return time_all();
  }
  Expected<int> warm_up_kernel(size_t i, int max_runs) override {
    TESSERA_TRY(check_kernel(i));
    TESSERA_TRY(make_current());
    return warm_up([&] { return time_one_kernel(i); }, max_runs);
  }
  Expected<int> warm_up_program(int max_runs) override {
    TESSERA_TRY(make_current());
    return warm_up([&] { return time_all(); }, max_runs);
  }
  Expected<ValueMap> outputs() override {
    TESSERA_TRY(make_current());
    const DriverApi& cu = *rt_->api_;
    TESSERA_CU(cu, stream_synchronize, "before downloading the outputs", loaded_->stream);
    return loaded_->download_outputs(graph_);
  }

 private:
  Status make_current() const {
    const DriverApi& cu = *rt_->api_;
    TESSERA_CU(cu, ctx_set_current, "device 0", rt_->ctx_);
    return Status::ok();
  }
  Status check_kernel(size_t i) const {
    if (i >= loaded_->kernels.size())
      return make_error("target cuda: kernel index " + std::to_string(i) + " is out of range (the program has " +
                        std::to_string(loaded_->kernels.size()) + " kernels)");
    return Status::ok();
  }
  Expected<double> time_one_kernel(size_t i) {
    CudaRuntime::Loaded::Kernel& k = loaded_->kernels[i];
    Expected<double> us = timer_.time(loaded_->stream, [&] { return loaded_->launch(k); }, kernel_what(*k.node, *k.op));
    if (!us) return std::move(us).error().at_node(k.node->id());
    return us;
  }
  Expected<double> time_all() {
    auto launch_all = [&]() -> Status {
      for (CudaRuntime::Loaded::Kernel& k : loaded_->kernels)
        if (Status s = loaded_->launch(k); !s) return std::move(s).error().at_node(k.node->id());
      return Status::ok();
    };
    return timer_.time(loaded_->stream, launch_all, "the whole program");
  }

  std::unique_ptr<CudaRuntime> rt_;
  Graph graph_;  // the loaded kernels point into it
  std::unique_ptr<CudaRuntime::Loaded> loaded_;
  EventTimer timer_;
  std::vector<KernelTiming> kernels_;
  std::vector<std::string> warnings_;
};

Expected<std::unique_ptr<TimedProgram>> CudaRuntime::prepare(std::unique_ptr<CudaRuntime> rt, const Graph& g,
                                                             const ValueMap& inputs,
                                                             const std::vector<KernelBuild>& builds,
                                                             const ScalarArgs& scalars, const TimingOptions& timing) {
  auto program = std::make_unique<CudaTimedProgram>(std::move(rt), g);
  TESSERA_TRY(program->load(inputs, builds, scalars, timing));
  return std::unique_ptr<TimedProgram>(std::move(program));
}

#else  // without the toolkit headers DriverApi::load() always fails, so no runtime is ever opened

Expected<std::unique_ptr<CudaRuntime>> CudaRuntime::open(std::shared_ptr<const DriverApi>) {
  return make_error(std::string(kNoCudaPrefix) + "this build of the cuda plugin has no CUDA toolkit headers");
}
CudaRuntime::~CudaRuntime() = default;
Expected<TargetRun> CudaRuntime::run(const Graph&, const ValueMap&, const std::vector<KernelBuild>&, const ScalarArgs&) {
  return make_error(std::string(kNoCudaPrefix) + "this build of the cuda plugin has no CUDA toolkit headers");
}
Expected<BenchReport> CudaRuntime::bench(const Graph&, const ValueMap&, const std::vector<KernelBuild>&,
                                         const BenchOptions&, const ScalarArgs&) {
  return make_error(std::string(kNoCudaPrefix) + "this build of the cuda plugin has no CUDA toolkit headers");
}
Expected<std::unique_ptr<TimedProgram>> CudaRuntime::prepare(std::unique_ptr<CudaRuntime>, const Graph&,
                                                             const ValueMap&, const std::vector<KernelBuild>&,
                                                             const ScalarArgs&, const TimingOptions&) {
  return make_error(std::string(kNoCudaPrefix) + "this build of the cuda plugin has no CUDA toolkit headers");
}

#endif

}  // namespace tessera

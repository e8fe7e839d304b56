// A stand-in libcuda.so.1 for tests on machines without a GPU: it implements the Driver API entry
// points the cuda plugin resolves (driver_api.h), runs no kernel, and checks how it is used.
// Tests put its directory first on LD_LIBRARY_PATH of a child process (tests/unit/
// fake_driver_test.cpp, the ctest kernel_bench_fake_driver), so the cuda target's whole GPU path —
// loading, launching, timing, downloading, freeing — runs in CI.
//
// Memory is host memory (copies really copy; a kernel writes nothing, so its output keeps the
// zeros cuMemAlloc gave it). Time is a counter: each launch advances it by 1 µs and each memset by
// 0.5 µs, so an event pair around N launches reads N µs.
// Launches are refused as the driver refuses them (a zero or over-1024-thread shape, dynamic shared
// memory past 48 KB without the function's opt-in attribute at least that large), and so are tensor
// maps (cuTensorMapEncodeTiled: enum values out of range, rank, box dims 1..256, element strides
// 1..8, alignments, the inner box row a multiple of 16 bytes and within the swizzle's span, the NaN
// fill of an integer type); CUDA graph capture is not supported (the runtime then times plain
// launches).
// Opt-in misbehaviour, for the tests of the GPU measurer's watchdog (tests/unit/
// gpu_measurer_test.cpp), read from the environment by this library only:
//   FAKE_CUDA_HANG_ON_LAUNCH=1   cuLaunchKernel never returns (a kernel that hangs the GPU);
//   FAKE_CUDA_CRASH_ON_LAUNCH=1  cuLaunchKernel ends the process with SIGSEGV (a crash in the driver);
//   FAKE_CUDA_FAULT_ON_LAUNCH=1  cuLaunchKernel returns CUDA_ERROR_ILLEGAL_ADDRESS (a kernel that faulted).
// Checked (a violation prints "fake libcuda: <what>" to stderr and exits with status 97):
//   * every call but the version/error/proc-address queries comes after cuInit;
//   * calls that need a context run with the retained primary context current on the thread;
//   * no memory, module, stream or event is freed, and no device-to-host copy starts, while a
//     stream has work nobody waited for (cuStreamSynchronize, or cuEventSynchronize of an event
//     recorded after it);
//   * cuEventElapsedTime reads two recorded events, the later one waited for;
//   * handles are live when used; pointers passed to launches are not checked;
//   * at exit: every allocation, module, stream and event was released, and the primary context's
//     retain count is back to 0.
#include <cuda.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace {

struct FakeStream {
  bool non_blocking = false;
  double pending_since = -1;  // the clock when unwaited work was first enqueued; -1: idle
};
struct FakeEvent {
  bool recorded = false;
  bool waited = false;
  double time = 0;
  CUstream stream = nullptr;
};

struct State {
  std::mutex mutex;
  bool initialized = false;
  int ctx_retains = 0;
  double clock_us = 0;
  std::map<CUdeviceptr, std::vector<unsigned char>> allocations;
  std::set<CUmodule> modules;
  std::set<CUstream> streams;
  std::map<CUevent, FakeEvent> events;
  std::map<CUstream, FakeStream> stream_state;
  std::map<CUfunction, int> max_dynamic_smem;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as set
  CUdeviceptr next_address = 0x100000;
};

State& state() {
  static State* s = new State();  // never destroyed: the exit check below still reads it
  return *s;
}

thread_local CUcontext current_context = nullptr;
// A distinct, never dereferenced address stands for the primary context.
int primary_context_tag;
CUcontext primary() { return reinterpret_cast<CUcontext>(&primary_context_tag); }

[[noreturn]] void violation(const std::string& what) {
  std::fprintf(stderr, "fake libcuda: %s\n", what.c_str());
  std::fflush(stderr);
  std::_Exit(97);
}

void need_init(const char* call) {
  if (!state().initialized) violation(std::string(call) + " before cuInit");
}
void need_context(const char* call) {
  need_init(call);
  if (state().ctx_retains <= 0) violation(std::string(call) + " without a retained primary context");
  if (current_context != primary()) violation(std::string(call) + " without the primary context current on this thread");
}
void need_idle_streams(const char* call) {
  for (auto& [s, st] : state().stream_state)
    if (st.pending_since >= 0) violation(std::string(call) + " while a stream has work nobody waited for");
}
void enqueue(CUstream s, double us, const char* call) {
  State& st = state();
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
    st.clock_us += us;  // the legacy stream: synchronous here
    return;
  }
  auto it = st.stream_state.find(s);
  if (it == st.stream_state.end()) violation(std::string(call) + " on a stream that does not exist");
  if (it->second.pending_since < 0) it->second.pending_since = st.clock_us;
  st.clock_us += us;
}

#define FAKE_LOCK std::lock_guard<std::mutex> fake_lock_(state().mutex)

CUresult fake_init(unsigned int) {
  FAKE_LOCK;
  state().initialized = true;
  return CUDA_SUCCESS;
}
CUresult fake_device_get(CUdevice* d, int ordinal) {
  FAKE_LOCK;
  need_init("cuDeviceGet");
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult fake_device_get_count(int* n) {
  FAKE_LOCK;
  need_init("cuDeviceGetCount");
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult fake_device_get_name(char* name, int len, CUdevice) {
  FAKE_LOCK;
  need_init("cuDeviceGetName");
  std::snprintf(name, static_cast<size_t>(len), "%s", "Fake GPU (tests)");
  return CUDA_SUCCESS;
}
CUresult fake_device_get_attribute(int* v, CUdevice_attribute a, CUdevice) {
  FAKE_LOCK;
  need_init("cuDeviceGetAttribute");
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 227 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 228 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 1 << 20; break;  // small: the flush buffer is host memory
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult fake_device_total_mem(size_t* bytes, CUdevice) {
  FAKE_LOCK;
  need_init("cuDeviceTotalMem");
  *bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}
CUresult fake_primary_ctx_retain(CUcontext* ctx, CUdevice) {
  FAKE_LOCK;
  need_init("cuDevicePrimaryCtxRetain");
  ++state().ctx_retains;
  *ctx = primary();
  return CUDA_SUCCESS;
}
CUresult fake_primary_ctx_release(CUdevice) {
  FAKE_LOCK;
  need_init("cuDevicePrimaryCtxRelease");
  State& st = state();
  if (st.ctx_retains <= 0) violation("cuDevicePrimaryCtxRelease without a retain");
  if (--st.ctx_retains == 0) {
    // The context dies with its last reference: everything still in it would be lost.
    if (!st.allocations.empty() || !st.modules.empty() || !st.streams.empty() || !st.events.empty())
      violation("the primary context was released for the last time with objects still in it");
  }
  return CUDA_SUCCESS;
}
CUresult fake_ctx_set_current(CUcontext ctx) {
  FAKE_LOCK;
  need_init("cuCtxSetCurrent");
  if (ctx != nullptr && ctx != primary()) violation("cuCtxSetCurrent with an unknown context");
  current_context = ctx;
  return CUDA_SUCCESS;
}
CUresult fake_module_load_data(CUmodule* m, const void* image) {
  FAKE_LOCK;
  need_context("cuModuleLoadData");
  if (image == nullptr) return CUDA_ERROR_INVALID_IMAGE;
  *m = reinterpret_cast<CUmodule>(new char(0));
  state().modules.insert(*m);
  return CUDA_SUCCESS;
}
CUresult fake_module_unload(CUmodule m) {
  FAKE_LOCK;
  need_context("cuModuleUnload");
  need_idle_streams("cuModuleUnload");
  if (!state().modules.erase(m)) violation("cuModuleUnload of a module that is not loaded");
  state().max_dynamic_smem.erase(reinterpret_cast<CUfunction>(m));  // its function (see cuModuleGetFunction)
  delete reinterpret_cast<char*>(m);
  return CUDA_SUCCESS;
}
CUresult fake_module_get_function(CUfunction* f, CUmodule m, const char* name) {
  FAKE_LOCK;
  need_context("cuModuleGetFunction");
  if (!state().modules.count(m)) violation("cuModuleGetFunction on a module that is not loaded");
  if (name == nullptr || *name == '\0') return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(m);
  return CUDA_SUCCESS;
}
CUresult fake_func_set_attribute(CUfunction f, CUfunction_attribute a, int v) {
  FAKE_LOCK;
  need_context("cuFuncSetAttribute");
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (v < 0 || v > 227 * 1024) return CUDA_ERROR_INVALID_VALUE;
    state().max_dynamic_smem[f] = v;
  }
  return CUDA_SUCCESS;
}
CUresult fake_func_get_attribute(int* v, CUfunction_attribute a, CUfunction) {
  FAKE_LOCK;
  need_context("cuFuncGetAttribute");
  *v = a == CU_FUNC_ATTRIBUTE_NUM_REGS ? 32 : 0;
  return CUDA_SUCCESS;
}
bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "1") == 0;
}

CUresult fake_launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, CUstream s, void** params, void** extra) {
  if (env_set("FAKE_CUDA_HANG_ON_LAUNCH"))
    for (;;) pause();
  if (env_set("FAKE_CUDA_CRASH_ON_LAUNCH")) {
    std::signal(SIGSEGV, SIG_DFL);  // past any handler a sanitizer installed: the process dies of it
    std::raise(SIGSEGV);
  }
  if (env_set("FAKE_CUDA_FAULT_ON_LAUNCH")) return CUDA_ERROR_ILLEGAL_ADDRESS;
  FAKE_LOCK;
  need_context("cuLaunchKernel");
  if (f == nullptr || !state().modules.count(reinterpret_cast<CUmodule>(f)))
    violation("cuLaunchKernel of a function whose module is not loaded");
  if (gx * gy * gz == 0 || bx * by * bz == 0 || bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
  // As the driver: dynamic shared memory past 48 KB needs the function's opt-in attribute.
  if (smem > 48 * 1024) {
    auto it = state().max_dynamic_smem.find(f);
    if (it == state().max_dynamic_smem.end() || static_cast<int>(smem) > it->second) return CUDA_ERROR_INVALID_VALUE;
  }
  if (params == nullptr && extra == nullptr) violation("cuLaunchKernel without arguments");
  enqueue(s, 1.0, "cuLaunchKernel");
  return CUDA_SUCCESS;
}
CUresult fake_launch_kernel_ex(const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
  return fake_launch_kernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                            c->sharedMemBytes, c->hStream, params, extra);
}
// The arguments as the driver checks them (the subset the cuda plugin uses: plain element types,
// Hopper's swizzles): an argument the driver would refuse is CUDA_ERROR_INVALID_VALUE. The
// descriptor it writes is all zeros.
CUresult fake_tensor_map_encode_tiled(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank, void* address,
                                      const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                      const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                                      CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                      CUtensorMapFloatOOBfill fill) {
  FAKE_LOCK;
  need_init("cuTensorMapEncodeTiled");
  if (map == nullptr || dims == nullptr || box == nullptr || element_strides == nullptr ||
      (rank > 1 && strides == nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  if (type < CU_TENSOR_MAP_DATA_TYPE_UINT8 || type > CU_TENSOR_MAP_DATA_TYPE_BFLOAT16) return CUDA_ERROR_INVALID_VALUE;
  if (rank < 1 || rank > 5) return CUDA_ERROR_INVALID_VALUE;
  if (interleave < CU_TENSOR_MAP_INTERLEAVE_NONE || interleave > CU_TENSOR_MAP_INTERLEAVE_32B) return CUDA_ERROR_INVALID_VALUE;
  if (swizzle < CU_TENSOR_MAP_SWIZZLE_NONE || swizzle > CU_TENSOR_MAP_SWIZZLE_128B) return CUDA_ERROR_INVALID_VALUE;
  if (l2 < CU_TENSOR_MAP_L2_PROMOTION_NONE || l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B) return CUDA_ERROR_INVALID_VALUE;
  if (fill < CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE || fill > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return CUDA_ERROR_INVALID_VALUE;
  static const cuuint64_t kBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2};  // UINT8 .. BFLOAT16
  const cuuint64_t elem = kBytes[type];
  const bool is_float = type >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  if (fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_float) return CUDA_ERROR_INVALID_VALUE;
  if (reinterpret_cast<uintptr_t>(address) % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
  for (cuuint32_t d = 0; d < rank; ++d) {
    if (dims[d] == 0 || dims[d] > (cuuint64_t{1} << 32)) return CUDA_ERROR_INVALID_VALUE;
    if (box[d] == 0 || box[d] > 256) return CUDA_ERROR_INVALID_VALUE;
    if (element_strides[d] == 0 || element_strides[d] > 8) return CUDA_ERROR_INVALID_VALUE;
    if (d > 0 && (strides[d - 1] % 16 != 0 || strides[d - 1] >= (cuuint64_t{1} << 40))) return CUDA_ERROR_INVALID_VALUE;
  }
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
    const cuuint64_t inner = box[0] * elem;
    if (inner % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
    const cuuint64_t span = swizzle == CU_TENSOR_MAP_SWIZZLE_32B   ? 32
                            : swizzle == CU_TENSOR_MAP_SWIZZLE_64B  ? 64
                            : swizzle == CU_TENSOR_MAP_SWIZZLE_128B ? 128
                                                                    : 0;
    if (span > 0 && inner > span) return CUDA_ERROR_INVALID_VALUE;
  }
  std::memset(map, 0, sizeof *map);
  return CUDA_SUCCESS;
}
CUresult fake_mem_alloc(CUdeviceptr* p, size_t bytes) {
  FAKE_LOCK;
  need_context("cuMemAlloc");
  State& st = state();
  *p = st.next_address;
  st.next_address += (bytes + 4095) / 4096 * 4096 + 4096;
  st.allocations[*p].assign(bytes, 0);
  return CUDA_SUCCESS;
}
CUresult fake_mem_free(CUdeviceptr p) {
  FAKE_LOCK;
  need_context("cuMemFree");
  need_idle_streams("cuMemFree");
  if (!state().allocations.erase(p)) violation("cuMemFree of memory that is not allocated");
  return CUDA_SUCCESS;
}
std::vector<unsigned char>* range(CUdeviceptr p, size_t bytes, const char* call) {
  auto& all = state().allocations;
  auto it = all.upper_bound(p);
  if (it == all.begin()) violation(std::string(call) + " outside every allocation");
  --it;
  if (p + bytes > it->first + it->second.size()) violation(std::string(call) + " past the end of an allocation");
  return &it->second;
}
CUresult fake_memcpy_htod(CUdeviceptr dst, const void* src, size_t bytes) {
  FAKE_LOCK;
  need_context("cuMemcpyHtoD");
  auto* a = range(dst, bytes, "cuMemcpyHtoD");
  CUdeviceptr base = std::prev(state().allocations.upper_bound(dst))->first;
  std::memcpy(a->data() + (dst - base), src, bytes);
  return CUDA_SUCCESS;
}
CUresult fake_memcpy_dtoh(void* dst, CUdeviceptr src, size_t bytes) {
  FAKE_LOCK;
  need_context("cuMemcpyDtoH");
  // The legacy stream does not wait for non-blocking streams: the caller must have.
  need_idle_streams("cuMemcpyDtoH");
  auto* a = range(src, bytes, "cuMemcpyDtoH");
  CUdeviceptr base = std::prev(state().allocations.upper_bound(src))->first;
  std::memcpy(dst, a->data() + (src - base), bytes);
  return CUDA_SUCCESS;
}
CUresult fake_memset_d8(CUdeviceptr p, unsigned char v, size_t n) {
  FAKE_LOCK;
  need_context("cuMemsetD8");
  auto* a = range(p, n, "cuMemsetD8");
  CUdeviceptr base = std::prev(state().allocations.upper_bound(p))->first;
  std::memset(a->data() + (p - base), v, n);
  return CUDA_SUCCESS;
}
CUresult fake_memset_d8_async(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  {
    FAKE_LOCK;
    need_context("cuMemsetD8Async");
    auto* a = range(p, n, "cuMemsetD8Async");
    CUdeviceptr base = std::prev(state().allocations.upper_bound(p))->first;
    std::memset(a->data() + (p - base), v, n);
    enqueue(s, 0.5, "cuMemsetD8Async");
  }
  return CUDA_SUCCESS;
}
CUresult fake_stream_create(CUstream* s, unsigned int flags) {
  FAKE_LOCK;
  need_context("cuStreamCreate");
  *s = reinterpret_cast<CUstream>(new char(0));
  state().streams.insert(*s);
  state().stream_state[*s].non_blocking = (flags & CU_STREAM_NON_BLOCKING) != 0;
  return CUDA_SUCCESS;
}
CUresult fake_stream_destroy(CUstream s) {
  FAKE_LOCK;
  need_context("cuStreamDestroy");
  need_idle_streams("cuStreamDestroy");
  if (!state().streams.erase(s)) violation("cuStreamDestroy of a stream that does not exist");
  state().stream_state.erase(s);
  delete reinterpret_cast<char*>(s);
  return CUDA_SUCCESS;
}
CUresult fake_stream_synchronize(CUstream s) {
  FAKE_LOCK;
  need_context("cuStreamSynchronize");
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
    // The legacy stream waits only for blocking streams; ours are all non-blocking.
    for (auto& [h, st] : state().stream_state)
      if (!st.non_blocking) st.pending_since = -1;
    return CUDA_SUCCESS;
  }
  auto it = state().stream_state.find(s);
  if (it == state().stream_state.end()) violation("cuStreamSynchronize of a stream that does not exist");
  it->second.pending_since = -1;
  return CUDA_SUCCESS;
}
CUresult fake_event_create(CUevent* e, unsigned int) {
  FAKE_LOCK;
  need_context("cuEventCreate");
  *e = reinterpret_cast<CUevent>(new char(0));
  state().events[*e] = FakeEvent{};
  return CUDA_SUCCESS;
}
CUresult fake_event_record(CUevent e, CUstream s) {
  FAKE_LOCK;
  need_context("cuEventRecord");
  auto it = state().events.find(e);
  if (it == state().events.end()) violation("cuEventRecord of an event that does not exist");
  if (s != nullptr && s != CU_STREAM_LEGACY && !state().stream_state.count(s))
    violation("cuEventRecord on a stream that does not exist");
  it->second = FakeEvent{true, false, state().clock_us, s};
  return CUDA_SUCCESS;
}
CUresult fake_event_synchronize(CUevent e) {
  FAKE_LOCK;
  need_context("cuEventSynchronize");
  auto it = state().events.find(e);
  if (it == state().events.end()) violation("cuEventSynchronize of an event that does not exist");
  it->second.waited = true;
  // Work enqueued on the event's stream before the record is done now.
  auto s = state().stream_state.find(it->second.stream);
  if (s != state().stream_state.end() && s->second.pending_since >= 0 && s->second.pending_since <= it->second.time)
    s->second.pending_since = -1;
  return CUDA_SUCCESS;
}
CUresult fake_event_elapsed_time(float* ms, CUevent a, CUevent b) {
  FAKE_LOCK;
  need_context("cuEventElapsedTime");
  auto ia = state().events.find(a), ib = state().events.find(b);
  if (ia == state().events.end() || ib == state().events.end()) violation("cuEventElapsedTime of an event that does not exist");
  if (!ia->second.recorded || !ib->second.recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (!ib->second.waited) violation("cuEventElapsedTime before the later event was waited for");
  *ms = static_cast<float>((ib->second.time - ia->second.time) / 1000.0);
  return CUDA_SUCCESS;
}
CUresult fake_event_destroy(CUevent e) {
  FAKE_LOCK;
  need_context("cuEventDestroy");
  if (!state().events.erase(e)) violation("cuEventDestroy of an event that does not exist");
  delete reinterpret_cast<char*>(e);
  return CUDA_SUCCESS;
}
CUresult fake_get_error_name(CUresult r, const char** s) {
  *s = r == CUDA_ERROR_INVALID_VALUE     ? "CUDA_ERROR_INVALID_VALUE"
       : r == CUDA_ERROR_ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS"
                                         : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult fake_get_error_string(CUresult, const char** s) {
  *s = "reported by the fake driver of the tests";
  return CUDA_SUCCESS;
}
// CUDA graphs are not simulated: `run --bench --graphs` reports the driver's refusal.
CUresult fake_stream_begin_capture(CUstream, CUstreamCaptureMode) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_stream_end_capture(CUstream, CUgraph*) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_graph_instantiate(CUgraphExec*, CUgraph, unsigned long long) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_graph_launch(CUgraphExec, CUstream) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_graph_destroy(CUgraph) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult fake_graph_exec_destroy(CUgraphExec) { return CUDA_ERROR_NOT_SUPPORTED; }

struct Entry {
  const char* symbol;
  void* fn;
};

// Each fake has exactly the signature of the header's declaration the plugin types its pointer after.
#define FAKE_ENTRY(symbol, declared, fake)                                         \
  static_assert(std::is_same_v<decltype(&::declared), decltype(&fake)>, symbol); \
  entries.push_back(Entry{symbol, reinterpret_cast<void*>(&fake)});

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = [] {
    std::vector<Entry> entries;
    FAKE_ENTRY("cuInit", cuInit, fake_init)
    FAKE_ENTRY("cuDeviceGet", cuDeviceGet, fake_device_get)
    FAKE_ENTRY("cuDeviceGetCount", cuDeviceGetCount, fake_device_get_count)
    FAKE_ENTRY("cuDeviceGetName", cuDeviceGetName, fake_device_get_name)
    FAKE_ENTRY("cuDeviceGetAttribute", cuDeviceGetAttribute, fake_device_get_attribute)
    FAKE_ENTRY("cuDeviceTotalMem", cuDeviceTotalMem, fake_device_total_mem)
    FAKE_ENTRY("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, fake_primary_ctx_retain)
    FAKE_ENTRY("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease, fake_primary_ctx_release)
    FAKE_ENTRY("cuCtxSetCurrent", cuCtxSetCurrent, fake_ctx_set_current)
    FAKE_ENTRY("cuModuleLoadData", cuModuleLoadData, fake_module_load_data)
    FAKE_ENTRY("cuModuleUnload", cuModuleUnload, fake_module_unload)
    FAKE_ENTRY("cuModuleGetFunction", cuModuleGetFunction, fake_module_get_function)
    FAKE_ENTRY("cuFuncSetAttribute", cuFuncSetAttribute, fake_func_set_attribute)
    FAKE_ENTRY("cuFuncGetAttribute", cuFuncGetAttribute, fake_func_get_attribute)
    FAKE_ENTRY("cuLaunchKernel", cuLaunchKernel, fake_launch_kernel)
    FAKE_ENTRY("cuLaunchKernelEx", cuLaunchKernelEx, fake_launch_kernel_ex)
    FAKE_ENTRY("cuTensorMapEncodeTiled", cuTensorMapEncodeTiled, fake_tensor_map_encode_tiled)
    FAKE_ENTRY("cuMemAlloc", cuMemAlloc, fake_mem_alloc)
    FAKE_ENTRY("cuMemFree", cuMemFree, fake_mem_free)
    FAKE_ENTRY("cuMemcpyHtoD", cuMemcpyHtoD, fake_memcpy_htod)
    FAKE_ENTRY("cuMemcpyDtoH", cuMemcpyDtoH, fake_memcpy_dtoh)
    FAKE_ENTRY("cuMemsetD8", cuMemsetD8, fake_memset_d8)
    FAKE_ENTRY("cuMemsetD8Async", cuMemsetD8Async, fake_memset_d8_async)
    FAKE_ENTRY("cuStreamCreate", cuStreamCreate, fake_stream_create)
    FAKE_ENTRY("cuStreamDestroy", cuStreamDestroy, fake_stream_destroy)
    FAKE_ENTRY("cuStreamSynchronize", cuStreamSynchronize, fake_stream_synchronize)
    FAKE_ENTRY("cuEventCreate", cuEventCreate, fake_event_create)
    FAKE_ENTRY("cuEventRecord", cuEventRecord, fake_event_record)
    FAKE_ENTRY("cuEventSynchronize", cuEventSynchronize, fake_event_synchronize)
    FAKE_ENTRY("cuEventElapsedTime", cuEventElapsedTime, fake_event_elapsed_time)
    FAKE_ENTRY("cuEventDestroy", cuEventDestroy, fake_event_destroy)
    FAKE_ENTRY("cuGetErrorName", cuGetErrorName, fake_get_error_name)
    FAKE_ENTRY("cuGetErrorString", cuGetErrorString, fake_get_error_string)
    FAKE_ENTRY("cuStreamBeginCapture", cuStreamBeginCapture, fake_stream_begin_capture)
    FAKE_ENTRY("cuStreamEndCapture", cuStreamEndCapture, fake_stream_end_capture)
    FAKE_ENTRY("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags, fake_graph_instantiate)
    FAKE_ENTRY("cuGraphLaunch", cuGraphLaunch, fake_graph_launch)
    FAKE_ENTRY("cuGraphDestroy", cuGraphDestroy, fake_graph_destroy)
    FAKE_ENTRY("cuGraphExecDestroy", cuGraphExecDestroy, fake_graph_exec_destroy)
    return entries;
  }();
  return t;
}

// At exit: everything released.
__attribute__((destructor)) void check_released() {
  State& st = state();
  if (!st.initialized) return;
  if (!st.allocations.empty()) violation(std::to_string(st.allocations.size()) + " allocations never freed");
  if (!st.modules.empty()) violation(std::to_string(st.modules.size()) + " modules never unloaded");
  if (!st.streams.empty()) violation(std::to_string(st.streams.size()) + " streams never destroyed");
  if (!st.events.empty()) violation(std::to_string(st.events.size()) + " events never destroyed");
  if (st.ctx_retains != 0) violation("the primary context was retained " + std::to_string(st.ctx_retains) + " more times than released");
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(const char* symbol, void** fn, int, cuuint64_t,
                                                                   CUdriverProcAddressQueryResult* status) {
  for (const Entry& e : table())
    if (std::strcmp(e.symbol, symbol) == 0) {
      *fn = e.fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *fn = nullptr;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

}  // extern "C"

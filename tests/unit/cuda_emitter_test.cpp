// Tests of the cuda plugin: the emit_cuda pass on hand-built Kernel IR (exact source text of small
// kernels, dtype conversions, floor division, literals, vector accesses, shuffles, errors naming
// the node and statement, determinism; TMA copies and mbarriers as sm_90 PTX, checked on the
// simulator first), the cuda target's "no driver" answer, and NVRTC compiles
// of every emitted kernel for sm_90 and sm_80 (skipped with a reason when the CUDA toolkit is
// absent) — for the hand-built kernels here and, once the default pipeline reaches Kernel IR, for
// every program of the differential corpus.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/built_plugins.h"
#include "support/nvrtc_check.h"
#include "tessera/eval/tensor_value.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/graph.h"
#include "tessera/ir/parser.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/target.h"


namespace tessera {
namespace {

Expr v(const char* name) { return Expr::var(name); }
Expr i(int64_t value) { return Expr::int_(value); }
Expr f(double value) { return Expr::float_(value); }

// A graph of program inputs and Kernel IR nodes, built statement by statement.
struct KernelGraph {
  Graph g;
  KernelGraph& input(const std::string& id, Shape shape, DType dt = DType::F32) {
    g.add(id, std::make_unique<InputOp>(), {}, TensorType{std::move(shape), dt});
    return *this;
  }
  KernelGraph& kernel(const std::string& id, std::vector<std::string> inputs, TensorType type, std::string name,
                      std::vector<int64_t> grid, std::vector<int64_t> block, Body body) {
    auto op = std::make_unique<KernelOp>();
    op->name = std::move(name);
    op->grid = std::move(grid);
    op->block = std::move(block);
    op->body = std::move(body);
    g.add(id, std::move(op), std::move(inputs), std::move(type));
    g.outputs() = {id};
    return *this;
  }
};

TensorType f32(Shape s) { return TensorType{std::move(s), DType::F32}; }

std::vector<std::string> arg_names(const CudaOp& op) {
  std::vector<std::string> names;
  for (const KernelParam& p : op.params) names.push_back(p.name);
  return names;
}

// relu(x + bias) over 1000 elements, one thread each, with a tail guard.
Graph elementwise_kernel() {
  KernelGraph k;
  k.input("x", {1000}).input("bias", {1000});
  k.kernel("relu", {"x", "bias"}, f32({1000}), "k_relu", {4, 1, 1}, {256, 1, 1},
           {Let{"a0", v("blockIdx.x") * 256 + v("threadIdx.x")},
            Cond{v("a0") < i(1000),
                 {Load{"in0", "x", {v("a0")}}, Load{"in1", "bias", {v("a0")}},
                  Assign{"v0", ElementwiseFn::Add, {v("in0"), v("in1")}}, Assign{"v1", ElementwiseFn::Relu, {v("v0")}},
                  Write{"relu", {v("a0")}, v("v1")}},
                 {}}});
  return std::move(k.g);
}

// The seed's RMSNorm kernel: the row staged through shared memory with cp.async, a strided
// sum of squares, a shared-memory tree reduction, then the scaled row.
Graph rms_norm_kernel() {
  KernelGraph k;
  k.input("x", {1, 32, 2048}).input("p_weight", {2048});
  k.kernel("rms_norm", {"x", "p_weight"}, f32({1, 32, 2048}), "k_rms_norm_reduce", {32, 1, 1}, {256, 1, 1},
           {Smem{"x_smem", DType::F32, {2048}},
            Smem{"acc0_smem", DType::F32, {256}},
            Let{"a0", v("threadIdx.x")},
            Let{"a1", v("blockIdx.x")},
            StridedLoop{"a2", v("a0"), i(2048), i(256), LoopRole::Free, 0,
                        {CpAsyncCopy{"x_smem", {v("a2")}, "x", {i(0), v("a1"), v("a2")}, 4}}},
            CpAsyncCommit{},
            CpAsyncWait{0},
            Sync{},
            Init{"acc0", f(0.0)},
            StridedLoop{"a3", v("a0"), i(2048), i(256), LoopRole::Reduce, 0,
                        {Load{"in0", "x_smem", {v("a3")}}, Assign{"v0", ElementwiseFn::Mul, {v("in0"), v("in0")}},
                         Accum{"acc0", CombineFn::Add, v("v0")}}},
            Write{"acc0_smem", {v("a0")}, v("acc0")},
            Sync{},
            TreeHalve{"acc0_smem", v("a0"), 256, CombineFn::Add},
            Load{"in1", "acc0_smem", {i(0)}},
            Assign{"v1", ElementwiseFn::Div, {v("in1"), f(2048.0)}},
            Assign{"v2", ElementwiseFn::Add, {v("v1"), f(1e-06)}},
            Assign{"v3", ElementwiseFn::Rsqrt, {v("v2")}},
            StridedLoop{"a4", v("a0"), i(2048), i(256), LoopRole::Free, 0,
                        {Load{"in2", "x_smem", {v("a4")}}, Load{"in3", "p_weight", {v("a4")}},
                         Assign{"v4", ElementwiseFn::Mul, {v("in2"), v("v3")}}, Assign{"v5", ElementwiseFn::Mul, {v("v4"), v("in3")}},
                         Write{"rms_norm", {i(0), v("a1"), v("a4")}, v("v5")}}}});
  return std::move(k.g);
}

// amax over 1000 elements by one warp: strided partial maxima, then every shuffle mode.
Graph warp_kernel() {
  KernelGraph k;
  k.input("x", {1000});
  k.kernel("amax", {"x"}, f32({4}), "k_amax_reduce", {1, 1, 1}, {32, 1, 1},
           {Let{"a0", v("threadIdx.x") % 32},
            Init{"acc0", f(-INFINITY)},
            StridedLoop{"a1", v("a0"), i(1000), i(32), LoopRole::Reduce, 0,
                        {Load{"in0", "x", {v("a1")}}, Accum{"acc0", CombineFn::Max, v("in0")}}},
            Loop{"a2", i(0), i(5), LoopRole::Reduce, 5,
                 {WarpShuffle{"v0", v("acc0"), ShuffleMode::Xor, 16, 32}, Accum{"acc0", CombineFn::Max, v("v0")}}},
            WarpShuffle{"v1", v("acc0"), ShuffleMode::Down, 1, 32},
            WarpShuffle{"v2", v("acc0"), ShuffleMode::Up, 2, 16},
            WarpShuffle{"v3", v("acc0"), ShuffleMode::Idx, 0, 32},
            Cond{v("a0") < i(4), {Write{"amax", {v("a0")}, v("v3")}}, {Write{"amax", {i(0)}, v("v3")}}}});
  return std::move(k.g);
}

// Every buffer dtype: f16 and bf16 loads, a bool mask, an i64 index source, an f16 output.
Graph dtype_kernel() {
  KernelGraph k;
  k.input("h", {64}, DType::F16).input("b", {64}, DType::BF16).input("m", {64}, DType::Bool).input("ids", {64}, DType::I64);
  k.kernel("out", {"h", "b", "m", "ids"}, TensorType{{64}, DType::F16}, "k_out", {1, 1, 1}, {64, 1, 1},
           {Let{"a0", v("threadIdx.x")},
            Load{"in0", "h", {v("a0")}}, Load{"in1", "b", {v("a0")}}, Load{"in2", "m", {v("a0")}},
            Load{"in3", "ids", {v("a0")}},
            Load{"in4", "h", {v("in3")}},
            Assign{"v0", ElementwiseFn::Where, {v("in2"), v("in0"), v("in1")}},
            Assign{"v1", ElementwiseFn::Add, {v("v0"), v("in4")}},
            Write{"out", {v("a0")}, v("v1")}});
  return std::move(k.g);
}

// Index arithmetic that may go negative (floor semantics) next to arithmetic that cannot.
Graph floor_kernel() {
  KernelGraph k;
  k.input("x", {64});
  k.kernel("y", {"x"}, f32({64}), "k_y", {1, 1, 1}, {64, 1, 1},
           {Let{"a0", v("threadIdx.x")},
            Let{"a1", v("a0") - 3},
            Let{"a2", v("a1") / 4 + v("a1") % 4},
            Let{"a3", v("a0") / 4 + v("a0") % 4},
            Load{"in0", "x", {(v("a2") + 64) % 64}},
            Select{"v0", v("a3") < v("a2"), v("in0"), f(INFINITY)},
            Assign{"v1", ElementwiseFn::Maximum, {v("v0"), f(NAN)}},
            Assign{"v2", ElementwiseFn::Mul, {v("v1"), v("a1")}},
            Assign{"v3", ElementwiseFn::Div, {i(1), i(3)}},
            Assign{"v4", ElementwiseFn::Add, {v("v2"), v("v3")}},
            Write{"y", {v("a0")}, v("v4")}});
  return std::move(k.g);
}

// float4 / float2 accesses on f32 buffers (global and shared), scalar ones on f16.
Graph vector_kernel() {
  KernelGraph k;
  k.input("x", {8, 256}).input("h", {8, 256}, DType::F16);
  k.kernel("y", {"x", "h"}, f32({8, 256}), "k_y", {8, 1, 1}, {64, 1, 1},
           {Smem{"x_smem", DType::F32, {2, 256}},
            Let{"a0", v("threadIdx.x")},
            Let{"a1", v("blockIdx.x")},
            CpAsyncCopy{"x_smem", {i(0), v("a0") * 4}, "x", {v("a1"), v("a0") * 4}, 16},
            CpAsyncCommit{},
            CpAsyncCopy{"x_smem", {i(1), v("a0") * 4}, "x", {v("a1"), v("a0") * 4}, 8},
            CpAsyncCommit{},
            CpAsyncWait{1},
            Sync{},
            VectorLoad{{"in0", "in1", "in2", "in3"}, "x_smem", {i(0), v("a0") * 4}},
            VectorLoad{{"in4", "in5"}, "h", {v("a1"), v("a0") * 4}},
            VectorLoad{{"in6", "in7"}, "x", {v("a1"), v("a0") * 4}},
            VectorStore{"y", {v("a1"), v("a0") * 4}, {v("in0"), v("in1"), v("in4"), v("in5")}},
            CpAsyncWait{0},
            Sync{},
            VectorLoad{{"in8", "in9"}, "x_smem", {i(1), v("a0") * 4}},
            VectorStore{"y", {v("a1"), v("a0") * 4 + 2}, {v("in8"), v("in9")}}});
  return std::move(k.g);
}

struct NamedKernel {
  const char* name;
  std::function<Graph()> build;
};

const std::vector<NamedKernel>& hand_built_kernels() {
  static const std::vector<NamedKernel> kernels = {
      {"elementwise", elementwise_kernel}, {"rms_norm", rms_norm_kernel}, {"warp", warp_kernel},
      {"dtypes", dtype_kernel},            {"floor", floor_kernel},       {"vector", vector_kernel}};
  return kernels;
}

class CudaEmitterTest : public test::BuiltPluginsTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(load_error_.empty()) << load_error_;
    device_ = h100();
    ASSERT_NE(device_, nullptr);
  }

  // Runs emit_cuda on `g` as the pipeline would.
  Status emit(Graph& g) {
    std::unique_ptr<Pass> pass = host_->registry().make_pass("emit_cuda");
    if (!pass) return make_error("pass 'emit_cuda' is not registered");
    PassContext ctx("emit_cuda", "c:001_emit_cuda", pass->knobs(), {}, {}, device_, &diags_);
    return pass->run(g, ctx);
  }

  // The CudaOp emit_cuda makes of the last node of `g`.
  CudaOp emit_last(Graph g) {
    Status s = emit(g);
    EXPECT_TRUE(s) << s.message();
    if (!s) return CudaOp();
    const auto* op = g.nodes().back()->op_as<CudaOp>();
    EXPECT_NE(op, nullptr);
    return op ? *op : CudaOp();
  }

  // The error emit_cuda reports for `g`.
  std::string emit_error(Graph g) {
    Status s = emit(g);
    EXPECT_FALSE(s) << "emit_cuda accepted the kernel";
    return s ? std::string() : s.message();
  }

  const DeviceDesc* device_ = nullptr;
  DiagnosticEngine diags_;
};

TEST_F(CudaEmitterTest, ElementwiseKernelSource) {
  CudaOp op = emit_last(elementwise_kernel());
  EXPECT_EQ(op.name, "k_relu");
  EXPECT_EQ(op.grid, (std::vector<int64_t>{4, 1, 1}));
  EXPECT_EQ(op.block, (std::vector<int64_t>{256, 1, 1}));
  EXPECT_EQ(op.dynamic_smem, 0);
  EXPECT_EQ(arg_names(op), (std::vector<std::string>{"x", "bias", "relu"}));
  EXPECT_EQ(op.source, R"(__device__ __forceinline__ float tessera_relu(float x) {
  return (x > 0.0f || x != x) ? x : 0.0f;
}

extern "C" __global__ __launch_bounds__(256) void k_relu(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ relu) {
  int a0 = (int)blockIdx.x * 256 + (int)threadIdx.x;
  if (a0 < 1000) {
    float in0 = x[a0];
    float in1 = bias[a0];
    float v0 = in0 + in1;
    float v1 = tessera_relu(v0);
    relu[a0] = v1;
  }
}
)");
}

TEST_F(CudaEmitterTest, RmsNormKernelSource) {
  CudaOp op = emit_last(rms_norm_kernel());
  EXPECT_EQ(arg_names(op), (std::vector<std::string>{"x", "p_weight", "rms_norm"}));
  EXPECT_EQ(op.source, R"(extern "C" __global__ __launch_bounds__(256) void k_rms_norm_reduce(const float* __restrict__ x, const float* __restrict__ p_weight, float* __restrict__ rms_norm) {
  __shared__ __align__(16) float x_smem[2048];
  __shared__ __align__(16) float acc0_smem[256];
  int a0 = threadIdx.x;
  int a1 = blockIdx.x;
  for (int a2 = a0; a2 < 2048; a2 += 256) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"((unsigned)__cvta_generic_to_shared(&x_smem[a2])), "l"(&x[a1 * 2048 + a2]) : "memory");
#else
    x_smem[a2] = x[a1 * 2048 + a2];
#endif
  }
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
  __syncthreads();
  float acc0 = 0.0f;
  for (int a3 = a0; a3 < 2048; a3 += 256) {
    float in0 = x_smem[a3];
    float v0 = in0 * in0;
    acc0 += v0;
  }
  acc0_smem[a0] = acc0;
  __syncthreads();
  for (int tessera_s = 128; tessera_s > 0; tessera_s >>= 1) {
    if (a0 < tessera_s) {
      acc0_smem[a0] = acc0_smem[a0] + acc0_smem[a0 + tessera_s];
    }
    __syncthreads();
  }
  float in1 = acc0_smem[0];
  float v1 = in1 / 2048.0f;
  float v2 = v1 + 1e-06f;
  float v3 = rsqrtf(v2);
  for (int a4 = a0; a4 < 2048; a4 += 256) {
    float in2 = x_smem[a4];
    float in3 = p_weight[a4];
    float v4 = in2 * v3;
    float v5 = v4 * in3;
    rms_norm[a1 * 2048 + a4] = v5;
  }
}
)");
}

TEST_F(CudaEmitterTest, WarpShufflesAndNanPropagatingMax) {
  CudaOp op = emit_last(warp_kernel());
  EXPECT_EQ(op.source, R"(#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
// max/min that propagate NaN like torch.maximum and amax (fmaxf would drop it).
__device__ __forceinline__ float tessera_maximum(float a, float b) {
  return (a != a || b != b) ? a + b : fmaxf(a, b);
}

extern "C" __global__ __launch_bounds__(32) void k_amax_reduce(const float* __restrict__ x, float* __restrict__ amax) {
  int a0 = (int)threadIdx.x % 32;
  float acc0 = -INFINITY;
  for (int a1 = a0; a1 < 1000; a1 += 32) {
    float in0 = x[a1];
    acc0 = tessera_maximum(acc0, in0);
  }
  #pragma unroll 5
  for (int a2 = 0; a2 < 5; ++a2) {
    float v0 = __shfl_xor_sync(0xffffffff, acc0, 16, 32);
    acc0 = tessera_maximum(acc0, v0);
  }
  float v1 = __shfl_down_sync(0xffffffff, acc0, 1, 32);
  float v2 = __shfl_up_sync(0xffffffff, acc0, 2, 16);
  float v3 = __shfl_sync(0xffffffff, acc0, 0, 32);
  if (a0 < 4) {
    amax[a0] = v3;
  } else {
    amax[0] = v3;
  }
}
)");
}

TEST_F(CudaEmitterTest, DtypesConvertOnLoadAndStore) {
  CudaOp op = emit_last(dtype_kernel());
  EXPECT_EQ(arg_names(op), (std::vector<std::string>{"h", "b", "m", "ids", "out"}));
  EXPECT_EQ(op.source, R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ __launch_bounds__(64) void k_out(const __half* __restrict__ h, const __nv_bfloat16* __restrict__ b, const bool* __restrict__ m, const long long* __restrict__ ids, __half* __restrict__ out) {
  int a0 = threadIdx.x;
  float in0 = __half2float(h[a0]);
  float in1 = __bfloat162float(b[a0]);
  float in2 = (m[a0] ? 1.0f : 0.0f);
  float in3 = (float)ids[a0];
  float in4 = __half2float(h[(int)in3]);
  float v0 = in2 != 0.0f ? in0 : in1;
  float v1 = v0 + in4;
  out[a0] = __float2half(v1);
}
)");
}

TEST_F(CudaEmitterTest, FloorDivisionOnlyWhereOperandsMayBeNegative) {
  CudaOp op = emit_last(floor_kernel());
  EXPECT_EQ(op.source, R"(#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
// Floor division and modulo (the IR's integer / and %), for operands that may be negative.
__device__ __forceinline__ long long tessera_floordiv(long long a, long long b) {
  long long q = a / b;
  return (q * b != a && (a < 0) != (b < 0)) ? q - 1 : q;
}
__device__ __forceinline__ long long tessera_floormod(long long a, long long b) {
  long long r = a % b;
  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}
// max/min that propagate NaN like torch.maximum and amax (fmaxf would drop it).
__device__ __forceinline__ float tessera_maximum(float a, float b) {
  return (a != a || b != b) ? a + b : fmaxf(a, b);
}

extern "C" __global__ __launch_bounds__(64) void k_y(const float* __restrict__ x, float* __restrict__ y) {
  int a0 = threadIdx.x;
  int a1 = a0 - 3;
  int a2 = tessera_floordiv(a1, 4) + tessera_floormod(a1, 4);
  int a3 = a0 / 4 + a0 % 4;
  float in0 = x[tessera_floormod(a2, 64)];
  float v0 = a3 < a2 ? in0 : INFINITY;
  float v1 = tessera_maximum(v0, NAN);
  float v2 = v1 * (float)a1;
  float v3 = 1.0f / 3.0f;
  float v4 = v2 + v3;
  y[a0] = v4;
}
)");
}

TEST_F(CudaEmitterTest, VectorAccessesAndCpAsyncSizes) {
  CudaOp op = emit_last(vector_kernel());
  EXPECT_EQ(op.source, R"(#include <cuda_fp16.h>

extern "C" __global__ __launch_bounds__(64) void k_y(const float* __restrict__ x, const __half* __restrict__ h, float* __restrict__ y) {
  __shared__ __align__(16) float x_smem[512];  // [2, 256]
  int a0 = threadIdx.x;
  int a1 = blockIdx.x;
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"((unsigned)__cvta_generic_to_shared(&x_smem[a0 * 4])), "l"(&x[a1 * 256 + a0 * 4]) : "memory");
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" :: "r"((unsigned)__cvta_generic_to_shared(&x_smem[a0 * 4 + 256])), "l"(&x[a1 * 256 + a0 * 4]) : "memory");
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
#else
  x_smem[a0 * 4] = x[a1 * 256 + a0 * 4];
  x_smem[a0 * 4 + 1] = x[a1 * 256 + a0 * 4 + 1];
  x_smem[a0 * 4 + 2] = x[a1 * 256 + a0 * 4 + 2];
  x_smem[a0 * 4 + 3] = x[a1 * 256 + a0 * 4 + 3];
  x_smem[a0 * 4 + 256] = x[a1 * 256 + a0 * 4];
  x_smem[a0 * 4 + 257] = x[a1 * 256 + a0 * 4 + 1];
#endif
  __syncthreads();
  float in0, in1, in2, in3;
  {
    const float4 tessera_vec = *reinterpret_cast<const float4*>(&x_smem[a0 * 4]);
    in0 = tessera_vec.x;
    in1 = tessera_vec.y;
    in2 = tessera_vec.z;
    in3 = tessera_vec.w;
  }
  float in4 = __half2float(h[a1 * 256 + a0 * 4]);
  float in5 = __half2float(h[a1 * 256 + a0 * 4 + 1]);
  float in6, in7;
  {
    const float2 tessera_vec = *reinterpret_cast<const float2*>(&x[a1 * 256 + a0 * 4]);
    in6 = tessera_vec.x;
    in7 = tessera_vec.y;
  }
  *reinterpret_cast<float4*>(&y[a1 * 256 + a0 * 4]) = make_float4(in0, in1, in4, in5);
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
  __syncthreads();
  float in8, in9;
  {
    const float2 tessera_vec = *reinterpret_cast<const float2*>(&x_smem[a0 * 4 + 256]);
    in8 = tessera_vec.x;
    in9 = tessera_vec.y;
  }
  *reinterpret_cast<float2*>(&y[a1 * 256 + a0 * 4 + 2]) = make_float2(in8, in9);
}
)");
}

TEST_F(CudaEmitterTest, EmissionIsDeterministicAndIdempotent) {
  for (const NamedKernel& k : hand_built_kernels()) {
    Graph g = k.build();
    ASSERT_TRUE(emit(g)) << k.name;
    Graph again = g;  // already CUDA: a second run leaves it alone
    ASSERT_TRUE(emit(again)) << k.name;
    EXPECT_EQ(g.nodes().back()->op_as<CudaOp>()->source, again.nodes().back()->op_as<CudaOp>()->source) << k.name;
    EXPECT_EQ(emit_last(k.build()).source, g.nodes().back()->op_as<CudaOp>()->source) << k.name;
  }
}

TEST_F(CudaEmitterTest, BufferNamesThatAreNotUsableInCAreRenamed) {
  KernelGraph k;
  k.input("int", {4}).input("v0", {4});
  k.kernel("float", {"int", "v0"}, f32({4}), "k_float", {1, 1, 1}, {4, 1, 1},
           {Let{"a0", v("threadIdx.x")}, Load{"in0", "int", {v("a0")}}, Load{"in1", "v0", {v("a0")}},
            Assign{"v0", ElementwiseFn::Sub, {v("in0"), v("in1")}}, Write{"float", {v("a0")}, v("v0")}});
  CudaOp op = emit_last(std::move(k.g));
  EXPECT_EQ(arg_names(op), (std::vector<std::string>{"int", "v0", "float"}));  // graph names bind the launch
  EXPECT_NE(op.source.find("(const float* __restrict__ buf_int, const float* __restrict__ buf_v0, float* "
                           "__restrict__ buf_float)"),
            std::string::npos)
      << op.source;
  EXPECT_NE(op.source.find("float v0 = in0 - in1;\n  buf_float[a0] = v0;"), std::string::npos) << op.source;
}

// ---- errors ------------------------------------------------------------------------------------

Graph one_statement_kernel(Body body, Shape out_shape = {4}) {
  KernelGraph k;
  k.input("x", {4});
  k.kernel("y", {"x"}, f32(std::move(out_shape)), "k_y", {1, 1, 1}, {4, 1, 1}, std::move(body));
  return std::move(k.g);
}

// A kernel with a tensor-map parameter `tmap_x` over input x (shape `x_shape`) with box `box`.
Graph tma_kernel(Body body, Shape x_shape, std::vector<int64_t> box, SmemSwizzle swizzle = SmemSwizzle::None,
                 Shape out_shape = {4}) {
  KernelGraph k;
  k.input("x", std::move(x_shape));
  k.kernel("y", {"x"}, f32(std::move(out_shape)), "k_y", {1, 1, 1}, {32, 1, 1}, std::move(body));
  KernelParam tmap;
  tmap.name = "tmap_x";
  tmap.kind = ParamKind::TensorMap;
  tmap.tensor_map.buffer = "x";
  tmap.tensor_map.box = std::move(box);
  tmap.tensor_map.swizzle = swizzle;
  k.g.find("y")->op_as<KernelOp>()->params.push_back(tmap);
  return std::move(k.g);
}

TEST_F(CudaEmitterTest, TmaAndMbarrierErrorsNameTheStatement) {
  const Smem smem{"x_smem", DType::F32, {32}, 128};
  const MbarrierInit bar{"bar0", 1, 2};
  const TmaLoad load{"x_smem", {}, "tmap_x", {i(0)}, "bar0", i(0)};
  struct Case {
    Body body;
    const char* message;
    SmemSwizzle swizzle = SmemSwizzle::None;
  };
  TmaLoad unknown_map = load;
  unknown_map.desc = "tmap_w";
  TmaLoad two_coords = load;
  two_coords.coords = {i(0), i(0)};
  TmaLoad into_global = load;
  into_global.dst = "x";
  TmaLoad bad_slot = load;
  bad_slot.barrier_slot = i(2);
  Smem unaligned = smem;
  unaligned.align = 16;
  Smem halves = smem;
  halves.dtype = DType::F16;
  Smem swizzled = smem;
  swizzled.swizzle = SmemSwizzle::B128;
  swizzled.align = 1024;
  const std::vector<Case> cases = {
      {{smem, bar, unknown_map}, "'tmap_w' is not a tensor-map parameter of the kernel"},
      {{smem, bar, two_coords}, "gives 2 coordinates for a box of rank 1"},
      {{smem, bar, into_global}, "'x' is not a declared Smem buffer (TMA copies into shared memory)"},
      {{smem, load}, "'bar0' is not a barrier an MbarrierInit above declared"},
      {{smem, bar, bad_slot}, "barrier slot 2 of 'bar0' is outside its 2 slot(s)"},
      {{unaligned, bar, load}, "'x_smem' is aligned to 16 bytes; a TMA destination needs 128"},
      {{halves, bar, load}, "copies f32 elements into the f16 buffer 'x_smem'"},
      {{smem, bar, load}, "lands the box in the tensor map's 32B swizzle, but 'x_smem' is declared swizzle=none",
       SmemSwizzle::B32},
      {{swizzled, bar, load}, "lands the box in the tensor map's none swizzle, but 'x_smem' is declared swizzle=128B"},
      {{MbarrierInit{"bar0", 0, 1}}, "statement `bar0 = MbarrierInit(count=0)`: count must be in 1..1048575"},
      {{bar, MbarrierArrive{"bar0", i(0), -4}}, "tx must be in 0..1048575"},
      {{Cond{i(1), {bar}, {}}}, "MbarrierInit must be at the top level of the kernel body"},
      {{bar, MbarrierInit{"bar0", 1, 1}}, "buffer 'bar0' is declared twice"},
  };
  for (const Case& c : cases) {
    std::string e = emit_error(tma_kernel(c.body, {64}, {32}, c.swizzle));
    EXPECT_NE(e.find("at node 'y'"), std::string::npos) << e;
    EXPECT_NE(e.find(c.message), std::string::npos) << "expected: " << c.message << "\ngot: " << e;
  }
}

TEST_F(CudaEmitterTest, BadStatementsAreErrorsNamingNodeAndStatement) {
  struct Case {
    Body body;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{Let{"a0", v("threadIdx.x")}, Assign{"v0", ElementwiseFn::Add, {v("a0")}}},
       "statement `v0 = add(a0)`: elementwise function 'add' takes 2 argument(s), got 1"},
      {{Load{"in0", "x", {v("a9")}}}, "statement `in0 = load x[a9]`: 'a9' is not bound here"},
      {{Load{"in0", "x", {i(0), i(0)}}}, "'x' has 1 dimensions but is indexed with 2"},
      {{Load{"in0", "z", {i(0)}}}, "buffer 'z' is neither an input or the output of this node nor a declared Smem"},
      {{Write{"x", {i(0)}, f(1.0)}}, "'x' is an input of this kernel and is read-only"},
      {{Tile{{}, {}}}, "Tile is not a Kernel IR statement (run materialize before emit_cuda)"},
      {{Smem{"s", DType::F32, {16384}}},
       "static shared memory of 65536 bytes exceeds the device's 49152-byte limit"},
      {{Cond{i(1), {Smem{"s", DType::F32, {4}}}, {}}}, "Smem must be at the top level of the body"},
      {{Smem{"s", DType::F32, {4}}, CpAsyncCopy{"s", {i(0)}, "x", {i(0)}, 12}},
       "cp.async copies 4, 8 or 16 bytes, not 12"},
      {{Smem{"s", DType::F32, {4}}, TreeHalve{"s", v("threadIdx.x"), 8, CombineFn::Add}},
       "n=8 is outside the buffer's 4 elements"},
  };
  for (const Case& c : cases) {
    std::string e = emit_error(one_statement_kernel(c.body));
    EXPECT_NE(e.find("at node 'y'"), std::string::npos) << e;
    EXPECT_NE(e.find(c.message), std::string::npos) << "expected: " << c.message << "\ngot: " << e;
  }
}

TEST_F(CudaEmitterTest, NonKernelNodesAreRejected) {
  Graph g;
  g.add("x", std::make_unique<InputOp>(), {}, f32({4}));
  auto loop = std::make_unique<LoopOp>();
  loop->name = "k_y";
  g.add("y", std::move(loop), {"x"}, f32({4}));
  std::string e = emit_error(std::move(g));
  EXPECT_NE(e.find("at node 'y'"), std::string::npos) << e;
  EXPECT_NE(e.find("emit_cuda needs Kernel IR, but this node is loop IR"), std::string::npos) << e;
}

TEST_F(CudaEmitterTest, CudaTargetSaysWhyItCannotRun) {
  std::unique_ptr<Target> target = host_->registry().make_target("cuda");
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->input_dialect(), Dialect::Cuda);
  std::string why;
  if (target->available(&why)) GTEST_SKIP() << "a GPU is present (the runtime is tested in cuda_runtime_test.cpp)";
  EXPECT_NE(why.find("no CUDA driver / GPU found: "), std::string::npos) << why;
  Expected<TargetRun> run = target->execute(Graph(), {}, TargetOptions{});
  ASSERT_FALSE(run);
  EXPECT_NE(run.error().message.find(why), std::string::npos) << run.error().message;
}

// ---- NVRTC -------------------------------------------------------------------------------------

#ifdef TESSERA_HAVE_CUDA
using test::nvrtc_compile;
#endif

// Every CudaOp of `g`, compiled for sm_90 and sm_80.
void expect_compiles(const Graph& g, const std::string& what) {
#ifdef TESSERA_HAVE_CUDA
  for (const Node* n : g.nodes()) {
    const auto* op = n->op_as<CudaOp>();
    if (!op) continue;
    for (const char* arch : {"sm_90", "sm_80"}) {
      std::string failure = nvrtc_compile(*op, arch);
      EXPECT_EQ(failure, "") << what << ", kernel " << op->name;
    }
  }
#else
  (void)g;
  (void)what;
#endif
}

TEST_F(CudaEmitterTest, HandBuiltKernelsCompileWithNvrtc) {
#ifndef TESSERA_HAVE_CUDA
  GTEST_SKIP() << "CUDA toolkit (NVRTC) not found at configure time: emitted kernels are not compiled";
#endif
  for (const NamedKernel& k : hand_built_kernels()) {
    Graph g = k.build();
    ASSERT_TRUE(emit(g)) << k.name;
    expect_compiles(g, k.name);
  }
}

// Every function of the elementwise table and every combine op emits its table spelling (with the
// helpers it calls in the preamble), and the kernel compiles with NVRTC: a table entry whose CUDA
// spelling is wrong fails here, not on a GPU.
TEST_F(CudaEmitterTest, EveryElementwiseFunctionAndCombineOpEmitsAndCompiles) {
  KernelGraph k;
  k.input("x", {256}).input("y", {256}).input("c", {256}, DType::Bool);
  Body body = {Let{"a0", v("threadIdx.x")}, Load{"in0", "x", {v("a0")}}, Load{"in1", "y", {v("a0")}},
               Load{"in2", "c", {v("a0")}, ValueType::scalar(DType::Bool)}, Init{"acc0", f(0.0)}};
  int next = 0;
  auto value = [&] { return "v" + std::to_string(next++); };
  for (const ElementwiseFnInfo& fn : kElementwiseFns) {
    ExprList args;
    if (fn.fn == ElementwiseFn::Where) args = {Expr::value("in2"), Expr::value("in0"), Expr::value("in1")};
    else
      for (size_t a = 0; a < fn.arity; ++a) args.push_back(Expr::value(a == 0 ? "in0" : "in1"));
    const bool is_bool = fn.result == FnResult::Bool;
    std::string result = value();
    body.push_back(Assign{result, fn.fn, args, ValueType::scalar(is_bool ? DType::Bool : DType::F32)});
    if (is_bool) {
      std::string as_float = value();
      body.push_back(Assign{as_float, ElementwiseFn::Cast, {Expr::value(result)}, ValueType::scalar(DType::F32)});
      result = as_float;
    }
    body.push_back(Accum{"acc0", CombineFn::Add, Expr::value(result)});
  }
  for (const CombineFnInfo& c : kCombineFns) body.push_back(Accum{"acc0", c.op, Expr::value("in0")});
  body.push_back(Write{"out", {v("a0")}, Expr::value("acc0")});
  k.kernel("out", {"x", "y", "c"}, f32({256}), "k_every_fn", {1, 1, 1}, {256, 1, 1}, body);
  Status s = emit(k.g);
  ASSERT_TRUE(s) << s.message();
  const auto* op = k.g.nodes().back()->op_as<CudaOp>();
  ASSERT_NE(op, nullptr);
  for (const char* helper : {"tessera_relu(float", "tessera_maximum(float", "tessera_minimum(float"})
    EXPECT_NE(op->source.find(helper), std::string::npos) << helper << " is not defined:\n" << op->source;
  EXPECT_NE(op->source.find("acc0 = tessera_maximum(acc0, in0);"), std::string::npos) << op->source;
  expect_compiles(k.g, "every elementwise function");
}

// The same for f64 values (the f64 spellings: double math functions, the helpers' _f64 variants,
// double literals) and for integer values (the integer helpers of floor, floor_divide and
// remainder), with a literal operand in each binary function and an accumulator of that type.
TEST_F(CudaEmitterTest, EveryElementwiseFunctionEmitsAndCompilesInF64AndIntegers) {
  for (DType t : {DType::F64, DType::I32, DType::I64}) {
    const std::string name(dtype_short_name(t));
    KernelGraph k;
    k.input("x", {256}, t).input("y", {256}, t).input("c", {256}, DType::Bool);
    const ValueType vt = ValueType::scalar(t);
    const Expr literal = t == DType::F64 ? f(0.1) : Expr::int_(3);
    Body body = {Let{"a0", v("threadIdx.x")}, Load{"in0", "x", {v("a0")}, vt}, Load{"in1", "y", {v("a0")}, vt},
                 Load{"in2", "c", {v("a0")}, ValueType::scalar(DType::Bool)}, Init{"acc0", literal, vt}};
    int next = 0;
    auto value = [&] { return "v" + std::to_string(next++); };
    for (const ElementwiseFnInfo& fn : kElementwiseFns) {
      ExprList args;
      if (fn.fn == ElementwiseFn::Where) args = {Expr::value("in2"), Expr::value("in0"), literal};
      else
        for (size_t a = 0; a < fn.arity; ++a) args.push_back(a == 0 ? Expr::value("in0") : Expr::value("in1"));
      if (fn.arity == 2) args[1] = literal;
      const bool is_bool = fn.result == FnResult::Bool;
      std::string result = value();
      body.push_back(Assign{result, fn.fn, args, ValueType::scalar(is_bool ? DType::Bool : t)});
      if (is_bool) {
        std::string converted = value();
        body.push_back(Assign{converted, ElementwiseFn::Cast, {Expr::value(result)}, vt});
        result = converted;
      }
      body.push_back(Accum{"acc0", CombineFn::Add, Expr::value(result)});
    }
    for (const CombineFnInfo& c : kCombineFns) body.push_back(Accum{"acc0", c.op, Expr::value("in0")});
    body.push_back(Write{"out", {v("a0")}, Expr::value("acc0")});
    k.kernel("out", {"x", "y", "c"}, TensorType{{256}, t}, "k_every_fn_" + name, {1, 1, 1}, {256, 1, 1}, body);
    Status s = emit(k.g);
    ASSERT_TRUE(s) << name << ": " << s.message();
    const auto* op = k.g.nodes().back()->op_as<CudaOp>();
    ASSERT_NE(op, nullptr);
    if (t == DType::F64) {
      for (const char* text : {"double in0 = x[a0];", "exp(in0)", "tessera_floor_divide_f64(in0, 0.10000000000000001)",
                               "acc0 = tessera_maximum_f64(acc0, in0);"})
        EXPECT_NE(op->source.find(text), std::string::npos) << text << " is missing:\n" << op->source;
      EXPECT_EQ(op->source.find("expf("), std::string::npos) << "f64 arithmetic in float:\n" << op->source;
    } else {
      EXPECT_NE(op->source.find("tessera_floor_divide(in0, 3)"), std::string::npos) << op->source;
      // Integer accumulators combine as integers: a float operand would round int64 sums past 2^24
      // (found on the GPU: Int32SumIsExact was off by thousands).
      for (const char* text : {"acc0 += in0;", "acc0 *= in0;", "acc0 = max(acc0, in0);", "acc0 = min(acc0, in0);"})
        EXPECT_NE(op->source.find(text), std::string::npos) << text << " is missing:\n" << op->source;
      EXPECT_EQ(op->source.find("acc0 += (float)"), std::string::npos) << "integer accumulation in float:\n" << op->source;
    }
    expect_compiles(k.g, "every elementwise function in " + name);
  }
}

// ---- TMA and mbarriers -------------------------------------------------------------------------

// Two 8 x 32 f32 boxes of x (rows 0..7 and 8..15) in the 128-byte swizzle, each in its slot of a
// two-slot ring tracked by its own barrier: y[r, c] = x[r, c] + x[r + 8, c], the loads undoing the
// swizzle (the chunk q of row r lands at chunk q ^ r, tests/unit/sim_tma_test.cpp).
const char* kSwizzledRing = R"(x: (16, 32) float32

kernel k_y  grid=(1, 1, 1) block=(32, 1, 1)  inputs: x  outputs: y: (8, 32) float32  params: tmap_x: tensor_map(x, box=(8, 32), swizzle=128B)
  Smem x_smem: f32[2, 8, 32] slots=2 align=1024 swizzle=128B
  bar = MbarrierInit(count=1, slots=2)
  a0 = threadIdx.x
  if a0 == 0:
    for k in 0..2:
      MbarrierArrive(bar[k], tx=1024)
      TmaLoad(x_smem[k, 0, 0], tmap_x, coords=(k * 8, 0), mbar=bar[k])
  for k in 0..2:
    MbarrierWait(bar[k], phase=0)
  for a1 in 0..8:
    in0 = load x_smem[0, a1, (a0 / 4 ^ a1 % 8) * 4 + a0 % 4]
    in1 = load x_smem[1, a1, (a0 / 4 ^ a1 % 8) * 4 + a0 % 4]
    v0 = add(in0, in1)
    y[a1, a0] = v0

return y
)";

TEST_F(CudaEmitterTest, TmaLoadsAndMbarriersEmitSm90PtxThatNvrtcCompiles) {
  Expected<Graph> parsed = parse_graph(kSwizzledRing, "<swizzled ring>");
  ASSERT_TRUE(parsed) << parsed.error().render();
  // The kernel is right: the simulator (which checks phases, transaction bytes and the swizzle)
  // computes x[r] + x[r + 8].
  std::unique_ptr<Target> sim = host_->registry().make_target("sim");
  ASSERT_NE(sim, nullptr);
  TensorValue x = TensorValue::filled(TensorType{{16, 32}, DType::F32});
  for (size_t e = 0; e < x.data.size(); ++e) x.data[e] = static_cast<double>(e);
  Expected<TargetRun> run = sim->execute(*parsed, {{"x", x}}, TargetOptions{});
  ASSERT_TRUE(run) << run.error().render();
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 32; ++c)
      ASSERT_EQ(run->outputs.at("y").data[static_cast<size_t>(r * 32 + c)], 2.0 * (r * 32 + c) + 256) << r << ", " << c;

  Graph g = std::move(*parsed);
  Status s = emit(g);
  ASSERT_TRUE(s) << s.message();
  const auto* op = g.find("y")->op_as<CudaOp>();
  ASSERT_NE(op, nullptr);
  const std::string& src = op->source;
  for (const char* text : {
           "void k_y(const float* __restrict__ x, float* __restrict__ y, const __grid_constant__ CUtensorMap tmap_x) {\n",
           "  __shared__ __align__(1024) float x_smem[512];  // [2, 8, 32]\n"
           "  __shared__ __align__(8) unsigned long long bar[2];\n"
           "#if __CUDA_ARCH__ >= 900\n"
           "  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {\n"
           "    for (int tessera_b = 0; tessera_b < 2; ++tessera_b)\n"
           "      asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: "
           "\"r\"((unsigned)__cvta_generic_to_shared(&bar[tessera_b])), \"r\"(1) : \"memory\");\n"
           "    asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
           "    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
           "  }\n"
           "#else\n"
           "  __trap();  // TMA and mbarriers need sm_90\n"
           "#endif\n"
           "  __syncthreads();\n",
           // The arrival announcing the box's bytes, then the copy: coordinates innermost first.
           "      asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: "
           "\"r\"((unsigned)__cvta_generic_to_shared(&bar[k])), \"r\"(1024) : \"memory\");\n",
           "      asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
           "[%0], [%1, {%2, %3}], [%4];\" :: \"r\"((unsigned)__cvta_generic_to_shared(&x_smem[k * 256])), "
           "\"l\"(&tmap_x), \"r\"(0), \"r\"((int)(k * 8)), \"r\"((unsigned)__cvta_generic_to_shared(&bar[k])) : "
           "\"memory\");\n",
           "#if __CUDA_ARCH__ >= 900\n"
           "    for (unsigned tessera_done = 0; !tessera_done;) {\n"
           "      asm volatile(\"{\\n .reg .pred p;\\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n "
           "selp.u32 %0, 1, 0, p;\\n}\\n\" : \"=r\"(tessera_done) : "
           "\"r\"((unsigned)__cvta_generic_to_shared(&bar[k])), \"r\"(0) : \"memory\");\n"
           "    }\n"
           "#else\n"
           "    __trap();  // TMA and mbarriers need sm_90\n"
           "#endif\n"})
    EXPECT_NE(src.find(text), std::string::npos) << "missing:\n" << text << "\nin:\n" << src;
  EXPECT_EQ(src.find("not supported"), std::string::npos) << src;
  expect_compiles(g, "the swizzled TMA ring");
}

// Every box rank (1..5) gives its cp.async.bulk.tensor.<rank>d with the coordinates innermost first;
// a plain arrive (tx=0) and a phase that is an expression; Smem in dynamic shared memory next to
// the static barriers.
TEST_F(CudaEmitterTest, TmaLoadsOfEveryRankAndDynamicSharedMemoryCompile) {
  for (size_t rank = 1; rank <= 5; ++rank) {
    Shape x_shape(rank - 1, 2);
    x_shape.push_back(64);
    std::vector<int64_t> box(rank - 1, 1);
    box.push_back(64);
    ExprList coords;
    for (size_t d = 0; d < rank; ++d) coords.push_back(Expr::int_(static_cast<int64_t>(10 + d)));
    Graph g = tma_kernel({Smem{"x_smem", DType::F32, {64}, 128},
                          MbarrierInit{"bar0", 2},
                          Let{"a0", v("threadIdx.x")},
                          Cond{v("a0") < i(1),
                               {MbarrierArrive{"bar0", i(0), 256},
                                TmaLoad{"x_smem", {}, "tmap_x", coords, "bar0", i(0)},
                                MbarrierArrive{"bar0", i(0), 0}},
                               {}},
                          MbarrierWait{"bar0", i(0), v("a0") / 64 % 2},
                          Load{"in0", "x_smem", {v("a0")}},
                          Write{"y", {v("a0")}, v("in0")}},
                         x_shape, box, SmemSwizzle::None, {32});
    if (rank == 2) g.find("y")->op_as<KernelOp>()->dynamic_smem = 256;
    Status s = emit(g);
    ASSERT_TRUE(s) << rank << ": " << s.message();
    const std::string& src = g.find("y")->op_as<CudaOp>()->source;
    std::string braces, operands;
    for (size_t d = 0; d < rank; ++d) {
      braces += (d ? ", %" : "%") + std::to_string(2 + d);
      operands += ", \"r\"(" + std::to_string(10 + rank - 1 - d) + ")";  // innermost first
    }
    const std::string copy = "cp.async.bulk.tensor." + std::to_string(rank) +
                             "d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {" + braces + "}], [%" +
                             std::to_string(2 + rank) + "];\" :: \"r\"((unsigned)__cvta_generic_to_shared(&x_smem[0])), "
                             "\"l\"(&tmap_x)" + operands + ", \"r\"(";
    EXPECT_NE(src.find(copy), std::string::npos) << copy << "\n" << src;
    EXPECT_NE(src.find("mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"((unsigned)__cvta_generic_to_shared(&bar0[0])), "
                       "\"r\"(2)"),
              std::string::npos)
        << src;
    EXPECT_NE(src.find("\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"((unsigned)__cvta_generic_to_shared(&bar0[0])) "
                       ": \"memory\");"),
              std::string::npos)
        << src;
    EXPECT_NE(src.find("\"r\"((unsigned)(a0 / 64 % 2))"), std::string::npos) << src;
    if (rank == 2) {
      EXPECT_NE(src.find("extern __shared__ __align__(128) unsigned char tessera_smem[];"), std::string::npos) << src;
      EXPECT_NE(src.find("__shared__ __align__(8) unsigned long long bar0[1];"), std::string::npos) << src;
    }
    expect_compiles(g, "a TMA box of rank " + std::to_string(rank));
  }
}

// The differential corpus through the tile passes, materialize and emit_cuda, then NVRTC.
// Every corpus kernel, under the default pipeline, sampled schedules and half precision, compiles
// with NVRTC for sm_80 and sm_90 through the cuda target: tests/unit/nvrtc_compiler_test.cpp.

}  // namespace
}  // namespace tessera

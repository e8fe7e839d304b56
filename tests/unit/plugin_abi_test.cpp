// The plugin ABI guard: a plugin is accepted when its api_version equals the host's
// kPluginApiVersion, so every change that alters what a plugin compiled against sees — a class
// layout, a virtual table, an inline function, the statement or expression kind lists — must come
// with a version bump. This test makes forgetting the bump fail CI.
//
// The signature has two parts:
//   * a readable table of sizeof/alignof of the public types and the kind lists (so a failure shows
//     *what* changed), and
//   * a hash of the public headers' declarations with comments and whitespace removed (so changes
//     sizeof cannot see, such as a new virtual function or a changed inline body, count too).
// kAbiHistory below is append-only: one entry per API version. When the test fails, bump
// kPluginApiVersion in framework/include/tessera/plugin/plugin.h and append the printed entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/eval/reference_evaluator.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/knob.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/pass/pipeline.h"
#include "tessera/pass/runner.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/device.h"
#include "tessera/target/kernel_cost.h"
#include "tessera/target/kernel_report.h"
#include "tessera/target/target.h"
#include "tessera/tune/choice_source.h"

namespace fs = std::filesystem;

namespace {

struct AbiRecord {
  uint32_t version;
  const char* layout_hash;   // hash of the readable layout table
  const char* headers_hash;  // hash of the normalized public headers
};

// Append-only. Never edit an existing entry: bump the version and add a new one.
constexpr AbiRecord kAbiHistory[] = {
    {2, "f89a0ab52e2713bb", "9c59abea85e1fc6b"},
    {3, "bdcca7f54346df88", "39470b71ab756399"},  // the elementwise function table (ir/elementwise_fn.h); name queries (stmt.h); target progress and KernelCost::work
    {4, "bdcca7f54346df88", "b04337174296ddd0"},  // NodeInputs::in_graph() (ir/graph.h)
    {5, "6f47386201edba36", "36cdc3ec2a47ea37"},  // DType::F64 (ir/type.h); floor, floor_divide, remainder and is_integer_division_by_zero (ir/elementwise_fn.h); ConstantOp::checkpoint (ir/op.h), constant_data_windows (eval/constant_data.h), graph JSON version 3
    {6, "6f47386201edba36", "791c087e8c5bfdb1"},  // kExactIntegerLimit and inexact_integer_reason (eval/tensor_value.h); TargetOptions members all initialized
    {7, "2861aed7961d1956", "e31340c04f44df23"},  // BenchOptions::outputs, BenchReport::graphs_unavailable and outputs; add_constants / given_constant / constant_value (eval/constant_data.h); write_file_atomically (support/atomic_file.h); Node::id() private with set_id; verify_graph_index; TESSERA_INTERNAL_CHECK / TESSERA_UNREACHABLE (support/internal_check.h); expr_kind_traits (ir/expr.h); StmtKindTraits::carries_type; FieldRole::UseAcc / UseTensorMap and field_role_traits; TilePass (pass/pass.h); own_used_names / own_bound_names (ir/stmt.h)
    {8, "2ea90deed684bb1d", "6b5f93a27bd8b5d5"},  // ir/uniformity.h (UniformityScope, first_divergent_collective); first_stmt_outside and home_dialect_name (ir/stmt.h); typed op names: Assign::op and ElementwiseOp::fn are ElementwiseFn, Accum/Combine/TreeHalve::op and ReduceOp::fn are CombineFn (StmtEnumTable for both, reduction_name / parse_reduction, check_arity); dtype_cuda_name (ir/type.h); source_loc_at (support/diagnostics.h); OutputTolerance, dtype_tolerance, output_tolerance and compare_output with a tolerance (eval/reference_evaluator.h); FrontendOptions::warnings (frontend/frontend.h)
    {9, "cee55c94e88dada1", "d088f44db6dd6fa8"},  // ir/contraction.h (Contraction, find_contractions, contraction_body/loop, replace_contraction_loop); ir/stmt_effects.h (written_buffers, modified_names, binding_counts, contains_synchronization, computes_value_only); target/kernel_report.h (KernelReport, KernelBound, BufferTraffic, FlopCount); DeviceDesc::max_blocks_per_sm, smem_reserved_per_block, reg_alloc_unit; bitwise ExprKinds Xor, BitAnd, BitOr, Shl, Shr with ExprKindTraits::bitwise, is_bitwise_kind, kShiftWidth, eval_bitwise (ir/expr.h); SmemSwizzle (ir/stmt_enums.h); Smem/Stage align and swizzle, kSmemAlign, kSmemMaxAlign (ir/stmt.h); smem_layout_align, smem_footprint_bytes (ir/kernel_abi.h)
    {10, "bc6ffbda88dc6453", "a5b9f75df176d92"},  // combine_identity, innermost_iterations, Stage slots and slot, Smem slots (ir/stmt.h): ring-buffered shared slabs; read_buffers (ir/stmt_effects.h); split_tile_kernel (pass/split_kernel.h); kLargeKernelBytes (target/kernel_report.h)
    {11, "86a7761f074d4ab6", "bdd15c1b7554f2e"},  // ir/integer_evaluation.h (eval_integer, eval_integer_binary, floor_div); keyed decisions: tune/decision.h (DecisionKey, Decision, DecisionPoint, hash_mix, hash_text, hash_hex), ChoiceRequest by key and marker, RandomChoiceSource::draw; pass/kernel_identity.h (kernel_structural_hash); tune/tuner.h (TrialSpec, TrialResult, TrialRunner (run, estimate), TuneTask, TuneOptions, TuneBest, TaskSearch, Tuner::start); tune/measurer.h; tune/tuning_db.h (TuningKey, TuningRecord, TuningDb); tune/cost_model_measurer.h, target/cost_model.h, target/cost_model_calibration.h, target/warp_access.h; DeviceDesc::clock_mhz; RunnerOptions::start_after; PassContext key state
    {12, "b135268ff84a58af", "59424739f2900e54"},  // ContractionOperand::rank, streams_rows_of_b and kRowStreamMinK (ir/contraction.h): GEMVs that stream rows of B; KernelReport::busiest_thread_flops (target/kernel_report.h); stage_rows_group (ir/stmt.h)
    {13, "b135268ff84a58af", "87578bc6bf5bc74c"},  // TMA end to end: TmaLoad dst_index and barrier_slot, MbarrierInit slots, barrier slots on Arrive/Wait (ir/stmt.h); TensorMapSpec swizzle, oob_fill, element_strides (ir/kernel_abi.h); stage_tma_box (ir/stmt.h); swizzle_span_bytes, swizzle_byte_offset (ir/stmt_enums.h); arch_number (target/device.h)
    {14, "b135268ff84a58af", "bd8373faf566e209"},  // pin_knob (pass/pipeline.h): --knob PASS.KNOB=VALUE
    {15, "b135268ff84a58af", "c42c217fdc7c7d25"},  // stage_tma_boxes and TmaBoxes (ir/stmt.h) replace stage_tma_box: a slab of several TMA boxes
    {16, "8c817bf1b8dd94ad", "8499b937f48aa4e6"},  // SlabDim::stride and column-block TMA slabs (TmaBoxes source_step, slab_step; ir/stmt.h); the staged-slab bank model with vector widths (target/staged_access.h: StagedLoad, staged_vector_width); the SlabMap statement kind (Tile IR); StageTransportSwitch (pass/stage_transport.h); mentions_var (ir/expr.h), fresh_name (ir/stmt.h)
    {17, "e9a7923e0581527b", "35d19bab335fa460"},  // row loops, a loop's outer accumulators and the rewrite of a row's pass runs (ir/row_loop.h); thread-block clusters: AxisBinding::Cluster, CombineScope::Cluster (ir/stmt_enums.h), the ClusterSync and DsmemLoad statement kinds (Kernel IR); KernelFeatures::cluster_syncs (target/cost_model.h); ArchFeatures on DeviceDesc, arch_features, sm_90a device variants (target/device.h)
    {18, "740369f9122df313", "14798e87711f370e"},  // tensor cores: the Fragment, LdMatrix and MmaSync statement kinds (ir/stmt.h), FieldRole::DefFragment / UseFragment, StmtKindTraits::tensor_core, contains_tensor_core_statements, MmaShape, MmaDims, mma_dims, LdMatrixLayout (ir/stmt_enums.h); KernelCost::tensor_flops (target/kernel_cost.h), KernelReport::tensor_flops (target/kernel_report.h); ArchFeatures::mma_sync (target/device.h); TilePass::handles_tensor_cores (pass/pass.h)
    {19, "dced5ba8c58fc0a4", "371d14be29068996"},  // warpgroup tensor cores: the WgmmaMma, WgmmaFence, WgmmaCommit and WgmmaWait statement kinds, contains_warpgroup_products (ir/stmt.h); wgmma_operand_byte, wgmma_n_is_valid (ir/stmt_enums.h)
    {20, "a4f9f5fd24bb6d32", "f80aab9cc276c717"},  // warp specialization: Tile::producer and TileProducer, RegisterAction (ir/stmt_enums.h); the NamedBarrier and SetMaxNReg statement kinds, launch_registers_per_thread, contains_stmt_kind (ir/stmt.h); ir/slab_ring_loop.h (SlabRingLoop, slab_ring_loop)
    {21, "a4f9f5fd24bb6d32", "71822bb04d51cc50"},  // MN-major wgmma B operands: MatrixMajor and WgmmaMma::b_major (ir/stmt.h, ir/stmt_enums.h), wgmma_operand_byte takes the major; kWarpgroupThreads, named_barrier_id_is_valid, named_barrier_threads_is_valid, setmaxnreg_count_is_valid (ir/stmt_enums.h); LoopContraction, loop_contraction_reading (ir/contraction.h); structurally_equal of ExprLists, conjuncts (ir/expr.h)
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

template <class T> std::string layout_line(const char* name) {
  return std::string(name) + " " + std::to_string(sizeof(T)) + " " + std::to_string(alignof(T)) + "\n";
}

std::string layout_table() {
  std::string t;
#define TESSERA_ABI_TYPE(T) t += layout_line<tessera::T>(#T);
  TESSERA_ABI_TYPE(TensorType) TESSERA_ABI_TYPE(Dim) TESSERA_ABI_TYPE(Expr) TESSERA_ABI_TYPE(Stmt)
  TESSERA_ABI_TYPE(StmtVariant) TESSERA_ABI_TYPE(Node) TESSERA_ABI_TYPE(Graph)
  TESSERA_ABI_TYPE(KnobChoice) TESSERA_ABI_TYPE(Attrs) TESSERA_ABI_TYPE(AttrValue)
  TESSERA_ABI_TYPE(InputOp) TESSERA_ABI_TYPE(ConstantOp) TESSERA_ABI_TYPE(TorchOp)
  TESSERA_ABI_TYPE(ElementwiseOp) TESSERA_ABI_TYPE(ReduceOp) TESSERA_ABI_TYPE(IndexMapOp)
  TESSERA_ABI_TYPE(GatherOp) TESSERA_ABI_TYPE(LoopOp) TESSERA_ABI_TYPE(TileOp)
  TESSERA_ABI_TYPE(KernelOp) TESSERA_ABI_TYPE(CudaOp) TESSERA_ABI_TYPE(Diagnostic)
  TESSERA_ABI_TYPE(SourceLoc) TESSERA_ABI_TYPE(Status) TESSERA_ABI_TYPE(KnobSpec)
  TESSERA_ABI_TYPE(PassContext) TESSERA_ABI_TYPE(PipelineSpec) TESSERA_ABI_TYPE(RunnerOptions)
  TESSERA_ABI_TYPE(DeviceDesc) TESSERA_ABI_TYPE(KernelCost) TESSERA_ABI_TYPE(TargetOptions)
  TESSERA_ABI_TYPE(KernelLaunch) TESSERA_ABI_TYPE(KernelBuild) TESSERA_ABI_TYPE(TargetRun)
  TESSERA_ABI_TYPE(BenchOptions) TESSERA_ABI_TYPE(KernelTiming) TESSERA_ABI_TYPE(BenchReport)
  TESSERA_ABI_TYPE(FrontendOptions) TESSERA_ABI_TYPE(FrontendInput) TESSERA_ABI_TYPE(ChoiceRequest)
  TESSERA_ABI_TYPE(PluginDescriptor) TESSERA_ABI_TYPE(KernelReport) TESSERA_ABI_TYPE(KernelBound)
  TESSERA_ABI_TYPE(BufferTraffic) TESSERA_ABI_TYPE(FlopCount)
#undef TESSERA_ABI_TYPE
  t += "stmt kinds:";
#define TESSERA_X(K) t += " " #K;
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  t += "\nexpr kinds:";
#define TESSERA_X(K) t += " " #K;
  TESSERA_EXPR_KINDS(TESSERA_X)
#undef TESSERA_X
  t += "\nelementwise fns:";
  for (const tessera::ElementwiseFnInfo& f : tessera::kElementwiseFns)
    t += " " + std::string(f.name) + "/" + std::to_string(f.arity);
  t += "\ncombine fns:";
  for (const tessera::CombineFnInfo& c : tessera::kCombineFns) t += " " + std::string(c.name);
  t += "\n";
  return t;
}

// A header with comments removed and runs of whitespace collapsed: what the compiler sees.
std::string normalized(const std::string& text) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
      space = true;
      continue;
    }
    if (text.compare(i, 2, "/*") == 0) {
      size_t end = text.find("*/", i + 2);
      i = end == std::string::npos ? text.size() : end + 1;
      space = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += text[i];
  }
  return out;
}

std::string headers_hash() {
  fs::path root = fs::path(TESSERA_SOURCE_DIR) / "framework" / "include" / "tessera";
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".h") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    all += fs::relative(f, root).generic_string() + "\n" + normalized(ss.str()) + "\n";
  }
  return hex(fnv1a(all));
}

TEST(PluginAbiTest, HistoryIsAppendOnlyAndEndsAtTheCurrentVersion) {
  for (size_t i = 1; i < std::size(kAbiHistory); ++i)
    EXPECT_LT(kAbiHistory[i - 1].version, kAbiHistory[i].version) << "kAbiHistory must grow by version";
  EXPECT_EQ(std::end(kAbiHistory)[-1].version, tessera::kPluginApiVersion)
      << "kPluginApiVersion changed: append {" << tessera::kPluginApiVersion << ", \""
      << hex(fnv1a(layout_table())) << "\", \"" << headers_hash() << "\"} to kAbiHistory";
}

TEST(PluginAbiTest, PublicAbiMatchesTheRecordedSignatureOfThisVersion) {
  const AbiRecord& current = std::end(kAbiHistory)[-1];
  if (current.version != tessera::kPluginApiVersion) GTEST_SKIP() << "see the history test";
  const std::string table = layout_table();
  const std::string layout = hex(fnv1a(table));
  const std::string headers = headers_hash();
  EXPECT_TRUE(layout == current.layout_hash && headers == current.headers_hash)
      << "The public ABI (framework/include/tessera) changed without a plugin API version bump.\n"
      << "Bump kPluginApiVersion in framework/include/tessera/plugin/plugin.h to "
      << tessera::kPluginApiVersion + 1 << " and append to kAbiHistory in this file:\n"
      << "    {" << tessera::kPluginApiVersion + 1 << ", \"" << layout << "\", \"" << headers << "\"},\n"
      << "Layout table now:\n"
      << table;
}

}  // namespace

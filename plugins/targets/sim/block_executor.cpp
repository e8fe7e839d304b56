// BlockExecutor and launch_kernel (see block_executor.h). Float values are float: every computed
// float value is rounded with static_cast<float>; integer values (i32, i64, bool) and integer index
// arithmetic are exact (floor division/modulo), never passed through float. Bitwise index
// operators act on the two's-complement bits; shifts are arithmetic (a << b = a * 2^b,
// a >> b = floor(a / 2^b)); a shift amount outside [0, 32) in an active lane is an error, like an
// integer division by zero (expr.h, eval_bitwise).
#include "block_executor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "role_scheduler.h"
#include "shared_memory.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/eval/tensor_value.h"

namespace tessera::sim {
namespace {

using Mask = std::vector<uint8_t>;

double to_float(double v) { return static_cast<double>(static_cast<float>(v)); }

// A computed value as a register of `type` holds it: floats rounded to float and then to their
// storage format (bf16, f16), f64 kept (the simulator's own precision), integers truncated,
// booleans 0/1.
double as_type(double v, DType type) {
  if (type == DType::F32) return to_float(v);  // the common case, without the calls below
  if (type == DType::F64) return v;
  return dtype_is_float(type) ? round_to_storage(to_float(v), type) : conform_to_dtype(v, type);
}

int64_t count_active(const Mask& m) {
  int64_t n = 0;
  for (uint8_t b : m) n += b;
  return n;
}

std::string index_str(const std::string& name, const std::vector<int64_t>& index) {
  std::string s = name + "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

class BlockExecutor {
 public:
  BlockExecutor(const Node& node, const KernelOp& op, const KernelProgram& program, std::vector<GlobalBuffer>& globals,
                std::vector<int64_t>& output_writer)
      : node_(node), op_(op), program_(program), globals_(globals), output_writer_(output_writer),
        lanes_(static_cast<int>(op.block[0] * op.block[1] * op.block[2])),
        regs_(static_cast<size_t>(program.slot_count), std::vector<double>(static_cast<size_t>(lanes_), 0.0)),
        temps_(static_cast<size_t>(program.temp_count), std::vector<double>(static_cast<size_t>(lanes_), 0.0)),
        fault_(static_cast<size_t>(lanes_), 0),
        shared_(program.smem, program.barriers, lanes_, [this](int lane) { return thread_str(lane); }) {
    for (int l = 0; l < lanes_; ++l) {
      regs_[kThreadIdxX][static_cast<size_t>(l)] = static_cast<double>(l % op.block[0]);
      regs_[kThreadIdxY][static_cast<size_t>(l)] = static_cast<double>((l / op.block[0]) % op.block[1]);
      regs_[kThreadIdxZ][static_cast<size_t>(l)] = static_cast<double>(l / (op.block[0] * op.block[1]));
    }
    for (int d = 0; d < 3; ++d) {
      std::fill(regs_[static_cast<size_t>(kBlockDimX + d)].begin(), regs_[static_cast<size_t>(kBlockDimX + d)].end(),
                static_cast<double>(op.block[static_cast<size_t>(d)]));
      std::fill(regs_[static_cast<size_t>(kGridDimX + d)].begin(), regs_[static_cast<size_t>(kGridDimX + d)].end(),
                static_cast<double>(op.grid[static_cast<size_t>(d)]));
    }
    for (const auto& [slot, value] : program.scalar_slots)
      std::fill(regs_[static_cast<size_t>(slot)].begin(), regs_[static_cast<size_t>(slot)].end(), value);
    for (const GlobalBuffer& g : globals_) {
      std::vector<int64_t> dims;
      for (const Dim& d : g.value->type.shape) dims.push_back(d.value());
      global_dims_.push_back(std::move(dims));
    }
    fill_literals(program_.body);
    if (program_.orders_by_barriers) shared_.order_by_barriers();
    // The block's registers at launch are the pool setmaxnreg rebalances (stmt.h).
    launch_registers_ = launch_registers_per_thread(lanes_);
    if (program_.has_wgmma) {
      const auto warpgroups = static_cast<size_t>((lanes_ + 127) / 128);
      wgmma_registers_in_flight_.assign(static_cast<size_t>(program_.slot_count), 0);
      wgmma_unfenced_.assign(warpgroups, std::vector<uint8_t>(static_cast<size_t>(program_.slot_count), 0));
      wgmma_groups_.assign(warpgroups, 0);
    }
  }

  Status run_block(int64_t bx, int64_t by, int64_t bz) {
    begin_block(bx, by, bz);
    TESSERA_TRY(run_body(program_.body, Mask(static_cast<size_t>(lanes_), 1)));
    return finish_block();
  }

  // A thread-block cluster: `blocks` are its executors by rank, this one is rank `rank`.
  void join_cluster(const std::vector<BlockExecutor*>* blocks, int64_t rank) {
    cluster_ = blocks;
    rank_ = rank;
  }
  // The parts of run_block, for a cluster's blocks, which launch_kernel runs phase by phase (the
  // statements up to each top-level ClusterSync: every block of the cluster finishes one phase
  // before any starts the next). `last` is the phase after the last ClusterSync.
  void begin_block(int64_t bx, int64_t by, int64_t bz) {
    block_ = {bx, by, bz};
    block_linear_ = bx + op_.grid[0] * (by + op_.grid[1] * bz);
    std::fill(regs_[kBlockIdxX].begin(), regs_[kBlockIdxX].end(), static_cast<double>(bx));
    std::fill(regs_[kBlockIdxY].begin(), regs_[kBlockIdxY].end(), static_cast<double>(by));
    std::fill(regs_[kBlockIdxZ].begin(), regs_[kBlockIdxZ].end(), static_cast<double>(bz));
    shared_.reset();
    wgmma_in_flight_.clear();
    std::fill(wgmma_registers_in_flight_.begin(), wgmma_registers_in_flight_.end(), 0);
    for (std::vector<uint8_t>& unfenced : wgmma_unfenced_) std::fill(unfenced.begin(), unfenced.end(), 0);
    std::fill(wgmma_groups_.begin(), wgmma_groups_.end(), 0);
    for (NamedBarrierState& b : named_) b = NamedBarrierState{};
    warpgroup_registers_.assign(static_cast<size_t>((lanes_ + 127) / 128), launch_registers_);
  }
  Status run_phase(const std::vector<SimStmt>& statements, bool last) {
    last_phase_ = last;
    return run_body(statements, Mask(static_cast<size_t>(lanes_), 1));
  }
  Status finish_block() {
    if (!wgmma_in_flight_.empty())
      return fail(*wgmma_in_flight_.front().stmt, wgmma_in_flight_.front().begin,
                  "the block ends with this wgmma.mma_async in flight: no WgmmaWait completed its group");
    if (std::string err = shared_.finish_block(); !err.empty())
      return make_error("sim: kernel " + op_.name + " (node " + node_.id() + "): block " +
                        dim3_str(block_[0], block_[1], block_[2]) + ": " + err)
          .at_node(node_.id());
    return Status::ok();
  }

 private:
  // ---- naming things in errors ------------------------------------------------------------

  std::string thread_str(int lane) const {
    return dim3_str(lane % op_.block[0], (lane / op_.block[0]) % op_.block[1], lane / (op_.block[0] * op_.block[1]));
  }
  Diagnostic fail(const SimStmt& s, int lane, const std::string& message) const {
    std::string where = "sim: kernel " + op_.name + " (node " + node_.id() + "): at `" + stmt_text(*s.source) +
                        "`: block " + dim3_str(block_[0], block_[1], block_[2]);
    if (lane >= 0) where += " thread " + thread_str(lane);
    return make_error(where + ": " + message).at_node(node_.id());
  }

  // ---- expressions ------------------------------------------------------------------------

  void fill_literals(const std::vector<SimStmt>& body) {
    auto fill = [&](const std::vector<LaneExpr>& list) {
      for (const LaneExpr& e : list)
        for (const LaneExprNode& n : e.nodes)
          if (n.kind == ExprKind::Int || n.kind == ExprKind::Float)
            std::fill(temps_[static_cast<size_t>(n.temp)].begin(), temps_[static_cast<size_t>(n.temp)].end(), n.literal);
    };
    for (const SimStmt& s : body) {
      fill(s.index);
      fill(s.src_index);
      fill(s.exprs);
      fill_literals(s.body);
      fill_literals(s.else_body);
    }
  }

  const double* result_of(const LaneExprNode& n) {
    return n.kind == ExprKind::Var ? regs_[static_cast<size_t>(n.slot)].data() : temps_[static_cast<size_t>(n.temp)].data();
  }

  // Evaluates `e` for every lane (inactive lanes compute harmless garbage); a division by zero
  // in an active lane is an error.
  Expected<const double*> eval(const LaneExpr& e, const Mask& mask, const SimStmt& s) {
    if (e.may_fault) std::fill(fault_.begin(), fault_.end(), 0);
    const size_t n = static_cast<size_t>(lanes_);
    for (const LaneExprNode& node : e.nodes) {
      if (node.kind == ExprKind::Var || node.kind == ExprKind::Int || node.kind == ExprKind::Float) continue;
      double* r = temps_[static_cast<size_t>(node.temp)].data();
      const double* a = result_of(e.nodes[static_cast<size_t>(node.operands[0])]);
      const double* b = node.operands[1] >= 0 ? result_of(e.nodes[static_cast<size_t>(node.operands[1])]) : nullptr;
      const double* c = node.operands[2] >= 0 ? result_of(e.nodes[static_cast<size_t>(node.operands[2])]) : nullptr;
      const bool ints = node.is_int;
      if (node.kind == ExprKind::Element) {
        const double* idx[3] = {a, b, c};
        for (size_t l = 0; l < n; ++l) {
          int64_t flat = 0;
          bool in_bounds = true;
          for (size_t d = 0; d < node.dims.size(); ++d) {
            const double i = idx[d][l];
            in_bounds = in_bounds && i >= 0 && i < static_cast<double>(node.dims[d]);
            flat = flat * node.dims[d] + (in_bounds ? static_cast<int64_t>(i) : 0);
          }
          if (!in_bounds) fault_[l] = 1;
          const int reg = node.slot + static_cast<int>(flat);
          if (!wgmma_in_flight_.empty() && mask[l] && in_bounds)
            if (std::string busy = wgmma_register_busy(reg, static_cast<int>(l)); !busy.empty())
              return fail(s, static_cast<int>(l), "reads " + busy);
          r[l] = regs_[static_cast<size_t>(reg)][l];
        }
        continue;
      }
      switch (node.kind) {
        case ExprKind::Add: for (size_t l = 0; l < n; ++l) r[l] = a[l] + b[l]; break;
        case ExprKind::Sub: for (size_t l = 0; l < n; ++l) r[l] = a[l] - b[l]; break;
        case ExprKind::Mul: for (size_t l = 0; l < n; ++l) r[l] = a[l] * b[l]; break;
        case ExprKind::Div:
          for (size_t l = 0; l < n; ++l) {
            if (!ints) r[l] = a[l] / b[l];
            else if (b[l] == 0.0) r[l] = 0.0, fault_[l] = 1;
            else r[l] = std::floor(a[l] / b[l]);
          }
          break;
        case ExprKind::Mod:
          for (size_t l = 0; l < n; ++l) {
            if (ints && b[l] == 0.0) r[l] = 0.0, fault_[l] = 1;
            else r[l] = a[l] - b[l] * std::floor(a[l] / b[l]);
          }
          break;
        case ExprKind::Min: for (size_t l = 0; l < n; ++l) r[l] = std::min(a[l], b[l]); break;
        case ExprKind::Max: for (size_t l = 0; l < n; ++l) r[l] = std::max(a[l], b[l]); break;
        case ExprKind::Lt: for (size_t l = 0; l < n; ++l) r[l] = a[l] < b[l] ? 1.0 : 0.0; break;
        case ExprKind::Le: for (size_t l = 0; l < n; ++l) r[l] = a[l] <= b[l] ? 1.0 : 0.0; break;
        case ExprKind::Eq: for (size_t l = 0; l < n; ++l) r[l] = a[l] == b[l] ? 1.0 : 0.0; break;
        case ExprKind::Ne: for (size_t l = 0; l < n; ++l) r[l] = a[l] != b[l] ? 1.0 : 0.0; break;
        case ExprKind::And: for (size_t l = 0; l < n; ++l) r[l] = a[l] != 0.0 && b[l] != 0.0 ? 1.0 : 0.0; break;
        case ExprKind::Or: for (size_t l = 0; l < n; ++l) r[l] = a[l] != 0.0 || b[l] != 0.0 ? 1.0 : 0.0; break;
        case ExprKind::Not: for (size_t l = 0; l < n; ++l) r[l] = a[l] == 0.0 ? 1.0 : 0.0; break;
        case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:
          // The kernel compiler admits integer operands only; an out-of-range shift faults. An
          // inactive lane may hold anything: only values that fit int64 are converted.
          for (size_t l = 0; l < n; ++l) {
            std::optional<int64_t> v;
            if (std::fabs(a[l]) < 9.2e18 && std::fabs(b[l]) < 9.2e18)
              v = eval_bitwise(node.kind, static_cast<int64_t>(a[l]), static_cast<int64_t>(b[l]));
            if (v) r[l] = static_cast<double>(*v);
            else r[l] = 0.0, fault_[l] = 1;
          }
          break;
        case ExprKind::Select: for (size_t l = 0; l < n; ++l) r[l] = a[l] != 0.0 ? b[l] : c[l]; break;
        case ExprKind::Cast:
          for (size_t l = 0; l < n; ++l)
            r[l] = node.cast_to == DType::Bool ? (a[l] != 0.0 ? 1.0 : 0.0)
                   : ints                      ? conform_to_dtype(a[l], node.cast_to)
                                               : a[l];
          break;
        // Leaves and register-array reads are handled above.
        case ExprKind::Var:
        case ExprKind::Value:
        case ExprKind::Int:
        case ExprKind::Float:
        case ExprKind::Element: break;
      }
      // Float arithmetic happens in float (in double for f64 operands): round every computed value.
      if (!ints && !node.in_double && node.kind != ExprKind::Select)
        for (size_t l = 0; l < n; ++l) r[l] = to_float(r[l]);
    }
    if (e.may_fault)
      for (int l = 0; l < lanes_; ++l)
        if (mask[static_cast<size_t>(l)] && fault_[static_cast<size_t>(l)])
          return fail(s, l, "integer division or modulo by zero, a shift amount outside [0, 32), or a register array index out of bounds");
    return result_of(e.nodes.back());
  }

  Expected<std::vector<const double*>> eval_all(const std::vector<LaneExpr>& list, const Mask& mask, const SimStmt& s) {
    std::vector<const double*> out;
    out.reserve(list.size());
    for (const LaneExpr& e : list) {
      TESSERA_ASSIGN_OR_RETURN(const double* v, eval(e, mask, s));
      out.push_back(v);
    }
    return out;
  }

  // ---- memory -----------------------------------------------------------------------------

  // Flat offset of `index` (per lane, plus `extra` on the last dimension) in buffer `b`, checked
  // per dimension. The hot path of every access: no allocation; a bad index goes to offset_error.
  Expected<int64_t> offset_of(const SimStmt& s, BufferRef b, const std::vector<const double*>& index, int lane,
                              int64_t extra) {
    const std::vector<int64_t>& dims = b.shared ? shared_.decl(b.index).shape : global_dims_[static_cast<size_t>(b.index)];
    int64_t flat = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      const double x = index[d][lane] + (d + 1 == dims.size() ? static_cast<double>(extra) : 0.0);
      if (!(x >= 0 && x < static_cast<double>(dims[d])) || x != std::floor(x))
        return offset_error(s, b, index, lane, extra, dims);
      flat = flat * dims[d] + static_cast<int64_t>(x);
    }
    return flat;
  }

  // The error of an index offset_of refused: a non-integer coordinate (first), else the first
  // coordinate out of bounds.
  Diagnostic offset_error(const SimStmt& s, BufferRef b, const std::vector<const double*>& index, int lane,
                          int64_t extra, const std::vector<int64_t>& dims) const {
    const std::string& name = b.shared ? shared_.decl(b.index).name : globals_[static_cast<size_t>(b.index)].name;
    std::vector<int64_t> at(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      double x = index[d][lane] + (d + 1 == dims.size() ? static_cast<double>(extra) : 0.0);
      if (x != std::floor(x))
        return fail(s, lane, "index " + std::to_string(x) + " of dimension " + std::to_string(d) + " of '" + name +
                                 "' is not an integer");
      at[d] = static_cast<int64_t>(x);
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      if (at[d] < 0 || at[d] >= dims[d])
        return fail(s, lane, std::string(b.shared ? "shared" : "global") + " access " + index_str(name, at) +
                                 " is out of bounds: index " + std::to_string(at[d]) + " of dimension " +
                                 std::to_string(d) + " is outside [0, " + std::to_string(dims[d]) + ")");
    }
    return fail(s, lane, "access to '" + name + "' refused");  // unreachable: offset_of found a bad coordinate
  }

  Expected<double> load(const SimStmt& s, BufferRef b, const std::vector<const double*>& index, int lane, int64_t extra) {
    TESSERA_ASSIGN_OR_RETURN(int64_t flat, offset_of(s, b, index, lane, extra));
    if (b.shared) {
      double v = 0.0;
      std::string err = shared_.read(b.index, flat, lane, v);
      if (!err.empty()) return fail(s, lane, err);
      return v;
    }
    const GlobalBuffer& g = globals_[static_cast<size_t>(b.index)];
    if (g.is_output && output_writer_[static_cast<size_t>(flat)] < 0)
      return fail(s, lane, "reads output element " + index_str(g.name, unflatten_index(flat, g.value->type.shape)) +
                               " before any thread writes it");
    const double stored = g.value->data[static_cast<size_t>(flat)];
    const DType dt = g.value->type.dtype;
    if (!dtype_is_float(dt)) return conform_to_dtype(stored, dt);  // integers load exactly
    if (dt == DType::F64) return stored;
    return dt == DType::F32 ? to_float(stored) : to_float(round_to_storage(stored, dt));
  }

  Status store(const SimStmt& s, BufferRef b, const std::vector<const double*>& index, int lane, int64_t extra, double v) {
    TESSERA_ASSIGN_OR_RETURN(int64_t flat, offset_of(s, b, index, lane, extra));
    if (b.shared) {
      std::string err = shared_.write(b.index, flat, lane, s, v);
      if (!err.empty()) return fail(s, lane, err);
      return Status::ok();
    }
    GlobalBuffer& g = globals_[static_cast<size_t>(b.index)];
    const int64_t thread = block_linear_ * lanes_ + lane;
    int64_t& writer = output_writer_[static_cast<size_t>(flat)];
    if (writer >= 0 && writer != thread) {
      int64_t other_block = writer / lanes_;
      return fail(s, lane, "global write conflict: " + index_str(g.name, unflatten_index(flat, g.value->type.shape)) +
                               " is also written by block " +
                               dim3_str(other_block % op_.grid[0], (other_block / op_.grid[0]) % op_.grid[1],
                                        other_block / (op_.grid[0] * op_.grid[1])) +
                               " thread " + thread_str(static_cast<int>(writer % lanes_)) + " in this launch");
    }
    writer = thread;
    DType dt = g.value->type.dtype;
    if (dt == DType::I64) {  // the only dtype with a limit; kept off the path of every other write
      if (std::string why = inexact_integer_reason(v, dt); !why.empty())
        return fail(s, lane, why + ", written to " + index_str(g.name, unflatten_index(flat, g.value->type.shape)));
    }
    g.value->data[static_cast<size_t>(flat)] = round_to_storage(dtype_is_float(dt) && dt != DType::F64 ? to_float(v) : v, dt);
    return Status::ok();
  }

  // ---- statements -------------------------------------------------------------------------

  Status run_body(const std::vector<SimStmt>& body, const Mask& mask) {
    for (const SimStmt& s : body) TESSERA_TRY(run_stmt(s, mask));
    return Status::ok();
  }

  // Reads another block's shared memory: the block of the rank each lane names, in this cluster.
  Status run_dsmem_load(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> index, eval_all(s.index, mask, s));
    TESSERA_ASSIGN_OR_RETURN(const double* rank, eval(s.exprs[0], mask, s));
    std::vector<double>& dst = regs_[static_cast<size_t>(s.slot)];
    const auto blocks = static_cast<int64_t>(cluster_ == nullptr ? 0 : cluster_->size());
    for (size_t l = 0; l < static_cast<size_t>(lanes_); ++l) {
      if (!mask[l]) continue;
      const auto r = static_cast<int64_t>(rank[l]);
      if (r < 0 || r >= blocks)
        return fail(s, static_cast<int>(l), "reads the shared memory of rank " + std::to_string(r) +
                                                ", which is not a block of the cluster (ranks 0.." +
                                                std::to_string(blocks - 1) + ")");
      if (last_phase_ && r != rank_)
        return fail(s, static_cast<int>(l), "reads the shared memory of the block of rank " + std::to_string(r) +
                                                " after the kernel's last ClusterSync(): that block may have exited");
      TESSERA_ASSIGN_OR_RETURN(int64_t flat, offset_of(s, s.buffer, index, static_cast<int>(l), 0));
      double v = 0.0;
      std::string err = (*cluster_)[static_cast<size_t>(r)]->shared_.remote_read(s.buffer.index, flat, rank_, v);
      if (!err.empty()) return fail(s, static_cast<int>(l), err + " (the block of rank " + std::to_string(r) + ")");
      dst[l] = v;
    }
    return Status::ok();
  }

  // ---- tensor cores (PTX ISA: ldmatrix, mma.sync.aligned.m16n8k16; layouts in docs/ir.md) ----

  // The groups of `size` consecutive lanes (32: warps; 128: warpgroups) that execute a
  // group-collective statement: each group with an active lane must have all its lanes active
  // (`.aligned`: every thread of the group executes the same instruction).
  Expected<std::vector<int>> converged_groups(const SimStmt& s, const Mask& mask, std::string_view what, int size) {
    const std::string group = size == 32 ? "warp" : "warpgroup";
    std::vector<int> groups;
    for (int begin = 0; begin < lanes_; begin += size) {
      const int end = std::min(lanes_, begin + size);
      int active = 0;
      for (int l = begin; l < end; ++l) active += mask[static_cast<size_t>(l)];
      if (active == 0) continue;
      if (end - begin < size)
        return fail(s, begin, std::string(what) + " needs a whole " + group + " (" + std::to_string(size) +
                                  " threads), but the block's last " + group + " has only " + std::to_string(end - begin) +
                                  " threads");
      for (int l = begin; l < end; ++l)
        if (!mask[static_cast<size_t>(l)])
          return fail(s, l, group + "-divergent " + std::string(what) + ": " + std::to_string(active) + " of the " + group +
                                "'s " + std::to_string(size) + " threads execute it; lane " + std::to_string(l - begin) +
                                " (this thread) does not");
      groups.push_back(begin);
    }
    return groups;
  }
  Expected<std::vector<int>> converged_warps(const SimStmt& s, const Mask& mask, std::string_view what) {
    return converged_groups(s, mask, what, 32);
  }

  // The first register of slice `slice` for the warp starting at lane `begin`: the prefix index
  // must be in bounds and the same in every thread of the warp (registers are named by the
  // instruction, not chosen per thread).
  Expected<int> slice_base(const SimStmt& s, const ArraySlice& slice, const std::vector<const double*>& index,
                           int begin, std::string_view what) {
    int64_t flat = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      const double i = index[d][begin];
      for (int l = begin; l < begin + 32; ++l)
        if (index[d][l] != i)
          return fail(s, l, std::string(what) + "'s fragment index " + std::to_string(index[d][l]) + " differs from lane 0's " +
                                std::to_string(i) + ": the warp must name one fragment");
      if (!(i >= 0 && i < static_cast<double>(slice.dims[d])) || i != std::floor(i))
        return fail(s, begin, std::string(what) + "'s fragment index " + std::to_string(i) + " of dimension " +
                                  std::to_string(d) + " is outside [0, " + std::to_string(slice.dims[d]) + ")");
      flat = flat * slice.dims[d] + static_cast<int64_t>(i);
    }
    int64_t elements = 1;
    for (size_t d = index.size(); d < slice.dims.size(); ++d) elements *= slice.dims[d];
    return slice.slot + static_cast<int>(flat * elements);
  }

  // Fragment: the elements start as NaN, so that an element no instruction wrote poisons every
  // result it reaches instead of reading as zero.
  Status run_fragment(const SimStmt& s, const Mask& mask) {
    int64_t registers = 1;
    for (int64_t d : s.dims) registers *= d;
    for (int64_t r = 0; r < registers; ++r) {
      std::vector<double>& dst = regs_[static_cast<size_t>(s.slot + r)];
      for (int l = 0; l < lanes_; ++l)
        if (mask[static_cast<size_t>(l)]) dst[static_cast<size_t>(l)] = std::nan("");
    }
    return Status::ok();
  }

  // ldmatrix.x{1,2,4}[.trans]: lane 8m + r of the warp names row r of matrix m (8 consecutive
  // 16-bit elements, 16-byte aligned); thread t receives elements (t / 4, 2 (t % 4) + j) of each
  // matrix m, or (2 (t % 4) + j, t / 4) with .trans, into slice elements 2m + j.
  Status run_ldmatrix(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> warps, converged_warps(s, mask, "ldmatrix"));
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> index, eval_all(s.index, mask, s));
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> dst_index, eval_all(s.slices[0].index, mask, s));
    const int64_t elem_bytes = dtype_bytes(shared_.decl(s.buffer.index).dtype);
    double rows[4][8][8];
    for (int begin : warps) {
      TESSERA_ASSIGN_OR_RETURN(int base, slice_base(s, s.slices[0], dst_index, begin, "ldmatrix"));
      for (int64_t m = 0; m < s.count; ++m) {
        for (int64_t r = 0; r < 8; ++r) {
          const int lane = begin + static_cast<int>(8 * m + r);
          TESSERA_ASSIGN_OR_RETURN(int64_t flat, offset_of(s, s.buffer, index, lane, 0));
          if ((flat * elem_bytes) % 16 != 0)
            return fail(s, lane, "ldmatrix row address " + shared_.element_str(s.buffer.index, flat) +
                                     " is not 16-byte aligned (element " + std::to_string(flat) + " of the buffer)");
          for (int64_t c = 0; c < 8; ++c) {
            TESSERA_ASSIGN_OR_RETURN(rows[m][r][c], load(s, s.buffer, index, lane, c));
          }
        }
      }
      for (int t = 0; t < 32; ++t) {
        for (int64_t m = 0; m < s.count; ++m) {
          for (int j = 0; j < 2; ++j) {
            const double v = s.transpose ? rows[m][2 * (t % 4) + j][t / 4] : rows[m][t / 4][2 * (t % 4) + j];
            regs_[static_cast<size_t>(base + 2 * m + j)][static_cast<size_t>(begin + t)] = v;
          }
        }
      }
    }
    return Status::ok();
  }

  // mma.sync.aligned.m16n8k{16,8}.row.col.f32.{bf16,f16}: gathers A (16 x K), B (K x 8) and C
  // (16 x 8) from the warp's fragments in the PTX layouts (g = lane / 4, q = lane % 4; m16n8k8
  // holds the first half of each, elements 0-3 of A and 0-1 of B):
  //   A element i: row g + 8 ((i / 2) % 2), column 2q + i % 2 + 8 (i / 4)
  //   B element i: row 2q + i % 2 + 8 (i / 2), column g
  //   C element i: row g + 8 (i / 2), column 2q + i % 2
  // and scatters D = A B + C back. The 16-bit inputs multiply exactly; the products and C are
  // summed in double and rounded to f32 once per element.
  Status run_mma(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> warps, converged_warps(s, mask, "mma"));
    std::vector<std::vector<const double*>> index(3);
    for (size_t k = 0; k < 3; ++k) {
      TESSERA_ASSIGN_OR_RETURN(index[k], eval_all(s.slices[k].index, mask, s));
    }
    const MmaDims dims = mma_dims(s.shape);
    double a[16][16], b[16][8], c[16][8];
    for (int begin : warps) {
      TESSERA_ASSIGN_OR_RETURN(int acc, slice_base(s, s.slices[0], index[0], begin, "mma's accumulator"));
      TESSERA_ASSIGN_OR_RETURN(int fa, slice_base(s, s.slices[1], index[1], begin, "mma's A operand"));
      TESSERA_ASSIGN_OR_RETURN(int fb, slice_base(s, s.slices[2], index[2], begin, "mma's B operand"));
      auto reg = [&](int first, int64_t i, int t) -> double& {
        return regs_[static_cast<size_t>(first + i)][static_cast<size_t>(begin + t)];
      };
      for (int t = 0; t < 32; ++t) {
        const int g = t / 4, q = t % 4;
        for (int64_t i = 0; i < dims.a_elements(); ++i)
          a[g + 8 * ((i / 2) % 2)][2 * q + i % 2 + 8 * (i / 4)] = as_type(reg(fa, i, t), s.value_type);
        for (int64_t i = 0; i < dims.b_elements(); ++i) b[2 * q + i % 2 + 8 * (i / 2)][g] = as_type(reg(fb, i, t), s.value_type);
        for (int64_t i = 0; i < dims.c_elements(); ++i) c[g + 8 * (i / 2)][2 * q + i % 2] = reg(acc, i, t);
      }
      for (int t = 0; t < 32; ++t) {
        const int g = t / 4, q = t % 4;
        for (int64_t i = 0; i < dims.c_elements(); ++i) {
          const int row = g + 8 * static_cast<int>(i / 2), col = 2 * q + static_cast<int>(i % 2);
          double sum = c[row][col];
          for (int64_t k = 0; k < dims.k; ++k) sum += a[row][k] * b[k][col];
          reg(acc, i, t) = to_float(sum);
        }
      }
    }
    return Status::ok();
  }

  // ---- warpgroup tensor cores (PTX ISA: wgmma.mma_async, wgmma.fence, commit_group, wait_group;
  // layouts in docs/ir.md) ----
  //
  // A product is computed when it is issued, from shared memory as it is then and from the
  // accumulator's latest value (the register, or the result of the warpgroup's last product in
  // flight into it: products into one accumulator run in order). Its result stays in flight until
  // a WgmmaWait completes its group; until then reading or writing the accumulator is an error, and
  // so is ending the block. A register written by anything but a product (Init, Accum) needs a
  // WgmmaFence before a product reads it.

  // A product in flight (wgmma_in_flight_).
  struct WgmmaInFlight {
    int begin;                   // the warpgroup's first lane
    int slot;                    // the accumulator slice's first register
    int64_t count;               // registers per thread (N / 2)
    std::vector<double> result;  // [t * count + i] for thread t of the warpgroup
    int64_t group;               // its commit group, -1 while open
    const SimStmt* stmt;
    std::vector<std::pair<int, int64_t>> reads;  // the shared-memory elements it reads until it lands
  };

  Expected<std::vector<int>> converged_warpgroups(const SimStmt& s, const Mask& mask, std::string_view what) {
    return converged_groups(s, mask, what, 128);
  }

  // "acc0[1, 5]": register `slot` by the array that holds it.
  std::string register_str(int slot) const {
    for (const RegisterArray& a : program_.arrays) {
      int64_t size = 1;
      for (int64_t d : a.dims) size *= d;
      if (slot < a.slot || slot >= a.slot + size) continue;
      return index_str(a.name, unflatten(slot - a.slot, a.dims));
    }
    return "register " + std::to_string(slot);
  }
  static std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& dims) {
    std::vector<int64_t> at(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
      at[d] = flat % dims[d];
      flat /= dims[d];
    }
    return at;
  }

  // The product in flight writing register `slot` of `lane`'s warpgroup (the latest), or null.
  const WgmmaInFlight* wgmma_writing(int slot, int lane) const {
    if (wgmma_registers_in_flight_.empty() || wgmma_registers_in_flight_[static_cast<size_t>(slot)] == 0) return nullptr;
    const int begin = lane / 128 * 128;
    for (auto it = wgmma_in_flight_.rbegin(); it != wgmma_in_flight_.rend(); ++it)
      if (it->begin == begin && slot >= it->slot && slot < it->slot + it->count) return &*it;
    return nullptr;
  }
  // "" when `lane` may touch register `slot`; else what makes it busy, for "reads ..." / "writes ...".
  std::string wgmma_register_busy(int slot, int lane) const {
    const WgmmaInFlight* p = wgmma_writing(slot, lane);
    if (p == nullptr) return "";
    return register_str(slot) + " while `" + stmt_text(*p->stmt->source) +
           "` is in flight into it: no WgmmaWait has completed " +
           (p->group < 0 ? std::string("its group (it is not even committed)") : "its group");
  }
  Status note_register_write(const SimStmt& s, int slot, int lane) {
    if (std::string busy = wgmma_register_busy(slot, lane); !busy.empty()) return fail(s, lane, "writes " + busy);
    wgmma_unfenced_[static_cast<size_t>(lane / 128)][static_cast<size_t>(slot)] = 1;
    return Status::ok();
  }

  // Reads an operand of `rows` x 16 elements (K-major or MN-major) through its descriptor (stmt.h,
  // WgmmaMma; wgmma_operand_byte) into `out` (row-major), checking the start is the same for the whole
  // warpgroup, aligned, and (swizzled) in the first row of a swizzle atom.
  Status read_wgmma_operand(const SimStmt& s, BufferRef buf, const std::vector<const double*>& index,
                            const WgmmaOperand& desc, int begin, int64_t rows, std::vector<double>& out,
                            const std::string& what, std::vector<std::pair<int, int64_t>>& elements) {
    TESSERA_ASSIGN_OR_RETURN(int64_t start, offset_of(s, buf, index, begin, 0));
    for (int l = begin + 1; l < begin + 128; ++l) {
      TESSERA_ASSIGN_OR_RETURN(int64_t other, offset_of(s, buf, index, l, 0));
      if (other != start)
        return fail(s, l, "the " + what + " descriptor starts at " + shared_.element_str(buf.index, other) +
                              " in this thread but at " + shared_.element_str(buf.index, start) +
                              " in the warpgroup's first: a descriptor is the same for the whole warpgroup");
    }
    const int64_t elem = dtype_bytes(shared_.decl(buf.index).dtype);
    const int64_t start_byte = start * elem, span = swizzle_span_bytes(desc.swizzle);
    if (start_byte % 16 != 0)
      return fail(s, begin, "the " + what + " descriptor's start " + shared_.element_str(buf.index, start) + " is byte " +
                                std::to_string(start_byte) + " of its buffer, not 16-byte aligned");
    if (span > 0 && start_byte % (8 * span) >= span)
      return fail(s, begin, "the " + what + " descriptor's start " + shared_.element_str(buf.index, start) + " is byte " +
                                std::to_string(start_byte % (8 * span)) + " of a " + std::to_string(8 * span) +
                                "-byte swizzle atom, past its first row (a start there needs the descriptor's matrix "
                                "base offset, which is not emitted)");
    const int64_t size = shared_.size(buf.index);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < 16; ++k) {
        const int64_t byte =
            swizzle_byte_offset(desc.swizzle, start_byte + wgmma_operand_byte(desc.swizzle, desc.major, desc.lbo, desc.sbo, elem, r, k));
        if (byte / elem >= size)
          return fail(s, begin, "the " + what + " descriptor reaches byte " + std::to_string(byte) + " of '" +
                                    shared_.decl(buf.index).name + "' (row " + std::to_string(r) + ", column " +
                                    std::to_string(k) + "), past its " + std::to_string(size * elem) + " bytes");
        double v = 0.0;
        if (std::string err = shared_.read(buf.index, byte / elem, begin, v); !err.empty())
          return fail(s, begin, "the " + what + " operand's row " + std::to_string(r) + ", column " + std::to_string(k) +
                                    ": " + err);
        out[static_cast<size_t>(r * 16 + k)] = as_type(v, s.value_type);
        elements.emplace_back(buf.index, byte / elem);
      }
    }
    return Status::ok();
  }

  // wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}, its operands in shared memory:
  // thread t of the warpgroup holds accumulator element i at row 16 (t / 32) + (t % 32) / 4 +
  // 8 (i % 4 / 2), column 8 (i / 4) + 2 (t % 4) + i % 2. The 16-bit inputs multiply exactly; the
  // products and the accumulator are summed in double and rounded to f32 once per element.
  Status run_wgmma(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> groups, converged_warpgroups(s, mask, "wgmma.mma_async"));
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> acc_index, eval_all(s.slices[0].index, mask, s));
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> a_index, eval_all(s.index, mask, s));
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> b_index, eval_all(s.src_index, mask, s));
    const int64_t n = s.count, regs = n / 2;
    std::vector<double> a(64 * 16), b(static_cast<size_t>(n * 16));
    for (int begin : groups) {
      int acc = -1;
      for (int w = 0; w < 4; ++w) {
        TESSERA_ASSIGN_OR_RETURN(int base, slice_base(s, s.slices[0], acc_index, begin + 32 * w, "wgmma's accumulator"));
        if (acc >= 0 && base != acc)
          return fail(s, begin + 32 * w, "wgmma's accumulator slice differs between the warps of the warpgroup");
        acc = base;
      }
      const auto wg = static_cast<size_t>(begin / 128);
      for (int64_t r = 0; r < regs; ++r)
        if (wgmma_unfenced_[wg][static_cast<size_t>(acc + r)])
          return fail(s, begin, "reads the accumulator " + register_str(acc + static_cast<int>(r)) +
                                    ", written by another instruction since the warpgroup's last WgmmaFence() (or "
                                    "with none before its first product): wgmma.fence must order that write first");
      std::vector<std::pair<int, int64_t>> reads;
      TESSERA_TRY(read_wgmma_operand(s, s.buffer, a_index, s.wgmma[0], begin, 64, a, "A", reads));
      TESSERA_TRY(read_wgmma_operand(s, s.src_buffer, b_index, s.wgmma[1], begin, n, b, "B", reads));
      for (const auto& [buffer, flat] : reads) shared_.begin_async_read(buffer, flat);
      WgmmaInFlight p{begin, acc, regs, std::vector<double>(static_cast<size_t>(128 * regs)), -1, &s, std::move(reads)};
      for (int t = 0; t < 128; ++t) {
        const int64_t warp = t / 32, lane = t % 32;
        for (int64_t i = 0; i < regs; ++i) {
          const int64_t row = 16 * warp + lane / 4 + 8 * (i % 4 / 2), col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
          const int reg = acc + static_cast<int>(i);
          const WgmmaInFlight* prior = wgmma_writing(reg, begin);
          double sum = prior != nullptr ? prior->result[static_cast<size_t>(t * prior->count + (reg - prior->slot))]
                                        : regs_[static_cast<size_t>(reg)][static_cast<size_t>(begin + t)];
          for (int64_t k = 0; k < 16; ++k)
            sum += a[static_cast<size_t>(row * 16 + k)] * b[static_cast<size_t>(col * 16 + k)];
          p.result[static_cast<size_t>(t * regs + i)] = to_float(sum);
        }
      }
      for (int64_t r = 0; r < regs; ++r) ++wgmma_registers_in_flight_[static_cast<size_t>(acc + r)];
      wgmma_in_flight_.push_back(std::move(p));
    }
    return Status::ok();
  }

  Status run_wgmma_fence(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> groups, converged_warpgroups(s, mask, "wgmma.fence"));
    for (int begin : groups) {
      std::vector<uint8_t>& unfenced = wgmma_unfenced_[static_cast<size_t>(begin / 128)];
      std::fill(unfenced.begin(), unfenced.end(), 0);
    }
    return Status::ok();
  }

  Status run_wgmma_commit(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> groups, converged_warpgroups(s, mask, "wgmma.commit_group"));
    for (int begin : groups) {
      const int64_t group = ++wgmma_groups_[static_cast<size_t>(begin / 128)];
      for (WgmmaInFlight& p : wgmma_in_flight_)
        if (p.begin == begin && p.group < 0) p.group = group;
    }
    return Status::ok();
  }

  // Completes, in issue order, the products of every committed group but the newest `count`.
  Status run_wgmma_wait(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> groups, converged_warpgroups(s, mask, "wgmma.wait_group"));
    for (int begin : groups) {
      const int64_t last = wgmma_groups_[static_cast<size_t>(begin / 128)] - s.count;
      std::vector<WgmmaInFlight> still;
      for (WgmmaInFlight& p : wgmma_in_flight_) {
        if (p.begin != begin || p.group < 0 || p.group > last) {
          still.push_back(std::move(p));
          continue;
        }
        for (int t = 0; t < 128; ++t)
          for (int64_t i = 0; i < p.count; ++i)
            regs_[static_cast<size_t>(p.slot + i)][static_cast<size_t>(begin + t)] =
                p.result[static_cast<size_t>(t * p.count + i)];
        for (int64_t i = 0; i < p.count; ++i) --wgmma_registers_in_flight_[static_cast<size_t>(p.slot + i)];
        for (const auto& [buffer, flat] : p.reads) shared_.end_async_read(buffer, flat, begin);
      }
      wgmma_in_flight_ = std::move(still);
    }
    return Status::ok();
  }

  // ---- warp specialization (named barriers, setmaxnreg) ----------------------------------------

  // bar.sync id, threads: whole warps arrive; the barrier completes when `threads` threads are in,
  // and each then has the others' earlier accesses ordered before its later ones.
  Status run_named_barrier(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> warps, converged_warps(s, mask, "bar.sync"));
    NamedBarrierState& b = named_[static_cast<size_t>(s.barrier)];
    const std::string name = "named barrier " + std::to_string(s.barrier);
    if (b.arrived > 0 && b.expected != s.count)
      return fail(s, warps.front(), "arrives at " + name + " expecting " + std::to_string(s.count) + " threads, but the " +
                                        std::to_string(b.arrived) + " threads waiting there expect " + std::to_string(b.expected));
    b.expected = s.count;
    b.arrived += 32 * static_cast<int64_t>(warps.size());
    for (int w : warps)
      for (int l = w; l < w + 32; ++l) b.lanes.push_back(l);
    if (b.arrived > b.expected)
      return fail(s, warps.front(), std::to_string(b.arrived) + " threads arrive at " + name + ", which expects " +
                                        std::to_string(b.expected) +
                                        ": a wrong thread count (the barrier would complete with part of them)");
    if (b.arrived == b.expected) {
      shared_.synchronize_lanes(b.lanes);
      b.lanes.clear();
      b.arrived = 0;
      ++b.generation;
      return Status::ok();
    }
    const uint64_t generation = b.generation;
    return roles_.wait_until([&] { return b.generation != generation; }, [&] {
      return fail(s, warps.front(), "waits at " + name + " for " + std::to_string(b.expected) + " threads, but only " +
                                        std::to_string(b.arrived) +
                                        " arrive: every other thread of the block has finished or waits elsewhere (a wrong "
                                        "thread count; in CUDA the block would hang)");
    });
  }

  // setmaxnreg.{inc,dec}: the warpgroup's registers per thread become `count`; the block's pool
  // (its registers at launch) must hold what every warpgroup then has: .inc waits until it does.
  Status run_setmaxnreg(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int> groups, converged_warpgroups(s, mask, "setmaxnreg"));
    const bool inc = s.reg_action == RegisterAction::Inc;
    const std::string what = "setmaxnreg." + std::string(spelling(s.reg_action)) + " " + std::to_string(s.count);
    const int64_t pool = launch_registers_ * lanes_;
    auto in_use = [&] {
      int64_t total = 0;
      for (size_t g = 0; g < warpgroup_registers_.size(); ++g)
        total += warpgroup_registers_[g] * std::min<int64_t>(128, lanes_ - 128 * static_cast<int64_t>(g));
      return total;
    };
    for (int begin : groups) {
      int64_t& mine = warpgroup_registers_[static_cast<size_t>(begin / 128)];
      if (inc ? s.count < mine : s.count > mine)
        return fail(s, begin, what + " would " + (inc ? "lower" : "raise") + " the warpgroup's " + std::to_string(mine) +
                                  " registers per thread: ." + std::string(spelling(s.reg_action)) + " only " +
                                  (inc ? "raises" : "lowers") + " them");
      if (inc) {
        TESSERA_TRY(roles_.wait_until([&] { return in_use() + (s.count - mine) * 128 <= pool; }, [&] {
          return fail(s, begin, what + " needs " + std::to_string((s.count - mine) * 128) +
                                    " more registers for its warpgroup, but the block's pool of " + std::to_string(pool) +
                                    " (" + std::to_string(launch_registers_) + " per thread at launch) has " +
                                    std::to_string(pool - in_use()) +
                                    " free and no other warpgroup releases any (in CUDA it would wait forever)");
        }));
      }
      mine = s.count;
    }
    return Status::ok();
  }

  Status require_full_block(const SimStmt& s, const Mask& mask) {
    for (int l = 0; l < lanes_; ++l)
      if (!mask[static_cast<size_t>(l)])
        return fail(s, l, "barrier divergence: " + std::to_string(count_active(mask)) + " of " + std::to_string(lanes_) +
                              " threads of the block reach this barrier; this thread does not");
    return Status::ok();
  }

  Status run_loop(const SimStmt& s, const Mask& mask, bool strided) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> bounds, eval_all(s.exprs, mask, s));
    std::vector<double> end(bounds[1], bounds[1] + lanes_);
    std::vector<double> step(static_cast<size_t>(lanes_), 1.0);
    if (strided) step.assign(bounds[2], bounds[2] + lanes_);
    std::vector<double>& var = regs_[static_cast<size_t>(s.slot)];
    Mask live(static_cast<size_t>(lanes_), 0);
    int64_t active = 0;
    for (int l = 0; l < lanes_; ++l) {
      size_t i = static_cast<size_t>(l);
      if (!mask[i]) continue;
      if (step[i] <= 0) return fail(s, l, "the loop step " + std::to_string(step[i]) + " is not positive");
      var[i] = bounds[0][i];
      live[i] = var[i] < end[i];
      active += live[i];
    }
    while (active > 0) {
      TESSERA_TRY(run_body(s.body, live));
      active = 0;
      for (size_t i = 0; i < live.size(); ++i) {
        if (!live[i]) continue;
        var[i] += step[i];
        live[i] = var[i] < end[i];
        active += live[i];
      }
    }
    return Status::ok();
  }

  Status run_shuffle(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(const double* src, eval(s.exprs[0], mask, s));
    std::vector<double>& dst = regs_[static_cast<size_t>(s.slot)];
    const int64_t w = s.width, offset = s.count;
    for (int warp_begin = 0; warp_begin < lanes_; warp_begin += 32) {
      const int warp_end = std::min(lanes_, warp_begin + 32);
      int active = 0;
      for (int l = warp_begin; l < warp_end; ++l) active += mask[static_cast<size_t>(l)];
      if (active == 0) continue;  // the warp does not reach the shuffle
      for (int l = warp_begin; l < warp_end; ++l)
        if (!mask[static_cast<size_t>(l)])
          return fail(s, l, "WarpShuffle needs all lanes of the warp, but lane " + std::to_string(l - warp_begin) +
                                " (this thread) is inactive while " + std::to_string(active) + " lanes execute it");
      for (int l = warp_begin; l < warp_end; ++l) {
        const int64_t lane = l - warp_begin, group = lane / w * w, pos = lane % w;
        int64_t from = lane;
        switch (s.mode) {
          case ShuffleMode::Xor: from = (lane ^ offset) / w == lane / w ? lane ^ offset : lane; break;
          case ShuffleMode::Down: from = pos + offset < w ? lane + offset : lane; break;
          case ShuffleMode::Up: from = pos - offset >= 0 ? lane - offset : lane; break;
          case ShuffleMode::Idx: from = group + offset % w; break;
        }
        if (warp_begin + from >= warp_end)
          return fail(s, l, "WarpShuffle reads lane " + std::to_string(from) + ", which does not exist (the block has " +
                                std::to_string(lanes_) + " threads)");
        shuffle_[static_cast<size_t>(lane)] = src[warp_begin + from];
      }
      for (int l = warp_begin; l < warp_end; ++l) dst[static_cast<size_t>(l)] = shuffle_[static_cast<size_t>(l - warp_begin)];
    }
    return Status::ok();
  }

  // Float accumulators round every partial result to f32 (f64 ones keep double precision, integer
  // ones are exact to 2^53).
  double combine(CombineFn op, double acc, double x) const { return to_float(apply_combine_fn(op, acc, x)); }
  double combine_as(CombineFn op, double acc, double x, DType type) const {
    if (type == DType::F64) return apply_combine_fn(op, acc, x);
    return dtype_is_float(type) ? combine(op, acc, x) : conform_to_dtype(apply_combine_fn(op, acc, x), type);
  }

  // buf[t] = op(buf[t], buf[t + s]) for t < s, t + s < n, halving s, a barrier after each step.
  Status run_tree_halve(const SimStmt& s, const Mask& mask) {
    TESSERA_TRY(require_full_block(s, mask));
    TESSERA_ASSIGN_OR_RETURN(const double* tid, eval(s.exprs[0], mask, s));
    const int64_t n = s.count, size = shared_.size(s.buffer.index);
    int64_t stride = 1;
    while (stride < n) stride *= 2;
    std::vector<double> partial(static_cast<size_t>(lanes_));
    for (stride /= 2; stride >= 1; stride /= 2) {
      auto participates = [&](int l) { return tid[l] < static_cast<double>(stride) && tid[l] + stride < n; };
      for (int l = 0; l < lanes_; ++l) {
        if (!participates(l)) continue;
        const int64_t t = static_cast<int64_t>(tid[l]);
        if (tid[l] != std::floor(tid[l]) || t < 0 || t + stride >= size)
          return fail(s, l, "tid " + std::to_string(tid[l]) + " is not a slot of " + shared_.decl(s.buffer.index).name);
        double a = 0.0, b = 0.0;
        std::string err = shared_.read(s.buffer.index, t, l, a);
        if (err.empty()) err = shared_.read(s.buffer.index, t + stride, l, b);
        if (!err.empty()) return fail(s, l, err + " (step s=" + std::to_string(stride) + ")");
        partial[static_cast<size_t>(l)] = combine_as(s.accum, a, b, shared_.decl(s.buffer.index).dtype);
      }
      for (int l = 0; l < lanes_; ++l) {
        if (!participates(l)) continue;
        std::string err = shared_.write(s.buffer.index, static_cast<int64_t>(tid[l]), l, s, partial[static_cast<size_t>(l)]);
        if (!err.empty()) return fail(s, l, err + " (step s=" + std::to_string(stride) + ")");
      }
      shared_.barrier();
    }
    return Status::ok();
  }

  Status run_cp_async_copy(const SimStmt& s, const Mask& mask) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> dst, eval_all(s.index, mask, s));
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> src, eval_all(s.src_index, mask, s));
    for (int l = 0; l < lanes_; ++l) {
      if (!mask[static_cast<size_t>(l)]) continue;
      for (int64_t k = 0; k < s.count; ++k) {
        TESSERA_ASSIGN_OR_RETURN(double v, load(s, s.src_buffer, src, l, k));
        TESSERA_ASSIGN_OR_RETURN(int64_t flat, offset_of(s, s.buffer, dst, l, k));
        std::string err = shared_.issue_copy(s.buffer.index, flat, l, s, v);
        if (!err.empty()) return fail(s, l, err);
      }
    }
    return Status::ok();
  }

  // A TMA copy per issuing lane: the tensor map's box at `coords` (element strides applied; elements
  // outside the buffer filled with zero or NaN) lands row-major from the destination element, each
  // byte offset swizzled as the tensor map says, tracked by the barrier slot.
  Status run_tma_load(const SimStmt& s, const Mask& mask) {
    const TensorMapDecl& map = program_.tensor_maps[static_cast<size_t>(s.tensor_map)];
    const TensorMapSpec& spec = map.spec;
    const GlobalBuffer& src = globals_[static_cast<size_t>(map.buffer)];
    const std::vector<int64_t>& src_dims = global_dims_[static_cast<size_t>(map.buffer)];
    const SmemDecl& dst = shared_.decl(s.buffer.index);
    const int64_t elem = dtype_bytes(dst.dtype);
    const int64_t rank = static_cast<int64_t>(spec.box.size());
    std::vector<int64_t> extent(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d)
      extent[static_cast<size_t>(d)] = (spec.box[static_cast<size_t>(d)] + spec.element_stride(static_cast<size_t>(d)) - 1) /
                                       spec.element_stride(static_cast<size_t>(d));
    const int64_t elements = spec.smem_elements();
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> coords, eval_all(s.src_index, mask, s));
    TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> dst_index, eval_all(s.index, mask, s));
    TESSERA_ASSIGN_OR_RETURN(const double* slot, eval(s.exprs[0], mask, s));
    const double fill = spec.oob_fill == TensorMapOobFill::Nan ? std::nan("") : 0.0;
    for (int l = 0; l < lanes_; ++l) {
      if (!mask[static_cast<size_t>(l)]) continue;
      const auto bar_slot = static_cast<int64_t>(slot[l]);
      if (std::string err = shared_.check_barrier_slot(s.barrier, bar_slot); !err.empty()) return fail(s, l, err);
      int64_t base = 0;
      if (!dst_index.empty()) {
        TESSERA_ASSIGN_OR_RETURN(base, offset_of(s, s.buffer, dst_index, l, 0));
      }
      // The copy's shared-memory address must be 128-byte aligned (the buffer's own alignment is
      // at least that when the kernel compiler accepted its swizzle; offsets are checked here).
      if (base * elem % 128 != 0)
        return fail(s, l, "the TMA destination " + shared_.element_str(s.buffer.index, base) + " is " +
                              std::to_string(base * elem) + " bytes into '" + dst.name + "', not a multiple of 128");
      if (base + elements > shared_.size(s.buffer.index))
        return fail(s, l, "the TMA box of " + std::to_string(elements) + " elements from " +
                              shared_.element_str(s.buffer.index, base) + " runs past the end of '" + dst.name + "'");
      std::vector<int64_t> at(static_cast<size_t>(rank), 0);
      for (int64_t i = 0; i < elements; ++i) {
        // Box element i, row-major over the strided extents -> its global coordinates.
        int64_t rest = i, src_flat = 0;
        bool inside = true;
        for (int64_t d = rank; d-- > 0;) {
          at[static_cast<size_t>(d)] = rest % extent[static_cast<size_t>(d)];
          rest /= extent[static_cast<size_t>(d)];
        }
        for (int64_t d = 0; d < rank; ++d) {
          const double c0 = coords[static_cast<size_t>(d)][l];
          const int64_t c = static_cast<int64_t>(c0) + at[static_cast<size_t>(d)] * spec.element_stride(static_cast<size_t>(d));
          inside = inside && c >= 0 && c < src_dims[static_cast<size_t>(d)];
          src_flat = src_flat * src_dims[static_cast<size_t>(d)] + (inside ? c : 0);
        }
        double v = fill;
        if (inside) {
          const double stored = src.value->data[static_cast<size_t>(src_flat)];
          const DType dt = src.value->type.dtype;
          v = !dtype_is_float(dt) ? conform_to_dtype(stored, dt) : dt == DType::F64 ? stored : round_to_storage(stored, dt);
        }
        const int64_t byte = swizzle_byte_offset(spec.swizzle, (base + i) * elem);
        std::string err = shared_.issue_tma_element(s.buffer.index, byte / elem, l, s, v, s.barrier, bar_slot);
        if (!err.empty()) return fail(s, l, err);
      }
      shared_.tma_bytes(s.barrier, bar_slot, elements * elem);
    }
    return Status::ok();
  }

  Status check_vector_alignment(const SimStmt& s, const std::vector<const double*>& index, int lane, size_t k) {
    double last = index.back()[lane];
    if (std::fmod(last, static_cast<double>(k)) != 0.0)
      return fail(s, lane, "a vector access of " + std::to_string(k) + " elements starts at last index " +
                               std::to_string(static_cast<int64_t>(last)) + ", which is not a multiple of " + std::to_string(k));
    return Status::ok();
  }

  Status run_stmt(const SimStmt& s, const Mask& mask) {
    const size_t n = static_cast<size_t>(lanes_);
    switch (s.kind) {
      case StmtKind::Load: {
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> index, eval_all(s.index, mask, s));
        std::vector<double>& dst = regs_[static_cast<size_t>(s.slot)];
        for (size_t l = 0; l < n; ++l) {
          if (!mask[l]) continue;
          TESSERA_ASSIGN_OR_RETURN(dst[l], load(s, s.buffer, index, static_cast<int>(l), 0));
        }
        return Status::ok();
      }
      case StmtKind::Write: {
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> index, eval_all(s.index, mask, s));
        TESSERA_ASSIGN_OR_RETURN(const double* v, eval(s.exprs[0], mask, s));
        for (size_t l = 0; l < n; ++l)
          if (mask[l]) TESSERA_TRY(store(s, s.buffer, index, static_cast<int>(l), 0, v[l]));
        return Status::ok();
      }
      case StmtKind::Assign: {
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> args, eval_all(s.exprs, mask, s));
        std::vector<double>& dst = regs_[static_cast<size_t>(s.slot)];
        std::vector<double> a(args.size());
        for (size_t l = 0; l < n; ++l) {
          if (!mask[l]) continue;
          for (size_t i = 0; i < args.size(); ++i) a[i] = args[i][l];
          if (!dtype_is_float(s.value_type) && is_integer_division_by_zero(s.fn, a))
            return fail(s, static_cast<int>(l), "integer division by zero (PyTorch raises ZeroDivisionError)");
          dst[l] = as_type(apply_elementwise_fn(s.fn, a), s.value_type);
        }
        return Status::ok();
      }
      case StmtKind::Select: {
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> v, eval_all(s.exprs, mask, s));
        std::vector<double>& dst = regs_[static_cast<size_t>(s.slot)];
        for (size_t l = 0; l < n; ++l)
          if (mask[l]) dst[l] = as_type(v[0][l] != 0.0 ? v[1][l] : v[2][l], s.value_type);
        return Status::ok();
      }
      case StmtKind::Init:
      case StmtKind::Let: {
        TESSERA_ASSIGN_OR_RETURN(const double* v, eval(s.exprs[0], mask, s));
        const bool round = s.kind == StmtKind::Init;
        int64_t registers = 1;
        for (int64_t d : s.dims) registers *= d;
        for (int64_t r = 0; r < registers; ++r) {
          std::vector<double>& dst = regs_[static_cast<size_t>(s.slot + r)];
          for (size_t l = 0; l < n; ++l) {
            if (!mask[l]) continue;
            if (program_.has_wgmma) TESSERA_TRY(note_register_write(s, s.slot + static_cast<int>(r), static_cast<int>(l)));
            dst[l] = round ? as_type(v[l], s.value_type) : v[l];
          }
        }
        return Status::ok();
      }
      case StmtKind::Accum: {
        TESSERA_ASSIGN_OR_RETURN(const double* v, eval(s.exprs[0], mask, s));
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> index, eval_all(s.index, mask, s));
        for (size_t l = 0; l < n; ++l) {
          if (!mask[l]) continue;
          int64_t flat = 0;
          for (size_t d = 0; d < s.dims.size(); ++d) {
            const double i = index[d][l];
            if (!(i >= 0 && i < static_cast<double>(s.dims[d])))
              return fail(s, static_cast<int>(l), "register array index " + std::to_string(i) + " of dimension " +
                                                      std::to_string(d) + " is out of bounds");
            flat = flat * s.dims[d] + static_cast<int64_t>(i);
          }
          if (program_.has_wgmma) TESSERA_TRY(note_register_write(s, s.slot + static_cast<int>(flat), static_cast<int>(l)));
          std::vector<double>& acc = regs_[static_cast<size_t>(s.slot + flat)];
          acc[l] = combine_as(s.accum, acc[l], v[l], s.value_type);
          if (dtype_is_float(s.value_type)) acc[l] = as_type(acc[l], s.value_type);
        }
        return Status::ok();
      }
      case StmtKind::Loop: return run_loop(s, mask, false);
      case StmtKind::StridedLoop: return run_loop(s, mask, true);
      case StmtKind::Cond: {
        TESSERA_ASSIGN_OR_RETURN(const double* c, eval(s.exprs[0], mask, s));
        Mask then_mask(n, 0), else_mask(n, 0);
        for (size_t l = 0; l < n; ++l) {
          then_mask[l] = mask[l] && c[l] != 0.0;
          else_mask[l] = mask[l] && c[l] == 0.0;
        }
        // A branch no thread takes is not executed (so a barrier inside it is not reached).
        if (s.concurrent && count_active(then_mask) > 0 && count_active(else_mask) > 0)
          return roles_.run_concurrently({[&] { return run_body(s.body, then_mask); },
                                          [&] { return run_body(s.else_body, else_mask); }});
        if (count_active(then_mask) > 0) TESSERA_TRY(run_body(s.body, then_mask));
        if (count_active(else_mask) > 0) TESSERA_TRY(run_body(s.else_body, else_mask));
        return Status::ok();
      }
      case StmtKind::Smem: return Status::ok();
      case StmtKind::Sync:
        TESSERA_TRY(require_full_block(s, mask));
        shared_.barrier();
        return Status::ok();
      case StmtKind::CpAsyncCopy: return run_cp_async_copy(s, mask);
      case StmtKind::CpAsyncCommit:
        for (size_t l = 0; l < n; ++l)
          if (mask[l]) shared_.commit_copies(static_cast<int>(l));
        return Status::ok();
      case StmtKind::CpAsyncWait:
        for (size_t l = 0; l < n; ++l) {
          if (!mask[l]) continue;
          std::string err = shared_.wait_copies(static_cast<int>(l), s.count);
          if (!err.empty()) return fail(s, static_cast<int>(l), err);
        }
        return Status::ok();
      case StmtKind::WarpShuffle: return run_shuffle(s, mask);
      case StmtKind::Fragment: return run_fragment(s, mask);
      case StmtKind::LdMatrix: return run_ldmatrix(s, mask);
      case StmtKind::MmaSync: return run_mma(s, mask);
      case StmtKind::WgmmaMma: return run_wgmma(s, mask);
      case StmtKind::WgmmaFence: return run_wgmma_fence(s, mask);
      case StmtKind::WgmmaCommit: return run_wgmma_commit(s, mask);
      case StmtKind::WgmmaWait: return run_wgmma_wait(s, mask);
      case StmtKind::TreeHalve: return run_tree_halve(s, mask);
      case StmtKind::VectorLoad: {
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> index, eval_all(s.index, mask, s));
        for (size_t l = 0; l < n; ++l) {
          if (!mask[l]) continue;
          TESSERA_TRY(check_vector_alignment(s, index, static_cast<int>(l), s.slots.size()));
          for (size_t k = 0; k < s.slots.size(); ++k) {
            TESSERA_ASSIGN_OR_RETURN(regs_[static_cast<size_t>(s.slots[k])][l],
                                     load(s, s.buffer, index, static_cast<int>(l), static_cast<int64_t>(k)));
          }
        }
        return Status::ok();
      }
      case StmtKind::VectorStore: {
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> index, eval_all(s.index, mask, s));
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> values, eval_all(s.exprs, mask, s));
        for (size_t l = 0; l < n; ++l) {
          if (!mask[l]) continue;
          TESSERA_TRY(check_vector_alignment(s, index, static_cast<int>(l), values.size()));
          for (size_t k = 0; k < values.size(); ++k)
            TESSERA_TRY(store(s, s.buffer, index, static_cast<int>(l), static_cast<int64_t>(k), values[k][l]));
        }
        return Status::ok();
      }
      case StmtKind::MbarrierInit: {
        // Thread 0 initializes, then the block synchronizes (the emitted code's fence and barrier).
        TESSERA_TRY(require_full_block(s, mask));
        if (std::string err = shared_.init_barrier(s.barrier); !err.empty()) return fail(s, -1, err);
        shared_.barrier();
        return Status::ok();
      }
      case StmtKind::MbarrierArrive: {
        TESSERA_ASSIGN_OR_RETURN(const double* slot, eval(s.exprs[0], mask, s));
        for (size_t l = 0; l < n; ++l) {
          if (!mask[l]) continue;
          std::string err = shared_.check_barrier_slot(s.barrier, static_cast<int64_t>(slot[l]));
          if (err.empty()) err = shared_.arrive(s.barrier, static_cast<int64_t>(slot[l]), s.count, static_cast<int>(l));
          if (!err.empty()) return fail(s, static_cast<int>(l), err);
        }
        return Status::ok();
      }
      case StmtKind::MbarrierWait: {
        TESSERA_ASSIGN_OR_RETURN(std::vector<const double*> v, eval_all(s.exprs, mask, s));
        for (size_t l = 0; l < n; ++l) {
          if (!mask[l]) continue;
          const auto slot = static_cast<int64_t>(v[0][l]), parity = static_cast<int64_t>(v[1][l]);
          const int lane = static_cast<int>(l);
          if (std::string err = shared_.check_barrier_slot(s.barrier, slot); !err.empty()) return fail(s, lane, err);
          // Another role (a warp-specialized kernel's producer or consumers) may complete the phase.
          TESSERA_TRY(roles_.wait_until([&] { return shared_.phase_ready(s.barrier, slot, parity); },
                                        [&] { return fail(s, lane, shared_.wait_barrier(s.barrier, slot, parity, lane)); }));
          if (std::string err = shared_.wait_barrier(s.barrier, slot, parity, lane); !err.empty()) return fail(s, lane, err);
        }
        return Status::ok();
      }
      case StmtKind::TmaLoad: return run_tma_load(s, mask);
      case StmtKind::NamedBarrier: return run_named_barrier(s, mask);
      case StmtKind::SetMaxNReg: return run_setmaxnreg(s, mask);
      case StmtKind::ClusterSync:
        // launch_kernel ends the cluster's phase here for every block (kernel_compiler keeps
        // ClusterSync at the top level, where the whole block reaches it).
        TESSERA_TRY(require_full_block(s, mask));
        shared_.cluster_barrier();
        return Status::ok();
      case StmtKind::DsmemLoad: return run_dsmem_load(s, mask);
      // The kernel compiler rejects these, so a compiled program never holds them.
      case StmtKind::Tile:
      case StmtKind::Stage:
      case StmtKind::Combine:
      case StmtKind::AsyncWait:
      case StmtKind::SlabMap: return fail(s, -1, "the simulator does not execute this statement");
    }
    return fail(s, -1, "the simulator does not execute this statement");
  }

  const Node& node_;
  const KernelOp& op_;
  const KernelProgram& program_;
  std::vector<GlobalBuffer>& globals_;
  std::vector<int64_t>& output_writer_;  // per output element: the writing thread's global id, or -1
  const int lanes_;
  std::vector<std::vector<int64_t>> global_dims_;  // the shape of each global buffer
  std::vector<std::vector<double>> regs_;   // per register slot, one value per lane
  std::vector<std::vector<double>> temps_;  // per expression node, one value per lane
  std::vector<uint8_t> fault_;
  // Warpgroup products (run_wgmma): those in flight in issue order, and per register how many of
  // them write it; per warpgroup, the registers written since its last fence and its commit count.
  std::vector<WgmmaInFlight> wgmma_in_flight_;
  std::vector<int> wgmma_registers_in_flight_;
  std::vector<std::vector<uint8_t>> wgmma_unfenced_;
  std::vector<int64_t> wgmma_groups_;
  std::vector<double> shuffle_ = std::vector<double>(32);
  // Named barriers 0..15 (0 is Sync()'s, never used here): threads in, their lanes, completions.
  struct NamedBarrierState {
    int64_t expected = 0;
    int64_t arrived = 0;
    uint64_t generation = 0;
    std::vector<int> lanes;
  };
  std::array<NamedBarrierState, 16> named_;
  int64_t launch_registers_ = 0;               // per thread, at launch
  std::vector<int64_t> warpgroup_registers_;   // per warpgroup, now (setmaxnreg)
  RoleScheduler roles_;
  SharedMemory shared_;
  std::vector<int64_t> block_{0, 0, 0};
  int64_t block_linear_ = 0;
  const std::vector<BlockExecutor*>* cluster_ = nullptr;  // the executors of this block's cluster, by rank
  int64_t rank_ = 0;                                       // this block's rank in it
  bool last_phase_ = false;                                // after the kernel's last ClusterSync
};

}  // namespace

Status launch_kernel(const Node& node, const KernelOp& op, const KernelProgram& program, std::vector<GlobalBuffer>& globals,
                     const std::function<void(int64_t, int64_t)>& after_block) {
  GlobalBuffer* output = nullptr;
  for (GlobalBuffer& g : globals)
    if (g.is_output) output = &g;
  if (output == nullptr) return make_error("sim: kernel " + op.name + " (node " + node.id() + ") has no output buffer").at_node(node.id());
  std::vector<int64_t> writer(static_cast<size_t>(output->value->size()), -1);
  const int64_t blocks = op.grid[0] * op.grid[1] * op.grid[2];
  int64_t done = 0;
  if (op.cluster.empty()) {
    BlockExecutor executor(node, op, program, globals, writer);
    for (int64_t bz = 0; bz < op.grid[2]; ++bz)
      for (int64_t by = 0; by < op.grid[1]; ++by)
        for (int64_t bx = 0; bx < op.grid[0]; ++bx) {
          TESSERA_TRY(executor.run_block(bx, by, bz));
          if (after_block) after_block(++done, blocks);
        }
  } else {
    // Thread-block clusters: the blocks of a cluster run together, one executor per rank (rank =
    // the block's position in the cluster, x fastest, as %cluster_ctarank), phase by phase: the
    // top-level statements up to and including each ClusterSync, then the rest.
    const int64_t cx = op.cluster[0], cy = op.cluster[1], cz = op.cluster[2];
    std::vector<std::unique_ptr<BlockExecutor>> owned;
    std::vector<BlockExecutor*> cluster;
    for (int64_t r = 0; r < cx * cy * cz; ++r) {
      owned.push_back(std::make_unique<BlockExecutor>(node, op, program, globals, writer));
      cluster.push_back(owned.back().get());
    }
    for (size_t r = 0; r < cluster.size(); ++r) cluster[r]->join_cluster(&cluster, static_cast<int64_t>(r));
    std::vector<std::vector<SimStmt>> phases(1);
    for (const SimStmt& s : program.body) {
      phases.back().push_back(s);
      if (s.kind == StmtKind::ClusterSync) phases.emplace_back();
    }
    for (int64_t gz = 0; gz < op.grid[2] / cz; ++gz)
      for (int64_t gy = 0; gy < op.grid[1] / cy; ++gy)
        for (int64_t gx = 0; gx < op.grid[0] / cx; ++gx) {
          for (int64_t r = 0; r < cx * cy * cz; ++r)
            cluster[static_cast<size_t>(r)]->begin_block(gx * cx + r % cx, gy * cy + (r / cx) % cy, gz * cz + r / (cx * cy));
          for (size_t p = 0; p < phases.size(); ++p)
            for (BlockExecutor* b : cluster) TESSERA_TRY(b->run_phase(phases[p], p + 1 == phases.size()));
          for (BlockExecutor* b : cluster) {
            TESSERA_TRY(b->finish_block());
            if (after_block) after_block(++done, blocks);
          }
        }
  }
  for (size_t i = 0; i < writer.size(); ++i)
    if (writer[i] < 0)
      return make_error("sim: kernel " + op.name + " (node " + node.id() + "): output element " +
                        index_str(node.id(), unflatten_index(static_cast<int64_t>(i), output->value->type.shape)) +
                        " is never written")
          .at_node(node.id());
  return Status::ok();
}

}  // namespace tessera::sim

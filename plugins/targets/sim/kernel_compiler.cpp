// compile_kernel: turns a KernelOp body into a KernelProgram (see kernel_program.h). Everything
// that can be decided without running is decided here, once per kernel: name scoping, buffer
// resolution and ranks, elementwise function names and arities, statement kinds the simulator
// runs, Smem placement. The executor then only evaluates and checks accesses.
#include <map>
#include <optional>
#include <utility>

#include "kernel_program.h"
#include "tessera/eval/reference_evaluator.h"
#include "tessera/support/internal_check.h"

namespace tessera::sim {

std::string stmt_text(const Stmt& s) {
  std::string text = print_stmt(s);
  size_t nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  size_t start = text.find_first_not_of(' ');
  return start == std::string::npos ? text : text.substr(start);
}

std::string dim3_str(int64_t x, int64_t y, int64_t z) {
  return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")";
}

namespace {

class KernelCompiler {
 public:
  KernelCompiler(const Node& node, const KernelOp& op, const std::vector<GlobalBuffer>& globals)
      : node_(node), op_(op), globals_(globals) {
    const char* hardware[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
                              "blockDim.x",  "blockDim.y",  "blockDim.z",  "gridDim.x",  "gridDim.y",  "gridDim.z"};
    for (int i = 0; i < kHardwareSlots; ++i) {
      scope_.emplace_back(hardware[i], i);
      slot_is_int_.push_back(true);
    }
  }

  Expected<KernelProgram> compile(const std::vector<ScalarBinding>& scalars) {
    for (const ScalarBinding& b : scalars) program_.scalar_slots.emplace_back(define(b.name, b.is_int), b.value);
    if (std::optional<Stmt> foreign = first_stmt_outside(op_.body, kInKernel))
      return error(*foreign, "the simulator does not execute " + std::string(stmt_kind_name(foreign->kind())) + " (a " +
                                 std::string(home_dialect_name(foreign->kind())) + " statement: run materialize first)");
    // Smem buffers are declared at the top level, before their uses (docs/ir.md, Kernel IR).
    TESSERA_ASSIGN_OR_RETURN(program_.body, compile_body(op_.body, /*top_level=*/true));
    program_.slot_count = static_cast<int>(slot_is_int_.size());
    program_.temp_count = temps_;
    return std::move(program_);
  }

 private:
  Diagnostic error(const Stmt& s, const std::string& message) const {
    return make_error("sim: kernel " + op_.name + " (node " + node_.id() + "): at `" + stmt_text(s) + "`: " + message)
        .at_node(node_.id());
  }

  int define(const std::string& name, bool is_int, int64_t registers = 1) {
    int slot = static_cast<int>(slot_is_int_.size());
    for (int64_t i = 0; i < registers; ++i) slot_is_int_.push_back(is_int);
    scope_.emplace_back(name, slot);
    return slot;
  }
  int lookup(const std::string& name) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == name) return it->second;
    return -1;
  }

  // Appends the nodes of `e` to `out`, returning the index of its result node.
  Expected<int> lower_expr(const Expr& e, LaneExpr& out, const Stmt& s) {
    if (!e.defined()) return error(s, "an expression is undefined");
    LaneExprNode n;
    // Index variables and SSA values are both register slots here.
    n.kind = e.is(ExprKind::Value) ? ExprKind::Var : e.kind();
    switch (e.kind()) {
      case ExprKind::Var:
      case ExprKind::Value:
        n.slot = lookup(e.name());
        if (n.slot < 0) return error(s, "uses '" + e.name() + "', which is not bound here");
        n.is_int = slot_is_int_[static_cast<size_t>(n.slot)];
        break;
      case ExprKind::Element: {
        n.slot = lookup(e.name());
        auto array = arrays_.find(e.name());
        if (n.slot < 0 || array == arrays_.end() || array->second.size() != e.operands().size())
          return error(s, "reads " + e.str() + ", but " + e.name() + " is not a register array of that rank here");
        if (e.operands().size() > 3) return error(s, "register arrays have at most 3 dimensions in the simulator");
        for (size_t i = 0; i < e.operands().size(); ++i) {
          TESSERA_ASSIGN_OR_RETURN(n.operands[i], lower_expr(e.operand(i), out, s));
        }
        n.dims = array->second;
        n.is_int = slot_is_int_[static_cast<size_t>(n.slot)];
        out.may_fault = true;  // an index out of bounds
        n.temp = temps_++;
        break;
      }
      case ExprKind::Int: n.literal = static_cast<double>(e.int_value()); n.is_int = true; break;
      case ExprKind::Float: n.literal = f64_context_ ? e.float_value() : static_cast<float>(e.float_value()); break;
      case ExprKind::Add:
      case ExprKind::Sub:
      case ExprKind::Mul:
      case ExprKind::Div:
      case ExprKind::Mod:
      case ExprKind::Min:
      case ExprKind::Max:
      case ExprKind::Lt:
      case ExprKind::Le:
      case ExprKind::Eq:
      case ExprKind::Ne:
      case ExprKind::And:
      case ExprKind::Or:
      case ExprKind::Not:
      case ExprKind::Select:
      case ExprKind::Cast:
      case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr: {
        const auto& ops = e.operands();
        if (ops.size() > 3) return error(s, "an expression has too many operands");
        for (size_t i = 0; i < ops.size(); ++i) {
          TESSERA_ASSIGN_OR_RETURN(n.operands[i], lower_expr(ops[i], out, s));
        }
        auto int_at = [&](int i) { return out.nodes[static_cast<size_t>(n.operands[i])].is_int; };
        switch (e.kind()) {
          case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne:
          case ExprKind::And: case ExprKind::Or: case ExprKind::Not: n.is_int = true; break;
          case ExprKind::Select: n.is_int = int_at(1) && int_at(2); break;
          case ExprKind::Cast:
            n.cast_to = e.cast_type();
            n.is_int = !dtype_is_float(n.cast_to);
            break;
          case ExprKind::Var: case ExprKind::Value: case ExprKind::Int: case ExprKind::Float:
          case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
          case ExprKind::Min: case ExprKind::Max: case ExprKind::Element: n.is_int = int_at(0) && int_at(1); break;
          case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr: case ExprKind::Shl: case ExprKind::Shr:
            // Integer only (the verifier's rule): a float operand would be a fault at run time.
            if (!int_at(0) || !int_at(1)) return error(s, "`" + e.str() + "` applies a bitwise operator to a float operand");
            n.is_int = true;
            break;
        }
        if ((e.kind() == ExprKind::Div || e.kind() == ExprKind::Mod) && n.is_int) out.may_fault = true;
        if (e.kind() == ExprKind::Shl || e.kind() == ExprKind::Shr) out.may_fault = true;  // an amount out of range
        n.temp = temps_++;
      }
    }
    if (n.kind == ExprKind::Int || n.kind == ExprKind::Float) n.temp = temps_++;
    n.in_double = f64_context_;
    out.nodes.push_back(n);
    return static_cast<int>(out.nodes.size()) - 1;
  }

  // The operands of an f64 definition (Assign, Select, Init, Accum) compile in double.
  Status compile_typed_exprs(const ExprList& list, DType type, const Stmt& s, std::vector<LaneExpr>& out) {
    f64_context_ = type == DType::F64;
    Status status = compile_exprs(list, s, out);
    f64_context_ = false;
    return status;
  }

  Expected<LaneExpr> compile_expr(const Expr& e, const Stmt& s) {
    LaneExpr out;
    TESSERA_TRY(lower_expr(e, out, s).status());
    return out;
  }
  Status compile_exprs(const ExprList& list, const Stmt& s, std::vector<LaneExpr>& out) {
    for (const Expr& e : list) {
      TESSERA_ASSIGN_OR_RETURN(LaneExpr c, compile_expr(e, s));
      out.push_back(std::move(c));
    }
    return Status::ok();
  }

  // `name[index]`, a slice of a register array holding `elements` registers per thread.
  Expected<ArraySlice> compile_slice(const std::string& name, const ExprList& index, int64_t elements, const Stmt& s) {
    ArraySlice out;
    out.slot = lookup(name);
    auto array = arrays_.find(name);
    if (out.slot < 0 || array == arrays_.end()) return error(s, "'" + name + "' is not a register array in scope");
    out.dims = array->second;
    if (index.size() >= out.dims.size())
      return error(s, "indexes " + name + " with " + std::to_string(index.size()) + " expression(s), leaving no slice");
    int64_t have = 1;
    for (size_t d = index.size(); d < out.dims.size(); ++d) have *= out.dims[d];
    if (have != elements)
      return error(s, "the slice of " + name + " holds " + std::to_string(have) + " elements per thread, not " +
                          std::to_string(elements));
    TESSERA_TRY(compile_exprs(index, s, out.index));
    return out;
  }

  // `name` indexed with `rank` indices; `write` asks for a buffer the kernel may write.
  Expected<BufferRef> resolve_buffer(const std::string& name, size_t rank, bool write, const Stmt& s) {
    for (size_t i = 0; i < program_.smem.size(); ++i) {
      if (program_.smem[i].name != name) continue;
      if (rank != program_.smem[i].shape.size())
        return error(s, "indexes shared buffer '" + name + "' with " + std::to_string(rank) + " index(es) but it has rank " +
                            std::to_string(program_.smem[i].shape.size()));
      return BufferRef{true, static_cast<int>(i)};
    }
    for (size_t i = 0; i < globals_.size(); ++i) {
      if (globals_[i].name != name) continue;
      if (write && !globals_[i].is_output)
        return error(s, "writes '" + name + "', but a kernel writes only its own output '" + node_.id() + "'");
      size_t have = globals_[i].value->type.shape.size();
      if (rank != have)
        return error(s, "indexes '" + name + "' with " + std::to_string(rank) + " index(es) but it has rank " +
                            std::to_string(have));
      return BufferRef{false, static_cast<int>(i)};
    }
    return error(s, "'" + name + "' is neither a declared Smem buffer, an input of the node, nor its output");
  }

  Expected<std::vector<SimStmt>> compile_body(const Body& body, bool top_level) {
    size_t mark = scope_.size();
    std::vector<SimStmt> out;
    for (const Stmt& s : body) {
      if (!s.defined()) return make_error("sim: kernel " + op_.name + " holds an undefined statement").at_node(node_.id());
      TESSERA_ASSIGN_OR_RETURN(SimStmt c, compile_stmt(s, top_level));
      out.push_back(std::move(c));
    }
    scope_.resize(mark);
    return out;
  }

  Expected<SimStmt> compile_stmt(const Stmt& s, bool top_level) {
    SimStmt c;
    c.kind = s.kind();
    c.source = &s;
    switch (s.kind()) {
      case StmtKind::Load: {
        const auto* st = s.as<Load>();
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->buffer, st->index.size(), false, s));
        TESSERA_TRY(compile_exprs(st->index, s, c.index));
        c.value_type = st->type.dtype;
        c.slot = define(st->dst, !dtype_is_float(st->type.dtype));
        break;
      }
      case StmtKind::Assign: {
        const auto* st = s.as<Assign>();
        TESSERA_TRY(compile_typed_exprs(st->args, st->type.dtype, s, c.exprs));
        // Checks the arity once here; the executor applies the function per lane.
        if (Status arity = check_arity(st->op, st->args.size()); !arity.is_ok()) return error(s, arity.error().message);
        c.fn = st->op;
        c.value_type = st->type.dtype;
        c.slot = define(st->dst, !dtype_is_float(st->type.dtype));
        break;
      }
      case StmtKind::Select: {
        const auto* st = s.as<Select>();
        TESSERA_TRY(compile_typed_exprs({st->cond, st->then_value, st->else_value}, st->type.dtype, s, c.exprs));
        c.value_type = st->type.dtype;
        c.slot = define(st->dst, !dtype_is_float(st->type.dtype));
        break;
      }
      case StmtKind::Init: {
        const auto* st = s.as<Init>();
        TESSERA_TRY(compile_typed_exprs({st->value}, st->type.dtype, s, c.exprs));
        if (st->type.array.size() > 3) return error(s, "register arrays have at most 3 dimensions in the simulator");
        c.value_type = st->type.dtype;
        c.dims = st->type.array;
        if (st->type.is_array()) arrays_[st->acc] = st->type.array;
        else arrays_.erase(st->acc);
        c.slot = define(st->acc, !dtype_is_float(st->type.dtype), st->type.array_elements());
        acc_type_[c.slot] = st->type.dtype;
        if (st->type.is_array()) program_.arrays.push_back(RegisterArray{st->acc, c.slot, st->type.array});
        break;
      }
      case StmtKind::Accum: {
        const auto* st = s.as<Accum>();
        const int acc_slot = lookup(st->acc);
        auto acc_type = acc_slot < 0 ? acc_type_.end() : acc_type_.find(acc_slot);
        TESSERA_TRY(compile_typed_exprs({st->value}, acc_type == acc_type_.end() ? DType::F32 : acc_type->second, s, c.exprs));
        c.slot = lookup(st->acc);
        if (c.slot < 0) return error(s, "accumulates into '" + st->acc + "', which has no init in scope");
        c.accum = st->op;
        auto type = acc_type_.find(c.slot);
        if (type != acc_type_.end()) c.value_type = type->second;
        auto array = arrays_.find(st->acc);
        const size_t rank = array == arrays_.end() ? 0 : array->second.size();
        if (st->index.size() != rank)
          return error(s, "indexes '" + st->acc + "' with " + std::to_string(st->index.size()) +
                              " index expression(s) but it has rank " + std::to_string(rank));
        if (rank > 0) c.dims = array->second;
        TESSERA_TRY(compile_exprs(st->index, s, c.index));
        break;
      }
      case StmtKind::Write: {
        const auto* st = s.as<Write>();
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->buffer, st->index.size(), true, s));
        TESSERA_TRY(compile_exprs(st->index, s, c.index));
        TESSERA_TRY(compile_exprs({st->value}, s, c.exprs));
        break;
      }
      case StmtKind::Loop: {
        const auto* st = s.as<Loop>();
        TESSERA_TRY(compile_exprs({st->begin, st->end}, s, c.exprs));
        size_t mark = scope_.size();
        c.slot = define(st->var, true);
        TESSERA_ASSIGN_OR_RETURN(c.body, compile_body(st->body, false));
        scope_.resize(mark);
        break;
      }
      case StmtKind::StridedLoop: {
        const auto* st = s.as<StridedLoop>();
        TESSERA_TRY(compile_exprs({st->begin, st->end, st->step}, s, c.exprs));
        size_t mark = scope_.size();
        c.slot = define(st->var, true);
        TESSERA_ASSIGN_OR_RETURN(c.body, compile_body(st->body, false));
        scope_.resize(mark);
        break;
      }
      case StmtKind::Cond: {
        const auto* st = s.as<Cond>();
        TESSERA_TRY(compile_exprs({st->cond}, s, c.exprs));
        TESSERA_ASSIGN_OR_RETURN(c.body, compile_body(st->then_body, false));
        TESSERA_ASSIGN_OR_RETURN(c.else_body, compile_body(st->else_body, false));
        // Branches that may wait for each other run as concurrent roles (role_scheduler.h).
        auto waits = [](const Body& b) {
          return contains_stmt_kind(b, StmtKind::MbarrierWait) || contains_stmt_kind(b, StmtKind::NamedBarrier) ||
                 contains_stmt_kind(b, StmtKind::SetMaxNReg);
        };
        c.concurrent = !st->then_body.empty() && !st->else_body.empty() && (waits(st->then_body) || waits(st->else_body));
        program_.orders_by_barriers |= c.concurrent;
        break;
      }
      case StmtKind::Let: {
        const auto* st = s.as<Let>();
        TESSERA_ASSIGN_OR_RETURN(LaneExpr value, compile_expr(st->value, s));
        bool is_int = value.is_int();
        c.exprs.push_back(std::move(value));
        c.slot = define(st->var, is_int);
        break;
      }
      case StmtKind::Smem: {
        const auto* st = s.as<Smem>();
        if (!top_level) return error(s, "Smem must be declared at the top level of the kernel body");
        if (lookup_smem(st->name) >= 0) return error(s, "shared buffer '" + st->name + "' is declared twice");
        for (int64_t d : st->shape)
          if (d <= 0) return error(s, "shared buffer '" + st->name + "' has a non-positive dimension");
        program_.smem.push_back(SmemDecl{st->name, st->dtype, st->shape, st->slots, st->align, st->swizzle});
        break;
      }
      case StmtKind::Sync:
      case StmtKind::CpAsyncCommit: {
        // no operands
        break;
      }
      case StmtKind::ClusterSync:
        // The executor runs a cluster's blocks from one top-level ClusterSync to the next.
        if (!top_level) return error(s, "ClusterSync must stand at the top level of the kernel body");
        if (op_.cluster.empty()) return error(s, "ClusterSync in a kernel launched without cluster dims");
        break;
      case StmtKind::DsmemLoad: {
        const auto* st = s.as<DsmemLoad>();
        if (op_.cluster.empty()) return error(s, "DsmemLoad in a kernel launched without cluster dims");
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->buffer, st->index.size(), false, s));
        if (!c.buffer.shared) return error(s, "DsmemLoad reads '" + st->buffer + "', which is not a shared buffer");
        TESSERA_TRY(compile_exprs(st->index, s, c.index));
        TESSERA_ASSIGN_OR_RETURN(LaneExpr rank, compile_expr(st->rank, s));
        if (!rank.is_int()) return error(s, "the rank of a DsmemLoad must be an integer");
        c.exprs.push_back(std::move(rank));
        c.value_type = st->type.dtype;
        c.slot = define(st->dst, !dtype_is_float(st->type.dtype));
        break;
      }
      case StmtKind::Fragment: {
        const auto* st = s.as<Fragment>();
        if (!st->type.is_array()) return error(s, "a fragment is a register array");
        c.value_type = st->type.dtype;
        c.dims = st->type.array;
        arrays_[st->name] = st->type.array;
        c.slot = define(st->name, false, st->type.array_elements());
        program_.arrays.push_back(RegisterArray{st->name, c.slot, st->type.array});
        break;
      }
      case StmtKind::LdMatrix: {
        const auto* st = s.as<LdMatrix>();
        if (st->count != 1 && st->count != 2 && st->count != 4) return error(s, "ldmatrix loads 1, 2 or 4 matrices");
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->buffer, st->index.size(), false, s));
        if (!c.buffer.shared) return error(s, "ldmatrix reads '" + st->buffer + "', which is not a shared buffer");
        if (dtype_bytes(program_.smem[static_cast<size_t>(c.buffer.index)].dtype) != 2)
          return error(s, "ldmatrix moves 16-bit elements, but '" + st->buffer + "' holds " +
                              std::string(dtype_short_name(program_.smem[static_cast<size_t>(c.buffer.index)].dtype)));
        TESSERA_TRY(compile_exprs(st->index, s, c.index));
        TESSERA_ASSIGN_OR_RETURN(ArraySlice dst, compile_slice(st->dst, st->dst_index, 2 * st->count, s));
        c.slices.push_back(std::move(dst));
        c.count = st->count;
        c.transpose = st->layout == LdMatrixLayout::Trans;
        c.value_type = program_.smem[static_cast<size_t>(c.buffer.index)].dtype;
        break;
      }
      case StmtKind::MmaSync: {
        const auto* st = s.as<MmaSync>();
        const MmaDims d = mma_dims(st->shape);
        TESSERA_ASSIGN_OR_RETURN(ArraySlice acc, compile_slice(st->acc, st->acc_index, d.c_elements(), s));
        TESSERA_ASSIGN_OR_RETURN(ArraySlice a, compile_slice(st->a, st->a_index, d.a_elements(), s));
        TESSERA_ASSIGN_OR_RETURN(ArraySlice b, compile_slice(st->b, st->b_index, d.b_elements(), s));
        c.slices = {std::move(acc), std::move(a), std::move(b)};
        c.shape = st->shape;
        c.value_type = st->type;
        break;
      }
      case StmtKind::WgmmaMma: {
        const auto* st = s.as<WgmmaMma>();
        const std::string wgmma = "wgmma.m64n" + std::to_string(st->n) + "k16";
        if (!wgmma_n_is_valid(st->n)) return error(s, wgmma + ": N must be a multiple of 8 from 8 to 256");
        if (st->type != DType::BF16 && st->type != DType::F16) return error(s, wgmma + " multiplies bf16 or f16");
        TESSERA_ASSIGN_OR_RETURN(ArraySlice acc, compile_slice(st->acc, st->acc_index, st->n / 2, s));
        c.slices.push_back(std::move(acc));
        const struct {
          const std::string* name;
          const ExprList* index;
          WgmmaOperand desc;
          BufferRef* ref;
          std::vector<LaneExpr>* compiled;
          const char* what;
        } operands[2] = {{&st->a, &st->a_index, {st->a_lbo, st->a_sbo, st->a_swizzle, MatrixMajor::K}, &c.buffer, &c.index, "A"},
                         {&st->b, &st->b_index, {st->b_lbo, st->b_sbo, st->b_swizzle, st->b_major}, &c.src_buffer, &c.src_index, "B"}};
        for (int i = 0; i < 2; ++i) {
          const auto& o = operands[i];
          TESSERA_ASSIGN_OR_RETURN(*o.ref, resolve_buffer(*o.name, o.index->size(), false, s));
          if (!o.ref->shared)
            return error(s, wgmma + " reads its " + o.what + " operand from '" + *o.name + "', which is not a shared buffer");
          const SmemDecl& buf = program_.smem[static_cast<size_t>(o.ref->index)];
          if (buf.dtype != st->type)
            return error(s, wgmma + "." + std::string(dtype_short_name(st->type)) + " reads its " + o.what + " operand from '" +
                                buf.name + "', which holds " + std::string(dtype_short_name(buf.dtype)));
          // The descriptor's swizzle must be the one the rows were written in (the buffer's).
          if (o.desc.swizzle != buf.swizzle)
            return error(s, "the " + std::string(o.what) + " descriptor reads '" + buf.name + "' as swizzle=" +
                                std::string(spelling(o.desc.swizzle)) + ", but its rows are laid out in swizzle=" +
                                std::string(spelling(buf.swizzle)) + " (the Smem declaration's)");
          if (const int64_t span = swizzle_span_bytes(buf.swizzle); span > 0 && buf.align % (8 * span) != 0)
            return error(s, "'" + buf.name + "' is aligned to " + std::to_string(buf.align) + " bytes; its " +
                                std::string(spelling(buf.swizzle)) + " swizzle needs " + std::to_string(8 * span));
          for (int64_t stride : {o.desc.lbo, o.desc.sbo})
            if (stride <= 0 || stride % 16 != 0 || stride >= (int64_t{1} << 18))
              return error(s, "the " + std::string(o.what) + " descriptor's strides must be positive multiples of 16 bytes below 2^18");
          c.wgmma[i] = o.desc;
          TESSERA_TRY(compile_exprs(*o.index, s, *o.compiled));
        }
        c.count = st->n;
        c.value_type = st->type;
        program_.has_wgmma = true;
        break;
      }
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
        program_.has_wgmma = true;
        break;
      case StmtKind::WgmmaWait: {
        const auto* st = s.as<WgmmaWait>();
        if (st->keep < 0 || st->keep > 7) return error(s, "WgmmaWait keeps 0 to 7 groups in flight");
        c.count = st->keep;
        program_.has_wgmma = true;
        break;
      }
      case StmtKind::CpAsyncWait: {
        const auto* st = s.as<CpAsyncWait>();
        if (st->keep < 0) return error(s, "keep must be non-negative");
        c.count = st->keep;
        break;
      }
      case StmtKind::CpAsyncCopy: {
        const auto* st = s.as<CpAsyncCopy>();
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->dst, st->dst_index.size(), false, s));
        TESSERA_ASSIGN_OR_RETURN(c.src_buffer, resolve_buffer(st->src, st->src_index.size(), false, s));
        if (!c.buffer.shared || c.src_buffer.shared) return error(s, "cp.async copies from global to shared memory");
        DType dst_type = program_.smem[static_cast<size_t>(c.buffer.index)].dtype;
        DType src_type = globals_[static_cast<size_t>(c.src_buffer.index)].value->type.dtype;
        if (dtype_bytes(dst_type) != dtype_bytes(src_type))
          return error(s, "copies " + std::string(dtype_short_name(src_type)) + " elements into a " +
                              std::string(dtype_short_name(dst_type)) + " buffer (cp.async copies bytes)");
        if (st->bytes <= 0 || st->bytes % dtype_bytes(src_type) != 0)
          return error(s, "bytes=" + std::to_string(st->bytes) + " is not a positive multiple of the element size " +
                              std::to_string(dtype_bytes(src_type)));
        c.count = st->bytes / dtype_bytes(src_type);
        TESSERA_TRY(compile_exprs(st->dst_index, s, c.index));
        TESSERA_TRY(compile_exprs(st->src_index, s, c.src_index));
        break;
      }
      case StmtKind::WarpShuffle: {
        const auto* st = s.as<WarpShuffle>();
        TESSERA_TRY(compile_exprs({st->src}, s, c.exprs));
        c.mode = st->mode;
        if (st->width <= 0 || st->width > 32 || (st->width & (st->width - 1)) != 0)
          return error(s, "width must be a power of two in [1, 32]");
        if (st->offset < 0) return error(s, "offset must be non-negative");
        c.count = st->offset;
        c.width = st->width;
        c.value_type = st->type.dtype;
        c.slot = define(st->dst, !dtype_is_float(st->type.dtype));
        break;
      }
      case StmtKind::TreeHalve: {
        const auto* st = s.as<TreeHalve>();
        c.buffer = BufferRef{true, lookup_smem(st->buffer)};
        if (c.buffer.index < 0) return error(s, "'" + st->buffer + "' is not a declared Smem buffer");
        int64_t size = 1;
        for (int64_t d : program_.smem[static_cast<size_t>(c.buffer.index)].shape) size *= d;
        if (st->count <= 0 || st->count > size)
          return error(s, "n=" + std::to_string(st->count) + " is outside the buffer's " + std::to_string(size) + " elements");
        c.count = st->count;
        c.accum = st->op;
        TESSERA_TRY(compile_exprs({st->tid}, s, c.exprs));
        break;
      }
      case StmtKind::VectorLoad: {
        const auto* st = s.as<VectorLoad>();
        if (st->dsts.empty()) return error(s, "a vector load needs at least one destination");
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->buffer, st->index.size(), false, s));
        if (st->index.empty()) return error(s, "a vector access needs an index");
        TESSERA_TRY(compile_exprs(st->index, s, c.index));
        c.value_type = st->type.dtype;
        for (const std::string& d : st->dsts) c.slots.push_back(define(d, !dtype_is_float(st->type.dtype)));
        break;
      }
      case StmtKind::VectorStore: {
        const auto* st = s.as<VectorStore>();
        if (st->values.empty()) return error(s, "a vector store needs at least one value");
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->buffer, st->index.size(), true, s));
        if (st->index.empty()) return error(s, "a vector access needs an index");
        TESSERA_TRY(compile_exprs(st->index, s, c.index));
        TESSERA_TRY(compile_exprs(st->values, s, c.exprs));
        break;
      }
      case StmtKind::MbarrierInit: {
        const auto* st = s.as<MbarrierInit>();
        if (!top_level) return error(s, "MbarrierInit must be at the top level of the kernel body (every thread reaches it)");
        if (lookup_barrier(st->name) >= 0) return error(s, "barrier '" + st->name + "' is initialized twice");
        if (st->count < 1 || st->slots < 1) return error(s, "a barrier needs count >= 1 and slots >= 1");
        c.barrier = static_cast<int>(program_.barriers.size());
        program_.barriers.push_back(BarrierDecl{st->name, st->count, st->slots});
        break;
      }
      case StmtKind::MbarrierArrive: {
        const auto* st = s.as<MbarrierArrive>();
        TESSERA_ASSIGN_OR_RETURN(c.barrier, resolve_barrier(st->barrier, s));
        if (st->tx_bytes < 0) return error(s, "tx must be non-negative");
        c.count = st->tx_bytes;
        TESSERA_TRY(compile_exprs({st->barrier_slot}, s, c.exprs));
        break;
      }
      case StmtKind::NamedBarrier: {
        const auto* st = s.as<NamedBarrier>();
        const int64_t threads = op_.block[0] * op_.block[1] * op_.block[2];
        if (!named_barrier_id_is_valid(st->id)) return error(s, "a named barrier's id is 1 to 15 (0 is Sync()'s)");
        if (!named_barrier_threads_is_valid(st->threads, threads))
          return error(s, "a named barrier counts whole warps of the block: " + std::to_string(st->threads) +
                              " threads is not a positive multiple of 32 up to the block's " + std::to_string(threads));
        c.barrier = static_cast<int>(st->id);
        c.count = st->threads;
        program_.orders_by_barriers = true;
        break;
      }
      case StmtKind::SetMaxNReg: {
        const auto* st = s.as<SetMaxNReg>();
        if (!setmaxnreg_count_is_valid(st->regs))
          return error(s, "setmaxnreg takes a multiple of 8 registers from 24 to 256, not " + std::to_string(st->regs));
        c.count = st->regs;
        c.reg_action = st->action;
        break;
      }
      case StmtKind::MbarrierWait: {
        const auto* st = s.as<MbarrierWait>();
        TESSERA_ASSIGN_OR_RETURN(c.barrier, resolve_barrier(st->barrier, s));
        TESSERA_TRY(compile_exprs({st->barrier_slot, st->phase}, s, c.exprs));
        break;
      }
      case StmtKind::TmaLoad: {
        const auto* st = s.as<TmaLoad>();
        TESSERA_ASSIGN_OR_RETURN(c.barrier, resolve_barrier(st->barrier, s));
        c.buffer = BufferRef{true, lookup_smem(st->dst)};
        if (c.buffer.index < 0) return error(s, "'" + st->dst + "' is not a declared Smem buffer (TMA copies into shared memory)");
        const SmemDecl& dst = program_.smem[static_cast<size_t>(c.buffer.index)];
        if (!st->dst_index.empty() && st->dst_index.size() != dst.shape.size())
          return error(s, "indexes '" + st->dst + "' with " + std::to_string(st->dst_index.size()) +
                              " index expression(s) but it has rank " + std::to_string(dst.shape.size()));
        for (size_t i = 0; i < op_.params.size(); ++i) {
          const KernelParam& p = op_.params[i];
          if (p.kind != ParamKind::TensorMap || p.name != st->desc) continue;
          TensorMapDecl map{p.name, p.tensor_map, -1};
          for (size_t g = 0; g < globals_.size(); ++g)
            if (globals_[g].name == p.tensor_map.buffer) map.buffer = static_cast<int>(g);
          if (map.buffer < 0) return error(s, "tensor map '" + p.name + "' covers '" + p.tensor_map.buffer + "', not a buffer of the kernel");
          c.tensor_map = static_cast<int>(program_.tensor_maps.size());
          program_.tensor_maps.push_back(std::move(map));
        }
        if (c.tensor_map < 0) return error(s, "'" + st->desc + "' is not a tensor-map parameter of the kernel");
        const TensorMapDecl& map = program_.tensor_maps.back();
        const TensorType& src = globals_[static_cast<size_t>(map.buffer)].value->type;
        if (src.dtype != dst.dtype)
          return error(s, "copies " + std::string(dtype_short_name(src.dtype)) + " elements into the " +
                              std::string(dtype_short_name(dst.dtype)) + " buffer '" + dst.name + "'");
        if (st->coords.size() != map.spec.box.size())
          return error(s, "gives " + std::to_string(st->coords.size()) + " coordinates for a box of rank " +
                              std::to_string(map.spec.box.size()));
        if (map.spec.swizzle != dst.swizzle)
          return error(s, "lands the box in the tensor map's " + std::string(spelling(map.spec.swizzle)) + " swizzle, but '" +
                              dst.name + "' is declared swizzle=" + std::string(spelling(dst.swizzle)));
        // The swizzle pattern follows address bits up to 8 swizzle spans: the buffer must start
        // on such a boundary for the pattern the consumer's loads assume.
        if (const int64_t span = swizzle_span_bytes(dst.swizzle); span > 0 && dst.align % (8 * span) != 0)
          return error(s, "'" + dst.name + "' is aligned to " + std::to_string(dst.align) + " bytes; its " +
                              std::string(spelling(dst.swizzle)) + " swizzle needs " + std::to_string(8 * span));
        TESSERA_TRY(compile_exprs(st->dst_index, s, c.index));
        TESSERA_TRY(compile_exprs(st->coords, s, c.src_index));
        TESSERA_TRY(compile_exprs({st->barrier_slot}, s, c.exprs));
        break;
      }
      case StmtKind::Tile:
      case StmtKind::Stage:
      case StmtKind::Combine:
      case StmtKind::AsyncWait:
      case StmtKind::SlabMap:
        TESSERA_UNREACHABLE("compile_kernel refuses kinds outside Kernel IR (first_stmt_outside) before compiling");
    }
    return c;
  }

  Expected<int> resolve_barrier(const std::string& name, const Stmt& s) const {
    const int b = lookup_barrier(name);
    if (b < 0) return error(s, "'" + name + "' is not a barrier an MbarrierInit above declared");
    return b;
  }
  int lookup_barrier(const std::string& name) const {
    for (size_t i = 0; i < program_.barriers.size(); ++i)
      if (program_.barriers[i].name == name) return static_cast<int>(i);
    return -1;
  }

  int lookup_smem(const std::string& name) const {
    for (size_t i = 0; i < program_.smem.size(); ++i)
      if (program_.smem[i].name == name) return static_cast<int>(i);
    return -1;
  }

  const Node& node_;
  const KernelOp& op_;
  const std::vector<GlobalBuffer>& globals_;
  KernelProgram program_;
  std::vector<std::pair<std::string, int>> scope_;
  std::vector<bool> slot_is_int_;
  std::map<int, DType> acc_type_;  // accumulator slot -> its dtype (Accum rounds to it)
  bool f64_context_ = false;       // compiling the operands of an f64 definition (compile_typed_exprs)
  std::map<std::string, std::vector<int64_t>> arrays_;  // register arrays -> their shape
  int temps_ = 0;
};

}  // namespace

Expected<KernelProgram> compile_kernel(const Node& node, const KernelOp& op, const std::vector<GlobalBuffer>& globals,
                                       const std::vector<ScalarBinding>& scalars) {
  return KernelCompiler(node, op, globals).compile(scalars);
}

}  // namespace tessera::sim

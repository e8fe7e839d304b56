// evaluate_loop_ir: runs a Loop IR graph on the CPU. Each LoopOp body is compiled once (names
// resolved to environment slots, elementwise functions and buffers looked up) and then executed
// statement by statement, checking every memory access.
#include "tessera/eval/loop_interpreter.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiled_expr.h"
#include "leaf_values.h"
#include "tessera/ir/elementwise_fn.h"
#include "tessera/support/internal_check.h"

namespace tessera {
namespace {

using eval::CompiledExpr;
using eval::Scalar;
using eval::eval_expr;

// A buffer a kernel may touch: one of the node's inputs (read-only) or its own output.
struct BufferSlot {
  std::string name;
  const TensorValue* input = nullptr;  // null for the output buffer
  std::vector<int64_t> strides;
  Shape shape;
  bool is_int = false;
};

struct CompiledStmt {
  StmtKind kind = StmtKind::Sync;
  const Stmt* source = nullptr;  // for error messages
  int slot = -1;                 // the name it defines (or the accumulator it updates)
  int buffer = -1;
  std::vector<CompiledExpr> exprs;
  ElementwiseFn fn = ElementwiseFn::Identity;  // Assign
  CombineFn accum = CombineFn::Add;             // Accum
  DType type = DType::F32;  // the dtype of the value it defines or accumulates
  // Assign of an f64 value: per argument, the narrower float type it is read as stored in (f32
  // values keep double precision here, so widening rounds them first, as PyTorch's conversion).
  std::vector<std::optional<DType>> widen_from;
  std::vector<int64_t> dims;  // Init / Accum of a register array: its shape (elements are slots slot..)
  std::vector<CompiledStmt> body, else_body;
};

// A value as its type holds it. f32 values keep double precision here (the reference's precision),
// half types are rounded to their storage format, integers and booleans conformed.
Scalar typed_scalar(double v, DType type) {
  if (type == DType::F32) return Scalar{v, false};
  if (dtype_is_float(type)) return Scalar{round_to_storage(v, type), false};
  return Scalar{conform_to_dtype(v, type), true};
}

std::string first_line(const std::string& s) {
  size_t nl = s.find('\n');
  std::string line = nl == std::string::npos ? s : s.substr(0, nl);
  size_t start = line.find_first_not_of(' ');
  return start == std::string::npos ? line : line.substr(start);
}

Diagnostic stmt_error(const Node& n, const Stmt& s, const std::string& message) {
  return make_error(n.id() + ": at `" + first_line(print_stmt(s)) + "`: " + message).at_node(n.id());
}

std::string index_str(const std::vector<int64_t>& index) {
  std::string s = "[";
  for (size_t i = 0; i < index.size(); ++i) s += (i ? ", " : "") + std::to_string(index[i]);
  return s + "]";
}

// Resolves names and buffers of one LoopOp body.
class KernelCompiler {
 public:
  KernelCompiler(const Node& node, std::vector<BufferSlot>& buffers) : node_(node), buffers_(buffers) {}

  Expected<std::vector<CompiledStmt>> compile_body(const Body& body) {
    size_t mark = scope_.size();
    std::vector<CompiledStmt> out;
    for (const Stmt& s : body) {
      if (!s.defined()) return make_error(node_.id() + ": kernel body holds an undefined statement").at_node(node_.id());
      TESSERA_ASSIGN_OR_RETURN(CompiledStmt c, compile_stmt(s));
      out.push_back(std::move(c));
    }
    scope_.resize(mark);
    return out;
  }

  int slot_count() const { return next_slot_; }

 private:
  int define(const std::string& name, int64_t slots = 1) {
    scope_.emplace_back(name, next_slot_);
    int first = next_slot_;
    next_slot_ += static_cast<int>(slots);
    return first;
  }
  std::map<std::string, DType> value_dtypes_;  // SSA value -> its dtype (names are unique per kernel)
  int lookup(const std::string& name) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == name) return it->second;
    return -1;
  }

  Expected<CompiledExpr> compile_expr(const Expr& e, const Stmt& s) {
    std::string unbound;
    auto c = eval::compile_expr(
        e, [&](const std::string& name) { return lookup(name); }, unbound,
        [&](const std::string& name) -> const std::vector<int64_t>* {
          auto it = arrays_.find(name);
          return it == arrays_.end() ? nullptr : &it->second;
        });
    if (c) return std::move(*c);
    if (unbound.empty()) return stmt_error(node_, s, "an expression is undefined");
    return stmt_error(node_, s, "uses '" + unbound + "', which is not bound here");
  }

  Status compile_exprs(const ExprList& list, const Stmt& s, CompiledStmt& c) {
    for (const Expr& e : list) {
      TESSERA_ASSIGN_OR_RETURN(CompiledExpr ce, compile_expr(e, s));
      c.exprs.push_back(std::move(ce));
    }
    return Status::ok();
  }

  // The buffer `name` with an index of `rank` entries; `write` asks for the node's own output.
  Expected<int> resolve_buffer(const std::string& name, size_t rank, bool write, const Stmt& s) {
    int found = -1;
    for (size_t i = 0; i < buffers_.size(); ++i)
      if (buffers_[i].name == name) found = static_cast<int>(i);
    if (found < 0)
      return stmt_error(node_, s, "'" + name + "' is neither an input of the node nor its output buffer");
    const BufferSlot& b = buffers_[static_cast<size_t>(found)];
    if (write && b.input != nullptr)
      return stmt_error(node_, s, "writes '" + name + "', but a kernel writes only its own output '" + node_.id() + "'");
    if (rank != b.shape.size())
      return stmt_error(node_, s, "indexes '" + name + "' with " + std::to_string(rank) + " index expression(s) but it has rank " +
                                      std::to_string(b.shape.size()));
    return found;
  }

  Expected<CompiledStmt> compile_stmt(const Stmt& s) {
    CompiledStmt c;
    c.kind = s.kind();
    c.source = &s;
    switch (s.kind()) {
      case StmtKind::Load: {
        const auto* st = s.as<Load>();
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->buffer, st->index.size(), false, s));
        TESSERA_TRY(compile_exprs(st->index, s, c));
        c.type = st->type.dtype;
        c.slot = define(st->dst);
        value_dtypes_[st->dst] = c.type;
        break;
      }
      case StmtKind::Assign: {
        const auto* st = s.as<Assign>();
        TESSERA_TRY(compile_exprs(st->args, s, c));
        if (Status arity = check_arity(st->op, st->args.size()); !arity.is_ok())
          return stmt_error(node_, s, arity.error().message);
        c.fn = st->op;
        c.type = st->type.dtype;
        if (c.type == DType::F64)
          for (const Expr& a : st->args) {
            auto it = a.is_name() ? value_dtypes_.find(a.name()) : value_dtypes_.end();
            const bool narrower = it != value_dtypes_.end() && dtype_is_float(it->second) && it->second != DType::F64;
            c.widen_from.push_back(narrower ? std::optional<DType>(it->second) : std::nullopt);
          }
        c.slot = define(st->dst);
        value_dtypes_[st->dst] = c.type;
        break;
      }
      case StmtKind::Select: {
        const auto* st = s.as<Select>();
        TESSERA_TRY(compile_exprs({st->cond, st->then_value, st->else_value}, s, c));
        c.type = st->type.dtype;
        c.slot = define(st->dst);
        value_dtypes_[st->dst] = c.type;
        break;
      }
      case StmtKind::Init: {
        const auto* st = s.as<Init>();
        TESSERA_TRY(compile_exprs({st->value}, s, c));
        c.type = st->type.dtype;
        c.dims = st->type.array;
        acc_types_[st->acc] = c.type;
        if (st->type.is_array()) arrays_[st->acc] = st->type.array;
        else arrays_.erase(st->acc);
        c.slot = define(st->acc, st->type.array_elements());
        break;
      }
      case StmtKind::Accum: {
        const auto* st = s.as<Accum>();
        TESSERA_TRY(compile_exprs({st->value}, s, c));
        c.slot = lookup(st->acc);
        if (c.slot < 0) return stmt_error(node_, s, "accumulates into '" + st->acc + "', which has no init in scope");
        c.type = acc_types_[st->acc];
        auto array = arrays_.find(st->acc);
        const size_t rank = array == arrays_.end() ? 0 : array->second.size();
        if (st->index.size() != rank)
          return stmt_error(node_, s, "indexes '" + st->acc + "' with " + std::to_string(st->index.size()) +
                                          " index expression(s) but it has rank " + std::to_string(rank));
        if (rank > 0) c.dims = array->second;
        TESSERA_TRY(compile_exprs(st->index, s, c));
        c.accum = st->op;
        break;
      }
      case StmtKind::Write: {
        const auto* st = s.as<Write>();
        TESSERA_ASSIGN_OR_RETURN(c.buffer, resolve_buffer(st->buffer, st->index.size(), true, s));
        TESSERA_TRY(compile_exprs(st->index, s, c));
        TESSERA_TRY(compile_exprs({st->value}, s, c));
        break;
      }
      case StmtKind::Loop: {
        const auto* st = s.as<Loop>();
        TESSERA_TRY(compile_exprs({st->begin, st->end}, s, c));
        size_t mark = scope_.size();
        c.slot = define(st->var);
        TESSERA_ASSIGN_OR_RETURN(c.body, compile_body(st->body));
        scope_.resize(mark);
        break;
      }
      case StmtKind::Cond: {
        const auto* st = s.as<Cond>();
        TESSERA_TRY(compile_exprs({st->cond}, s, c));
        TESSERA_ASSIGN_OR_RETURN(c.body, compile_body(st->then_body));
        TESSERA_ASSIGN_OR_RETURN(c.else_body, compile_body(st->else_body));
        break;
      }
      case StmtKind::Let:
      case StmtKind::Tile:
      case StmtKind::StridedLoop:
      case StmtKind::Stage:
      case StmtKind::Combine:
      case StmtKind::AsyncWait:
      case StmtKind::SlabMap:
      case StmtKind::Smem:
      case StmtKind::Sync:
      case StmtKind::CpAsyncCopy:
      case StmtKind::CpAsyncCommit:
      case StmtKind::CpAsyncWait:
      case StmtKind::TmaLoad:
      case StmtKind::MbarrierInit:
      case StmtKind::MbarrierArrive:
      case StmtKind::MbarrierWait:
      case StmtKind::NamedBarrier:
      case StmtKind::SetMaxNReg:
      case StmtKind::WarpShuffle:
      case StmtKind::TreeHalve:
      case StmtKind::VectorLoad:
      case StmtKind::VectorStore:
      case StmtKind::ClusterSync:
      case StmtKind::DsmemLoad:
      case StmtKind::Fragment:
      case StmtKind::LdMatrix:
      case StmtKind::MmaSync:
      case StmtKind::WgmmaMma:
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
      case StmtKind::WgmmaWait:
        TESSERA_UNREACHABLE("run_loop_node refuses kinds outside Loop IR (first_stmt_outside) before compiling");
    }
    return c;
  }

  const Node& node_;
  std::vector<BufferSlot>& buffers_;
  std::vector<std::pair<std::string, int>> scope_;
  std::map<std::string, DType> acc_types_;
  std::map<std::string, std::vector<int64_t>> arrays_;  // register arrays in scope -> their shape
  int next_slot_ = 0;
};

// Executes one compiled kernel into `out`.
class KernelRunner {
 public:
  KernelRunner(const Node& node, const std::vector<BufferSlot>& buffers, int slots, TensorValue& out)
      : node_(node), buffers_(buffers), env_(static_cast<size_t>(slots)), out_(out),
        written_(static_cast<size_t>(out.size()), false) {}

  Status run(const std::vector<CompiledStmt>& body) {
    TESSERA_TRY(run_body(body));
    for (size_t i = 0; i < written_.size(); ++i)
      if (!written_[i])
        return make_error(node_.id() + ": the kernel never writes output element " +
                          index_str(unflatten_index(static_cast<int64_t>(i), out_.type.shape)))
            .at_node(node_.id());
    return Status::ok();
  }

 private:
  Expected<Scalar> eval(const CompiledExpr& e, const CompiledStmt& s) {
    bool fault = false;
    Scalar v = eval_expr(e, env_, fault);
    if (fault) return stmt_error(node_, *s.source, "integer division or modulo by zero, a shift amount outside [0, 32), or a register array index out of bounds");
    return v;
  }

  // Flat offset of the index held by s.exprs[0..rank) in buffer s.buffer, bounds-checked.
  Expected<int64_t> offset_of(const CompiledStmt& s) {
    const BufferSlot& b = buffers_[static_cast<size_t>(s.buffer)];
    index_.assign(b.shape.size(), 0);
    for (size_t d = 0; d < b.shape.size(); ++d) {
      TESSERA_ASSIGN_OR_RETURN(Scalar x, eval(s.exprs[d], s));
      int64_t extent = b.shape[d].value();
      if (!(x.v >= 0 && x.v < static_cast<double>(extent)) || x.v != std::floor(x.v)) {
        return stmt_error(node_, *s.source, "index " + std::to_string(x.v) + " of dimension " + std::to_string(d) +
                                                " of '" + b.name + "' is out of bounds (size " + std::to_string(extent) + ")");
      }
      index_[d] = static_cast<int64_t>(x.v);
    }
    return flat_offset(index_, b.strides);
  }

  Status run_body(const std::vector<CompiledStmt>& body) {
    for (const CompiledStmt& s : body) TESSERA_TRY(run_stmt(s));
    return Status::ok();
  }

  Status run_stmt(const CompiledStmt& s) {
    switch (s.kind) {
      case StmtKind::Load: {
        TESSERA_ASSIGN_OR_RETURN(int64_t off, offset_of(s));
        const BufferSlot& b = buffers_[static_cast<size_t>(s.buffer)];
        double v;
        if (b.input != nullptr) {
          v = b.input->data[static_cast<size_t>(off)];
        } else {
          if (!written_[static_cast<size_t>(off)])
            return stmt_error(node_, *s.source, "reads output element " + index_str(index_) + " before it is written");
          v = out_.data[static_cast<size_t>(off)];
        }
        env_[static_cast<size_t>(s.slot)] = typed_scalar(v, s.type);
        return Status::ok();
      }
      case StmtKind::Assign: {
        args_.resize(s.exprs.size());
        for (size_t i = 0; i < s.exprs.size(); ++i) {
          TESSERA_ASSIGN_OR_RETURN(Scalar a, eval(s.exprs[i], s));
          args_[i] = i < s.widen_from.size() && s.widen_from[i] ? round_to_storage(a.v, *s.widen_from[i]) : a.v;
        }
        if (!dtype_is_float(s.type) && is_integer_division_by_zero(s.fn, args_))
          return stmt_error(node_, *s.source, "integer division by zero (PyTorch raises ZeroDivisionError)");
        env_[static_cast<size_t>(s.slot)] = typed_scalar(apply_elementwise_fn(s.fn, args_), s.type);
        return Status::ok();
      }
      case StmtKind::Select: {
        TESSERA_ASSIGN_OR_RETURN(Scalar cond, eval(s.exprs[0], s));
        TESSERA_ASSIGN_OR_RETURN(Scalar v, eval(s.exprs[cond.v != 0.0 ? 1 : 2], s));
        env_[static_cast<size_t>(s.slot)] = typed_scalar(v.v, s.type);
        return Status::ok();
      }
      case StmtKind::Init: {
        TESSERA_ASSIGN_OR_RETURN(Scalar v, eval(s.exprs[0], s));
        int64_t elements = 1;
        for (int64_t d : s.dims) elements *= d;
        for (int64_t i = 0; i < elements; ++i) env_[static_cast<size_t>(s.slot + i)] = typed_scalar(v.v, s.type);
        return Status::ok();
      }
      case StmtKind::Accum: {
        TESSERA_ASSIGN_OR_RETURN(Scalar x, eval(s.exprs[0], s));
        int64_t flat = 0;
        for (size_t d = 0; d < s.dims.size(); ++d) {
          TESSERA_ASSIGN_OR_RETURN(Scalar i, eval(s.exprs[1 + d], s));
          if (!(i.v >= 0 && i.v < static_cast<double>(s.dims[d])))
            return stmt_error(node_, *s.source, "register array index " + std::to_string(i.v) + " of dimension " +
                                                    std::to_string(d) + " is out of bounds (size " +
                                                    std::to_string(s.dims[d]) + ")");
          flat = flat * s.dims[d] + static_cast<int64_t>(i.v);
        }
        Scalar& slot = env_[static_cast<size_t>(s.slot + flat)];
        slot = typed_scalar(apply_combine_fn(s.accum, slot.v, x.v), s.type);
        return Status::ok();
      }
      case StmtKind::Write: {
        TESSERA_ASSIGN_OR_RETURN(int64_t off, offset_of(s));
        TESSERA_ASSIGN_OR_RETURN(Scalar v, eval(s.exprs.back(), s));
        out_.data[static_cast<size_t>(off)] = conform_to_dtype(v.v, out_.type.dtype);
        written_[static_cast<size_t>(off)] = true;
        return Status::ok();
      }
      case StmtKind::Loop: {
        TESSERA_ASSIGN_OR_RETURN(Scalar begin, eval(s.exprs[0], s));
        TESSERA_ASSIGN_OR_RETURN(Scalar end, eval(s.exprs[1], s));
        if (!begin.is_int || !end.is_int) return stmt_error(node_, *s.source, "loop bounds must be integers");
        for (double i = begin.v; i < end.v; i += 1.0) {
          env_[static_cast<size_t>(s.slot)] = Scalar{i, true};
          TESSERA_TRY(run_body(s.body));
        }
        return Status::ok();
      }
      case StmtKind::Cond: {
        TESSERA_ASSIGN_OR_RETURN(Scalar cond, eval(s.exprs[0], s));
        return run_body(cond.v != 0.0 ? s.body : s.else_body);
      }
      case StmtKind::Let:
      case StmtKind::Tile:
      case StmtKind::StridedLoop:
      case StmtKind::Stage:
      case StmtKind::Combine:
      case StmtKind::AsyncWait:
      case StmtKind::SlabMap:
      case StmtKind::Smem:
      case StmtKind::Sync:
      case StmtKind::CpAsyncCopy:
      case StmtKind::CpAsyncCommit:
      case StmtKind::CpAsyncWait:
      case StmtKind::TmaLoad:
      case StmtKind::MbarrierInit:
      case StmtKind::MbarrierArrive:
      case StmtKind::MbarrierWait:
      case StmtKind::NamedBarrier:
      case StmtKind::SetMaxNReg:
      case StmtKind::WarpShuffle:
      case StmtKind::TreeHalve:
      case StmtKind::VectorLoad:
      case StmtKind::VectorStore:
      case StmtKind::ClusterSync:
      case StmtKind::DsmemLoad:
      case StmtKind::Fragment:
      case StmtKind::LdMatrix:
      case StmtKind::MmaSync:
      case StmtKind::WgmmaMma:
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
      case StmtKind::WgmmaWait:
        TESSERA_UNREACHABLE("run_loop_node refuses kinds outside Loop IR (first_stmt_outside) before compiling");
    }
    return stmt_error(node_, *s.source, "cannot be executed by the Loop IR interpreter");
  }

  const Node& node_;
  const std::vector<BufferSlot>& buffers_;
  std::vector<Scalar> env_;
  TensorValue& out_;
  std::vector<bool> written_;
  std::vector<int64_t> index_;
  std::vector<double> args_;
};

Expected<TensorValue> run_loop_node(const Node& n, const LoopOp& op, const ValueMap& values) {
  std::vector<BufferSlot> buffers;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(const TensorValue* v, operand_value(n, i, values));
    buffers.push_back(BufferSlot{n.inputs[i], v, row_major_strides(v->type.shape), v->type.shape,
                                 !dtype_is_float(v->type.dtype)});
  }
  buffers.push_back(
      BufferSlot{n.id(), nullptr, row_major_strides(n.type.shape), n.type.shape, !dtype_is_float(n.type.dtype)});
  if (std::optional<Stmt> foreign = first_stmt_outside(op.body, kInLoop))
    return stmt_error(n, *foreign, std::string(stmt_kind_name(foreign->kind())) + " is not a Loop IR statement (it is " +
                                       std::string(home_dialect_name(foreign->kind())) + ")");
  KernelCompiler compiler(n, buffers);
  TESSERA_ASSIGN_OR_RETURN(std::vector<CompiledStmt> body, compiler.compile_body(op.body));
  TensorValue out = TensorValue::filled(n.type);
  KernelRunner runner(n, buffers, compiler.slot_count(), out);
  TESSERA_TRY(runner.run(body));
  return out;
}

}  // namespace

Expected<ValueMap> evaluate_loop_ir(const Graph& graph, const ValueMap& inputs) {
  return evaluate_in_order(graph, inputs, [](const Node& n, const ValueMap& values) -> Expected<TensorValue> {
    const auto* op = n.op_as<LoopOp>();
    if (op == nullptr)
      return make_error(n.id() + ": the Loop IR interpreter cannot run a " +
                        std::string(n.op ? n.op->kind() : "null") + " node (only input, constant and loop)")
          .at_node(n.id());
    return run_loop_node(n, *op, values);
  });
}

}  // namespace tessera

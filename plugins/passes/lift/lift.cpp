// lift: lowers every Tensor IR node to a Loop IR node (one LoopOp = one loop nest = one future
// kernel), keeping the node's id, inputs and type; the kernel is named after the node id.
//
// Rewrites, per tensor node (body = one `for aN in 0..size:  # free` per output dim, innermost):
//   - Elementwise `add = add(x, bias_bc)`: one load per argument, in argument order
//     (`in0 = load x[a0, a1]`; a single-element operand is read at index 0; `mul(x, x)` loads x
//     twice, dedup_loads merges such loads), `v0 = add(in0, in1)` (literal arguments stay
//     literals), `add[a0, a1] = v0`;
//   - Reduce `red = sum(prod, axis=-2)`: free loops over the non-reduced dims, then
//     `acc0 = init(identity)`, `for aK in 0..extent:  # reduce { in0 = load prod[..]; acc0 <- op(acc0, in0) }`,
//     `red[.., 0, ..] = acc0` (the reduced index is dropped when keepdim is false);
//     sum -> add(0.0), max -> max(-inf), min -> min(inf), prod -> mul(1.0);
//   - IndexMap: coordinates i, j, .. become a0, a1, ..; one source is a load and a write; several
//     sources become nested `if predicate:` blocks, each loading only its own source (a source
//     whose predicate is false may be out of bounds); a literal source writes the literal;
//   - Gather: `in0 = load ids[..]`, `in1 = load table[.., i64(in0), ..]`, write.
// Typing (PyTorch eager semantics, docs/ir.md "Value types"): every load has its buffer's storage
// dtype; f16/bf16 operands are cast to f32 (`v0 = cast(in0)` typed f32) and the op computes in f32
// ("opmath"); integer and bool ops stay in their dtype; comparisons and logical ops produce bool;
// `where` takes a bool condition; reductions accumulate floats in f32 and integers in the node's
// dtype; a result whose type differs from the node's dtype is cast to it before the write (the
// per-op rounding of eager PyTorch). f32 programs have no casts.
// Bound names are canonical (a0.., in0.., v0.., acc0..; canonicalize_names).
// Accepts: a graph whose compute nodes are Tensor IR ops (as decompose emits them); LoopOp nodes
//   already present are left alone. Any other op is an error naming the node.
// Guarantees: every compute node is a LoopOp with the same id, inputs and type; the graph verifies
//   at the loop stage and computes the same values (evaluate_loop_ir vs the reference). No knobs.
// Tests: tests/unit/lift_test.cpp (differential over the decompose corpus, structure, errors) and
//   tests/golden/lift/ (printouts).
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/graph.h"
#include "tessera/pass/pass.h"
#include "tessera/pass/pass_context.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"

namespace tessera {
namespace {

std::string axis_name(size_t d) { return "a" + std::to_string(d); }

ExprList axis_vars(size_t count) {
  ExprList out;
  for (size_t d = 0; d < count; ++d) out.push_back(Expr::var(axis_name(d)));
  return out;
}

Stmt free_loop(const std::string& var, int64_t extent, Body body, LoopRole role = LoopRole::Free) {
  return Loop{var, Expr::int_(0), Expr::int_(extent), role, 0, std::move(body)};
}

// Wraps `inner` in one free loop per entry of `extents`, axis vars a0.. outermost first.
Body nest(const std::vector<int64_t>& extents, Body inner) {
  for (size_t d = extents.size(); d-- > 0;) inner = Body{free_loop(axis_name(d), extents[d], std::move(inner))};
  return inner;
}

// The dtype two operands are computed in (PyTorch type promotion over the categories bool < int <
// float; half precision computes in f32, f64 in f64).
DType promote(DType a, DType b) {
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  if (dtype_is_float(a) || dtype_is_float(b)) return DType::F32;
  if (a == DType::I64 || b == DType::I64) return DType::I64;
  if (a == DType::I32 || b == DType::I32) return DType::I32;
  return DType::Bool;
}

// The type arithmetic on a value of storage dtype `t` happens in.
DType compute_dtype(DType t) { return dtype_is_float(t) && t != DType::F64 ? DType::F32 : t; }

std::vector<int64_t> extents_of(const Shape& shape) {
  std::vector<int64_t> out;
  for (const Dim& d : shape) out.push_back(d.value());
  return out;
}

class Lifter {
 public:
  Lifter(const Graph& g, const Node& n, PassContext& ctx) : g_(g), n_(n), ctx_(ctx) {}

  Expected<Body> lift() {
    if (const auto* op = n_.op_as<ElementwiseOp>()) return elementwise(*op);
    if (const auto* op = n_.op_as<ReduceOp>()) return reduce(*op);
    if (const auto* op = n_.op_as<IndexMapOp>()) return index_map(*op);
    if (const auto* op = n_.op_as<GatherOp>()) return gather(*op);
    return error("lift accepts Tensor IR nodes only, not a " + std::string(n_.op->kind()) + " node");
  }

 private:
  Diagnostic error(const std::string& message) const { return ctx_.error_at(n_, message); }

  Expected<const Node*> input_node(const std::string& id) const {
    const Node* in = g_.find(id);
    if (in == nullptr) return error("reads '" + id + "', which is not a node of the graph");
    return in;
  }

  std::string next_load() { return "in" + std::to_string(loads_++); }
  std::string next_value() { return "v" + std::to_string(values_++); }

  // `value` (of dtype `from`) as dtype `to`: itself, or a cast Assign appended to `body`.
  Expr converted(Body& body, Expr value, DType from, DType to) {
    if (from == to) return value;
    std::string dst = next_value();
    body.push_back(Assign{dst, ElementwiseFn::Cast, {std::move(value)}, ValueType::scalar(to)});
    return Expr::value(dst);
  }

  Expected<Body> elementwise(const ElementwiseOp& op) {
    if (Status arity = check_arity(op.fn, op.args.size()); !arity.is_ok()) return error(arity.error().message);
    const ElementwiseFn fn = op.fn;
    const bool is_where = fn == ElementwiseFn::Where;
    const size_t rank = n_.type.shape.size();
    const DType out_dtype = n_.type.dtype;
    // The dtype of each argument as stored (literals take the computation's type).
    std::vector<std::optional<DType>> arg_dtypes;
    for (const Expr& arg : op.args) {
      if (!arg.defined()) return error("elementwise argument is undefined");
      std::optional<DType> t;
      for (const std::string& name : free_vars(arg)) {
        TESSERA_ASSIGN_OR_RETURN(const Node* in, input_node(name));
        t = t ? promote(*t, in->type.dtype) : in->type.dtype;
      }
      arg_dtypes.push_back(t);
    }
    // operand_dtype: what each (non-condition) operand is cast to; result_dtype: the Assign's type.
    DType operand_dtype = compute_dtype(out_dtype);
    DType result_dtype = compute_dtype(out_dtype);
    // A where selects in the node's own (promoted) dtype, which counts its literal operands too:
    // where(c, int_tensor, 0.5) is float (operands joined without the literal would truncate 0.5).
    if (fn_info(fn).result == FnResult::Bool) {
      std::optional<DType> joined;
      for (size_t i = 0; i < arg_dtypes.size(); ++i)
        if (arg_dtypes[i]) joined = joined ? promote(*joined, *arg_dtypes[i]) : compute_dtype(*arg_dtypes[i]);
      operand_dtype = joined ? *joined : DType::F32;
      if (fn == ElementwiseFn::LogicalAnd || fn == ElementwiseFn::LogicalOr || fn == ElementwiseFn::LogicalNot)
        operand_dtype = DType::Bool;
      result_dtype = DType::Bool;
    }
    Body inner;
    ExprList args;
    for (size_t a = 0; a < op.args.size(); ++a) {
      const Expr& arg = op.args[a];
      const DType want = is_where && a == 0 ? DType::Bool : operand_dtype;
      // One load per argument: `mul(x, x)` loads x twice, as written; dedup_loads merges them.
      std::map<std::string, Expr> loaded;  // operand id -> the value it was loaded into
      for (const std::string& name : free_vars(arg)) {
        TESSERA_ASSIGN_OR_RETURN(const Node* in, input_node(name));
        ExprList index;
        if (in->type.shape == n_.type.shape) {
          index = axis_vars(rank);
        } else if (num_elements(in->type.shape) == 1) {
          index.assign(in->type.shape.size(), Expr::int_(0));
        } else {
          return error("operand '" + name + "' has shape " + shape_str(in->type.shape) +
                       " but elementwise operands must have the output shape " + shape_str(n_.type.shape));
        }
        std::string dst = next_load();
        inner.push_back(Load{dst, name, std::move(index), ValueType::scalar(in->type.dtype)});
        loaded.emplace(name, converted(inner, Expr::value(dst), in->type.dtype, want));
      }
      args.push_back(substitute(arg, loaded));
    }
    std::string result = next_value();
    inner.push_back(Assign{result, op.fn, std::move(args), ValueType::scalar(result_dtype)});
    Expr out = converted(inner, Expr::value(result), result_dtype, out_dtype);
    inner.push_back(Write{n_.id(), axis_vars(rank), out});
    return nest(extents_of(n_.type.shape), std::move(inner));
  }

  Expected<Body> reduce(const ReduceOp& op) {
    if (n_.inputs.size() != 1) return error("a reduce node takes exactly one input");
    TESSERA_ASSIGN_OR_RETURN(const Node* in, input_node(n_.inputs[0]));
    const int64_t rank = static_cast<int64_t>(in->type.shape.size());
    const int64_t axis = op.axis < 0 ? op.axis + rank : op.axis;
    if (axis < 0 || axis >= rank)
      return error("reduce axis " + std::to_string(op.axis) + " is out of range for input of shape " +
                   shape_str(in->type.shape));
    // Floats accumulate in f32 (also for f16/bf16 inputs; f64 in f64), integers in the node's dtype.
    const DType acc_dtype = dtype_is_float(in->type.dtype) ? compute_dtype(in->type.dtype) : n_.type.dtype;
    const CombineFn accum_op = op.fn;
    const Expr identity = combine_identity(accum_op, acc_dtype);

    // Free axes a0.. cover the input dims except `axis`, in order; the reduce axis comes last.
    std::vector<int64_t> free_extents;
    ExprList load_index, write_index;
    size_t next_free = 0;
    const std::string reduce_var = axis_name(static_cast<size_t>(rank - 1));
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) {
        load_index.push_back(Expr::var(reduce_var));
        if (op.keepdim) write_index.push_back(Expr::int_(0));
        continue;
      }
      Expr v = Expr::var(axis_name(next_free++));
      free_extents.push_back(in->type.dim(d));
      load_index.push_back(v);
      write_index.push_back(v);
    }
    if (write_index.size() != n_.type.shape.size())
      return error("reducing " + shape_str(in->type.shape) + " over axis " + std::to_string(op.axis) +
                   " does not give the node's type " + n_.type.str());
    Body reduce_body{Load{"in0", in->id(), std::move(load_index), ValueType::scalar(in->type.dtype)}};
    Expr x = converted(reduce_body, Expr::value("in0"), in->type.dtype, acc_dtype);
    reduce_body.push_back(Accum{"acc0", accum_op, x});
    Body inner{Init{"acc0", identity, ValueType::scalar(acc_dtype)},
               free_loop(reduce_var, in->type.dim(axis), std::move(reduce_body), LoopRole::Reduce)};
    Expr out = converted(inner, Expr::value("acc0"), acc_dtype, n_.type.dtype);
    inner.push_back(Write{n_.id(), std::move(write_index), out});
    return nest(free_extents, std::move(inner));
  }

  // The statements of one IndexMap source: load it (when it is a buffer) and write the output.
  Expected<Body> index_map_source(const IndexMapSource& src, const std::map<std::string, Expr>& coords) {
    ExprList out_index = axis_vars(n_.type.shape.size());
    if (src.buffer.empty()) {
      if (!src.value.defined()) return error("index map source has neither a buffer nor a value");
      return Body{Write{n_.id(), std::move(out_index), substitute(src.value, coords)}};
    }
    TESSERA_ASSIGN_OR_RETURN(const Node* in, input_node(src.buffer));
    if (src.index.size() != in->type.shape.size())
      return error("index map reads '" + src.buffer + "' with " + std::to_string(src.index.size()) +
                   " index expression(s) but it has rank " + std::to_string(in->type.shape.size()));
    ExprList index;
    for (const Expr& e : src.index) index.push_back(substitute(e, coords));
    std::string dst = next_load();
    Body body{Load{dst, src.buffer, std::move(index), ValueType::scalar(in->type.dtype)}};
    Expr out = converted(body, Expr::value(dst), in->type.dtype, n_.type.dtype);
    body.push_back(Write{n_.id(), std::move(out_index), out});
    return body;
  }

  Expected<Body> index_map(const IndexMapOp& op) {
    if (op.coords.size() != n_.type.shape.size())
      return error("index map names " + std::to_string(op.coords.size()) + " coordinates but the output has rank " +
                   std::to_string(n_.type.shape.size()));
    if (op.sources.empty()) return error("index map has no sources");
    std::map<std::string, Expr> coords;
    for (size_t d = 0; d < op.coords.size(); ++d) coords.emplace(op.coords[d], Expr::var(axis_name(d)));
    // Built from the last source backwards: each predicate guards its source, else the rest.
    Body chain;
    for (size_t k = op.sources.size(); k-- > 0;) {
      const IndexMapSource& src = op.sources[k];
      TESSERA_ASSIGN_OR_RETURN(Body body, index_map_source(src, coords));
      if (src.predicate.defined()) {
        chain = Body{Cond{substitute(src.predicate, coords), std::move(body), std::move(chain)}};
      } else {
        chain = std::move(body);  // an unconditional source shadows every later one
      }
    }
    return nest(extents_of(n_.type.shape), std::move(chain));
  }

  Expected<Body> gather(const GatherOp& op) {
    if (n_.inputs.size() != 2) return error("a gather node takes two inputs (table, ids)");
    TESSERA_ASSIGN_OR_RETURN(const Node* table, input_node(n_.inputs[0]));
    TESSERA_ASSIGN_OR_RETURN(const Node* ids, input_node(n_.inputs[1]));
    const int64_t rank = static_cast<int64_t>(table->type.shape.size());
    const int64_t axis = op.axis < 0 ? op.axis + rank : op.axis;
    const size_t ids_rank = ids->type.shape.size();
    if (axis < 0 || axis >= rank || n_.type.shape.size() != static_cast<size_t>(rank) - 1 + ids_rank)
      return error("gathering " + shape_str(table->type.shape) + " by ids " + shape_str(ids->type.shape) +
                   " along axis " + std::to_string(op.axis) + " does not give the node's type " + n_.type.str());
    ExprList out_index = axis_vars(n_.type.shape.size());
    ExprList ids_index(out_index.begin() + axis, out_index.begin() + axis + static_cast<int64_t>(ids_rank));
    ExprList table_index(out_index.begin(), out_index.begin() + axis);
    table_index.push_back(Expr::cast(DType::I64, Expr::value("in0")));
    table_index.insert(table_index.end(), out_index.begin() + axis + static_cast<int64_t>(ids_rank), out_index.end());
    Body inner{Load{"in0", ids->id(), std::move(ids_index), ValueType::scalar(ids->type.dtype)},
               Load{"in1", table->id(), std::move(table_index), ValueType::scalar(table->type.dtype)}};
    Expr out = converted(inner, Expr::value("in1"), table->type.dtype, n_.type.dtype);
    inner.push_back(Write{n_.id(), std::move(out_index), out});
    return nest(extents_of(n_.type.shape), std::move(inner));
  }

  const Graph& g_;
  const Node& n_;
  PassContext& ctx_;
  int loads_ = 0;
  int values_ = 0;
};

class LiftPass final : public KernelPass {
 public:
  std::string_view name() const override { return "lift"; }
  std::string_view summary() const override {
    return "lower every Tensor IR node to a Loop IR loop nest (one LoopOp per node)";
  }
  std::vector<Dialect> stages() const override { return {Dialect::Loop}; }
  Dialect input_dialect() const override { return Dialect::Tensor; }
  // Every compute node not lifted yet: one of another dialect is an error naming it.
  bool applies_to(const Node& n) const override {
    return n.op && n.dialect() != Dialect::Core && n.dialect() != Dialect::Loop;
  }

  Status run_on(Node& node, PassContext& ctx) override {
    const Graph& g = ctx.graph();
    Node* n = &node;
    if (n->op_as<InputOp>() != nullptr || n->op_as<ConstantOp>() != nullptr || n->op_as<LoopOp>() != nullptr)
      return Status::ok();
    TESSERA_ASSIGN_OR_RETURN(Body body, Lifter(g, *n, ctx).lift());
    auto op = std::make_unique<LoopOp>();
    op->name = n->id();
    op->body = canonicalize_names(body);
    n->op = std::move(op);
    return Status::ok();
  }
};

void register_lift(Registry& r) {
  r.add_pass("lift", [] { return std::make_unique<LiftPass>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("lift", "1.0.0", ::tessera::register_lift)

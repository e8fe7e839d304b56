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
// Bound names are canonical (a0.., in0.., v0.., acc0..; canonicalize_names).
// Accepts: a graph whose compute nodes are Tensor IR ops (as decompose emits them); LoopOp nodes
//   already present are left alone. Any other op is an error naming the node.
// Guarantees: every compute node is a LoopOp with the same id, inputs and type; the graph verifies
//   at the loop stage and computes the same values (evaluate_loop_ir vs the reference). No knobs.
// Tests: tests/unit/lift_test.cpp (differential over the decompose corpus, structure, errors) and
//   tests/golden/lift/ (printouts).
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

Stmt free_loop(const std::string& var, int64_t extent, Body body, const std::string& role = "free") {
  return Loop{var, Expr::int_(0), Expr::int_(extent), role, 0, std::move(body)};
}

// Wraps `inner` in one free loop per entry of `extents`, axis vars a0.. outermost first.
Body nest(const std::vector<int64_t>& extents, Body inner) {
  for (size_t d = extents.size(); d-- > 0;) inner = Body{free_loop(axis_name(d), extents[d], std::move(inner))};
  return inner;
}

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

  Expected<Body> elementwise(const ElementwiseOp& op) {
    const size_t rank = n_.type.shape.size();
    Body inner;
    ExprList args;
    for (const Expr& arg : op.args) {
      if (!arg.defined()) return error("elementwise argument is undefined");
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
        inner.push_back(Load{dst, name, std::move(index)});
        loaded.emplace(name, Expr::var(dst));
      }
      args.push_back(substitute(arg, loaded));
    }
    inner.push_back(Assign{"v0", op.fn, std::move(args)});
    inner.push_back(Write{n_.id, axis_vars(rank), Expr::var("v0")});
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
    std::string accum_op;
    double identity = 0.0;
    if (op.fn == "sum") accum_op = "add", identity = 0.0;
    else if (op.fn == "prod") accum_op = "mul", identity = 1.0;
    else if (op.fn == "max") accum_op = "max", identity = -std::numeric_limits<double>::infinity();
    else if (op.fn == "min") accum_op = "min", identity = std::numeric_limits<double>::infinity();
    else return error("unknown reduce function '" + op.fn + "' (expected sum, max, min or prod)");

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
    Body reduce_body{Load{"in0", in->id, std::move(load_index)},
                     Accum{"acc0", accum_op, Expr::var("in0")}};
    Body inner{Init{"acc0", Expr::float_(identity)},
               free_loop(reduce_var, in->type.dim(axis), std::move(reduce_body), "reduce"),
               Write{n_.id, std::move(write_index), Expr::var("acc0")}};
    return nest(free_extents, std::move(inner));
  }

  // The statements of one IndexMap source: load it (when it is a buffer) and write the output.
  Expected<Body> index_map_source(const IndexMapSource& src, const std::map<std::string, Expr>& coords) {
    ExprList out_index = axis_vars(n_.type.shape.size());
    if (src.buffer.empty()) {
      if (!src.value.defined()) return error("index map source has neither a buffer nor a value");
      return Body{Write{n_.id, std::move(out_index), substitute(src.value, coords)}};
    }
    TESSERA_ASSIGN_OR_RETURN(const Node* in, input_node(src.buffer));
    if (src.index.size() != in->type.shape.size())
      return error("index map reads '" + src.buffer + "' with " + std::to_string(src.index.size()) +
                   " index expression(s) but it has rank " + std::to_string(in->type.shape.size()));
    ExprList index;
    for (const Expr& e : src.index) index.push_back(substitute(e, coords));
    std::string dst = next_load();
    return Body{Load{dst, src.buffer, std::move(index)}, Write{n_.id, std::move(out_index), Expr::var(dst)}};
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
    table_index.push_back(Expr::cast(DType::I64, Expr::var("in0")));
    table_index.insert(table_index.end(), out_index.begin() + axis + static_cast<int64_t>(ids_rank), out_index.end());
    Body inner{Load{"in0", ids->id, std::move(ids_index)}, Load{"in1", table->id, std::move(table_index)},
               Write{n_.id, std::move(out_index), Expr::var("in1")}};
    return nest(extents_of(n_.type.shape), std::move(inner));
  }

  const Graph& g_;
  const Node& n_;
  PassContext& ctx_;
  int loads_ = 0;
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
    op->name = n->id;
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

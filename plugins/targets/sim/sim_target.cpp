// sim: the CPU SIMT simulator of Kernel IR, a Target plugin.
//
// Executes a graph lowered to Kernel IR with CUDA semantics (docs/ir.md "### Kernel IR") and the
// checks of docs/targets.md "## sim": one buffer per node (inputs from the caller, constants from
// constant_data), nodes in graph order, each KernelOp compiled once (kernel_compiler.cpp) and run
// block by block with all threads of a block as lane vectors (block_executor.cpp), shared memory
// with initialization, race and cp.async tracking (shared_memory.cpp).
// Accepts: InputOp, ConstantOp and KernelOp nodes; any other node is an error naming it.
// Guarantees: the same graph and inputs give bit-identical outputs; every out-of-bounds access,
//   uninitialized shared read, shared-memory race, barrier divergence, partial-warp shuffle,
//   read before cp.async wait, global write conflict and unwritten output element is an error
//   naming the kernel, the statement, the block and thread, and the offending index.
// Tests: tests/unit/sim_target_test.cpp (hand-built kernels; the differential corpus through the
//   tile passes and materialize).
// Progress: with TargetOptions::progress, reports the work done (KernelCost::work, each kernel's
//   share spread evenly over its blocks) after every block.
// Kernel parameters: scalars take their values from TargetOptions::scalars (by name; a missing
//   value, an i32 overflow or a value outside the declared range is an error); tensor maps are
//   carried but TMA copies are not simulated. Shared memory: the Smem arrays must fit the
//   device's static limit, or, with dynamic_smem, the declared dynamic bytes and the opt-in limit.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <utility>
#include <vector>

#include "block_executor.h"
#include "kernel_program.h"
#include "tessera/eval/constant_data.h"
#include "tessera/plugin/plugin.h"
#include "tessera/plugin/registry.h"
#include "tessera/target/kernel_cost.h"
#include "tessera/target/target.h"

namespace tessera {
namespace {

class SimTarget final : public Target {
 public:
  std::string_view name() const override { return "sim"; }
  std::string_view summary() const override {
    return "CPU SIMT simulator of Kernel IR: every block and thread, shared memory, barriers, warp shuffles and "
           "cp.async, with race, bounds and initialization checks";
  }
  Dialect input_dialect() const override { return Dialect::Kernel; }
  bool available(std::string*) const override { return true; }

  Expected<TargetRun> execute(const Graph& g, const ValueMap& inputs, const TargetOptions& options) override {
    ValueMap values;
    TargetRun run;
    TargetProgress progress;
    if (options.progress) progress.total = KernelCost::program_work(g);
    for (const Node* n : g.nodes()) {
      if (n->op_as<InputOp>()) {
        auto it = inputs.find(n->id());
        if (it == inputs.end()) return make_error("sim: no value given for input '" + n->id() + "'").at_node(n->id());
        if (!(it->second.type == n->type))
          return make_error("sim: input '" + n->id() + "' is " + it->second.type.str() + " but the graph declares " +
                            n->type.str())
              .at_node(n->id());
        values[n->id()] = it->second;
      } else if (const auto* c = n->op_as<ConstantOp>()) {
        TESSERA_ASSIGN_OR_RETURN(values[n->id()], constant_value(*n, *c, inputs));
      } else if (const auto* k = n->op_as<KernelOp>()) {
        // Progress in work units: this kernel's share, spread evenly over its blocks.
        const double before = progress.done;
        const double work = options.progress ? KernelCost::of(g, *n).work() : 0.0;
        progress.kernel = k->name;
        auto after_block = [&](int64_t done, int64_t blocks) {
          progress.done = before + work * static_cast<double>(done) / static_cast<double>(blocks);
          options.progress(progress);
        };
        TESSERA_TRY(run_kernel(*n, *k, values, options, options.progress ? after_block : std::function<void(int64_t, int64_t)>()));
        run.launches.push_back(KernelLaunch{n->id(), k->name, k->grid, k->block});
      } else {
        return make_error("sim executes Kernel IR; node " + n->id() + " is in " + std::string(dialect_name(n->dialect())) +
                          " IR")
            .at_node(n->id());
      }
    }
    for (const std::string& out : g.outputs()) {
      auto it = values.find(out);
      if (it == values.end()) return make_error("sim: graph output '" + out + "' has no value");
      run.outputs[out] = it->second;
    }
    return run;
  }

 private:
  static Status check_geometry(const Node& n, const KernelOp& k, const TargetOptions& options) {
    auto prefix = "sim: kernel " + k.name + " (node " + n.id() + "): ";
    if (k.grid.size() != 3 || k.block.size() != 3)
      return make_error(prefix + "grid and block must have three dimensions").at_node(n.id());
    for (size_t d = 0; d < 3; ++d)
      if (k.grid[d] <= 0 || k.block[d] <= 0)
        return make_error(prefix + "grid and block dimensions must be positive").at_node(n.id());
    int64_t threads = k.block[0] * k.block[1] * k.block[2];
    int64_t limit = options.device != nullptr ? options.device->max_threads_per_block : 1024;
    if (threads > limit)
      return make_error(prefix + std::to_string(threads) + " threads per block exceed the device's " +
                        std::to_string(limit))
          .at_node(n.id());
    // Shared memory as the hardware would take it: static arrays within the static limit, or one
    // dynamic array that holds the smem_layout and fits the opt-in maximum.
    const int64_t layout = smem_layout_bytes(k.body);
    if (k.dynamic_smem < 0) return make_error(prefix + "dynamic shared memory is negative").at_node(n.id());
    if (k.dynamic_smem > 0 && layout > k.dynamic_smem)
      return make_error(prefix + "the Smem arrays need " + std::to_string(layout) + " bytes but the kernel declares " +
                        std::to_string(k.dynamic_smem) + " bytes of dynamic shared memory")
          .at_node(n.id());
    if (options.device != nullptr) {
      const bool dynamic = k.dynamic_smem > 0;
      const int64_t bytes = dynamic ? k.dynamic_smem : layout;
      const int64_t smem_limit = dynamic ? options.device->smem_per_block : options.device->smem_per_block_static;
      if (bytes > smem_limit)
        return make_error(prefix + std::to_string(bytes) + " bytes of " + (dynamic ? "dynamic" : "static") +
                          " shared memory exceed the device's " + std::to_string(smem_limit))
            .at_node(n.id());
    }
    return Status::ok();
  }

  // The values of `k`'s scalar parameters from options.scalars, checked against their types and
  // declared ranges.
  static Expected<std::vector<sim::ScalarBinding>> scalar_bindings(const Node& n, const KernelOp& k,
                                                                   const TargetOptions& options) {
    std::vector<sim::ScalarBinding> out;
    for (const KernelParam& p : k.params) {
      if (p.kind != ParamKind::Scalar) continue;
      auto prefix = "sim: kernel " + k.name + " (node " + n.id() + "): scalar parameter " + p.str() + ": ";
      auto it = options.scalars.find(p.name);
      if (it == options.scalars.end()) return make_error(prefix + "no value given").at_node(n.id());
      sim::ScalarBinding b{p.name, 0.0, !dtype_is_float(p.dtype)};
      if (const auto* i = std::get_if<int64_t>(&it->second)) {
        if (p.dtype == DType::I32 && (*i < INT32_MIN || *i > INT32_MAX))
          return make_error(prefix + std::to_string(*i) + " does not fit in i32").at_node(n.id());
        if (p.range && !p.range->contains(*i))
          return make_error(prefix + "the value " + std::to_string(*i) + " is outside its declared range").at_node(n.id());
        b.value = b.is_int ? static_cast<double>(*i) : static_cast<double>(static_cast<float>(*i));
      } else {
        if (b.is_int) return make_error(prefix + "needs an integer value").at_node(n.id());
        b.value = static_cast<double>(static_cast<float>(std::get<double>(it->second)));
      }
      out.push_back(std::move(b));
    }
    return out;
  }

  static Status run_kernel(const Node& n, const KernelOp& k, ValueMap& values, const TargetOptions& options,
                           const std::function<void(int64_t, int64_t)>& after_block) {
    TESSERA_TRY(check_geometry(n, k, options));
    values[n.id()] = TensorValue::filled(n.type);
    std::vector<sim::GlobalBuffer> globals;
    for (const std::string& in : n.inputs) {
      auto it = values.find(in);
      if (it == values.end()) return make_error("sim: input '" + in + "' of node " + n.id() + " has no value").at_node(n.id());
      globals.push_back(sim::GlobalBuffer{in, &it->second, false});
    }
    globals.push_back(sim::GlobalBuffer{n.id(), &values[n.id()], true});
    TESSERA_ASSIGN_OR_RETURN(std::vector<sim::ScalarBinding> scalars, scalar_bindings(n, k, options));
    TESSERA_ASSIGN_OR_RETURN(sim::KernelProgram program, sim::compile_kernel(n, k, globals, scalars));
    return sim::launch_kernel(n, k, program, globals, after_block);
  }
};

void register_sim(Registry& r) {
  r.add_target("sim", [] { return std::make_unique<SimTarget>(); });
}

}  // namespace
}  // namespace tessera

TESSERA_PLUGIN("sim", "1.0.0", ::tessera::register_sim)

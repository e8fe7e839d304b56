// Graph printer: the text form of a program at every stage (`--ir`, `-vv` diffs, dumps).
//
// Layout of print_graph:
//   x: (16, 64) float32                                      inputs and constants, in graph order
//   p_weight: (2048,) float32 = param up.weight  # randn seed=7
//                                                            blank line
//   add = add(x, bias_bc) -> (16, 64) float32                torch/tensor nodes: one line each
//   === merged_relu(x, w) -> relu: (16, 16) float32 ===      loop/tile/kernel/cuda: a block,
//     for a0 in 0..16:  # free                               separated by blank lines
//                                                            blank line
//   return relu
//
// Declarations. An input prints `name: type`, followed by `  # <init>` when it is not created by
// randn (the default): `# zeros`, `# ones`, `# rand`, `# full(0.5)`, `# randint(10)` (integers in
// [0, 10), torch.randint's `high`, which the data depends on). A constant prints
// `name: type = param <module path>` (or `= const` when it has no path) and a comment saying
// where its data comes from: `# randn seed=7` (plus ` scale=0.02` when the scale is not 1),
// `# full(0.5)`, `# zeros`, or `# values=[1.0, 2.0]` for literal data (at most 8 values shown,
// then `, ... (N values)`). A checkpoint tensor prints the file after the path and the file's
// recorded stamp as the comment:
//   p_w: (96, 64) float32 = param model.norm.weight from /m/model.safetensors  # file_bytes=9 modified_ns=7
#include "tessera/ir/printer.h"
#include "print_lists.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <sstream>

namespace tessera {
namespace {

constexpr size_t kMaxPrintedValues = 8;

using print_lists::join;

// Launch geometry: `(32, 1, 1)`.
std::string int_tuple(const std::vector<int64_t>& values) { return "(" + join(values) + ")"; }

std::string number(double v) { return attr_str(AttrValue(v)); }

std::string input_comment(const InputOp& op) {
  if (op.init == "randn") return "";
  if (op.init == "full") return "  # full(" + number(op.fill) + ")";
  if (op.init == "randint") {
    // `high` is an integer; written as one, like the torch.randint call it comes from.
    const bool integral = std::trunc(op.fill) == op.fill && std::fabs(op.fill) < 0x1p53;
    return "  # randint(" + (integral ? std::to_string(static_cast<int64_t>(op.fill)) : number(op.fill)) + ")";
  }
  return "  # " + op.init;
}

std::string constant_comment(const ConstantOp& op) {
  if (op.checkpoint) {
    return "  # file_bytes=" + std::to_string(op.checkpoint->file_bytes) +
           " modified_ns=" + std::to_string(op.checkpoint->modified_ns);
  }
  if (!op.values.empty()) {
    std::vector<std::string> shown;
    for (size_t i = 0; i < op.values.size() && i < kMaxPrintedValues; ++i) {
      shown.push_back(number(op.values[i]));
    }
    std::string text = "values=[" + join(shown);
    if (op.values.size() > kMaxPrintedValues) {
      text += ", ... (" + std::to_string(op.values.size()) + " values)";
    }
    return "  # " + text + "]";
  }
  if (op.init == "full") return "  # full(" + number(op.scale) + ")";
  if (op.init == "randn" || op.init == "rand") {
    std::string text = "  # " + op.init + " seed=" + std::to_string(op.seed);
    if (op.scale != 1.0) text += " scale=" + number(op.scale);
    return text;
  }
  return "  # " + op.init;
}

// `# knobs: launch_geometry.BN=128 (heuristic), stage_inputs.STAGE='in0' (pinned)`
std::string knobs_line(const Node& n) {
  if (n.choices.empty()) return "";
  std::vector<std::string> items;
  for (const KnobChoice& c : n.choices) {
    items.push_back(c.pass + "." + c.knob + "=" + attr_str(c.value) + " (" + c.source + ")");
  }
  return "# knobs: " + join(items) + "\n";
}

std::string input_name(const Node& n, size_t i) {
  return i < n.inputs.size() ? n.inputs[i] : std::string("<missing input>");
}

// Torch call arguments: the node inputs in order, with scalar arguments spliced in at their
// recorded positions. Positions past the end (malformed ops) are appended, never dropped.
std::string torch_args(const Node& n, const TorchOp& op) {
  auto scalars = op.scalar_args;
  std::stable_sort(scalars.begin(), scalars.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> args;
  size_t next_input = 0;
  size_t next_scalar = 0;
  while (next_input < n.inputs.size() || next_scalar < scalars.size()) {
    bool scalar_here = next_scalar < scalars.size() &&
                       (scalars[next_scalar].first <= static_cast<int64_t>(args.size()) ||
                        next_input == n.inputs.size());
    if (scalar_here) {
      args.push_back(number(scalars[next_scalar++].second));
    } else {
      args.push_back(n.inputs[next_input++]);
    }
  }
  for (const auto& [key, value] : op.attrs.items()) args.push_back(key + "=" + attr_str(value));
  return join(args);
}

std::string index_map_source(const IndexMapSource& src) {
  if (src.buffer.empty()) return src.value.str();
  return src.buffer + "[" + join(src.index) + "]";
}

// `bias[j]` for one unconditional source, else `select(i < 4: a[i, j], b[i - 4, j])`.
std::string index_map_rhs(const IndexMapOp& op) {
  if (op.sources.size() == 1 && !op.sources[0].predicate.defined()) {
    return index_map_source(op.sources[0]);
  }
  std::vector<std::string> cases;
  for (const IndexMapSource& src : op.sources) {
    std::string text = index_map_source(src);
    if (src.predicate.defined()) text = src.predicate.str() + ": " + text;
    cases.push_back(text);
  }
  return "select(" + join(cases) + ")";
}

// The right-hand side of a one-line (torch or tensor) node.
std::string line_rhs(const Node& n) {
  if (const auto* op = n.op_as<TorchOp>()) return op->target + "(" + torch_args(n, *op) + ")";
  if (const auto* op = n.op_as<ElementwiseOp>()) return std::string(name_of(op->fn)) + "(" + join(op->args) + ")";
  if (const auto* op = n.op_as<ReduceOp>()) {
    std::string text = std::string(reduction_name(op->fn)) + "(" + input_name(n, 0) + ", axis=" + std::to_string(op->axis);
    if (!op->keepdim) text += ", keepdim=False";
    return text + ")";
  }
  if (const auto* op = n.op_as<IndexMapOp>()) return index_map_rhs(*op);
  if (const auto* op = n.op_as<GatherOp>()) {
    return "gather(" + input_name(n, 0) + ", " + input_name(n, 1) +
           ", axis=" + std::to_string(op->axis) + ")";
  }
  return n.op ? std::string(n.op->kind()) + "(" + join(n.inputs) + ")" : "<no op>";
}

// The header carries what the body does not say, so a printed kernel parses back (ir/parser.h):
// the node's inputs and its output's type (`name: type`, as in the declarations above).
std::string kernel_block(const Node& n, const KernelLikeOp& op) {
  const std::string output = n.id() + ": " + n.type.str();
  std::string io = "inputs: " + join(n.inputs) + "  outputs: " + output;
  std::string header;
  if (n.op_as<LoopOp>() != nullptr) {
    header = "=== " + op.name + "(" + join(n.inputs) + ") -> " + output + " ===";
  } else if (const auto* kernel = n.op_as<KernelOp>()) {
    // The launch, then the buffers, then the params the node does not imply (scalars, tensor maps);
    // a kernel without cluster, dynamic smem or such params prints as it always has.
    header = "kernel " + op.name + "  grid=" + int_tuple(kernel->grid) +
             " block=" + int_tuple(kernel->block);
    if (!kernel->cluster.empty()) header += " cluster=" + int_tuple(kernel->cluster);
    if (kernel->dynamic_smem > 0) header += " smem=" + std::to_string(kernel->dynamic_smem) + " dynamic";
    header += "  " + io;
    if (!kernel->params.empty()) {
      std::vector<std::string> params;
      for (const KernelParam& p : kernel->params) params.push_back(p.str());
      header += "  params: " + join(params);
    }
  } else {
    header = "kernel " + op.name + "  " + io;
  }
  return header + "\n" + print_body(op.body, 1);
}

// Buffer arguments print as their names; scalars and tensor maps with their types.
std::string cuda_args(const CudaOp& op) {
  std::vector<std::string> args;
  for (const KernelParam& p : op.params) args.push_back(p.kind == ParamKind::Buffer ? p.name : p.str());
  return join(args);
}


// Bytes of the static __shared__ arrays a CUDA source declares, one per line, as emit_cuda declares
// them: `__shared__ __align__(16) float x_smem[2048];` (the extern __shared__ array of dynamic
// shared memory is not one). nullopt when a declaration has another form (hand-written source):
// then the header does not guess.
std::optional<int64_t> static_smem_bytes(const std::string& source) {
  static constexpr DType kAll[] = {DType::F32, DType::F16, DType::BF16, DType::I32,
                                   DType::I64, DType::Bool, DType::F64};
  int64_t total = 0;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    const size_t start = line.find_first_not_of(' ');
    std::string_view rest = start == std::string::npos ? std::string_view() : std::string_view(line).substr(start);
    if (rest.substr(0, 11) != "__shared__ ") continue;
    rest.remove_prefix(11);
    if (rest.substr(0, 10) == "__align__(") rest.remove_prefix(std::min(rest.size(), rest.find(") ") + 2));
    std::optional<int64_t> element_bytes;
    static constexpr std::string_view kBarrier = "unsigned long long ";  // an mbarrier (MbarrierInit)
    if (rest.substr(0, kBarrier.size()) == kBarrier) {
      element_bytes = 8;
      rest.remove_prefix(kBarrier.size());
    }
    for (DType t : kAll) {
      if (element_bytes) break;
      const std::string type = std::string(dtype_cuda_name(t)) + " ";
      if (rest.substr(0, type.size()) == type) {
        element_bytes = dtype_bytes(t);
        rest.remove_prefix(type.size());
        break;
      }
    }
    const size_t open = rest.find('['), close = rest.find("];");
    if (!element_bytes || open == std::string_view::npos || close == std::string_view::npos || close < open)
      return std::nullopt;
    int64_t elements = 0;
    const std::string_view digits = rest.substr(open + 1, close - open - 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), elements);
    if (ec != std::errc() || end != digits.data() + digits.size() || elements < 0) return std::nullopt;
    total += elements * *element_bytes;
  }
  return total;
}

std::string cuda_block(const CudaOp& op) {
  // A kernel's shared memory is its static arrays plus the dynamic bytes given at launch.
  const std::optional<int64_t> static_bytes = static_smem_bytes(op.source);
  const std::string smem = (static_bytes ? std::to_string(*static_bytes) : std::string("?")) + " static + " +
                           std::to_string(op.dynamic_smem) + " dynamic";
  std::string text = "// kernel " + op.name + "  grid=" + int_tuple(op.grid) +
                     " block=" + int_tuple(op.block) +
                     (op.cluster.empty() ? "" : " cluster=" + int_tuple(op.cluster)) +
                     " smem=" + smem + "  args: " + cuda_args(op) + "\n" +
                     op.source;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

bool is_block_form(const Node& n) {
  return n.op && (n.op_as<KernelLikeOp>() != nullptr || n.op_as<CudaOp>() != nullptr);
}

bool is_declaration(const Node& n) { return n.op && n.op->dialect() == Dialect::Core; }

}  // namespace

std::string print_value_decl(const Node& n) {
  std::string text = n.id() + ": " + n.type.str();
  if (const auto* input = n.op_as<InputOp>()) return text + input_comment(*input);
  if (const auto* constant = n.op_as<ConstantOp>()) {
    text += constant->path.empty() ? " = const" : " = param " + constant->path;
    if (constant->checkpoint) text += " from " + constant->checkpoint->file;
    return text + constant_comment(*constant);
  }
  return text;
}

std::string print_node(const Graph& g, const Node& n) {
  std::string text = knobs_line(n);
  if (is_declaration(n)) return text + print_value_decl(n) + "\n";
  if (const auto* kernel = n.op_as<KernelLikeOp>()) return text + kernel_block(n, *kernel);
  if (const auto* cuda = n.op_as<CudaOp>()) return text + cuda_block(*cuda);
  return text + n.id() + " = " + line_rhs(n) + " -> " + n.type.str() + "\n";
}

std::string print_graph(const Graph& g) {
  std::string out;
  const std::vector<const Node*> nodes = g.nodes();
  bool any_declaration = false;
  for (const Node* n : nodes) {
    if (!is_declaration(*n)) continue;
    out += knobs_line(*n) + print_value_decl(*n) + "\n";
    any_declaration = true;
  }
  const Node* previous = nullptr;
  for (const Node* n : nodes) {
    if (is_declaration(*n)) continue;
    bool separate =
        previous == nullptr ? any_declaration : is_block_form(*previous) || is_block_form(*n);
    if (separate) out += "\n";
    out += print_node(g, *n);
    previous = n;
  }
  if (!out.empty()) out += "\n";
  out += g.outputs().empty() ? "return\n" : "return " + join(g.outputs()) + "\n";
  return out;
}

}  // namespace tessera

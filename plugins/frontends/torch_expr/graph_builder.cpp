// Node creation for the torch_expr frontend (see graph_builder.h).
#include "graph_builder.h"


#include "fold_empty_tensors.h"
#include "tessera/support/internal_check.h"

namespace tessera::torch_expr {
namespace {

// Tensors beyond this many elements are certainly a typo (2^40 floats is 4 TiB).
constexpr int64_t kMaxElements = int64_t{1} << 40;

// Node ids become buffer and parameter names in generated C++/CUDA; a Python variable named like a
// C++ keyword or CUDA builtin gets a trailing underscore so the emitted code stays valid.
bool is_reserved_in_cuda(std::string_view s) {
  static const std::set<std::string, std::less<>> reserved = {
      "auto", "bool", "break", "case", "catch", "char", "const", "constexpr", "continue", "default",
      "delete", "do", "double", "else", "enum", "explicit", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "nullptr",
      "operator", "private", "protected", "public", "register", "return", "short", "signed",
      "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try", "typedef",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "threadIdx",
      "blockIdx", "blockDim", "gridDim", "warpSize", "half", "main"};
  return reserved.count(s) > 0;
}

uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

const TensorType& GraphBuilder::type_of(const std::string& node) const {
  const Node* n = graph_.find(node);
  TESSERA_INTERNAL_CHECK(n, "tensor values always name an existing node");
  return n->type;
}

std::string GraphBuilder::fresh_id(std::string_view base) const {
  std::string b(base.empty() ? "v" : base);
  if (is_reserved_in_cuda(b)) b += "_";
  return graph_.unique_id(b);
}

Status GraphBuilder::check_size(const TensorType& type, const SourceSpan& span, bool allow_empty) const {
  int64_t elements = 1;
  for (const Dim& d : type.shape) {
    int64_t v = d.value();
    if (v < 0 || (v == 0 && !allow_empty))
      return error(span, "tensor shape " + shape_str(type.shape) + " has an empty or negative dimension");
    if (v == 0) return Status::ok();  // an empty result of an op (fold_empty_tensors removes it)
    if (elements > kMaxElements / v)
      return error(span, "tensor of shape " + shape_str(type.shape) + " is too large (more than 2^40 elements)");
    elements *= v;
  }
  return Status::ok();
}

uint64_t GraphBuilder::parameter_seed(const std::string& path) const {
  return splitmix64(fnv1a64(path) ^ splitmix64(options_.seed));
}

Expected<std::string> GraphBuilder::add_input(std::string_view name_hint, std::string init, double fill,
                                              TensorType type, const SourceSpan& span) {
  TESSERA_TRY(check_size(type, span, false));
  auto op = std::make_unique<InputOp>();
  op->init = std::move(init);
  op->fill = fill;
  std::string id = fresh_id(name_hint.empty() ? "x" : name_hint);
  Node& n = graph_.add(id, std::move(op), {}, std::move(type));
  n.loc = source_.loc(span);
  return id;
}

Expected<std::string> GraphBuilder::add_parameter(const std::string& path, std::string init, double scale,
                                                  TensorType type, const SourceSpan& span) {
  TESSERA_TRY(check_size(type, span, false));
  auto op = std::make_unique<ConstantOp>();
  op->path = path;
  op->init = std::move(init);
  op->seed = parameter_seed(path);
  op->scale = scale;
  std::string base = "p_" + path;
  for (char& c : base)
    if (c == '.') c = '_';
  std::string id = fresh_id(base);
  parameter_paths_.insert(path);
  Node& n = graph_.add(id, std::move(op), {}, std::move(type));
  n.loc = source_.loc(span);
  return id;
}

Expected<std::string> GraphBuilder::add_torch_op(TorchNodeSpec spec, std::string_view name_hint,
                                                 const SourceSpan& span) {
  TESSERA_TRY(check_size(spec.type, span, true));
  auto op = std::make_unique<TorchOp>();
  op->target = spec.target;
  op->attrs = std::move(spec.attrs);
  op->scalar_args = std::move(spec.scalar_args);
  std::string id = fresh_id(name_hint.empty() ? std::string_view(spec.target) : name_hint);
  Node& n = graph_.add(id, std::move(op), std::move(spec.inputs), std::move(spec.type));
  n.loc = source_.loc(span);
  return id;
}

Expected<Graph> GraphBuilder::finish(std::vector<std::string> outputs) {
  graph_.outputs() = std::move(outputs);
  prune();
  TESSERA_TRY(fold_empty_tensors(graph_, source_));
  prune();  // what the folds no longer read: the empty values and what only they used
  return std::move(graph_);
}

void GraphBuilder::prune() {
  const std::vector<std::string>& outputs = graph_.outputs();
  std::set<std::string> live(outputs.begin(), outputs.end());
  std::vector<std::string> dead;
  std::vector<const Node*> nodes = std::as_const(graph_).nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* n = *it;
    if (live.count(n->id())) {
      live.insert(n->inputs.begin(), n->inputs.end());
    } else {
      dead.push_back(n->id());
    }
  }
  // `dead` is in reverse topological order, so every dead node's users are erased before it.
  for (const std::string& id : dead) {
    [[maybe_unused]] const Status erased = graph_.erase(id);
    TESSERA_INTERNAL_CHECK(erased, "a dead node has only dead users, erased before it");
  }
}

}  // namespace tessera::torch_expr

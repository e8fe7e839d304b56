// GraphBuilder: the only place the torch_expr frontend creates graph nodes. It names nodes
// (assigned variable name, else the op name made unique), derives parameter seeds from module
// paths, records source locations on nodes, rejects absurdly large tensors, and at the end prunes
// what the outputs do not use and folds away the empty tensors PyTorch programs make.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "source_text.h"
#include "tessera/frontend/frontend.h"
#include "tessera/ir/graph.h"

namespace tessera::torch_expr {

struct TorchNodeSpec {
  std::string target;                                   // canonical op name: matmul, rms_norm, add
  std::vector<std::string> inputs;
  std::vector<std::pair<int64_t, double>> scalar_args;  // (position among printed args, value)
  Attrs attrs;
  TensorType type;
};

class GraphBuilder {
 public:
  GraphBuilder(const SourceText& source, const FrontendOptions& options)
      : source_(source), options_(options) {}

  const SourceText& source() const { return source_; }
  DType default_dtype() const { return options_.dtype; }
  Diagnostic error(const SourceSpan& span, std::string message) const {
    return source_.error(span, std::move(message));
  }

  // A located warning (what PyTorch warns about and runs anyway), to the options' warnings sink.
  void warn(const SourceSpan& span, std::string message) const {
    if (!options_.warnings) return;
    Diagnostic d = source_.error(span, std::move(message));
    d.severity = Severity::Warning;
    options_.warnings->push_back(std::move(d));
  }

  const TensorType& type_of(const std::string& node) const;
  const Node* find(const std::string& node) const { return graph_.find(node); }

  // Each returns the new node's id. `name_hint` is the variable the value is assigned to, if any.
  Expected<std::string> add_input(std::string_view name_hint, std::string init, double fill,
                                  TensorType type, const SourceSpan& span);
  Expected<std::string> add_parameter(const std::string& path, std::string init, double scale,
                                      TensorType type, const SourceSpan& span);
  Expected<std::string> add_torch_op(TorchNodeSpec spec, std::string_view name_hint, const SourceSpan& span);

  bool parameter_path_taken(const std::string& path) const { return parameter_paths_.count(path) > 0; }

  // The seed of the parameter at `path`: a hash of the path mixed with the frontend's base seed,
  // so the same program always gets the same weights and different parameters get different ones.
  uint64_t parameter_seed(const std::string& path) const;

  // Sets the outputs, removes every node they do not depend on, and folds the empty (zero-size)
  // values away (fold_empty_tensors.h); an error when an output is empty or a fold is unsupported.
  Expected<Graph> finish(std::vector<std::string> outputs);

 private:
  std::string fresh_id(std::string_view base) const;
  // Inputs and parameters are never empty; an op's result may be (`x[:, 3:3]`), until finish().
  Status check_size(const TensorType& type, const SourceSpan& span, bool allow_empty) const;
  void prune();

  const SourceText& source_;
  FrontendOptions options_;
  Graph graph_;
  std::set<std::string> parameter_paths_;
};

}  // namespace tessera::torch_expr

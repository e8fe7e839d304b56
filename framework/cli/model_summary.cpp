// The `tessera compile MODEL` summary (see model_summary.h).
#include "model_summary.h"

#include <cstdio>
#include <set>

#include "framework/src/pass/kernel_sharing.h"

namespace tessera::cli {

namespace {

int64_t elements(const Node& n) { return num_elements(n.type.shape); }

std::string with_unit(double v, const char* unit) {
  const char* prefixes[] = {"", " K", " M", " G", " T", " P"};
  int p = 0;
  while (v >= 1000 && p < 5) {
    v /= 1000;
    ++p;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, p == 0 ? "%.0f%s%s" : "%.2f%s%s", v, prefixes[p], unit);
  return buf;
}

}  // namespace

void count_model(const Graph& g, ModelSummary& s) {
  std::set<std::string> seen_paths;
  for (const Node* n : g.nodes()) {
    if (const auto* c = n->op_as<ConstantOp>()) {
      if (!c->path.empty() && seen_paths.insert(c->path).second) s.parameters += elements(*n);
      continue;
    }
    if (n->op_as<InputOp>()) {
      // The token ids (a whole model) or the hidden state (one layer): (1, tokens, ...).
      if ((n->id() == "input_ids" || n->id() == "x") && n->type.rank() >= 2) s.tokens = n->type.dim(1);
      continue;
    }
    const auto* t = n->op_as<TorchOp>();
    if (!t) continue;
    auto in_type = [&](size_t i) -> const TensorType& { return g.find(n->inputs[i])->type; };
    if (t->target == "linear") {
      s.flops += 2.0 * static_cast<double>(elements(*n)) * static_cast<double>(in_type(1).dim(1));
    } else if (t->target == "matmul") {
      const TensorType& a = in_type(0);
      s.flops += 2.0 * static_cast<double>(elements(*n)) * static_cast<double>(a.dim(a.rank() - 1));
    } else if (t->target == "scaled_dot_product_attention") {
      // QK^T and PV over every key (the causal mask's skipped half is counted too).
      const TensorType& q = in_type(0);
      const TensorType& k = in_type(1);
      const double rows = static_cast<double>(num_elements(q.shape) / q.dim(q.rank() - 1));
      s.flops += 2.0 * rows * static_cast<double>(k.dim(k.rank() - 2)) *
                 static_cast<double>(q.dim(q.rank() - 1) + n->type.dim(n->type.rank() - 1));
    }
  }
}

void count_kernels(const Graph& g, ModelSummary& s) {
  std::set<std::string> sources;
  std::vector<const Node*> kernels;
  for (const Node* n : g.nodes()) {
    if (const auto* cuda = n->op_as<CudaOp>()) {
      ++s.kernels;
      sources.insert(cuda->name + '\n' + cuda->source);
    } else if (n->op_as<KernelLikeOp>()) {
      ++s.kernels;
      kernels.push_back(n);
    }
  }
  int64_t distinct = static_cast<int64_t>(sources.size());
  const std::vector<size_t> representative = group_equal_kernels(g, kernels);
  for (size_t k = 0; k < representative.size(); ++k) distinct += representative[k] == k;
  s.distinct_kernels = distinct;
}

std::string print_model_summary(const std::string& model, const std::string& stage, const ModelSummary& s,
                                double seconds) {
  char time[32];
  std::snprintf(time, sizeof time, "%.3f s", seconds);
  std::string out = "model: " + model + "  (" + std::to_string(s.tokens) + " token" + (s.tokens == 1 ? "" : "s") +
                    " per run)\n";
  out += "compiled to " + stage + " IR in " + time + "\n";
  out += "kernels: " + std::to_string(s.kernels) + "  distinct: " + std::to_string(s.distinct_kernels) + "\n";
  out += "parameters: " + with_unit(static_cast<double>(s.parameters), "") + " (" + std::to_string(s.parameters) + ")\n";
  out += "FLOPs per token: " + with_unit(s.tokens > 0 ? s.flops / static_cast<double>(s.tokens) : 0.0, "FLOP") + "\n";
  return out;
}

}  // namespace tessera::cli

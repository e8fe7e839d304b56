// The `tessera compile MODEL` summary (see model_summary.h).
#include "model_summary.h"

#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "tessera/ir/printer.h"

namespace tessera::cli {

namespace {

int64_t elements(const Node& n) { return num_elements(n.type.shape); }

// `text` with every identifier in `renames` replaced (whole identifiers only).
std::string rename_identifiers(const std::string& text, const std::map<std::string, std::string>& renames) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (std::isalpha(c) || c == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      const std::string word = text.substr(i, j - i);
      auto it = renames.find(word);
      out += it == renames.end() ? word : it->second;
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

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
      if ((n->id == "input_ids" || n->id == "x") && n->type.rank() >= 2) s.tokens = n->type.dim(1);
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
  std::set<std::string> distinct;
  for (const Node* n : g.nodes()) {
    std::string text, name;
    if (const auto* cuda = n->op_as<CudaOp>()) {
      text = print_node(g, *n);
      name = cuda->name;
    } else if (const auto* kernel = n->op_as<KernelLikeOp>()) {
      text = print_node(g, *n);
      name = kernel->name;
    } else {
      continue;
    }
    ++s.kernels;
    std::map<std::string, std::string> renames = {{name, "kernel"}, {n->id, "out"}};
    for (size_t i = 0; i < n->inputs.size(); ++i) renames.emplace(n->inputs[i], "in" + std::to_string(i));
    distinct.insert(rename_identifiers(text, renames));
  }
  s.distinct_kernels = static_cast<int64_t>(distinct.size());
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

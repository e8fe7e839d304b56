// Deterministic input and constant data: Tessera's own splitmix64 + Box-Muller generator, so every
// backend and every standard library produce the same numbers.
#include "tessera/eval/constant_data.h"

#include <cmath>
#include <numbers>

namespace tessera {
namespace {

// FNV-1a: a fixed, library-independent hash of a node id (std::hash is implementation-defined).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double SplitMix64::normal() {
  // u1 in (0, 1] keeps log finite.
  double u1 = 1.0 - uniform();
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

Expected<std::vector<double>> generate_data(const std::string& init, uint64_t seed, double fill, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count < 0 ? 0 : count));
  SplitMix64 rng(seed);
  if (init == "randn") {
    for (double& v : out) v = rng.normal();
  } else if (init == "rand") {
    for (double& v : out) v = rng.uniform();
  } else if (init == "zeros") {
    for (double& v : out) v = 0.0;
  } else if (init == "ones") {
    for (double& v : out) v = 1.0;
  } else if (init == "full") {
    for (double& v : out) v = fill;
  } else if (init == "randint") {
    // Uniform integers in [0, fill): `fill` holds torch.randint's `high`.
    for (double& v : out) v = std::floor(rng.uniform() * fill);
  } else {
    return make_error("unknown data init '" + init + "' (expected randn, rand, randint, zeros, ones or full)");
  }
  return out;
}

Expected<TensorValue> constant_data(const ConstantOp& op, const TensorType& type) {
  const int64_t count = num_elements(type.shape);
  std::vector<double> data;
  if (!op.values.empty()) {
    if (static_cast<int64_t>(op.values.size()) == count) {
      data = op.values;
    } else if (op.values.size() == 1) {
      data.assign(static_cast<size_t>(count), op.values[0]);
    } else {
      return make_error("constant '" + op.path + "' has " + std::to_string(op.values.size()) +
                        " values but its type " + type.str() + " needs " + std::to_string(count));
    }
  } else if (op.init == "full") {
    TESSERA_ASSIGN_OR_RETURN(data, generate_data("full", op.seed, op.scale, count));
  } else {
    TESSERA_ASSIGN_OR_RETURN(data, generate_data(op.init, op.seed, 0.0, count));
    if (op.init == "randn" || op.init == "rand")
      for (double& v : data) v *= op.scale;
  }
  for (double& v : data) v = round_to_storage(v, type.dtype);
  return TensorValue(type, std::move(data));
}

Expected<TensorValue> input_data(const InputOp& op, const TensorType& type, const std::string& node_id, uint64_t seed) {
  // Mix the id into the seed through one splitmix step so nearby seeds give unrelated streams.
  SplitMix64 mixer(seed ^ fnv1a(node_id));
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> data,
                           generate_data(op.init, mixer.next(), op.fill, num_elements(type.shape)));
  for (double& v : data) v = round_to_storage(v, type.dtype);
  return TensorValue(type, std::move(data));
}

ValueMap make_inputs(const Graph& graph, uint64_t seed) {
  ValueMap values;
  for (const Node* n : graph.nodes()) {
    const auto* op = n->op_as<InputOp>();
    if (!op) continue;
    Expected<TensorValue> v = input_data(*op, n->type, n->id, seed);
    if (v) values.emplace(n->id, std::move(*v));
  }
  return values;
}

}  // namespace tessera

// Deterministic input and constant data: Tessera's own splitmix64 + Box-Muller generator, so every
// backend and every standard library produce the same numbers; checkpoint constants read from their
// memory-mapped safetensors file, checked against what the compile recorded.
#include "tessera/eval/constant_data.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <numbers>
#include <optional>
#include <thread>
#include <vector>

#include "safetensors_file.h"

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

namespace {

// SplitMix64 adds this to its state per draw, so draw k onwards of SplitMix64(seed) is
// SplitMix64(seed + k * kSplitMixIncrement): any window of a stream without drawing what precedes.
constexpr uint64_t kSplitMixIncrement = 0x9E3779B97F4A7C15ULL;

// Values [first, first + out.size()) of generate_data's sequence (randn takes two draws per value,
// rand and randint one).
Status generate_window(const std::string& init, uint64_t seed, double fill, int64_t first, std::span<double> out) {
  const uint64_t at = static_cast<uint64_t>(first);
  if (init == "randn") {
    SplitMix64 rng(seed + 2 * at * kSplitMixIncrement);
    for (double& v : out) v = rng.normal();
  } else if (init == "rand") {
    SplitMix64 rng(seed + at * kSplitMixIncrement);
    for (double& v : out) v = rng.uniform();
  } else if (init == "zeros") {
    for (double& v : out) v = 0.0;
  } else if (init == "ones") {
    for (double& v : out) v = 1.0;
  } else if (init == "full") {
    for (double& v : out) v = fill;
  } else if (init == "randint") {
    // Uniform integers in [0, fill): `fill` holds torch.randint's `high`.
    SplitMix64 rng(seed + at * kSplitMixIncrement);
    for (double& v : out) v = std::floor(rng.uniform() * fill);
  } else {
    return make_error("unknown data init '" + init + "' (expected randn, rand, randint, zeros, ones or full)");
  }
  return Status::ok();
}

// "2026-11-24 23:40:01.123456789 UTC": a recorded modification time, for messages.
std::string time_text(int64_t ns) {
  const std::time_t seconds = static_cast<std::time_t>(ns / 1000000000);
  std::tm utc{};
  char date[32] = "?";
  if (::gmtime_r(&seconds, &utc) != nullptr) std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &utc);
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%09lld", static_cast<long long>(ns % 1000000000));
  return std::string(date) + fraction + " UTC";
}

std::string stamp_text(int64_t bytes, int64_t modified_ns) {
  return std::to_string(bytes) + " bytes, modified " + time_text(modified_ns);
}

// Where a constant's values come from, opened once and then read window by window. A checkpoint
// tensor is checked when opened: the file as recorded, the tensor present with the node's shape and
// a floating dtype. Windows are rounded to the dtype's storage.
class ConstantReader {
 public:
  static Expected<ConstantReader> open(const ConstantOp& op, const TensorType& type) {
    ConstantReader r(op, type);
    if (op.checkpoint) {
      TESSERA_TRY(r.open_checkpoint(*op.checkpoint));
    } else if (!op.values.empty() && op.values.size() != 1 && static_cast<int64_t>(op.values.size()) != r.count_) {
      return make_error("constant '" + op.path + "' has " + std::to_string(op.values.size()) +
                        " values but its type " + type.str() + " needs " + std::to_string(r.count_));
    } else if (op.values.empty()) {
      std::vector<double> probe(0);
      TESSERA_TRY(generate_window(op.init, op.seed, 0.0, 0, probe));  // an unknown init is an error now
    }
    return r;
  }

  int64_t count() const { return count_; }

  Status read(int64_t first, std::span<double> out) const {
    const ConstantOp& op = *op_;
    if (mapped_) {
      TESSERA_TRY(safetensors_values_into(mapped_->view().tensors[tensor_], first, out, mapped_->path()));
    } else if (!op.values.empty()) {
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = op.values.size() == 1 ? op.values[0] : op.values[static_cast<size_t>(first) + i];
    } else if (op.init == "full") {
      TESSERA_TRY(generate_window("full", op.seed, op.scale, first, out));
    } else {
      TESSERA_TRY(generate_window(op.init, op.seed, 0.0, first, out));
      if (op.init == "randn" || op.init == "rand")
        for (double& v : out) v *= op.scale;
    }
    for (double& v : out) v = round_to_storage(v, type_.dtype);
    return Status::ok();
  }

 private:
  ConstantReader(const ConstantOp& op, const TensorType& type)
      : op_(&op), type_(type), count_(num_elements(type.shape)) {}

  Status open_checkpoint(const CheckpointRef& ref) {
    const std::string what = "tensor '" + op_->path + "' of checkpoint " + ref.file;
    // The file's stamp before its bytes: a replaced file is reported as changed, not as whatever
    // its new bytes fail to parse as.
    struct stat st {};
    if (::stat(ref.file.c_str(), &st) != 0)
      return make_error("cannot read " + what + ": " + std::strerror(errno) +
                        " (the file was there when the program was compiled)");
    const FileStamp now{static_cast<int64_t>(st.st_size),
                        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + static_cast<int64_t>(st.st_mtim.tv_nsec)};
    auto changed = [&](const FileStamp& found) {
      return make_error("cannot read " + what + ": the file changed after the program was compiled (then " +
                        stamp_text(ref.file_bytes, ref.modified_ns) + "; now " +
                        stamp_text(found.bytes, found.modified_ns) + "); compile the program again");
    };
    if (now != FileStamp{ref.file_bytes, ref.modified_ns}) return changed(now);
    Expected<MappedSafetensors> mapped = MappedSafetensors::open(ref.file);
    if (!mapped) return make_error("cannot read " + what + ": " + mapped.error().message);
    if (mapped->stamp() != FileStamp{ref.file_bytes, ref.modified_ns}) return changed(mapped->stamp());
    const SafetensorsTensorView* t = mapped->view().find(op_->path);
    if (t == nullptr) return make_error("cannot read " + what + ": the file has no such tensor");
    std::vector<int64_t> shape;
    for (const Dim& d : type_.shape) shape.push_back(d.value());
    if (t->shape != shape)
      return make_error("cannot read " + what + ": its shape " + shape_str(Shape(t->shape.begin(), t->shape.end())) +
                        " is not the constant's " + type_.str());
    if (t->dtype != DType::F32 && t->dtype != DType::F16 && t->dtype != DType::BF16)
      return make_error("cannot read " + what + ": it is " + std::string(safetensors_dtype_name(t->dtype)) +
                        "; a checkpoint constant is F32, F16 or BF16");
    tensor_ = static_cast<size_t>(t - mapped->view().tensors.data());
    mapped_ = std::move(*mapped);
    return Status::ok();
  }

  const ConstantOp* op_;
  TensorType type_;
  int64_t count_;
  std::optional<MappedSafetensors> mapped_;
  size_t tensor_ = 0;  // index into mapped_'s tensors
};

}  // namespace

Expected<std::vector<double>> generate_data(const std::string& init, uint64_t seed, double fill, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count < 0 ? 0 : count));
  TESSERA_TRY(generate_window(init, seed, fill, 0, out));
  return out;
}

Expected<TensorValue> constant_data(const ConstantOp& op, const TensorType& type) {
  TESSERA_ASSIGN_OR_RETURN(ConstantReader reader, ConstantReader::open(op, type));
  const int64_t count = reader.count();
  std::vector<double> data(static_cast<size_t>(count));
  // A large tensor is read in one window per core: every window starts its stream where the
  // sequence is at that element (generate_window), so the values do not depend on the split. A
  // 7B model's MLP projection (136 M values) took 5.8 s on one core.
  constexpr int64_t kMinPerThread = int64_t{1} << 20;
  const int64_t threads =
      std::min<int64_t>(std::max<unsigned>(std::thread::hardware_concurrency(), 1u), count / kMinPerThread);
  if (threads <= 1) {
    TESSERA_TRY(reader.read(0, data));
    return TensorValue(type, std::move(data));
  }
  const int64_t chunk = (count + threads - 1) / threads;
  std::vector<Status> read(static_cast<size_t>(threads));
  {
    std::vector<std::jthread> pool;
    for (int64_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const int64_t first = t * chunk, n = std::min(chunk, count - first);
        read[static_cast<size_t>(t)] = reader.read(first, std::span<double>(data.data() + first, static_cast<size_t>(n)));
      });
  }
  for (Status& s : read) TESSERA_TRY(std::move(s));
  return TensorValue(type, std::move(data));
}

Status constant_data_windows(const ConstantOp& op, const TensorType& type, int64_t window,
                             const std::function<Status(int64_t first, std::span<const double> values)>& sink) {
  TESSERA_ASSIGN_OR_RETURN(ConstantReader reader, ConstantReader::open(op, type));
  const int64_t count = reader.count();
  if (window < 1) return make_error("constant data windows must hold at least one element");
  std::vector<double> buffer(static_cast<size_t>(std::min(window, count)));
  for (int64_t first = 0; first < count; first += window) {
    const std::span<double> part(buffer.data(), static_cast<size_t>(std::min(window, count - first)));
    TESSERA_TRY(reader.read(first, part));
    TESSERA_TRY(sink(first, part));
  }
  return Status::ok();
}

Expected<TensorValue> input_data(const InputOp& op, const TensorType& type, const std::string& node_id, uint64_t seed) {
  // Mix the id into the seed through one splitmix step so nearby seeds give unrelated streams.
  SplitMix64 mixer(seed ^ fnv1a(node_id));
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> data,
                           generate_data(op.init, mixer.next(), op.fill, num_elements(type.shape)));
  for (double& v : data) v = round_to_storage(v, type.dtype);
  return TensorValue(type, std::move(data));
}

Status add_constants(const Graph& graph, ValueMap& values) {
  for (const Node* n : graph.nodes()) {
    const auto* op = n->op_as<ConstantOp>();
    if (!op || values.count(n->id())) continue;
    Expected<TensorValue> v = constant_data(*op, n->type);
    if (!v) return std::move(v).error().at_node(n->id());
    values.emplace(n->id(), std::move(*v));
  }
  return Status::ok();
}

Expected<const TensorValue*> given_constant(const Node& n, const ValueMap& values) {
  auto it = values.find(n.id());
  if (it == values.end()) return static_cast<const TensorValue*>(nullptr);
  if (!(it->second.type == n.type) || static_cast<int64_t>(it->second.data.size()) != num_elements(n.type.shape))
    return make_error("constant '" + n.id() + "' was given a value of type " + it->second.type.str() + " (" +
                      std::to_string(it->second.data.size()) + " elements) but is " + n.type.str())
        .at_node(n.id());
  return &it->second;
}

Expected<TensorValue> constant_value(const Node& n, const ConstantOp& op, const ValueMap& values) {
  TESSERA_ASSIGN_OR_RETURN(const TensorValue* given, given_constant(n, values));
  if (given) return *given;
  Expected<TensorValue> v = constant_data(op, n.type);
  if (!v) return std::move(v).error().at_node(n.id());
  return v;
}

ValueMap make_inputs(const Graph& graph, uint64_t seed) {
  ValueMap values;
  for (const Node* n : graph.nodes()) {
    const auto* op = n->op_as<InputOp>();
    if (!op) continue;
    Expected<TensorValue> v = input_data(*op, n->type, n->id(), seed);
    if (v) values.emplace(n->id(), std::move(*v));
  }
  return values;
}

}  // namespace tessera

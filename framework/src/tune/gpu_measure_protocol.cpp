// The files GpuMeasurer and its worker exchange (see gpu_measure_protocol.h): request and result
// as JSON, the reference as a manifest plus raw doubles. Both ends are the same build of Tessera on
// the same machine, so the doubles are written in the machine's own byte order; a file that does
// not parse or has the wrong size is an error naming it.
#include "gpu_measure_protocol.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "tessera/support/atomic_file.h"

namespace tessera {

namespace {

using nlohmann::json;

constexpr GpuTrialFailure kAllFailures[] = {
    GpuTrialFailure::None,        GpuTrialFailure::NoDevice,   GpuTrialFailure::Compile,
    GpuTrialFailure::Run,         GpuTrialFailure::WrongResult, GpuTrialFailure::Reference,
    GpuTrialFailure::TimedOut,
    GpuTrialFailure::WorkerDied,  GpuTrialFailure::WorkerFailed};

Expected<json> parse(const std::string& text, const std::string& file) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return make_error(file + ": not a JSON object");
  return j;
}

// Reads j[key] as T; an error names the file and the key.
template <class T>
Status read(const json& j, const char* key, T& out, const std::string& file) {
  auto it = j.find(key);
  if (it == j.end()) return make_error(file + ": missing \"" + key + "\"");
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    return make_error(file + ": \"" + key + "\" has the wrong type");
  }
  return Status::ok();
}

Expected<std::string> read_whole_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("cannot read " + path);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return make_error("cannot read " + path);
  return data;
}

}  // namespace

std::string_view gpu_trial_failure_name(GpuTrialFailure f) {
  switch (f) {
    case GpuTrialFailure::None: return "none";
    case GpuTrialFailure::NoDevice: return "no-device";
    case GpuTrialFailure::Compile: return "compile";
    case GpuTrialFailure::Run: return "run";
    case GpuTrialFailure::WrongResult: return "wrong-result";
    case GpuTrialFailure::Reference: return "reference";
    case GpuTrialFailure::TimedOut: return "timed-out";
    case GpuTrialFailure::WorkerDied: return "worker-died";
    case GpuTrialFailure::WorkerFailed: return "worker-failed";
  }
  return "unknown";
}

std::string trial_error_text(const Diagnostic& d) {
  std::string text = d.render();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string request_to_json_text(const GpuWorkerRequest& r) {
  json j = {{"probe", r.probe},          {"graph", r.graph_file},   {"reference", r.reference_file},
            {"seed", r.seed},            {"iterations", r.iterations}, {"max_warmup", r.max_warmup},
            {"flush_l2", r.flush_l2},    {"arch", r.arch},          {"cache_dir", r.cache_dir},
            {"parent_pid", r.parent_pid}};
  return j.dump(2) + "\n";
}

Expected<GpuWorkerRequest> request_from_json_text(const std::string& text, const std::string& file) {
  TESSERA_ASSIGN_OR_RETURN(json j, parse(text, file));
  GpuWorkerRequest r;
  TESSERA_TRY(read(j, "probe", r.probe, file));
  TESSERA_TRY(read(j, "graph", r.graph_file, file));
  TESSERA_TRY(read(j, "reference", r.reference_file, file));
  TESSERA_TRY(read(j, "seed", r.seed, file));
  TESSERA_TRY(read(j, "iterations", r.iterations, file));
  TESSERA_TRY(read(j, "max_warmup", r.max_warmup, file));
  TESSERA_TRY(read(j, "flush_l2", r.flush_l2, file));
  TESSERA_TRY(read(j, "arch", r.arch, file));
  TESSERA_TRY(read(j, "cache_dir", r.cache_dir, file));
  TESSERA_TRY(read(j, "parent_pid", r.parent_pid, file));
  if (r.iterations < 1) return make_error(file + ": \"iterations\" must be at least 1");
  return r;
}

std::string result_to_json_text(const GpuWorkerResult& r) {
  json kernels = json::array();
  for (const GpuKernelLatency& k : r.kernels)
    kernels.push_back({{"node", k.node}, {"kernel", k.kernel}, {"median_us", k.median_us}});
  json j = {{"ok", r.failure == GpuTrialFailure::None},
            {"failure", std::string(gpu_trial_failure_name(r.failure))},
            {"error", r.error},
            {"device", r.device},
            {"arch", r.arch},
            {"latency_us", r.latency_us},
            {"kernels", kernels}};
  return j.dump(2) + "\n";
}

Expected<GpuWorkerResult> result_from_json_text(const std::string& text, const std::string& file) {
  TESSERA_ASSIGN_OR_RETURN(json j, parse(text, file));
  GpuWorkerResult r;
  std::string failure;
  TESSERA_TRY(read(j, "failure", failure, file));
  bool known = false;
  for (GpuTrialFailure f : kAllFailures)
    if (gpu_trial_failure_name(f) == failure) {
      r.failure = f;
      known = true;
    }
  if (!known) return make_error(file + ": unknown failure \"" + failure + "\"");
  TESSERA_TRY(read(j, "error", r.error, file));
  TESSERA_TRY(read(j, "device", r.device, file));
  TESSERA_TRY(read(j, "arch", r.arch, file));
  TESSERA_TRY(read(j, "latency_us", r.latency_us, file));
  json kernels;
  TESSERA_TRY(read(j, "kernels", kernels, file));
  if (!kernels.is_array()) return make_error(file + ": \"kernels\" is not an array");
  for (const json& k : kernels) {
    GpuKernelLatency l;
    TESSERA_TRY(read(k, "node", l.node, file));
    TESSERA_TRY(read(k, "kernel", l.kernel, file));
    TESSERA_TRY(read(k, "median_us", l.median_us, file));
    r.kernels.push_back(std::move(l));
  }
  return r;
}

Status write_reference(const std::string& manifest_path, const std::vector<ReferenceOutput>& outputs) {
  json list = json::array();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ReferenceOutput& o = outputs[i];
    const std::string data_path = manifest_path + "." + std::to_string(i) + ".f64";
    const std::string bytes(reinterpret_cast<const char*>(o.value.data.data()), o.value.data.size() * sizeof(double));
    TESSERA_TRY(write_file_atomically(data_path, bytes));
    json shape = json::array();
    for (const Dim& d : o.value.type.shape) shape.push_back(d.value());
    list.push_back({{"id", o.id},
                    {"dtype", std::string(dtype_short_name(o.value.type.dtype))},
                    {"shape", shape},
                    {"data", data_path},
                    {"precision", std::string(dtype_short_name(o.tolerance.precision))},
                    {"rtol", o.tolerance.rtol},
                    {"rms_fraction", o.tolerance.rms_fraction},
                    {"smallest_normal", o.tolerance.smallest_normal}});
  }
  return write_file_atomically(manifest_path, json{{"outputs", list}}.dump(2) + "\n");
}

Expected<std::vector<ReferenceOutput>> read_reference(const std::string& manifest_path) {
  TESSERA_ASSIGN_OR_RETURN(std::string text, read_whole_file(manifest_path));
  TESSERA_ASSIGN_OR_RETURN(json j, parse(text, manifest_path));
  json list;
  TESSERA_TRY(read(j, "outputs", list, manifest_path));
  if (!list.is_array()) return make_error(manifest_path + ": \"outputs\" is not an array");
  std::vector<ReferenceOutput> outputs;
  for (const json& e : list) {
    ReferenceOutput o;
    std::string dtype, precision, data_path;
    std::vector<int64_t> shape;
    TESSERA_TRY(read(e, "id", o.id, manifest_path));
    TESSERA_TRY(read(e, "dtype", dtype, manifest_path));
    TESSERA_TRY(read(e, "shape", shape, manifest_path));
    TESSERA_TRY(read(e, "data", data_path, manifest_path));
    TESSERA_TRY(read(e, "precision", precision, manifest_path));
    TESSERA_TRY(read(e, "rtol", o.tolerance.rtol, manifest_path));
    TESSERA_TRY(read(e, "rms_fraction", o.tolerance.rms_fraction, manifest_path));
    TESSERA_TRY(read(e, "smallest_normal", o.tolerance.smallest_normal, manifest_path));
    std::optional<DType> d = parse_dtype(dtype), p = parse_dtype(precision);
    if (!d || !p) return make_error(manifest_path + ": output '" + o.id + "' has an unknown dtype");
    o.tolerance.precision = *p;
    o.value.type.dtype = *d;
    for (int64_t s : shape) o.value.type.shape.push_back(Dim(s));
    TESSERA_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(data_path));
    const int64_t count = num_elements(o.value.type.shape);
    if (bytes.size() != static_cast<size_t>(count) * sizeof(double))
      return make_error(data_path + ": " + std::to_string(bytes.size()) + " bytes, expected " +
                        std::to_string(count * static_cast<int64_t>(sizeof(double))) + " for output '" + o.id + "'");
    o.value.data.resize(static_cast<size_t>(count));
    std::memcpy(o.value.data.data(), bytes.data(), bytes.size());
    outputs.push_back(std::move(o));
  }
  return outputs;
}

}  // namespace tessera

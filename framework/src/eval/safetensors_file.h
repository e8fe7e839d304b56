// SafetensorsFile: Tessera's reader and writer of the safetensors tensor file format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length N, N bytes of
// JSON header, then the tensors' bytes. The header maps each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the byte section) and may hold a
// "__metadata__" object of string values. Used by `tessera run --save-io` and `tessera bench` to
// hand a run's inputs, parameters and outputs to other tools (PyTorch).
//
// Writing is deterministic: "__metadata__" first with its keys sorted, then the tensors sorted by
// name; the byte section holds the tensors widest dtype first (then by name), so every tensor is
// naturally aligned; the header is padded with spaces to a multiple of 8 bytes.
//
// Reading is bounded and strict, because files come from outside: the header length is checked
// against a limit and the file size, the JSON's nesting depth is checked before it is parsed,
// every entry must have exactly the three keys with well-typed values, the shape's byte count must
// equal the offsets' span, and the tensors must tile the byte section exactly (no gap, overlap or
// trailing byte). Every error names the file and the header byte, tensor or key at fault.
//
// Model checkpoints are read through MappedSafetensors: the file is memory-mapped, its header
// checked as above, and each tensor is a view of the mapping, converted to values only when asked
// (safetensors_values: F32, F16 and BF16 exactly, integers and bool as their values). The mapping
// is read lazily by the kernel: only the pages of the tensors converted are ever read from disk.
//
// Tests: tests/unit/safetensors_file_test.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/eval/tensor_value.h"
#include "tessera/ir/type.h"
#include "tessera/support/status.h"

namespace tessera {

// One tensor of the file: its raw little-endian bytes as the dtype stores them.
struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::string bytes;
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;  // the "__metadata__" map
  std::vector<SafetensorsTensor> tensors;       // reading: sorted by name

  // The tensor named `name`, or nullptr.
  const SafetensorsTensor* find(std::string_view name) const;
};

struct SafetensorsLimits {
  uint64_t max_header_bytes = 100u << 20;  // the header of a real file is a few KB per tensor
  int max_json_depth = 8;                   // a valid header nests 3 levels deep
  int max_rank = 64;
};

// The format's dtype names: F32, F16, BF16, I32, I64, BOOL.
std::string_view safetensors_dtype_name(DType dtype);

// The bytes of a file holding `file`. An error when a tensor's byte count does not match its dtype
// and shape, a name repeats or is "__metadata__", or a string is not valid UTF-8.
Expected<std::string> encode_safetensors(const SafetensorsFile& file);
// Parses `bytes`; `source` names the file in errors.
Expected<SafetensorsFile> decode_safetensors(std::string_view bytes, const std::string& source,
                                             const SafetensorsLimits& limits = {});

// One tensor of a parsed file, its bytes a view into the file's bytes (which must outlive it).
struct SafetensorsTensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::string_view bytes;
};

struct SafetensorsView {
  std::string source;                           // the file, for messages
  std::map<std::string, std::string> metadata;  // the "__metadata__" map
  std::vector<SafetensorsTensorView> tensors;   // sorted by name

  const SafetensorsTensorView* find(std::string_view name) const;  // binary search; nullptr if absent
};

// Parses and checks `bytes` exactly as decode_safetensors does, without copying tensor bytes.
Expected<SafetensorsView> decode_safetensors_view(std::string_view bytes, const std::string& source,
                                                 const SafetensorsLimits& limits = {});

// The elements of `tensor` as doubles (little-endian; f16 and bf16 exactly). `source` names the
// file in errors.
Expected<std::vector<double>> safetensors_values(const SafetensorsTensorView& tensor, const std::string& source);
// Elements [first, first + out.size()) of `tensor` into `out`, converted as safetensors_values
// does: a window, so a large tensor is converted piece by piece straight from the mapped bytes.
Status safetensors_values_into(const SafetensorsTensorView& tensor, int64_t first, std::span<double> out,
                               const std::string& source);

// A file's size and modification time (st_mtim, ns since the epoch): what a checkpoint reference
// records at compile time and compares at run time.
struct FileStamp {
  int64_t bytes = 0;
  int64_t modified_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// A safetensors file memory-mapped read-only and checked: the tensors are views of the mapping,
// which lives as long as any copy of this object.
class MappedSafetensors {
 public:
  static Expected<MappedSafetensors> open(const std::string& path, const SafetensorsLimits& limits = {});
  const SafetensorsView& view() const { return view_; }
  const std::string& path() const { return view_.source; }
  // The mapped file's size and modification time, from the descriptor that mapped it.
  const FileStamp& stamp() const { return stamp_; }

 private:
  struct Mapping;
  std::shared_ptr<Mapping> mapping_;
  SafetensorsView view_;
  FileStamp stamp_;
};

Status write_safetensors_file(const std::string& path, const SafetensorsFile& file);
Expected<SafetensorsFile> read_safetensors_file(const std::string& path, const SafetensorsLimits& limits = {});

}  // namespace tessera

// Ops: what a graph node computes. One class per op of every dialect.
//
//   stage   op classes                                   printed as
//   (core)  InputOp, ConstantOp                          listed in the graph header
//   torch   TorchOp (one per captured torch call)        name = op(args, attrs) -> (shape) dtype
//   tensor  ElementwiseOp, ReduceOp, IndexMapOp, GatherOp  same line form
//   loop    LoopOp (a loop nest = one future kernel)     === name -> output === block
//   tile    TileOp (loop nest + schedule statements)     kernel name  inputs: ..  outputs: .. block
//   kernel  KernelOp (hardware primitives)               same block form
//   cuda    CudaOp (rendered source + launch geometry)   the source
//
// Ops are immutable values owned by their node; passes replace a node's op to rewrite it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/ir/attr.h"
#include "tessera/ir/expr.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/ir/stmt.h"

namespace tessera {

enum class Dialect : uint8_t { Core, Torch, Tensor, Loop, Tile, Kernel, Cuda };

std::string_view dialect_name(Dialect d);  // "core", "torch", "tensor", "loop", "tile", "kernel", "cuda"
std::optional<Dialect> parse_dialect(std::string_view s);

struct Node;

class Op {
 public:
  virtual ~Op() = default;
  virtual Dialect dialect() const = 0;
  // Stable kind name, also the JSON tag: "input", "constant", "torch", "elementwise", "reduce",
  // "index_map", "gather", "loop", "tile", "kernel", "cuda".
  virtual std::string_view kind() const = 0;
  virtual std::unique_ptr<Op> clone() const = 0;
};

// ---- core ------------------------------------------------------------------------------------

// A program input: filled by the caller (or with seeded random data by `tessera run`).
// `init` records how the frontend created it: randn, rand, zeros, ones, full (with `fill`).
class InputOp final : public Op {
 public:
  std::string init = "randn";
  double fill = 0.0;
  Dialect dialect() const override { return Dialect::Core; }
  std::string_view kind() const override { return "input"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<InputOp>(*this); }
};

// Where a checkpoint constant's data lives: the safetensors file `file` (an absolute path), as it
// was when the graph was built (`file_bytes`, and `modified_ns`, its modification time in ns since
// the epoch). Backends read and check it only when they need the data (eval/constant_data.h): a
// file that vanished, or whose size or time differs, is an error naming the file and the tensor.
struct CheckpointRef {
  std::string file;
  int64_t file_bytes = 0;
  int64_t modified_ns = 0;
  bool operator==(const CheckpointRef&) const = default;
};

// A parameter of the program, e.g. a module weight. Its data is deterministic: the tensor `path`
// of a checkpoint file (`checkpoint`, by reference: never copied into the program), given
// literally in `values` (small constants), or generated from (`init`, `seed`) — in that order.
class ConstantOp final : public Op {
 public:
  std::string path;        // module path, e.g. "up.weight"; with `checkpoint`, the tensor's name
  std::string init = "randn";
  uint64_t seed = 0;
  double scale = 1.0;      // randn * scale, or the fill value for init == "full"
  std::vector<double> values;
  std::optional<CheckpointRef> checkpoint;
  Dialect dialect() const override { return Dialect::Core; }
  std::string_view kind() const override { return "constant"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<ConstantOp>(*this); }
};

// ---- torch -----------------------------------------------------------------------------------

// One captured torch call: `matmul = matmul(add, w, has_bias=False)`. `target` is the canonical op
// name (matmul, linear, rms_norm, softmax, add, ...); operands are the node's inputs in order,
// except scalars, which appear as `scalar_args` at their positions (index into the printed args).
class TorchOp final : public Op {
 public:
  std::string target;
  Attrs attrs;
  std::vector<std::pair<int64_t, double>> scalar_args;  // (position among args, value)
  Dialect dialect() const override { return Dialect::Torch; }
  std::string_view kind() const override { return "torch"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<TorchOp>(*this); }
};

// ---- tensor ----------------------------------------------------------------------------------

// `add = add(x, bias_bc)`: an elementwise function of operands already broadcast to the output
// shape. `args` are Exprs: a Var names a node input, a Float/Int literal is a scalar.
class ElementwiseOp final : public Op {
 public:
  ElementwiseFn fn = ElementwiseFn::Identity;
  ExprList args;
  Dialect dialect() const override { return Dialect::Tensor; }
  std::string_view kind() const override { return "elementwise"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<ElementwiseOp>(*this); }
};

// `red = sum(prod, axis=-2) -> (16, 1, 16)`: an associative reduction over one axis.
class ReduceOp final : public Op {
 public:
  CombineFn fn = CombineFn::Add;  // printed as its reduction_name: sum | prod | max | min
  int64_t axis = -1;
  bool keepdim = true;
  Dialect dialect() const override { return Dialect::Tensor; }
  std::string_view kind() const override { return "reduce"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<ReduceOp>(*this); }
};

// One source of an IndexMap: read `buffer[index]` (or the literal `value` when buffer is empty)
// where `predicate` holds. Sources are tried in order; the last one's predicate may be undefined.
struct IndexMapSource {
  std::string buffer;
  ExprList index;
  Expr value;
  Expr predicate;
};

// `bias_bc = bias[j]`: output coordinates (named by `coords`, e.g. i, j, k) mapped to source
// coordinates. Covers every layout op, broadcast, cat and masks.
class IndexMapOp final : public Op {
 public:
  std::vector<std::string> coords;
  std::vector<IndexMapSource> sources;
  Dialect dialect() const override { return Dialect::Tensor; }
  std::string_view kind() const override { return "index_map"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<IndexMapOp>(*this); }
};

// `emb = gather(table, ids, axis=0)`: out[i.., :] = table[ids[i..], :].
class GatherOp final : public Op {
 public:
  int64_t axis = 0;
  Dialect dialect() const override { return Dialect::Tensor; }
  std::string_view kind() const override { return "gather"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<GatherOp>(*this); }
};

// ---- loop / tile / kernel --------------------------------------------------------------------

// The shared shape of Loop, Tile and Kernel ops: a named kernel whose body reads the node's inputs
// and writes the node's output buffer (the node id).
class KernelLikeOp : public Op {
 public:
  std::string name;  // kernel name: merged_relu, k_rms_norm_reduce
  Body body;
};

class LoopOp final : public KernelLikeOp {
 public:
  Dialect dialect() const override { return Dialect::Loop; }
  std::string_view kind() const override { return "loop"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<LoopOp>(*this); }
};

class TileOp final : public KernelLikeOp {
 public:
  // The body's one Tile statement (docs/ir.md: a Tile IR kernel body is exactly one Tile), or
  // nullptr when the body has another shape.
  const Tile* tile() const { return body.size() == 1 ? body[0].as<Tile>() : nullptr; }
  Dialect dialect() const override { return Dialect::Tile; }
  std::string_view kind() const override { return "tile"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<TileOp>(*this); }
};

// A kernel of hardware primitives and its launch (docs/ir.md "Kernel parameters and launch").
class KernelOp final : public KernelLikeOp {
 public:
  std::vector<int64_t> grid{1, 1, 1};
  std::vector<int64_t> block{1, 1, 1};
  std::vector<int64_t> cluster;     // thread-block cluster dims (sm_90+); empty = no cluster
  // 0: every Smem is a static __shared__ array. Else the bytes of the kernel's one dynamic shared
  // array, from which the Smem statements are carved in order (smem_layout); it must hold them.
  int64_t dynamic_smem = 0;
  // Scalar and tensor-map parameters, after the buffers the node implies (kernel_signature).
  std::vector<KernelParam> params;
  Dialect dialect() const override { return Dialect::Kernel; }
  std::string_view kind() const override { return "kernel"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<KernelOp>(*this); }
};

// ---- cuda ------------------------------------------------------------------------------------

class CudaOp final : public Op {
 public:
  std::string name;                 // the __global__ function's name
  std::string source;               // complete CUDA C++ translation unit
  std::vector<int64_t> grid{1, 1, 1};
  std::vector<int64_t> block{1, 1, 1};
  std::vector<int64_t> cluster;     // empty = no cluster; else launched with a cluster attribute
  int64_t dynamic_smem = 0;         // bytes
  std::vector<KernelParam> params;  // every kernel argument in order: buffers, scalars, tensor maps
  Dialect dialect() const override { return Dialect::Cuda; }
  std::string_view kind() const override { return "cuda"; }
  std::unique_ptr<Op> clone() const override { return std::make_unique<CudaOp>(*this); }
};

}  // namespace tessera

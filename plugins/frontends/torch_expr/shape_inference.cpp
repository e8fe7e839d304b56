// PyTorch's shape rules for the ops the torch_expr frontend captures (see shape_inference.h).
#include "shape_inference.h"

#include <algorithm>
#include <set>

namespace tessera::torch_expr {

std::vector<int64_t> dims_of(const Shape& s) {
  std::vector<int64_t> out;
  for (const Dim& d : s) out.push_back(d.value());
  return out;
}
namespace {

int category(DType t) {
  if (t == DType::Bool) return 0;
  if (t == DType::I32 || t == DType::I64) return 1;
  return 2;
}

}  // namespace

Expected<int64_t> normalize_dim(int64_t dim, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r)
    return make_error("dimension out of range (expected to be in range of [" + std::to_string(-r) + ", " +
                      std::to_string(r - 1) + "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + r : dim;
}

Expected<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())].value();
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())].value();
    if (da != db && da != 1 && db != 1)
      return make_error("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together (" +
                        std::to_string(da) + " vs " + std::to_string(db) + " at dimension " +
                        std::to_string(static_cast<int64_t>(i) - static_cast<int64_t>(rank)) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Expected<Shape> matmul_shape(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    return make_error("both arguments to matmul need to be at least 1-D, got shapes " + shape_str(a) + " and " +
                      shape_str(b));
  // 1-D operands are promoted (a: (k) -> (1, k); b: (k) -> (k, 1)) and the added dim removed after.
  Shape pa = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape pb = b.size() == 1 ? Shape{b[0], 1} : b;
  int64_t k_a = pa.back().value();
  int64_t k_b = pb[pb.size() - 2].value();
  if (k_a != k_b)
    return make_error("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be multiplied (" +
                      std::to_string(k_a) + " != " + std::to_string(k_b) + ")");
  Shape batch_a(pa.begin(), pa.end() - 2);
  Shape batch_b(pb.begin(), pb.end() - 2);
  Expected<Shape> batch = broadcast_shapes(batch_a, batch_b);
  if (!batch)
    return make_error("batch dimensions of shapes " + shape_str(a) + " and " + shape_str(b) +
                      " cannot be broadcast together");
  Shape out = *batch;
  if (a.size() > 1) out.push_back(pa[pa.size() - 2]);
  if (b.size() > 1) out.push_back(pb.back());
  return out;
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  std::set<int64_t> reduced(dims.begin(), dims.end());
  Shape out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!reduced.count(static_cast<int64_t>(i))) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

Expected<std::vector<int64_t>> normalize_reduction_dims(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    TESSERA_ASSIGN_OR_RETURN(int64_t n, normalize_dim(d, rank));
    if (rank == 0) continue;  // reducing a 0-d tensor over dim 0/-1 is a no-op
    if (!seen.insert(n).second)
      return make_error("dim " + std::to_string(n) + " appears multiple times in the list of dims");
    out.push_back(n);
  }
  return out;
}

Expected<Shape> reshape_shape(const Shape& input, const std::vector<int64_t>& requested) {
  int64_t total = num_elements(input);
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < requested.size(); ++i) {
    int64_t d = requested[i];
    if (d == -1) {
      if (infer >= 0) return make_error("only one dimension can be inferred");
      infer = static_cast<int>(i);
    } else if (d < 0) {
      return make_error("invalid shape dimension " + std::to_string(d));
    } else if (d == 0) {
      known = 0;  // matches only an empty input
    } else if (known > (int64_t{1} << 62) / d) {
      known = -1;  // cannot match any input
      break;
    } else {
      known *= d;
    }
  }
  std::string want = "(";
  for (size_t i = 0; i < requested.size(); ++i) want += (i ? ", " : "") + std::to_string(requested[i]);
  want += requested.size() == 1 ? ",)" : ")";
  auto mismatch = [&] {
    return make_error("shape " + want + " is invalid for input of size " + std::to_string(total) + " (shape " +
                      shape_str(input) + ")");
  };
  if (known < 0) return mismatch();
  Shape out;
  for (int64_t d : requested) out.push_back(d);
  if (infer >= 0 && known == 0) {
    if (total != 0) return mismatch();
    return make_error("cannot reshape tensor of 0 elements into shape " + want +
                      " because the unspecified dimension size -1 can be any value and is ambiguous");
  }
  if (infer >= 0) {
    if (total % known != 0) return mismatch();
    out[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    return mismatch();
  }
  return out;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) return DType::I64;  // i32 with i64
  // Two different floating types: f64 wins over the others, f32 over f16/bf16, and f16 with bf16
  // gives f32.
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  return DType::F32;
}

DType promote_with_scalar(DType tensor, bool scalar_is_float, bool scalar_is_int, DType default_float) {
  int scalar_category = scalar_is_float ? 2 : scalar_is_int ? 1 : 0;
  if (scalar_category <= category(tensor)) return tensor;
  return scalar_category == 2 ? default_float : DType::I64;
}

void TensorResultType::add(const TensorType& t) {
  std::optional<DType>& slot = t.rank() == 0 ? zero_dim_ : dimensioned_;
  slot = slot ? promote_types(*slot, t.dtype) : t.dtype;
}

std::optional<DType> TensorResultType::result() const {
  if (!dimensioned_ || !zero_dim_) return dimensioned_ ? dimensioned_ : zero_dim_;
  // c10's combine_categories(higher = dimensioned, lower = 0-dim).
  const DType higher = *dimensioned_, lower = *zero_dim_;
  if (dtype_is_float(higher)) return higher;
  if (higher == DType::Bool || dtype_is_float(lower)) return promote_types(higher, lower);
  return higher;
}

}  // namespace tessera::torch_expr

// Verifiers: graph structure, per-dialect op rules, and kernel bodies (kinds and name binding).
//
// Body scoping (the same rule canonicalize_names follows): a statement without a body binds its
// Def* names for the rest of the enclosing body, nested bodies included; a statement with a body
// (Loop, StridedLoop, Tile) binds its names inside its body only. A name may be bound once per
// scope; an inner scope may shadow an outer one.
//
// Uses (by field role, stmt.h): UseName fields and Expr Vars must name a bound axis/value/
// accumulator (Vars may also be hardware indices such as threadIdx.x); a UseAcc field must name an
// accumulator (bound by Init), a UseFragment field a fragment array (bound by a Fragment). A UseTensorMap field must name a tensor-map parameter, and no other
// buffer field may. UseBuffer fields must not name a local value; when the graph is known they must name one of the
// node's inputs, its own output, or a buffer the body declares (Smem, Stage, TMA, barrier), and
// Write/VectorStore may only target the node's own output or a declared buffer.
//
// Types (docs/ir.md "Value types"): a Load (VectorLoad) has its buffer's storage dtype; a Write
// (VectorStore) of a named value stores a value of the buffer's dtype; an Assign's named operands
// have its result type (comparisons and logical ops: operands agree with each other, result bool;
// `where`: a bool condition; `cast`: any); an Accum adds a value of the accumulator's type; an
// SSA value reference (Expr Value) never names an index variable. Literals take their context's
// type. Value conversions are explicit `cast` Assigns; an expression cast (ExprKind::Cast) converts
// index arithmetic or widens, never to f16/bf16 (it would not round).
//
// Functions (ir/elementwise_fn.h): an Assign (and a Tensor IR Elementwise) names an elementwise
// function of the table with its arity; Accum, Combine and TreeHalve name a combine op.
#include "tessera/ir/verifier.h"
#include "stmt_reflection.h"
#include "tessera/ir/elementwise_fn.h"
#include "tessera/ir/uniformity.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

namespace tessera {
namespace {

using stmt_reflection::Reflected;
using stmt_reflection::kIsBody;

bool is_hardware_index(const std::string& name) {
  static const std::set<std::string> kNames = {
      "threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
      "blockDim.x",  "blockDim.y",  "blockDim.z",  "gridDim.x",  "gridDim.y",  "gridDim.z"};
  return kNames.count(name) > 0;
}

// The per-dialect sets come from the kind list's traits (stmt.h), not from a list kept here.
bool kind_allowed(StmtKind k, Dialect d) {
  const uint8_t dialects = stmt_kind_traits(k).dialects;
  switch (d) {
    case Dialect::Loop: return (dialects & kInLoop) != 0;
    case Dialect::Tile: return (dialects & kInTile) != 0;
    case Dialect::Kernel: return (dialects & kInKernel) != 0;
    case Dialect::Core:
    case Dialect::Torch:
    case Dialect::Tensor:
    case Dialect::Cuda: return false;
  }
  return false;
}

bool is_def(FieldRole role) { return field_role_traits(role).binds; }

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  size_t start = line.find_first_not_of(' ');
  return start == std::string::npos ? line : line.substr(start);
}

// The part of `e` that makes it float-valued (a float literal, a cast to a float dtype, or a name
// `is_float_name` says is a float), or null when `e` is an integer. Comparisons, logic and the
// bitwise kinds produce integers whatever their operands.
const Expr* float_part(const Expr& e, const std::function<bool(const Expr&)>& is_float_name) {
  if (!e.defined()) return nullptr;
  switch (e.kind()) {
    case ExprKind::Float: return &e;
    case ExprKind::Int: return nullptr;
    case ExprKind::Var: case ExprKind::Value: case ExprKind::Element: return is_float_name(e) ? &e : nullptr;
    case ExprKind::Cast: return dtype_is_float(e.cast_type()) ? &e : nullptr;
    case ExprKind::Lt: case ExprKind::Le: case ExprKind::Eq: case ExprKind::Ne: case ExprKind::And:
    case ExprKind::Or: case ExprKind::Not: case ExprKind::Xor: case ExprKind::BitAnd: case ExprKind::BitOr:
    case ExprKind::Shl: case ExprKind::Shr: return nullptr;
    case ExprKind::Select: {
      const Expr* t = float_part(e.operand(1), is_float_name);
      return t != nullptr ? t : float_part(e.operand(2), is_float_name);
    }
    case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Div: case ExprKind::Mod:
    case ExprKind::Min: case ExprKind::Max: {
      const Expr* a = float_part(e.operand(0), is_float_name);
      return a != nullptr ? a : float_part(e.operand(1), is_float_name);
    }
  }
  return nullptr;  // unreachable: every kind is listed
}

// What the graph tells the body verifier about buffers; absent when verify_body runs alone.
struct GraphBuffers {
  std::set<std::string> inputs;
  std::string output;
  const std::vector<KernelParam>* params = nullptr;  // a KernelOp's scalars and tensor maps
  std::map<std::string, DType> dtypes;  // inputs and output
};

// Checks the typing rules above over a body whose names the BodyVerifier already checked.
// Canonical bodies bind each name once, so one flat map of value types serves every scope.
class TypeVerifier final : public StmtVisitor {
 public:
  TypeVerifier(Dialect dialect, std::string node_id, const GraphBuffers* buffers)
      : dialect_(dialect), node_id_(std::move(node_id)) {
    if (buffers != nullptr) buffer_dtypes_ = buffers->dtypes;
    // Scalar kernel parameters: integer ones are index variables, floating-point ones values.
    if (buffers != nullptr && buffers->params != nullptr)
      for (const KernelParam& p : *buffers->params)
        if (p.kind == ParamKind::Scalar) {
          if (dtype_is_float(p.dtype)) types_[p.name] = ValueType::scalar(p.dtype);
          else axes_.insert(p.name);
        }
  }

  Status verify(const Body& body) {
    visit(body);
    return status_;
  }

  void visit_Load(const Load& s) override {
    check_storage(s.buffer, s.type, "loads");
    define(s.dst, s.type);
  }
  void visit_VectorLoad(const VectorLoad& s) override {
    check_storage(s.buffer, s.type, "loads");
    for (const std::string& d : s.dsts) define(d, s.type);
  }
  void visit_Assign(const Assign& s) override {
    for (const Expr& a : s.args) check_elements(a);
    const ElementwiseFn fn = s.op;
    if (Status arity = check_arity(fn, s.args.size()); !arity.is_ok()) {
      fail_at(s.dst + " = " + std::string(name_of(fn)) + "(...): " + arity.error().message);
    } else if (fn == ElementwiseFn::Cast) {
      require_value(s.args[0]);
    } else if (fn_info(fn).result == FnResult::Bool) {
      if (!(s.type == ValueType::scalar(DType::Bool))) fail_at("a comparison or logical op produces bool, not " + s.type.str());
      std::optional<ValueType> first;
      for (const Expr& a : s.args) {
        std::optional<ValueType> t = type_of(a);
        if (t && first && !(*t == *first))
          fail_at("compares operands of types " + first->str() + " and " + t->str() + " (cast one of them)");
        if (t && !first) first = t;
      }
    } else {
      for (size_t i = 0; i < s.args.size(); ++i) {
        ValueType want = fn == ElementwiseFn::Where && i == 0 ? ValueType::scalar(DType::Bool) : s.type;
        expect(s.args[i], want, "operand " + std::to_string(i) + " of " + std::string(name_of(fn)));
      }
    }
    define(s.dst, s.type);
  }
  void visit_Select(const Select& s) override {
    for (const Expr* e : {&s.cond, &s.then_value, &s.else_value}) check_elements(*e);
    expect(s.then_value, s.type, "the selected value");
    expect(s.else_value, s.type, "the selected value");
    define(s.dst, s.type);
  }
  void visit_Init(const Init& s) override {
    for (int64_t d : s.type.array)
      if (d <= 0) fail_at("register array dimensions must be positive");
    define(s.acc, s.type);
  }
  void visit_Accum(const Accum& s) override {
    check_elements(s.value);
    auto it = types_.find(s.acc);
    if (it == types_.end()) return;
    expect(s.value, it->second.element(), "the accumulated value");
    if (s.index.size() != it->second.array.size()) {
      fail_at("accumulates into " + s.acc + " (" + it->second.str() + ") with " + std::to_string(s.index.size()) +
              " index expression(s)");
      return;
    }
    check_array_index(s.acc, it->second, s.index);
  }
  void visit_WarpShuffle(const WarpShuffle& s) override {
    expect(s.src, s.type, "the shuffled value");
    define(s.dst, s.type);
  }
  void visit_Write(const Write& s) override {
    check_elements(s.value);
    auto it = buffer_dtypes_.find(s.buffer);
    if (it != buffer_dtypes_.end()) expect(s.value, ValueType::scalar(it->second), "the value written to " + s.buffer);
  }
  void visit_VectorStore(const VectorStore& s) override {
    auto it = buffer_dtypes_.find(s.buffer);
    if (it != buffer_dtypes_.end())
      for (const Expr& v : s.values) expect(v, ValueType::scalar(it->second), "a value stored to " + s.buffer);
  }
  void visit_Smem(const Smem& s) override {
    buffer_dtypes_[s.name] = s.dtype;
    smem_names_.insert(s.name);
  }
  void visit_DsmemLoad(const DsmemLoad& s) override {
    if (!smem_names_.count(s.buffer)) fail_at("DsmemLoad reads '" + s.buffer + "', which is not a Smem array of the kernel");
    check_storage(s.buffer, s.type, "loads");
    define(s.dst, s.type);
  }
  void visit_Stage(const Stage& s) override {
    auto it = buffer_dtypes_.find(s.buffer);
    if (it != buffer_dtypes_.end()) buffer_dtypes_[s.dst] = it->second;
    smem_names_.insert(s.dst);  // a Stage's slab is shared memory (Tile IR)
  }
  // Tensor cores: fragments of 16-bit operands; every slice an instruction names holds exactly the
  // elements a thread holds of its operand (stmt.h, MmaDims).
  void visit_Fragment(const Fragment& s) override {
    for (int64_t d : s.type.array)
      if (d <= 0) fail_at("fragment array dimensions must be positive");
    if (!s.type.is_array()) fail_at("fragment " + s.name + " is not an array (" + s.type.str() + ")");
    if (s.type.dtype != DType::BF16 && s.type.dtype != DType::F16)
      fail_at("fragment " + s.name + " holds " + std::string(dtype_short_name(s.type.dtype)) +
              "; operand fragments hold bf16 or f16");
    define(s.name, s.type);
  }
  void visit_LdMatrix(const LdMatrix& s) override {
    if (s.count != 1 && s.count != 2 && s.count != 4) fail_at("ldmatrix loads 1, 2 or 4 matrices, not " + std::to_string(s.count));
    if (!smem_names_.count(s.buffer)) fail_at("ldmatrix reads '" + s.buffer + "', which is not shared memory of the kernel");
    auto frag = types_.find(s.dst);
    if (frag == types_.end()) return;
    check_slice(s.dst, frag->second, s.dst_index, 2 * s.count, "ldmatrix.x" + std::to_string(s.count));
    auto buf = buffer_dtypes_.find(s.buffer);
    if (buf != buffer_dtypes_.end() && buf->second != frag->second.dtype)
      fail_at("ldmatrix moves " + std::string(dtype_short_name(buf->second)) + " elements of " + s.buffer + " into " +
              s.dst + " (" + frag->second.str() + ")");
  }
  void visit_MmaSync(const MmaSync& s) override {
    const MmaDims d = mma_dims(s.shape);
    if (s.type != DType::BF16 && s.type != DType::F16)
      fail_at("mma." + std::string(spelling(s.shape)) + " multiplies bf16 or f16, not " +
              std::string(dtype_short_name(s.type)));
    const std::string mma = "mma." + std::string(spelling(s.shape));
    if (auto acc = types_.find(s.acc); acc != types_.end()) {
      if (acc->second.dtype != DType::F32) fail_at(mma + " accumulates in f32, not in " + acc->second.str());
      check_slice(s.acc, acc->second, s.acc_index, d.c_elements(), mma + "'s accumulator");
    }
    for (const auto& [name, index, want, what] :
         {std::tuple{&s.a, &s.a_index, d.a_elements(), "A"}, std::tuple{&s.b, &s.b_index, d.b_elements(), "B"}}) {
      auto frag = types_.find(*name);
      if (frag == types_.end()) continue;
      if (frag->second.dtype != s.type)
        fail_at(mma + "." + std::string(dtype_short_name(s.type)) + " reads its " + what + " operand from " + *name +
                " (" + frag->second.str() + ")");
      check_slice(*name, frag->second, *index, want, mma + "'s " + what + " operand");
    }
  }
  // wgmma.mma_async: 16-bit K-major operands in shared memory, an accumulator slice of N / 2 f32
  // per thread, descriptor strides the hardware can encode (multiples of 16 bytes below 2^18).
  void visit_WgmmaMma(const WgmmaMma& s) override {
    const std::string wgmma = "wgmma.m64n" + std::to_string(s.n) + "k16";
    if (!wgmma_n_is_valid(s.n)) fail_at(wgmma + ": N must be a multiple of 8 from 8 to 256");
    if (s.type != DType::BF16 && s.type != DType::F16)
      fail_at(wgmma + " multiplies bf16 or f16, not " + std::string(dtype_short_name(s.type)));
    if (auto acc = types_.find(s.acc); acc != types_.end()) {
      if (acc->second.dtype != DType::F32) fail_at(wgmma + " accumulates in f32, not in " + acc->second.str());
      if (wgmma_n_is_valid(s.n)) check_slice(s.acc, acc->second, s.acc_index, s.n / 2, wgmma + "'s accumulator");
    }
    for (const auto& [buffer, lbo, sbo, what] : {std::tuple{&s.a, s.a_lbo, s.a_sbo, "A"}, std::tuple{&s.b, s.b_lbo, s.b_sbo, "B"}}) {
      if (!smem_names_.count(*buffer))
        fail_at(wgmma + " reads its " + what + " operand from '" + *buffer + "', which is not shared memory of the kernel");
      if (auto buf = buffer_dtypes_.find(*buffer); buf != buffer_dtypes_.end() && buf->second != s.type)
        fail_at(wgmma + "." + std::string(dtype_short_name(s.type)) + " reads its " + what + " operand from " + *buffer +
                " (" + std::string(dtype_short_name(buf->second)) + ")");
      for (const auto& [stride, name] : {std::pair{lbo, "lbo"}, std::pair{sbo, "sbo"}})
        if (stride <= 0 || stride % 16 != 0 || stride >= (int64_t{1} << 18))
          fail_at(wgmma + "'s " + what + " descriptor has " + name + "=" + std::to_string(stride) +
                  ": a descriptor stride is a positive multiple of 16 bytes below 2^18");
    }
  }
  void visit_WgmmaWait(const WgmmaWait& s) override {
    if (s.keep < 0 || s.keep > 7) fail_at("WgmmaWait keeps 0 to 7 groups in flight, not " + std::to_string(s.keep));
  }
  void visit_NamedBarrier(const NamedBarrier& s) override {
    if (!named_barrier_id_is_valid(s.id)) fail_at("a named barrier's id is 1 to 15 (0 is Sync()'s), not " + std::to_string(s.id));
    if (!named_barrier_threads_is_valid(s.threads, std::numeric_limits<int64_t>::max()))  // the block is the emitter's
      fail_at("a named barrier counts whole warps: " + std::to_string(s.threads) + " threads is not a positive multiple of 32");
  }
  void visit_SetMaxNReg(const SetMaxNReg& s) override {
    if (!setmaxnreg_count_is_valid(s.regs))
      fail_at("setmaxnreg takes a multiple of 8 registers from 24 to 256, not " + std::to_string(s.regs));
  }
  void visit_Loop(const Loop& s) override {
    axes_.insert(s.var);
    if (s.unroll > 0) unrolled_.insert(s.var);
    StmtVisitor::visit_Loop(s);
  }
  void visit_StridedLoop(const StridedLoop& s) override {
    axes_.insert(s.var);
    if (s.unroll > 0) unrolled_.insert(s.var);
    StmtVisitor::visit_StridedLoop(s);
  }
  void visit_Let(const Let& s) override { axes_.insert(s.var); }
  void visit_Tile(const Tile& s) override {
    for (const TileAxis& a : s.axes) axes_.insert(a.name);
    StmtVisitor::visit_Tile(s);
  }

 private:
  void define(const std::string& name, const ValueType& t) {
    current_name_ = name;
    types_[name] = t;
  }

  // Register arrays are read element by element, each index a constant in bounds or an expression
  // of unrolled loops' axes (`a3`, `a3 * 4 + 1` after vectorize_loads: every element is a register
  // after unrolling).
  void check_array_index(const std::string& name, const ValueType& t, const ExprList& index) {
    for (size_t d = 0; d < index.size() && d < t.array.size(); ++d) {
      const Expr& i = index[d];
      if (i.is(ExprKind::Int)) {
        if (i.int_value() < 0 || i.int_value() >= t.array[d])
          fail_at("index " + std::to_string(i.int_value()) + " of dimension " + std::to_string(d) + " of " + name +
                  " (" + t.str() + ") is out of bounds");
      } else {
        const std::vector<std::string> vars = free_vars(i);
        if (vars.empty() || !std::all_of(vars.begin(), vars.end(), [&](const std::string& v) { return unrolled_.count(v) > 0; }))
          fail_at("index '" + i.str() + "' of " + name + " is neither a constant nor an expression of unrolled loops' axes");
      }
    }
  }

  // `name[index]` (a prefix of the array's dimensions) holds `want` elements per thread.
  void check_slice(const std::string& name, const ValueType& t, const ExprList& index, int64_t want,
                   const std::string& what) {
    if (index.size() >= t.array.size()) {
      fail_at(name + " (" + t.str() + ") indexed with " + std::to_string(index.size()) +
              " expression(s) leaves no fragment for " + what);
      return;
    }
    int64_t elements = 1;
    for (size_t d = index.size(); d < t.array.size(); ++d) elements *= t.array[d];
    if (elements != want)
      fail_at(what + " needs " + std::to_string(want) + " elements per thread, but the slice of " + name + " (" +
              t.str() + ") holds " + std::to_string(elements));
    check_array_index(name, t, index);
  }

  void check_elements(const Expr& e) {
    if (!e.defined()) return;
    if (is_bitwise_kind(e.kind())) {
      for (const Expr& op : e.operands()) {
        const Expr* f = float_part(op, [this](const Expr& name) {
          std::optional<ValueType> t = type_of(name);
          return t && dtype_is_float(t->dtype);
        });
        if (f != nullptr)
          fail_at("`" + e.str() + "` applies a bitwise operator to the float `" + f->str() +
                  "`; bitwise operators take integers");
      }
    }
    if (e.is(ExprKind::Element)) {
      auto it = types_.find(e.name());
      if (it == types_.end()) return;
      if (e.operands().size() != it->second.array.size()) {
        fail_at("reads " + e.str() + " but " + e.name() + " has type " + it->second.str());
        return;
      }
      check_array_index(e.name(), it->second, e.operands());
      return;
    }
    if (e.is_name()) {
      auto it = types_.find(e.name());
      if (it != types_.end() && it->second.is_array())
        fail_at("uses the register array " + e.name() + " (" + it->second.str() + ") without an element index");
      return;
    }
    for (const Expr& op : e.operands()) check_elements(op);
  }

  // The type of a named value (Value, a Var naming one, or an array Element); nullopt otherwise.
  std::optional<ValueType> type_of(const Expr& e) {
    if (e.defined() && e.is(ExprKind::Element)) {
      auto it = types_.find(e.name());
      if (it == types_.end()) return std::nullopt;
      return it->second.element();
    }
    if (!e.defined() || !e.is_name()) return std::nullopt;
    if (e.is(ExprKind::Value) && axes_.count(e.name())) {
      fail_at("'" + e.name() + "' is an index variable, not a value");
      return std::nullopt;
    }
    auto it = types_.find(e.name());
    if (it == types_.end()) return std::nullopt;
    return it->second;
  }

  void require_value(const Expr& e) { (void)type_of(e); }

  void expect(const Expr& e, const ValueType& want, const std::string& what) {
    std::optional<ValueType> t = type_of(e);
    if (t && !(*t == want)) fail_at(what + " has type " + t->str() + ", expected " + want.str() + " (cast it)");
  }

  void check_storage(const std::string& buffer, const ValueType& t, const std::string& verb) {
    auto it = buffer_dtypes_.find(buffer);
    if (it != buffer_dtypes_.end() && t.dtype != it->second)
      fail_at(verb + " " + t.str() + " from '" + buffer + "', whose elements are " +
              std::string(dtype_short_name(it->second)));
  }

  void fail_at(const std::string& problem) {
    if (!status_) return;
    status_ = make_error(std::string(dialect_name(dialect_)) + " IR: " +
                         (current_name_.empty() ? std::string() : "after '" + current_name_ + "': ") + problem)
                  .at_node(node_id_);
  }

  Dialect dialect_;
  std::string node_id_;
  std::map<std::string, DType> buffer_dtypes_;
  std::set<std::string> smem_names_;
  std::map<std::string, ValueType> types_;
  std::set<std::string> axes_;
  std::set<std::string> unrolled_;  // axes of loops with an unroll request
  std::string current_name_;
  Status status_;
};

class BodyVerifier {
 public:
  BodyVerifier(Dialect dialect, std::string node_id, const GraphBuffers* buffers)
      : dialect_(dialect), node_id_(std::move(node_id)), buffers_(buffers) {}

  Status verify(const Body& body) {
    if (dialect_ != Dialect::Loop && dialect_ != Dialect::Tile && dialect_ != Dialect::Kernel) {
      return make_error(std::string(dialect_name(dialect_)) + " IR has no statement bodies")
          .at_node(node_id_);
    }
    // Scalar params are values (integer ones usable in index expressions) and tensor-map params
    // are what TmaLoad names, bound around the whole body; nothing may redefine them.
    Frame params;
    if (buffers_ != nullptr && buffers_->params != nullptr) {
      for (const KernelParam& p : *buffers_->params) {
        if (p.kind == ParamKind::Scalar) {
          params[p.name] = dtype_is_float(p.dtype) ? FieldRole::DefValue : FieldRole::DefAxis;
        } else if (p.kind == ParamKind::TensorMap) {
          params[p.name] = FieldRole::DefBuffer;
          tensor_maps_.insert(p.name);
        }
      }
    }
    for (const auto& [name, role] : params) param_names_.insert(name);
    frames_.push_back(std::move(params));
    Status status = verify_in_new_scope(body, {});
    frames_.pop_back();
    TESSERA_TRY(status);
    return TypeVerifier(dialect_, node_id_, buffers_).verify(body);
  }

 private:
  using Frame = std::map<std::string, FieldRole>;  // name -> the role of its definition

  Status verify_in_new_scope(const Body& body, Frame frame) {
    frames_.push_back(std::move(frame));
    Status status;
    for (const Stmt& s : body) {
      status = verify_stmt(s);
      if (!status) break;
    }
    frames_.pop_back();
    return status;
  }

  Status verify_stmt(const Stmt& s) {
    if (!s.defined()) {
      return make_error(std::string(dialect_name(dialect_)) +
                        " IR body holds an undefined statement")
          .at_node(node_id_);
    }
    current_ = &s;
    switch (s.kind()) {
#define TESSERA_X(K) \
  case StmtKind::K: return verify_kind(*s.as<K>(), s);
      TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
    }
    return fail("holds no statement");
  }

  template <Reflected K>
  Status verify_kind(const K& s, const Stmt& self) {
    if (!kind_allowed(self.kind(), dialect_)) {
      return fail(std::string(stmt_kind_name(self.kind())) + " is not allowed in " +
                  std::string(dialect_name(dialect_)) + " IR");
    }
    Status status;
    bool owns_body = false;
    K::reflect(s, [&](const char* name, const auto& field, FieldRole role) {
      if constexpr (kIsBody<decltype(field)>) owns_body = true;
      if (status) status = check_uses(name, field, role);
    });
    TESSERA_TRY(status);
    TESSERA_TRY(check_write_target(s));
    TESSERA_TRY(check_smem_layout(s));

    // A statement with a body binds its names for the body (a loop's axis), but a buffer it
    // declares outlives it (a SlabMap's slab is read after it).
    Frame inner;
    K::reflect(s, [&](const char*, const auto& field, FieldRole role) {
      if (status) status = bind_defs(field, role, owns_body && role != FieldRole::DefBuffer ? inner : frames_.back());
    });
    TESSERA_TRY(status);

    K::reflect(s, [&](const char*, const auto& field, FieldRole) {
      if constexpr (kIsBody<decltype(field)>) {
        if (status) status = verify_in_new_scope(field, inner);
      }
    });
    current_ = &self;  // nested statements moved it; diagnostics below name this one again
    return status;
  }

  // ---- uses ----

  template <class T>
  Status check_uses(const char*, const T&, FieldRole) {
    return Status::ok();
  }

  Status check_uses(const char*, const std::string& name, FieldRole role) {
    if (field_role_traits(role).refers_to_name) return check_name_use(role, name);
    if (field_role_traits(role).refers_to_buffer) {
      // A tensor map is a descriptor, not memory: only a UseTensorMap field names one, and it must.
      const bool wants_tensor_map = role == FieldRole::UseTensorMap;
      if (buffers_ != nullptr && wants_tensor_map != (tensor_maps_.count(name) > 0)) {
        return fail(wants_tensor_map ? "'" + name + "' is not a tensor-map parameter of the kernel"
                                     : "tensor map '" + name + "' is used as a buffer");
      }
      return check_buffer_use(name);
    }
    return Status::ok();
  }

  // One conversion per job: an expression cast (`i64(x)`, `f32(a0)`) converts index arithmetic and
  // widens; narrowing a value to f16/bf16 precision rounds, and only a `cast` Assign does that
  // (docs/architecture.md, "Two casts, two jobs").
  Status check_expr_casts(const Expr& e) {
    if (e.is(ExprKind::Cast) && (e.cast_type() == DType::F16 || e.cast_type() == DType::BF16))
      return fail("`" + e.str() + "` narrows to " + std::string(dtype_short_name(e.cast_type())) +
                  " inside an expression, which does not round; convert the value with a `cast` Assign");
    for (const Expr& op : e.operands()) TESSERA_TRY(check_expr_casts(op));
    return Status::ok();
  }

  // Bitwise operators take integers (expr.h): a float literal or float cast under one is refused
  // here (a float SSA value operand is the TypeVerifier's to find), and so is a constant shift
  // amount outside [0, kShiftWidth).
  Status check_bitwise(const Expr& e) {
    if (is_bitwise_kind(e.kind())) {
      for (const Expr& op : e.operands())
        if (const Expr* f = float_part(op, [](const Expr&) { return false; }))
          return fail("`" + e.str() + "` applies a bitwise operator to the float `" + f->str() +
                      "`; bitwise operators take integers");
      const Expr& amount = e.operand(1);
      if ((e.is(ExprKind::Shl) || e.is(ExprKind::Shr)) && amount.is(ExprKind::Int) &&
          (amount.int_value() < 0 || amount.int_value() >= kShiftWidth))
        return fail("`" + e.str() + "` shifts by " + std::to_string(amount.int_value()) + ", outside [0, " +
                    std::to_string(kShiftWidth) + ")");
    }
    for (const Expr& op : e.operands()) TESSERA_TRY(check_bitwise(op));
    return Status::ok();
  }

  Status check_uses(const char* field_name, const Expr& e, FieldRole) {
    if (!e.defined()) return fail("field '" + std::string(field_name) + "' has no expression");
    TESSERA_TRY(check_expr_casts(e));
    TESSERA_TRY(check_bitwise(e));
    for (const std::string& var : free_vars(e)) {
      const FieldRole* bound = lookup(var);
      if (bound != nullptr && *bound != FieldRole::DefBuffer) continue;
      if (bound == nullptr && is_hardware_index(var)) continue;
      if (bound != nullptr) return fail("buffer '" + var + "' is used as a value");
      return fail("'" + var + "' is used before it is defined");
    }
    return Status::ok();
  }

  template <class T>
  Status check_uses(const char* field_name, const std::vector<T>& items, FieldRole role) {
    for (const T& item : items) TESSERA_TRY(check_uses(field_name, item, role));
    return Status::ok();
  }

  template <Reflected T>
  Status check_uses(const char*, const T& value, FieldRole) {
    Status status;
    T::reflect(value, [&](const char* name, const auto& field, FieldRole role) {
      if (status) status = check_uses(name, field, role);
    });
    return status;
  }

  Status check_uses(const char*, const Body&, FieldRole) { return Status::ok(); }  // later, scoped

  Status check_name_use(FieldRole role, const std::string& name) {
    const FieldRole* bound = lookup(name);
    const bool wants_acc = role == FieldRole::UseAcc;
    if (bound == nullptr) {
      if (wants_acc) return fail("accumulator '" + name + "' has no Init in scope");
      return fail("'" + name + "' is used before it is defined");
    }
    if (wants_acc && *bound != FieldRole::DefAcc) {
      return fail("'" + name + "' is not an accumulator (no Init defines it)");
    }
    if (role == FieldRole::UseFragment && *bound != FieldRole::DefFragment) {
      return fail("'" + name + "' is not a fragment array (no fragment() declares it)");
    }
    return Status::ok();
  }

  Status check_buffer_use(const std::string& name) {
    if (name.empty()) return fail("empty buffer name");
    const FieldRole* bound = lookup(name);
    if (bound != nullptr) {
      if (*bound == FieldRole::DefBuffer) return Status::ok();
      return fail("'" + name + "' is a local value, not a buffer");
    }
    if (buffers_ == nullptr) return Status::ok();
    if (name == buffers_->output || buffers_->inputs.count(name)) return Status::ok();
    return fail("buffer '" + name + "' is neither an input of node '" + node_id_ +
                "', its output, nor declared in the body");
  }

  // A shared buffer's (Smem, Stage) alignment is a power of two in [kSmemAlign, kSmemMaxAlign],
  // and a swizzled one starts on its swizzle's repeating pattern. PTX ISA, "Tensor swizzling modes" and the
  // "Shared Memory Descriptor" table "Starting address of repeating pattern": the pattern of the
  // 128-byte swizzle repeats every 1024 bytes, of the 64-byte every 512, of the 32-byte every 256
  // (8 rows of the swizzle width), and a TMA box or wgmma operand starts on that boundary, so the
  // array's align must be at least that.
  template <class K>
  Status check_smem_layout(const K& s) {
    if constexpr (std::is_same_v<K, Smem> || std::is_same_v<K, Stage>) {
      if (s.align < kSmemAlign || s.align > kSmemMaxAlign || !std::has_single_bit(static_cast<uint64_t>(s.align)))
        return fail("align=" + std::to_string(s.align) + " is not a power of two from " + std::to_string(kSmemAlign) +
                    " to " + std::to_string(kSmemMaxAlign));
      const int64_t pattern = swizzle_pattern_bytes(s.swizzle);
      if (s.align < pattern)
        return fail("swizzle=" + std::string(spelling(s.swizzle)) + " repeats every " + std::to_string(pattern) +
                    " bytes, so the array needs align=" + std::to_string(pattern) + " or more (it has align=" +
                    std::to_string(s.align) + ")");
      TESSERA_TRY(check_ring(s));
      if constexpr (std::is_same_v<K, Stage>) {
        for (const SlabDim& d : s.slab)
          if (d.stride < 1) return fail("slab dim " + d.axis + " has stride " + std::to_string(d.stride) + " (at least 1)");
      }
    }
    return Status::ok();
  }

  // A ring of slabs (Stage slots, Smem slots): 1 to kMaxRingSlots slots; a Stage without a ring
  // fills slot 0, and the Smem of a ring has one leading dimension per slot.
  static constexpr int64_t kMaxRingSlots = 8;
  template <class K>
  Status check_ring(const K& s) {
    if (s.slots < 1 || s.slots > kMaxRingSlots)
      return fail("slots=" + std::to_string(s.slots) + " is not from 1 to " + std::to_string(kMaxRingSlots));
    if constexpr (std::is_same_v<K, Stage>) {
      if (s.slots == 1 && !(s.slot.is(ExprKind::Int) && s.slot.int_value() == 0))
        return fail("a Stage without a ring (slots=1) fills slot 0, not slot " + s.slot.str());
    } else {
      if (s.slots > 1 && (s.shape.empty() || s.shape[0] != s.slots))
        return fail("Smem " + s.name + " is a ring of " + std::to_string(s.slots) +
                    " slots, so its first dimension must be " + std::to_string(s.slots));
    }
    return Status::ok();
  }

  static int64_t swizzle_pattern_bytes(SmemSwizzle sw) {
    switch (sw) {
      case SmemSwizzle::None: return 0;
      case SmemSwizzle::B32: return 256;
      case SmemSwizzle::B64: return 512;
      case SmemSwizzle::B128: return 1024;
    }
    return 0;  // unreachable: every SmemSwizzle is listed
  }

  // Loop/Tile/Kernel nodes write only their own output (or buffers their body declares).
  template <class K>
  Status check_write_target(const K& s) {
    if constexpr (std::is_same_v<K, Write> || std::is_same_v<K, VectorStore>) {
      if (buffers_ == nullptr || s.buffer == buffers_->output) return Status::ok();
      const FieldRole* bound = lookup(s.buffer);
      if (bound != nullptr && *bound == FieldRole::DefBuffer) return Status::ok();
      return fail("writes '" + s.buffer + "', but node '" + node_id_ +
                  "' may only write its own output");
    }
    return Status::ok();
  }

  // ---- definitions ----

  template <class T>
  Status bind_defs(const T&, FieldRole, Frame&) {
    return Status::ok();
  }

  Status bind_defs(const std::string& name, FieldRole role, Frame& frame) {
    if (!is_def(role)) return Status::ok();
    if (name.empty()) return fail("defines an empty name");
    if (param_names_.count(name)) return fail("'" + name + "' is a kernel parameter and cannot be redefined");
    if (!frame.emplace(name, role).second)
      return fail("'" + name + "' is defined twice in one scope");
    return Status::ok();
  }

  template <class T>
  Status bind_defs(const std::vector<T>& items, FieldRole role, Frame& frame) {
    for (const T& item : items) TESSERA_TRY(bind_defs(item, role, frame));
    return Status::ok();
  }

  template <Reflected T>
  Status bind_defs(const T& value, FieldRole, Frame& frame) {
    Status status;
    T::reflect(value, [&](const char*, const auto& field, FieldRole role) {
      if (status) status = bind_defs(field, role, frame);
    });
    return status;
  }

  Status bind_defs(const Body&, FieldRole, Frame&) { return Status::ok(); }

  // ---- helpers ----

  const FieldRole* lookup(const std::string& name) const {
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
      if (auto it = frame->find(name); it != frame->end()) return &it->second;
    }
    return nullptr;
  }

  // "<dialect> IR statement `<first line>`: <problem>", attached to the node.
  Diagnostic fail(const std::string& problem) const {
    std::string stmt = current_ != nullptr ? first_line(print_stmt(*current_)) : "?";
    return make_error(std::string(dialect_name(dialect_)) + " IR statement `" + stmt +
                      "`: " + problem)
        .at_node(node_id_);
  }

  Dialect dialect_;
  std::string node_id_;
  const GraphBuffers* buffers_;
  std::vector<Frame> frames_;
  std::set<std::string> param_names_, tensor_maps_;
  const Stmt* current_ = nullptr;
};

Diagnostic node_error(const Node& n, const std::string& message) {
  return make_error(message).at_node(n.id());
}

// Three positive sizes within CUDA's limits (architectural, the same on every device Tessera
// targets: grid.x < 2^31, grid.y/z <= 65535, block.x/y <= 1024, block.z <= 64, 1024 threads per
// block, at most 16 blocks per cluster); a cluster divides the grid.
Status verify_launch(const Node& n, const std::vector<int64_t>& grid, const std::vector<int64_t>& block,
                     const std::vector<int64_t>& cluster, int64_t dynamic_smem) {
  for (const auto* dims : {&grid, &block}) {
    bool ok = dims->size() == 3;
    for (int64_t v : *dims) ok = ok && v > 0;
    if (!ok) return node_error(n, "kernel launch geometry must be three positive sizes");
  }
  const int64_t grid_limit[3] = {(int64_t{1} << 31) - 1, 65535, 65535}, block_limit[3] = {1024, 1024, 64};
  for (size_t i = 0; i < 3; ++i) {
    if (grid[i] > grid_limit[i] || block[i] > block_limit[i])
      return node_error(n, "kernel launch geometry exceeds CUDA's limits (grid " + std::to_string(grid_limit[0]) +
                               ", 65535, 65535; block 1024, 1024, 64)");
  }
  if (block[0] * block[1] * block[2] > 1024) return node_error(n, "a block has more than 1024 threads");
  if (!cluster.empty()) {
    bool ok = cluster.size() == 3;
    for (int64_t v : cluster) ok = ok && v > 0;
    if (!ok) return node_error(n, "a cluster must be three positive sizes (or absent)");
    if (cluster[0] * cluster[1] * cluster[2] > 16) return node_error(n, "a cluster has more than 16 blocks");
    for (size_t i = 0; i < 3; ++i) {
      if (grid[i] % cluster[i] != 0) return node_error(n, "the cluster does not divide the grid");
    }
  }
  if (dynamic_smem < 0) return node_error(n, "dynamic shared memory is negative");
  return Status::ok();
}

// A KernelOp's own params: scalars and tensor maps (buffers are the node's inputs and output),
// unique names that no buffer or hardware index takes.
Status verify_params(const Graph& g, const Node& n, const std::vector<KernelParam>& params) {
  std::set<std::string> names(n.inputs.begin(), n.inputs.end());
  names.insert(n.id());
  for (const KernelParam& p : params) {
    const std::string what = "kernel parameter '" + p.name + "'";
    if (p.name.empty()) return node_error(n, "a kernel parameter has no name");
    if (is_hardware_index(p.name) || !names.insert(p.name).second)
      return node_error(n, what + " repeats the name of a buffer, another parameter or a hardware index");
    switch (p.kind) {
      case ParamKind::Buffer:
        return node_error(n, what + " is a buffer; a kernel's buffers are its node's inputs and output");
      case ParamKind::Scalar:
        if (!is_scalar_param_type(p.dtype)) return node_error(n, what + " must be i32, i64 or f32");
        if (p.range && (dtype_is_float(p.dtype) || p.range->lo > p.range->hi))
          return node_error(n, what + " has a range, which needs an integer type and lo <= hi");
        break;
      case ParamKind::TensorMap: {
        const TensorMapSpec& spec = p.tensor_map;
        const Node* buffer = g.find(spec.buffer);
        if (buffer == nullptr || (spec.buffer != n.id() && !std::count(n.inputs.begin(), n.inputs.end(), spec.buffer)))
          return node_error(n, what + " covers '" + spec.buffer + "', which is neither an input nor the output");
        if (static_cast<int64_t>(spec.box.size()) != buffer->type.rank() || spec.box.empty() || spec.box.size() > 5)
          return node_error(n, what + " needs a box of one to five dimensions, one per dimension of '" + spec.buffer + "'");
        for (size_t i = 0; i < spec.box.size(); ++i) {
          if (spec.box[i] < 1 || spec.box[i] > 256 || spec.box[i] > buffer->type.dim(static_cast<int64_t>(i)))
            return node_error(n, what + " has a box dimension outside 1..min(256, the buffer's size)");
        }
        if (p.dtype != buffer->type.dtype)
          return node_error(n, what + " has dtype " + std::string(dtype_short_name(p.dtype)) + " but '" +
                                   spec.buffer + "' is " + std::string(dtype_short_name(buffer->type.dtype)));
        if (!spec.element_strides.empty()) {
          if (spec.element_strides.size() != spec.box.size())
            return node_error(n, what + " needs one element stride per box dimension");
          for (int64_t st : spec.element_strides)
            if (st < 1 || st > 8) return node_error(n, what + " has an element stride outside 1..8");
        }
        if (spec.oob_fill == TensorMapOobFill::Nan && !dtype_is_float(p.dtype))
          return node_error(n, what + " fills out-of-bounds elements with NaN, which needs a float buffer");
        // The hardware's limits on the box's inner row: a multiple of 16 bytes, and within the
        // swizzle span when swizzled.
        const int64_t inner_bytes = spec.box.back() * dtype_bytes(p.dtype);
        if (inner_bytes % 16 != 0)
          return node_error(n, what + " has an inner box row of " + std::to_string(inner_bytes) +
                                   " bytes, which is not a multiple of 16");
        const int64_t span = swizzle_span_bytes(spec.swizzle);
        if (span > 0 && inner_bytes > span)
          return node_error(n, what + " has an inner box row of " + std::to_string(inner_bytes) + " bytes, wider than its " +
                                   std::string(spelling(spec.swizzle)) + " swizzle");
        break;
      }
    }
  }
  return Status::ok();
}

// Op-specific rules that do not need statement bodies.
Status verify_op(const Graph& g, const Node& n) {
  std::set<std::string> inputs(n.inputs.begin(), n.inputs.end());
  if (const auto* op = n.op_as<ConstantOp>(); op && op->checkpoint) {
    // A checkpoint tensor by reference (op.h CheckpointRef); the file itself is read and checked
    // only where the data is needed (constant_data), not here.
    const CheckpointRef& ref = *op->checkpoint;
    if (op->path.empty()) return node_error(n, "checkpoint constant names no tensor (its path is empty)");
    if (ref.file.empty() || ref.file.front() != '/')
      return node_error(n, "checkpoint file '" + ref.file + "' of tensor '" + op->path +
                               "' is not an absolute path (the graph must mean the same in any directory)");
    if (ref.file_bytes < 0 || ref.modified_ns < 0)
      return node_error(n, "checkpoint file '" + ref.file + "' has a negative size or modification time");
    if (!op->values.empty())
      return node_error(n, "constant '" + op->path + "' has both literal values and a checkpoint tensor");
    if (!dtype_is_float(n.type.dtype))
      return node_error(n, "checkpoint constant '" + op->path + "' has type " + n.type.str() +
                               "; checkpoint tensors convert to float32, float16 or bfloat16 only");
  }
  if (const auto* op = n.op_as<ElementwiseOp>()) {
    if (Status arity = check_arity(op->fn, op->args.size()); !arity.is_ok())
      return node_error(n, arity.error().message);
    for (const Expr& arg : op->args) {
      if (!arg.defined()) return node_error(n, "elementwise argument is undefined");
      for (const std::string& var : free_vars(arg)) {
        if (!inputs.count(var)) {
          return node_error(n, "elementwise argument '" + arg.str() + "' names '" + var +
                                   "', which is not an input of the node");
        }
      }
    }
  } else if (n.op_as<ReduceOp>() != nullptr) {
    if (n.inputs.size() != 1) return node_error(n, "reduce takes exactly one input");
  } else if (n.op_as<GatherOp>() != nullptr) {
    if (n.inputs.size() != 2) return node_error(n, "gather takes exactly two inputs (table, ids)");
  } else if (const auto* op = n.op_as<IndexMapOp>()) {
    std::set<std::string> coords(op->coords.begin(), op->coords.end());
    if (op->sources.empty()) return node_error(n, "index map has no sources");
    for (const IndexMapSource& src : op->sources) {
      if (!src.buffer.empty() && !inputs.count(src.buffer)) {
        return node_error(
            n, "index map reads '" + src.buffer + "', which is not an input of the node");
      }
      ExprList exprs = src.index;
      exprs.push_back(src.value);
      exprs.push_back(src.predicate);
      for (const Expr& e : exprs) {
        for (const std::string& var : free_vars(e)) {
          if (!coords.count(var)) {
            return node_error(n, "index map expression '" + e.str() + "' uses '" + var +
                                     "', which is not an output coordinate");
          }
        }
      }
    }
  } else if (const auto* op = n.op_as<KernelOp>()) {
    TESSERA_TRY(verify_launch(n, op->grid, op->block, op->cluster, op->dynamic_smem));
    if (op->dynamic_smem > 0 && op->dynamic_smem < smem_layout_bytes(op->body)) {
      return node_error(n, "dynamic shared memory of " + std::to_string(op->dynamic_smem) +
                               " bytes does not hold the kernel's Smem arrays (" +
                               std::to_string(smem_layout_bytes(op->body)) + " bytes)");
    }
    TESSERA_TRY(verify_params(g, n, op->params));
  } else if (const auto* op = n.op_as<CudaOp>()) {
    TESSERA_TRY(verify_launch(n, op->grid, op->block, op->cluster, op->dynamic_smem));
    std::set<std::string> names;
    for (const KernelParam& p : op->params) {
      if (p.name.empty() || !names.insert(p.name).second)
        return node_error(n, "kernel argument '" + p.name + "' is empty or listed twice");
    }
  }
  return Status::ok();
}

// Thread-block clusters (sm_90+). Tile IR: at most one CLUSTER axis, of at most 8 blocks (the
// portable cluster size); a cluster Combine needs one, and stands at the Tile body's top level,
// where every thread of every block of the cluster reaches it. Kernel IR: a kernel that reads
// another block's shared memory (DsmemLoad) or waits for the cluster (ClusterSync) is launched with
// cluster dims, and its ClusterSyncs stand at the body's top level.
Status verify_cluster_rules(const Node& n) {
  struct Finder final : StmtVisitor {
    int cluster_syncs = 0, dsmem_loads = 0, cluster_combines = 0;
    void visit_ClusterSync(const ClusterSync&) override { ++cluster_syncs; }
    void visit_DsmemLoad(const DsmemLoad&) override { ++dsmem_loads; }
    void visit_Combine(const Combine& c) override { cluster_combines += c.scope == CombineScope::Cluster; }
  };
  if (const auto* tile_op = n.op_as<TileOp>()) {
    const Tile* tile = tile_op->tile();
    if (tile == nullptr) return Status::ok();
    int cluster_axes = 0;
    for (const TileAxis& a : tile->axes) {
      if (a.binding != AxisBinding::Cluster) continue;
      ++cluster_axes;
      if (a.extent < 1 || a.extent > 8)
        return node_error(n, "CLUSTER axis " + a.name + " has " + std::to_string(a.extent) +
                                 " blocks; a cluster holds 1 to 8 (the portable cluster size)");
    }
    if (cluster_axes > 1) return node_error(n, "the Tile has more than one CLUSTER axis");
    Finder all;
    all.visit(tile->body);
    int top_level = 0;
    for (const Stmt& s : tile->body)
      if (const auto* c = s.as<Combine>()) top_level += c->scope == CombineScope::Cluster;
    if (all.cluster_combines > 0 && cluster_axes == 0)
      return node_error(n, "a Combine with scope=cluster in a Tile without a CLUSTER axis");
    if (all.cluster_combines != top_level)
      return node_error(n, "a Combine with scope=cluster is nested in a loop or condition; it must stand at the "
                           "Tile body's top level, where every block of the cluster reaches it");
    return Status::ok();
  }
  if (const auto* kernel = n.op_as<KernelOp>()) {
    Finder all;
    all.visit(kernel->body);
    if ((all.cluster_syncs > 0 || all.dsmem_loads > 0) && kernel->cluster.empty())
      return node_error(n, "the kernel uses distributed shared memory (ClusterSync, DsmemLoad) but is not launched "
                           "with cluster dims");
    int top_level = 0;
    for (const Stmt& s : kernel->body) top_level += s.is<ClusterSync>();
    if (top_level != all.cluster_syncs)
      return node_error(n, "a ClusterSync is nested in a loop or condition; it must stand at the kernel body's top "
                           "level, where every thread of the cluster reaches it");
  }
  return Status::ok();
}

}  // namespace

Status verify_body(const Body& body, Dialect d, const std::string& node_id) {
  return BodyVerifier(d, node_id, nullptr).verify(body);
}

Status verify_graph_index(const Graph& g) {
  for (const Node* n : g.nodes()) {
    if (g.find(n->id()) != n) return node_error(*n, "the graph's index does not find node '" + n->id() + "' by its id");
    for (const std::string& in : n->inputs) {
      const std::vector<std::string> users = g.users(in);
      if (std::find(users.begin(), users.end(), n->id()) == users.end())
        return node_error(*n, "the use list of '" + in + "' does not name its user '" + n->id() + "'");
    }
    for (const std::string& user : g.users(n->id())) {
      const Node* u = g.find(user);
      if (u == nullptr || std::find(u->inputs.begin(), u->inputs.end(), n->id()) == u->inputs.end())
        return node_error(*n, "the use list of '" + n->id() + "' names '" + user + "', which does not use it");
    }
  }
  return Status::ok();
}

Status verify_graph(const Graph& g, Dialect expected) {
  std::set<std::string> seen;
  for (const Node* n : g.nodes()) {
    if (n->id().empty()) return make_error("a node has an empty id");
    if (!seen.insert(n->id()).second) return node_error(*n, "node id '" + n->id() + "' is used twice");
    if (!n->op) return node_error(*n, "node has no op");
    for (const std::string& input : n->inputs) {
      if (!seen.count(input) || input == n->id()) {
        return node_error(*n, "input '" + input + "' is not a node defined before '" + n->id() + "'");
      }
    }
    // The frontend's limits hold for IR from any source (graph JSON or printed IR), so no later
    // pass does index arithmetic that overflows: at most 2^40 elements for a tensor that is stored
    // (an input, parameter, constant or output) and 64 dimensions. A computed intermediate may be
    // larger, up to 2^44: the iteration space of a contraction is a tensor in Tensor IR (a
    // Linear's tokens x vocabulary x hidden is 1.1e12 for Qwen2.5-7B's lm_head at 2048 tokens),
    // and fusion never stores it. Indices and byte counts of either stay far from 2^63.
    constexpr int64_t kMaxStoredElements = int64_t{1} << 40;
    constexpr int64_t kMaxComputedElements = int64_t{1} << 44;
    constexpr size_t kMaxRank = 64;
    const bool stored = n->op_as<InputOp>() != nullptr || n->op_as<ConstantOp>() != nullptr ||
                        std::find(g.outputs().begin(), g.outputs().end(), n->id()) != g.outputs().end();
    const int64_t max_elements = stored ? kMaxStoredElements : kMaxComputedElements;
    if (n->type.shape.size() > kMaxRank)
      return node_error(*n, "type has rank " + std::to_string(n->type.shape.size()) + "; the limit is " +
                                std::to_string(kMaxRank));
    int64_t elements = 1;
    for (const Dim& d : n->type.shape) {
      if (d.value() < 0)
        return node_error(*n, "type " + n->type.str() + " has a negative dimension");
      if (d.value() > 0 && elements > max_elements / d.value())
        return node_error(*n, "type " + n->type.str() + " is too large (more than " +
                                  (stored ? "2^40 elements for a stored tensor" : "2^44 elements") + ")");
      elements *= d.value();
    }
    Dialect d = n->op->dialect();
    if (d != Dialect::Core && d != expected) {
      // IR text reads a call of an unknown function as Torch IR: say why it is not Tensor IR.
      std::string why;
      if (const auto* torch = n->op_as<TorchOp>(); torch && expected == Dialect::Tensor)
        if (Expected<ElementwiseFn> fn = parse_elementwise_fn(torch->target); !fn)
          why = " (as Tensor IR: " + fn.error().message + ")";
      return node_error(*n, "node is in " + std::string(dialect_name(d)) + " IR, expected " +
                                std::string(dialect_name(expected)) + " IR" + why);
    }
    TESSERA_TRY(verify_op(g, *n));
    // The tile passes (TilePass) schedule one Tile per kernel: that is the shape of Tile IR.
    if (const auto* tile_op = n->op_as<TileOp>(); tile_op != nullptr && tile_op->tile() == nullptr)
      return node_error(*n, "a Tile IR kernel body must be exactly one Tile statement");
    // Every thread of the block must reach a collective (ir/uniformity.h).
    if (const auto* tile_op = n->op_as<TileOp>())
      if (std::optional<Stmt> divergent = first_divergent_collective(tile_op->body))
        return node_error(*n, "collective statement `" + first_line(print_stmt(*divergent)) +
                                  "` is under a thread-dependent loop or condition; every thread of the block "
                                  "must reach it");
    TESSERA_TRY(verify_cluster_rules(*n));
    if (const auto* kernel = n->op_as<KernelLikeOp>()) {
      GraphBuffers buffers;
      buffers.inputs = std::set<std::string>(n->inputs.begin(), n->inputs.end());
      buffers.output = n->id();
      if (const auto* k = n->op_as<KernelOp>()) buffers.params = &k->params;
      buffers.dtypes[n->id()] = n->type.dtype;
      for (const std::string& input : n->inputs)
        if (const Node* in = g.find(input)) buffers.dtypes[input] = in->type.dtype;
      TESSERA_TRY(BodyVerifier(d, n->id(), &buffers).verify(kernel->body));
    }
  }
  for (const std::string& out : g.outputs()) {
    if (!seen.count(out)) return make_error("graph output '" + out + "' is not a node");
  }
  return Status::ok();
}

}  // namespace tessera

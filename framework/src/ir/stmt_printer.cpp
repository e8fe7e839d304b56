// Statement printer: one line per statement, nested bodies indented by two spaces per level.
//
// Every statement kind has its own `print_kind` overload below, in the form documented on its
// struct in stmt.h. There is deliberately no generic fallback: a kind added to TESSERA_STMT_KINDS
// without a printer line fails to compile here.
//
// Defaults are left out to keep the printout close to what a CUDA engineer would write: a Stage
// with the `sync` transport and no padding, a block-scope Combine, a plain MbarrierArrive (tx 0)
// and a Loop without an unroll request print nothing for those fields.
#include <string>

#include "tessera/ir/stmt.h"
#include "print_lists.h"

namespace tessera {
namespace {

using print_lists::join;

// `x[a0, a2]`
std::string access(const std::string& buffer, const ExprList& index) {
  return buffer + "[" + join(index) + "]";
}

// `frag0` (the whole array) or `frag0[a6]` (the fragments under a prefix of its dimensions).
std::string slice(const std::string& array, const ExprList& index) {
  return index.empty() ? array : access(array, index);
}

// `bar` for slot 0 (the only slot of a single barrier), `bar[s]` for a slot of a barrier ring.
std::string barrier_ref(const std::string& barrier, const Expr& slot) {
  if (slot.kind() == ExprKind::Int && slot.int_value() == 0) return barrier;
  return barrier + "[" + slot.str() + "]";
}

// `  # reduce, unroll 4`, or nothing when there is neither a role nor an unroll request.
std::string loop_comment(LoopRole role, int64_t unroll) {
  std::vector<std::string> parts;
  if (role != LoopRole::None) parts.emplace_back(spelling(role));
  if (unroll > 0) parts.push_back("unroll " + std::to_string(unroll));
  return parts.empty() ? std::string() : "  # " + join(parts);
}

// `in0`, or `bf16 in0` / `f32[4][8] acc0`: the type prefix is left out for f32 scalars, so f32
// programs print as they did before values were typed.
std::string typed(const ValueType& type, const std::string& name) {
  if (type == ValueType{}) return name;
  return type.str() + " " + name;
}

class StmtPrinter {
 public:
  explicit StmtPrinter(int indent) : indent_(indent) {}

  void print(const Stmt& s) {
    if (!s.defined()) {
      line("<undefined statement>");
      return;
    }
    switch (s.kind()) {
#define TESSERA_X(K) \
  case StmtKind::K: print_kind(*s.as<K>()); return;
      TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
    }
    line("<empty statement>");
  }

  void print(const Body& body) {
    for (const Stmt& s : body) print(s);
  }

  std::string take() { return std::move(out_); }

 private:
  void line(const std::string& text) {
    if (indent_ > 0) out_.append(static_cast<size_t>(2 * indent_), ' ');
    out_ += text;
    out_ += '\n';
  }

  void nested(const Body& body) {
    ++indent_;
    print(body);
    --indent_;
  }

  // ---- Loop IR ----
  void print_kind(const Load& s) { line(typed(s.type, s.dst) + " = load " + access(s.buffer, s.index)); }
  void print_kind(const Assign& s) { line(typed(s.type, s.dst) + " = " + std::string(spelling(s.op)) + "(" + join(s.args) + ")"); }
  void print_kind(const Select& s) {
    line(typed(s.type, s.dst) + " = select(" + join(ExprList{s.cond, s.then_value, s.else_value}) + ")");
  }
  void print_kind(const Init& s) { line(typed(s.type, s.acc) + " = init(" + s.value.str() + ")"); }
  void print_kind(const Accum& s) {
    std::string target = s.index.empty() ? s.acc : access(s.acc, s.index);
    line(target + " <- " + std::string(spelling(s.op)) + "(" + target + ", " + s.value.str() + ")");
  }
  void print_kind(const Write& s) { line(access(s.buffer, s.index) + " = " + s.value.str()); }
  void print_kind(const Loop& s) {
    line("for " + s.var + " in " + s.begin.str() + ".." + s.end.str() + ":" +
         loop_comment(s.role, s.unroll));
    nested(s.body);
  }
  void print_kind(const Cond& s) {
    line("if " + s.cond.str() + ":");
    nested(s.then_body);
    if (s.else_body.empty()) return;
    line("else:");
    nested(s.else_body);
  }

  // ---- Tile IR ----
  void print_kind(const Tile& s) {
    std::vector<std::string> axes;
    for (const TileAxis& a : s.axes) {
      axes.push_back(a.name + ":" + std::to_string(a.extent) + "=" + std::string(spelling(a.binding)));
    }
    const std::string producer =
        s.producer == TileProducer::None ? "" : ", producer=" + std::string(spelling(s.producer));
    line("Tile(axes=(" + join(axes) + ")" + producer + "):");
    nested(s.body);
  }
  void print_kind(const StridedLoop& s) {
    line("StridedLoop(" + s.var + " = " + s.begin.str() + "; < " + s.end.str() +
         "; += " + s.step.str() + "):" + loop_comment(s.role, s.unroll));
    nested(s.body);
  }
  void print_kind(const Stage& s) {
    std::vector<std::string> slab;
    for (const SlabDim& d : s.slab) {
      slab.push_back(d.axis + ":" + std::to_string(d.extent) + "@" + std::to_string(d.source_dim) +
                     (d.stride != 1 ? "*" + std::to_string(d.stride) : ""));
    }
    std::string text = s.dst + " = Stage(" + s.buffer + ", origin=(" + join(s.origin) +
                       "), slab=(" + join(slab) + ")";
    if (s.slots != 1) text += ", slot=" + s.slot.str() + ", slots=" + std::to_string(s.slots);
    text += ")";
    if (s.transport != StageTransport::Sync) text += " " + std::string(spelling(s.transport));
    if (s.pad != 0) text += " pad=" + std::to_string(s.pad);
    line(text + layout_suffix(s.align, s.swizzle));
  }
  void print_kind(const Combine& s) {
    std::string text = "Combine(" + s.acc + ", op=" + std::string(spelling(s.op));
    if (s.scope != CombineScope::Block) text += ", scope=" + std::string(spelling(s.scope));
    line(text + ")");
  }
  void print_kind(const AsyncWait& s) { line("AsyncWait(keep=" + std::to_string(s.keep) + ")"); }
  void print_kind(const SlabMap& s) {
    line(s.dst + " = SlabMap(" + std::string(dtype_short_name(s.dtype)) + "[" + join(s.shape) + "], " + s.var + "):");
    nested(s.body);
  }

  // A shared buffer's layout, only where it differs from the default, so plain arrays read as
  // before: ` align=1024 swizzle=128B`.
  static std::string layout_suffix(int64_t align, SmemSwizzle swizzle) {
    return (align != kSmemAlign ? " align=" + std::to_string(align) : "") +
           (swizzle != SmemSwizzle::None ? " swizzle=" + std::string(spelling(swizzle)) : "");
  }

  // ---- Kernel IR ----
  void print_kind(const Let& s) { line(s.var + " = " + s.value.str()); }
  void print_kind(const Smem& s) {
    line("Smem " + s.name + ": " + std::string(dtype_short_name(s.dtype)) + "[" + join(s.shape) + "]" +
         (s.slots != 1 ? " slots=" + std::to_string(s.slots) : "") + layout_suffix(s.align, s.swizzle));
  }
  void print_kind(const Sync&) { line("Sync()"); }
  void print_kind(const CpAsyncCopy& s) {
    line("CpAsyncCopy(" + access(s.dst, s.dst_index) + ", " + access(s.src, s.src_index) +
         ", bytes=" + std::to_string(s.bytes) + ")");
  }
  void print_kind(const CpAsyncCommit&) { line("CpAsyncCommit()"); }
  void print_kind(const CpAsyncWait& s) {
    line("CpAsyncWait(keep=" + std::to_string(s.keep) + ")");
  }
  void print_kind(const TmaLoad& s) {
    line("TmaLoad(" + (s.dst_index.empty() ? s.dst : access(s.dst, s.dst_index)) + ", " + s.desc + ", coords=(" +
         join(s.coords) + "), mbar=" + barrier_ref(s.barrier, s.barrier_slot) + ")");
  }
  void print_kind(const MbarrierInit& s) {
    std::string text = s.name + " = MbarrierInit(count=" + std::to_string(s.count);
    if (s.slots != 1) text += ", slots=" + std::to_string(s.slots);
    line(text + ")");
  }
  void print_kind(const MbarrierArrive& s) {
    std::string text = "MbarrierArrive(" + barrier_ref(s.barrier, s.barrier_slot);
    if (s.tx_bytes != 0) text += ", tx=" + std::to_string(s.tx_bytes);
    line(text + ")");
  }
  void print_kind(const MbarrierWait& s) {
    line("MbarrierWait(" + barrier_ref(s.barrier, s.barrier_slot) + ", phase=" + s.phase.str() + ")");
  }
  void print_kind(const WarpShuffle& s) {
    line(typed(s.type, s.dst) + " = WarpShuffle(" + s.src.str() + ", " + std::string(spelling(s.mode)) + ", " + std::to_string(s.offset) +
         ", width=" + std::to_string(s.width) + ")");
  }
  void print_kind(const TreeHalve& s) {
    line("TreeHalve(" + s.buffer + ", tid=" + s.tid.str() + ", n=" + std::to_string(s.count) +
         ", op=" + std::string(spelling(s.op)) + ")");
  }
  void print_kind(const VectorLoad& s) {
    line(typed(s.type, "(" + join(s.dsts) + ")") + " = load" + std::to_string(s.dsts.size()) + " " +
         access(s.buffer, s.index));
  }
  void print_kind(const VectorStore& s) {
    line(access(s.buffer, s.index) + " = store" + std::to_string(s.values.size()) + "(" +
         join(s.values) + ")");
  }
  void print_kind(const ClusterSync&) { line("ClusterSync()"); }
  void print_kind(const NamedBarrier& s) {
    line("NamedBarrier(id=" + std::to_string(s.id) + ", threads=" + std::to_string(s.threads) + ")");
  }
  void print_kind(const SetMaxNReg& s) {
    line("SetMaxNReg(" + std::string(spelling(s.action)) + ", regs=" + std::to_string(s.regs) + ")");
  }
  // ---- tensor cores ----
  void print_kind(const Fragment& s) { line(typed(s.type, s.name) + " = fragment()"); }
  void print_kind(const LdMatrix& s) {
    line(slice(s.dst, s.dst_index) + " = ldmatrix.x" + std::to_string(s.count) +
         (s.layout == LdMatrixLayout::Trans ? "." + std::string(spelling(s.layout)) : std::string()) + "(" +
         access(s.buffer, s.index) + ")");
  }
  void print_kind(const MmaSync& s) {
    line(slice(s.acc, s.acc_index) + " <- mma." + std::string(spelling(s.shape)) + "." +
         std::string(dtype_short_name(s.type)) + "(" + slice(s.a, s.a_index) + ", " + slice(s.b, s.b_index) + ")");
  }
  // A wgmma operand's shared-memory matrix descriptor: `desc(a_smem[0, 16], lbo=16, sbo=1024, swizzle=128B)`,
  // `, major=mn` before the parenthesis for an MN-major operand.
  std::string descriptor(const std::string& buffer, const ExprList& index, int64_t lbo, int64_t sbo,
                         SmemSwizzle swizzle, MatrixMajor major = MatrixMajor::K) {
    return "desc(" + access(buffer, index) + ", lbo=" + std::to_string(lbo) + ", sbo=" + std::to_string(sbo) +
           ", swizzle=" + std::string(spelling(swizzle)) +
           (major == MatrixMajor::K ? std::string() : ", major=" + std::string(spelling(major))) + ")";
  }
  void print_kind(const WgmmaMma& s) {
    line(slice(s.acc, s.acc_index) + " <- wgmma.m64n" + std::to_string(s.n) + "k16." +
         std::string(dtype_short_name(s.type)) + "(" + descriptor(s.a, s.a_index, s.a_lbo, s.a_sbo, s.a_swizzle) +
         ", " + descriptor(s.b, s.b_index, s.b_lbo, s.b_sbo, s.b_swizzle, s.b_major) + ")");
  }
  void print_kind(const WgmmaFence&) { line("WgmmaFence()"); }
  void print_kind(const WgmmaCommit&) { line("WgmmaCommit()"); }
  void print_kind(const WgmmaWait& s) { line("WgmmaWait(keep=" + std::to_string(s.keep) + ")"); }
  void print_kind(const DsmemLoad& s) {
    line(typed(s.type, s.dst) + " = DsmemLoad(" + access(s.buffer, s.index) + ", rank=" + s.rank.str() + ")");
  }

  int indent_;
  std::string out_;
};

}  // namespace

// `indent` counts nesting levels (two spaces each), so a caller printing a kernel body under a
// header line passes 1.
std::string print_body(const Body& b, int indent) {
  StmtPrinter printer(indent);
  printer.print(b);
  return printer.take();
}

std::string print_stmt(const Stmt& s, int indent) {
  StmtPrinter printer(indent);
  printer.print(s);
  return printer.take();
}

}  // namespace tessera

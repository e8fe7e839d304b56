// Statement parser: the inverse of the statement printer (stmt_printer.cpp), one line per
// statement, nested bodies indented by two more spaces.
//
// A line is first classified by its shape (classify below: `for `, `if `, `Tile(`, `NAME = load`,
// `NAME <- `, `BUF[..] = `, ...), then read by the parser of that kind. The dispatch is a switch
// generated from TESSERA_STMT_KINDS with one `read(Kind<K>)` overload per kind and no generic
// fallback, so a kind added to the list without a parser here fails to compile.
//
// Fields the printer leaves out when they hold their default come back as that default: a Stage
// without a transport is `sync`, a Combine without a scope is `block`, an MbarrierArrive without
// `tx=` has 0 bytes, a loop without `unroll N` has unroll 0, a definition without a value type
// prefix is `f32`.
//
// Typed definitions. A value type may precede the name(s) an SSA definition binds (`bf16 in0 =
// load ..`, `f32[4][8] acc0 = init(0.0)`, `bf16 (in0, in1) = load2 ..`): classify() reads it
// before it looks at the rest of the line (type_prefix), and the readers of the kinds that carry a
// type (Load, VectorLoad, Assign, Select, Init, WarpShuffle, DsmemLoad, Fragment) store it; on any other kind it is an
// error.
//
// Names in expressions. The printer writes a Var and a Value alike, as the bare name; the readers
// bind every name a statement defines in the body's NameScope as it is read (SSA definitions as
// Values, axes and Let variables as Vars), so later expressions get the namespace back.
//
// A new statement kind: a line in classify() (its opening keyword or right-hand side) and a
// read(Kind<K>) overload.
#include <cctype>
#include <type_traits>

#include "ir_text_reader.h"
#include "tessera/ir/parser.h"
#include "tessera/support/internal_check.h"

namespace tessera::ir_text {

template <class K> struct Kind {};

class StmtReader {
 public:
  StmtReader(BodyReader& body, size_t& next, int depth)
      : body_(body), next_(next), depth_(depth), line_(body.lines_[next]),
        c_(line_, body.file_) {}

  Expected<Stmt> read() {
    TESSERA_ASSIGN_OR_RETURN(StmtKind kind, classify());
    if (type_col_ && !carries_type(kind)) {
      return c_.error_at(*type_col_, type_.str().size(),
                         "a value type prefix belongs to a definition of a value (load, an "
                         "elementwise function, select, init, WarpShuffle, DsmemLoad, fragment), not to a " +
                             std::string(stmt_kind_name(kind)));
    }
    c_.reset(definition_col_);
    ++next_;  // the statement's own line; nested bodies follow
    switch (kind) {
#define TESSERA_X(K) \
  case StmtKind::K: return read(Kind<K>{});
      TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
    }
    return c_.error("unhandled statement kind");
  }

 private:
  // ---- classification ---------------------------------------------------------------------

  static bool carries_type(StmtKind kind) { return stmt_kind_traits(kind).carries_type; }

  // A value type before the defined name: a word (with `[N]` array extents) followed, after a
  // space, by a name or `(`. Reads it into type_ and leaves the cursor after it; leaves the cursor
  // where it was when the line has none. A word in that position that is no value type is an error.
  Status type_prefix() {
    if (!is_name_start(c_.peek_char())) return Status::ok();
    const std::string_view t = c_.line().text;
    const size_t start = c_.pos();
    if (!c_.name("a value type")) return Status::ok();
    size_t end = c_.pos();
    while (end < t.size() && t[end] == '[') {
      size_t close = t.find(']', end);
      if (close == std::string_view::npos) break;
      end = close + 1;
    }
    c_.reset(end);
    const char after = c_.peek_char();
    if (end >= t.size() || t[end] != ' ' || !(is_name_start(after) || after == '(')) {
      c_.reset(start);
      return Status::ok();
    }
    const std::string_view text = t.substr(start, end - start);
    std::optional<ValueType> type = parse_value_type(text);
    if (!type || type->str() != text) {
      return c_.error_at(start, text.size(),
                         "expected a value type (f32, bf16, i64, bool, bf16x2, f32[4][8], ...), found '" +
                             std::string(text) + "'");
    }
    type_ = *type;
    type_col_ = start;
    definition_col_ = c_.pos();
    return Status::ok();
  }

  Expected<StmtKind> classify() {
    struct Prefix {
      std::string_view text;
      StmtKind kind;
    };
    // Statements that open with a keyword or a call.
    static constexpr Prefix kCalls[] = {
        {"for", StmtKind::Loop},
        {"if", StmtKind::Cond},
        {"Smem", StmtKind::Smem},
        {"Tile", StmtKind::Tile},
        {"StridedLoop", StmtKind::StridedLoop},
        {"Combine", StmtKind::Combine},
        {"AsyncWait", StmtKind::AsyncWait},
        {"Sync", StmtKind::Sync},
        {"CpAsyncCopy", StmtKind::CpAsyncCopy},
        {"CpAsyncCommit", StmtKind::CpAsyncCommit},
        {"CpAsyncWait", StmtKind::CpAsyncWait},
        {"TmaLoad", StmtKind::TmaLoad},
        {"MbarrierArrive", StmtKind::MbarrierArrive},
        {"MbarrierWait", StmtKind::MbarrierWait},
        {"TreeHalve", StmtKind::TreeHalve},
        {"ClusterSync", StmtKind::ClusterSync},
        {"NamedBarrier", StmtKind::NamedBarrier},
        {"SetMaxNReg", StmtKind::SetMaxNReg},
        {"WgmmaFence", StmtKind::WgmmaFence},
        {"WgmmaCommit", StmtKind::WgmmaCommit},
        {"WgmmaWait", StmtKind::WgmmaWait},
    };
    c_.skip_spaces();
    definition_col_ = c_.pos();
    for (const Prefix& p : kCalls) {
      size_t mark = c_.pos();
      if (c_.accept_word(p.text)) {
        c_.reset(mark);
        return p.kind;
      }
    }
    TESSERA_TRY(type_prefix());
    if (c_.peek_char() == '(') return StmtKind::VectorLoad;
    if (c_.peek("else")) return c_.error("'else:' without a matching 'if'");
    TESSERA_ASSIGN_OR_RETURN(std::string first, c_.name("a statement"));
    if (c_.peek("[")) {
      // `ACC[..] <- op(..)` (an element of a register array), `BUF[..] = value` or
      // `BUF[..] = storeK(..)`
      size_t mark = c_.pos();
      c_.accept("[");
      const bool closed = read_expr_list(c_, ']', body_.limits_, depth_).has_value() && c_.accept("]");
      const bool indexed_accum = closed && c_.peek("<-");
      // `ACC[..] <- mma.SHAPE.T(..)` (a tensor-core product into a slice of a register array) and
      // `FRAG[..] = ldmatrix.xN(..)` (a slice of a fragment array loaded from shared memory).
      // `ACC[..] <- wgmma.m64nNk16.T(..)` (a warpgroup product into a slice of a register array).
      std::string op;
      if (indexed_accum && c_.accept("<-")) op = c_.word();
      const bool indexed_mma = op == "mma";
      const bool indexed_wgmma = op == "wgmma";
      const bool indexed_ldmatrix = closed && !indexed_accum && c_.accept("=") && c_.accept_word("ldmatrix");
      c_.reset(mark);
      if (indexed_mma) return StmtKind::MmaSync;
      if (indexed_wgmma) return StmtKind::WgmmaMma;
      if (indexed_accum) return StmtKind::Accum;
      if (indexed_ldmatrix) return StmtKind::LdMatrix;
      std::string_view rest = c_.line().text.substr(c_.pos());
      size_t eq = rest.find("] = store");
      if (eq != std::string_view::npos) {
        std::string_view after = rest.substr(eq + 9);
        size_t digits = 0;
        while (digits < after.size() && after[digits] >= '0' && after[digits] <= '9') ++digits;
        if (digits > 0 && digits < after.size() && after[digits] == '(') return StmtKind::VectorStore;
      }
      return StmtKind::Write;
    }
    if (c_.peek("<-")) {
      size_t mark = c_.pos();
      c_.accept("<-");
      const std::string op = c_.word();
      c_.reset(mark);
      return op == "mma" ? StmtKind::MmaSync : op == "wgmma" ? StmtKind::WgmmaMma : StmtKind::Accum;
    }
    if (!c_.accept("=")) return c_.expected("'=', '<-' or '[' after '" + first + "'");
    // `NAME = ...`: the right-hand side says which kind.
    static constexpr Prefix kDefinitions[] = {
        {"load", StmtKind::Load},
        {"init", StmtKind::Init},
        {"select", StmtKind::Select},
        {"Stage", StmtKind::Stage},
        {"SlabMap", StmtKind::SlabMap},
        {"MbarrierInit", StmtKind::MbarrierInit},
        {"WarpShuffle", StmtKind::WarpShuffle},
        {"DsmemLoad", StmtKind::DsmemLoad},
        {"fragment", StmtKind::Fragment},
        {"ldmatrix", StmtKind::LdMatrix},
    };
    for (const Prefix& p : kDefinitions) {
      size_t mark = c_.pos();
      if (c_.accept_word(p.text)) {
        c_.reset(mark);
        return p.kind;
      }
    }
    // `v0 = add(in0, in1)` applies an elementwise function; anything else is an index `Let`
    // (`a0 = threadIdx.x % 32`, `a1 = min(a0, 7)`: expression functions are never elementwise
    // function names, which are maximum / minimum).
    size_t mark = c_.pos();
    if (is_name_start(c_.peek_char())) {
      auto fn = c_.name("a function");
      bool expression_function = fn && (*fn == "min" || *fn == "max" || parse_dtype(*fn));
      if (fn && c_.peek("(") && !expression_function) {
        c_.reset(mark);
        return StmtKind::Assign;
      }
    }
    c_.reset(mark);
    return StmtKind::Let;
  }

  // ---- grammar helpers --------------------------------------------------------------------

  // A name the statement defines (a value, an accumulator, an axis, a local buffer).
  Expected<std::string> definition(std::string_view what) { return c_.name(what); }

  // A buffer the statement reads or writes: a graph node or a buffer the kernel declared.
  Expected<std::string> buffer_use() {
    c_.skip_spaces();
    size_t col = c_.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string name, c_.name("a buffer name"));
    BufferScope* scope = body_.buffers_;
    if (scope != nullptr && !scope->known.count(name)) {
      return c_.error_at(col, name.size(),
                         "unknown buffer '" + name +
                             "' (not a graph node, a tensor-map parameter of the kernel, nor "
                             "declared by a Stage, Smem or MbarrierInit before this line)");
    }
    return name;
  }

  void declare_buffer(const std::string& name) {
    if (body_.buffers_ != nullptr) body_.buffers_->known.insert(name);
  }

  // Names a statement binds, for the expressions after it (see NameScope).
  void bind_value(const std::string& name) { body_.names_.bind(name, ExprKind::Value); }
  void bind_index(const std::string& name) { body_.names_.bind(name, ExprKind::Var); }

  Expected<Expr> expr() { return read_expr(c_, body_.limits_, depth_, &body_.names_); }

  // `[e, e]` after a buffer name.
  Expected<ExprList> index() {
    TESSERA_TRY(c_.expect("["));
    TESSERA_ASSIGN_OR_RETURN(ExprList out, read_expr_list(c_, ']', body_.limits_, depth_, &body_.names_));
    TESSERA_TRY(c_.expect("]"));
    return out;
  }

  // `bar` (slot 0) or `bar[e]` (a slot of a barrier ring).
  Status barrier_ref(std::string& barrier, Expr& slot) {
    TESSERA_ASSIGN_OR_RETURN(barrier, buffer_use());
    if (!c_.accept("[")) return Status::ok();
    TESSERA_ASSIGN_OR_RETURN(ExprList e, read_expr_list(c_, ']', body_.limits_, depth_, &body_.names_));
    if (e.size() != 1) return c_.expected("one slot index in '" + barrier + "[...]'");
    TESSERA_TRY(c_.expect("]"));
    slot = std::move(e[0]);
    return Status::ok();
  }

  // `(e, e)` (an origin, coordinates).
  Expected<ExprList> expr_tuple() {
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(ExprList out, read_expr_list(c_, ')', body_.limits_, depth_, &body_.names_));
    TESSERA_TRY(c_.expect(")"));
    return out;
  }

  // `[1, 2]` or `(1, 2)`: a list of integers closed by `close`.
  Expected<std::vector<int64_t>> int_list(char open, char close, std::string_view what) {
    TESSERA_TRY(c_.expect(std::string(1, open)));
    std::vector<int64_t> out;
    if (c_.peek_char() != close) {
      do {
        TESSERA_ASSIGN_OR_RETURN(int64_t v, c_.integer(what));
        out.push_back(v);
      } while (c_.accept(","));
    }
    TESSERA_TRY(c_.expect(std::string(1, close)));
    return out;
  }

  // `key=INT`
  Expected<int64_t> int_field(std::string_view key) {
    TESSERA_TRY(c_.expect_word(key));
    TESSERA_TRY(c_.expect("="));
    return c_.integer("an integer for '" + std::string(key) + "'");
  }

  // `key=NAME`
  Expected<std::string> word_field(std::string_view key) {
    TESSERA_TRY(c_.expect_word(key));
    TESSERA_TRY(c_.expect("="));
    return c_.name("a name for '" + std::string(key) + "'");
  }

  // One of E's spellings (tessera/ir/stmt_enums.h).
  template <StmtEnum E> Expected<E> spelled() {
    c_.skip_spaces();
    const size_t start = c_.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string word, c_.name(StmtEnumTable<E>::what));
    std::optional<E> value = parse_spelling<E>(word);
    if (!value || word.empty())
      return c_.error_at(start, word.size(), "expected " + std::string(StmtEnumTable<E>::what) + ", not '" + word + "'");
    return *value;
  }

  // A shared buffer's optional layout (Smem, Stage), printed only when not the default:
  // `align=1024 swizzle=128B`.
  Status layout(int64_t& align, SmemSwizzle& swizzle) {
    if (c_.peek("align")) {
      TESSERA_ASSIGN_OR_RETURN(align, int_field("align"));
    }
    if (c_.peek("swizzle")) {
      TESSERA_TRY(c_.expect_word("swizzle"));
      TESSERA_TRY(c_.expect("="));
      TESSERA_ASSIGN_OR_RETURN(swizzle, swizzle_spelling());
    }
    return Status::ok();
  }

  // A swizzle spelling: `none`, or a width that starts with a digit (`128B`), so not a name.
  Expected<SmemSwizzle> swizzle_spelling() {
    c_.skip_spaces();
    const size_t start = c_.pos();
    const std::string word = c_.word();
    std::optional<SmemSwizzle> value = parse_spelling<SmemSwizzle>(word);
    if (!value || word.empty())
      return c_.error_at(start, std::max<size_t>(word.size(), 1),
                         "expected " + std::string(StmtEnumTable<SmemSwizzle>::what) + ", not '" + word + "'");
    return *value;
  }

  // A name looked up by `resolve` (one of ir/elementwise_fn.h's parse functions); an unknown name
  // is an error at the name, with the lookup's message.
  template <class T>
  Expected<T> resolved_name(const char* what, Expected<T> (*resolve)(std::string_view)) {
    c_.skip_spaces();
    const size_t start = c_.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string word, c_.name(what));
    Expected<T> value = resolve(word);
    if (!value) return c_.error_at(start, word.size(), value.error().message);
    return value;
  }
  Expected<ElementwiseFn> elementwise_fn() { return resolved_name("a function name", &parse_elementwise_fn); }
  // add, mul, max, min, or an alias
  Expected<CombineFn> combine_fn() { return resolved_name("an accumulate op (add, mul, max, min)", &parse_combine_fn); }

  // `op=NAME` of a combine op.
  Expected<CombineFn> combine_fn_field() {
    TESSERA_TRY(c_.expect_word("op"));
    TESSERA_TRY(c_.expect("="));
    return combine_fn();
  }

  // `key=SPELLING` of an enumerated field.
  template <StmtEnum E> Expected<E> spelled_field(std::string_view key) {
    TESSERA_TRY(c_.expect_word(key));
    TESSERA_TRY(c_.expect("="));
    return spelled<E>();
  }

  // `  # reduce, unroll 4` after a loop header's colon: (role, unroll).
  Status loop_comment(LoopRole& role, int64_t& unroll) {
    if (!c_.accept("#")) return c_.expect_end();
    if (!c_.peek("unroll")) {
      TESSERA_ASSIGN_OR_RETURN(role, spelled<LoopRole>());
      if (!c_.accept(",")) return c_.expect_end();
    }
    TESSERA_TRY(c_.expect_word("unroll"));
    TESSERA_ASSIGN_OR_RETURN(unroll, c_.integer("an unroll factor"));
    return c_.expect_end();
  }

  // The indented body after a line ending in `:`. A statement that opens a body needs at least
  // one statement in it; end of text or a line that is not deeper says the block is truncated.
  Expected<Body> nested_body(std::string_view opener) {
    size_t indent = line_.indent + 2;
    const auto& lines = body_.lines_;
    if (next_ >= lines.size() || lines[next_].indent <= line_.indent) {
      return c_.error_at(line_.indent, opener.size(),
                         "expected an indented block after '" + std::string(opener) + "'" +
                             (next_ >= lines.size() ? " (the text ends here)" : ""));
    }
    if (depth_ + 1 > body_.limits_.max_depth) {
      return c_.error_at(line_.indent, opener.size(),
                         "statements nested deeper than " + std::to_string(body_.limits_.max_depth) +
                             " levels");
    }
    return body_.read(next_, indent, depth_ + 1);
  }

  // ---- one reader per statement kind ------------------------------------------------------

  Expected<Stmt> read(Kind<Load>) {
    Load s;
    TESSERA_ASSIGN_OR_RETURN(s.dst, definition("a value name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("load"));
    TESSERA_ASSIGN_OR_RETURN(s.buffer, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(s.index, index());
    TESSERA_TRY(c_.expect_end());
    s.type = type_;
    bind_value(s.dst);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Assign>) {
    Assign s;
    TESSERA_ASSIGN_OR_RETURN(s.dst, definition("a value name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.op, elementwise_fn());
    TESSERA_ASSIGN_OR_RETURN(s.args, expr_tuple());
    TESSERA_TRY(c_.expect_end());
    s.type = type_;
    bind_value(s.dst);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Select>) {
    Select s;
    TESSERA_ASSIGN_OR_RETURN(s.dst, definition("a value name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("select"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.cond, expr());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.then_value, expr());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.else_value, expr());
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    s.type = type_;
    bind_value(s.dst);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Init>) {
    Init s;
    TESSERA_ASSIGN_OR_RETURN(s.acc, definition("an accumulator name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("init"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.value, expr());
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    s.type = type_;
    bind_value(s.acc);
    return Stmt(std::move(s));
  }

  // `acc0` or `acc0[1, a3]`: the target of an Accum.
  Status accum_target(std::string& acc, ExprList& index) { return array_slice(acc, index, "an accumulator name"); }

  // `frag0` (a whole array) or `frag0[a6]` (a slice under a prefix of its dimensions).
  Status array_slice(std::string& name, ExprList& index, std::string_view what) {
    TESSERA_ASSIGN_OR_RETURN(name, c_.name(what));
    index.clear();
    if (c_.peek("[")) {
      TESSERA_ASSIGN_OR_RETURN(index, this->index());
    }
    return Status::ok();
  }

  Expected<Stmt> read(Kind<Accum>) {
    Accum s;
    TESSERA_TRY(accum_target(s.acc, s.index));
    const std::string target = s.index.empty() ? s.acc : Expr::element(s.acc, s.index).str();
    TESSERA_TRY(c_.expect("<-"));
    TESSERA_ASSIGN_OR_RETURN(s.op, combine_fn());
    TESSERA_TRY(c_.expect("("));
    c_.skip_spaces();
    size_t col = c_.pos();
    std::string again;
    ExprList again_index;
    TESSERA_TRY(accum_target(again, again_index));
    bool same = again == s.acc && again_index.size() == s.index.size();
    for (size_t i = 0; same && i < s.index.size(); ++i) same = structurally_equal(again_index[i], s.index[i]);
    if (!same) {
      return c_.error_at(col, c_.pos() - col,
                         "expected the accumulator '" + target + "' as the first operand, found '" +
                             std::string(c_.line().text.substr(col, c_.pos() - col)) + "'");
    }
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.value, expr());
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Write>) {
    Write s;
    TESSERA_ASSIGN_OR_RETURN(s.buffer, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(s.index, index());
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.value, expr());
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Loop>) {
    Loop s;
    TESSERA_TRY(c_.expect_word("for"));
    TESSERA_ASSIGN_OR_RETURN(s.var, definition("a loop variable"));
    TESSERA_TRY(c_.expect_word("in"));
    TESSERA_ASSIGN_OR_RETURN(s.begin, expr());
    TESSERA_TRY(c_.expect(".."));
    TESSERA_ASSIGN_OR_RETURN(s.end, expr());
    TESSERA_TRY(c_.expect(":"));
    TESSERA_TRY(loop_comment(s.role, s.unroll));
    bind_index(s.var);
    TESSERA_ASSIGN_OR_RETURN(s.body, nested_body("for"));
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Cond>) {
    Cond s;
    TESSERA_TRY(c_.expect_word("if"));
    TESSERA_ASSIGN_OR_RETURN(s.cond, expr());
    TESSERA_TRY(c_.expect(":"));
    TESSERA_TRY(c_.expect_end());
    TESSERA_ASSIGN_OR_RETURN(s.then_body, nested_body("if"));
    const auto& lines = body_.lines_;
    if (next_ < lines.size() && lines[next_].indent == line_.indent) {
      const TextLine& else_line = lines[next_];
      LineCursor e(else_line, body_.file_);
      if (e.accept_word("else")) {
        TESSERA_TRY(e.expect(":"));
        TESSERA_TRY(e.expect_end());
        StmtReader else_reader(body_, next_, depth_);
        ++next_;
        TESSERA_ASSIGN_OR_RETURN(s.else_body, else_reader.nested_body("else"));
      }
    }
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Tile>) {
    Tile s;
    TESSERA_TRY(c_.expect_word("Tile"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_TRY(c_.expect_word("axes"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect("("));
    if (c_.peek_char() != ')') {
      do {
        TileAxis a;
        TESSERA_ASSIGN_OR_RETURN(a.name, definition("an axis name"));
        TESSERA_TRY(c_.expect(":"));
        TESSERA_ASSIGN_OR_RETURN(a.extent, c_.integer("an axis extent"));
        TESSERA_TRY(c_.expect("="));
        TESSERA_ASSIGN_OR_RETURN(a.binding, spelled<AxisBinding>());
        s.axes.push_back(std::move(a));
      } while (c_.accept(","));
    }
    TESSERA_TRY(c_.expect(")"));
    if (c_.accept(",")) {
      TESSERA_TRY(c_.expect_word("producer"));
      TESSERA_TRY(c_.expect("="));
      TESSERA_ASSIGN_OR_RETURN(s.producer, spelled<TileProducer>());
    }
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect(":"));
    TESSERA_TRY(c_.expect_end());
    for (const TileAxis& a : s.axes) bind_index(a.name);
    TESSERA_ASSIGN_OR_RETURN(s.body, nested_body("Tile"));
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<StridedLoop>) {
    StridedLoop s;
    TESSERA_TRY(c_.expect_word("StridedLoop"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.var, definition("a loop variable"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.begin, expr());
    TESSERA_TRY(c_.expect(";"));
    TESSERA_TRY(c_.expect("<"));
    TESSERA_ASSIGN_OR_RETURN(s.end, expr());
    TESSERA_TRY(c_.expect(";"));
    TESSERA_TRY(c_.expect("+="));
    TESSERA_ASSIGN_OR_RETURN(s.step, expr());
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect(":"));
    TESSERA_TRY(loop_comment(s.role, s.unroll));
    bind_index(s.var);
    TESSERA_ASSIGN_OR_RETURN(s.body, nested_body("StridedLoop"));
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Stage>) {
    Stage s;
    TESSERA_ASSIGN_OR_RETURN(s.dst, definition("a staged buffer name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("Stage"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.buffer, buffer_use());
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(c_.expect_word("origin"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.origin, expr_tuple());
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(c_.expect_word("slab"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect("("));
    if (c_.peek_char() != ')') {
      do {
        SlabDim d;
        TESSERA_ASSIGN_OR_RETURN(d.axis, c_.name("a slab axis"));
        TESSERA_TRY(c_.expect(":"));
        TESSERA_ASSIGN_OR_RETURN(d.extent, c_.integer("a slab extent"));
        TESSERA_TRY(c_.expect("@"));
        TESSERA_ASSIGN_OR_RETURN(d.source_dim, c_.integer("a source dimension"));
        if (c_.accept("*")) {
          TESSERA_ASSIGN_OR_RETURN(d.stride, c_.integer("a slab stride"));
        }
        s.slab.push_back(std::move(d));
      } while (c_.accept(","));
    }
    TESSERA_TRY(c_.expect(")"));
    if (c_.accept(",")) {  // a ring: `, slot=a3 % 2, slots=2`
      TESSERA_TRY(c_.expect_word("slot"));
      TESSERA_TRY(c_.expect("="));
      TESSERA_ASSIGN_OR_RETURN(s.slot, expr());
      TESSERA_TRY(c_.expect(","));
      TESSERA_ASSIGN_OR_RETURN(s.slots, int_field("slots"));
    }
    TESSERA_TRY(c_.expect(")"));
    s.transport = StageTransport::Sync;
    if (!c_.at_end() && !c_.peek("pad") && !c_.peek("align") && !c_.peek("swizzle")) {
      TESSERA_ASSIGN_OR_RETURN(s.transport, spelled<StageTransport>());
    }
    if (c_.peek("pad")) {
      TESSERA_ASSIGN_OR_RETURN(s.pad, int_field("pad"));
    }
    TESSERA_TRY(layout(s.align, s.swizzle));
    TESSERA_TRY(c_.expect_end());
    declare_buffer(s.dst);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Combine>) {
    Combine s;
    TESSERA_TRY(c_.expect_word("Combine"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.acc, c_.name("an accumulator name"));
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.op, combine_fn_field());
    s.scope = CombineScope::Block;
    if (c_.accept(",")) {
      TESSERA_ASSIGN_OR_RETURN(s.scope, spelled_field<CombineScope>("scope"));
    }
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<AsyncWait>) {
    AsyncWait s;
    TESSERA_TRY(c_.expect_word("AsyncWait"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.keep, int_field("keep"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Let>) {
    Let s;
    TESSERA_ASSIGN_OR_RETURN(s.var, definition("an index name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.value, expr());
    TESSERA_TRY(c_.expect_end());
    bind_index(s.var);
    return Stmt(std::move(s));
  }

  // A shared array's element type and shape: `f32[8, 32]` (Smem, SlabMap).
  Status array_type(DType& dtype, std::vector<int64_t>& shape) {
    c_.skip_spaces();
    size_t col = c_.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string name, c_.name("an element type (f32, bf16, ...)"));
    std::optional<DType> dt = parse_dtype(name);
    if (!dt) return c_.error_at(col, name.size(), "unknown element type '" + name + "'");
    dtype = *dt;
    TESSERA_ASSIGN_OR_RETURN(shape, int_list('[', ']', "a dimension"));
    return Status::ok();
  }

  Expected<Stmt> read(Kind<SlabMap>) {
    SlabMap s;
    TESSERA_ASSIGN_OR_RETURN(s.dst, definition("a shared buffer name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("SlabMap"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_TRY(array_type(s.dtype, s.shape));
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.var, definition("an element variable"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect(":"));
    TESSERA_TRY(c_.expect_end());
    declare_buffer(s.dst);
    bind_index(s.var);
    TESSERA_ASSIGN_OR_RETURN(s.body, nested_body("SlabMap"));
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<Smem>) {
    Smem s;
    TESSERA_TRY(c_.expect_word("Smem"));
    TESSERA_ASSIGN_OR_RETURN(s.name, definition("a shared buffer name"));
    TESSERA_TRY(c_.expect(":"));
    TESSERA_TRY(array_type(s.dtype, s.shape));
    if (c_.peek("slots")) {
      TESSERA_ASSIGN_OR_RETURN(s.slots, int_field("slots"));
    }
    TESSERA_TRY(layout(s.align, s.swizzle));
    TESSERA_TRY(c_.expect_end());
    declare_buffer(s.name);
    return Stmt(std::move(s));
  }

  // `Name()`: the statements without fields.
  Status empty_call(std::string_view name) {
    TESSERA_TRY(c_.expect_word(name));
    TESSERA_TRY(c_.expect("("));
    TESSERA_TRY(c_.expect(")"));
    return c_.expect_end();
  }

  Expected<Stmt> read(Kind<Sync>) {
    TESSERA_TRY(empty_call("Sync"));
    return Stmt(Sync{});
  }

  Expected<Stmt> read(Kind<CpAsyncCopy>) {
    CpAsyncCopy s;
    TESSERA_TRY(c_.expect_word("CpAsyncCopy"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.dst, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(s.dst_index, index());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.src, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(s.src_index, index());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.bytes, int_field("bytes"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<CpAsyncCommit>) {
    TESSERA_TRY(empty_call("CpAsyncCommit"));
    return Stmt(CpAsyncCommit{});
  }

  Expected<Stmt> read(Kind<CpAsyncWait>) {
    CpAsyncWait s;
    TESSERA_TRY(c_.expect_word("CpAsyncWait"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.keep, int_field("keep"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<TmaLoad>) {
    TmaLoad s;
    TESSERA_TRY(c_.expect_word("TmaLoad"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.dst, buffer_use());
    if (c_.peek("[")) {
      TESSERA_ASSIGN_OR_RETURN(s.dst_index, index());
    }
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.desc, buffer_use());
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(c_.expect_word("coords"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.coords, expr_tuple());
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(c_.expect_word("mbar"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(barrier_ref(s.barrier, s.barrier_slot));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<MbarrierInit>) {
    MbarrierInit s;
    TESSERA_ASSIGN_OR_RETURN(s.name, definition("a barrier name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("MbarrierInit"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.count, int_field("count"));
    if (c_.accept(",")) {
      TESSERA_ASSIGN_OR_RETURN(s.slots, int_field("slots"));
    }
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    declare_buffer(s.name);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<MbarrierArrive>) {
    MbarrierArrive s;
    TESSERA_TRY(c_.expect_word("MbarrierArrive"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_TRY(barrier_ref(s.barrier, s.barrier_slot));
    if (c_.accept(",")) {
      TESSERA_ASSIGN_OR_RETURN(s.tx_bytes, int_field("tx"));
    }
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<MbarrierWait>) {
    MbarrierWait s;
    TESSERA_TRY(c_.expect_word("MbarrierWait"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_TRY(barrier_ref(s.barrier, s.barrier_slot));
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(c_.expect_word("phase"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.phase, expr());
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  // ---- tensor cores ----

  // `.WORD` after an instruction name: the word and the column it starts at.
  Expected<std::string> suffix(size_t& col, std::string_view what) {
    TESSERA_TRY(c_.expect("."));
    col = c_.pos();
    std::string w = c_.word();
    if (w.empty()) return c_.expected(what);
    return w;
  }

  Expected<Stmt> read(Kind<Fragment>) {
    Fragment s;
    TESSERA_ASSIGN_OR_RETURN(s.name, definition("a fragment name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("fragment"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    if (!type_.is_array())
      return c_.error_at(definition_col_, s.name.size(),
                         "a fragment declaration starts with its array type (`bf16[2][8] " + s.name + " = fragment()`)");
    s.type = type_;
    bind_value(s.name);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<LdMatrix>) {
    LdMatrix s;
    TESSERA_TRY(array_slice(s.dst, s.dst_index, "a fragment name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("ldmatrix"));
    size_t col = 0;
    TESSERA_ASSIGN_OR_RETURN(std::string count, suffix(col, "the matrix count x1, x2 or x4"));
    if (count != "x1" && count != "x2" && count != "x4")
      return c_.error_at(col, count.size(), "expected the matrix count x1, x2 or x4, found '" + count + "'");
    s.count = count[1] - '0';
    if (c_.peek(".")) {
      TESSERA_ASSIGN_OR_RETURN(std::string layout, suffix(col, "'trans'"));
      std::optional<LdMatrixLayout> l = parse_spelling<LdMatrixLayout>(layout);
      if (!l || *l != LdMatrixLayout::Trans)
        return c_.error_at(col, layout.size(), "expected 'trans' (or nothing) after the matrix count, found '" + layout + "'");
      s.layout = *l;
    }
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.buffer, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(s.index, index());
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<MmaSync>) {
    MmaSync s;
    TESSERA_TRY(array_slice(s.acc, s.acc_index, "an accumulator name"));
    TESSERA_TRY(c_.expect("<-"));
    TESSERA_TRY(c_.expect_word("mma"));
    size_t col = 0;
    TESSERA_ASSIGN_OR_RETURN(std::string shape, suffix(col, StmtEnumTable<MmaShape>::what));
    std::optional<MmaShape> parsed_shape = parse_spelling<MmaShape>(shape);
    if (!parsed_shape)
      return c_.error_at(col, shape.size(),
                         "expected " + std::string(StmtEnumTable<MmaShape>::what) + ", found '" + shape + "'");
    s.shape = *parsed_shape;
    TESSERA_ASSIGN_OR_RETURN(std::string type, suffix(col, "the operands' dtype (bf16 or f16)"));
    std::optional<DType> dtype = parse_dtype(type);
    if (!dtype) return c_.error_at(col, type.size(), "expected the operands' dtype (bf16 or f16), found '" + type + "'");
    s.type = *dtype;
    TESSERA_TRY(c_.expect("("));
    TESSERA_TRY(array_slice(s.a, s.a_index, "the A fragment"));
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(array_slice(s.b, s.b_index, "the B fragment"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  // `desc(BUF[index], lbo=N, sbo=N, swizzle=S)`: a wgmma operand's shared-memory descriptor;
  // `, major=mn` may follow where `major` is given (B's).
  Status descriptor(std::string& buffer, ExprList& index, int64_t& lbo, int64_t& sbo, SmemSwizzle& swizzle,
                    MatrixMajor* major = nullptr) {
    TESSERA_TRY(c_.expect_word("desc"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(buffer, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(index, this->index());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(lbo, int_field("lbo"));
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(sbo, int_field("sbo"));
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(c_.expect_word("swizzle"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(swizzle, swizzle_spelling());
    if (major != nullptr && c_.accept(",")) {
      TESSERA_TRY(c_.expect_word("major"));
      TESSERA_TRY(c_.expect("="));
      TESSERA_ASSIGN_OR_RETURN(*major, spelled<MatrixMajor>());
    }
    return c_.expect(")");
  }

  Expected<Stmt> read(Kind<WgmmaMma>) {
    WgmmaMma s;
    TESSERA_TRY(array_slice(s.acc, s.acc_index, "an accumulator name"));
    TESSERA_TRY(c_.expect("<-"));
    TESSERA_TRY(c_.expect_word("wgmma"));
    size_t col = 0;
    TESSERA_ASSIGN_OR_RETURN(std::string shape, suffix(col, "the shape m64nNk16"));
    // m64nNk16: N is a multiple of 8 in [8, 256] (the verifier says so for a parsed N).
    const bool framed = shape.size() > 7 && shape.rfind("m64n", 0) == 0 && shape.ends_with("k16");
    const std::string n_text = framed ? shape.substr(4, shape.size() - 7) : std::string();
    const bool digits = !n_text.empty() && n_text.size() <= 3 &&
                        n_text.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) return c_.error_at(col, shape.size(), "expected the shape m64nNk16 (N = 8, 16, ..., 256), found '" + shape + "'");
    s.n = std::stoll(n_text);
    TESSERA_ASSIGN_OR_RETURN(std::string type, suffix(col, "the operands' dtype (bf16 or f16)"));
    std::optional<DType> dtype = parse_dtype(type);
    if (!dtype) return c_.error_at(col, type.size(), "expected the operands' dtype (bf16 or f16), found '" + type + "'");
    s.type = *dtype;
    TESSERA_TRY(c_.expect("("));
    TESSERA_TRY(descriptor(s.a, s.a_index, s.a_lbo, s.a_sbo, s.a_swizzle));
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(descriptor(s.b, s.b_index, s.b_lbo, s.b_sbo, s.b_swizzle, &s.b_major));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<WgmmaFence>) {
    TESSERA_TRY(empty_call("WgmmaFence"));
    return Stmt(WgmmaFence{});
  }

  Expected<Stmt> read(Kind<WgmmaCommit>) {
    TESSERA_TRY(empty_call("WgmmaCommit"));
    return Stmt(WgmmaCommit{});
  }

  Expected<Stmt> read(Kind<WgmmaWait>) {
    WgmmaWait s;
    TESSERA_TRY(c_.expect_word("WgmmaWait"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.keep, int_field("keep"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<NamedBarrier>) {
    NamedBarrier s;
    TESSERA_TRY(c_.expect_word("NamedBarrier"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.id, int_field("id"));
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.threads, int_field("threads"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<SetMaxNReg>) {
    SetMaxNReg s;
    TESSERA_TRY(c_.expect_word("SetMaxNReg"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.action, spelled<RegisterAction>());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.regs, int_field("regs"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<ClusterSync>) {
    TESSERA_TRY(empty_call("ClusterSync"));
    return Stmt(ClusterSync{});
  }

  Expected<Stmt> read(Kind<DsmemLoad>) {
    DsmemLoad s;
    TESSERA_ASSIGN_OR_RETURN(s.dst, definition("a value name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("DsmemLoad"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.buffer, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(s.index, index());
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(c_.expect_word("rank"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.rank, expr());
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    s.type = type_;
    bind_value(s.dst);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<WarpShuffle>) {
    WarpShuffle s;
    TESSERA_ASSIGN_OR_RETURN(s.dst, definition("a value name"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_TRY(c_.expect_word("WarpShuffle"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.src, expr());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.mode, spelled<ShuffleMode>());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.offset, c_.integer("a lane offset"));
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.width, int_field("width"));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    s.type = type_;
    bind_value(s.dst);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<TreeHalve>) {
    TreeHalve s;
    TESSERA_TRY(c_.expect_word("TreeHalve"));
    TESSERA_TRY(c_.expect("("));
    TESSERA_ASSIGN_OR_RETURN(s.buffer, buffer_use());
    TESSERA_TRY(c_.expect(","));
    TESSERA_TRY(c_.expect_word("tid"));
    TESSERA_TRY(c_.expect("="));
    TESSERA_ASSIGN_OR_RETURN(s.tid, expr());
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.count, int_field("n"));
    TESSERA_TRY(c_.expect(","));
    TESSERA_ASSIGN_OR_RETURN(s.op, combine_fn_field());
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  // `loadK` / `storeK` read at `col`: the width must match the number of values.
  Status check_vector_width(const std::string& word, std::string_view stem, size_t count,
                            size_t col) {
    const std::string want = std::string(stem) + std::to_string(count);
    if (word == want) return Status::ok();
    return c_.error_at(col, word.size(),
                       "expected '" + want + "' for " + std::to_string(count) + " values, found '" +
                           word + "'");
  }

  Expected<Stmt> read(Kind<VectorLoad>) {
    VectorLoad s;
    TESSERA_TRY(c_.expect("("));
    do {
      TESSERA_ASSIGN_OR_RETURN(std::string d, definition("a value name"));
      s.dsts.push_back(std::move(d));
    } while (c_.accept(","));
    TESSERA_TRY(c_.expect(")"));
    TESSERA_TRY(c_.expect("="));
    c_.skip_spaces();
    size_t col = c_.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string word, c_.name("'loadN'"));
    TESSERA_TRY(check_vector_width(word, "load", s.dsts.size(), col));
    TESSERA_ASSIGN_OR_RETURN(s.buffer, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(s.index, index());
    TESSERA_TRY(c_.expect_end());
    s.type = type_;
    for (const std::string& d : s.dsts) bind_value(d);
    return Stmt(std::move(s));
  }

  Expected<Stmt> read(Kind<VectorStore>) {
    VectorStore s;
    TESSERA_ASSIGN_OR_RETURN(s.buffer, buffer_use());
    TESSERA_ASSIGN_OR_RETURN(s.index, index());
    TESSERA_TRY(c_.expect("="));
    c_.skip_spaces();
    size_t col = c_.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string word, c_.name("'storeN'"));
    TESSERA_ASSIGN_OR_RETURN(s.values, expr_tuple());
    TESSERA_TRY(check_vector_width(word, "store", s.values.size(), col));
    TESSERA_TRY(c_.expect_end());
    return Stmt(std::move(s));
  }

  BodyReader& body_;
  size_t& next_;
  int depth_;
  const TextLine& line_;
  LineCursor c_;
  size_t definition_col_ = 0;         // where the statement starts, after a value type prefix
  ValueType type_;                    // the prefix's type; f32 (printed as nothing) without one
  std::optional<size_t> type_col_;    // where the prefix starts, when there is one
};

Expected<Body> BodyReader::read(size_t& next, size_t indent, int depth) {
  Body body;
  while (next < lines_.size()) {
    const TextLine& line = lines_[next];
    if (line.indent < indent) break;
    if (line.indent > indent) {
      LineCursor c(line, file_);
      return c.error_at(0, line.indent,
                        "unexpected indentation: expected " + std::to_string(indent) +
                            " spaces, found " + std::to_string(line.indent));
    }
    StmtReader reader(*this, next, depth);
    TESSERA_ASSIGN_OR_RETURN(Stmt s, reader.read());
    body.push_back(std::move(s));
  }
  return body;
}

}  // namespace tessera::ir_text

namespace tessera {

Expected<Body> parse_body(std::string_view text, const std::string& file, ParseLimits limits) {
  TESSERA_ASSIGN_OR_RETURN(auto lines, ir_text::split_lines(text, file, limits));
  ir_text::BodyReader reader(lines, file, limits, nullptr);
  size_t next = 0;
  TESSERA_ASSIGN_OR_RETURN(Body body, reader.read(next, 0, 0));
  if (next < lines.size()) {
    ir_text::LineCursor c(lines[next], file);
    return c.error_at(0, lines[next].indent, "unexpected indentation");
  }
  return body;
}

}  // namespace tessera

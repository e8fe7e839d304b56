// Graph parser: the inverse of print_graph (printer.cpp) for Torch, Tensor, Loop, Tile and Kernel
// IR.
//
//   graph       := line*  where each top-level (unindented) line is one of
//     decl        NAME ': ' type [' = param ' PATH [' from ' FILE] | ' = const'] ['  # ' provenance]
//                 (with a FILE, the provenance is 'file_bytes=' INT ' modified_ns=' INT)
//     knobs       '# knobs: ' PASS '.' KNOB '=' VALUE ' (' SOURCE ')' {', ' ...}   (for the next node)
//     node line   NAME ' = ' RHS ' -> ' type    (Torch or Tensor IR; see one_line_node)
//     loop block  '=== ' NAME '(' [NAME {', ' NAME}] ') -> ' NAME ': ' type ' ===' + indented body
//     kernel      'kernel ' NAME {' ' FIELD} '  inputs: ' NAMES '  outputs: ' NAME ': ' type
//                 ['  params: ' PARAM {', ' PARAM}] + indented body. FIELDs (Kernel IR; none means
//                 Tile IR): 'grid=' TUPLE, 'block=' TUPLE, 'cluster=' TUPLE, 'smem=' INT ' dynamic'
//     PARAM       NAME ': ' DTYPE [' in [' INT ', ' INT ']']        a scalar
//                 NAME ': tensor_map(' BUFFER ', box=' TUPLE ')'     a tensor map
//                 NAME ': ' ['const '] DTYPE '*'                    a buffer
//     return      'return' [NAME {', ' NAME}]   (the last line)
//   type        := '(' [INT {', ' INT} [',']] ') ' DTYPE
//
// The graph holds the declarations first, then the kernels in text order, as print_graph lists
// them. Every name a header or statement uses must already be defined (located error otherwise).
#include <charconv>
#include <cmath>
#include <limits>
#include <algorithm>
#include <set>

#include "ir_text_reader.h"
#include "tessera/ir/kernel_abi.h"
#include "tessera/ir/parser.h"

namespace tessera {
namespace {

using ir_text::BodyReader;
using ir_text::BufferScope;
using ir_text::LineCursor;
using ir_text::NameScope;
using ir_text::TextLine;

class GraphReader {
 public:
  GraphReader(const std::vector<TextLine>& lines, const std::string& file, const ParseLimits& limits)
      : lines_(lines), file_(file), limits_(limits) {}

  Expected<Graph> read() {
    std::vector<KnobChoice> pending;
    bool returned = false;
    while (next_ < lines_.size()) {
      const TextLine& line = lines_[next_];
      LineCursor c(line, file_);
      if (returned) return c.error_at(line.indent, 1, "expected nothing after the 'return' line");
      if (line.indent != 0) {
        return c.error_at(0, line.indent,
                          "unexpected indentation: a statement outside a kernel block");
      }
      if (c.peek("# knobs:")) {
        TESSERA_ASSIGN_OR_RETURN(pending, knobs(c));
        ++next_;
        continue;
      }
      if (c.peek("===")) {
        TESSERA_TRY(loop_block(c, std::move(pending)));
      } else if (c.peek("// kernel")) {
        return c.error_at(0, line.text.size(),
                          "CUDA IR does not parse back; read a graph at the Loop, Tile or Kernel "
                          "stage (or its JSON, --emit json)");
      } else if (c.accept_word("kernel")) {
        TESSERA_TRY(kernel_block(c, std::move(pending)));
      } else if (c.accept_word("return")) {
        if (!pending.empty()) {
          return c.error_at(0, c.line().text.size(), "expected a node after the '# knobs:' line above");
        }
        TESSERA_TRY(outputs(c));
        returned = true;
        ++next_;
      } else {
        TESSERA_TRY(declaration(c, std::move(pending)));
        ++next_;
      }
      pending.clear();
    }
    if (!returned) {
      // Located just past the last line, so the caret shows where the text stops.
      TextLine empty{"", 1, 0};
      const TextLine& last = lines_.empty() ? empty : lines_.back();
      return LineCursor(last, file_).error_at(
          last.text.size(), 1, "expected a 'return' line at the end of the graph (the text is truncated)");
    }
    TESSERA_TRY(finish_one_line_nodes());
    return std::move(graph_);
  }

 private:
  // ---- shared pieces ----------------------------------------------------------------------

  // `(16, 64) float32`
  Expected<TensorType> type(LineCursor& c) {
    TensorType t;
    TESSERA_TRY(c.expect("("));
    if (c.peek_char() != ')') {
      do {
        if (c.peek_char() == ')') break;  // `(2048,)`
        TESSERA_ASSIGN_OR_RETURN(int64_t d, c.integer("a dimension"));
        t.shape.push_back(Dim(d));
      } while (c.accept(","));
    }
    TESSERA_TRY(c.expect(")"));
    c.skip_spaces();
    size_t col = c.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string dtype, c.name("a dtype (float32, bfloat16, ...)"));
    std::optional<DType> dt = parse_dtype(dtype);
    if (!dt) return c.error_at(col, dtype.size(), "unknown dtype '" + dtype + "'");
    t.dtype = *dt;
    return t;
  }

  // A node id that must already be defined.
  Expected<std::string> defined_node(LineCursor& c, std::string_view what) {
    c.skip_spaces();
    size_t col = c.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string id, c.name(what));
    if (!graph_.contains(id)) {
      return c.error_at(col, id.size(), "unknown buffer '" + id + "' (no node of that name above)");
    }
    return id;
  }

  // A new node id.
  Expected<std::string> new_node(LineCursor& c) {
    c.skip_spaces();
    size_t col = c.pos();
    TESSERA_ASSIGN_OR_RETURN(std::string id, c.name("a node name"));
    if (graph_.contains(id)) return c.error_at(col, id.size(), "node '" + id + "' is defined twice");
    return id;
  }

  // A number as Python prints it (`0.5`, `-inf`, `1e-06`, `2`).
  Expected<double> number(LineCursor& c) {
    size_t col = (c.skip_spaces(), c.pos());
    TESSERA_ASSIGN_OR_RETURN(Expr e, ir_text::read_expr(c, limits_));
    if (e.is(ExprKind::Float)) return e.float_value();
    if (e.is(ExprKind::Int)) return static_cast<double>(e.int_value());
    return c.error_at(col, c.pos() - col, "expected a number");
  }

  // A knob value as attr_str prints it: True, -1, 0.5, 'x', (1, 2).
  Expected<AttrValue> attr_value(LineCursor& c) {
    if (c.accept_word("True")) return AttrValue(true);
    if (c.accept_word("False")) return AttrValue(false);
    char q = c.peek_char();
    if (q == '\'' || q == '"') return string_literal(c);
    if (c.accept("(")) {
      std::vector<int64_t> values;
      while (c.peek_char() != ')') {
        TESSERA_ASSIGN_OR_RETURN(int64_t v, c.integer("an integer"));
        values.push_back(v);
        if (!c.accept(",")) break;
      }
      TESSERA_TRY(c.expect(")"));
      return AttrValue(std::move(values));
    }
    size_t col = (c.skip_spaces(), c.pos());
    TESSERA_ASSIGN_OR_RETURN(Expr e, ir_text::read_expr(c, limits_));
    if (e.is(ExprKind::Int)) return AttrValue(e.int_value());
    if (e.is(ExprKind::Float)) return AttrValue(e.float_value());
    return c.error_at(col, c.pos() - col, "expected a value (True, a number, a string or a tuple)");
  }

  // Python's repr of a string: quotes with \\, \', \", \n, \t, \r and \xHH escapes.
  Expected<AttrValue> string_literal(LineCursor& c) {
    c.skip_spaces();
    const std::string_view t = c.line().text;
    size_t start = c.pos();
    const char quote = t[start];
    std::string out;
    size_t i = start + 1;
    for (; i < t.size() && t[i] != quote; ++i) {
      if (t[i] != '\\') {
        out += t[i];
        continue;
      }
      if (++i >= t.size()) break;
      switch (t[i]) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': {
          unsigned value = 0;
          if (i + 2 >= t.size() ||
              std::from_chars(t.data() + i + 1, t.data() + i + 3, value, 16).ptr != t.data() + i + 3) {
            return c.error_at(i - 1, 2, "expected two hex digits after '\\x'");
          }
          out += static_cast<char>(value);
          i += 2;
          break;
        }
        default: out += t[i];
      }
    }
    if (i >= t.size()) return c.error_at(start, t.size() - start, "unterminated string");
    c.reset(i + 1);
    return AttrValue(std::move(out));
  }

  // ---- top-level lines --------------------------------------------------------------------

  Expected<std::vector<KnobChoice>> knobs(LineCursor& c) {
    TESSERA_TRY(c.expect("# knobs:"));
    std::vector<KnobChoice> out;
    do {
      KnobChoice k;
      c.skip_spaces();
      size_t col = c.pos();
      TESSERA_ASSIGN_OR_RETURN(std::string qualified, c.name("pass.KNOB"));
      size_t dot = qualified.find('.');
      if (dot == std::string::npos) {
        return c.error_at(col, qualified.size(), "expected pass.KNOB, found '" + qualified + "'");
      }
      k.pass = qualified.substr(0, dot);
      k.knob = qualified.substr(dot + 1);
      TESSERA_TRY(c.expect("="));
      TESSERA_ASSIGN_OR_RETURN(k.value, attr_value(c));
      TESSERA_TRY(c.expect("("));
      TESSERA_ASSIGN_OR_RETURN(k.source, c.name("a knob source (heuristic, pinned, ...)"));
      TESSERA_TRY(c.expect(")"));
      out.push_back(std::move(k));
    } while (c.accept(","));
    TESSERA_TRY(c.expect_end());
    return out;
  }

  // An input or constant declaration (`x: type ...`), or a one-line node (`x = rhs -> type`).
  Status declaration(LineCursor& c, std::vector<KnobChoice> choices) {
    TESSERA_ASSIGN_OR_RETURN(std::string id, new_node(c));
    if (c.accept("=")) return one_line_node(c, id, std::move(choices));
    TESSERA_TRY(c.expect(":"));
    TESSERA_ASSIGN_OR_RETURN(TensorType t, type(c));
    std::unique_ptr<Op> op;
    if (c.accept("=")) {
      auto constant = std::make_unique<ConstantOp>();
      if (c.accept_word("param")) {
        c.skip_spaces();
        std::string_view rest = c.line().text.substr(c.pos());
        size_t comment = rest.find("  #");
        constant->path = std::string(rest.substr(0, comment));
        while (!constant->path.empty() && constant->path.back() == ' ') constant->path.pop_back();
        // `PATH from FILE`: a checkpoint tensor (module paths have no spaces; a file may).
        if (size_t from = constant->path.find(" from "); from != std::string::npos) {
          constant->checkpoint = CheckpointRef{constant->path.substr(from + 6)};
          constant->path.resize(from);
        }
        if (constant->path.empty()) return c.expected("a parameter path");
        c.reset(c.pos() + (comment == std::string_view::npos ? rest.size() : comment));
      } else if (!c.accept_word("const")) {
        return c.expected("'param PATH' or 'const'");
      }
      if (constant->checkpoint) {
        TESSERA_TRY(checkpoint_stamp(c, *constant->checkpoint));
      } else if (c.accept("#")) {
        TESSERA_TRY(constant_provenance(c, *constant));
      }
      op = std::move(constant);
    } else {
      auto input = std::make_unique<InputOp>();
      if (c.accept("#")) {
        TESSERA_ASSIGN_OR_RETURN(input->init, c.name("how the input is created (zeros, ones, rand, full, randint)"));
        if (input->init == "full" || input->init == "randint") {
          TESSERA_TRY(c.expect("("));
          TESSERA_ASSIGN_OR_RETURN(input->fill, number(c));
          TESSERA_TRY(c.expect(")"));
        }
      }
      op = std::move(input);
    }
    TESSERA_TRY(c.expect_end());
    Node& n = graph_.add(id, std::move(op), {}, std::move(t));
    n.choices = std::move(choices);
    return Status::ok();
  }

  // ---- Tensor IR: `ID = RHS -> (shape) dtype` ------------------------------------------------

  // A name followed by `[`: the buffer of an IndexMap source (the cursor stays put otherwise).
  std::optional<std::string> buffer_access(LineCursor& c) {
    size_t mark = (c.skip_spaces(), c.pos());
    if (!ir_text::is_name_start(c.peek_char())) return std::nullopt;
    auto name = c.name("a buffer");
    if (name && c.peek("[")) return *name;
    c.reset(mark);
    return std::nullopt;
  }

  // One IndexMap source: `buf[i, j]` or a value expression (`-inf`, `j`).
  Status index_map_source(LineCursor& c, IndexMapSource& src) {
    if (auto buffer = buffer_access(c)) {
      src.buffer = *buffer;
      TESSERA_TRY(c.expect("["));
      TESSERA_ASSIGN_OR_RETURN(src.index, ir_text::read_expr_list(c, ']', limits_));
      return c.expect("]");
    }
    TESSERA_ASSIGN_OR_RETURN(src.value, ir_text::read_expr(c, limits_));
    return Status::ok();
  }

  // Whether the call at the cursor (after its name) has a keyword argument, e.g. `(x, axis=1)`.
  bool has_keyword_argument(LineCursor& c) {
    size_t mark = c.pos();
    bool found = false;
    if (c.accept("(")) {
      for (bool first = true; !found && c.peek_char() != ')' && (first || c.accept(",")); first = false) {
        if (keyword_follows(c)) found = true;
        else if (!ir_text::read_expr(c, limits_)) break;
      }
    }
    c.reset(mark);
    return found;
  }

  // Whether `NAME=` (a keyword argument, not `==`) is at the cursor; does not move it.
  bool keyword_follows(LineCursor& c) {
    size_t mark = (c.skip_spaces(), c.pos());
    bool keyword = ir_text::is_name_start(c.peek_char()) && c.name("").has_value() && c.peek("=") &&
                   !c.peek("==");
    c.reset(mark);
    return keyword;
  }

  // The right-hand side of a one-line node (printer.cpp's line_rhs). Tensor IR: Elementwise
  // `fn(args)`, Reduce `fn(x, axis=N[, keepdim=False])`, Gather `gather(t, ids, axis=N)`, IndexMap
  // `x[i, j]`, a value expression, or `select(pred: source, .., source)`; an IndexMap's
  // coordinates are not printed: they are i, j, k, l, m, n, c6, .. in output-dimension order, as
  // decompose names them; a node's inputs are the buffers it names, each once, in order.
  // Torch IR: `target(args, key=value)`, where a literal argument is a scalar at its position and
  // the inputs are the names in order.
  //
  // An elementwise call prints the same in both dialects, so a call line is read both ways and the
  // graph decides (finish_one_line_nodes): it is Torch IR when some line can only be Torch IR (a
  // keyword other than axis / keepdim, or an operand whose shape is not the output's: Tensor IR
  // operands are already broadcast), else Tensor IR.
  Status one_line_node(LineCursor& c, const std::string& id, std::vector<KnobChoice> choices) {
    std::unique_ptr<Op> op;
    std::vector<std::string> inputs;
    auto use = [&](const std::string& name, size_t col) -> Status {
      if (!graph_.contains(name)) {
        return c.error_at(col, name.size(), "unknown buffer '" + name + "' (no node of that name above)");
      }
      if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) inputs.push_back(name);
      return Status::ok();
    };
    auto index_map = std::make_unique<IndexMapOp>();
    size_t mark = (c.skip_spaces(), c.pos());
    std::optional<std::string> fn;
    if (ir_text::is_name_start(c.peek_char())) {
      auto name = c.name("an op");
      if (name && c.peek("(")) fn = *name;
    }
    bool expression_function = fn && (*fn == "min" || *fn == "max" || parse_dtype(*fn));
    OneLineReading torch;
    std::string not_tensor_ir;  // why a call line has no Tensor IR reading
    bool call = false;
    ExprList args;
    std::vector<size_t> arg_cols;
    if (fn && *fn == "select") {
      TESSERA_TRY(c.expect("("));
      do {
        IndexMapSource src;
        size_t case_start = (c.skip_spaces(), c.pos());
        if (!buffer_access(c)) {
          TESSERA_ASSIGN_OR_RETURN(Expr e, ir_text::read_expr(c, limits_));
          if (c.accept(":")) {
            src.predicate = e;
            case_start = (c.skip_spaces(), c.pos());
            TESSERA_TRY(index_map_source(c, src));
          } else {
            src.value = e;
          }
        } else {
          c.reset(case_start);
          TESSERA_TRY(index_map_source(c, src));
        }
        if (!src.buffer.empty()) TESSERA_TRY(use(src.buffer, case_start));
        index_map->sources.push_back(std::move(src));
      } while (c.accept(","));
      TESSERA_TRY(c.expect(")"));
      op = std::move(index_map);
    } else if (fn && !(expression_function && !has_keyword_argument(c))) {
      // min / max with `axis=` reduce; without, they are an IndexMap's value expression.
      call = true;
      TESSERA_TRY(c.expect("("));
      torch.op = std::make_unique<TorchOp>();
      torch.op->target = *fn;
      int64_t axis = 0;
      bool keepdim = true, has_axis = false, tensor_keywords = true;
      for (bool first = true; c.peek_char() != ')' && (first || c.accept(",")); first = false) {
        size_t col = (c.skip_spaces(), c.pos());
        if (!keyword_follows(c)) {
          TESSERA_ASSIGN_OR_RETURN(Expr arg, ir_text::read_expr(c, limits_));
          args.push_back(std::move(arg));
          arg_cols.push_back(col);
          continue;
        }
        TESSERA_ASSIGN_OR_RETURN(std::string key, c.name("a keyword argument"));
        TESSERA_TRY(c.expect("="));
        TESSERA_ASSIGN_OR_RETURN(AttrValue value, attr_value(c));
        if (key == "axis" && std::holds_alternative<int64_t>(value)) {
          axis = std::get<int64_t>(value);
          has_axis = true;
        } else if (key == "keepdim" && value == AttrValue(false)) {
          keepdim = false;
        } else {
          tensor_keywords = false;
          torch.forced_at = col;
        }
        torch.op->attrs.set(key, std::move(value));
      }
      TESSERA_TRY(c.expect(")"));
      for (size_t a = 0; a < args.size(); ++a) {
        if (args[a].is(ExprKind::Var)) {
          TESSERA_TRY(use(args[a].name(), arg_cols[a]));
          torch.inputs.push_back(args[a].name());
        } else if (args[a].is_const()) {
          double v = args[a].is(ExprKind::Float) ? args[a].float_value()
                                                 : static_cast<double>(args[a].int_value());
          torch.op->scalar_args.emplace_back(static_cast<int64_t>(a), v);
        } else {
          torch.op.reset();  // an expression argument: Tensor IR only
          break;
        }
      }
      if (!tensor_keywords) {
        op = nullptr;  // read as Torch IR below
      } else if (*fn == "gather" && has_axis) {
        auto gather = std::make_unique<GatherOp>();
        gather->axis = axis;
        op = std::move(gather);
      } else if (has_axis) {
        if (Expected<CombineFn> reduction = parse_reduction(*fn)) {
          auto reduce = std::make_unique<ReduceOp>();
          reduce->fn = *reduction;
          reduce->axis = axis;
          reduce->keepdim = keepdim;
          op = std::move(reduce);
        } else {
          not_tensor_ir = reduction.error().message;  // read as Torch IR below
        }
      } else if (Expected<ElementwiseFn> elementwise_fn = parse_elementwise_fn(*fn)) {
        auto elementwise = std::make_unique<ElementwiseOp>();
        elementwise->fn = *elementwise_fn;
        elementwise->args = args;
        op = std::move(elementwise);
      } else {
        not_tensor_ir = elementwise_fn.error().message;  // read as Torch IR below
      }
    } else {
      c.reset(mark);
      IndexMapSource src;
      TESSERA_TRY(index_map_source(c, src));
      if (!src.buffer.empty()) TESSERA_TRY(use(src.buffer, mark));
      index_map->sources.push_back(std::move(src));
      op = std::move(index_map);
    }
    TESSERA_TRY(c.expect("->"));
    TESSERA_ASSIGN_OR_RETURN(TensorType t, type(c));
    TESSERA_TRY(c.expect_end());
    if (auto* map = dynamic_cast<IndexMapOp*>(op.get())) {
      for (size_t d = 0; d < t.shape.size(); ++d) {
        static const char* kNames[] = {"i", "j", "k", "l", "m", "n"};
        map->coords.push_back(d < 6 ? kNames[d] : "c" + std::to_string(d));
      }
    }
    if (call && op && dynamic_cast<ElementwiseOp*>(op.get()) != nullptr) {
      for (size_t a = 0; a < args.size(); ++a) {
        if (args[a].is(ExprKind::Var) && !(graph_.find(args[a].name())->type.shape == t.shape)) {
          torch.forced_at = arg_cols[a];  // a broadcasting operand: only Torch IR does that
        }
      }
    }
    if (!op) {
      if (!torch.op) return c.error_at(mark, c.pos() - mark, "neither a Tensor IR nor a Torch IR node");
      op = std::move(torch.op);
      inputs = torch.inputs;
      torch.forced_at = torch.forced_at ? torch.forced_at : mark;
    }
    if (torch.forced_at && !forced_torch_line_) {
      forced_torch_line_ = &c.line();
      forced_torch_reason_ = std::move(not_tensor_ir);
    }
    torch.line = &c.line();
    Node& n = graph_.add(id, std::move(op), std::move(inputs), std::move(t));
    n.choices = std::move(choices);
    one_line_.emplace_back(id, std::move(torch));
    return Status::ok();
  }

  // Once every line is read: when some line can only be Torch IR, every one-line node takes its
  // Torch IR reading (an IndexMap line then has none: the text mixes the two dialects).
  Status finish_one_line_nodes() {
    if (forced_torch_line_ == nullptr) return Status::ok();
    for (auto& [id, reading] : one_line_) {
      Node* n = graph_.find(id);
      if (n->op_as<TorchOp>() != nullptr) continue;
      if (!reading.op) {
        LineCursor c(*reading.line, file_);
        return c.error_at(0, reading.line->text.size(),
                          "a Tensor IR node in a graph whose line " +
                              std::to_string(forced_torch_line_->number) + " is Torch IR" +
                              (forced_torch_reason_.empty() ? "" : " (" + forced_torch_reason_ + ")") +
                              "; a printed graph is at one stage");
      }
      n->op = std::move(reading.op);
      n->inputs = std::move(reading.inputs);
    }
    return Status::ok();
  }

  // A checkpoint tensor's `# file_bytes=N modified_ns=T`.
  Status checkpoint_stamp(LineCursor& c, CheckpointRef& ref) {
    if (!c.accept("#")) return c.expected("'# file_bytes=N modified_ns=T' after a checkpoint file");
    for (auto [key, field] : {std::pair{"file_bytes", &ref.file_bytes}, std::pair{"modified_ns", &ref.modified_ns}}) {
      TESSERA_TRY(c.expect_word(key));
      TESSERA_TRY(c.expect("="));
      TESSERA_ASSIGN_OR_RETURN(*field, c.integer(key));
    }
    return Status::ok();
  }

  // `values=[1.0, 2.0]`, `full(0.5)`, `randn seed=7 [scale=0.02]`, `zeros`, ...
  Status constant_provenance(LineCursor& c, ConstantOp& op) {
    size_t col = (c.skip_spaces(), c.pos());
    TESSERA_ASSIGN_OR_RETURN(op.init, c.name("where the constant's data comes from"));
    if (op.init == "values") {
      op.init = "randn";  // the ConstantOp default; literal values take precedence over it
      TESSERA_TRY(c.expect("="));
      TESSERA_TRY(c.expect("["));
      while (c.peek_char() != ']') {
        if (c.peek("...")) {
          return c.error_at(col, c.line().text.size() - col,
                            "the printout elides this constant's values; it does not parse back "
                            "(use the JSON form, --emit json)");
        }
        TESSERA_ASSIGN_OR_RETURN(double v, number(c));
        op.values.push_back(v);
        if (!c.accept(",")) break;
      }
      return c.expect("]");
    }
    if (op.init == "full") {
      TESSERA_TRY(c.expect("("));
      TESSERA_ASSIGN_OR_RETURN(op.scale, number(c));
      return c.expect(")");
    }
    if (op.init == "randn" || op.init == "rand") {
      TESSERA_TRY(c.expect_word("seed"));
      TESSERA_TRY(c.expect("="));
      TESSERA_ASSIGN_OR_RETURN(op.seed, c.unsigned_integer("a seed"));
      if (c.accept_word("scale")) {
        TESSERA_TRY(c.expect("="));
        TESSERA_ASSIGN_OR_RETURN(op.scale, number(c));
      }
    }
    return Status::ok();
  }

  // The kernel's body, indented by two spaces under its header line. A Kernel IR kernel's scalar
  // parameters are names of its body (integer ones index variables, floating-point ones values),
  // and its tensor maps are what TmaLoad names as a descriptor.
  Expected<Body> kernel_body(LineCursor& header, size_t header_length, const std::string& output,
                             const std::vector<KernelParam>& params = {}) {
    ++next_;
    if (next_ >= lines_.size() || lines_[next_].indent == 0) {
      return header.error_at(0, header_length,
                             "expected an indented kernel body after this header" +
                                 std::string(next_ >= lines_.size() ? " (the text ends here)" : ""));
    }
    BufferScope scope;
    for (const Node* n : graph_.nodes()) scope.known.insert(n->id());
    scope.known.insert(output);
    NameScope names;
    for (const KernelParam& p : params) {
      if (p.kind == ParamKind::TensorMap) scope.known.insert(p.name);
      if (p.kind == ParamKind::Scalar) {
        names.bind(p.name, dtype_is_float(p.dtype) ? ExprKind::Value : ExprKind::Var);
      }
    }
    BodyReader reader(lines_, file_, limits_, &scope, std::move(names));
    TESSERA_ASSIGN_OR_RETURN(Body body, reader.read(next_, 2, 1));
    if (next_ < lines_.size() && lines_[next_].indent != 0) {
      LineCursor c(lines_[next_], file_);
      return c.error_at(0, lines_[next_].indent,
                        "unexpected indentation: expected 2 spaces, found " +
                            std::to_string(lines_[next_].indent));
    }
    return body;
  }

  // `a, b` up to `stop` (not consumed); every name must be a node.
  Expected<std::vector<std::string>> node_list(LineCursor& c, std::string_view stop) {
    std::vector<std::string> out;
    if (c.peek(stop)) return out;
    do {
      TESSERA_ASSIGN_OR_RETURN(std::string id, defined_node(c, "an input name"));
      out.push_back(std::move(id));
    } while (c.accept(","));
    return out;
  }

  // `OUT: (shape) dtype`
  Status output_decl(LineCursor& c, std::string& id, TensorType& t) {
    TESSERA_ASSIGN_OR_RETURN(id, new_node(c));
    TESSERA_TRY(c.expect(":"));
    TESSERA_ASSIGN_OR_RETURN(t, type(c));
    return Status::ok();
  }

  Status add_kernel(std::unique_ptr<Op> op, const std::string& id, std::vector<std::string> inputs,
                    TensorType t, std::vector<KnobChoice> choices) {
    Node& n = graph_.add(id, std::move(op), std::move(inputs), std::move(t));
    n.choices = std::move(choices);
    return Status::ok();
  }

  // `=== merged_relu(x, w) -> relu: (16, 16) float32 ===`
  Status loop_block(LineCursor& c, std::vector<KnobChoice> choices) {
    TESSERA_TRY(c.expect("==="));
    auto op = std::make_unique<LoopOp>();
    TESSERA_ASSIGN_OR_RETURN(op->name, c.name("a kernel name"));
    TESSERA_TRY(c.expect("("));
    TESSERA_ASSIGN_OR_RETURN(auto inputs, node_list(c, ")"));
    TESSERA_TRY(c.expect(")"));
    TESSERA_TRY(c.expect("->"));
    std::string id;
    TensorType t;
    TESSERA_TRY(output_decl(c, id, t));
    TESSERA_TRY(c.expect("==="));
    TESSERA_TRY(c.expect_end());
    TESSERA_ASSIGN_OR_RETURN(op->body, kernel_body(c, c.line().text.size(), id));
    return add_kernel(std::move(op), id, std::move(inputs), std::move(t), std::move(choices));
  }

  // `kernel k_x  [grid=(..) block=(..) [cluster=(..)] [smem=N dynamic]  ]inputs: a, b  outputs:
  // out: (..) dtype[  params: ..]`
  Status kernel_block(LineCursor& c, std::vector<KnobChoice> choices) {
    std::string name;
    TESSERA_ASSIGN_OR_RETURN(name, c.name("a kernel name"));
    // Header fields before `inputs:`: a Kernel IR kernel's launch. A header without fields is a
    // Tile IR kernel. Each field at most once, in any order (the printer's is grid, block,
    // cluster, smem).
    std::optional<std::vector<int64_t>> grid, block, cluster;
    std::optional<int64_t> smem;
    size_t first_field_col = 0;
    while (!c.peek("inputs:")) {
      c.skip_spaces();
      size_t col = c.pos();
      if (!grid && !block && !cluster && !smem) first_field_col = col;
      TESSERA_ASSIGN_OR_RETURN(std::string field,
                               c.name("'inputs:' or a header field (grid, block, cluster, smem)"));
      std::optional<std::vector<int64_t>>* slot = field == "grid"      ? &grid
                                                  : field == "block"   ? &block
                                                  : field == "cluster" ? &cluster
                                                                       : nullptr;
      if (slot == nullptr && field != "smem") {
        return c.error_at(col, field.size(),
                          "unknown kernel header field '" + field +
                              "' (expected grid, block, cluster, smem or inputs:)");
      }
      if (slot != nullptr ? slot->has_value() : smem.has_value()) {
        return c.error_at(col, field.size(), "kernel header field '" + field + "' is given twice");
      }
      TESSERA_TRY(c.expect("="));
      if (slot != nullptr) {
        TESSERA_ASSIGN_OR_RETURN(*slot, int_tuple(c));
      } else {
        TESSERA_ASSIGN_OR_RETURN(smem, c.integer("a byte count"));
        TESSERA_TRY(c.expect_word("dynamic"));
      }
    }
    const bool kernel_ir = grid || block || cluster || smem;
    if (kernel_ir && !(grid && block)) {
      if (!grid && !block) {
        return c.error_at(first_field_col, 1, "expected 'grid=(..)' and 'block=(..)' in a Kernel IR header");
      }
      return c.expected(grid ? "'block=(..)' with 'grid=(..)'" : "'grid=(..)' with 'block=(..)'");
    }
    TESSERA_TRY(c.expect("inputs:"));
    TESSERA_ASSIGN_OR_RETURN(auto inputs, node_list(c, "outputs:"));
    TESSERA_TRY(c.expect("outputs:"));
    std::string id;
    TensorType t;
    TESSERA_TRY(output_decl(c, id, t));
    std::vector<KernelParam> params;
    if (c.peek("params:")) {
      if (!kernel_ir) return c.expected("end of line (a Tile IR kernel has no params; add grid= and block=)");
      c.accept("params:");
      TESSERA_ASSIGN_OR_RETURN(params, kernel_params(c, id, t.dtype));
    }
    TESSERA_TRY(c.expect_end());
    TESSERA_ASSIGN_OR_RETURN(Body body, kernel_body(c, c.line().text.size(), id, params));
    if (kernel_ir) {
      auto op = std::make_unique<KernelOp>();
      op->name = std::move(name);
      op->body = std::move(body);
      op->grid = std::move(*grid);
      op->block = std::move(*block);
      if (cluster) op->cluster = std::move(*cluster);
      op->dynamic_smem = smem.value_or(0);
      op->params = std::move(params);
      return add_kernel(std::move(op), id, std::move(inputs), std::move(t), std::move(choices));
    }
    auto op = std::make_unique<TileOp>();
    op->name = std::move(name);
    op->body = std::move(body);
    return add_kernel(std::move(op), id, std::move(inputs), std::move(t), std::move(choices));
  }

  // `pos: i32 in [0, 7], scale: f32, tmap_x: tensor_map(x, box=(1, 64))` (KernelParam::str). A
  // tensor map covers a buffer (the verifier checks it is an input or the kernel's output).
  Expected<std::vector<KernelParam>> kernel_params(LineCursor& c, const std::string& output,
                                                   DType output_dtype) {
    std::vector<KernelParam> params;
    std::set<std::string> names;
    do {
      KernelParam p;
      c.skip_spaces();
      size_t col = c.pos();
      TESSERA_ASSIGN_OR_RETURN(p.name, c.name("a parameter name"));
      if (!names.insert(p.name).second) {
        return c.error_at(col, p.name.size(), "parameter '" + p.name + "' is declared twice");
      }
      TESSERA_TRY(c.expect(":"));
      if (c.accept_word("tensor_map")) {
        p.kind = ParamKind::TensorMap;
        TESSERA_TRY(c.expect("("));
        c.skip_spaces();
        size_t buffer_col = c.pos();
        TESSERA_ASSIGN_OR_RETURN(p.tensor_map.buffer, c.name("the buffer a tensor map covers"));
        const std::string& buffer = p.tensor_map.buffer;
        const Node* covered = graph_.find(buffer);
        if (buffer != output && covered == nullptr) {
          return c.error_at(buffer_col, buffer.size(),
                            "unknown buffer '" + buffer + "' (no node of that name above)");
        }
        // The covered buffer's element type (kernel_abi.h), which the printout does not repeat.
        p.dtype = buffer == output ? output_dtype : covered->type.dtype;
        TESSERA_TRY(c.expect(","));
        TESSERA_TRY(c.expect_word("box"));
        TESSERA_TRY(c.expect("="));
        TESSERA_ASSIGN_OR_RETURN(p.tensor_map.box, int_tuple(c));
        // Optional fields, in the printed order.
        while (c.accept(",")) {
          c.skip_spaces();
          size_t field_col = c.pos();
          TESSERA_ASSIGN_OR_RETURN(std::string field, c.name("a tensor-map field (swizzle, oob, element_strides)"));
          TESSERA_TRY(c.expect("="));
          if (field == "swizzle") {
            c.skip_spaces();
            size_t col = c.pos();
            const std::string word = c.word();
            std::optional<SmemSwizzle> sw = parse_spelling<SmemSwizzle>(word);
            if (!sw || word.empty())
              return c.error_at(col, std::max<size_t>(word.size(), 1),
                                "expected " + std::string(StmtEnumTable<SmemSwizzle>::what) + ", not '" + word + "'");
            p.tensor_map.swizzle = *sw;
          } else if (field == "oob") {
            c.skip_spaces();
            size_t col = c.pos();
            TESSERA_ASSIGN_OR_RETURN(std::string word, c.name("an out-of-bounds fill (zero, nan)"));
            std::optional<TensorMapOobFill> fill = parse_oob_fill(word);
            if (!fill) return c.error_at(col, word.size(), "unknown out-of-bounds fill '" + word + "' (zero, nan)");
            p.tensor_map.oob_fill = *fill;
          } else if (field == "element_strides") {
            TESSERA_ASSIGN_OR_RETURN(p.tensor_map.element_strides, int_tuple(c));
          } else {
            return c.error_at(field_col, field.size(),
                              "unknown tensor-map field '" + field + "' (swizzle, oob, element_strides)");
          }
        }
        TESSERA_TRY(c.expect(")"));
      } else {
        bool is_const = c.accept_word("const");
        c.skip_spaces();
        size_t dtype_col = c.pos();
        TESSERA_ASSIGN_OR_RETURN(std::string dtype, c.name("a parameter type (i32, i64, f32, tensor_map)"));
        std::optional<DType> dt = parse_dtype(dtype);
        if (!dt || dtype_short_name(*dt) != dtype) {
          return c.error_at(dtype_col, dtype.size(),
                            "unknown parameter type '" + dtype + "' (expected i32, i64, f32 or tensor_map)");
        }
        p.dtype = *dt;
        if (c.accept("*")) {
          p.kind = ParamKind::Buffer;
          p.written = !is_const;
        } else if (is_const) {
          return c.expected("'*' after 'const " + dtype + "'");
        } else {
          p.kind = ParamKind::Scalar;
          if (c.accept_word("in")) {
            TESSERA_TRY(c.expect("["));
            Interval range;
            TESSERA_ASSIGN_OR_RETURN(range.lo, c.integer("the lowest value"));
            TESSERA_TRY(c.expect(","));
            TESSERA_ASSIGN_OR_RETURN(range.hi, c.integer("the highest value"));
            TESSERA_TRY(c.expect("]"));
            p.range = range;
          }
        }
      }
      params.push_back(std::move(p));
    } while (c.accept(","));
    return params;
  }

  // `(32, 1, 1)`
  Expected<std::vector<int64_t>> int_tuple(LineCursor& c) {
    TESSERA_TRY(c.expect("("));
    std::vector<int64_t> out;
    do {
      TESSERA_ASSIGN_OR_RETURN(int64_t v, c.integer("an integer"));
      out.push_back(v);
    } while (c.accept(","));
    TESSERA_TRY(c.expect(")"));
    return out;
  }

  Status outputs(LineCursor& c) {
    if (c.at_end()) return Status::ok();
    do {
      TESSERA_ASSIGN_OR_RETURN(std::string id, defined_node(c, "an output name"));
      graph_.outputs().push_back(std::move(id));
    } while (c.accept(","));
    return c.expect_end();
  }

  // The Torch IR reading of a one-line node, kept until the graph's stage is known.
  struct OneLineReading {
    std::unique_ptr<TorchOp> op;  // null when the line cannot be Torch IR
    std::vector<std::string> inputs;
    size_t forced_at = 0;         // nonzero: the column that makes the line Torch IR only
    const TextLine* line = nullptr;
  };

  const std::vector<TextLine>& lines_;
  const std::string& file_;
  const ParseLimits& limits_;
  size_t next_ = 0;
  Graph graph_;
  std::vector<std::pair<std::string, OneLineReading>> one_line_;
  const TextLine* forced_torch_line_ = nullptr;
  std::string forced_torch_reason_;  // set when that line names no Tensor IR function
};

}  // namespace

Expected<Graph> parse_graph(std::string_view text, const std::string& file, ParseLimits limits) {
  TESSERA_ASSIGN_OR_RETURN(auto lines, ir_text::split_lines(text, file, limits));
  return GraphReader(lines, file, limits).read();
}

}  // namespace tessera

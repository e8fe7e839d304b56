// Reading printed IR back: the inverse of print_graph (printer.h) and print_body (stmt.h).
//
// parse_graph reads what print_graph prints for a graph at the Torch, Tensor, Loop, Tile or Kernel
// stage: the declarations of inputs and constants, `# knobs:` lines, one-line Torch and Tensor IR
// nodes, `=== name(inputs) -> out: type ===` Loop IR blocks, `kernel ...` Tile and Kernel IR blocks
// (with the launch, cluster, dynamic shared memory and scalar / tensor-map parameters) with every
// statement kind, typed values and register arrays, and the `return` line. For every such
// printout, print_graph(parse_graph(text)) == text, and the parsed graph is the printed one field
// for field: what the text leaves implicit is derived (a name in an expression is a Value when an
// SSA definition or a floating-point scalar parameter binds it, else a Var; a value without a type
// prefix is f32). An elementwise call prints the same in Torch and Tensor IR: a graph is read as
// Torch IR when one of its lines can only be Torch IR, else as Tensor IR (docs/ir.md). CUDA blocks
// do not parse back (use the JSON form). The grammar is in docs/ir.md.
//
// Errors are located values: `file:line:col: error: expected ...` with the line and a caret.
// Input size is bounded by ParseLimits (nesting depth, line count), so no input can exhaust the
// stack.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera {

struct ParseLimits {
  int max_depth = 64;               // nested bodies, and nested parentheses in one expression
  size_t max_lines = 4'000'000;     // lines of one text
};

// A whole printed graph (Torch, Tensor, Loop, Tile or Kernel IR). Every buffer a statement names must be a graph
// node, a buffer the kernel declares (Stage, Smem, MbarrierInit) or a tensor-map parameter of the kernel.
Expected<Graph> parse_graph(std::string_view text, const std::string& file, ParseLimits limits = {});

// A printed statement list whose first level is not indented (what print_body(b, 0) prints).
// Buffer names are not checked: a body alone does not say which buffers exist. Names the body does
// not bind read as Vars.
Expected<Body> parse_body(std::string_view text, const std::string& file, ParseLimits limits = {});

// One printed expression (Expr::str's form), e.g. `a1 * 2048 + min(a0, 7)`. Every bare name reads
// as a Var (nothing binds it); `acc0[1, a3]` is an Element.
Expected<Expr> parse_expr(std::string_view text, const std::string& file, ParseLimits limits = {});

}  // namespace tessera

// JSON round-trip of a whole graph at any stage (dumps, reproducers, `compile --from-ir`).
// graph_from_json(graph_to_json(g)) is structurally equal to g and prints identically.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tessera/ir/graph.h"
#include "tessera/support/status.h"

namespace tessera {

// 2: typed values (ValueType fields, Value and Element expressions); 3: checkpoint constants
// (ConstantOp::checkpoint). Version 2 files still read.
constexpr int kGraphJsonVersion = 3;

nlohmann::json graph_to_json(const Graph& g);
Expected<Graph> graph_from_json(const nlohmann::json& j);

nlohmann::json expr_to_json(const Expr& e);
Expected<Expr> expr_from_json(const nlohmann::json& j);
nlohmann::json body_to_json(const Body& b);
Expected<Body> body_from_json(const nlohmann::json& j);

// Text helpers: serialize with two-space indentation / parse with a diagnostic naming `file`.
std::string graph_to_json_text(const Graph& g);
Expected<Graph> graph_from_json_text(const std::string& text, const std::string& file);

// Structural equality of whole graphs (ids, ops, types, choices, outputs).
bool structurally_equal(const Graph& a, const Graph& b);

}  // namespace tessera

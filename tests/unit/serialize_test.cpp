// JSON round-trips (every statement kind, expressions, graphs at every stage), graph equality, and
// the error paths of reading: each names the JSON path of the problem, and nothing throws.
#include "tessera/ir/serialize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "tessera/ir/printer.h"
#include "unit/ir_fixtures.h"

namespace tessera {
namespace {

using namespace ir_fixtures;
using json = nlohmann::json;

// A predicate for EXPECT_TRUE that prints both strings when the needle is missing.
::testing::AssertionResult Contains(const std::string& haystack, const std::string& needle) {
  if (haystack.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << needle << "' not found in:\n" << haystack;
}

// ---- bodies and expressions ----

TEST(SerializeBody, EveryStmtKindRoundTrips) {
  Body body = every_stmt_kind_body();
  // Through text as well, so number formatting is part of the round trip.
  json j = json::parse(body_to_json(body).dump());
  Expected<Body> back = body_from_json(j);
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(body, *back));
  EXPECT_EQ(structural_hash(body), structural_hash(*back));
  EXPECT_EQ(print_body(body), print_body(*back));
}

// Tile IR dumps written before warp specialization have no "producer": they read as no producer.
TEST(SerializeBody, TileWithoutAProducerKeyReadsAsNone) {
  json j = body_to_json({Tile{{TileAxis{"a0", 32, AxisBinding::Thread}}, {Init{"acc0", flt(0.0)}}}});
  ASSERT_EQ(j[0]["producer"], "none");
  j[0].erase("producer");
  Expected<Body> back = body_from_json(j);
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_EQ((*back)[0].as<Tile>()->producer, TileProducer::None);
  j[0]["producer"] = "warps";
  Expected<Body> bad = body_from_json(j);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("producer"), std::string::npos) << bad.error().message;
}

TEST(SerializeBody, StatementsAreObjectsKeyedByFieldName) {
  json j = body_to_json({Load{"in0", "x", {var("a0"), var("a1") * 4}, ValueType::scalar(DType::BF16)},
                         Accum{"acc0", CombineFn::Add, Expr::value("in0"), {Expr::int_(1), var("a0")}}});
  EXPECT_EQ(j, json::parse(R"([{"kind": "Load", "dst": "in0", "buffer": "x",
                                  "index": ["a0", ["Mul", "a1", 4]], "type": "bf16"},
                                 {"kind": "Accum", "acc": "acc0", "op": "add", "value": ["Value", "in0"],
                                  "index": [1, "a0"]}])"));
}

TEST(SerializeExpr, RoundTripsEveryShape) {
  std::vector<Expr> exprs = {
      var("threadIdx.x"),
      lit(-3),
      lit(std::numeric_limits<int64_t>::max()),
      flt(2048.0),
      flt(1e-06),
      flt(-0.0),
      flt(std::numeric_limits<double>::infinity()),
      flt(-std::numeric_limits<double>::infinity()),
      flt(std::nan("")),
      Expr::select(var("a0") < lit(4), var("x"), flt(0.5)),
      Expr::not_(var("m") <= lit(1)),
      Expr::cast(DType::BF16, var("v0")),
      Expr::min(var("a"), lit(7)) % lit(3) / lit(2),
      Expr::binary(ExprKind::And, var("p"), Expr::binary(ExprKind::Ne, var("q"), lit(0)))};
  for (const Expr& e : exprs) {
    json j = json::parse(expr_to_json(e).dump());
    Expected<Expr> back = expr_from_json(j);
    ASSERT_TRUE(back) << e.str() << ": " << back.error().render();
    EXPECT_TRUE(structurally_equal(e, *back)) << e.str() << " vs " << back->str();
    EXPECT_EQ(e.str(), back->str());
  }
  EXPECT_EQ(expr_to_json(Expr()), json(nullptr));
  Expected<Expr> undefined = expr_from_json(json(nullptr));
  ASSERT_TRUE(undefined);
  EXPECT_FALSE(undefined->defined());
}

TEST(SerializeExpr, FloatsStayFloats) {
  Expected<Expr> back = expr_from_json(json::parse(expr_to_json(flt(2.0)).dump()));
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->is(ExprKind::Float));
  EXPECT_EQ(expr_to_json(flt(std::numeric_limits<double>::infinity())).dump(),
            R"({"float":"inf"})");
}

TEST(SerializeExpr, MalformedExpressionsAreErrors) {
  struct Case {
    const char* json_text;
    const char* message;
  };
  for (const Case& c :
       std::vector<Case>{{R"(["Add", "a0"])", "Add takes 2 operand(s), got 1"},
                         {R"(["Frobnicate", 1, 2])", "unknown expression kind 'Frobnicate'"},
                         {R"(["Var", "a0"])", "unknown expression kind 'Var'"},
                         {R"(["Cast", "f128", "a0"])", "unknown dtype 'f128'"},
                         {R"(["Add", null, 1])", "operand must not be null"},
                         {R"([])", "expected [kind, operands...]"},
                         {R"(true)", "expected an expression, got boolean"},
                         {R"({"float": "huge"})", "unknown float value 'huge'"},
                         {R"(18446744073709551615)", "integer out of range"}}) {
    Expected<Expr> e = expr_from_json(json::parse(c.json_text));
    ASSERT_FALSE(e) << c.json_text;
    EXPECT_TRUE(Contains(e.error().message, c.message)) << c.json_text;
  }
}

TEST(SerializeExpr, DeepNestingIsAnErrorNotACrash) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "[\"Add\", ";
  text += "\"a0\"";
  for (int i = 0; i < 5000; ++i) text += ", 1]";
  Expected<Expr> e = expr_from_json(json::parse(text));
  ASSERT_FALSE(e);
  EXPECT_TRUE(Contains(e.error().message, "nested too deeply"));
}

TEST(SerializeBody, DeeplyNestedStatementsAreAnErrorNotACrash) {
  std::string text;
  const int depth = 2000;
  for (int i = 0; i < depth; ++i) {
    text +=
        R"([{"kind": "Loop", "var": "a", "begin": 0, "end": 1, "role": "", "unroll": 0, "body": )";
  }
  text += "[]";
  for (int i = 0; i < depth; ++i) text += "}]";
  Expected<Body> body = body_from_json(json::parse(text));
  ASSERT_FALSE(body);
  EXPECT_TRUE(Contains(body.error().message, "statements nested too deeply"));
}

TEST(SerializeBody, EnumeratedFieldsAreStoredAsTheirPrintedSpelling) {
  json j = body_to_json({Combine{"acc0", CombineFn::Max, CombineScope::Warp},
                         WarpShuffle{"v0", Expr::value("acc0"), ShuffleMode::Down, 1, 32}});
  EXPECT_EQ(j[0]["scope"], "warp");
  EXPECT_EQ(j[1]["mode"], "down");
  j[1]["mode"] = "sideways";
  Expected<Body> bad = body_from_json(j);
  ASSERT_FALSE(bad);
  EXPECT_TRUE(Contains(bad.error().message, "at <root>[1].mode: 'sideways' is not a shuffle mode (xor, down, up, idx)"));
}

TEST(SerializeBody, WrongShapesAreErrors) {
  Expected<Body> not_array = body_from_json(json::object());
  ASSERT_FALSE(not_array);
  EXPECT_TRUE(Contains(not_array.error().message, "at <root>: expected an array, got object"));
  Expected<Body> object_expr =
      body_from_json(json::parse(R"([{"kind": "Init", "acc": "acc0", "value": {"int": 3}}])"));
  ASSERT_FALSE(object_expr);
  EXPECT_TRUE(Contains(object_expr.error().message,
                       "at <root>[0].value: expected an expression, got object"));
  Expected<Body> null_stmt = body_from_json(json::parse("[null]"));
  ASSERT_FALSE(null_stmt);
  EXPECT_TRUE(
      Contains(null_stmt.error().message, "at <root>[0]: expected a statement object, got null"));
}

// ---- graphs ----

void expect_graph_round_trips(const Graph& g) {
  std::string text = graph_to_json_text(g);
  Expected<Graph> back = graph_from_json_text(text, "graph.json");
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(g, *back));
  EXPECT_EQ(print_graph(g), print_graph(*back));
  EXPECT_EQ(graph_to_json_text(*back), text);
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g.nodes()[i]->loc.str(), back->nodes()[i]->loc.str());
  }
}

TEST(SerializeGraph, TorchRoundTrips) { expect_graph_round_trips(torch_graph()); }
TEST(SerializeGraph, TensorRoundTrips) { expect_graph_round_trips(tensor_graph()); }
TEST(SerializeGraph, LoopRoundTrips) { expect_graph_round_trips(loop_graph()); }
TEST(SerializeGraph, TileRoundTrips) { expect_graph_round_trips(tile_graph()); }
TEST(SerializeGraph, KernelRoundTrips) { expect_graph_round_trips(kernel_graph()); }
TEST(SerializeGraph, CudaRoundTrips) { expect_graph_round_trips(cuda_graph()); }

TEST(SerializeGraph, SourceLocationsAndSpecialValuesRoundTrip) {
  Graph g = torch_graph();
  g.find("add")->loc = SourceLoc{"<-c>", 1, 10, 5};
  auto constant = std::make_unique<ConstantOp>();
  constant->values = {std::numeric_limits<double>::infinity(), -0.0, 1e-300};
  constant->init = "values";
  g.add("c", std::move(constant), {}, f32({3}));
  g.find("matmul")->op_as<TorchOp>()->attrs.set("eps", 1e-06);
  g.find("matmul")->op_as<TorchOp>()->attrs.set("dims", std::vector<int64_t>{0, 2, 1});
  g.find("matmul")->op_as<TorchOp>()->attrs.set("approximate", std::string("tanh"));
  g.find("matmul")->op_as<TorchOp>()->attrs.set("scale", 2.0);  // a double, not an int
  expect_graph_round_trips(g);
}

TEST(SerializeGraph, JsonCarriesTheVersion) {
  EXPECT_EQ(graph_to_json(loop_graph())["version"], kGraphJsonVersion);
}

// A checkpoint constant is a reference (file, size, time; the tensor is its path): JSON keeps it
// exactly, and a graph without one reads from version 2 JSON as before.
TEST(SerializeGraph, CheckpointConstantsRoundTrip) {
  Graph g = torch_graph();
  auto constant = std::make_unique<ConstantOp>();
  constant->path = "model.layers.0.mlp.up_proj.weight";
  constant->checkpoint = CheckpointRef{"/models/tiny llama/model.safetensors", 2200119864, 1732490113123456789};
  g.add("p_up", std::move(constant), {}, f32({5632, 2048}));
  expect_graph_round_trips(g);
  const json j = graph_to_json(g);
  const json& op = j["nodes"].back()["op"];
  EXPECT_EQ(op["checkpoint"], json({{"file", "/models/tiny llama/model.safetensors"},
                                    {"file_bytes", 2200119864},
                                    {"modified_ns", 1732490113123456789}}));
  EXPECT_TRUE(op["values"].empty());  // no data in the program

  Graph other_time = g;
  other_time.find("p_up")->op_as<ConstantOp>()->checkpoint->modified_ns += 1;
  EXPECT_FALSE(structurally_equal(g, other_time));
  Graph copied = g;
  copied.find("p_up")->op_as<ConstantOp>()->checkpoint.reset();
  EXPECT_FALSE(structurally_equal(g, copied));

  json old = graph_to_json(torch_graph());
  old["version"] = 2;
  Expected<Graph> back = graph_from_json(old);
  ASSERT_TRUE(back) << back.error().render();
  EXPECT_TRUE(structurally_equal(*back, torch_graph()));
  old["version"] = 1;
  back = graph_from_json(old);
  ASSERT_FALSE(back);
  EXPECT_TRUE(Contains(back.error().message, "unsupported graph JSON version 1 (this build reads versions 2 and 3)"))
      << back.error().message;

  json bad = j;
  bad["nodes"].back()["op"]["checkpoint"].erase("modified_ns");
  back = graph_from_json(bad);
  ASSERT_FALSE(back);
  EXPECT_TRUE(Contains(back.error().message, "missing key 'modified_ns'")) << back.error().message;
  bad = j;
  bad["nodes"].back()["op"]["checkpoint"]["sha"] = "x";
  EXPECT_FALSE(graph_from_json(bad));
}

TEST(GraphEquality, DetectsEachKindOfDifference) {
  const Graph base = kernel_graph();
  EXPECT_TRUE(structurally_equal(base, kernel_graph()));
  std::vector<std::pair<std::string, std::function<void(Graph&)>>> edits = {
      {"id", [](Graph& g) {  // renamed through the graph: a copy under the new id takes its uses
         const Node& first = *g.nodes()[0];
         const std::string old = first.id();
         ASSERT_TRUE(g.insert_before(old, old + "0", first.op->clone(), first.inputs.ids(), first.type));
         g.replace_uses(old, old + "0");
         ASSERT_TRUE(g.erase(old));
       }},
      {"inputs", [](Graph& g) {
         std::vector<std::string> inputs = g.find("rms_norm")->inputs;
         inputs.pop_back();
         g.find("rms_norm")->inputs = inputs;
       }},
      {"type", [](Graph& g) { g.find("rms_norm")->type.dtype = DType::F16; }},
      {"choice", [](Graph& g) { g.find("rms_norm")->choices[0].source = "tuner"; }},
      {"outputs", [](Graph& g) { g.outputs().push_back("x"); }},
      {"grid", [](Graph& g) { g.find("rms_norm")->op_as<KernelOp>()->grid[0] = 16; }},
      {"body", [](Graph& g) { g.find("rms_norm")->op_as<KernelOp>()->body.pop_back(); }},
      {"constant seed", [](Graph& g) { g.find("p_weight")->op_as<ConstantOp>()->seed = 12; }},
      {"op kind", [](Graph& g) { g.find("x")->op = std::make_unique<ConstantOp>(); }},
  };
  for (auto& [what, edit] : edits) {
    Graph changed = base;
    edit(changed);
    EXPECT_FALSE(structurally_equal(base, changed)) << what;
    EXPECT_FALSE(structurally_equal(changed, base)) << what;
  }
}

// ---- reading errors ----

// Applies `edit` to the JSON of `g` and expects graph_from_json to fail with `message`.
void expect_read_error(const Graph& g, const std::function<void(json&)>& edit,
                       const std::string& message) {
  json j = graph_to_json(g);
  edit(j);
  Expected<Graph> back = graph_from_json(j);
  ASSERT_FALSE(back) << "accepted: " << j.dump();
  EXPECT_TRUE(Contains(back.error().message, message));
}

TEST(SerializeGraphErrors, NameTheJsonPath) {
  // x, p_weight, rms_norm: the kernel is node 2.
  const Graph g = kernel_graph();
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["op"]["body"][0]["value"] = true; },
      "at nodes[2].op.body[0].value: expected an expression, got boolean");
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["op"]["body"][4]["body"][0]["src_index"] = 3; },
      "at nodes[2].op.body[4].body[0].src_index: expected an array, got number");
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["op"]["body"][1]["kind"] = "Lett"; },
      "at nodes[2].op.body[1].kind: unknown statement kind 'Lett'");
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["op"]["body"][2].erase("value"); },
      "at nodes[2].op.body[2]: missing key 'value'");
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["op"]["body"][2]["valeu"] = 1; },
      "at nodes[2].op.body[2]: unknown key 'valeu'");
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["op"]["body"][3]["dtype"] = "f8"; },
      "at nodes[2].op.body[3].dtype: unknown dtype 'f8'");
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["op"]["grid"][0] = "32"; },
      "at nodes[2].op.grid[0]: expected an integer, got string");
  expect_read_error(
      g, [](json& j) { j["nodes"][1]["op"]["kind"] = "parameter"; },
      "at nodes[1].op.kind: unknown op kind 'parameter'");
  expect_read_error(
      g, [](json& j) { j["nodes"][1]["op"]["seed"] = -1; },
      "at nodes[1].op.seed: expected a non-negative integer");
  expect_read_error(
      g, [](json& j) { j["nodes"][0]["type"]["shape"][0] = 1.5; },
      "at nodes[0].type.shape[0]: expected an integer, got number");
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["choices"][0]["value"] = nullptr; },
      "at nodes[2].choices[0].value: expected an attribute value, got null");
  expect_read_error(
      g, [](json& j) { j["nodes"][2]["extra"] = 1; }, "at nodes[2]: unknown key 'extra'");
}

TEST(SerializeGraphErrors, GraphStructure) {
  const Graph g = tensor_graph();
  expect_read_error(
      g, [](json& j) { j["version"] = 4; },
      "unsupported graph JSON version 4 (this build reads versions 2 and 3)");
  // Version 1 predates typed values: rejected by version, not read with guessed types.
  expect_read_error(
      g, [](json& j) { j["version"] = 1; },
      "unsupported graph JSON version 1 (this build reads versions 2 and 3)");
  expect_read_error(
      g, [](json& j) { j.erase("version"); }, "missing key 'version'");
  expect_read_error(
      g, [](json& j) { j["nodes"] = json::object(); }, "at nodes: expected an array, got object");
  expect_read_error(
      g, [](json& j) { j["nodes"][1]["id"] = "x"; }, "at nodes[1].id: duplicate node id 'x'");
  expect_read_error(
      g, [](json& j) { j["nodes"][5]["inputs"][0] = "relu"; },
      "at nodes[5].inputs[0]: input 'relu' is not a node defined before 'bias_bc'");
  expect_read_error(
      g, [](json& j) { j["outputs"][1] = "nope"; }, "at outputs[1]: output 'nope' is not a node");
  expect_read_error(
      g, [](json& j) { j["nodes"][0]["id"] = ""; }, "at nodes[0].id: empty node id");
  expect_read_error(
      g, [](json& j) { j["comment"] = "hi"; }, "at <root>: unknown key 'comment'");
  expect_read_error(
      g, [](json& j) { j = json::array(); }, "expected an object, got array");
  expect_read_error(
      g, [](json& j) { j["nodes"][5]["op"]["sources"][0]["index"] = nullptr; },
      "at nodes[5].op.sources[0].index: expected an array, got null");
  expect_read_error(
      g, [](json& j) { j["nodes"][9]["op"]["attrs"] = 1; }, "at nodes[9].op: unknown key 'attrs'");
}

TEST(SerializeGraphErrors, TorchAttributes) {
  const Graph g = torch_graph();  // x, bias, w, add, matmul, ...
  expect_read_error(
      g, [](json& j) { j["nodes"][4]["op"]["attrs"][0] = json::array({"has_bias"}); },
      "at nodes[4].op.attrs[0]: expected a [key, value] pair");
  expect_read_error(
      g,
      [](json& j) {
        j["nodes"][4]["op"]["attrs"].push_back(json::array({"has_bias", true}));
      },
      "at nodes[4].op.attrs[1]: duplicate attribute 'has_bias'");
  expect_read_error(
      g,
      [](json& j) {
        j["nodes"][4]["op"]["attrs"][0][1] = json::array({1, "a"});
      },
      "at nodes[4].op.attrs[0][1][1]: expected an integer, got string");
}

TEST(SerializeGraphErrors, TextErrorsPointAtLineAndColumn) {
  Expected<Graph> g =
      graph_from_json_text("{\n  \"version\": 2,\n  \"nodes\": [,]\n}\n", "bad.json");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().loc.file, "bad.json");
  EXPECT_EQ(g.error().loc.line, 3);
  EXPECT_EQ(g.error().loc.col, 13);
  EXPECT_TRUE(Contains(g.error().render(), "bad.json:3:13: error: invalid JSON"));
  EXPECT_TRUE(Contains(g.error().render(), "  \"nodes\": [,]\n"));

  Expected<Graph> semantic =
      graph_from_json_text(R"({"version": 2, "nodes": [], "outputs": ["y"]})", "out.json");
  ASSERT_FALSE(semantic);
  EXPECT_TRUE(
      Contains(semantic.error().render(), "out.json: error: malformed IR JSON at outputs[0]"));
}

// Replaces every value of the document, one at a time, by values of the wrong type: reading must
// always return (a graph or an error) and never throw or crash.
TEST(SerializeGraphErrors, NoMutationOfAValidDocumentThrows) {
  const json valid = graph_to_json(tile_graph());
  std::vector<json::json_pointer> pointers;
  std::function<void(const json&, const json::json_pointer&)> walk =
      [&](const json& j, const json::json_pointer& at) {
        pointers.push_back(at);
        if (j.is_object()) {
          for (const auto& [key, value] : j.items()) walk(value, at / key);
        } else if (j.is_array()) {
          for (size_t i = 0; i < j.size(); ++i) walk(j[i], at / i);
        }
      };
  walk(valid, json::json_pointer());
  const std::vector<json> replacements = {
      nullptr, true, -1, 2.5, "zz", json::array(), json::object(), json::array({"Add", 1})};
  size_t rejected = 0;
  for (const auto& pointer : pointers) {
    for (const json& replacement : replacements) {
      json j = valid;
      j[pointer] = replacement;
      Expected<Graph> g(make_error("unset"));
      EXPECT_NO_THROW(g = graph_from_json(j)) << pointer.to_string();
      if (!g) ++rejected;
    }
  }
  EXPECT_GT(rejected, pointers.size());
}

TEST(SerializeGraphErrors, GarbageTextIsAnError) {
  for (const char* text : {"", "nul", "[1, 2", "\"just a string\"", "{\"version\": 1}"}) {
    Expected<Graph> g = graph_from_json_text(text, "g.json");
    EXPECT_FALSE(g) << text;
  }
}

}  // namespace
}  // namespace tessera

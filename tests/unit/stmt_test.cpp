// Stmt machinery: kind names, structural equality and hash (one differing field at a time, for
// every field of every kind), the visitor, the mutator (sharing of unchanged subtrees, splicing)
// and canonical renaming.
#include "tessera/ir/stmt.h"

#include <gtest/gtest.h>

#include <type_traits>
#include <variant>

#include "tessera/ir/parser.h"
#include "unit/ir_fixtures.h"

namespace tessera {
namespace {

using namespace ir_fixtures;

// Every statement of `body`, depth-first in textual order.
void collect_stmts(const Body& body, std::vector<Stmt>& out) {
  for (const Stmt& s : body) {
    out.push_back(s);
    std::visit(
        [&](const auto& node) {
          using K = std::decay_t<decltype(node)>;
          if constexpr (!std::is_same_v<K, std::monostate>) {
            K::reflect(node, [&](const char*, const auto& field, FieldRole) {
              if constexpr (std::is_same_v<std::decay_t<decltype(field)>, Body>) {
                collect_stmts(field, out);
              }
            });
          }
        },
        s.variant());
  }
}

// ---- perturbing one field (a different value of the same type) ----

void perturb(std::string& s) { s += "_x"; }
void perturb(int64_t& v) { v += 1; }
void perturb(DType& t) { t = t == DType::F32 ? DType::F16 : DType::F32; }
void perturb(ValueType& t) { t.dtype = t.dtype == DType::F32 ? DType::BF16 : DType::F32; }
// An enumerated field: the next value of its table, wrapping around.
template <StmtEnum E> void perturb(E& e) {
  const auto& entries = StmtEnumTable<E>::entries;
  for (size_t i = 0; i < std::size(entries); ++i)
    if (entries[i].first == e) {
      e = entries[(i + 1) % std::size(entries)].first;
      return;
    }
}
void perturb(Expr& e) { e = e.defined() ? e + lit(1) : lit(1); }
template <class T>
void perturb(std::vector<T>& items) {
  items.push_back(T{});
}

size_t field_count(const Stmt& s) {
  size_t n = 0;
  std::visit(
      [&](const auto& node) {
        using K = std::decay_t<decltype(node)>;
        if constexpr (!std::is_same_v<K, std::monostate>) {
          K::reflect(node, [&](const char*, const auto&, FieldRole) { ++n; });
        }
      },
      s.variant());
  return n;
}

// A copy of `s` whose field number `index` holds a different value; `name` receives its name.
Stmt with_field_perturbed(const Stmt& s, size_t index, std::string& name) {
  Stmt result;
  std::visit(
      [&](const auto& node) {
        using K = std::decay_t<decltype(node)>;
        if constexpr (!std::is_same_v<K, std::monostate>) {
          K copy = node;
          size_t i = 0;
          K::reflect(copy, [&](const char* field_name, auto& field, FieldRole) {
            if (i++ == index) {
              perturb(field);
              name = field_name;
            }
          });
          result = Stmt(std::move(copy));
        }
      },
      s.variant());
  return result;
}

TEST(StmtKinds, NamesRoundTripThroughTheXMacro) {
  size_t count = 0;
#define TESSERA_X(K)                                          \
  EXPECT_EQ(stmt_kind_name(StmtKind::K), #K);                 \
  EXPECT_EQ(parse_stmt_kind(#K), std::optional(StmtKind::K)); \
  EXPECT_EQ(Stmt(K{}).kind(), StmtKind::K);                   \
  ++count;
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  EXPECT_EQ(count, 39u);
  EXPECT_EQ(parse_stmt_kind("load"), std::nullopt);  // names are case-sensitive
  EXPECT_EQ(parse_stmt_kind("Bogus"), std::nullopt);
}

TEST(StmtEquality, SeparatelyBuiltEqualBodiesAreEqualWithEqualHashes) {
  Body a = every_stmt_kind_body();
  Body b = every_stmt_kind_body();
  ASSERT_FALSE(a[0].same_node(b[0]));
  EXPECT_TRUE(structurally_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

TEST(StmtEquality, EveryFieldOfEveryKindTakesPartInEqualityAndHash) {
  std::vector<Stmt> stmts;
  collect_stmts(every_stmt_kind_body(), stmts);
  size_t checked = 0;
  for (const Stmt& s : stmts) {
    for (size_t i = 0; i < field_count(s); ++i) {
      std::string field;
      Stmt changed = with_field_perturbed(s, i, field);
      SCOPED_TRACE(std::string(stmt_kind_name(s.kind())) + "." + field);
      EXPECT_FALSE(structurally_equal(s, changed));
      EXPECT_FALSE(structurally_equal(changed, s));
      EXPECT_NE(structural_hash(s), structural_hash(changed));
      ++checked;
    }
  }
  EXPECT_GT(checked, 80u);
}

TEST(StmtEquality, NestedStructFieldsAreCompared) {
  Tile a{{TileAxis{"a0", 256, AxisBinding::Thread}}, {}};
  Tile b{{TileAxis{"a0", 256, AxisBinding::Block}}, {}};
  Stage c{"s", "x", {}, {SlabDim{"a2", 2048, 2}}, StageTransport::Sync, 0};
  Stage d{"s", "x", {}, {SlabDim{"a2", 2048, 1}}, StageTransport::Sync, 0};
  EXPECT_FALSE(structurally_equal(Stmt(a), Stmt(b)));
  EXPECT_NE(structural_hash(Stmt(a)), structural_hash(Stmt(b)));
  EXPECT_FALSE(structurally_equal(Stmt(c), Stmt(d)));
  EXPECT_NE(structural_hash(Stmt(c)), structural_hash(Stmt(d)));
}

TEST(StmtEquality, DifferentKindsWithEqualFieldsDiffer) {
  EXPECT_FALSE(structurally_equal(Stmt(CpAsyncWait{0}), Stmt(AsyncWait{0})));
  EXPECT_NE(structural_hash(Stmt(CpAsyncWait{0})), structural_hash(Stmt(AsyncWait{0})));
  EXPECT_FALSE(structurally_equal(Stmt(Sync{}), Stmt(CpAsyncCommit{})));
}

TEST(StmtEquality, DeepChangeChangesTheBody) {
  Body a = loop_graph().nodes().back()->op_as<LoopOp>()->body;
  Body b = a;
  EXPECT_TRUE(structurally_equal(a, b));
  // Statement order matters.
  Body swapped = {Assign{"v0", ElementwiseFn::Add, {var("x"), var("y")}}, Sync{}};
  Body unswapped = {Sync{}, Assign{"v0", ElementwiseFn::Add, {var("x"), var("y")}}};
  EXPECT_FALSE(structurally_equal(swapped, unswapped));
  EXPECT_NE(structural_hash(swapped), structural_hash(unswapped));
}

TEST(StmtEquality, UndefinedStatements) {
  EXPECT_TRUE(structurally_equal(Stmt(), Stmt()));
  EXPECT_FALSE(structurally_equal(Stmt(), Stmt(Sync{})));
  EXPECT_EQ(structural_hash(Stmt()), structural_hash(Stmt()));
  EXPECT_NE(structural_hash(Stmt()), structural_hash(Stmt(Sync{})));
}

TEST(StmtEquality, HashIsStableAcrossRuns) {
  // The hash keys the tuning database, so it must not change between processes or builds.
  Body body = {Load{"in0", "x", {var("a0")}}};
  EXPECT_EQ(structural_hash(body), structural_hash(Body{Load{"in0", "x", {var("a0")}}}));
  EXPECT_NE(structural_hash(body), 0u);
}

// ---- visitor ----

class KindRecorder : public StmtVisitor {
 public:
  std::vector<std::string> seen;
#define TESSERA_X(K)                    \
  void visit_##K(const K& s) override { \
    seen.emplace_back(#K);              \
    StmtVisitor::visit_##K(s);          \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
};

TEST(StmtVisitor, VisitsDepthFirstInTextualOrder) {
  KindRecorder recorder;
  recorder.visit(loop_graph().nodes().back()->op_as<LoopOp>()->body);
  std::vector<std::string> expected = {"Loop", "Loop",   "Init",   "Loop",  "Load",   "Load",
                                       "Load", "Assign", "Assign", "Accum", "Assign", "Write"};
  EXPECT_EQ(recorder.seen, expected);
}

TEST(StmtVisitor, VisitsBothBranchesOfCond) {
  KindRecorder recorder;
  recorder.visit(Stmt(Cond{var("a0") < lit(4), {Sync{}}, {CpAsyncCommit{}}}));
  EXPECT_EQ(recorder.seen, (std::vector<std::string>{"Cond", "Sync", "CpAsyncCommit"}));
}

class LoadCounter : public StmtVisitor {
 public:
  int loads = 0;
  void visit_Load(const Load&) override { ++loads; }
  // Not descending into loops: overriding without calling the default stops the walk.
  void visit_Loop(const Loop&) override {}
};

TEST(StmtVisitor, OverrideWithoutDefaultStopsDescent) {
  LoadCounter counter;
  Body body = {Load{"in0", "x", {}}, Loop{"a0", lit(0), lit(4), LoopRole::Free, 0, {Load{"in1", "x", {}}}}};
  counter.visit(body);
  EXPECT_EQ(counter.loads, 1);
}

// ---- mutator ----

TEST(StmtMutator, IdentityKeepsEveryNode) {
  Body body = every_stmt_kind_body();
  StmtMutator identity;
  Body out = identity.mutate_body(body);
  ASSERT_EQ(out.size(), body.size());
  for (size_t i = 0; i < body.size(); ++i) EXPECT_TRUE(out[i].same_node(body[i])) << i;
}

class VarRenamer : public StmtMutator {
 public:
  VarRenamer(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  Expr mutate_expr(const Expr& e) override { return substitute(e, {{from_, var(to_)}}); }

 private:
  std::string from_, to_;
};

TEST(StmtMutator, RewritesOnlyThePathToTheChangeAndSharesTheRest) {
  Body body = loop_graph().nodes().back()->op_as<LoopOp>()->body;
  VarRenamer renamer("v1", "v9");  // used only by `acc0 <- add(acc0, v1)`
  Body out = renamer.mutate_body(body);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].same_node(body[0]));  // ancestors are rebuilt
  const Loop& a1_old = *body[0].as<Loop>()->body[0].as<Loop>();
  const Loop& a1_new = *out[0].as<Loop>()->body[0].as<Loop>();
  EXPECT_TRUE(a1_new.body[0].same_node(a1_old.body[0]));  // Init: untouched sibling
  EXPECT_TRUE(a1_new.body[2].same_node(a1_old.body[2]));  // v2 = relu(acc0)
  EXPECT_TRUE(a1_new.body[3].same_node(a1_old.body[3]));  // the Write
  const Body& reduce_old = a1_old.body[1].as<Loop>()->body;
  const Body& reduce_new = a1_new.body[1].as<Loop>()->body;
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(reduce_new[i].same_node(reduce_old[i])) << i;
  EXPECT_FALSE(reduce_new[5].same_node(reduce_old[5]));
  EXPECT_EQ(print_stmt(reduce_new[5]), "acc0 <- add(acc0, v9)\n");
  EXPECT_EQ(print_stmt(reduce_new[4]), "v1 = mul(v0, in2)\n");  // a def is not an Expr
}

TEST(StmtMutator, UnusedVariableLeavesEverythingShared) {
  Body body = every_stmt_kind_body();
  VarRenamer renamer("not_there", "x");
  Body out = renamer.mutate_body(body);
  for (size_t i = 0; i < body.size(); ++i) EXPECT_TRUE(out[i].same_node(body[i])) << i;
}

class SyncDropperInitDoubler : public StmtMutator {
 public:
  Body mutate_body(const Body& b) override {
    Body out;
    for (const Stmt& s : b) {
      if (s.is<Sync>()) continue;
      Stmt m = mutate(s);
      if (const Init* init = m.as<Init>()) out.push_back(Init{init->acc + "_copy", init->value});
      out.push_back(m);
    }
    return out;
  }
};

TEST(StmtMutator, MutateBodyCanDropAndSpliceAtEveryDepth) {
  Body body = {Sync{}, Loop{"a0", lit(0), lit(2), LoopRole::Free, 0, {Init{"acc0", flt(0.0)}, Sync{}}}};
  SyncDropperInitDoubler m;
  EXPECT_EQ(print_body(m.mutate_body(body)),
            "for a0 in 0..2:  # free\n"
            "  acc0_copy = init(0.0)\n"
            "  acc0 = init(0.0)\n");
}

class LoadRedirector : public StmtMutator {
 public:
  Stmt mutate_Load(const Load& s, const Stmt& self) override {
    if (s.buffer != "x") return self;
    Load copy = s;
    copy.buffer = "x_smem";
    return copy;
  }
};

TEST(StmtMutator, KindHookReplacesStatements) {
  Body body = {Load{"in0", "x", {var("a0")}}, Load{"in1", "w", {var("a0")}}};
  LoadRedirector m;
  Body out = m.mutate_body(body);
  EXPECT_EQ(print_body(out), "in0 = load x_smem[a0]\nin1 = load w[a0]\n");
  EXPECT_TRUE(out[1].same_node(body[1]));
}

// ---- printing of individual forms the goldens do not pin down ----

TEST(StmtPrinter, IndentCountsLevels) {
  Body body = {Loop{"a0", lit(0), lit(2), LoopRole::None, 0, {Sync{}}}};
  EXPECT_EQ(print_body(body, 1), "  for a0 in 0..2:\n    Sync()\n");
}

TEST(StmtPrinter, DefaultsArePrintedOnlyWhenTheyDiffer) {
  EXPECT_EQ(print_stmt(Loop{"a0", lit(0), lit(2), LoopRole::None, 2, {}}), "for a0 in 0..2:  # unroll 2\n");
  EXPECT_EQ(print_stmt(Stage{"s", "x", {lit(0)}, {SlabDim{"a1", 8, 0}}, StageTransport::Sync, 0}),
            "s = Stage(x, origin=(0), slab=(a1:8@0))\n");
  EXPECT_EQ(print_stmt(Stage{"s", "x", {lit(0)}, {SlabDim{"a1", 8, 0}}, StageTransport::Tma, 1}),
            "s = Stage(x, origin=(0), slab=(a1:8@0)) tma pad=1\n");
  EXPECT_EQ(print_stmt(Combine{"acc0", CombineFn::Max, CombineScope::Block}), "Combine(acc0, op=max)\n");
  EXPECT_EQ(print_stmt(MbarrierArrive{"bar0", Expr::int_(0), 0}), "MbarrierArrive(bar0)\n");
  EXPECT_EQ(print_stmt(Cond{var("a0") < lit(1), {Sync{}}, {}}), "if a0 < 1:\n  Sync()\n");
  EXPECT_EQ(print_stmt(Stmt()), "<undefined statement>\n");
}

// ---- name queries and renaming ----

// A reduction with an element-wise epilogue, parsed from its printout.
Body reduction_body() {
  Expected<Body> body = parse_body(
      "for a0 in 0..16:  # free\n"
      "  acc0 = init(0.0)\n"
      "  for a1 in 0..64:  # reduce\n"
      "    in0 = load x[a0, a1]\n"
      "    v0 = mul(in0, in0)\n"
      "    acc0 <- add(acc0, v0)\n"
      "  v1 = sqrt(acc0)\n"
      "  y[a0] = v1\n",
      "<test>");
  EXPECT_TRUE(body) << body.error().render();
  return body ? *body : Body{};
}

TEST(NameQueries, DefinedNamesInOrderOfDefinition) {
  EXPECT_EQ(defined_names(reduction_body()), (std::vector<std::string>{"a0", "acc0", "a1", "in0", "v0", "v1"}));
}

TEST(NameQueries, UsedNamesAreReadNamesNotBuffers) {
  EXPECT_EQ(used_names(reduction_body()), (std::set<std::string>{"a0", "a1", "acc0", "in0", "v0", "v1"}));
  // Names read but bound elsewhere are included; a body that only defines reads nothing.
  Body free_read = {Write{"y", {var("t")}, var("u")}};
  EXPECT_EQ(used_names(free_read), (std::set<std::string>{"t", "u"}));
}

// One statement's own fields, from the reflect lists: every kind that binds a name is seen (the
// StridedLoop axis, a shuffled value, a shared buffer), and nested bodies are not.
TEST(NameQueries, OwnBoundAndUsedNamesOfOneStatement) {
  const Stmt strided = StridedLoop{"k", var("t"), var("n"), lit(32), LoopRole::Reduce, 0,
                                   {Load{"a", "x", {var("k")}}, Accum{"acc0", CombineFn::Add, Expr::value("a")}}};
  EXPECT_EQ(own_bound_names(strided), (std::vector<std::string>{"k"}));
  EXPECT_EQ(own_used_names(strided), (std::set<std::string>{"t", "n"}));
  EXPECT_EQ(own_bound_names(WarpShuffle{"v0", Expr::value("acc0"), ShuffleMode::Xor, 16, 32}),
            (std::vector<std::string>{"v0"}));
  EXPECT_EQ(own_used_names(WarpShuffle{"v0", Expr::value("acc0"), ShuffleMode::Xor, 16, 32}),
            (std::set<std::string>{"acc0"}));
  EXPECT_EQ(own_bound_names(Smem{"x_smem", DType::F32, {2048}}), (std::vector<std::string>{"x_smem"}));
  EXPECT_EQ(own_used_names(Accum{"acc0", CombineFn::Add, Expr::value("v1")}), (std::set<std::string>{"acc0", "v1"}));
}

TEST(NameQueries, RenameNamesRenamesDefinitionsAndEveryUse) {
  const Body renamed = rename_names(reduction_body(), {{"a1", "k"}, {"acc0", "total"}, {"in0", "xv"}, {"x", "z"}});
  EXPECT_EQ(print_body(renamed),
            "for a0 in 0..16:  # free\n"
            "  total = init(0.0)\n"
            "  for k in 0..64:  # reduce\n"
            "    xv = load x[a0, k]\n"
            "    v0 = mul(xv, xv)\n"
            "    total <- add(total, v0)\n"
            "  v1 = sqrt(total)\n"
            "  y[a0] = v1\n")
      << "buffers (x) keep their names";
  EXPECT_TRUE(structurally_equal(rename_names(reduction_body(), {}), reduction_body()));
}

// ---- canonical names ----

TEST(CanonicalizeNames, RenamesByCategoryInTextualOrder) {
  Body body = {Loop{
      "i",
      lit(0),
      lit(16),
      LoopRole::Free,
      0,
      {Init{"sum", flt(0.0)},
       Loop{"k",
            lit(0),
            lit(64),
            LoopRole::Reduce,
            0,
            {Load{"xv", "x", {var("i"), var("k")}},
             Assign{"sq", ElementwiseFn::Mul, {var("xv"), var("xv")}}, Accum{"sum", CombineFn::Add, var("sq")}}},
       Assign{"out", ElementwiseFn::Sqrt, {var("sum")}}, Write{"y", {var("i")}, var("out")}}}};
  EXPECT_EQ(print_body(canonicalize_names(body)),
            "for a0 in 0..16:  # free\n"
            "  acc0 = init(0.0)\n"
            "  for a1 in 0..64:  # reduce\n"
            "    in0 = load x[a0, a1]\n"
            "    v0 = mul(in0, in0)\n"
            "    acc0 <- add(acc0, v0)\n"
            "  v1 = sqrt(acc0)\n"
            "  y[a0] = v1\n");
}

TEST(CanonicalizeNames, BodiesDifferingOnlyInBoundNamesBecomeEqual) {
  Body a = {Let{"row", var("blockIdx.x")}, Load{"p", "x", {var("row")}},
            Assign{"q", ElementwiseFn::Exp, {var("p")}}, Write{"y", {var("row")}, var("q")}};
  Body b = {Let{"r", var("blockIdx.x")}, Load{"in7", "x", {var("r")}},
            Assign{"t", ElementwiseFn::Exp, {var("in7")}}, Write{"y", {var("r")}, var("t")}};
  ASSERT_FALSE(structurally_equal(a, b));
  Body ca = canonicalize_names(a);
  Body cb = canonicalize_names(b);
  EXPECT_TRUE(structurally_equal(ca, cb));
  EXPECT_EQ(structural_hash(ca), structural_hash(cb));
  EXPECT_EQ(print_body(ca), print_body(cb));
  // Different buffers are not names: they keep bodies apart.
  Body c = b;
  c[1] = Load{"in7", "w", {var("r")}};
  EXPECT_FALSE(structurally_equal(canonicalize_names(c), ca));
}

TEST(CanonicalizeNames, IsIdempotent) {
  for (const Body& body :
       {every_stmt_kind_body(), tile_graph().nodes().back()->op_as<TileOp>()->body,
        kernel_graph().nodes().back()->op_as<KernelOp>()->body}) {
    Body once = canonicalize_names(body);
    Body twice = canonicalize_names(once);
    EXPECT_TRUE(structurally_equal(once, twice)) << print_body(once) << "\nvs\n"
                                                 << print_body(twice);
  }
}

TEST(CanonicalizeNames, KeepsBuffersHardwareIndicesAndFreeNames) {
  Body body = {Smem{"tile_smem", DType::F32, {64}}, Let{"t", var("threadIdx.x") + var("offset")},
               CpAsyncCopy{"tile_smem", {var("t")}, "x", {var("t")}, 4},
               Load{"val", "tile_smem", {var("t")}}};
  EXPECT_EQ(print_body(canonicalize_names(body)),
            "Smem tile_smem: f32[64]\n"
            "a0 = threadIdx.x + offset\n"
            "CpAsyncCopy(tile_smem[a0], x[a0], bytes=4)\n"
            "in0 = load tile_smem[a0]\n");
}

TEST(CanonicalizeNames, SiblingLoopsGetDistinctAxesAndDoNotLeak) {
  Body body = {
      StridedLoop{"k", var("t"), lit(64), lit(32), LoopRole::Reduce, 0, {Load{"a", "x", {var("k")}}}},
      StridedLoop{"k", var("t"), lit(64), lit(32), LoopRole::Free, 0, {Load{"a", "x", {var("k")}}}},
      Write{"y", {var("k")}, var("a")}};  // `k` and `a` are out of scope here
  EXPECT_EQ(print_body(canonicalize_names(body)),
            "StridedLoop(a0 = t; < 64; += 32):  # reduce\n"
            "  in0 = load x[a0]\n"
            "StridedLoop(a1 = t; < 64; += 32):  # free\n"
            "  in1 = load x[a1]\n"
            "y[k] = a\n");
}

TEST(CanonicalizeNames, LabelsFollowTheAxisTheyName) {
  // The Stage's slab names the loop axis that comes after it in the text.
  Body body = {Tile{
      {TileAxis{"tid", 256, AxisBinding::Thread}},
      {Stage{"x_smem", "x", {lit(0)}, {SlabDim{"k", 2048, 1}}, StageTransport::Sync, 0},
       StridedLoop{
           "k", var("tid"), lit(2048), lit(256), LoopRole::Reduce, 0, {Load{"e", "x_smem", {var("k")}}}}}}};
  EXPECT_EQ(print_body(canonicalize_names(body)),
            "Tile(axes=(a0:256=THREAD)):\n"
            "  x_smem = Stage(x, origin=(0), slab=(a1:2048@1))\n"
            "  StridedLoop(a1 = a0; < 2048; += 256):  # reduce\n"
            "    in0 = load x_smem[a1]\n");
}

TEST(CanonicalizeNames, VectorLoadDefinesEveryLane) {
  Body body = {VectorLoad{{"p", "q"}, "x", {var("threadIdx.x") * 2}},
               VectorStore{"y", {var("threadIdx.x") * 2}, {var("q"), var("p")}}};
  EXPECT_EQ(print_body(canonicalize_names(body)),
            "(in0, in1) = load2 x[threadIdx.x * 2]\n"
            "y[threadIdx.x * 2] = store2(in1, in0)\n");
}

// The traits table agrees with the structs: has_body exactly when a field is a Body, every kind
// belongs to some kernel dialect, and the collectives are the Tile IR schedule statements.
TEST(StmtKindTraits, AgreeWithTheStatementStructs) {
  int kinds = 0;
#define TESSERA_X(K)                                                                           \
  {                                                                                            \
    ++kinds;                                                                                   \
    K value{};                                                                                 \
    bool has_body = false;                                                                     \
    K::reflect(value, [&](const char*, auto& field, FieldRole) {                               \
      if constexpr (std::is_same_v<std::decay_t<decltype(field)>, Body>) has_body = true;      \
    });                                                                                        \
    const StmtKindTraits t = stmt_kind_traits(StmtKind::K);                                    \
    EXPECT_EQ(t.has_body, has_body) << #K;                                                     \
    EXPECT_NE(t.dialects, 0) << #K << " is accepted by no dialect";                            \
    if (t.collective) {                                                                        \
      EXPECT_EQ(t.dialects, kInTile) << #K << ": collectives are Tile IR only";                 \
    }                                                                                          \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
  EXPECT_EQ(kinds, static_cast<int>(std::variant_size_v<StmtVariant>) - 1);  // minus monostate
  EXPECT_TRUE(stmt_kind_traits(StmtKind::Stage).collective);
  EXPECT_FALSE(stmt_kind_traits(StmtKind::Sync).collective);
  EXPECT_EQ(stmt_kind_traits(StmtKind::Tile).dialects, kInTile);
}

}  // namespace
}  // namespace tessera

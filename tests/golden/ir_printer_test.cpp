// Golden tests of the IR printers: every statement kind (stmt_kinds.txt) and one graph per stage.
// Run with TESSERA_UPDATE_GOLDENS=1 to rewrite the files under tests/golden/ir/ and review the
// diff like code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "tessera/ir/printer.h"
#include "tessera/ir/stmt.h"
#include "tessera/support/unified_diff.h"
#include "unit/ir_fixtures.h"

namespace tessera {
namespace {

using namespace ir_fixtures;

std::string golden_path(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/golden/ir/" + name;
}

bool updating_goldens() {
  const char* update = std::getenv("TESSERA_UPDATE_GOLDENS");
  return update != nullptr && std::string(update) == "1";
}

void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = golden_path(name);
  if (updating_goldens()) {
    std::ofstream out(path, std::ios::binary);
    out << actual;
    ASSERT_TRUE(out.good()) << "could not write " << path;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing golden " << path
                         << " (run with TESSERA_UPDATE_GOLDENS=1 to create it)";
  std::stringstream expected;
  expected << in.rdbuf();
  // Only the diff: gtest's own dump of two whole printouts would bury it.
  if (expected.str() != actual) {
    ADD_FAILURE() << "printout differs from " << path << " (--- golden, +++ actual):\n"
                  << unified_diff(expected.str(), actual)
                  << "run with TESSERA_UPDATE_GOLDENS=1 to accept the new output";
  }
}

// Every kind that occurs anywhere in `body`, nested bodies included.
class KindCollector : public StmtVisitor {
 public:
  std::set<StmtKind> kinds;
#define TESSERA_X(K)                    \
  void visit_##K(const K& s) override { \
    kinds.insert(StmtKind::K);          \
    StmtVisitor::visit_##K(s);          \
  }
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
};

TEST(IrPrinterGolden, StmtKindsBodyUsesEveryKind) {
  KindCollector collector;
  collector.visit(every_stmt_kind_body());
#define TESSERA_X(K)                              \
  EXPECT_TRUE(collector.kinds.count(StmtKind::K)) \
      << #K " is missing from every_stmt_kind_body() and so from stmt_kinds.txt";
  TESSERA_STMT_KINDS(TESSERA_X)
#undef TESSERA_X
}

TEST(IrPrinterGolden, StmtKinds) {
  expect_golden("stmt_kinds.txt", print_body(every_stmt_kind_body()));
}

TEST(IrPrinterGolden, TorchGraph) { expect_golden("torch_graph.txt", print_graph(torch_graph())); }
TEST(IrPrinterGolden, TensorGraph) {
  expect_golden("tensor_graph.txt", print_graph(tensor_graph()));
}
TEST(IrPrinterGolden, LoopGraph) { expect_golden("loop_graph.txt", print_graph(loop_graph())); }
TEST(IrPrinterGolden, TileGraph) { expect_golden("tile_graph.txt", print_graph(tile_graph())); }
TEST(IrPrinterGolden, KernelGraph) {
  expect_golden("kernel_graph.txt", print_graph(kernel_graph()));
}
TEST(IrPrinterGolden, CudaGraph) { expect_golden("cuda_graph.txt", print_graph(cuda_graph())); }

TEST(IrPrinterGolden, PrintingIsDeterministic) {
  EXPECT_EQ(print_graph(tile_graph()), print_graph(tile_graph()));
  Graph copy = kernel_graph();
  EXPECT_EQ(print_graph(copy), print_graph(kernel_graph()));
}

}  // namespace
}  // namespace tessera

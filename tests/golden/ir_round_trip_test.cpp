// Printed IR parses back: for every printed Torch, Tensor, Loop, Tile or Kernel IR graph in the goldens (every
// `#### input` and `#### expected` section of tests/golden/<folder>/*.txt that is one, and the
// printer goldens of tests/golden/ir/), print_graph(parse_graph(text)) == text; and the statement
// golden tests/golden/ir/stmt_kinds.txt parses back with parse_body.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "support/cli_runner.h"
#include "support/golden_sections.h"
#include "support/sanitizer_build.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/ir/stmt.h"
#include "tessera/support/unified_diff.h"

namespace fs = std::filesystem;

namespace tessera {
namespace {

const fs::path kGoldenRoot = fs::path(TESSERA_SOURCE_DIR) / "tests" / "golden";

// Whether `text` is a whole printed graph at the Torch, Tensor, Loop, Tile or Kernel stage: it ends with
// the `return` line, holds at least one node, and every unindented line is a declaration, a
// `# knobs:` line, a Tensor IR node line, a kernel header or the return line (a CUDA block, `-vv`
// diff markers or `--print-ir-after` banners make it something else).
bool is_printed_graph(const std::string& text) {
  std::istringstream is(text);
  std::string line, last;
  bool node = false;
  while (std::getline(is, line)) {
    if (line.empty() || line[0] == ' ') continue;
    last = line;
    if (line.rfind("=== ", 0) == 0 || line.rfind("kernel ", 0) == 0) {
      node = true;
      continue;
    }
    if (line.rfind("# knobs: ", 0) == 0 || line.rfind("return", 0) == 0) continue;
    size_t colon = line.find(": ");
    size_t equals = line.find(" = ");
    size_t space = line.find(' ');
    if (equals != std::string::npos && equals == space && line.find(" -> (") != std::string::npos) {
      node = true;  // `name = rhs -> (shape) dtype`
      continue;
    }
    bool declaration = colon != std::string::npos && (equals == std::string::npos || colon < equals) &&
                       space > colon;
    if (!declaration) return false;
  }
  return node && last.rfind("return", 0) == 0;
}

struct Printout {
  std::string where;  // file (section)
  std::string text;
};

std::vector<Printout> golden_printouts() {
  std::vector<Printout> out;
  for (const auto& dir : fs::directory_iterator(kGoldenRoot)) {
    if (!dir.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(dir.path())) {
      if (f.path().extension() != ".txt") continue;
      const std::string text = test::read_file(f.path().string());
      if (dir.path().filename() == "ir") {
        if (is_printed_graph(text)) out.push_back({f.path().string(), text});
        continue;
      }
      for (const auto& s : test::parse_golden_sections(text)) {
        if ((s.name == "input" || s.name == "expected") && is_printed_graph(s.text)) {
          out.push_back({f.path().string() + " (#### " + s.name + ")", s.text});
        }
      }
    }
  }
  // Directory order is the file system's: sorted, every machine checks the same printouts.
  std::sort(out.begin(), out.end(), [](const Printout& a, const Printout& b) { return a.where < b.where; });
  return out;
}

TEST(IrRoundTrip, EveryGoldenPrintoutParsesBackToTheSameText) {
  const auto printouts = golden_printouts();
  // The goldens hold dozens of kernel printouts; far fewer means the filter above broke.
  ASSERT_GE(printouts.size(), 80u);
  for (const Printout& p : printouts) {
    auto g = parse_graph(p.text, p.where);
    if (!g) {
      ADD_FAILURE() << p.where << " does not parse:\n" << g.error().render();
      continue;
    }
    const std::string again = print_graph(*g);
    if (again != p.text) {
      ADD_FAILURE() << p.where << ": printer(parser(text)) differs (--- golden, +++ reprinted):\n"
                    << unified_diff(p.text, again);
    }
  }
}

// Damaged printouts are errors, never crashes: every golden printout cut after each of its lines,
// and with one character deleted at each position of its first kernel's lines.
// Under the sanitizers a third of the printouts (the parser's code paths; the fuzz targets search
// further): 76 s of ASan time for all of them.
TEST(IrRoundTrip, TruncatedAndDamagedPrintoutsFailCleanly) {
  size_t errors = 0;
  for (const Printout& p : test::sanitizer_share(golden_printouts())) {
    std::vector<size_t> line_ends;
    for (size_t i = 0; i < p.text.size(); ++i)
      if (p.text[i] == '\n') line_ends.push_back(i + 1);
    for (size_t end : line_ends) {
      auto g = parse_graph(std::string_view(p.text).substr(0, end), p.where);
      if (!g) {
        ++errors;
        EXPECT_GT(g.error().loc.line, 0) << p.where << ": an error without a location:\n" << g.error().render();
      }
    }
    const size_t damaged_span = std::min<size_t>(p.text.size(), 300);
    for (size_t at = 0; at < damaged_span; ++at) {
      std::string damaged = p.text;
      damaged.erase(at, 1);
      auto g = parse_graph(damaged, p.where);
      if (!g) ++errors;
    }
  }
  EXPECT_GT(errors, 1000u);  // most damage is caught (the rest still reads as some valid graph)
}

TEST(IrRoundTrip, StatementKindsGoldenParsesBack) {
  const std::string path = (kGoldenRoot / "ir" / "stmt_kinds.txt").string();
  const std::string text = test::read_file(path);
  auto body = parse_body(text, path);
  ASSERT_TRUE(body) << body.error().render();
  EXPECT_EQ(print_body(*body), text);
}

TEST(IrRoundTrip, TheFilterTellsGraphsFromOtherPrintouts) {
  EXPECT_TRUE(is_printed_graph("x: (4,) float32\n\n=== k(x) -> y: (4,) float32 ===\n  Sync()\n\nreturn y\n"));
  EXPECT_TRUE(is_printed_graph("x: (4,) float32\n\nrelu = relu(x) -> (4,) float32\n\nreturn relu\n"));
  EXPECT_FALSE(is_printed_graph("x: (4,) float32\n\n// kernel k_y  grid=(1, 1, 1)\nreturn y\n"));
  EXPECT_FALSE(is_printed_graph("x: (4,) float32\n\nreturn x\n"));
  EXPECT_FALSE(is_printed_graph(">>> l:001_lift\n=== k(x) -> y: (4,) float32 ===\n  Sync()\nreturn y\n"));
}

}  // namespace
}  // namespace tessera

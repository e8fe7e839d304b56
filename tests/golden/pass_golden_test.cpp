// Golden tests for passes: every tests/golden/<folder>/*.txt (except tests/golden/ir/, which holds
// the printer goldens) is one case, run through the real CLI. A case is a list of sections:
//
//   #### note             free text: what the case shows
//   #### input            printed IR (Loop, Tile or Kernel IR, as `--ir` prints it), the usual form:
//                         IR in, the pass alone, IR out, in the manner of LLVM's `opt` tests
//   #### program          or: a -c program text (end-to-end goldens, tests/golden/e2e/, and the
//                         passes that read Torch or Tensor IR, which does not parse back)
//   #### from-ir          or: a graph JSON
//   #### pipeline         optional pipeline YAML (default: pipelines/default.yaml); for an IR-in case
//                         it names the one pass under test, e.g. `stages: {tile: [pad_smem]}`
//   #### args             extra CLI arguments, whitespace-separated (e.g. --ir tile -vv)
//   #### expected         the exact stdout of `tessera compile`
//   #### check            and/or: FileCheck-style lines (CHECK:, CHECK-NEXT:, CHECK-SAME:,
//                         CHECK-NOT:, literal text; see tests/support/file_check.h) for cases where
//                         an exact printout would be brittle
//
// Exactly one of input / program / from-ir; at least one of expected / check.
// Regenerate after an intended change with scripts/update-goldens.sh and review the diff like code:
// it rewrites every `expected` section with the new output and reprints every `input` section
// (parse, then print: a change of the printed form reaches the inputs); `check` sections are
// written by hand and never rewritten. A new case's input is a printout taken just before the
// pass, e.g. `tessera compile -c '...' --print-ir-after PREVIOUS_PASS` or `--ir STAGE`, cut down
// to what the case needs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/cli_runner.h"
#include "support/file_check.h"
#include "support/golden_sections.h"
#include "tessera/ir/parser.h"
#include "tessera/ir/printer.h"
#include "tessera/support/unified_diff.h"

namespace fs = std::filesystem;
using tessera::test::run_cli;
using tessera::test::TempDir;

namespace {

struct GoldenCase {
  std::string name;  // pass/case
  fs::path file;
};

std::vector<GoldenCase> discover() {
  std::vector<GoldenCase> cases;
  fs::path root = fs::path(TESSERA_SOURCE_DIR) / "tests" / "golden";
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory() || dir.path().filename() == "ir") continue;
    for (const auto& f : fs::directory_iterator(dir.path()))
      if (f.path().extension() == ".txt")
        cases.push_back({dir.path().filename().string() + "/" + f.path().stem().string(), f.path()});
  }
  std::sort(cases.begin(), cases.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return cases;
}

std::string trim_trailing_newlines(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class PassGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(PassGolden, MatchesExpectedOutput) {
  const GoldenCase& c = GetParam();
  const std::string text = tessera::test::read_file(c.file.string());
  const auto sections = tessera::test::parse_golden_sections(text);
  std::map<std::string, std::string> s;
  int check_line = 0;
  for (const auto& section : sections) {
    s[section.name] = section.text;
    if (section.name == "check") check_line = section.header_line;
  }
  ASSERT_TRUE(s.count("expected") || s.count("check"))
      << c.file << " has neither an '#### expected' nor a '#### check' section";
  ASSERT_EQ(s.count("program") + s.count("from-ir") + s.count("input"), 1u)
      << c.file << " needs exactly one of input / program / from-ir";

  TempDir tmp;
  std::vector<std::string> args = {"compile"};
  if (s.count("program")) {
    args.push_back("-c");
    args.push_back(trim_trailing_newlines(s["program"]));
  } else if (s.count("input")) {
    args.push_back("--from-ir");
    args.push_back(tmp.write("input.tir", s["input"]));
  } else {
    args.push_back("--from-ir");
    args.push_back(tmp.write("input.json", s["from-ir"]));
  }
  if (s.count("pipeline")) {
    args.push_back("--pipeline");
    args.push_back(tmp.write("pipeline.yaml", s["pipeline"]));
  }
  std::istringstream extra(s["args"]);
  for (std::string a; extra >> a;) args.push_back(a);

  auto r = run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << "tessera compile failed:\n" << r.err;

  if (const char* update = std::getenv("TESSERA_UPDATE_GOLDENS"); update && std::string(update) == "1") {
    // `expected` becomes the new output; `input` is reprinted (parse, print), so a change of the
    // printed form reaches the inputs too; `check` lines are left as written.
    std::string rewritten;
    for (const auto& section : sections) {
      std::string text = section.text;
      if (section.name == "expected") text = r.out;
      if (section.name == "input") {
        auto g = tessera::parse_graph(section.text, c.file.string());
        ASSERT_TRUE(g) << g.error().render();
        text = tessera::print_graph(*g);
      }
      rewritten += "#### " + section.name + "\n" + text;
    }
    std::ofstream(c.file, std::ios::binary) << rewritten;
    return;
  }
  if (s.count("expected")) {
    EXPECT_EQ(s["expected"], r.out) << "golden mismatch for " << c.file << " (expected -> actual):\n"
                                    << tessera::unified_diff(s["expected"], r.out);
  }
  if (s.count("check")) {
    // Blank lines are ignored by file_check; prefixing the header's line count makes its
    // locations line numbers of the golden file itself.
    std::string failure = tessera::test::file_check(std::string(static_cast<size_t>(check_line), '\n') + s["check"],
                                                    r.out, c.file.string());
    EXPECT_TRUE(failure.empty()) << failure << "\nfull output:\n" << r.out;
  }
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string n = info.param.name;
  for (char& ch : n)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Goldens, PassGolden, ::testing::ValuesIn(discover()), case_name);

}  // namespace

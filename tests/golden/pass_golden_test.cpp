// Golden tests for passes: every tests/golden/<pass>/*.txt (except tests/golden/ir/, which holds the
// printer goldens) is one case, run through the real CLI:
//
//   #### program          the -c program text (or `#### from-ir` with a graph JSON instead)
//   #### pipeline         optional pipeline YAML (default: pipelines/default.yaml)
//   #### args             extra CLI arguments, whitespace-separated (e.g. --ir torch -vv)
//   #### expected         the exact stdout of `tessera compile`
//
// Regenerate after an intended change with scripts/update-goldens.sh and review the diff like code.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/cli_runner.h"
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

// Section name -> text, in file order.
std::vector<std::pair<std::string, std::string>> parse_sections(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> sections;
  std::istringstream is(text);
  std::string line;
  while (std::getline(is, line)) {
    if (line.rfind("#### ", 0) == 0) {
      sections.emplace_back(line.substr(5), "");
    } else if (!sections.empty()) {
      sections.back().second += line + "\n";
    }
  }
  return sections;
}

std::string trim_trailing_newlines(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class PassGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(PassGolden, MatchesExpectedOutput) {
  const GoldenCase& c = GetParam();
  const std::string text = tessera::test::read_file(c.file.string());
  auto sections = parse_sections(text);
  std::map<std::string, std::string> s(sections.begin(), sections.end());
  ASSERT_TRUE(s.count("expected")) << c.file << " has no '#### expected' section";
  ASSERT_TRUE(s.count("program") != s.count("from-ir")) << c.file << " needs exactly one of program / from-ir";

  TempDir tmp;
  std::vector<std::string> args = {"compile"};
  if (s.count("program")) {
    args.push_back("-c");
    args.push_back(trim_trailing_newlines(s["program"]));
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
    std::string rewritten;
    for (auto& [name, body] : sections) rewritten += "#### " + name + "\n" + (name == "expected" ? r.out : body);
    std::ofstream(c.file, std::ios::binary) << rewritten;
    return;
  }
  EXPECT_EQ(s["expected"], r.out) << "golden mismatch for " << c.file << " (expected -> actual):\n"
                                  << tessera::unified_diff(s["expected"], r.out);
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string n = info.param.name;
  for (char& ch : n)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Goldens, PassGolden, ::testing::ValuesIn(discover()), case_name);

}  // namespace

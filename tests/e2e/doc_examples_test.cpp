// Every CLI example in docs/*.md is executed and its output compared, so the docs stay true.
//
// An example is a fenced block tagged `console`:
//     ```console
//     $ tessera compile -c "nn.RMSNorm(2048)(torch.randn(1,32,2048))"
//     <exact stdout>
//     ```
// Commands run in the source tree's root, so they can name files in examples/.
// The command line is split like a POSIX shell would for simple quoting ('...' and "...").
// `$TESSERA_FIXTURE_DIR` in a command expands to the test-fixture directory; paths into the build
// directory in the output are written `<build>`.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "support/cli_runner.h"
#include "tessera/support/unified_diff.h"

namespace fs = std::filesystem;

namespace {

struct DocExample {
  std::string where;  // docs/cli.md:42
  std::vector<std::string> args;
  std::string expected;
};

std::vector<std::string> shell_split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t') {
      if (in_word) out.push_back(cur), cur.clear(), in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

std::string expand(std::string s) {
  const std::string var = "$TESSERA_FIXTURE_DIR";
  for (size_t p; (p = s.find(var)) != std::string::npos;) s.replace(p, var.size(), TESSERA_FIXTURE_DIR);
  return s;
}

std::vector<DocExample> discover() {
  std::vector<DocExample> examples;
  std::vector<fs::path> docs;
  for (const auto& f : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / "docs"))
    if (f.path().extension() == ".md") docs.push_back(f.path());
  docs.push_back(fs::path(TESSERA_SOURCE_DIR) / "README.md");
  std::sort(docs.begin(), docs.end());
  for (const auto& doc : docs) {
    std::istringstream is(tessera::test::read_file(doc.string()));
    std::string line;
    int lineno = 0;
    bool in_block = false;
    DocExample* cur = nullptr;
    while (std::getline(is, line)) {
      ++lineno;
      if (!in_block && line == "```console") {
        in_block = true;
        cur = nullptr;
      } else if (in_block && line == "```") {
        in_block = false;
      } else if (in_block && line.rfind("$ tessera ", 0) == 0) {
        auto words = shell_split(expand(line.substr(10)));
        examples.push_back({fs::relative(doc, TESSERA_SOURCE_DIR).string() + ":" + std::to_string(lineno), words, ""});
        cur = &examples.back();
      } else if (in_block && cur) {
        cur->expected += line + "\n";
      }
    }
  }
  return examples;
}

class DocExamples : public ::testing::TestWithParam<DocExample> {};

TEST_P(DocExamples, OutputMatchesTheDocs) {
  const DocExample& ex = GetParam();
  auto r = tessera::test::run_cli(ex.args, {}, TESSERA_SOURCE_DIR);
  // Paths into the build tree print as <build> in the docs.
  for (size_t p; (p = r.out.find(TESSERA_BUILD_DIR)) != std::string::npos;)
    r.out.replace(p, std::string(TESSERA_BUILD_DIR).size(), "<build>");
  // A code block cannot end in blank lines (scripts/update-doc-examples.py strips them too).
  while (r.out.size() >= 2 && r.out.compare(r.out.size() - 2, 2, "\n\n") == 0) r.out.pop_back();
  EXPECT_EQ(r.exit_code, 0) << ex.where << "\n" << r.err;
  EXPECT_EQ(ex.expected, r.out) << ex.where << ": the docs disagree with the CLI (docs -> actual):\n"
                                << tessera::unified_diff(ex.expected, r.out);
}

std::string example_name(const ::testing::TestParamInfo<DocExample>& info) {
  std::string n = info.param.where;
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Docs, DocExamples, ::testing::ValuesIn(discover()), example_name);

// A code block preceded by `<!-- source: PATH -->` shows the file PATH of the source tree whole
// (docs/plugins.md's worked Tile IR pass is a test fixture that is built and run).
TEST(DocSources, MarkedCodeBlocksShowTheirFileWhole) {
  const std::string marker = "<!-- source: ";
  int checked = 0;
  for (const auto& f : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / "docs")) {
    if (f.path().extension() != ".md") continue;
    std::istringstream is(tessera::test::read_file(f.path().string()));
    std::string line;
    while (std::getline(is, line)) {
      if (line.rfind(marker, 0) != 0) continue;
      const std::string source = line.substr(marker.size(), line.find(" -->") - marker.size());
      std::string fence, block;
      ASSERT_TRUE(std::getline(is, fence) && fence.rfind("```", 0) == 0) << f.path() << ": " << source;
      while (std::getline(is, line) && line != "```") block += line + "\n";
      const std::string file = tessera::test::read_file(std::string(TESSERA_SOURCE_DIR) + "/" + source);
      EXPECT_EQ(block, file) << f.path() << " shows " << source << " out of date:\n"
                             << tessera::unified_diff(block, file);
      ++checked;
    }
  }
  EXPECT_GE(checked, 1);
}

}  // namespace

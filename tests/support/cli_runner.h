// Runs the built `tessera` CLI as a child process (no shell: arguments are passed verbatim, so
// multi-line programs need no quoting) and captures its exit code, stdout and stderr.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace tessera::test {

// The exit code of a process a sanitizer stops (scripts/sanitize.sh sets it in ASAN_OPTIONS and
// UBSAN_OPTIONS). It differs from every exit code of tessera (0, 1, 2), so an expected failure
// (exit 1) cannot pass on a sanitizer report; run_cli fails the test when a child exits with it.
inline constexpr int kSanitizerExitCode = 86;

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// `env` entries are added to (or override) the child's environment; `cwd` ("" = inherit) is the
// child's working directory.
CliResult run_cli(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                  const std::string& cwd = "");

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `text` to path()/name and returns the full path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

std::string read_file(const std::string& path);

}  // namespace tessera::test

// Child-process runner for CLI tests: fork + execve with stdout/stderr redirected to temp files.
#include "support/cli_runner.h"

#include <gtest/gtest.h>
#include "support/test_paths.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace tessera::test {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "tessera-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  fs::path p = fs::path(path_) / name;
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

CliResult run_cli(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                  const std::string& cwd) {
  TempDir tmp;
  const std::string out_path = tmp.path() + "/stdout", err_path = tmp.path() + "/stderr";

  std::vector<std::string> argv_store = {cli_path()};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // Tests must not pick up a developer's extra plugins.
  merged.erase("TESSERA_PLUGIN_PATH");
  for (const auto& [k, v] : env) merged[k] = v;
  std::vector<std::string> env_store;
  for (const auto& [k, v] : merged) env_store.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) _exit(127);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  CliResult r;
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid) {
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  // A sanitizer report is never the answer a test expects, whatever exit code it checks.
  if (r.exit_code == kSanitizerExitCode)
    ADD_FAILURE() << "the tessera child exited with the sanitizer's exit code " << kSanitizerExitCode
                  << " (a sanitizer report):\n" << r.err;
  return r;
}

}  // namespace tessera::test

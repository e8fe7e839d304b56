// Running other programs from the CLI (see external_command.h).
#include "external_command.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace tessera::cli {

std::string find_on_path(const std::string& exe) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::filesystem::path p = std::filesystem::path(dirs.substr(start, end - start)) / exe;
    std::error_code ec;
    if (end > start && std::filesystem::is_regular_file(p, ec)) return p.string();
    start = end + 1;
  }
  return "";
}

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

int run_external(const std::vector<std::string>& argv, const std::string& stdout_path,
                 const std::string& stderr_path) {
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
  if (!stdout_path.empty()) cmd += " > " + shell_quote(stdout_path);
  if (!stderr_path.empty()) cmd += stderr_path == stdout_path ? " 2>&1" : " 2> " + shell_quote(stderr_path);
  std::cout.flush();
  std::cerr.flush();
  const int status = std::system(cmd.c_str());
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::string last_line_of_file(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

}  // namespace tessera::cli

// Running other programs from the CLI: `run --profile` (ncu), `bench` (python3 for the PyTorch
// baseline and the plot).
#pragma once

#include <string>
#include <vector>

namespace tessera::cli {

// The first `exe` on PATH, or "".
std::string find_on_path(const std::string& exe);

// `s` quoted for /bin/sh.
std::string shell_quote(const std::string& s);

// Runs `argv` through /bin/sh with stdout to `stdout_path` and stderr to `stderr_path` ("" = the
// inherited stream; the same path for both interleaves them); returns the exit code, or -1 when the command did not exit normally.
int run_external(const std::vector<std::string>& argv, const std::string& stdout_path,
                 const std::string& stderr_path);

// The last non-empty line of a text file ("" when there is none): the gist of a failed command.
std::string last_line_of_file(const std::string& path);

}  // namespace tessera::cli

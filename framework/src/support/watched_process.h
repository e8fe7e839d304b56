// WatchedProcess: runs a program as a child process in a process group of its own and waits for
// it with a watchdog. Past the time limit the whole group is killed (SIGKILL), so a child stuck in
// a driver call, or anything it started, cannot outlive the wait; a child that ends is reaped, and
// what is left of its group killed, before run() returns. Thread-safe: each call waits for its own
// child only.
//
// The child is started with posix_spawn (no fork of a multi-threaded parent): argv[0] must be a
// path, not a name to look up on PATH. Its stdin is /dev/null; stdout and stderr go to files.
// Tests: tests/unit/gpu_measurer_test.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tessera/support/status.h"

namespace tessera {

struct WatchedProcessSpec {
  std::vector<std::string> argv;            // argv[0]: the program's path
  std::map<std::string, std::string> env;   // set over the inherited environment
  double timeout_s = 0;                     // wall-clock limit (> 0)
  std::string stdout_path;                  // "" = /dev/null
  std::string stderr_path;                  // "" = /dev/null
};

// How a watched child ended.
enum class ProcessEnd { Exited, Signaled, TimedOut };

struct ProcessOutcome {
  ProcessEnd end = ProcessEnd::Exited;
  int exit_code = 0;   // Exited
  int signal = 0;      // Signaled
  double limit_s = 0;  // the time limit it ran under
  double seconds = 0;  // from start to end (or to the kill)
  // "exited with status 3", "died of signal 11 (Segmentation fault)", "timed out after 2 s".
  std::string str() const;
};

// Runs `spec` to its end or its time limit. An error only when the child could not be started
// (naming the program and the reason).
Expected<ProcessOutcome> run_watched_process(const WatchedProcessSpec& spec);

}  // namespace tessera

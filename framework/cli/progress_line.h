// Progress reporting on stderr for commands that run long: `tessera run --target sim` on a large
// program, `tessera bench` over a suite.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace tessera::cli {

// "0:42", "1:02:03": a duration for people.
std::string clock_text(double seconds);

// A progress line: "sim: k_matmul_reduce  45%  (elapsed 0:12, ETA 0:15)". Silent for the first
// `quiet_seconds` (short runs print nothing); then, on a terminal, redrawn in place at most five
// times a second, and elsewhere (a log file) one line every ten seconds. finish() ends the line.
class ProgressLine {
 public:
  ProgressLine(std::ostream& out, bool terminal, std::string label, double quiet_seconds = 2.0);
  ~ProgressLine() { finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // `fraction` of the work is done (0..1); `what` names the current part.
  void update(const std::string& what, double fraction);
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  bool terminal_;
  std::string label_;
  double quiet_seconds_;
  Clock::time_point start_ = Clock::now();
  double last_print_ = -1e9;  // seconds since start_
  size_t drawn_width_ = 0;    // of the line on a terminal, to clear it
};

}  // namespace tessera::cli

// Measuring a compile in a child process, shared by the compile benchmarks (compile_scaling.cpp,
// model_compile.cpp): each measurement runs in a fresh fork, so its peak resident memory (VmHWM)
// is its own and one measurement's heap does not slow or hide another's.
#pragma once

#include <functional>
#include <string>

namespace tessera::bench {

// CPU time of the whole process (every thread), in seconds.
double process_cpu_seconds();

// A field of /proc/self/status in kB (VmHWM: peak resident set, VmRSS: current); -1 if absent.
long status_kb(const std::string& field);

// What a child answered: `measure` returns "ok FIELDS..." or "error MESSAGE".
struct ChildAnswer {
  bool ok = false;
  std::string fields;  // after "ok "
  std::string error;   // the child's message, or why there is no answer
};

// Runs `measure` in a forked child process and returns its answer.
ChildAnswer measure_in_child(const std::function<std::string()>& measure);

}  // namespace tessera::bench

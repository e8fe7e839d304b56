// See child_measurement.h.
#include "child_measurement.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

namespace tessera::bench {

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

long status_kb(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  }
  return -1;
}

ChildAnswer measure_in_child(const std::function<std::string()>& measure) {
  ChildAnswer result;
  int fds[2];
  if (pipe(fds) != 0) {
    result.error = "pipe failed";
    return result;
  }
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    result.error = "fork failed";
    return result;
  }
  if (pid == 0) {
    close(fds[0]);
    const std::string answer = measure();
    for (size_t written = 0; written < answer.size();) {
      const ssize_t k = write(fds[1], answer.data() + written, answer.size() - written);
      if (k <= 0) break;
      written += static_cast<size_t>(k);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string answer;
  char buf[4096];
  for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) > 0;) answer.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (answer.rfind("ok", 0) == 0) {
    result.ok = true;
    result.fields = answer.substr(std::min<size_t>(answer.size(), 3));
  } else if (answer.rfind("error ", 0) == 0) {
    result.error = answer.substr(6);
  } else {
    result.error = answer.empty() ? "the child process died" : answer;
  }
  return result;
}

}  // namespace tessera::bench

// Running a child process under a watchdog (see watched_process.h): posix_spawn into a new process
// group, a polling wait that looks at the child's end without reaping it (so its process group id
// cannot be reused meanwhile), SIGKILL to the whole group on the time limit and after the end.
#include "watched_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

extern char** environ;

namespace tessera {

namespace {

// posix_spawn's attributes and file actions, destroyed on every path.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// The inherited environment with `overrides` set (replacing an inherited entry of the same name).
std::vector<std::string> child_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (!overrides.count(name)) env.push_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

std::string ProcessOutcome::str() const {
  switch (end) {
    case ProcessEnd::Exited:
      return "exited with status " + std::to_string(exit_code);
    case ProcessEnd::Signaled: {
      const char* name = strsignal(signal);
      return "died of signal " + std::to_string(signal) + (name ? " (" + std::string(name) + ")" : "");
    }
    case ProcessEnd::TimedOut:
      return "timed out after " + format_seconds(limit_s) + " s";
  }
  return "ended";
}

Expected<ProcessOutcome> run_watched_process(const WatchedProcessSpec& spec) {
  if (spec.argv.empty()) return make_error("no program to run");
  if (!(spec.timeout_s > 0)) return make_error("the time limit of " + spec.argv[0] + " must be positive");
  SpawnSetup setup;
  // Its own process group (killed as a whole), default signal dispositions and an empty mask
  // whatever the parent blocks or ignores.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setsigdefault(&setup.attr, &all);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  const int out_flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&setup.actions, STDOUT_FILENO,
                                   spec.stdout_path.empty() ? "/dev/null" : spec.stdout_path.c_str(), out_flags, 0644);
  posix_spawn_file_actions_addopen(&setup.actions, STDERR_FILENO,
                                   spec.stderr_path.empty() ? "/dev/null" : spec.stderr_path.c_str(), out_flags, 0644);

  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = child_environment(spec.env);
  std::vector<char*> argv = c_strings(args), envp = c_strings(env);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (int rc = posix_spawn(&pid, argv[0], &setup.actions, &setup.attr, argv.data(), envp.data()); rc != 0)
    return make_error("cannot start " + spec.argv[0] + ": " + std::strerror(rc));

  ProcessOutcome outcome;
  outcome.limit_s = spec.timeout_s;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto reap = [&]() -> int {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  };
  std::chrono::microseconds pause(500);
  for (;;) {
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    const int rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == pid) break;  // ended; still a zombie, so its group id is ours
    if (rc < 0 && errno != EINTR) break;       // cannot happen for our own child; reap below
    if (elapsed() >= spec.timeout_s) {
      kill(-pid, SIGKILL);
      reap();
      outcome.end = ProcessEnd::TimedOut;
      outcome.seconds = elapsed();
      return outcome;
    }
    const double left_us = (spec.timeout_s - elapsed()) * 1e6;
    std::this_thread::sleep_for(std::min(pause, std::chrono::microseconds(static_cast<int64_t>(std::ceil(left_us)))));
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
  kill(-pid, SIGKILL);  // anything the child started and left behind
  const int status = reap();
  outcome.seconds = elapsed();
  if (WIFSIGNALED(status)) {
    outcome.end = ProcessEnd::Signaled;
    outcome.signal = WTERMSIG(status);
  } else {
    outcome.end = ProcessEnd::Exited;
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return outcome;
}

}  // namespace tessera

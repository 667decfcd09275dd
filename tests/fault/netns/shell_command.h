#pragma once

// Running the system tools the network-namespace fault tests need (ip, nft, the test binary
// itself inside a namespace), each with a deadline: a command still running when it passes
// is killed (SIGKILL) and reported as such. Not thread-safe; call from the test's thread.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace kvx::test::netns {

struct CommandResult {
  int exitCode = -1;  // 128 + signal when killed by one; -1 when it could not start
  bool timedOut = false;
  std::string output;  // stdout and stderr together (empty for runInheritingOutput)

  bool ok() const { return exitCode == 0 && !timedOut; }
};

namespace detail {

inline std::vector<char*> cStrings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Waits for `pid` until `deadline`, then kills it; fills exitCode and timedOut.
inline void reap(pid_t pid, std::chrono::steady_clock::time_point deadline, CommandResult& r) {
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timedOut = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    ::usleep(2000);
  }
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace detail

// Runs argv[0] (searched in PATH) with its output captured, for at most `timeout`.
inline CommandResult runCommand(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  CommandResult result;
  int fds[2];
  if (argv.empty() || ::pipe2(fds, O_CLOEXEC) != 0) return result;
  std::vector<char*> cargv = detail::cStrings(argv);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return result;
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    const int devNull = ::open("/dev/null", O_RDONLY);
    if (devNull >= 0) ::dup2(devNull, STDIN_FILENO);
    ::close_range(3, ~0U, 0);  // the agent's sockets (UCX's lack CLOEXEC) stay with it
    ::execvp(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char chunk[4096];
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;  // EOF: the command (and whatever it started) closed its output
    result.output.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  detail::reap(pid, deadline, result);
  return result;
}

// Runs `path` with `argv` (argv[0] included) and the extra `environment` ("NAME=value"
// entries added to this process's), its stdout and stderr this process's own, for at most
// `timeout`.
inline CommandResult runInheritingOutput(const std::string& path, std::vector<std::string> argv,
                                         const std::vector<std::string>& environment,
                                         std::chrono::milliseconds timeout) {
  CommandResult result;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), environment.begin(), environment.end());
  std::vector<char*> cargv = detail::cStrings(argv);
  std::vector<char*> cenv = detail::cStrings(env);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::fflush(stdout);  // what this process printed comes before the child's output
  const pid_t pid = ::fork();
  if (pid < 0) return result;
  if (pid == 0) {
    ::close_range(3, ~0U, 0);  // as in runCommand
    ::execve(path.c_str(), cargv.data(), cenv.data());
    ::_exit(127);
  }
  detail::reap(pid, deadline, result);
  return result;
}

}  // namespace kvx::test::netns

#include "examples/pair_transfer/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace pair_transfer {

kvx::Result<ChildProcess> ChildProcess::spawnSelf(const std::vector<std::string>& args) {
  return spawn("/proc/self/exe", args);
}

kvx::Result<ChildProcess> ChildProcess::spawn(const std::string& path,
                                              const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return kvx::internalError(std::string("pipe failed: ") + std::strerror(errno));
  }
  std::vector<std::string> argv{path};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return kvx::internalError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::execv(path.c_str(), cargv.data());
    _exit(127);
  }
  ::close(fds[1]);
  return ChildProcess(pid, fds[0]);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), stdoutFd_(other.stdoutFd_), buffered_(std::move(other.buffered_)) {
  other.pid_ = -1;
  other.stdoutFd_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) waitExit(std::chrono::milliseconds(0));
  if (stdoutFd_ >= 0) ::close(stdoutFd_);
}

kvx::Result<std::string> ChildProcess::readLine(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return kvx::timedOut("the target printed no line in time");
    pollfd p{stdoutFd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[512];
    const ssize_t n = ::read(stdoutFd_, chunk, sizeof(chunk));
    if (n <= 0) return kvx::peerFailed("the target closed its output (did it crash?)");
    buffered_.append(chunk, static_cast<std::size_t>(n));
  }
}

int ChildProcess::waitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace pair_transfer

#include "bench/bare/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace kvx::bench {
namespace {

Status errnoStatus(const std::string& what) {
  return internalError(what + ": " + std::strerror(errno));
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const std::string& path,
                                         const std::vector<std::string>& args, bool captureStderr) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
      (captureStderr && ::pipe2(err, O_CLOEXEC) != 0)) {
    Status status = errnoStatus("pipe2 for the child process " + path);
    for (int* fds : {in, out, err}) {
      closeFd(fds[0]);
      closeFd(fds[1]);
    }
    return status;
  }
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> argv{path};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    Status status = errnoStatus("fork for " + path);
    for (int* fds : {in, out, err}) {
      closeFd(fds[0]);
      closeFd(fds[1]);
    }
    return status;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(126);  // the parent died before prctl took effect
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    if (captureStderr) ::dup2(err[1], STDERR_FILENO);
    ::execv(path.c_str(), cargv.data());
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  if (captureStderr) ::close(err[1]);
  return ChildProcess(pid, in[1], out[0], err[0]);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdinFd_(std::exchange(other.stdinFd_, -1)),
      stdoutFd_(std::exchange(other.stdoutFd_, -1)),
      stderrFd_(std::exchange(other.stderrFd_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    stdinFd_ = std::exchange(other.stdinFd_, -1);
    stdoutFd_ = std::exchange(other.stdoutFd_, -1);
    stderrFd_ = std::exchange(other.stderrFd_, -1);
  }
  return *this;
}

ChildProcess::~ChildProcess() { release(); }

void ChildProcess::release() {
  closeFd(stdinFd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  closeFd(stdoutFd_);
  closeFd(stderrFd_);
}

void ChildProcess::closeStdin() { closeFd(stdinFd_); }

Result<ChildProcess::Output> ChildProcess::readToEnd(Deadline deadline) {
  Output output;
  bool outOpen = stdoutFd_ >= 0, errOpen = stderrFd_ >= 0;
  while (outOpen || errOpen) {
    if (std::chrono::steady_clock::now() >= deadline) {
      const std::string tail =
          output.err.size() > 400 ? output.err.substr(output.err.size() - 400) : output.err;
      return timedOut("child process " + std::to_string(pid_) +
                      " did not finish its output in time (stderr so far: '" + tail + "')");
    }
    pollfd fds[2];
    nfds_t n = 0;
    if (outOpen) fds[n++] = pollfd{stdoutFd_, POLLIN, 0};
    if (errOpen) fds[n++] = pollfd{stderrFd_, POLLIN, 0};
    const int ready = ::poll(fds, n, pollTimeoutMs(deadline));
    if (ready < 0 && errno != EINTR) return errnoStatus("poll on the child's output");
    for (nfds_t i = 0; ready > 0 && i < n; ++i) {
      if (fds[i].revents == 0) continue;
      char chunk[65536];
      const ssize_t got = ::read(fds[i].fd, chunk, sizeof(chunk));
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      const bool isOut = fds[i].fd == stdoutFd_;
      if (got <= 0) {
        (isOut ? outOpen : errOpen) = false;
        continue;
      }
      (isOut ? output.out : output.err).append(chunk, static_cast<std::size_t>(got));
    }
  }
  return output;
}

Result<int> ChildProcess::waitExit(Deadline deadline) {
  if (pid_ <= 0) return failedPrecondition("waitExit: the child was already reaped");
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (done < 0 && errno != EINTR) return errnoStatus("waitpid " + std::to_string(pid_));
    if (std::chrono::steady_clock::now() >= deadline) {
      const pid_t pid = pid_;
      release();
      return timedOut("child process " + std::to_string(pid) + " did not exit in time: killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  pid_ = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace kvx::bench

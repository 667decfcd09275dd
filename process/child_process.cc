#include "process/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace kvx::process {
namespace {

Status errnoStatus(const std::string& what) {
  return internalError(what + ": " + std::strerror(errno));
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void closePipes(int (&in)[2], int (&out)[2], int (&err)[2]) {
  for (int* fds : {in, out, err}) {
    closeFd(fds[0]);
    closeFd(fds[1]);
  }
}

// A poll() timeout that ends by `deadline`, at most one second; 0 once it has passed.
int pollTimeoutMs(Deadline deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

}  // namespace

Result<ChildProcess> ChildProcess::spawn(const std::string& path,
                                         const std::vector<std::string>& args,
                                         SpawnOptions options) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if ((options.stdinPipe && ::pipe2(in, O_CLOEXEC) != 0) || ::pipe2(out, O_CLOEXEC) != 0 ||
      (options.captureStderr && ::pipe2(err, O_CLOEXEC) != 0)) {
    Status status = errnoStatus("pipe2 for the child process " + path);
    closePipes(in, out, err);
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
    closePipes(in, out, err);
    return status;
  }
  if (pid == 0) {
    if (options.killWithParent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) _exit(126);  // the parent died before prctl took effect
    }
    if (options.stdinPipe) ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    if (options.captureStderr) ::dup2(err[1], STDERR_FILENO);
    ::execv(path.c_str(), cargv.data());
    _exit(127);
  }
  closeFd(in[0]);
  closeFd(out[1]);
  closeFd(err[1]);
  return ChildProcess(pid, in[1], out[0], err[0]);
}

Result<ChildProcess> ChildProcess::spawnSelf(const std::vector<std::string>& args,
                                             SpawnOptions options) {
  return spawn("/proc/self/exe", args, options);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      stdinFd_(std::exchange(other.stdinFd_, -1)),
      stdoutFd_(std::exchange(other.stdoutFd_, -1)),
      stderrFd_(std::exchange(other.stderrFd_, -1)),
      buffered_(std::move(other.buffered_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    stdinFd_ = std::exchange(other.stdinFd_, -1);
    stdoutFd_ = std::exchange(other.stdoutFd_, -1);
    stderrFd_ = std::exchange(other.stderrFd_, -1);
    buffered_ = std::move(other.buffered_);
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

Result<std::string> ChildProcess::readLine(std::chrono::milliseconds timeout) {
  const Deadline deadline = deadlineIn(timeout);
  while (true) {
    const auto newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return line;
    }
    if (Clock::now() >= deadline) {
      return timedOut("child process " + std::to_string(pid_) + " printed no line in time");
    }
    pollfd p{stdoutFd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, pollTimeoutMs(deadline));
    if (ready < 0 && errno != EINTR) return errnoStatus("poll on the child's stdout");
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(stdoutFd_, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      return peerFailed("child process " + std::to_string(pid_) +
                        " closed its output (did it crash?)");
    }
    buffered_.append(chunk, static_cast<std::size_t>(n));
  }
}

Result<ChildProcess::Output> ChildProcess::readToEnd(Deadline deadline) {
  Output output;
  output.out = std::exchange(buffered_, {});
  bool outOpen = stdoutFd_ >= 0, errOpen = stderrFd_ >= 0;
  while (outOpen || errOpen) {
    if (Clock::now() >= deadline) {
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
    if (Clock::now() >= deadline) {
      const pid_t pid = pid_;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      return timedOut("child process " + std::to_string(pid) + " did not exit in time: killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  pid_ = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

int ChildProcess::waitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  Result<int> code = waitExit(deadlineIn(timeout));
  return code.isOk() ? *code : 128 + SIGKILL;
}

}  // namespace kvx::process

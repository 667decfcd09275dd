#pragma once

// ChildProcess: a program started with fork/exec whose stdin and stdout (and optionally
// stderr) are pipes held by this object. The child is killed (SIGKILL) when the thread that
// started it exits (PR_SET_PDEATHSIG), so a crashed or killed parent leaves no orphan
// behind; the destructor kills and reaps a child that is still running. Every wait takes a
// deadline.
//
// One owner thread; not thread-safe. Movable, not copyable.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench/bare/deadline.h"
#include "kvx/result.h"

namespace kvx::bench {

class ChildProcess {
 public:
  // Starts `path` with `args` (argv[1..]). With `captureStderr` false the child writes to
  // this process's stderr.
  static Result<ChildProcess> spawn(const std::string& path, const std::vector<std::string>& args,
                                    bool captureStderr);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  int stdinFd() const { return stdinFd_; }    // write end; -1 once closed
  int stdoutFd() const { return stdoutFd_; }  // read end
  int stderrFd() const { return stderrFd_; }  // read end, -1 unless captured
  void closeStdin();

  // Reads stdout (and stderr when captured) until the child closes them. TIMED_OUT, with
  // what was read so far in the message's tail, when `deadline` passes first.
  struct Output {
    std::string out;
    std::string err;
  };
  Result<Output> readToEnd(Deadline deadline);

  // Waits for the child to exit and returns its exit code (128 + signal when killed). At
  // `deadline` the child is killed and TIMED_OUT is returned.
  Result<int> waitExit(Deadline deadline);

 private:
  ChildProcess(pid_t pid, int stdinFd, int stdoutFd, int stderrFd)
      : pid_(pid), stdinFd_(stdinFd), stdoutFd_(stdoutFd), stderrFd_(stderrFd) {}
  void release();

  pid_t pid_ = -1;
  int stdinFd_ = -1;
  int stdoutFd_ = -1;
  int stderrFd_ = -1;
};

}  // namespace kvx::bench

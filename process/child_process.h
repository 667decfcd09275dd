#pragma once

// ChildProcess: a program started with fork/exec, its stdout a pipe held by this object
// (and, when asked, its stdin and stderr). The destructor kills and reaps a child still
// running. Every wait takes a timeout or a deadline. The one child-process class of the
// `kvx` tool, the benchmarks and the tests (the pair_transfer example keeps its own: it
// uses the installed API only).
//
// One owner thread; not thread-safe. Movable, not copyable.

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "kvx/result.h"
#include "kvx/transfer.h"

namespace kvx::process {

struct SpawnOptions {
  bool stdinPipe = false;      // else the child shares this process's stdin
  bool captureStderr = false;  // else the child writes to this process's stderr
  // SIGKILL the child when the thread that started it exits (PR_SET_PDEATHSIG), so that a
  // crashed or killed parent leaves no orphan behind. Only for children started from a
  // thread that outlives them.
  bool killWithParent = false;
};

class ChildProcess {
 public:
  // Starts `path` with `args` (argv[1..]).
  static Result<ChildProcess> spawn(const std::string& path, const std::vector<std::string>& args,
                                    SpawnOptions options = {});
  // Starts this program again (/proc/self/exe).
  static Result<ChildProcess> spawnSelf(const std::vector<std::string>& args,
                                        SpawnOptions options = {});

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // -1 once the child was reaped: never signal it then (kill(-1, ...) reaches every process
  // the caller may signal); signal() checks that.
  pid_t pid() const { return pid_; }
  // Sends `sig` to the child; false, sending nothing, once it was reaped.
  bool signal(int sig) const { return pid_ > 0 && ::kill(pid_, sig) == 0; }
  int stdinFd() const { return stdinFd_; }    // write end; -1 unless piped, or once closed
  int stdoutFd() const { return stdoutFd_; }  // read end
  int stderrFd() const { return stderrFd_; }  // read end, -1 unless captured
  void closeStdin();

  // One line of stdout, without its newline, within `timeout`: TIMED_OUT, or PEER_FAILED
  // when the child closed its stdout first.
  Result<std::string> readLine(std::chrono::milliseconds timeout);

  // Reads stdout (and stderr when captured) until the child closes them; what readLine
  // buffered comes first. TIMED_OUT, with the tail of stderr so far in the message, when
  // `deadline` passes first.
  struct Output {
    std::string out;
    std::string err;
  };
  Result<Output> readToEnd(Deadline deadline);

  // Waits for the child to exit and returns its exit code (128 + signal when killed). At
  // `deadline` the child is killed and TIMED_OUT is returned.
  Result<int> waitExit(Deadline deadline);
  // The same within `timeout`, but a child still running then is killed and its code
  // (128 + SIGKILL) returned; -1 for a child already reaped.
  int waitExit(std::chrono::milliseconds timeout);

 private:
  ChildProcess(pid_t pid, int stdinFd, int stdoutFd, int stderrFd)
      : pid_(pid), stdinFd_(stdinFd), stdoutFd_(stdoutFd), stderrFd_(stderrFd) {}
  void release();

  pid_t pid_ = -1;
  int stdinFd_ = -1;
  int stdoutFd_ = -1;
  int stderrFd_ = -1;
  std::string buffered_;  // stdout read past the last line readLine returned
};

}  // namespace kvx::process

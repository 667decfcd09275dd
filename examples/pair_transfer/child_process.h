#pragma once

// ChildProcess: this program started again as a target, with its stdout piped back so that
// the initiator can read the target's control address.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "kvx/result.h"

namespace pair_transfer {

class ChildProcess {
 public:
  // Starts /proc/self/exe with `args` (argv[1..]).
  static kvx::Result<ChildProcess> spawnSelf(const std::vector<std::string>& args);
  // Starts the program at `path` with `args` (argv[1..]).
  static kvx::Result<ChildProcess> spawn(const std::string& path,
                                         const std::vector<std::string>& args);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  // Kills the child if it is still running.
  ~ChildProcess();

  // One line of the child's stdout, without the newline, by the deadline.
  kvx::Result<std::string> readLine(std::chrono::milliseconds timeout);
  // Waits for the child to exit; kills it when the timeout passes. Returns its exit code.
  int waitExit(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  ChildProcess(pid_t pid, int stdoutFd) : pid_(pid), stdoutFd_(stdoutFd) {}
  pid_t pid_ = -1;
  int stdoutFd_ = -1;
  std::string buffered_;
};

}  // namespace pair_transfer

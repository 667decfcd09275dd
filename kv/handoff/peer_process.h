#pragma once

// The process of a KV peer, as its KvAgentInfo names it, and a watch on whether that process
// has ended. A decode agent uses it to know when a lost prefill agent that copies into this
// agent's pool itself (over shared memory) can no longer write: once its process is gone.
//
// A pid means the same process only inside one pid namespace of one boot of one host, so the
// identity carries a key of those (`host`); a peer whose key differs cannot be watched. The
// watch is a pidfd opened while the peer is known to be alive (at its join), so that a pid the
// kernel hands to another process later is never mistaken for it.
//
// Thread safety: thisProcess() and watchProcess() from any thread; a ProcessWatch is used by
// one thread at a time.

#include <cstdint>
#include <memory>
#include <string>

#include "kvx/result.h"

namespace kvx::kv::handoff {

struct ProcessIdentity {
  std::uint64_t pid = 0;  // 0: not given (an agent too old to say)
  std::string host;       // boot id and pid namespace: "<boot id>/pid:<inode>"

  bool known() const { return pid != 0 && !host.empty(); }
};

// This process. `host` is empty where /proc does not say (the caller then sends no identity).
ProcessIdentity thisProcess();

// A handle on one process: ended() turns true once it has exited (and stays true).
class ProcessWatch {
 public:
  explicit ProcessWatch(int pidfd) : pidfd_(pidfd) {}
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

  bool ended();

 private:
  int pidfd_ = -1;
  bool ended_ = false;
};

// A watch on `who`: FAILED_PRECONDITION when it does not share this process's host key (or
// names no process), NOT_FOUND when no such process runs now, UNIMPLEMENTED when the kernel
// refuses pidfds (before Linux 5.3, or a seccomp policy); the message says which.
Result<std::shared_ptr<ProcessWatch>> watchProcess(const ProcessIdentity& who);

}  // namespace kvx::kv::handoff

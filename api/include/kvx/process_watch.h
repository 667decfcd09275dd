#pragma once

// The identity of a process, and a watch on whether it has ended. A receiver whose peer
// copies into its memory itself (over shared memory: Agent::peerWritesDirectly) must not hand
// that memory to anything else while a lost peer might still write into it. A stopped peer
// process finishes its copy when it resumes; only once it has ended can it write no more.
// The KV agents exchange identities in their handshake; an application on the raw Agent
// puts thisProcess() in its AgentOptions::applicationInfo and watches what its peer put there.
//
// A pid names the same process only inside one pid namespace of one boot of one host, so the
// identity carries a key of those (`host`). A peer whose key differs cannot be watched. The
// watch is a pidfd, opened while the peer is known to be alive (linked), so that a pid the
// kernel later hands to another process is never mistaken for it.
//
// Thread safety: thisProcess() and watchProcess() from any thread; a ProcessWatch is used by
// one thread at a time.

#include <cstdint>
#include <memory>
#include <string>

#include "kvx/result.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

struct ProcessIdentity {
  std::uint64_t pid = 0;  // 0: not given (a peer too old to say)
  std::string host;       // boot id and pid namespace: "<boot id>/pid:<inode>"

  bool known() const { return pid != 0 && !host.empty(); }
};

// This process. `host` is empty where /proc does not say (the caller then sends no identity).
ProcessIdentity thisProcess();

// A handle on one process: ended() turns true once it has exited (and stays true).
class ProcessWatch {
 public:
  // Takes ownership of `pidfd`; -1 stands for a process known to have ended already.
  explicit ProcessWatch(int pidfd) : pidfd_(pidfd), ended_(pidfd < 0) {}
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

}  // namespace kvx
#pragma GCC visibility pop

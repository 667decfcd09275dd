#pragma once

// KvPeerDirectory: the KV peers of one KvAgent, as their handshake left them. A peer's KV
// handshake is the agent's own: its role and pool come in its metadata (KvAgentInfo, in
// AgentOptions::applicationInfo), and it is in the directory from the agent's join event
// until its departure, under one identity, the agent's incarnation.
//
// Threads: the KV service thread records and forgets peers; any thread may read, and
// connect() waits here for the service thread to take a peer in. The lock is a leaf.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kvx/kv_types.h"
#include "kvx/process_watch.h"
#include "kvx/result.h"
#include "kvx/transfer.h"
#include "sync/mutex.h"

namespace kvx::kv {

struct KvPeer {
  std::uint64_t incarnation = 0;  // the agent's, from its join event
  KvRole role = KvRole::kDecode;
  KvMode mode = KvMode::kPush;  // its default direction
  bool compatible = false;
  std::string reason;  // why not compatible
  std::uint64_t totalBlocks = 0;
  std::uint32_t kvHeads = 0;
  ProcessIdentity process;  // where its KvAgentInfo said
};

class KvPeerDirectory {
 public:
  // Service thread. Replaces any earlier entry of that name.
  void record(const std::string& name, KvPeer peer) KVX_EXCLUDES(mutex_);
  // Service thread. True if it was there.
  bool forget(const std::string& name) KVX_EXCLUDES(mutex_);

  std::optional<KvPeer> find(const std::string& name) const KVX_EXCLUDES(mutex_);
  std::map<std::string, KvPeer> all() const KVX_EXCLUDES(mutex_);
  bool compatible(const std::string& name) const KVX_EXCLUDES(mutex_);

  // Waits until `name` is recorded at `incarnation`, `stop` is set (FAILED_PRECONDITION) or
  // `deadline` passes (TIMED_OUT); returns the entry.
  Result<KvPeer> waitFor(const std::string& name, std::uint64_t incarnation, Deadline deadline,
                         const std::atomic<bool>& stop) const KVX_EXCLUDES(mutex_);
  // Wakes waiters, to see `stop`.
  void wakeAll() KVX_EXCLUDES(mutex_);

 private:
  mutable sync::Mutex mutex_;
  mutable std::condition_variable changed_;
  std::map<std::string, KvPeer> peers_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::kv

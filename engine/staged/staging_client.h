#pragma once

// StagingClient: the initiator side's directory of its RemoteStagedWires. It gives each wire
// the id that prefixes its request ids, routes each staging reply from a peer to the wire
// that asked (a reply naming no live wire, or a wire of another peer, is dropped), and
// ticks the wires so that late replies and lost links are noticed. A slot granted or filled
// for a wire that has ended meanwhile (its move timed out or failed) is an orphan: it is
// queued, and the engine gives the slot back (takeOrphans), so that the peer's window does
// not lose it.
//
// Thread safety: every member may be called from any thread; route() from the transport's
// message handler (it only queues on the wire). Lifetime: owned by the engine; wires
// register themselves weakly and may outlive it only as unreachable objects.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/staged/remote_staged_wire.h"
#include "sync/mutex.h"

namespace kvx::engine {

class StagingClient {
 public:
  // A fresh wire id (never 0, never reused while its wire lives).
  std::uint32_t nextWireId();
  void add(std::uint32_t wireId, const std::string& peer,
           const std::shared_ptr<RemoteStagedWire>& wire);
  void remove(std::uint32_t wireId);

  // Hands `reply` from `peer` to its wire; false when no live wire of that peer asked.
  bool route(const std::string& peer, const StagingReply& reply);
  // The releases owed for orphaned slots, by peer; cheap when there are none.
  std::vector<std::pair<std::string, StagingRequest>> takeOrphans();
  // Ticks every live wire (at most every `every`); true if it ticked.
  bool tick(std::chrono::steady_clock::time_point now,
            std::chrono::milliseconds every = std::chrono::milliseconds(10));

 private:
  struct Entry {
    std::string peer;
    std::weak_ptr<RemoteStagedWire> wire;
  };
  sync::Mutex mutex_;  // leaf lock: never held while calling a wire
  std::unordered_map<std::uint32_t, Entry> wires_ KVX_GUARDED_BY(mutex_);
  std::uint32_t nextId_ KVX_GUARDED_BY(mutex_) = 1;
  std::chrono::steady_clock::time_point lastTick_ KVX_GUARDED_BY(mutex_);
  std::vector<std::pair<std::string, StagingRequest>> orphans_ KVX_GUARDED_BY(mutex_);
  std::atomic<bool> hasOrphans_{false};
};

}  // namespace kvx::engine

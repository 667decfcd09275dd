#pragma once

// InprocFabric: the process-wide switchboard that in-process transports reach each other
// and each other's memory through. Addresses and remote keys are 8-byte ids in it.
// Copies into a transport's memory run under the fabric lock, and a transport can refuse a
// peer's (refuse(), for Transport::dropPeer): once refuse() returns, no copy of that peer is
// in progress in its memory and none starts, so that, as over tcp, closing a peer's link is
// the end of its writes (Endpoint::peerWritesDirectly is false here).

#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>

#include "sync/mutex.h"

namespace kvx::engine::inproc {

class InprocTransport;

class InprocFabric {
 public:
  static InprocFabric& instance();

  std::uint64_t attach(InprocTransport* transport);
  void detach(std::uint64_t transportId);

  std::uint64_t addMemory(std::uint64_t ownerId, void* address, std::uint64_t length);
  void removeMemory(std::uint64_t memoryId);
  bool hasMemory(std::uint64_t memoryId);

  // Transport `ownerId` refuses copies of transport `writerId` from now on (its copies in
  // progress have finished when this returns); admit() lifts that (a new link to it).
  void refuse(std::uint64_t ownerId, std::uint64_t writerId);
  void admit(std::uint64_t ownerId, std::uint64_t writerId);

  enum class Access : std::uint8_t { kDone, kOutside, kRefused };
  // Runs `copy(remoteBase)` under the fabric lock if [remoteAddress, +length) lies inside
  // memory `memoryId` and its owner does not refuse `writerId`, so that the region cannot be
  // removed, nor the writer refused, during the copy. `copy` returns false to skip it (an
  // endpoint closed meanwhile); kDone then too.
  template <typename Copy>
  Access withRemoteRange(std::uint64_t writerId, std::uint64_t memoryId,
                         std::uint64_t remoteAddress, std::uint64_t length, Copy&& copy) {
    sync::MutexLock lock(mutex_);
    auto it = memory_.find(memoryId);
    if (it == memory_.end()) return Access::kOutside;
    const Memory& m = it->second;
    if (refused_.contains({m.owner, writerId})) return Access::kRefused;
    const auto base = reinterpret_cast<std::uint64_t>(m.address);
    if (remoteAddress < base || length > m.length || remoteAddress - base > m.length - length) {
      return Access::kOutside;
    }
    (void)copy(reinterpret_cast<void*>(remoteAddress));
    return Access::kDone;
  }
  // Runs `fn()` under the fabric lock: after it, no copy that started before is running.
  template <typename Fn>
  void exclusive(Fn&& fn) {
    sync::MutexLock lock(mutex_);
    fn();
  }

  // Calls `fn(transport)` under the fabric lock if the transport is still attached.
  template <typename Fn>
  bool withTransport(std::uint64_t transportId, Fn&& fn) {
    sync::MutexLock lock(mutex_);
    auto it = transports_.find(transportId);
    if (it == transports_.end()) return false;
    fn(*it->second);
    return true;
  }

 private:
  struct Memory {
    std::uint64_t owner;
    void* address;
    std::uint64_t length;
  };

  sync::Mutex mutex_;
  std::uint64_t nextId_ KVX_GUARDED_BY(mutex_) = 1;
  std::unordered_map<std::uint64_t, InprocTransport*> transports_ KVX_GUARDED_BY(mutex_);
  std::unordered_map<std::uint64_t, Memory> memory_ KVX_GUARDED_BY(mutex_);
  std::set<std::pair<std::uint64_t, std::uint64_t>> refused_ KVX_GUARDED_BY(mutex_);
};

}  // namespace kvx::engine::inproc

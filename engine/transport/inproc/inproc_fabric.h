#pragma once

// InprocFabric: the process-wide switchboard that in-process transports reach each other
// and each other's memory through. Addresses and remote keys are 8-byte ids in it.

#include <cstdint>
#include <unordered_map>

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

  // Runs `copy(remoteBase)` under the fabric lock if [remoteAddress, +length) lies inside
  // memory `memoryId`, so the region cannot be removed during the copy. Returns false if not.
  template <typename Copy>
  bool withRemoteRange(std::uint64_t memoryId, std::uint64_t remoteAddress, std::uint64_t length,
                       Copy&& copy) {
    sync::MutexLock lock(mutex_);
    auto it = memory_.find(memoryId);
    if (it == memory_.end()) return false;
    const Memory& m = it->second;
    const auto base = reinterpret_cast<std::uint64_t>(m.address);
    if (remoteAddress < base || length > m.length || remoteAddress - base > m.length - length) {
      return false;
    }
    copy(reinterpret_cast<void*>(remoteAddress));
    return true;
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
};

}  // namespace kvx::engine::inproc

#include "engine/transport/inproc/inproc_fabric.h"

namespace kvx::engine::inproc {

InprocFabric& InprocFabric::instance() {
  static InprocFabric fabric;
  return fabric;
}

std::uint64_t InprocFabric::attach(InprocTransport* transport) {
  sync::MutexLock lock(mutex_);
  const std::uint64_t id = nextId_++;
  transports_[id] = transport;
  return id;
}

void InprocFabric::detach(std::uint64_t transportId) {
  sync::MutexLock lock(mutex_);
  transports_.erase(transportId);
  std::erase_if(refused_, [&](const auto& pair) {
    return pair.first == transportId || pair.second == transportId;
  });
}

std::uint64_t InprocFabric::addMemory(std::uint64_t ownerId, void* address, std::uint64_t length) {
  sync::MutexLock lock(mutex_);
  const std::uint64_t id = nextId_++;
  memory_[id] = Memory{ownerId, address, length};
  return id;
}

void InprocFabric::refuse(std::uint64_t ownerId, std::uint64_t writerId) {
  sync::MutexLock lock(mutex_);
  refused_.insert({ownerId, writerId});
}

void InprocFabric::admit(std::uint64_t ownerId, std::uint64_t writerId) {
  sync::MutexLock lock(mutex_);
  refused_.erase({ownerId, writerId});
}

void InprocFabric::removeMemory(std::uint64_t memoryId) {
  sync::MutexLock lock(mutex_);
  memory_.erase(memoryId);
}

bool InprocFabric::hasMemory(std::uint64_t memoryId) {
  sync::MutexLock lock(mutex_);
  return memory_.count(memoryId) != 0;
}

}  // namespace kvx::engine::inproc

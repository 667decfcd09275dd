#include "engine/transport/inproc/inproc_memory.h"

#include <cstring>

#include "engine/transport/inproc/inproc_fabric.h"

namespace kvx::engine::inproc {

InprocMemory::InprocMemory(std::uint64_t owner, void* address, std::uint64_t length,
                           MemoryKind kind, std::unique_ptr<std::uint8_t[]> owned)
    : address_(address), length_(length), kind_(kind), owned_(std::move(owned)) {
  memoryId_ = InprocFabric::instance().addMemory(owner, address_, length_);
  std::memcpy(packedKey_, &memoryId_, sizeof(packedKey_));
}

InprocMemory::~InprocMemory() { InprocFabric::instance().removeMemory(memoryId_); }

}  // namespace kvx::engine::inproc

#pragma once

// TransportMemory: a memory region registered with (or allocated by) a transport.

#include <cstdint>
#include <span>

#include "kvx/memory.h"

namespace kvx::engine {

// Owned by the caller of Transport::registerMemory/allocateMemory; destroying it deregisters
// (and, for allocated memory, frees) the region. It must be destroyed before its Transport.
// Thread safety: the accessors are const and safe from any thread.
class TransportMemory {
 public:
  virtual ~TransportMemory() = default;

  virtual void* address() const = 0;
  virtual std::uint64_t length() const = 0;
  virtual MemoryKind kind() const = 0;
  // The packed remote key a peer needs to address this region; empty for a transport
  // that needs none.
  virtual std::span<const std::uint8_t> packedRemoteKey() const = 0;
  // The transport's own object for this region, which a transport's endpoint looks for when
  // it posts: itself, unless this one wraps it (GpuAllocatedMemory).
  virtual const TransportMemory& registration() const { return *this; }
};

}  // namespace kvx::engine

#pragma once

// LocalRegion: one region registered with this agent, with its transport registration.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/transport/transport_memory.h"
#include "kvx/memory.h"

namespace kvx::engine {

// Shared by the registry and by every transfer that uses the region, so that a transfer's
// plan never points at a freed registration. `deregistered` is set when the owner removes
// the region; a transfer checks it when posted and refuses to touch the memory afterwards.
struct LocalRegion {
  RegionInfo info;
  std::unique_ptr<TransportMemory> memory;
  std::atomic<bool> deregistered{false};
  std::atomic<std::uint32_t> pendingTransfers{0};  // guarded for writes by the registry mutex

  std::uint8_t* base() const { return static_cast<std::uint8_t*>(memory->address()); }
};

}  // namespace kvx::engine

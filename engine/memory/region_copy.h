#pragma once

// Copies between host bytes and a registered region, outside any transfer: Engine's
// copyIntoRegion and copyFromRegion (filling and checking contents from the host in tests
// and benchmarks). Host regions are memcpy'd; CUDA regions go through the copy engine of
// their device, from or to a buffer the copy owns, so that a copy still running at the
// deadline never touches the caller's memory. The region is pinned (it cannot be
// deregistered) until its copy is done.
//
// Thread safety: any thread; the call waits for its copy until the deadline.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "engine/gpu/copy_engine.h"
#include "engine/memory/memory_registry.h"
#include "kvx/transfer.h"

namespace kvx::engine {

// The copy engine of a CUDA device, or why there is none. REQUIRES: the registry outlives
// every copy its engines run (the engine closes its copy engines before the registry goes).
using CopyEngineOf = std::function<Result<gpu::CopyEngine*>(int device)>;

Status copyIntoRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                      std::uint64_t offset, std::span<const std::byte> bytes, Deadline deadline);
Status copyFromRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                      std::uint64_t offset, std::span<std::byte> out, Deadline deadline);

}  // namespace kvx::engine

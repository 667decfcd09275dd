#pragma once

// Copies between host bytes and registered regions, outside any transfer: Engine's
// copyIntoRegion, copyFromRegion and their batched forms (filling and checking contents from
// the host in tests and benchmarks). Host regions are memcpy'd; CUDA regions go through the
// copy engine of their device, from or to a buffer the copy owns, so that a copy still
// running at the deadline never touches the caller's memory. Each region is pinned (it
// cannot be deregistered) until its copy is done. A batch submits every piece before it
// waits, so N small pieces of GPU memory cost about one copy-engine round trip, not N.
//
// Thread safety: any thread; the call waits for its copies until the deadline.

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

// One piece of a batched copy (kvx/memory.h).
using RegionPiece = RegionCopy;

Status copyIntoRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                      std::uint64_t offset, std::span<const std::byte> bytes, Deadline deadline);
Status copyFromRegion(MemoryRegistry& registry, const CopyEngineOf& engineOf, RegionId id,
                      std::uint64_t offset, std::span<std::byte> out, Deadline deadline);

// Every piece, host -> region (`into`) or region -> host. Nothing is copied when a piece
// names an unknown region or a range outside its region (INVALID_ARGUMENT naming the piece);
// the first copy error otherwise, after every submitted copy has completed or the deadline
// passed (TIMED_OUT; host bytes of a read are then left alone).
Status copyRegionPieces(MemoryRegistry& registry, const CopyEngineOf& engineOf,
                        std::span<const RegionPiece> pieces, bool into, Deadline deadline);

}  // namespace kvx::engine

#pragma once

// What a memory region is: where it lives (kind and device), how long it is, and whether
// peers may address it. The kind and device are part of every region from the start, so
// that GPU memory and per-device rails fit without changing the vocabulary.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kvx/ids.h"

// Declarations here are libkvx.so's exports (api/shared_library/).
#pragma GCC visibility push(default)
namespace kvx {

enum class MemoryKind : std::uint8_t {
  kHost = 0,  // ordinary (pageable or pinned) host memory
  kCuda = 1,  // CUDA device memory
};

std::string_view toString(MemoryKind kind);
std::optional<MemoryKind> parseMemoryKind(std::string_view text);

// Memory the caller already owns and asks the agent to register.
// The caller keeps ownership and must keep it valid until deregisterMemory returns.
struct MemoryRegionSpec {
  std::string name;  // unique within the agent, e.g. "kv.layer3"; shown in errors
  void* address = nullptr;
  std::uint64_t length = 0;
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;      // CUDA device ordinal for kCuda; -1 for host memory
  bool exposed = true;  // false: usable as a local side only, never in metadata
};

// Memory the agent allocates itself; on shared memory UCX can then move it one-sidedly.
struct AllocationSpec {
  std::string name;
  std::uint64_t length = 0;
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;
  bool exposed = true;
  // Host memory: make every page present now, so that the first transfers into or out of
  // the region run at full speed instead of faulting it in 4 KiB at a time (2-3 GB/s
  // instead of 15-20 on this machine). Costs the pages' memory and about 0.6 s per GiB at
  // allocation. False for regions much larger than what will ever be touched.
  bool populate = true;
};

// A registered region as the agent reports it, locally or from a peer's metadata.
struct RegionInfo {
  RegionId id;
  std::string name;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;
  bool exposed = true;
};

// A region allocated by the agent: its id and where the caller may read and write it.
struct AllocatedRegion {
  RegionId id;
  void* address = nullptr;
  std::uint64_t length = 0;
};

// A byte range inside one region (local or remote, depending on where it is used).
struct MemoryRange {
  RegionId region;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// One piece of a batched host copy (Agent::copyRegionPieces): `length` host bytes at `host`
// <-> [offset, +length) of the local region `region`. The host bytes are read (into a
// region) or written (out of one) only by the calling thread.
struct RegionCopy {
  RegionId region;
  std::uint64_t offset = 0;
  std::byte* host = nullptr;
  std::size_t length = 0;
};

}  // namespace kvx
#pragma GCC visibility pop

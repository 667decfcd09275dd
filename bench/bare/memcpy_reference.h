#pragma once

// The memcpy reference: how fast this process copies `segmentBytes` pieces from DRAM, the
// ceiling WORKLOADS.md compares the shared-memory path with. Source and destination are each
// at least 8 times the last-level cache (and at least `minBufferBytes`, and 256 MiB), pre-faulted,
// and walked piece by piece from start to end, again and again, so that no copy is cache-hot
// (unless a piece is larger than the buffer share the cache holds, which it cannot be).
//
// Runs on the calling thread; allocates and frees its buffers.

#include <cstdint>

#include "bench/bare/bare_ucp_result.h"
#include "kvx/result.h"

namespace kvx::bench {

// The last-level cache size in bytes from sysfs (0 when unknown).
std::uint64_t lastLevelCacheBytes();

// Copies for about `seconds` (at least one pass over the buffer).
// REQUIRES: segmentBytes > 0, seconds > 0.
Result<MemcpyFigures> measureMemcpy(std::uint64_t segmentBytes, std::uint64_t minBufferBytes,
                                    double seconds);

}  // namespace kvx::bench

#pragma once

// RemoteRegion: a region a peer exposed, as its metadata described it.

#include <atomic>
#include <cstdint>
#include <vector>

#include "kvx/memory.h"

namespace kvx::engine {

// Shared by the peer's table and by transfers that address it. `removed` is set when the
// peer withdraws the region; transfers check it when posted.
struct RemoteRegion {
  RegionInfo info;
  std::vector<std::uint8_t> packedKey;
  std::atomic<bool> removed{false};
};

}  // namespace kvx::engine

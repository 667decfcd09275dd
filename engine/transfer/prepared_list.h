#pragma once

// PreparedList: a descriptor list validated and resolved once (regions looked up, bounds
// checked), so that transfers can later be made from it by index with no lookups.

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/memory/local_region.h"
#include "engine/peer/remote_peer.h"
#include "engine/peer/remote_region.h"

namespace kvx::engine {

struct LocalListEntry {
  std::shared_ptr<LocalRegion> region;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

struct RemoteListEntry {
  std::shared_ptr<RemoteRegion> region;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// Exactly one of `local` and `remote` is used; `peer` is set for remote lists.
struct PreparedList {
  std::shared_ptr<RemotePeer> peer;
  std::vector<LocalListEntry> local;
  std::vector<RemoteListEntry> remote;
  bool isRemote() const { return peer != nullptr; }
};

}  // namespace kvx::engine

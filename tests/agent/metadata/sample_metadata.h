#pragma once

// Sample PeerMetadata for codec and channel tests: binary fields hold every byte value that
// is easy to mangle (0x00, 0xff, 0x7f, 0x80).

#include <cstdint>
#include <string>

#include "engine/peer/peer_metadata.h"

namespace kvx::test {

inline engine::PeerMetadata sampleMetadata(std::string name = "agent-a", int regions = 2) {
  engine::PeerMetadata metadata;
  metadata.name = std::move(name);
  metadata.incarnation = 0xfedcba9876543210ULL;
  metadata.transport = "ucx";
  metadata.dataAddress = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xab};
  for (int i = 0; i < regions; ++i) {
    engine::RegionMetadata region;
    region.info.id = RegionId(static_cast<std::uint64_t>(i + 1));
    region.info.name = "kv.layer" + std::to_string(i);
    region.info.address = 0x7f0000000000ULL + static_cast<std::uint64_t>(i) * 0x100000;
    region.info.length = 65536;
    region.info.kind = i % 2 == 0 ? MemoryKind::kHost : MemoryKind::kCuda;
    region.info.device = i % 2 == 0 ? -1 : 0;
    region.packedKey = {0x00, static_cast<std::uint8_t>(i), 0xff, 0x10};
    metadata.regions.push_back(region);
  }
  return metadata;
}

inline bool sameMetadata(const engine::PeerMetadata& a, const engine::PeerMetadata& b) {
  if (a.name != b.name || a.incarnation != b.incarnation || a.transport != b.transport ||
      a.dataAddress != b.dataAddress || a.regions.size() != b.regions.size() ||
      a.applicationInfo != b.applicationInfo) {
    return false;
  }
  for (std::size_t i = 0; i < a.regions.size(); ++i) {
    const auto& x = a.regions[i];
    const auto& y = b.regions[i];
    if (x.info.id != y.info.id || x.info.name != y.info.name || x.info.address != y.info.address ||
        x.info.length != y.info.length || x.info.kind != y.info.kind ||
        x.info.device != y.info.device || x.info.exposed != y.info.exposed ||
        x.packedKey != y.packedKey) {
      return false;
    }
  }
  return true;
}

}  // namespace kvx::test

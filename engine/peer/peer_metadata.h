#pragma once

// PeerMetadata: what one agent tells another about itself so that the other can address its
// memory. Plain data: encoding it (JSON over the control channel, or a blob) is the agent
// layer's business.

#include <cstdint>
#include <string>
#include <vector>

#include "kvx/memory.h"

namespace kvx::engine {

struct RegionMetadata {
  RegionInfo info;                      // id, name, address, length, kind, device
  std::vector<std::uint8_t> packedKey;  // the transport's packed remote key
};

struct PeerMetadata {
  std::string name;                       // agent name, unique among peers
  std::uint64_t incarnation = 0;          // random per agent start; tells restarts apart
  std::string transport;                  // transport registry name, e.g. "ucx"
  std::vector<std::uint8_t> dataAddress;  // Transport::localAddress() of the agent
  std::vector<RegionMetadata> regions;    // exposed regions only
};

}  // namespace kvx::engine

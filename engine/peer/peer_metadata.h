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

// The agent's staging window (engine/staged/staging_window.h): `slots` host buffers of
// `slotBytes` each, back to back from `address`, registered with its transport as one region
// whose packed key this is. Through it the agent copies, on a peer's request, into and out of
// its GPU regions that its transport cannot register. `slots == 0`: the agent has none.
struct StagingWindowMetadata {
  std::uint64_t address = 0;
  std::uint64_t slotBytes = 0;
  std::uint32_t slots = 0;
  std::vector<std::uint8_t> packedKey;

  bool present() const { return slots > 0 && slotBytes > 0; }
};

struct PeerMetadata {
  std::string name;                       // agent name, unique among peers
  std::uint64_t incarnation = 0;          // random per agent start; tells restarts apart
  std::string transport;                  // transport registry name, e.g. "ucx"
  std::vector<std::uint8_t> dataAddress;  // Transport::localAddress() of the agent
  std::vector<RegionMetadata> regions;    // exposed regions only
  StagingWindowMetadata stagingWindow;    // absent (slots 0) in older agents' metadata
  // The application's description of the agent (AgentOptions::applicationInfo): opaque
  // here, fixed for an incarnation. Empty: none.
  std::string applicationInfo;
};

}  // namespace kvx::engine

#pragma once

// HelloAck: the server's reply to an accepted Hello, carrying the server's metadata and, like
// Hello, its peer timeout (heartbeat.h). After it both sides consider the link established.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>

#include "agent/channel/message_type.h"
#include "engine/peer/peer_metadata.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct HelloAck {
  static constexpr MessageType kType = MessageType::kHelloAck;

  engine::PeerMetadata metadata;
  // [kMinPeerTimeoutMs, kMaxPeerTimeoutMs]; absent from a peer without heartbeats.
  std::optional<std::uint64_t> peerTimeoutMs;
  // Whether the server already knew the client at this incarnation, over a link still
  // established, and keeps what it holds for it (rejoin.h). Absent from older servers:
  // then the client does not check.
  std::optional<bool> knewYou;

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR naming the field ("hello_ack.metadata.regions[3].length: ...") on any violation.
  static Result<HelloAck> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

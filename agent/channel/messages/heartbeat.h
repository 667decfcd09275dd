#pragma once

// Heartbeat: a sign of life, sent on an established link every heartbeat interval by each
// side whose peer asked for it. Its payload is an empty JSON object ("{}"); fields added by
// later versions are ignored. The receiver does nothing with it: any frame received, this
// one or another, restarts the peer's silence clock.
//
// Negotiation and compatibility: Hello and HelloAck carry the sender's `peerTimeoutMs` (how
// long it waits for a sign of life before it declares the link dead). A peer that announces
// it is sent heartbeats and is itself timed out; a peer that does not (a kvx version before
// heartbeats) is neither, because such a version closes a link on any message type it does
// not know (PROTOCOL_ERROR), and sends nothing on an idle link.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>

#include "agent/channel/message_type.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

// The range of `peerTimeoutMs` accepted in a Hello or HelloAck: a peer's timeout sets how
// often we send it heartbeats (at least twice per timeout), so a tiny one is refused.
inline constexpr std::uint64_t kMinPeerTimeoutMs = 20;
inline constexpr std::uint64_t kMaxPeerTimeoutMs = 24ull * 3600 * 1000;

struct Heartbeat {
  static constexpr MessageType kType = MessageType::kHeartbeat;

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR unless the payload is a JSON object.
  static Result<Heartbeat> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

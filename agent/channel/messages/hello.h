#pragma once

// Hello: the first frame a client sends on a new connection, carrying its metadata and,
// optionally, the role it plays ("prefill", "decode"; free text for logs and policy) and its
// peer timeout, which announces that it sends and expects heartbeats (heartbeat.h).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "agent/channel/message_type.h"
#include "engine/peer/peer_metadata.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct Hello {
  static constexpr MessageType kType = MessageType::kHello;
  static constexpr std::size_t kMaxRoleBytes = 64;

  engine::PeerMetadata metadata;
  std::optional<std::string> role;  // at most kMaxRoleBytes of [A-Za-z0-9._-]
  // [kMinPeerTimeoutMs, kMaxPeerTimeoutMs]; absent from a peer without heartbeats.
  std::optional<std::uint64_t> peerTimeoutMs;

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR naming the field ("hello.metadata.regions[3].length: ...") on any violation.
  static Result<Hello> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

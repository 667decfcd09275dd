#pragma once

// HelloAck: the server's reply to an accepted Hello, carrying the server's metadata. After it both
// sides consider the link established.

#include <nlohmann/json_fwd.hpp>

#include "agent/channel/message_type.h"
#include "engine/peer/peer_metadata.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct HelloAck {
  static constexpr MessageType kType = MessageType::kHelloAck;

  engine::PeerMetadata metadata;

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR naming the field ("hello_ack.metadata.regions[3].length: ...") on any violation.
  static Result<HelloAck> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

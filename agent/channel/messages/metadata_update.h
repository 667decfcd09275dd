#pragma once

// MetadataUpdate: the sender's new metadata (regions registered or removed), sent to every
// established peer. The name must stay the one given in the handshake.

#include <nlohmann/json_fwd.hpp>

#include "agent/channel/message_type.h"
#include "engine/peer/peer_metadata.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct MetadataUpdate {
  static constexpr MessageType kType = MessageType::kMetadataUpdate;

  engine::PeerMetadata metadata;

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR naming the field ("metadata_update.metadata.regions[3].length: ...") on any
  // violation.
  static Result<MetadataUpdate> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

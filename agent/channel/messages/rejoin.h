#pragma once

// Rejoin and RejoinAck: the end of a handshake between two agents whose views of each other
// differ. A HelloAck says whether the server already knew the client (HelloAck::knewYou:
// the same incarnation, over a link still established). When it did but the client holds
// nothing of the server any more (the client dropped the peer, e.g. after its data path
// failed, and the server has not yet seen the old link close), the client sends Rejoin on
// the new link: the server then forgets all it held for the client, as if the old link had
// closed, takes the client as new and answers RejoinAck. The client's connect completes only
// with that answer, so nothing it sends afterwards meets the state of the old session.
// Both payloads are an empty JSON object; fields added by later versions are ignored.

#include <nlohmann/json_fwd.hpp>

#include "agent/channel/message_type.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct Rejoin {
  static constexpr MessageType kType = MessageType::kRejoin;

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR unless the payload is a JSON object.
  static Result<Rejoin> fromJson(const nlohmann::json& value);
};

struct RejoinAck {
  static constexpr MessageType kType = MessageType::kRejoinAck;

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR unless the payload is a JSON object.
  static Result<RejoinAck> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

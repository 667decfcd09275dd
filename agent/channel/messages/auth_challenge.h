#pragma once

// AuthChallenge: the server's answer to AuthBegin (the exchange is described in
// auth_begin.h): its own fresh nonce and its proof that it holds the token.

#include <nlohmann/json_fwd.hpp>

#include "agent/channel/message_type.h"
#include "agent/channel/messages/auth_bytes.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct AuthChallenge {
  static constexpr MessageType kType = MessageType::kAuthChallenge;

  AuthBytes nonce{};  // the server's, fresh for this connection
  AuthBytes proof{};  // HMAC(token, "kvx-server" | client nonce | server nonce)

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR naming the field unless both are 64 lowercase hex characters.
  static Result<AuthChallenge> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

#pragma once

// AuthResponse: the client's proof that it holds the token, sent once it has checked the
// server's (the exchange is described in auth_begin.h). The client's Hello follows it.

#include <nlohmann/json_fwd.hpp>

#include "agent/channel/message_type.h"
#include "agent/channel/messages/auth_bytes.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct AuthResponse {
  static constexpr MessageType kType = MessageType::kAuthResponse;

  AuthBytes proof{};  // HMAC(token, "kvx-client" | server nonce | client nonce)

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR naming the field unless `proof` is 64 lowercase hex characters.
  static Result<AuthResponse> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

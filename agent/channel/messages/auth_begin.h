#pragma once

// AuthBegin: the first frame a client sends when it holds an auth token: its fresh nonce.
// The authentication exchange (both sides must hold the same token; see
// agent/channel/auth_proof.h for the proofs):
//   client -> server  auth_begin      {nonce: Nc}
//   server -> client  auth_challenge  {nonce: Ns, proof: HMAC(token, "kvx-server"|Nc|Ns)}
//   client -> server  auth_response   {proof: HMAC(token, "kvx-client"|Ns|Nc)}
// then the usual hello / hello_ack. Each side checks the other's proof before it sends its
// metadata, so neither reveals anything to a peer without the token.

#include <nlohmann/json_fwd.hpp>

#include "agent/channel/message_type.h"
#include "agent/channel/messages/auth_bytes.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

struct AuthBegin {
  static constexpr MessageType kType = MessageType::kAuthBegin;

  AuthBytes nonce{};  // the client's, fresh for this connection

  nlohmann::json toJson() const;
  // PROTOCOL_ERROR naming the field unless `nonce` is 64 lowercase hex characters.
  static Result<AuthBegin> fromJson(const nlohmann::json& value);
};

}  // namespace kvx::agent::channel

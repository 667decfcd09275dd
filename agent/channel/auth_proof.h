#pragma once

// The proofs of the control channel's mutual authentication (the exchange is in
// messages/auth_begin.h). Both agents hold the same secret token; each proves it to the
// other without sending it, over two nonces chosen fresh for the connection:
//   server proof = HMAC-SHA256(token, "kvx-server" | client nonce | server nonce)
//   client proof = HMAC-SHA256(token, "kvx-client" | server nonce | client nonce)
// The labels keep a proof from being reflected back as the other side's; the fresh nonces
// keep a proof seen on one connection from being replayed on another.
//
// Stateless and thread-safe (crypto/: OpenSSL libcrypto). The token is never logged or copied out.

#include <cstdint>
#include <span>
#include <string_view>

#include "agent/channel/messages/auth_bytes.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

// HMAC-SHA256(token, label | first | second): the shape of every value the channel derives
// from the token and a connection's nonces (the proofs below, the frame keys of frame_seal.h).
AuthBytes tokenHmac(std::string_view token, std::string_view label, const AuthBytes& first,
                    const AuthBytes& second);

// kAuthBytes from the system's CSPRNG (RAND_bytes); INTERNAL if it fails.
Result<AuthBytes> randomNonce();

AuthBytes serverProof(std::string_view token, const AuthBytes& clientNonce,
                      const AuthBytes& serverNonce);
AuthBytes clientProof(std::string_view token, const AuthBytes& serverNonce,
                      const AuthBytes& clientNonce);

// Whether `received` equals `expected`, in time independent of where they differ.
bool proofMatches(const AuthBytes& expected, const AuthBytes& received);

}  // namespace kvx::agent::channel

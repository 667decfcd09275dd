#include "agent/channel/auth_proof.h"

#include <string>
#include <vector>

#include "crypto/hmac_sha256.h"
#include "crypto/random_bytes.h"

namespace kvx::agent::channel {

AuthBytes tokenHmac(std::string_view token, std::string_view label, const AuthBytes& first,
                    const AuthBytes& second) {
  std::vector<std::uint8_t> data(label.begin(), label.end());
  data.insert(data.end(), first.begin(), first.end());
  data.insert(data.end(), second.begin(), second.end());
  return crypto::hmacSha256({reinterpret_cast<const std::uint8_t*>(token.data()), token.size()},
                            data);
}

Result<AuthBytes> randomNonce() {
  AuthBytes nonce{};
  KVX_RETURN_IF_ERROR(crypto::randomBytes(nonce, "an authentication nonce"));
  return nonce;
}

AuthBytes serverProof(std::string_view token, const AuthBytes& clientNonce,
                      const AuthBytes& serverNonce) {
  return tokenHmac(token, "kvx-server", clientNonce, serverNonce);
}

AuthBytes clientProof(std::string_view token, const AuthBytes& serverNonce,
                      const AuthBytes& clientNonce) {
  return tokenHmac(token, "kvx-client", serverNonce, clientNonce);
}

bool proofMatches(const AuthBytes& expected, const AuthBytes& received) {
  return crypto::bytesMatch(expected.data(), received.data(), expected.size());
}

}  // namespace kvx::agent::channel

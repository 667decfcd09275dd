#include "agent/channel/auth_proof.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <string>
#include <vector>

namespace kvx::agent::channel {

AuthBytes tokenHmac(std::string_view token, std::string_view label, const AuthBytes& first,
                    const AuthBytes& second) {
  std::vector<std::uint8_t> data(label.begin(), label.end());
  data.insert(data.end(), first.begin(), first.end());
  data.insert(data.end(), second.begin(), second.end());
  return hmacSha256({reinterpret_cast<const std::uint8_t*>(token.data()), token.size()}, data);
}

AuthBytes hmacSha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> data) {
  AuthBytes out{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data.data(), data.size(),
           out.data(), &length) == nullptr ||
      length != out.size()) {
    out.fill(0);
  }
  return out;
}

Result<AuthBytes> randomNonce() {
  AuthBytes nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    char text[256] = {};
    ERR_error_string_n(ERR_get_error(), text, sizeof text);
    return internalError(std::string("RAND_bytes failed to make an authentication nonce: ") + text);
  }
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
  return CRYPTO_memcmp(expected.data(), received.data(), expected.size()) == 0;
}

}  // namespace kvx::agent::channel

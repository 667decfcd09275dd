#include "crypto/hmac_sha256.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace kvx::crypto {

Key256 hmacSha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> data) {
  Key256 out{};
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data.data(), data.size(),
           out.data(), &length) == nullptr ||
      length != out.size()) {
    out.fill(0);
  }
  return out;
}

bool bytesMatch(const std::uint8_t* a, const std::uint8_t* b, std::size_t size) {
  return CRYPTO_memcmp(a, b, size) == 0;
}

}  // namespace kvx::crypto

#pragma once

// HMAC-SHA256 (libcrypto). Stateless and thread-safe.

#include <cstdint>
#include <span>

#include "crypto/key_bytes.h"

namespace kvx::crypto {

// HMAC-SHA256 of `data` under `key`; all zero in the one case it cannot be made (allocation
// failure inside OpenSSL), which then simply fails to match on the other side.
Key256 hmacSha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> data);

// Whether the `size` bytes at `a` and `b` are equal, in time independent of where they differ.
bool bytesMatch(const std::uint8_t* a, const std::uint8_t* b, std::size_t size);

}  // namespace kvx::crypto

#pragma once

// Key256: a 256-bit key or digest (an HMAC-SHA256 output, an AES-256 key); GcmTag: the
// 128-bit tag of an AES-GCM message.

#include <array>
#include <cstddef>
#include <cstdint>

namespace kvx::crypto {

inline constexpr std::size_t kKeyBytes = 32;
inline constexpr std::size_t kGcmTagBytes = 16;

using Key256 = std::array<std::uint8_t, kKeyBytes>;
using GcmTag = std::array<std::uint8_t, kGcmTagBytes>;

}  // namespace kvx::crypto

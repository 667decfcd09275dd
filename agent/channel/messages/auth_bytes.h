#pragma once

// AuthBytes: a nonce or a proof of the control channel's authentication (auth_begin.h), 32
// bytes, carried in JSON as 64 lowercase hex characters. Stateless and thread-safe.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "json/json_reader.h"
#include "kvx/result.h"

namespace kvx::agent::channel {

inline constexpr std::size_t kAuthBytes = 32;
using AuthBytes = std::array<std::uint8_t, kAuthBytes>;

// 64 lowercase hex characters.
std::string authBytesToHex(const AuthBytes& bytes);

// The field `key` of `reader` as exactly kAuthBytes bytes; PROTOCOL_ERROR naming the field
// otherwise ("auth_begin.nonce: expected 32 bytes (64 hex characters), got 3 bytes").
Result<AuthBytes> readAuthBytes(const jsonio::JsonReader& reader, std::string_view key);

}  // namespace kvx::agent::channel

#pragma once

// The header of a data-path message that carries a notification: it names the sender so
// the receiver can attribute it. Layout: 'K', kind (1 = notification), u16 name length
// (little-endian), name bytes.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvx/result.h"

namespace kvx::engine {

std::vector<std::uint8_t> encodeNotificationHeader(const std::string& sender);

// The sender's name, or PROTOCOL_ERROR describing what is wrong with the header.
Result<std::string> decodeNotificationHeader(std::span<const std::uint8_t> header);

}  // namespace kvx::engine

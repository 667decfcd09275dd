#pragma once

// The header of every data-path message: it says what the message carries and names the
// sender so the receiver can attribute it. Layout: 'K', kind, u16 name length
// (little-endian), name bytes. Kinds: 1 a notification (the payload is the user's bytes),
// 2 and 3 a request to, and a reply from, a peer's staging window (engine/staged/
// staging_message.h). A receiver refuses unknown kinds.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kvx/result.h"

namespace kvx::engine {

enum class MessageKind : std::uint8_t {
  kNotification = 1,
  kStagingRequest = 2,
  kStagingReply = 3,
};

struct MessageHeader {
  MessageKind kind = MessageKind::kNotification;
  std::string sender;
};

std::vector<std::uint8_t> encodeMessageHeader(MessageKind kind, const std::string& sender);
// The kind and sender, or PROTOCOL_ERROR describing what is wrong with the header.
Result<MessageHeader> decodeMessageHeader(std::span<const std::uint8_t> header);

std::vector<std::uint8_t> encodeNotificationHeader(const std::string& sender);

// The sender's name, or PROTOCOL_ERROR describing what is wrong with the header.
Result<std::string> decodeNotificationHeader(std::span<const std::uint8_t> header);

}  // namespace kvx::engine

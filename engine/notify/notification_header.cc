#include "engine/notify/notification_header.h"

namespace kvx::engine {
namespace {

constexpr std::uint8_t kMagic = 'K';
constexpr std::size_t kFixedBytes = 4;

bool knownKind(std::uint8_t kind) {
  return kind >= static_cast<std::uint8_t>(MessageKind::kNotification) &&
         kind <= static_cast<std::uint8_t>(MessageKind::kStagingReply);
}

}  // namespace

std::vector<std::uint8_t> encodeMessageHeader(MessageKind kind, const std::string& sender) {
  const std::size_t n = std::min<std::size_t>(sender.size(), UINT16_MAX);
  std::vector<std::uint8_t> header(kFixedBytes + n);
  header[0] = kMagic;
  header[1] = static_cast<std::uint8_t>(kind);
  header[2] = static_cast<std::uint8_t>(n & 0xff);
  header[3] = static_cast<std::uint8_t>(n >> 8);
  std::copy(sender.begin(), sender.begin() + static_cast<std::ptrdiff_t>(n), header.begin() + 4);
  return header;
}

Result<MessageHeader> decodeMessageHeader(std::span<const std::uint8_t> header) {
  if (header.size() < kFixedBytes) {
    return protocolError("data-path message header of " + std::to_string(header.size()) +
                         " bytes is shorter than " + std::to_string(kFixedBytes));
  }
  if (header[0] != kMagic || !knownKind(header[1])) {
    return protocolError("data-path message with unknown header " + std::to_string(header[0]) +
                         "/" + std::to_string(header[1]));
  }
  const std::size_t n = header[2] | (std::size_t{header[3]} << 8);
  if (header.size() != kFixedBytes + n) {
    return protocolError("data-path message header says the sender name has " + std::to_string(n) +
                         " bytes but " + std::to_string(header.size() - kFixedBytes) + " follow");
  }
  return MessageHeader{static_cast<MessageKind>(header[1]),
                       std::string(header.begin() + kFixedBytes, header.end())};
}

std::vector<std::uint8_t> encodeNotificationHeader(const std::string& sender) {
  return encodeMessageHeader(MessageKind::kNotification, sender);
}

Result<std::string> decodeNotificationHeader(std::span<const std::uint8_t> header) {
  KVX_ASSIGN_OR_RETURN(MessageHeader decoded, decodeMessageHeader(header));
  if (decoded.kind != MessageKind::kNotification) {
    return protocolError("data-path message of kind " +
                         std::to_string(static_cast<int>(decoded.kind)) + " is not a notification");
  }
  return std::move(decoded.sender);
}

}  // namespace kvx::engine

#include "engine/notify/notification_header.h"

namespace kvx::engine {
namespace {

constexpr std::uint8_t kMagic = 'K';
constexpr std::uint8_t kKindNotification = 1;
constexpr std::size_t kFixedBytes = 4;

}  // namespace

std::vector<std::uint8_t> encodeNotificationHeader(const std::string& sender) {
  const std::size_t n = std::min<std::size_t>(sender.size(), UINT16_MAX);
  std::vector<std::uint8_t> header(kFixedBytes + n);
  header[0] = kMagic;
  header[1] = kKindNotification;
  header[2] = static_cast<std::uint8_t>(n & 0xff);
  header[3] = static_cast<std::uint8_t>(n >> 8);
  std::copy(sender.begin(), sender.begin() + static_cast<std::ptrdiff_t>(n), header.begin() + 4);
  return header;
}

Result<std::string> decodeNotificationHeader(std::span<const std::uint8_t> header) {
  if (header.size() < kFixedBytes) {
    return protocolError("notification header of " + std::to_string(header.size()) +
                         " bytes is shorter than " + std::to_string(kFixedBytes));
  }
  if (header[0] != kMagic || header[1] != kKindNotification) {
    return protocolError("data-path message with unknown header " + std::to_string(header[0]) +
                         "/" + std::to_string(header[1]));
  }
  const std::size_t n = header[2] | (std::size_t{header[3]} << 8);
  if (header.size() != kFixedBytes + n) {
    return protocolError("notification header says the sender name has " + std::to_string(n) +
                         " bytes but " + std::to_string(header.size() - kFixedBytes) + " follow");
  }
  return std::string(header.begin() + kFixedBytes, header.end());
}

}  // namespace kvx::engine

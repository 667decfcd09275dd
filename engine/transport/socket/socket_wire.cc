#include "engine/transport/socket/socket_wire.h"

#include <cstring>
#include <string>

namespace kvx::engine::socket {
namespace {

constexpr std::uint32_t kFrameMagic = 0x5358564b;  // the bytes "KVXS" (little-endian)

template <typename T>
void put(EncodedHeader& out, std::size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}

template <typename T>
T get(std::span<const std::uint8_t> in, std::size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

bool knownType(std::uint8_t type) {
  return type >= static_cast<std::uint8_t>(FrameType::kHello) &&
         type <= static_cast<std::uint8_t>(FrameType::kWelcome);
}

}  // namespace

std::string_view toString(FrameType type) {
  switch (type) {
    case FrameType::kHello: return "hello";
    case FrameType::kPut: return "put";
    case FrameType::kGet: return "get";
    case FrameType::kMessage: return "message";
    case FrameType::kDone: return "done";
    case FrameType::kData: return "data";
    case FrameType::kError: return "error";
    case FrameType::kWelcome: return "welcome";
  }
  return "unknown";
}

std::string_view describeProtection(std::uint32_t protection) {
  switch (protection) {
    case kProtectHeaders: return "headers authenticated, blocks in clear";
    case kProtectAuthenticated: return "blocks authenticated, in clear";
    case kProtectEncrypted: return "encrypted";
    default: return "unknown protection";
  }
}

EncodedHeader encodeFrameHeader(const FrameHeader& header) {
  EncodedHeader out{};
  put(out, 0, kFrameMagic);
  put(out, 4, kWireVersion);
  put(out, 5, static_cast<std::uint8_t>(header.type));
  put(out, 8, header.aux);
  put(out, 16, header.sequence);
  put(out, 24, header.region);
  put(out, 32, header.key);
  put(out, 40, header.address);
  put(out, 48, header.length);
  return out;
}

Result<FrameHeader> decodeFrameHeader(std::span<const std::uint8_t> bytes) {
  if (bytes.size() != kFrameHeaderBytes) {
    return protocolError("a socket frame header is " + std::to_string(kFrameHeaderBytes) +
                         " bytes, not " + std::to_string(bytes.size()));
  }
  if (get<std::uint32_t>(bytes, 0) != kFrameMagic) {
    return protocolError(
        "not a kvx socket frame (wrong magic): is a stranger talking to the data "
        "port?");
  }
  if (bytes[4] != kWireVersion) {
    return protocolError("socket frame version " + std::to_string(bytes[4]) +
                         "; this build speaks " + std::to_string(kWireVersion));
  }
  if (!knownType(bytes[5])) {
    return protocolError("unknown socket frame type " + std::to_string(bytes[5]));
  }
  if (get<std::uint16_t>(bytes, 6) != 0 || get<std::uint32_t>(bytes, 12) != 0) {
    return protocolError("socket frame header with non-zero padding");
  }
  FrameHeader header;
  header.type = static_cast<FrameType>(bytes[5]);
  header.aux = get<std::uint32_t>(bytes, 8);
  header.sequence = get<std::uint64_t>(bytes, 16);
  header.region = get<std::uint64_t>(bytes, 24);
  header.key = get<std::uint64_t>(bytes, 32);
  header.address = get<std::uint64_t>(bytes, 40);
  header.length = get<std::uint64_t>(bytes, 48);
  const std::string what = "socket " + std::string(toString(header.type)) + " frame";
  switch (header.type) {
    case FrameType::kHello:
      if (header.aux < kProtectHeaders || header.aux > kProtectEncrypted) {
        return protocolError(what + " asking for protection " + std::to_string(header.aux));
      }
      [[fallthrough]];
    case FrameType::kWelcome:
      if (header.length != kNonceBytes) {
        return protocolError(what + " of " + std::to_string(header.length) + " bytes, not a " +
                             std::to_string(kNonceBytes) + "-byte nonce");
      }
      break;
    case FrameType::kDone:
      if (header.length != 0) return protocolError(what + " with a length");
      break;
    case FrameType::kPut:
    case FrameType::kGet:
    case FrameType::kData:
      if (header.length == 0) return protocolError(what + " of 0 bytes");
      break;
    case FrameType::kMessage:
      if (header.length > kMaxMessageBytes) {
        return protocolError(what + " of " + std::to_string(header.length) +
                             " bytes, over the limit of " + std::to_string(kMaxMessageBytes));
      }
      if (header.aux > header.length) {
        return protocolError(what + " whose header (" + std::to_string(header.aux) +
                             " bytes) is longer than the message (" +
                             std::to_string(header.length) + ")");
      }
      break;
    case FrameType::kError:
      if (header.length > kMaxErrorTextBytes) {
        return protocolError(what + " with " + std::to_string(header.length) +
                             " bytes of text, over the limit of " +
                             std::to_string(kMaxErrorTextBytes));
      }
      if (header.aux == 0 || header.aux > static_cast<std::uint32_t>(StatusCode::kInternal)) {
        return protocolError(what + " with status code " + std::to_string(header.aux));
      }
      break;
  }
  return header;
}

std::uint64_t followingBytes(const FrameHeader& header) {
  switch (header.type) {
    case FrameType::kHello:
    case FrameType::kWelcome:
    case FrameType::kPut:
    case FrameType::kMessage:
    case FrameType::kData:
    case FrameType::kError: return header.length;
    default: return 0;
  }
}

}  // namespace kvx::engine::socket

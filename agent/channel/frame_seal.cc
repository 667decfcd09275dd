#include "agent/channel/frame_seal.h"

#include <openssl/crypto.h>

#include <string>

#include "agent/channel/auth_proof.h"

namespace kvx::agent::channel {
namespace {

void putBigEndian(std::uint8_t* out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<std::uint8_t>(value & 0xFF);
    value >>= 8;
  }
}

}  // namespace

FrameKeys frameKeys(std::string_view token, const AuthBytes& clientNonce,
                    const AuthBytes& serverNonce) {
  return FrameKeys{tokenHmac(token, "kvx-frames-c2s", clientNonce, serverNonce),
                   tokenHmac(token, "kvx-frames-s2c", clientNonce, serverNonce)};
}

AuthBytes FrameSeal::tag(std::uint16_t type, std::span<const std::uint8_t> payload) const {
  std::vector<std::uint8_t> data(10 + payload.size());
  putBigEndian(data.data(), sequence_, 8);
  putBigEndian(data.data() + 8, type, 2);
  std::copy(payload.begin(), payload.end(), data.begin() + 10);
  return hmacSha256(key_, data);
}

std::vector<std::uint8_t> FrameSeal::seal(std::span<const std::uint8_t> frame) {
  const auto type = static_cast<std::uint16_t>((frame[6] << 8) | frame[7]);
  const std::span<const std::uint8_t> payload = frame.subspan(kFrameHeaderBytes);
  const AuthBytes mac = tag(type, payload);
  ++sequence_;
  std::vector<std::uint8_t> out(frame.begin(), frame.end());
  out.insert(out.end(), mac.begin(), mac.end());
  putBigEndian(out.data() + 8, payload.size() + kFrameTagBytes, 4);
  return out;
}

Status FrameSeal::open(Frame& frame) {
  if (frame.payload.size() < kFrameTagBytes) {
    return unauthenticated("a frame of " + std::to_string(frame.payload.size()) +
                           " bytes carries no integrity tag, where every frame after "
                           "authentication must (a peer of an older kvx, or one without the "
                           "token)");
  }
  const std::size_t bodyBytes = frame.payload.size() - kFrameTagBytes;
  const std::span<const std::uint8_t> body(
      reinterpret_cast<const std::uint8_t*>(frame.payload.data()), bodyBytes);
  const AuthBytes expected = tag(frame.type, body);
  if (CRYPTO_memcmp(expected.data(), frame.payload.data() + bodyBytes, kFrameTagBytes) != 0) {
    return unauthenticated("frame " + std::to_string(sequence_) + " (type " +
                           std::to_string(frame.type) +
                           ") failed its integrity check: changed on the way, replayed, or "
                           "made without the token");
  }
  ++sequence_;
  frame.payload.resize(bodyBytes);
  return Status::ok();
}

}  // namespace kvx::agent::channel

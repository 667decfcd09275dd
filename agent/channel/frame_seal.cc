#include "agent/channel/frame_seal.h"

#include <algorithm>
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

FrameSeal::FrameSeal(const AuthBytes& key) {
  Result<crypto::AesGcm> cipher = crypto::AesGcm::create(key);
  if (cipher.isOk()) cipher_.emplace(std::move(*cipher));
}

void FrameSeal::beginFrame(crypto::AesGcm::Mode mode, std::uint16_t type) {
  std::uint8_t associated[2];
  putBigEndian(associated, type, 2);
  cipher_->begin(mode, 0, sequence_);
  cipher_->authenticate(associated);
}

std::vector<std::uint8_t> FrameSeal::seal(std::span<const std::uint8_t> frame) {
  const auto type = static_cast<std::uint16_t>((frame[6] << 8) | frame[7]);
  const std::span<const std::uint8_t> payload = frame.subspan(kFrameHeaderBytes);
  std::vector<std::uint8_t> out(frame.size() + kFrameTagBytes, 0);
  std::copy(frame.begin(), frame.begin() + kFrameHeaderBytes, out.begin());
  putBigEndian(out.data() + 8, payload.size() + kFrameTagBytes, 4);
  if (cipher_) {
    beginFrame(crypto::AesGcm::Mode::kSeal, type);
    cipher_->crypt(payload, out.data() + kFrameHeaderBytes);
    const crypto::GcmTag tag = cipher_->sealTag();
    std::copy(tag.begin(), tag.end(), out.end() - kFrameTagBytes);
  }
  ++sequence_;
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
  const auto* sealed = reinterpret_cast<const std::uint8_t*>(frame.payload.data());
  std::string plain(bodyBytes, '\0');
  crypto::GcmTag tag{};
  std::copy(sealed + bodyBytes, sealed + frame.payload.size(), tag.begin());
  bool opened = false;
  if (cipher_) {
    beginFrame(crypto::AesGcm::Mode::kOpen, frame.type);
    cipher_->crypt({sealed, bodyBytes}, reinterpret_cast<std::uint8_t*>(plain.data()));
    opened = cipher_->openTag(tag);
  }
  if (!opened) {
    return unauthenticated("frame " + std::to_string(sequence_) + " (type " +
                           std::to_string(frame.type) +
                           ") failed its integrity check: changed on the way, replayed, or "
                           "made without the token");
  }
  ++sequence_;
  frame.payload = std::move(plain);
  return Status::ok();
}

}  // namespace kvx::agent::channel

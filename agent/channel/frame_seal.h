#pragma once

// FrameSeal: secrecy and integrity for the frames of a connection whose peers authenticated
// each other with the token (auth_proof.h). From the end of the challenge-response on, every
// frame in each direction is sealed with AES-256-GCM under the direction's key: its payload
// is encrypted, and a tag in its last kFrameTagBytes payload bytes authenticates it with the
// type:
//
//   nonce = 0 (u32) | sequence (u64, big-endian); associated data = type (u16, big-endian)
//
// so that the metadata a hello carries (region keys, the data path's key) is never on the
// wire in clear. The direction keys come from the token and both nonces of the connection,
// so a party on the path without the token can neither read nor forge a frame nor move one
// from another connection; the sequence (counted, not sent: frames of a stream arrive in
// order) makes a replayed, dropped or reordered frame fail too, and keeps each nonce unique
// under its key.
//   client -> server key = HMAC-SHA256(token, "kvx-frames-c2s" | client nonce | server nonce)
//   server -> client key = HMAC-SHA256(token, "kvx-frames-s2c" | client nonce | server nonce)
//
// One FrameSeal serves one direction of one connection. Not thread-safe: the connection's
// strand uses it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "agent/channel/frame.h"
#include "agent/channel/messages/auth_bytes.h"
#include "crypto/aes_gcm.h"
#include "kvx/status.h"

namespace kvx::agent::channel {

inline constexpr std::size_t kFrameTagBytes = crypto::kGcmTagBytes;

struct FrameKeys {
  AuthBytes clientToServer{};
  AuthBytes serverToClient{};
};

FrameKeys frameKeys(std::string_view token, const AuthBytes& clientNonce,
                    const AuthBytes& serverNonce);

class FrameSeal {
 public:
  explicit FrameSeal(const AuthBytes& key);

  // `frame`, one encoded frame (header and payload), with its payload encrypted, its tag
  // appended and the length in its header grown by kFrameTagBytes. REQUIRES: a complete
  // frame from encodeFrame().
  std::vector<std::uint8_t> seal(std::span<const std::uint8_t> frame);

  // Checks the tag at the end of `frame`'s payload, removes it and decrypts the payload.
  // UNAUTHENTICATED when the payload is too short for a tag or the tag does not match (the
  // frame was changed, replayed, reordered or made without the token); the sequence and the
  // frame then stay as they were.
  Status open(Frame& frame);

 private:
  // Starts the message of frame `sequence_` of `type`. REQUIRES: cipher_.
  void beginFrame(crypto::AesGcm::Mode mode, std::uint16_t type);

  // Null only if OpenSSL could not set AES-GCM up: every frame then fails to open on the
  // other side (seal() sends nothing readable).
  std::optional<crypto::AesGcm> cipher_;
  std::uint64_t sequence_ = 0;  // of the next frame in this direction
};

}  // namespace kvx::agent::channel

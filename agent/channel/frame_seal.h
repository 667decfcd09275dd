#pragma once

// FrameSeal: integrity for the frames of a connection whose peers authenticated each other
// with the token (auth_proof.h). From the end of the challenge-response on, every frame in
// each direction carries a tag in its last kFrameTagBytes payload bytes:
//
//   tag = HMAC-SHA256(direction key, sequence (u64, big-endian) | type (u16) | payload)
//
// The direction keys come from the token and both nonces of the connection, so a party on
// the path without the token can neither forge a frame nor move one from another
// connection; the sequence (counted, not sent: frames of a stream arrive in order) makes a
// replayed, dropped or reordered frame fail too.
//   client -> server key = HMAC-SHA256(token, "kvx-frames-c2s" | client nonce | server nonce)
//   server -> client key = HMAC-SHA256(token, "kvx-frames-s2c" | client nonce | server nonce)
//
// One FrameSeal serves one direction of one connection. Not thread-safe: the connection's
// strand uses it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "agent/channel/frame.h"
#include "agent/channel/messages/auth_bytes.h"
#include "kvx/status.h"

namespace kvx::agent::channel {

inline constexpr std::size_t kFrameTagBytes = 32;

struct FrameKeys {
  AuthBytes clientToServer{};
  AuthBytes serverToClient{};
};

FrameKeys frameKeys(std::string_view token, const AuthBytes& clientNonce,
                    const AuthBytes& serverNonce);

class FrameSeal {
 public:
  explicit FrameSeal(const AuthBytes& key) : key_(key) {}

  // `frame`, one encoded frame (header and payload), with its tag appended and the length in
  // its header grown by kFrameTagBytes. REQUIRES: a complete frame from encodeFrame().
  std::vector<std::uint8_t> seal(std::span<const std::uint8_t> frame);

  // Checks the tag at the end of `frame`'s payload and removes it. UNAUTHENTICATED when the
  // payload is too short for a tag or the tag does not match (the frame was changed,
  // replayed, reordered or made without the token); the sequence then stays where it was.
  Status open(Frame& frame);

 private:
  AuthBytes tag(std::uint16_t type, std::span<const std::uint8_t> payload) const;

  AuthBytes key_;
  std::uint64_t sequence_ = 0;  // of the next frame in this direction
};

}  // namespace kvx::agent::channel

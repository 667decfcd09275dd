#pragma once

// FrameProtection: how the frames of one direction of a socket data connection are protected
// once its hello and welcome are through (socket_wire.h).
//
// Keys. Each transport draws a random data key when it starts and publishes it in its
// address (socket_address.h), which its peers receive only inside the control channel's
// handshake. A connection's keys come from that key, both nonces, both instances and the
// protection the hello asked for:
//   initiator -> target = HMAC-SHA256(data key, "kvx-data-i2t" | protection (u32, BE) |
//                                     initiator nonce | target nonce | initiator instance |
//                                     target instance)
//   target -> initiator = the same with "kvx-data-t2i"
// so a party on the path, which sees neither key, can neither make a frame the target takes
// nor replay one from another connection (the target's nonce is fresh) nor lower the
// protection asked for (the keys would differ).
//
// Frames. With AES-256-GCM under the direction's key, frame number n of the direction
// (counted from 0 after the welcome, never sent) carries:
//   header     = the 56-byte header encrypted, nonce (1, n), then its GCM tag: region ids,
//                secrets and addresses never cross in clear
//   body       = in clear (kProtectHeaders, kProtectAuthenticated) or encrypted
//                (kProtectEncrypted)
//   body tag   = kProtectAuthenticated and kProtectEncrypted: GCM tag, nonce (2, n), over
//                the body (associated data, or encrypted)
// The header is checked before the body is placed anywhere, so a forged, replayed or moved
// request touches no memory; a body changed on the way fails its tag when it ends, and the
// connection ends before the request is answered, so nothing changed is reported done.
//
// Not thread-safe: its connection calls it under the transport's lock.

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "crypto/aes_gcm.h"
#include "engine/transport/socket/socket_wire.h"
#include "kvx/result.h"

namespace kvx::engine::socket {

inline constexpr std::size_t kTagBytes = crypto::kGcmTagBytes;

using Nonce = std::array<std::uint8_t, kNonceBytes>;

struct ConnectionIdentity {
  std::uint32_t protection = kProtectAuthenticated;
  Nonce initiatorNonce{};
  Nonce targetNonce{};
  std::uint64_t initiatorInstance = 0;
  std::uint64_t targetInstance = 0;
};

// A fresh nonce from the CSPRNG; INTERNAL if it fails.
Result<Nonce> freshNonce();

class FrameProtection {
 public:
  // INTERNAL when OpenSSL cannot set AES-GCM up.
  static Result<FrameProtection> create(const crypto::Key256& key, std::uint32_t protection);

  bool encrypts() const { return protection_ == kProtectEncrypted; }
  // Whether bodies carry a tag (kProtectAuthenticated, kProtectEncrypted).
  bool tagsBodies() const { return protection_ >= kProtectAuthenticated; }

  // Sending frame n: the header encrypted in place and its tag, then the body in pieces (when
  // encrypting, `out` gets the ciphertext and may be `in`; when authenticating only, the bytes go
  // out as they are and `out` is not used), then the body's tag (only for a frame with a body).
  // finishFrame() moves on to n + 1.
  crypto::GcmTag sealHeader(EncodedHeader& header);
  void beginBody();
  void sealBody(std::span<const std::uint8_t> in, std::uint8_t* out);
  crypto::GcmTag sealBodyTag();

  // Receiving frame n: whether the encrypted header is frame n's (then `header` holds it
  // decrypted, and the body's message has begun), then the body in place as it lands
  // (decrypted when encrypted), then whether the body's tag matches.
  bool openHeader(std::span<const std::uint8_t> sealed, const crypto::GcmTag& tag,
                  EncodedHeader& header);
  void openBody(std::uint8_t* bytes, std::uint64_t size);
  bool openBodyTag(const crypto::GcmTag& tag);

  void finishFrame() { ++sequence_; }
  std::uint64_t sequence() const { return sequence_; }

 private:
  FrameProtection(crypto::AesGcm cipher, std::uint32_t protection)
      : cipher_(std::move(cipher)), protection_(protection) {}
  // A body's bytes through the cipher: encrypted or decrypted into `out` (may be in.data()),
  // or only authenticated (`out` unused).
  void throughCipher(std::span<const std::uint8_t> in, std::uint8_t* out);

  crypto::AesGcm cipher_;
  std::uint32_t protection_;
  std::uint64_t sequence_ = 0;
};

// One connection's protection as one of its ends uses it: what it sends and what it receives,
// with the keys derived from the target's data key and `identity` (the key derivation above).
enum class ConnectionEnd { kInitiator, kTarget };
struct ConnectionProtection {
  FrameProtection sending;
  FrameProtection receiving;
};
Result<ConnectionProtection> protectConnection(const crypto::Key256& dataKey,
                                               const ConnectionIdentity& identity,
                                               ConnectionEnd end);

}  // namespace kvx::engine::socket

#pragma once

// The socket transport's wire format: every frame on a data connection starts with a fixed
// 56-byte header, followed by the bytes its type says.
//
//   u32 magic "KVXS" | u8 version | u8 type | u16 zero | u32 aux | u32 zero |
//   u64 sequence | u64 region | u64 key | u64 address | u64 length
//
// A connection opens with two plain frames, then every frame is protected (frame_protection.h):
//   hello    initiator -> target: region = the target's instance id, key = the initiator's,
//            aux = the protection asked for (kProtectHeaders to kProtectEncrypted);
//            kNonceBytes follow (the initiator's nonce). Reply: welcome, or error if refused.
//   welcome  target -> initiator: kNonceBytes follow (the target's nonce).
// Both ends then derive the connection's keys from the target's data key and both nonces
// (frame_protection.h); a protected frame is its header, encrypted, a 16-byte tag of the
// header, its body (encrypted or in clear) and, where there is a body, a 16-byte tag of the
// body.
//
// Requests go from the endpoint (initiator) to the peer transport (target), which answers
// each one, in order, with exactly one reply:
//   put      region/key/address name the target range; `length` data bytes follow. Reply: done.
//   get      region/key/address name the source range, `length` bytes wanted; nothing
//            follows. Reply: data, `length` bytes.
//   message  aux = header bytes; `length` bytes (header then payload) follow. Reply: done.
//   error    a refused request: aux = StatusCode, `length` bytes of text follow.
// Native byte order: both ends are the same build on little-endian hosts (checked by the
// magic, which reads differently on a big-endian peer).

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "kvx/result.h"

namespace kvx::engine::socket {

inline constexpr std::size_t kFrameHeaderBytes = 56;
inline constexpr std::uint8_t kWireVersion = 2;
// The bytes of a hello's or welcome's nonce.
inline constexpr std::uint64_t kNonceBytes = 32;
// A hello's aux: what the initiator's frames after it are.
// (The values of DataProtection, kvx/agent_options.h.)
inline constexpr std::uint32_t kProtectHeaders = 1;        // bodies in clear, untagged
inline constexpr std::uint32_t kProtectAuthenticated = 2;  // bodies in clear, tagged
inline constexpr std::uint32_t kProtectEncrypted = 3;      // bodies encrypted, tagged
// The largest message (header + payload) and error text a peer may send.
inline constexpr std::uint64_t kMaxMessageBytes = 64ull << 20;
inline constexpr std::uint64_t kMaxErrorTextBytes = 1024;

enum class FrameType : std::uint8_t {
  kHello = 1,
  kPut = 2,
  kGet = 3,
  kMessage = 4,
  kDone = 5,
  kData = 6,
  kError = 7,
  kWelcome = 8,
};

std::string_view toString(FrameType type);
// "headers authenticated, blocks in clear", "blocks authenticated, in clear", "encrypted".
std::string_view describeProtection(std::uint32_t protection);

struct FrameHeader {
  FrameType type = FrameType::kHello;
  std::uint32_t aux = 0;
  std::uint64_t sequence = 0;
  std::uint64_t region = 0;
  std::uint64_t key = 0;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
};

using EncodedHeader = std::array<std::uint8_t, kFrameHeaderBytes>;

EncodedHeader encodeFrameHeader(const FrameHeader& header);

// PROTOCOL_ERROR naming what is wrong unless `bytes` (kFrameHeaderBytes long) is a
// well-formed header: magic, version, a known type, zero padding, and a length within the
// type's bounds (a message's aux within its length).
Result<FrameHeader> decodeFrameHeader(std::span<const std::uint8_t> bytes);

// How many bytes follow a header of this type on the wire.
std::uint64_t followingBytes(const FrameHeader& header);

}  // namespace kvx::engine::socket

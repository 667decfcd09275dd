#pragma once

// Frames: the unit the control channel reads and writes. A frame is a 12-byte big-endian
// header followed by the payload (JSON text, UTF-8):
//
//   offset 0  u32  magic 0x4B565843 ("KVXC")
//   offset 4  u16  protocol version (kProtocolVersion)
//   offset 6  u16  message type (see message_type.h; unknown types are left to the caller)
//   offset 8  u32  payload length in bytes
//
// FrameDecoder turns a byte stream, cut into chunks of any size, back into frames. It checks
// magic, version and length as soon as a header is complete, so an oversized frame is
// rejected before any of its payload is buffered. Memory for an accepted frame grows with
// the bytes received (at most twice them, and never beyond the announced length), not with
// the length the header announces.
//
// Not thread-safe: one decoder belongs to one connection and is used by one thread.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/channel/message_type.h"
#include "kvx/result.h"
#include "kvx/status.h"

namespace kvx::agent::channel {

inline constexpr std::uint32_t kFrameMagic = 0x4B565843;  // "KVXC"
// 3: with a token, frames after authentication are encrypted and carry an integrity tag
// (frame_seal.h); the socket transport's address carries its data path key.
inline constexpr std::uint16_t kProtocolVersion = 3;
inline constexpr std::size_t kFrameHeaderBytes = 12;
inline constexpr std::uint32_t kDefaultMaxFrameBytes = 16u << 20;

struct Frame {
  std::uint16_t type = 0;  // raw: may be a type this agent does not know
  std::string payload;
};

// The header and payload of one frame, ready to be written.
// REQUIRES: payload.size() fits in 32 bits.
std::vector<std::uint8_t> encodeFrame(std::uint16_t type, std::string_view payload);
inline std::vector<std::uint8_t> encodeFrame(MessageType type, std::string_view payload) {
  return encodeFrame(static_cast<std::uint16_t>(type), payload);
}

class FrameDecoder {
 public:
  // `maxPayloadBytes` bounds the payload length a header may announce.
  explicit FrameDecoder(std::uint32_t maxPayloadBytes = kDefaultMaxFrameBytes);

  // Consumes `bytes`. Complete frames become available from next(). On the first malformed
  // header returns PROTOCOL_ERROR naming the offending value; the decoder then stays failed
  // (every later feed returns the same status) and frames completed before the bad header
  // are still returned by next().
  Status feed(std::span<const std::uint8_t> bytes);

  // As feed(), but stops right after the first frame that completes: the bytes consumed, so
  // that the caller can act on that frame (e.g. raise the limit once a peer authenticated)
  // before the next header is checked.
  Result<std::size_t> feedUntilFrame(std::span<const std::uint8_t> bytes);

  // The payload limit for headers that complete from now on.
  void setMaxPayloadBytes(std::uint32_t maxPayloadBytes) { maxPayloadBytes_ = maxPayloadBytes; }

  // The oldest complete frame not yet taken, if any.
  std::optional<Frame> next();

  // True while part of a frame (header or payload) has arrived but not all of it.
  bool midFrame() const { return headerFill_ > 0; }

  // Bytes held for the frame in progress (header and payload so far).
  std::size_t bufferedBytes() const { return headerFill_ + current_.payload.size(); }

  // Bytes of memory held for the frame in progress (its payload's capacity).
  std::size_t reservedBytes() const { return current_.payload.capacity(); }

  // Frees what the frame in progress and the frames not taken hold (the connection is closed:
  // none of it will be delivered).
  void discard();

 private:
  Status checkHeader();

  std::uint32_t maxPayloadBytes_;
  std::uint8_t header_[kFrameHeaderBytes] = {};
  std::size_t headerFill_ = 0;  // bytes of header_ received; kFrameHeaderBytes once complete
  std::uint32_t payloadLength_ = 0;
  Frame current_;
  std::deque<Frame> ready_;
  Status failure_;
};

}  // namespace kvx::agent::channel

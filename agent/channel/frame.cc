#include "agent/channel/frame.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace kvx::agent::channel {
namespace {

void putU16(std::uint8_t* out, std::uint16_t v) {
  out[0] = static_cast<std::uint8_t>(v >> 8);
  out[1] = static_cast<std::uint8_t>(v);
}

void putU32(std::uint8_t* out, std::uint32_t v) {
  out[0] = static_cast<std::uint8_t>(v >> 24);
  out[1] = static_cast<std::uint8_t>(v >> 16);
  out[2] = static_cast<std::uint8_t>(v >> 8);
  out[3] = static_cast<std::uint8_t>(v);
}

std::uint16_t getU16(const std::uint8_t* in) {
  return static_cast<std::uint16_t>((in[0] << 8) | in[1]);
}

std::uint32_t getU32(const std::uint8_t* in) {
  return (std::uint32_t{in[0]} << 24) | (std::uint32_t{in[1]} << 16) | (std::uint32_t{in[2]} << 8) |
         std::uint32_t{in[3]};
}

}  // namespace

std::vector<std::uint8_t> encodeFrame(std::uint16_t type, std::string_view payload) {
  std::vector<std::uint8_t> bytes(kFrameHeaderBytes + payload.size());
  putU32(bytes.data(), kFrameMagic);
  putU16(bytes.data() + 4, kProtocolVersion);
  putU16(bytes.data() + 6, type);
  putU32(bytes.data() + 8, static_cast<std::uint32_t>(payload.size()));
  std::copy(payload.begin(), payload.end(), bytes.begin() + kFrameHeaderBytes);
  return bytes;
}

FrameDecoder::FrameDecoder(std::uint32_t maxPayloadBytes) : maxPayloadBytes_(maxPayloadBytes) {}

Status FrameDecoder::checkHeader() {
  const std::uint32_t magic = getU32(header_);
  if (magic != kFrameMagic) {
    char text[80];
    std::snprintf(text, sizeof text, "frame magic 0x%08X is not KVXC (0x%08X)", magic, kFrameMagic);
    // A TLS handshake record (type 0x16, version 3.x) where a frame should be: say so.
    if ((magic >> 24) == 0x16 && ((magic >> 16) & 0xFF) == 0x03) {
      return protocolError(std::string(text) +
                           ": the peer started a TLS handshake, and this agent's control "
                           "channel does not use TLS; enable it on both agents (kvx agent "
                           "--tls-cert, --tls-key, --tls-ca) or on neither");
    }
    return protocolError(text);
  }
  const std::uint16_t version = getU16(header_ + 4);
  if (version != kProtocolVersion) {
    return protocolError("protocol version " + std::to_string(version) +
                         " unsupported (this agent speaks " + std::to_string(kProtocolVersion) +
                         ")");
  }
  payloadLength_ = getU32(header_ + 8);
  if (payloadLength_ > maxPayloadBytes_) {
    return protocolError("frame of " + std::to_string(payloadLength_) + " bytes exceeds the " +
                         std::to_string(maxPayloadBytes_) + "-byte limit");
  }
  current_.type = getU16(header_ + 6);
  // Nothing is reserved for the announced length: a peer announcing the limit and sending
  // nothing would otherwise cost the limit in memory. The payload grows as bytes arrive.
  current_.payload.clear();
  return Status::ok();
}

Status FrameDecoder::feed(std::span<const std::uint8_t> bytes) {
  while (!bytes.empty()) {
    KVX_ASSIGN_OR_RETURN(const std::size_t consumed, feedUntilFrame(bytes));
    bytes = bytes.subspan(consumed);
  }
  return failure_;
}

Result<std::size_t> FrameDecoder::feedUntilFrame(std::span<const std::uint8_t> bytes) {
  if (!failure_.isOk()) return failure_;
  const std::size_t offered = bytes.size();
  while (!bytes.empty()) {
    if (headerFill_ < kFrameHeaderBytes) {
      const std::size_t take = std::min(kFrameHeaderBytes - headerFill_, bytes.size());
      std::copy_n(bytes.begin(), take, header_ + headerFill_);
      headerFill_ += take;
      bytes = bytes.subspan(take);
      if (headerFill_ < kFrameHeaderBytes) break;
      failure_ = checkHeader();
      if (!failure_.isOk()) return failure_;
    }
    const std::size_t want = payloadLength_ - current_.payload.size();
    const std::size_t take = std::min(want, bytes.size());
    std::string& payload = current_.payload;
    if (payload.capacity() < payload.size() + take) {
      // Doubling keeps appends amortised O(1); never beyond the announced length.
      payload.reserve(std::min<std::size_t>(
          payloadLength_, std::max(payload.size() + take, 2 * payload.capacity())));
    }
    current_.payload.append(reinterpret_cast<const char*>(bytes.data()), take);
    bytes = bytes.subspan(take);
    if (current_.payload.size() == payloadLength_) {
      ready_.push_back(std::move(current_));
      current_ = Frame{};
      headerFill_ = 0;
      payloadLength_ = 0;
      break;
    }
  }
  return offered - bytes.size();
}

std::optional<Frame> FrameDecoder::next() {
  if (ready_.empty()) return std::nullopt;
  Frame frame = std::move(ready_.front());
  ready_.pop_front();
  return frame;
}

void FrameDecoder::discard() {
  headerFill_ = 0;
  payloadLength_ = 0;
  current_.type = 0;
  std::string().swap(current_.payload);  // (assigning an empty one may keep the buffer)
  ready_.clear();
  ready_.shrink_to_fit();
}

}  // namespace kvx::agent::channel

#pragma once

// For the fuzz targets of the control channel's messages: the one message in a buffer that
// holds exactly one encoded frame, or a fuzz failure.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "agent/channel/frame.h"
#include "agent/channel/messages/message.h"
#include "fuzz/fuzz_check.h"

namespace kvx::fuzz {

inline agent::channel::Message decodeSingleFrame(const std::vector<std::uint8_t>& bytes) {
  agent::channel::FrameDecoder decoder;
  KVX_FUZZ_CHECK(decoder.feed(bytes).isOk());
  std::optional<agent::channel::Frame> frame = decoder.next();
  KVX_FUZZ_CHECK(frame.has_value() && !decoder.next() && !decoder.midFrame());
  Result<agent::channel::Message> message = agent::channel::decodeMessage(*frame);
  if (!message.isOk()) fail(__FILE__, __LINE__, message.status().toString());
  return std::move(message).value();
}

}  // namespace kvx::fuzz

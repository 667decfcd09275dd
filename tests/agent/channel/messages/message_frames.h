#pragma once

// What the message tests share: a message through a frame and back, and a JSON body decoded as
// the frame of a given message type.

#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

#include "agent/channel/messages/message.h"

namespace kvx::test {

// `value` as the body of a frame of `type`, decoded.
inline Result<agent::channel::Message> decodeJson(agent::channel::MessageType type,
                                                  const nlohmann::json& value) {
  return agent::channel::decodeMessage(
      agent::channel::Frame{static_cast<std::uint16_t>(type), value.dump()});
}

// `message` encoded as a frame, fed to a decoder, and decoded again.
inline agent::channel::Message roundTrip(const agent::channel::Message& message) {
  agent::channel::FrameDecoder decoder;
  REQUIRE(decoder.feed(agent::channel::encodeMessage(message)).isOk());
  auto frame = decoder.next();
  REQUIRE(frame);
  auto decoded = agent::channel::decodeMessage(*frame);
  REQUIRE(decoded.isOk());
  return std::move(decoded).value();
}

}  // namespace kvx::test

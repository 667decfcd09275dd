// kvx-test-labels: unit serial
#include "agent/channel/frame_seal.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace kvx;
using namespace kvx::agent::channel;

namespace {

AuthBytes bytesOf(std::uint8_t value) {
  AuthBytes b{};
  b.fill(value);
  return b;
}

// The frame a decoder would deliver for `encoded` (header and payload).
Frame delivered(const std::vector<std::uint8_t>& encoded) {
  FrameDecoder decoder;
  REQUIRE(decoder.feed(encoded).isOk());
  auto frame = decoder.next();
  REQUIRE(frame);
  return *frame;
}

}  // namespace

TEST_CASE("frame seal: sealed frames open in order, with their payload and type intact") {
  const FrameKeys keys = frameKeys("token", bytesOf(1), bytesOf(2));
  FrameSeal sender(keys.clientToServer);
  FrameSeal receiver(keys.clientToServer);
  for (int i = 0; i < 3; ++i) {
    const std::string payload = R"({"n":)" + std::to_string(i) + "}";
    const auto sealed = sender.seal(encodeFrame(std::uint16_t{7}, payload));
    CHECK(sealed.size() == kFrameHeaderBytes + payload.size() + kFrameTagBytes);
    // The payload is not on the wire in clear.
    const std::string wire(sealed.begin(), sealed.end());
    CHECK(wire.find(payload) == std::string::npos);
    Frame frame = delivered(sealed);
    REQUIRE(receiver.open(frame).isOk());
    CHECK(frame.type == 7);
    CHECK(frame.payload == payload);
  }
}

TEST_CASE("frame seal: a changed, short, reordered or foreign frame does not open") {
  const FrameKeys keys = frameKeys("token", bytesOf(1), bytesOf(2));
  FrameSeal sender(keys.clientToServer);
  const auto first = sender.seal(encodeFrame(std::uint16_t{3}, "first"));
  const auto second = sender.seal(encodeFrame(std::uint16_t{3}, "second"));

  FrameSeal receiver(keys.clientToServer);
  Frame changed = delivered(first);
  changed.payload[0] ^= 0x20;
  CHECK(receiver.open(changed).code() == StatusCode::kUnauthenticated);
  Frame retyped = delivered(first);
  retyped.type = 4;
  CHECK(receiver.open(retyped).code() == StatusCode::kUnauthenticated);
  Frame shortFrame{3, "tiny"};
  CHECK(receiver.open(shortFrame).code() == StatusCode::kUnauthenticated);
  Frame early = delivered(second);  // out of order
  CHECK(receiver.open(early).code() == StatusCode::kUnauthenticated);
  // Failures leave the sequence where it was: the real first frame still opens, then the
  // second, and the first again (a replay) no longer does.
  Frame real = delivered(first);
  CHECK(receiver.open(real).isOk());
  Frame next = delivered(second);
  CHECK(receiver.open(next).isOk());
  Frame replay = delivered(first);
  CHECK(receiver.open(replay).code() == StatusCode::kUnauthenticated);

  // Another direction, another connection's nonces, another token: other keys.
  const FrameKeys otherNonces = frameKeys("token", bytesOf(1), bytesOf(3));
  const FrameKeys otherToken = frameKeys("other", bytesOf(1), bytesOf(2));
  for (const AuthBytes& key :
       {keys.serverToClient, otherNonces.clientToServer, otherToken.clientToServer}) {
    FrameSeal stranger(key);
    Frame frame = delivered(first);
    CHECK(stranger.open(frame).code() == StatusCode::kUnauthenticated);
  }
}

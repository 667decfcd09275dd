// kvx-test-labels: unit serial
#include "agent/channel/frame.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using kvx::StatusCode;
using kvx::agent::channel::encodeFrame;
using kvx::agent::channel::Frame;
using kvx::agent::channel::FrameDecoder;
using kvx::agent::channel::kFrameHeaderBytes;
using kvx::agent::channel::kProtocolVersion;
using kvx::agent::channel::MessageType;

namespace {

std::vector<std::uint8_t> header(std::uint32_t magic, std::uint16_t version, std::uint16_t type,
                                 std::uint32_t length) {
  return {static_cast<std::uint8_t>(magic >> 24),  static_cast<std::uint8_t>(magic >> 16),
          static_cast<std::uint8_t>(magic >> 8),   static_cast<std::uint8_t>(magic),
          static_cast<std::uint8_t>(version >> 8), static_cast<std::uint8_t>(version),
          static_cast<std::uint8_t>(type >> 8),    static_cast<std::uint8_t>(type),
          static_cast<std::uint8_t>(length >> 24), static_cast<std::uint8_t>(length >> 16),
          static_cast<std::uint8_t>(length >> 8),  static_cast<std::uint8_t>(length)};
}

}  // namespace

TEST_CASE("encodeFrame writes a big-endian header") {
  const auto bytes = encodeFrame(std::uint16_t{0x0102}, "abc");
  REQUIRE(bytes.size() == kFrameHeaderBytes + 3);
  CHECK(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 12) ==
        header(0x4B565843, kProtocolVersion, 0x0102, 3));
  CHECK(std::string(bytes.begin() + 12, bytes.end()) == "abc");
}

TEST_CASE("frame round trip") {
  FrameDecoder decoder;
  const auto bytes = encodeFrame(MessageType::kHello, R"({"x":1})");
  REQUIRE(decoder.feed(bytes).isOk());
  auto frame = decoder.next();
  REQUIRE(frame);
  CHECK(frame->type == static_cast<std::uint16_t>(MessageType::kHello));
  CHECK(frame->payload == R"({"x":1})");
  CHECK_FALSE(decoder.next());
  CHECK_FALSE(decoder.midFrame());
}

TEST_CASE("frames fed one byte at a time") {
  FrameDecoder decoder;
  std::vector<std::uint8_t> stream = encodeFrame(MessageType::kHello, "first");
  const auto second = encodeFrame(MessageType::kGoodbye, std::string(1000, 'z'));
  stream.insert(stream.end(), second.begin(), second.end());
  std::vector<Frame> frames;
  for (std::uint8_t byte : stream) {
    REQUIRE(decoder.feed(std::span<const std::uint8_t>(&byte, 1)).isOk());
    while (auto frame = decoder.next()) frames.push_back(std::move(*frame));
  }
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].payload == "first");
  CHECK(frames[1].type == static_cast<std::uint16_t>(MessageType::kGoodbye));
  CHECK(frames[1].payload == std::string(1000, 'z'));
}

TEST_CASE("several frames in one chunk, and a split at every position") {
  std::vector<std::uint8_t> stream;
  for (int i = 0; i < 3; ++i) {
    const auto frame = encodeFrame(std::uint16_t(i + 1), "payload-" + std::to_string(i));
    stream.insert(stream.end(), frame.begin(), frame.end());
  }
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    FrameDecoder decoder;
    const std::span<const std::uint8_t> all(stream);
    REQUIRE(decoder.feed(all.first(split)).isOk());
    REQUIRE(decoder.feed(all.subspan(split)).isOk());
    for (int i = 0; i < 3; ++i) {
      auto frame = decoder.next();
      REQUIRE(frame);
      CHECK(frame->type == i + 1);
      CHECK(frame->payload == "payload-" + std::to_string(i));
    }
    CHECK_FALSE(decoder.next());
  }
}

TEST_CASE("a truncated frame yields nothing and waits") {
  FrameDecoder decoder;
  const auto bytes = encodeFrame(MessageType::kHello, "0123456789");
  REQUIRE(decoder.feed(std::span<const std::uint8_t>(bytes).first(bytes.size() - 1)).isOk());
  CHECK_FALSE(decoder.next());
  CHECK(decoder.midFrame());
  CHECK(decoder.bufferedBytes() == bytes.size() - 1);
  REQUIRE(decoder.feed(std::span<const std::uint8_t>(bytes).last(1)).isOk());
  CHECK(decoder.next());
}

TEST_CASE("bad magic is rejected, and the decoder stays failed") {
  FrameDecoder decoder;
  const auto bytes = header(0x47455420, 1, 1, 0);  // "GET "
  const auto status = decoder.feed(bytes);
  CHECK(status.code() == StatusCode::kProtocolError);
  CHECK_THAT(status.message(), Catch::Contains("frame magic 0x47455420 is not KVXC"));
  CHECK(decoder.feed(encodeFrame(MessageType::kHello, "{}")) == status);
  CHECK_FALSE(decoder.next());
}

TEST_CASE("a wrong protocol version is rejected") {
  FrameDecoder decoder;
  const auto status = decoder.feed(header(0x4B565843, 7, 1, 0));
  CHECK(status.code() == StatusCode::kProtocolError);
  CHECK(status.message() == "protocol version 7 unsupported (this agent speaks " +
                                std::to_string(kProtocolVersion) + ")");
}

TEST_CASE("an oversized frame is rejected from its header alone") {
  FrameDecoder decoder(16u << 20);
  const auto status = decoder.feed(header(0x4B565843, kProtocolVersion, 1, 32u << 20));
  CHECK(status.code() == StatusCode::kProtocolError);
  CHECK(status.message() == "frame of 33554432 bytes exceeds the 16777216-byte limit");
  CHECK(decoder.bufferedBytes() <= kFrameHeaderBytes);

  FrameDecoder small(8);
  CHECK(small.feed(encodeFrame(MessageType::kHello, "12345678")).isOk());
  CHECK(small.feed(encodeFrame(MessageType::kHello, "123456789")).code() ==
        StatusCode::kProtocolError);
  CHECK(small.next());  // the frame before the bad one is still delivered
}

TEST_CASE("a zero-length payload is a complete frame") {
  FrameDecoder decoder;
  REQUIRE(decoder.feed(encodeFrame(MessageType::kGoodbye, "")).isOk());
  auto frame = decoder.next();
  REQUIRE(frame);
  CHECK(frame->payload.empty());
  CHECK_FALSE(decoder.midFrame());
}

TEST_CASE("memory for a frame follows the bytes received, not the announced length") {
  FrameDecoder decoder(16u << 20);
  // A header announcing the largest frame allowed, and nothing after it.
  REQUIRE(decoder.feed(header(0x4B565843, kProtocolVersion, 1, 16u << 20)).isOk());
  CHECK(decoder.midFrame());
  CHECK(decoder.reservedBytes() < 4096);

  const std::vector<std::uint8_t> chunk(64 * 1024, 'x');
  std::size_t received = 0;
  for (int i = 0; i < 16; ++i) {
    REQUIRE(decoder.feed(chunk).isOk());
    received += chunk.size();
    CHECK(decoder.reservedBytes() <= 2 * received);
  }
  // The rest arrives: the frame completes and holds exactly its length at most.
  std::vector<std::uint8_t> rest((16u << 20) - received, 'y');
  REQUIRE(decoder.feed(rest).isOk());
  auto frame = decoder.next();
  REQUIRE(frame);
  CHECK(frame->payload.size() == (16u << 20));
  CHECK(frame->payload.capacity() <= (16u << 20) + 64);
  CHECK(decoder.reservedBytes() < 4096);
}

TEST_CASE("feedUntilFrame stops after each frame, so the limit can change in between") {
  // An authentication frame and a large hello arrive in one read: the hello's header must be
  // checked against the limit in force after the first frame was handled.
  std::vector<std::uint8_t> chunk = encodeFrame(MessageType::kHello, "small");
  const auto large = encodeFrame(MessageType::kHello, std::string(4096, 'x'));
  chunk.insert(chunk.end(), large.begin(), large.end());
  FrameDecoder decoder(1024);
  auto first = decoder.feedUntilFrame(chunk);
  REQUIRE(first.isOk());
  CHECK(*first == chunk.size() - large.size());
  REQUIRE(decoder.next().has_value());
  CHECK_FALSE(decoder.next().has_value());
  decoder.setMaxPayloadBytes(8192);
  auto second = decoder.feedUntilFrame(std::span(chunk).subspan(*first));
  REQUIRE(second.isOk());
  CHECK(*second == large.size());
  auto frame = decoder.next();
  REQUIRE(frame.has_value());
  CHECK(frame->payload.size() == 4096);

  // Without raising it, the same header is refused.
  FrameDecoder strict(1024);
  CHECK_FALSE(strict.feed(chunk).isOk());
  CHECK(strict.next().has_value());  // the frame before the bad header is still delivered
}

TEST_CASE("discard frees a frame cut off mid-payload (the connection closed)") {
  FrameDecoder decoder(16u << 20);
  REQUIRE(decoder.feed(header(0x4B565843, kProtocolVersion, 1, 16u << 20)).isOk());
  const std::vector<std::uint8_t> chunk(2u << 20, 'x');
  REQUIRE(decoder.feed(chunk).isOk());
  REQUIRE(decoder.reservedBytes() >= chunk.size());
  decoder.discard();
  CHECK_FALSE(decoder.midFrame());
  CHECK(decoder.bufferedBytes() == 0);
  CHECK(decoder.reservedBytes() < 4096);  // (a string's own small buffer)
  CHECK_FALSE(decoder.next());
}

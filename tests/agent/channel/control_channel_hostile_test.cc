// kvx-test-labels: unit
#include <catch2/catch.hpp>

#include "tests/agent/channel/control_channel_fixture.h"

using namespace kvx::test::channel_fixture;

// ControlChannel against clients that break the protocol: the channel drops them alone.

TEST_CASE("misbehaving raw clients are closed and the channel keeps serving") {
  TestChannel server("server", 200ms);

  SECTION("garbage") {
    RawClient raw(server.address());
    raw.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames), Catch::Contains("frame magic 0x47455420 is not KVXC"));
  }
  SECTION("wrong protocol version") {
    RawClient raw(server.address());
    raw.send(header(7, 1, 2));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames), Catch::Contains("protocol version 7 unsupported"));
  }
  SECTION("oversized length header") {
    RawClient raw(server.address());
    raw.send(header(kProtocolVersion, 1, 32u << 20));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames),
               Catch::Contains("frame of 33554432 bytes exceeds the 1048576-byte limit"));
  }
  SECTION("truncated frame, then close") {
    RawClient raw(server.address());
    auto bytes = encodeMessage(Hello{sampleMetadata("raw"), std::nullopt});
    bytes.resize(bytes.size() / 2);
    raw.send(bytes);
    raw.shutdownWrite();
    REQUIRE(raw.readUntilClosed());
  }
  SECTION("nothing at all (slowloris) is closed after readTimeout") {
    RawClient raw(server.address());
    const auto start = kvx::Clock::now();
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    const auto elapsed = kvx::Clock::now() - start;
    CHECK(elapsed >= 150ms);
    CHECK(elapsed < 2s);
    CHECK_THAT(errorText(frames), Catch::Contains("by the read deadline"));
  }
  SECTION("half a header, then nothing") {
    RawClient raw(server.address());
    raw.send(std::vector<std::uint8_t>{0x4B, 0x56, 0x58});
    const auto start = kvx::Clock::now();
    REQUIRE(raw.readUntilClosed());
    CHECK(kvx::Clock::now() - start < 2s);
  }
  SECTION("a valid frame that is not a hello") {
    RawClient raw(server.address());
    raw.send(encodeMessage(Goodbye{"hi"}));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames),
               Catch::Contains("expected hello as the first message, got goodbye"));
  }
  SECTION("a hello with a malformed field") {
    RawClient raw(server.address());
    auto hello = Hello{sampleMetadata("raw"), std::nullopt}.toJson();
    hello["metadata"]["regions"][1]["length"] = "lots";
    raw.send(encodeFrame(MessageType::kHello, hello.dump()));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames),
               Catch::Contains("hello.metadata.regions[1].length: expected unsigned integer, got "
                               "string"));
  }
  SECTION("an unknown message type") {
    RawClient raw(server.address());
    raw.send(encodeFrame(std::uint16_t{999}, "{}"));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames), Catch::Contains("unknown message type 999"));
  }
  {
    std::lock_guard lock(server.events.mutex);
    CHECK(server.events.disconnects.empty());  // none of them completed a handshake
  }
  requireRealConnectWorks(server);
}

TEST_CASE("a peer breaking the protocol after the handshake is dropped alone") {
  TestChannel server("server", 200ms);
  TestChannel good("good");
  REQUIRE(good.channel->connect(server.address(), sampleMetadata("good"), deadlineIn(5s)).isOk());

  RawClient raw(server.address());
  raw.send(encodeMessage(Hello{sampleMetadata("raw"), "decode"}));
  auto ack = decodeMessage(raw.readFrame());
  REQUIRE(ack.isOk());
  REQUIRE(std::holds_alternative<HelloAck>(*ack));
  CHECK(std::get<HelloAck>(*ack).metadata.name == "server");

  SECTION("metadata update under another name") {
    raw.send(encodeMessage(MetadataUpdate{sampleMetadata("impostor")}));
    std::vector<Frame> frames;
    REQUIRE(raw.readUntilClosed(&frames));
    CHECK_THAT(errorText(frames), Catch::Contains("metadata_update.metadata.name"));
    REQUIRE(server.events.waitFor([&] { return server.events.disconnects.size() == 1; }));
    CHECK(server.events.disconnects[0].first == "raw");
    CHECK(server.events.disconnects[0].second.code() == StatusCode::kProtocolError);
  }
  SECTION("a frame left incomplete after the handshake") {
    raw.send(header(kProtocolVersion, 3, 100));
    REQUIRE(raw.readUntilClosed());
    REQUIRE(server.events.waitFor([&] { return server.events.disconnects.size() == 1; }));
    CHECK(server.events.disconnects[0].second.code() == StatusCode::kTimedOut);
  }
  SECTION("idle after the handshake is fine") {
    std::this_thread::sleep_for(500ms);
    raw.send(encodeMessage(MetadataUpdate{sampleMetadata("raw", 1)}));
    REQUIRE(server.events.waitFor([&] { return server.events.updates.size() == 1; }));
    CHECK(server.events.disconnects.empty());
  }
  // The well-behaved peer is unaffected.
  REQUIRE(server.channel->broadcastMetadata(sampleMetadata("server", 3)).isOk());
  REQUIRE(good.events.waitFor([&] { return good.events.updates.size() == 1; }));
}

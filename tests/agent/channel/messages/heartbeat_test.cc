// kvx-test-labels: unit serial
// The heartbeat message and the peer timeout that Hello and HelloAck announce.
#include "agent/channel/messages/heartbeat.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/channel/messages/message.h"
#include "tests/agent/channel/messages/message_frames.h"
#include "tests/agent/metadata/sample_metadata.h"

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;
using kvx::test::decodeJson;
using kvx::test::roundTrip;

TEST_CASE("the heartbeat is type 6, an empty object on the wire") {
  CHECK(static_cast<std::uint16_t>(MessageType::kHeartbeat) == 6);
  CHECK(parseMessageType(6) == MessageType::kHeartbeat);
  CHECK(toString(MessageType::kHeartbeat) == "heartbeat");
  const std::vector<std::uint8_t> bytes = encodeMessage(Heartbeat{});
  REQUIRE(bytes.size() == kFrameHeaderBytes + 2);
  CHECK(std::string(bytes.begin() + kFrameHeaderBytes, bytes.end()) == "{}");
  CHECK(bytes[6] == 0);
  CHECK(bytes[7] == 6);
  CHECK(std::holds_alternative<Heartbeat>(roundTrip(Heartbeat{})));
}

TEST_CASE("a heartbeat ignores fields it does not know and refuses a non-object") {
  CHECK(decodeJson(MessageType::kHeartbeat, {{"seq", 7}, {"future", "x"}}).isOk());
  for (const json& bad : {json::array(), json(3), json(nullptr), json("beat")}) {
    auto decoded = decodeJson(MessageType::kHeartbeat, bad);
    REQUIRE_FALSE(decoded.isOk());
    CHECK(decoded.status().code() == StatusCode::kProtocolError);
    CHECK_THAT(decoded.status().message(), Catch::StartsWith("heartbeat: expected object, got"));
  }
  auto notJson = decodeMessage(Frame{6, "{"});
  REQUIRE_FALSE(notJson.isOk());
  CHECK(notJson.status().code() == StatusCode::kProtocolError);
}

TEST_CASE("hello and hello_ack carry the peer timeout, absent from older peers") {
  Hello hello{kvx::test::sampleMetadata("p"), "prefill", 2000};
  auto back = std::get<Hello>(roundTrip(hello));
  CHECK(back.peerTimeoutMs == 2000u);
  hello.peerTimeoutMs.reset();
  CHECK_FALSE(hello.toJson().contains("peerTimeoutMs"));
  CHECK_FALSE(std::get<Hello>(roundTrip(hello)).peerTimeoutMs.has_value());

  HelloAck ack{kvx::test::sampleMetadata("d"), 350};
  CHECK(std::get<HelloAck>(roundTrip(ack)).peerTimeoutMs == 350u);
  ack.peerTimeoutMs.reset();
  CHECK_FALSE(ack.toJson().contains("peerTimeoutMs"));
  CHECK_FALSE(std::get<HelloAck>(roundTrip(ack)).peerTimeoutMs.has_value());
}

TEST_CASE("a peer timeout outside its range or of the wrong type is refused, naming the field") {
  const json hello = Hello{kvx::test::sampleMetadata("p"), std::nullopt}.toJson();
  const json ack = HelloAck{kvx::test::sampleMetadata("d")}.toJson();
  auto check = [](MessageType type, json value, const json& timeout, const std::string& expected) {
    value["peerTimeoutMs"] = timeout;
    auto decoded = decodeJson(type, value);
    REQUIRE_FALSE(decoded.isOk());
    CHECK(decoded.status().code() == StatusCode::kProtocolError);
    CHECK_THAT(decoded.status().message(), Catch::Contains(expected));
  };
  // A tiny timeout would make us send heartbeats in a busy loop: refused.
  check(MessageType::kHello, hello, 19, "hello.peerTimeoutMs: expected unsigned integer in");
  check(MessageType::kHello, hello, 0, "hello.peerTimeoutMs");
  check(MessageType::kHello, hello, "2000", "hello.peerTimeoutMs: expected unsigned integer, got");
  check(MessageType::kHelloAck, ack, -5, "hello_ack.peerTimeoutMs");
  check(MessageType::kHelloAck, ack, kMaxPeerTimeoutMs + 1, "hello_ack.peerTimeoutMs");
  json edge = hello;
  edge["peerTimeoutMs"] = kMinPeerTimeoutMs;
  CHECK(decodeJson(MessageType::kHello, edge).isOk());
}

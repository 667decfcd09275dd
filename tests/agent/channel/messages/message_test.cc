// kvx-test-labels: unit serial
#include "agent/channel/messages/message.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/agent/metadata/sample_metadata.h"

using kvx::StatusCode;
using namespace kvx::agent::channel;

namespace {

kvx::Status decodeText(MessageType type, std::string payload) {
  return decodeMessage(Frame{static_cast<std::uint16_t>(type), std::move(payload)}).status();
}

}  // namespace

TEST_CASE("every message type survives encode and decode") {
  const std::vector<Message> messages = {Hello{kvx::test::sampleMetadata(), "prefill"},
                                         HelloAck{kvx::test::sampleMetadata("b")},
                                         MetadataUpdate{kvx::test::sampleMetadata("c", 0)},
                                         ErrorMessage{"INTERNAL", "boom"},
                                         Goodbye{"bye"},
                                         Heartbeat{}};
  for (const Message& message : messages) {
    FrameDecoder decoder;
    REQUIRE(decoder.feed(encodeMessage(message)).isOk());
    auto frame = decoder.next();
    REQUIRE(frame);
    CHECK(frame->type == static_cast<std::uint16_t>(messageType(message)));
    auto decoded = decodeMessage(*frame);
    REQUIRE(decoded.isOk());
    CHECK(decoded->index() == message.index());
  }
}

TEST_CASE("an unknown message type is rejected") {
  auto status = decodeMessage(Frame{99, "{}"}).status();
  CHECK(status.code() == StatusCode::kProtocolError);
  CHECK_THAT(status.message(), Catch::Contains("unknown message type 99"));
  status = decodeMessage(Frame{0, "{}"}).status();
  CHECK_THAT(status.message(), Catch::Contains("unknown message type 0"));
  status = decodeText(MessageType::kMetadataBlob, "{}");
  CHECK_THAT(status.message(), Catch::Contains("is not a channel message"));
}

TEST_CASE("a payload that is not JSON is rejected") {
  for (const char* payload : {"", "not json", "{", "{\"reason\":\"x\"", "\"unterminated",
                              "{\"reason\":\"x\"} trailing", "\xff\xfe"}) {
    const auto status = decodeText(MessageType::kGoodbye, payload);
    CHECK(status.code() == StatusCode::kProtocolError);
    CHECK_THAT(status.message(), Catch::Contains("goodbye payload"));
    CHECK_THAT(status.message(), Catch::Contains("is not valid JSON"));
  }
  // Invalid UTF-8 inside a string.
  const auto status = decodeText(MessageType::kGoodbye, "{\"reason\":\"\xc3\x28\"}");
  CHECK_THAT(status.message(), Catch::Contains("is not valid JSON"));
}

TEST_CASE("deeply nested garbage is rejected before parsing") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto status = decodeText(MessageType::kHello, deep);
  CHECK(status.code() == StatusCode::kProtocolError);
  CHECK_THAT(status.message(), Catch::Contains("hello payload nests deeper than 32 levels"));
  // Unbalanced, and brackets inside strings do not count.
  status = decodeText(MessageType::kHello, std::string(1 << 20, '{'));
  CHECK_THAT(status.message(), Catch::Contains("nests deeper"));
  status = decodeText(MessageType::kGoodbye, "{\"reason\":\"" + std::string(1000, '[') + "\"}");
  CHECK(status.isOk());
  // Nesting inside an otherwise valid message, under the depth limit, hits the type checks.
  status = decodeText(MessageType::kGoodbye, R"({"reason":[[[[[[["x"]]]]]]]})");
  CHECK_THAT(status.message(), Catch::Contains("goodbye.reason: expected string, got array"));
}

TEST_CASE("huge strings are rejected by their field limit") {
  const std::string huge(8u << 20, 'n');
  auto status = decodeText(MessageType::kGoodbye, "{\"reason\":\"" + huge + "\"}");
  CHECK_THAT(status.message(), Catch::Contains("goodbye.reason: expected string of at most 1024 "
                                               "bytes, got 8388608 bytes"));
  nlohmann::json hello = Hello{kvx::test::sampleMetadata(), std::nullopt}.toJson();
  hello["metadata"]["name"] = huge;
  status = decodeText(MessageType::kHello, hello.dump());
  CHECK_THAT(status.message(), Catch::Contains("hello.metadata.name: expected string of at most "
                                               "256 bytes, got 8388608 bytes"));
}

TEST_CASE("garbage payloads of every shape never escape as exceptions") {
  const char* payloads[] = {"null",
                            "0",
                            "-1",
                            "1e999",
                            "true",
                            "[]",
                            "{}",
                            "\"s\"",
                            R"({"metadata":{"regions":[{"id":1e400}]}})",
                            R"({"metadata":{"name":"a","incarnation":-0.0}})"};
  for (std::uint16_t type = 0; type < 8; ++type) {
    for (const char* payload : payloads) {
      auto result = decodeMessage(Frame{type, payload});
      if (!result.isOk()) CHECK(result.status().code() == StatusCode::kProtocolError);
    }
  }
}

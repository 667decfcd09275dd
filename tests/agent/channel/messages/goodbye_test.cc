// kvx-test-labels: unit serial
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "agent/channel/messages/message.h"
#include "tests/agent/channel/messages/message_frames.h"

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;
using kvx::test::decodeJson;

TEST_CASE("goodbye round trip") {
  auto decoded = decodeJson(MessageType::kGoodbye, Goodbye{"shutting down"}.toJson());
  REQUIRE(decoded.isOk());
  CHECK(std::get<Goodbye>(*decoded).reason == "shutting down");
  CHECK(decodeJson(MessageType::kGoodbye, Goodbye{""}.toJson()).isOk());
  // A local reason longer than the limit is cut when encoded, so the peer accepts it.
  CHECK(decodeJson(MessageType::kGoodbye, Goodbye{std::string(5000, 'r')}.toJson()).isOk());
}

TEST_CASE("a goodbye with any local reason is accepted by the peer") {
  // Invalid UTF-8 must not grow past the limit (a repaired byte is 3 bytes of U+FFFD), and
  // the cut must not split a character.
  for (const std::string& reason :
       {std::string(1023, '\xff') + "ab", std::string(1023, 'r') + "\xe2\x82\xac",
        std::string(5000, '\x9c')}) {
    auto decoded = decodeJson(MessageType::kGoodbye, Goodbye{reason}.toJson());
    REQUIRE(decoded.isOk());
    CHECK(std::get<Goodbye>(*decoded).reason.size() <= Goodbye::kMaxReasonBytes);
  }
  auto cut =
      decodeJson(MessageType::kGoodbye, Goodbye{std::string(1023, 'r') + "\xe2\x82\xac"}.toJson());
  CHECK(std::get<Goodbye>(*cut).reason == std::string(1023, 'r'));
}

TEST_CASE("goodbye field violations name the field") {
  auto status = decodeJson(MessageType::kGoodbye, json::object()).status();
  CHECK(status.code() == StatusCode::kProtocolError);
  CHECK_THAT(status.message(), Catch::Contains("goodbye.reason: missing (expected string)"));
  CHECK_THAT(decodeJson(MessageType::kGoodbye, {{"reason", json::array()}}).status().message(),
             Catch::Contains("goodbye.reason: expected string, got array"));
  CHECK_THAT(
      decodeJson(MessageType::kGoodbye, {{"reason", std::string(1025, 'x')}}).status().message(),
      Catch::Contains("goodbye.reason: expected string of at most 1024 bytes, got 1025"));
  CHECK_THAT(decodeJson(MessageType::kGoodbye, json(-3)).status().message(),
             Catch::Contains("goodbye: expected object, got negative integer"));
}

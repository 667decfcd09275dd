// kvx-test-labels: unit serial
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "agent/channel/messages/message.h"
#include "tests/agent/channel/messages/message_frames.h"
#include "tests/agent/metadata/sample_metadata.h"

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;
using kvx::test::decodeJson;

TEST_CASE("hello_ack round trip") {
  const HelloAck ack{kvx::test::sampleMetadata("server", 2)};
  auto decoded = decodeJson(MessageType::kHelloAck, ack.toJson());
  REQUIRE(decoded.isOk());
  REQUIRE(std::holds_alternative<HelloAck>(*decoded));
  CHECK(kvx::test::sameMetadata(std::get<HelloAck>(*decoded).metadata, ack.metadata));
}

TEST_CASE("hello_ack field violations name the field") {
  json value = HelloAck{kvx::test::sampleMetadata("server", 2)}.toJson();
  value["metadata"]["regions"][1]["kind"] = 1;
  auto result = decodeJson(MessageType::kHelloAck, value);
  CHECK(result.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(result.status().message(),
             Catch::Contains("hello_ack.metadata.regions[1].kind: expected string, got unsigned "
                             "integer"));
  CHECK_THAT(decodeJson(MessageType::kHelloAck, json::object()).status().message(),
             Catch::Contains("hello_ack.metadata: missing (expected object)"));
  CHECK_THAT(decodeJson(MessageType::kHelloAck, json(1.5)).status().message(),
             Catch::Contains("hello_ack: expected object, got float"));
}

TEST_CASE("hello_ack says whether the server knew the client; older servers do not say") {
  for (bool knew : {true, false}) {
    const HelloAck ack{kvx::test::sampleMetadata("server", 1), std::nullopt, knew};
    auto decoded = decodeJson(MessageType::kHelloAck, ack.toJson());
    REQUIRE(decoded.isOk());
    CHECK(std::get<HelloAck>(*decoded).knewYou == std::optional<bool>(knew));
  }
  json older = HelloAck{kvx::test::sampleMetadata("server", 1)}.toJson();
  CHECK_FALSE(older.contains("knewYou"));
  CHECK_FALSE(std::get<HelloAck>(*decodeJson(MessageType::kHelloAck, older)).knewYou.has_value());
  older["knewYou"] = "yes";
  CHECK_THAT(decodeJson(MessageType::kHelloAck, older).status().message(),
             Catch::Contains("hello_ack.knewYou: expected boolean, got string"));
}

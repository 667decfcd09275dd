// kvx-test-labels: unit serial
#include "agent/channel/messages/rejoin.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "agent/channel/messages/message.h"

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;

TEST_CASE("rejoin and rejoin_ack are empty objects; later fields are ignored") {
  CHECK(encodeMessage(Rejoin{}) == encodeFrame(MessageType::kRejoin, "{}"));
  CHECK(encodeMessage(RejoinAck{}) == encodeFrame(MessageType::kRejoinAck, "{}"));
  auto rejoin = decodeMessage(Frame{10, R"({"later": 1})"});
  REQUIRE(rejoin.isOk());
  CHECK(std::holds_alternative<Rejoin>(*rejoin));
  auto ack = decodeMessage(Frame{11, "{}"});
  REQUIRE(ack.isOk());
  CHECK(std::holds_alternative<RejoinAck>(*ack));
  auto notObject = decodeMessage(Frame{10, "[]"});
  CHECK(notObject.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(notObject.status().message(), Catch::Contains("rejoin: expected object, got array"));
  CHECK(toString(MessageType::kRejoinAck) == "rejoin_ack");
}

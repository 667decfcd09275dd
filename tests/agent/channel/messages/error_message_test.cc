// kvx-test-labels: unit serial
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "agent/channel/messages/message.h"
#include "tests/agent/channel/messages/message_frames.h"

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;
using kvx::test::decodeJson;

namespace {

std::string errorText(const json& value) {
  return decodeJson(MessageType::kErrorMessage, value).status().message();
}

}  // namespace

TEST_CASE("error message round trip and Status mapping") {
  const auto error = ErrorMessage::fromStatus(kvx::alreadyExists("agent 'a' is already here"));
  CHECK(error.code == "ALREADY_EXISTS");
  auto decoded = decodeJson(MessageType::kErrorMessage, error.toJson());
  REQUIRE(decoded.isOk());
  const auto& back = std::get<ErrorMessage>(*decoded);
  CHECK(back.code == "ALREADY_EXISTS");
  CHECK(back.message == "agent 'a' is already here");
  const auto status = back.toStatus("peer rejected");
  CHECK(status.code() == StatusCode::kAlreadyExists);
  CHECK(status.message() == "peer rejected: agent 'a' is already here");
  CHECK(ErrorMessage{"FROM_THE_FUTURE", "x"}.toStatus("c").code() == StatusCode::kPeerFailed);
  CHECK(ErrorMessage{"OK", "x"}.toStatus("c").code() == StatusCode::kPeerFailed);
}

TEST_CASE("a long status message is cut to the limit") {
  const auto error = ErrorMessage::fromStatus(kvx::internalError(std::string(10000, 'x')));
  CHECK(error.message.size() == ErrorMessage::kMaxMessageBytes);
  CHECK(decodeJson(MessageType::kErrorMessage, error.toJson()).isOk());
}

TEST_CASE("a status message that is not clean UTF-8 is still accepted by the peer") {
  // A cut by bytes would split the euro sign; a repaired invalid byte would take 3 bytes.
  const std::string split = std::string(4095, 'x') + "\xe2\x82\xac";
  const auto error = ErrorMessage::fromStatus(kvx::internalError(split));
  CHECK(error.message == std::string(4095, 'x'));
  CHECK(decodeJson(MessageType::kErrorMessage, error.toJson()).isOk());
  const auto invalid = ErrorMessage::fromStatus(kvx::internalError(std::string(5000, '\xff')));
  CHECK(invalid.message == std::string(ErrorMessage::kMaxMessageBytes, '?'));
  CHECK(decodeJson(MessageType::kErrorMessage, invalid.toJson()).isOk());
  CHECK(decodeJson(MessageType::kErrorMessage,
                   ErrorMessage{"INTERNAL", std::string(5000, '\xc3')}.toJson())
            .isOk());
}

TEST_CASE("error message field violations name the field") {
  CHECK_THAT(errorText({{"message", "m"}}), Catch::Contains("error.code: missing"));
  CHECK_THAT(errorText({{"code", 5}, {"message", "m"}}),
             Catch::Contains("error.code: expected string, got unsigned integer"));
  CHECK_THAT(errorText({{"code", "bad code"}, {"message", "m"}}),
             Catch::Contains("error.code: expected a status code name [A-Z_]+, got 'bad code'"));
  CHECK_THAT(errorText({{"code", ""}, {"message", "m"}}), Catch::Contains("error.code"));
  CHECK_THAT(errorText({{"code", std::string(33, 'A')}, {"message", "m"}}),
             Catch::Contains("error.code: expected string of at most 32 bytes, got 33 bytes"));
  CHECK_THAT(errorText({{"code", "INTERNAL"}}), Catch::Contains("error.message: missing"));
  CHECK_THAT(errorText({{"code", "INTERNAL"}, {"message", json::object()}}),
             Catch::Contains("error.message: expected string, got object"));
  CHECK_THAT(errorText({{"code", "INTERNAL"}, {"message", std::string(1 << 20, 'm')}}),
             Catch::Contains("error.message: expected string of at most 4096 bytes"));
}

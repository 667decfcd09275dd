// kvx-test-labels: unit serial
// The three messages of the authentication exchange, through frames and back.
#include "agent/channel/messages/auth_begin.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "agent/channel/messages/message.h"
#include "tests/agent/channel/messages/message_frames.h"

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;
using kvx::test::roundTrip;

namespace {

AuthBytes filled(std::uint8_t value) {
  AuthBytes bytes{};
  bytes.fill(value);
  return bytes;
}

kvx::Status decodeStatus(MessageType type, const json& value) {
  return decodeMessage(Frame{static_cast<std::uint16_t>(type), value.dump()}).status();
}

}  // namespace

TEST_CASE("auth messages round-trip with their frame types") {
  const Message begin = roundTrip(AuthBegin{filled(1)});
  REQUIRE(std::holds_alternative<AuthBegin>(begin));
  CHECK(std::get<AuthBegin>(begin).nonce == filled(1));

  const Message challenge = roundTrip(AuthChallenge{filled(2), filled(3)});
  REQUIRE(std::holds_alternative<AuthChallenge>(challenge));
  CHECK(std::get<AuthChallenge>(challenge).nonce == filled(2));
  CHECK(std::get<AuthChallenge>(challenge).proof == filled(3));

  const Message response = roundTrip(AuthResponse{filled(4)});
  REQUIRE(std::holds_alternative<AuthResponse>(response));
  CHECK(std::get<AuthResponse>(response).proof == filled(4));

  CHECK(messageType(begin) == MessageType::kAuthBegin);
  CHECK(static_cast<int>(MessageType::kAuthBegin) == 7);
  CHECK(static_cast<int>(MessageType::kAuthChallenge) == 8);
  CHECK(static_cast<int>(MessageType::kAuthResponse) == 9);
  CHECK(toString(MessageType::kAuthChallenge) == "auth_challenge");
}

TEST_CASE("auth messages with missing or malformed fields are protocol errors") {
  const std::string hex(64, 'a');
  const kvx::Status noNonce = decodeStatus(MessageType::kAuthBegin, json::object());
  CHECK(noNonce.code() == StatusCode::kProtocolError);
  CHECK_THAT(noNonce.message(), Catch::Contains("auth_begin.nonce"));
  const kvx::Status noProof = decodeStatus(MessageType::kAuthChallenge, json{{"nonce", hex}});
  CHECK(noProof.code() == StatusCode::kProtocolError);
  CHECK_THAT(noProof.message(), Catch::Contains("auth_challenge.proof"));
  const kvx::Status shortProof = decodeStatus(MessageType::kAuthResponse, json{{"proof", "00"}});
  CHECK_THAT(shortProof.message(), Catch::Contains("auth_response.proof"));
  CHECK(decodeStatus(MessageType::kAuthResponse, json::array()).code() ==
        StatusCode::kProtocolError);
  // Unknown fields are ignored, as in every message.
  CHECK(decodeStatus(MessageType::kAuthBegin, json{{"nonce", hex}, {"later", 1}}).isOk());
}

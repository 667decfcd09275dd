// kvx-test-labels: unit serial
// Nonces and proofs on the wire: exactly 32 bytes as 64 lowercase hex characters.
#include "agent/channel/messages/auth_bytes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;

namespace {

kvx::Result<AuthBytes> read(const json& value) {
  auto reader = kvx::jsonio::JsonReader::object(value, "auth_begin");
  REQUIRE(reader.isOk());
  return readAuthBytes(*reader, "nonce");
}

}  // namespace

TEST_CASE("auth bytes round-trip through hex") {
  AuthBytes bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 9);
  const std::string hex = authBytesToHex(bytes);
  CHECK(hex.size() == 64);
  CHECK(hex.substr(0, 6) == "000912");
  auto back = read(json{{"nonce", hex}});
  REQUIRE(back.isOk());
  CHECK(*back == bytes);
}

TEST_CASE("auth bytes of the wrong size or spelling are refused, naming the field") {
  auto fails = [](const json& value, const std::string& text) {
    auto result = read(value);
    REQUIRE_FALSE(result.isOk());
    CHECK(result.status().code() == StatusCode::kProtocolError);
    CHECK_THAT(result.status().message(),
               Catch::Contains("auth_begin.nonce") && Catch::Contains(text));
  };
  fails(json{{"nonce", "abcd"}}, "expected 32 bytes (64 hex characters), got 2 bytes");
  fails(json{{"nonce", std::string(66, 'a')}}, "");
  fails(json{{"nonce", std::string(64, 'A')}}, "lowercase hex");
  fails(json{{"nonce", std::string(63, 'a')}}, "");
  fails(json{{"nonce", 7}}, "expected string");
  fails(json::object(), "");
}

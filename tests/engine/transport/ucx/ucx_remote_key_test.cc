// kvx-test-labels: unit ucx
// ucx_remote_key: the framed packed-key format is checked before UCX parses it.
#include "engine/transport/ucx/ucx_remote_key.h"

#include <catch2/catch.hpp>
#include <vector>

namespace kvx::engine::ucx {
namespace {

TEST_CASE("ucx remote key: pack and parse round-trip", "[ucx]") {
  const std::vector<std::uint8_t> ucxKey = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const auto packed = packRemoteKey(0x7f0000001000, 65536, ucxKey);
  auto parsed = parseRemoteKey(packed);
  REQUIRE(parsed.isOk());
  CHECK(parsed->address == 0x7f0000001000);
  CHECK(parsed->length == 65536);
  CHECK(std::vector<std::uint8_t>(parsed->ucxKey.begin(), parsed->ucxKey.end()) == ucxKey);
}

TEST_CASE("ucx remote key: every corruption is INVALID_ARGUMENT", "[ucx]") {
  const std::vector<std::uint8_t> ucxKey(17, 0x42);
  const auto packed = packRemoteKey(4096, 8192, ucxKey);
  CHECK(parseRemoteKey({}).status().code() == StatusCode::kInvalidArgument);
  for (std::size_t i = 0; i < packed.size(); ++i) {
    auto corrupted = packed;
    corrupted[i] ^= 0x01;
    INFO("byte " << i);
    CHECK(parseRemoteKey(corrupted).status().code() == StatusCode::kInvalidArgument);
  }
  for (std::size_t length = 0; length < packed.size(); ++length) {
    INFO("truncated to " << length);
    CHECK_FALSE(parseRemoteKey(std::span(packed).first(length)).isOk());
  }
  auto longer = packed;
  longer.push_back(0);
  CHECK_FALSE(parseRemoteKey(longer).isOk());
}

}  // namespace
}  // namespace kvx::engine::ucx

#pragma once

// Sample KV hand-off messages with every field set, and the check that a document is refused,
// for the tests of the message codec (kv_message_test).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "kv/handoff/kv_message.h"

namespace kvx::test::handoff {

using namespace kvx::kv::handoff;
namespace kv = kvx::kv;
using nlohmann::json;

inline PlaceMsg place() {
  return PlaceMsg{"req-1",       1000, 63,   {11, 0, 18446744073709551615ull},
                  KvMode::kPull, true, 2500, {{4, 10}, {100, 53}}};
}

inline json encoded(const KvMessage& message) { return json::parse(encode(message)); }

// Decodes `document` and requires a PROTOCOL_ERROR whose message contains `needle`.
inline void checkRejected(const json& document, const std::string& needle) {
  const std::string text = document.dump();
  INFO(text);
  Result<KvMessage> decoded = decode(text);
  REQUIRE_FALSE(decoded.isOk());
  CHECK(decoded.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(decoded.status().message(), Catch::Contains(needle));
}

}  // namespace kvx::test::handoff

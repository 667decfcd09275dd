#pragma once

// Sample KV hand-off messages with every field set, and the check that a document is refused,
// for the tests of the message codec (kv_message_test, messages/hello_message_test).

#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "kv/handoff/kv_message.h"
#include "kv/pool/model_shape.h"

namespace kvx::test::handoff {

using namespace kvx::kv::handoff;
namespace kv = kvx::kv;
using nlohmann::json;

inline kv::PoolDescription pool(const std::string& model, kv::KvLayout layout,
                                std::uint64_t blocks) {
  kv::PoolDescription out;
  out.shape = kv::builtinShape(model).value();
  out.layout = layout;
  out.blocks = blocks;
  const std::uint32_t tensors = layout == kv::KvLayout::kCrossLayer ? 1 : out.shape.layers;
  for (std::uint32_t t = 0; t < tensors; ++t) out.tensorRegions.push_back(RegionId(100 + t * 7));
  return out;
}

inline HelloMsg hello() {
  HelloMsg m{KvRole::kDecode, pool("llama3-8b", kv::KvLayout::kNHD, 1024), 777, true};
  m.session = 0xfedcba9876543210ull;
  return m;
}
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

// kvx-test-labels: unit serial
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/channel/messages/message.h"
#include "tests/agent/channel/messages/message_frames.h"
#include "tests/agent/metadata/sample_metadata.h"

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;
using kvx::test::decodeJson;

namespace {

void requireError(const json& value, const std::string& expected) {
  auto result = decodeJson(MessageType::kHello, value);
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(result.status().message(), Catch::Contains(expected));
}

}  // namespace

TEST_CASE("hello round trip, with and without a role") {
  for (const auto& role : {std::optional<std::string>(), std::optional<std::string>("prefill")}) {
    const Hello hello{kvx::test::sampleMetadata("prefill-0", 3), role};
    FrameDecoder decoder;
    REQUIRE(decoder.feed(encodeMessage(hello)).isOk());
    auto frame = decoder.next();
    REQUIRE(frame);
    auto decoded = decodeMessage(*frame);
    REQUIRE(decoded.isOk());
    const auto* back = std::get_if<Hello>(&*decoded);
    REQUIRE(back);
    CHECK(kvx::test::sameMetadata(back->metadata, hello.metadata));
    CHECK(back->role == role);
  }
}

TEST_CASE("hello field violations name the field") {
  const json good = Hello{kvx::test::sampleMetadata("a", 4), "decode"}.toJson();
  auto with = [&](auto mutate) {
    json value = good;
    mutate(value);
    return value;
  };
  requireError(json::array({1, 2}), "hello: expected object, got array");
  requireError(json("text"), "hello: expected object, got string");
  requireError(json(nullptr), "hello: expected object, got null");
  requireError(with([](json& v) { v.erase("metadata"); }),
               "hello.metadata: missing (expected object)");
  requireError(with([](json& v) { v["metadata"] = 5; }),
               "hello.metadata: expected object, got unsigned integer");
  requireError(with([](json& v) { v["metadata"]["regions"][3]["length"] = "4096"; }),
               "hello.metadata.regions[3].length: expected unsigned integer, got string");
  requireError(with([](json& v) { v["metadata"]["regions"][3]["length"] = -4096; }),
               "hello.metadata.regions[3].length: expected unsigned integer, got negative integer");
  requireError(with([](json& v) { v["metadata"]["regions"][2]["id"] = nullptr; }),
               "hello.metadata.regions[2].id: expected unsigned integer, got null");
  requireError(with([](json& v) { v["metadata"]["regions"][2].erase("packedKey"); }),
               "hello.metadata.regions[2].packedKey: missing (expected string)");
  requireError(with([](json& v) { v["metadata"]["incarnation"] = json::array(); }),
               "hello.metadata.incarnation: expected unsigned integer, got array");
  requireError(with([](json& v) { v["metadata"]["name"] = true; }),
               "hello.metadata.name: expected string, got boolean");
  requireError(with([](json& v) { v["role"] = 3; }), "hello.role: expected string, got unsigned");
  requireError(with([](json& v) { v["role"] = "bad role"; }),
               "hello.role: expected [A-Za-z0-9._-]*, got 'bad role'");
  requireError(with([](json& v) { v["role"] = std::string(100000, 'r'); }),
               "hello.role: expected string of at most 64 bytes, got 100000 bytes");
}

TEST_CASE("hello with a huge number is rejected, not wrapped") {
  std::string text = Hello{kvx::test::sampleMetadata(), std::nullopt}.toJson().dump();
  const std::string needle = "\"length\":65536";
  text.replace(text.find(needle), needle.size(), "\"length\":184467440737095516160");
  auto result = decodeMessage(Frame{static_cast<std::uint16_t>(MessageType::kHello), text});
  REQUIRE_FALSE(result.isOk());
  CHECK_THAT(result.status().message(),
             Catch::Contains("hello.metadata.regions[0].length: expected unsigned integer, got "
                             "float"));
}

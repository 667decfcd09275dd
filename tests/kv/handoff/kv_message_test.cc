// kvx-test-labels: unit serial
#include "kv/handoff/kv_message.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "kv/handoff/messages/message_fields.h"
#include "tests/kv/handoff/kv_message_samples.h"

using namespace kvx;
using namespace kvx::kv::handoff;
using namespace kvx::test::handoff;
namespace kv = kvx::kv;
using nlohmann::json;

namespace {

PlacedMsg placed() { return PlacedMsg{"req-2", {{0, 1}, {7, 62}}, 5, 900, 12}; }
RefusedMsg refused() {
  return RefusedMsg{"req-3", resourceExhausted("no room: 10 free, 63 needed"), true, 10, 13};
}
AbortMsg abortMsg() { return AbortMsg{"req-4", timedOut("gave up after 30000 ms"), 77}; }
PlaceMsg placeOfAttempt() {
  PlaceMsg m = place();
  m.attempt = 18446744073709551615ull;
  return m;
}

// Optional fields: a message without them is read as one with their default.
bool isOptional(const std::string& key) { return key == "attempt"; }

// The messages every test starts from: one of each type, all fields set.
std::vector<KvMessage> samples() {
  return {placeOfAttempt(),
          placed(),
          refused(),
          DataMsg{"req-5", 17, 14},
          ReadyMsg{"req-6", kAllLayers, 15},
          ConfirmMsg{"req-7", 12, 340, 9, 16},
          abortMsg(),
          AbortAckMsg{"req-8", 44, 3},
          CapacityMsg{123456}};
}

// Field-by-field equality of two messages of the same type.
struct Same {
  void operator()(const PlaceMsg& a, const PlaceMsg& b) const {
    CHECK(a.req == b.req);
    CHECK(a.tokens == b.tokens);
    CHECK(a.blocks == b.blocks);
    CHECK(a.prefixHashes == b.prefixHashes);
    CHECK(a.mode == b.mode);
    CHECK(a.layerwise == b.layerwise);
    CHECK(a.leaseMs == b.leaseMs);
    CHECK(a.sourceBlocks == b.sourceBlocks);
    CHECK(a.srcHeadFirst == b.srcHeadFirst);
    CHECK(a.dstHeadFirst == b.dstHeadFirst);
    CHECK(a.headCount == b.headCount);
    CHECK(a.group == b.group);
    CHECK(a.parts == b.parts);
    CHECK(a.attempt == b.attempt);
  }
  void operator()(const PlacedMsg& a, const PlacedMsg& b) const {
    CHECK(a.req == b.req);
    CHECK(a.blocks == b.blocks);
    CHECK(a.prefixBlocks == b.prefixBlocks);
    CHECK(a.freeBlocks == b.freeBlocks);
    CHECK(a.attempt == b.attempt);
  }
  void operator()(const RefusedMsg& a, const RefusedMsg& b) const {
    CHECK(a.req == b.req);
    CHECK(a.why == b.why);
    CHECK(a.retryable == b.retryable);
    CHECK(a.freeBlocks == b.freeBlocks);
    CHECK(a.attempt == b.attempt);
  }
  void operator()(const DataMsg& a, const DataMsg& b) const {
    CHECK(a.req == b.req);
    CHECK(a.layer == b.layer);
    CHECK(a.attempt == b.attempt);
  }
  void operator()(const ReadyMsg& a, const ReadyMsg& b) const {
    CHECK(a.req == b.req);
    CHECK(a.layer == b.layer);
    CHECK(a.attempt == b.attempt);
  }
  void operator()(const ConfirmMsg& a, const ConfirmMsg& b) const {
    CHECK(a.req == b.req);
    CHECK(a.freeBlocks == b.freeBlocks);
    CHECK(a.descriptors == b.descriptors);
    CHECK(a.operations == b.operations);
    CHECK(a.attempt == b.attempt);
  }
  void operator()(const AbortMsg& a, const AbortMsg& b) const {
    CHECK(a.req == b.req);
    CHECK(a.why == b.why);
    CHECK(a.attempt == b.attempt);
  }
  void operator()(const AbortAckMsg& a, const AbortAckMsg& b) const {
    CHECK(a.req == b.req);
    CHECK(a.freeBlocks == b.freeBlocks);
    CHECK(a.attempt == b.attempt);
  }
  void operator()(const CapacityMsg& a, const CapacityMsg& b) const {
    CHECK(a.freeBlocks == b.freeBlocks);
  }
  template <typename A, typename B>
  void operator()(const A&, const B&) const {
    FAIL("decoded message has a different type");
  }
};

void checkRoundTrip(const KvMessage& message) {
  const std::string text = encode(message);
  INFO(text);
  Result<KvMessage> decoded = decode(text);
  REQUIRE(decoded.isOk());
  REQUIRE(decoded->index() == message.index());
  std::visit(Same{}, message, *decoded);
  CHECK(encode(*decoded) == text);
}

// A value of another JSON type than `value`.
json wrongType(const json& value) { return value.is_string() ? json(7) : json("x"); }

}  // namespace

TEST_CASE("every message type round-trips with all its fields", "[handoff]") {
  for (const KvMessage& message : samples()) checkRoundTrip(message);
}

TEST_CASE("round trips of edge values", "[handoff]") {
  checkRoundTrip(
      PlaceMsg{std::string(kMaxRequestIdBytes, 'r'), 1, 1, {}, KvMode::kPush, false, 1, {}});
  checkRoundTrip(PlacedMsg{"", {}, 0, 0});
  checkRoundTrip(DataMsg{"x", kAllLayers});
  checkRoundTrip(DataMsg{"x", 1 << 20});
  checkRoundTrip(ReadyMsg{"x", 0});
  checkRoundTrip(CapacityMsg{18446744073709551615ull});
  // Every failure code survives the trip.
  for (int code = 1; code <= static_cast<int>(StatusCode::kInternal); ++code) {
    checkRoundTrip(
        AbortMsg{"r", Status(static_cast<StatusCode>(code), "m " + std::to_string(code))});
    checkRoundTrip(RefusedMsg{"r", Status(static_cast<StatusCode>(code), ""), false, 0});
  }
  // A request id with bytes that need escaping.
  checkRoundTrip(AbortAckMsg{std::string("a\"b\\c\n\x01\xc3\xa9", 9), 1});
}

TEST_CASE("a sliced, gathered placement round-trips and its slice is checked", "[handoff]") {
  PlaceMsg sliced = place();
  sliced.srcHeadFirst = 1;
  sliced.dstHeadFirst = 3;
  sliced.headCount = 2;
  sliced.group = "prompt-9";
  sliced.parts = 4;
  checkRoundTrip(sliced);
  CHECK(sliced.groupId() == "prompt-9");
  CHECK(place().groupId() == "req-1");
  CHECK_FALSE(encoded(place()).contains("slice"));  // absent for whole requests

  json bad = encoded(sliced);
  bad["slice"]["parts"] = 0;
  CHECK_THAT(decode(bad.dump()).status().message(), Catch::Contains("slice.parts"));
  bad = encoded(sliced);
  bad["slice"]["parts"] = kMaxGatherParts + 1;
  CHECK(decode(bad.dump()).status().code() == StatusCode::kProtocolError);
  bad = encoded(sliced);
  bad["slice"]["group"] = std::string(kMaxRequestIdBytes + 1, 'g');
  CHECK(decode(bad.dump()).status().code() == StatusCode::kProtocolError);
  bad = encoded(sliced);
  bad["slice"].erase("heads");
  CHECK_THAT(decode(bad.dump()).status().message(), Catch::Contains("slice.heads"));
  bad = encoded(sliced);
  bad["slice"] = 5;
  CHECK(decode(bad.dump()).status().code() == StatusCode::kProtocolError);
}

TEST_CASE("input that is not a JSON object is refused", "[handoff]") {
  for (const char* text : {"", "not json", "{", "{\"t\":\"capacity\",\"free\":1", "\xff\xfe"}) {
    INFO(text);
    auto decoded = decode(text);
    REQUIRE_FALSE(decoded.isOk());
    CHECK(decoded.status().code() == StatusCode::kProtocolError);
    CHECK_THAT(decoded.status().message(), Catch::Contains("kv message"));
  }
  checkRejected(json::array({1, 2}), "kv: expected object, got array");
  checkRejected(json("hello"), "kv: expected object, got string");
  checkRejected(json(5), "kv: expected object, got unsigned integer");
  checkRejected(json(nullptr), "kv: expected object, got null");
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  auto decoded = decode(deep);
  REQUIRE_FALSE(decoded.isOk());
  CHECK(decoded.status().code() == StatusCode::kProtocolError);
}

TEST_CASE("the type field is checked", "[handoff]") {
  checkRejected(json::object(), "kv.t: missing");
  checkRejected({{"t", 3}, {"free", 1}}, "kv.t: expected string, got unsigned integer");
  checkRejected({{"t", "bogus"}, {"free", 1}}, "unknown type 'bogus'");
  checkRejected({{"t", "Capacity"}, {"free", 1}}, "unknown type 'Capacity'");
  checkRejected({{"t", std::string(17, 'c')}, {"free", 1}}, "kv.t: expected string of at most 16");
}

TEST_CASE("a missing field is named", "[handoff]") {
  for (const KvMessage& message : samples()) {
    const json document = encoded(message);
    for (const auto& [key, value] : document.items()) {
      if (key == "t" || isOptional(key)) continue;
      json broken = document;
      broken.erase(key);
      checkRejected(broken, "kv." + key + ": missing");
    }
  }
}

TEST_CASE("a field of the wrong type is named", "[handoff]") {
  for (const KvMessage& message : samples()) {
    const json document = encoded(message);
    for (const auto& [key, value] : document.items()) {
      if (key == "t") continue;
      json broken = document;
      broken[key] = wrongType(value);
      checkRejected(broken, "kv." + key + ": expected ");
      broken[key] = 1.5;
      checkRejected(broken, "kv." + key + ": expected ");
      broken[key] = nullptr;
      checkRejected(broken, "kv." + key + ": expected ");
    }
  }
}

TEST_CASE("a request's attempt is optional: without it, it is 0, which any attempt matches",
          "[handoff]") {
  for (const KvMessage& message : samples()) {
    json document = encoded(message);
    if (!document.contains("attempt")) continue;
    document.erase("attempt");
    auto decoded = decode(document.dump());
    REQUIRE(decoded.isOk());
    std::visit(
        [](const auto& m) {
          if constexpr (requires { m.attempt; }) CHECK(m.attempt == 0);
        },
        *decoded);
    CHECK(decode(encode(*decoded)).isOk());
    CHECK(encoded(*decoded).contains("attempt") == false);  // 0 is not sent
  }
  CHECK(sameAttempt(0, 5));
  CHECK(sameAttempt(5, 0));
  CHECK(sameAttempt(5, 5));
  CHECK_FALSE(sameAttempt(5, 6));
}

TEST_CASE("unknown fields are ignored", "[handoff]") {
  json document = encoded(placed());
  document["future"] = {{"x", 1}};
  auto decoded = decode(document.dump());
  REQUIRE(decoded.isOk());
  std::visit(Same{}, KvMessage(placed()), *decoded);
}

TEST_CASE("negative numbers and zero where a positive number is required", "[handoff]") {
  json document = encoded(place());
  for (const char* key : {"tokens", "blocks", "leaseMs"}) {
    json broken = document;
    broken[key] = 0;
    checkRejected(broken, std::string("kv.") + key + ": expected unsigned integer in [1, ");
    broken[key] = -1;
    checkRejected(broken, std::string("kv.") + key + ": expected unsigned integer, got negative");
  }
  for (const KvMessage& message : samples()) {
    const json base = encoded(message);
    for (const char* key : {"free", "prefixBlocks", "descriptors", "operations"}) {
      if (!base.contains(key)) continue;
      json broken = base;
      broken[key] = -3;
      checkRejected(broken, std::string("kv.") + key + ": expected unsigned integer, got negative");
    }
  }
  json prefix = document;
  prefix["prefix"] = {1, -2};
  checkRejected(prefix, "kv.prefix[1]: expected unsigned integer, got negative integer");
  prefix["prefix"] = {"1"};
  checkRejected(prefix, "kv.prefix[0]: expected unsigned integer, got string");
}

TEST_CASE("layer numbers are -1 (all) or in [0, 2^20]", "[handoff]") {
  for (const KvMessage& message : {KvMessage(DataMsg{"r", 0}), KvMessage(ReadyMsg{"r", 0})}) {
    json document = encoded(message);
    document["layer"] = -2;
    checkRejected(document, "kv.layer: expected integer in [-1, 1048576], got -2");
    document["layer"] = (1 << 20) + 1;
    checkRejected(document, "kv.layer: expected integer in [-1, 1048576], got 1048577");
    document["layer"] = "3";
    checkRejected(document, "kv.layer: expected integer in [-1, 1048576], got string");
  }
}

TEST_CASE("block extents must be [first, count > 0] pairs", "[handoff]") {
  const std::vector<json> bad = {json::array({5, 0}),
                                 json::array({5}),
                                 json::array({1, 2, 3}),
                                 json::array(),
                                 json("1,2"),
                                 json::array({-1, 2}),
                                 json::array({1, -2}),
                                 json::array({1.0, 2}),
                                 json::array({"1", "2"}),
                                 json::object({{"first", 1}, {"count", 2}}),
                                 json(nullptr)};
  for (const json& extent : bad) {
    json source = encoded(place());
    source["source"] = json::array({json::array({0, 1}), extent});
    checkRejected(source, "kv.source[1]: expected [first, count > 0]");
    json blocks = encoded(placed());
    blocks["blocks"] = json::array({extent});
    checkRejected(blocks, "kv.blocks[0]: expected [first, count > 0]");
  }
  json blocks = encoded(placed());
  blocks["blocks"] = {{"first", 1}};
  checkRejected(blocks, "kv.blocks: expected array, got object");
}

TEST_CASE("request ids are at most kMaxRequestIdBytes", "[handoff]") {
  for (const KvMessage& message : samples()) {
    json document = encoded(message);
    if (!document.contains("req")) continue;
    document["req"] = std::string(kMaxRequestIdBytes, 'a');
    CHECK(decode(document.dump()).isOk());
    document["req"] = std::string(kMaxRequestIdBytes + 1, 'a');
    checkRejected(document, "kv.req: expected string of at most 256 bytes, got 257 bytes");
  }
}

TEST_CASE("messages larger than kMaxMessageBytes are refused before parsing", "[handoff]") {
  std::string text = encode(CapacityMsg{1});
  text.resize(kMaxMessageBytes, ' ');  // trailing whitespace is valid JSON
  CHECK(decode(text).isOk());
  text.push_back(' ');
  auto decoded = decode(text);
  REQUIRE_FALSE(decoded.isOk());
  CHECK(decoded.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(decoded.status().message(),
             Catch::Contains(std::to_string(kMaxMessageBytes + 1)) && Catch::Contains("exceeds"));
  // A well-formed message that grew too large (many prefix hashes).
  PlaceMsg big = place();
  big.prefixHashes.assign(kMaxMessageBytes / 8, 18446744073709551615ull);
  const std::string encodedBig = encode(big);
  REQUIRE(encodedBig.size() > kMaxMessageBytes);
  auto refused = decode(encodedBig);
  REQUIRE_FALSE(refused.isOk());
  CHECK(refused.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(refused.status().message(), Catch::Contains("exceeds"));
}

TEST_CASE("the mode is checked", "[handoff]") {
  json placing = encoded(place());
  placing["mode"] = "PUSH";
  checkRejected(placing, "kv.mode: expected push or pull, got PUSH");
}

TEST_CASE("status codes must be failures within the enum", "[handoff]") {
  for (const KvMessage& message : {KvMessage(refused()), KvMessage(abortMsg())}) {
    json document = encoded(message);
    document["why"]["code"] = 0;
    checkRejected(document, "kv.why.code: expected unsigned integer in [1, 13], got 0");
    document["why"]["code"] = static_cast<int>(StatusCode::kInternal) + 1;
    checkRejected(document, "kv.why.code: expected unsigned integer in [1, 13], got 14");
    document["why"]["code"] = 256;
    checkRejected(document, "kv.why.code");
    document["why"]["code"] = -1;
    checkRejected(document, "kv.why.code");
    document["why"]["code"] = static_cast<int>(StatusCode::kInternal);
    CHECK(decode(document.dump()).isOk());
    document["why"].erase("message");
    checkRejected(document, "kv.why.message: missing");
    document["why"]["message"] = std::string(4097, 'm');
    checkRejected(document, "kv.why.message: expected string of at most 4096 bytes");
    document["why"] = "TIMED_OUT";
    checkRejected(document, "kv.why: expected object, got string");
  }
}

TEST_CASE("truncated and mutated messages never throw", "[handoff]") {
  std::mt19937 random(1234);
  for (const KvMessage& message : samples()) {
    const std::string text = encode(message);
    for (std::size_t n = 0; n < text.size(); ++n) {
      Result<KvMessage> decoded = Status(StatusCode::kInternal, "unset");
      CHECK_NOTHROW(decoded = decode(std::string_view(text).substr(0, n)));
      CHECK_FALSE(decoded.isOk());
    }
    for (int round = 0; round < 300; ++round) {
      std::string mutated = text;
      const int edits = 1 + static_cast<int>(random() % 4);
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = random() % mutated.size();
        switch (random() % 3) {
          case 0: mutated[at] = static_cast<char>(random() % 256); break;
          case 1: mutated.erase(at, 1); break;
          default: mutated.insert(at, 1, "{}[]\",:0-9e"[random() % 11]); break;
        }
        if (mutated.empty()) mutated = "x";
      }
      Result<KvMessage> decoded = Status(StatusCode::kInternal, "unset");
      CHECK_NOTHROW(decoded = decode(mutated));
      if (!decoded.isOk()) CHECK(decoded.status().code() == StatusCode::kProtocolError);
    }
  }
}

// Ids travel in JSON, which would repair invalid UTF-8 and so change them: such ids are
// refused before anything is sent, and valid multi-byte ids survive the trip.
TEST_CASE("request ids must be UTF-8 and then survive the trip", "[handoff]") {
  CHECK(checkRequestId("req-\xff\xfe").code() == StatusCode::kInvalidArgument);
  CHECK(checkRequestId("").code() == StatusCode::kInvalidArgument);
  CHECK(checkRequestId(std::string(kMaxRequestIdBytes + 1, 'a')).code() ==
        StatusCode::kInvalidArgument);
  const std::string id = "req-\xc3\xa9t\xc3\xa9-\xe2\x9c\x93";
  REQUIRE(checkRequestId(id).isOk());
  auto decoded = decode(encode(DataMsg{id, 1}));
  REQUIRE(decoded.isOk());
  CHECK(std::get<DataMsg>(*decoded).req == id);
}

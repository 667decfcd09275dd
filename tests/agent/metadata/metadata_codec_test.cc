// kvx-test-labels: unit serial
#include "agent/metadata/metadata_codec.h"

#include <catch2/catch.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/channel/frame.h"
#include "json/json_reader.h"
#include "tests/agent/metadata/sample_metadata.h"

using kvx::StatusCode;
using kvx::agent::channel::encodeFrame;
using kvx::agent::channel::MessageType;
using kvx::test::sameMetadata;
using kvx::test::sampleMetadata;
using nlohmann::json;
namespace md = kvx::agent::metadata;

namespace {

// Decodes `value` after a JSON text round trip, as a peer would send it.
kvx::Result<kvx::engine::PeerMetadata> viaText(const json& value) {
  auto parsed = kvx::jsonio::parseJson(value.dump(), "test");
  REQUIRE(parsed.isOk());
  return md::metadataFromJson(*parsed, "metadata");
}

void requireError(const json& value, const std::string& expected) {
  auto result = viaText(value);
  REQUIRE_FALSE(result.isOk());
  CHECK(result.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(result.status().message(), Catch::Contains(expected));
}

}  // namespace

TEST_CASE("metadata JSON round trip keeps binary fields") {
  const auto metadata = sampleMetadata("prefill-0", 3);
  const json value = md::metadataToJson(metadata);
  CHECK(value["dataAddress"] == "00ff7f8001ab");
  CHECK(value["regions"][1]["packedKey"] == "0001ff10");
  CHECK(value["regions"][1]["kind"] == "cuda");
  auto decoded = viaText(value);
  REQUIRE(decoded.isOk());
  CHECK(sameMetadata(*decoded, metadata));
}

TEST_CASE("metadata with no regions and empty binary fields round trips") {
  kvx::engine::PeerMetadata metadata;
  metadata.name = "x";
  auto decoded = viaText(md::metadataToJson(metadata));
  REQUIRE(decoded.isOk());
  CHECK(sameMetadata(*decoded, metadata));
}

TEST_CASE("metadata carries a staging window when the agent has one") {
  auto metadata = sampleMetadata("decode-0", 2);
  CHECK_FALSE(md::metadataToJson(metadata).contains("stagingWindow"));
  metadata.stagingWindow = {0x7f0000001000, 2u << 20, 8, {0x01, 0xab}};
  const json value = md::metadataToJson(metadata);
  CHECK(value["stagingWindow"]["packedKey"] == "01ab");
  auto decoded = viaText(value);
  REQUIRE(decoded.isOk());
  CHECK(decoded->stagingWindow.address == 0x7f0000001000);
  CHECK(decoded->stagingWindow.slotBytes == 2u << 20);
  CHECK(decoded->stagingWindow.slots == 8);
  CHECK(decoded->stagingWindow.packedKey == std::vector<std::uint8_t>{0x01, 0xab});

  json noSlots = value;
  noSlots["stagingWindow"]["slots"] = 0;
  requireError(noSlots, "metadata.stagingWindow.slots");
  json wraps = value;
  wraps["stagingWindow"]["address"] = std::numeric_limits<std::uint64_t>::max() - 10;
  requireError(wraps, "metadata.stagingWindow");
}

TEST_CASE("metadata carries the application's description of the agent when it has one") {
  auto metadata = sampleMetadata("decode-0", 1);
  CHECK_FALSE(md::metadataToJson(metadata).contains("app"));
  metadata.applicationInfo = R"({"kv": {"role": "decode"}} é)";
  const json value = md::metadataToJson(metadata);
  CHECK(value["app"] == metadata.applicationInfo);
  auto decoded = viaText(value);
  REQUIRE(decoded.isOk());
  CHECK(sameMetadata(*decoded, metadata));

  json big = value;
  big["app"] = std::string(kvx::kMaxApplicationInfoBytes + 1, 'x');
  requireError(big, "metadata.app: expected string of at most 65536 bytes");
  json notText = value;
  notText["app"] = json::object();
  requireError(notText, "metadata.app: expected string, got object");
  metadata.applicationInfo = std::string("\xff\xfe", 2);
  CHECK_THAT(md::validateMetadata(metadata, "local").message(),
             Catch::Contains("local.app: expected valid UTF-8"));
}

TEST_CASE("metadata field checks name the field") {
  const json good = md::metadataToJson(sampleMetadata("a", 4));
  auto with = [&](auto mutate) {
    json value = good;
    mutate(value);
    return value;
  };
  requireError(json::array(), "metadata: expected object, got array");
  requireError(with([](json& v) { v.erase("name"); }), "metadata.name: missing (expected string)");
  requireError(with([](json& v) { v["name"] = ""; }), "metadata.name: expected 1..256 bytes");
  requireError(with([](json& v) { v["name"] = "has space"; }), "metadata.name: expected");
  requireError(with([](json& v) { v["name"] = std::string(257, 'a'); }),
               "metadata.name: expected string of at most 256 bytes, got 257 bytes");
  requireError(with([](json& v) { v["incarnation"] = -1; }),
               "metadata.incarnation: expected unsigned integer, got negative integer");
  requireError(with([](json& v) { v["incarnation"] = 1.5; }),
               "metadata.incarnation: expected unsigned integer, got float");
  requireError(with([](json& v) { v["transport"] = 7; }),
               "metadata.transport: expected string, got unsigned integer");
  requireError(with([](json& v) { v["dataAddress"] = "ABCD"; }),
               "metadata.dataAddress: expected lowercase hex string, got 'A' at offset 0");
  requireError(with([](json& v) { v["dataAddress"] = "abc"; }),
               "metadata.dataAddress: expected hex string of even length, got 3 characters");
  requireError(with([](json& v) { v["dataAddress"] = std::string(2 * 65536 + 2, 'a'); }),
               "metadata.dataAddress: expected string of at most 131072 bytes");
  requireError(with([](json& v) { v["regions"] = json::object(); }),
               "metadata.regions: expected array, got object");
  requireError(with([](json& v) { v["regions"][3] = "x"; }),
               "metadata.regions[3]: expected object, got string");
  requireError(with([](json& v) { v["regions"][3]["length"] = "big"; }),
               "metadata.regions[3].length: expected unsigned integer, got string");
  requireError(with([](json& v) { v["regions"][3]["length"] = 0; }),
               "metadata.regions[3].length: expected unsigned integer in [1, ");
  requireError(with([](json& v) { v["regions"][0]["id"] = 0; }),
               "metadata.regions[0].id: expected unsigned integer in [1, ");
  requireError(with([](json& v) { v["regions"][2]["id"] = 1; }),
               "metadata.regions[2].id: expected a unique region id, got 1, also used by "
               "regions[0]");
  requireError(with([](json& v) { v["regions"][2]["name"] = "kv.layer0"; }),
               "metadata.regions[2].name: expected a unique region name");
  requireError(with([](json& v) { v["regions"][1]["name"] = ""; }),
               "metadata.regions[1].name: expected 1..256 bytes without control characters");
  requireError(with([](json& v) { v["regions"][1]["kind"] = "gpu"; }),
               "metadata.regions[1].kind: expected 'host' or 'cuda', got 'gpu'");
  requireError(with([](json& v) { v["regions"][1]["device"] = -1; }),
               "metadata.regions[1].device: expected a CUDA device ordinal >= 0");
  requireError(with([](json& v) { v["regions"][1]["device"] = 1LL << 40; }),
               "metadata.regions[1].device: expected integer in [-1, 4095], got 1099511627776");
  requireError(with([](json& v) { v["regions"][1]["exposed"] = 1; }),
               "metadata.regions[1].exposed: expected boolean, got unsigned integer");
  requireError(with([](json& v) { v["regions"][1]["packedKey"] = std::string(8194, 'a'); }),
               "metadata.regions[1].packedKey: expected string of at most 8192 bytes");
  requireError(with([](json& v) {
                 v["regions"][1]["address"] = std::numeric_limits<std::uint64_t>::max() - 10;
               }),
               "metadata.regions[1].length: expected a length that does not overflow address");
  requireError(with([](json& v) { v["regions"][1]["address"] = json(1e30); }),
               "metadata.regions[1].address: expected unsigned integer, got float");
}

TEST_CASE("unknown metadata fields are ignored") {
  json value = md::metadataToJson(sampleMetadata());
  value["future"] = {{"x", 1}};
  value["regions"][0]["future"] = true;
  CHECK(viaText(value).isOk());
}

TEST_CASE("validateMetadata rejects what the decoder would") {
  auto metadata = sampleMetadata();
  CHECK(md::validateMetadata(metadata, "local").isOk());
  metadata.regions[1].info.id = metadata.regions[0].info.id;
  CHECK_THAT(md::validateMetadata(metadata, "local").message(),
             Catch::Contains("local.regions[1].id"));
  metadata = sampleMetadata();
  metadata.regions[0].packedKey.resize(md::kMaxPackedKeyBytes + 1);
  CHECK_THAT(md::validateMetadata(metadata, "local").message(),
             Catch::Contains("local.regions[0].packedKey: expected at most 4096 bytes"));
}

TEST_CASE("metadata blob round trip") {
  const auto metadata = sampleMetadata("decode-1", 5);
  const auto blob = md::encodeMetadataBlob(metadata);
  CHECK(blob[0] == 'K');
  CHECK(blob[3] == 'C');
  auto decoded = md::decodeMetadataBlob(blob);
  REQUIRE(decoded.isOk());
  CHECK(sameMetadata(*decoded, metadata));
}

TEST_CASE("bad metadata blobs are rejected with a reason") {
  auto blob = md::encodeMetadataBlob(sampleMetadata());

  auto wrongVersion = blob;
  wrongVersion[5] = 9;
  auto result = md::decodeMetadataBlob(wrongVersion);
  CHECK(result.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(result.status().message(),
             Catch::Contains("protocol version 9 unsupported (this agent speaks " +
                             std::to_string(kvx::agent::channel::kProtocolVersion) + ")"));

  result = md::decodeMetadataBlob(std::span<const std::uint8_t>(blob).first(blob.size() - 1));
  CHECK_THAT(result.status().message(), Catch::Contains("truncated"));
  result = md::decodeMetadataBlob(std::span<const std::uint8_t>(blob).first(5));
  CHECK_THAT(result.status().message(), Catch::Contains("truncated"));
  result = md::decodeMetadataBlob({});
  CHECK_THAT(result.status().message(), Catch::Contains("truncated"));

  auto trailing = blob;
  trailing.push_back(0);
  result = md::decodeMetadataBlob(trailing);
  CHECK_THAT(result.status().message(), Catch::Contains("bytes after its frame"));

  const std::string text = "{\"name\":\"a\"}";
  result = md::decodeMetadataBlob(std::vector<std::uint8_t>(text.begin(), text.end()));
  CHECK_THAT(result.status().message(), Catch::Contains("is not KVXC"));

  result = md::decodeMetadataBlob(encodeFrame(MessageType::kHello, "{}"));
  CHECK_THAT(result.status().message(), Catch::Contains("not a metadata blob: frame type 1"));

  result = md::decodeMetadataBlob(encodeFrame(MessageType::kMetadataBlob, "not json"));
  CHECK_THAT(result.status().message(), Catch::Contains("is not valid JSON"));

  result = md::decodeMetadataBlob(encodeFrame(MessageType::kMetadataBlob, R"({"name":5})"));
  CHECK_THAT(result.status().message(),
             Catch::Contains("metadata.name: expected string, got unsigned integer"));
}

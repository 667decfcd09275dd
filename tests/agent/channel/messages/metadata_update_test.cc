// kvx-test-labels: unit serial
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "agent/channel/messages/message.h"
#include "tests/agent/channel/messages/message_frames.h"
#include "tests/agent/metadata/sample_metadata.h"

using kvx::StatusCode;
using nlohmann::json;
using namespace kvx::agent::channel;
using kvx::test::decodeJson;

TEST_CASE("metadata_update round trip") {
  const MetadataUpdate update{kvx::test::sampleMetadata("a", 7)};
  auto decoded = decodeJson(MessageType::kMetadataUpdate, update.toJson());
  REQUIRE(decoded.isOk());
  REQUIRE(std::holds_alternative<MetadataUpdate>(*decoded));
  CHECK(kvx::test::sameMetadata(std::get<MetadataUpdate>(*decoded).metadata, update.metadata));
}

TEST_CASE("metadata_update field violations name the field") {
  json value = MetadataUpdate{kvx::test::sampleMetadata("a", 2)}.toJson();
  value["metadata"]["regions"][0]["address"] = "0x1000";
  auto result = decodeJson(MessageType::kMetadataUpdate, value);
  CHECK(result.status().code() == StatusCode::kProtocolError);
  CHECK_THAT(result.status().message(),
             Catch::Contains("metadata_update.metadata.regions[0].address: expected unsigned "
                             "integer, got string"));
  value = MetadataUpdate{kvx::test::sampleMetadata("a", 2)}.toJson();
  value["metadata"]["regions"] = json::array({1});
  CHECK_THAT(decodeJson(MessageType::kMetadataUpdate, value).status().message(),
             Catch::Contains("metadata_update.metadata.regions[0]: expected object, got unsigned "
                             "integer"));
}

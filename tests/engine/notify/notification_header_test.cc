// kvx-test-labels: unit
#include "engine/notify/notification_header.h"

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::engine;

TEST_CASE("notification header round trip", "[notify]") {
  auto header = encodeNotificationHeader("prefill-0");
  auto name = decodeNotificationHeader(header);
  REQUIRE(name.isOk());
  CHECK(*name == "prefill-0");
}

TEST_CASE("malformed notification headers are rejected", "[notify]") {
  auto header = encodeNotificationHeader("decode");
  CHECK(decodeNotificationHeader({header.data(), 3}).status().code() == StatusCode::kProtocolError);
  auto truncated = header;
  truncated.pop_back();
  CHECK(decodeNotificationHeader(truncated).status().code() == StatusCode::kProtocolError);
  auto longer = header;
  longer.push_back('x');
  CHECK(decodeNotificationHeader(longer).status().code() == StatusCode::kProtocolError);
  auto wrongKind = header;
  wrongKind[1] = 9;
  CHECK(decodeNotificationHeader(wrongKind).status().code() == StatusCode::kProtocolError);
}

TEST_CASE("message headers carry their kind; notification decoding refuses other kinds",
          "[notify]") {
  auto header = encodeMessageHeader(MessageKind::kStagingRequest, "prefill-0");
  auto decoded = decodeMessageHeader(header);
  REQUIRE(decoded.isOk());
  CHECK(decoded->kind == MessageKind::kStagingRequest);
  CHECK(decoded->sender == "prefill-0");
  CHECK(decodeNotificationHeader(header).status().code() == StatusCode::kProtocolError);
  header[1] = 0;
  CHECK(decodeMessageHeader(header).status().code() == StatusCode::kProtocolError);
}

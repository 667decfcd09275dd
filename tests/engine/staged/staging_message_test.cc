// kvx-test-labels: unit
// The staging messages' codec: round trips, and every malformed payload refused with a
// PROTOCOL_ERROR saying what is wrong (a peer's bytes are never trusted).
#include "engine/staged/staging_message.h"

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::engine;

TEST_CASE("staging requests round trip", "[staged]") {
  const StagingRequest request{StagingOp::kCopyIn, 7,    (std::uint64_t{3} << 32) | 9, 42,
                               1u << 20,           65536};
  auto decoded = decodeStagingRequest(encodeStagingRequest(request));
  REQUIRE(decoded.isOk());
  CHECK(decoded->op == StagingOp::kCopyIn);
  CHECK(decoded->slot == 7);
  CHECK(decoded->requestId == request.requestId);
  CHECK(decoded->region == 42);
  CHECK(decoded->offset == 1u << 20);
  CHECK(decoded->length == 65536);
}

TEST_CASE("staging replies round trip, failures with their status", "[staged]") {
  auto granted = decodeStagingReply(encodeStagingReply({StagingReplyKind::kGranted, 2, 99, {}}));
  REQUIRE(granted.isOk());
  CHECK(granted->kind == StagingReplyKind::kGranted);
  CHECK(granted->slot == 2);
  CHECK(granted->requestId == 99);
  CHECK(granted->status.isOk());

  const StagingReply failed{StagingReplyKind::kFailed, 0, 5,
                            invalidArgument("range exceeds region 'kv'")};
  auto decoded = decodeStagingReply(encodeStagingReply(failed));
  REQUIRE(decoded.isOk());
  CHECK(decoded->status.code() == StatusCode::kInvalidArgument);
  CHECK(decoded->status.message() == "peer: range exceeds region 'kv'");
}

TEST_CASE("malformed staging payloads are refused", "[staged]") {
  const auto request = encodeStagingRequest({StagingOp::kWrite, 0, 1, 2, 3, 4});
  CHECK(decodeStagingRequest({}).status().code() == StatusCode::kProtocolError);
  auto version = request;
  version[0] = 2;
  CHECK_THAT(decodeStagingRequest(version).status().message(), Catch::Contains("version 2"));
  auto shorter = request;
  shorter.pop_back();
  CHECK(decodeStagingRequest(shorter).status().code() == StatusCode::kProtocolError);
  auto op = request;
  op[1] = 9;
  CHECK_THAT(decodeStagingRequest(op).status().message(), Catch::Contains("operation 9"));

  auto reply = encodeStagingReply({StagingReplyKind::kFailed, 0, 1, internalError("x")});
  auto kind = reply;
  kind[1] = 0;
  CHECK(decodeStagingReply(kind).status().code() == StatusCode::kProtocolError);
  auto truncated = reply;
  truncated.pop_back();
  CHECK(decodeStagingReply(truncated).status().code() == StatusCode::kProtocolError);
  auto lying = reply;
  lying[20] = 0xff;  // message length far beyond the payload
  CHECK(decodeStagingReply(lying).status().code() == StatusCode::kProtocolError);
  // A code this side does not know reads as INTERNAL, never OK.
  auto code = reply;
  code[16] = 0;
  auto unknown = decodeStagingReply(code);
  REQUIRE(unknown.isOk());
  CHECK(unknown->status.code() == StatusCode::kInternal);
}

// kvx-test-labels: unit
// The staging messages' codec: round trips, and every malformed payload refused with a
// PROTOCOL_ERROR saying what is wrong (a peer's bytes are never trusted).
#include "engine/staged/staging_message.h"

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::engine;

TEST_CASE("staging requests round trip, with their ranges", "[staged]") {
  const StagingRequest request{StagingOp::kWrite,
                               7,
                               (std::uint64_t{3} << 32) | 9,
                               {{42, 1u << 20, 65536}, {43, 0, 1}, {42, 5, 100}}};
  auto decoded = decodeStagingRequest(encodeStagingRequest(request));
  REQUIRE(decoded.isOk());
  CHECK(decoded->op == StagingOp::kWrite);
  CHECK(decoded->slot == 7);
  CHECK(decoded->requestId == request.requestId);
  REQUIRE(decoded->ranges.size() == 3);
  CHECK(decoded->ranges[0].region == 42);
  CHECK(decoded->ranges[0].offset == 1u << 20);
  CHECK(decoded->ranges[0].length == 65536);
  CHECK(decoded->ranges[1].region == 43);
  CHECK(decoded->ranges[2].offset == 5);
  CHECK(decoded->bytes() == 65536 + 1 + 100);

  auto copyIn = decodeStagingRequest(encodeStagingRequest({StagingOp::kCopyIn, 2, 11, {}}));
  REQUIRE(copyIn.isOk());
  CHECK(copyIn->ranges.empty());
  CHECK(copyIn->slot == 2);
}

TEST_CASE("a staging request's ranges must fit its op and its size", "[staged]") {
  const auto refusal = [](const StagingRequest& request) {
    return decodeStagingRequest(encodeStagingRequest(request)).status();
  };
  CHECK_THAT(refusal({StagingOp::kWrite, 0, 1, {}}).message(), Catch::Contains("0 ranges"));
  CHECK_THAT(refusal({StagingOp::kRelease, 0, 1, {{1, 0, 8}}}).message(),
             Catch::Contains("only write and read requests"));
  CHECK_THAT(refusal({StagingOp::kRead, 0, 1, {{1, 0, 8}, {1, 8, 0}}}).message(),
             Catch::Contains("empty range (range 1)"));
  StagingRequest many{StagingOp::kRead, 0, 1, {}};
  many.ranges.assign(kMaxStagingRanges + 1, StagingRange{1, 0, 1});
  CHECK(refusal(many).code() == StatusCode::kProtocolError);
  many.ranges.pop_back();
  CHECK(refusal(many).isOk());

  // The count and the length must agree.
  auto bytes = encodeStagingRequest({StagingOp::kWrite, 0, 1, {{1, 0, 8}, {2, 0, 8}}});
  auto shorter = bytes;
  shorter.resize(shorter.size() - 24);
  CHECK_THAT(decodeStagingRequest(shorter).status().message(), Catch::Contains("2 ranges"));
  auto longer = bytes;
  longer.push_back(0);
  CHECK(decodeStagingRequest(longer).status().code() == StatusCode::kProtocolError);
  auto reserved = bytes;
  reserved[20] = 1;
  CHECK_THAT(decodeStagingRequest(reserved).status().message(), Catch::Contains("reserved"));
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
  const auto request = encodeStagingRequest({StagingOp::kWrite, 0, 1, {{2, 3, 4}}});
  CHECK(decodeStagingRequest({}).status().code() == StatusCode::kProtocolError);
  // An agent of the one-range protocol (version 1) is told which version this one speaks.
  auto version = request;
  version[0] = 1;
  CHECK_THAT(decodeStagingRequest(version).status().message(),
             Catch::Contains("version 1") && Catch::Contains("speaks version 2"));
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

// kvx-test-labels: unit serial
// Admission on the prefill side: waiting for room, a full queue, requests that can never
// fit, request ids, and the free-space estimates that drive placement.
#include <catch2/catch.hpp>

#include "tests/kv/handoff/handoff_harness.h"

using namespace kvx;
using namespace kvx::test::handoff;
using kvx::kv::handoff::PlaceMsg;

TEST_CASE("a full decode pool queues a request until a release frees blocks", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 8);
  h.connect("p", "d");
  KvRequestSpec a = h.request(p, "a", 24);  // 6 blocks
  a.mode = mode;
  REQUIRE(p.prefill->submit(a).isOk());
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kComplete);

  KvRequestSpec b = h.request(p, "b", 16);  // 4 blocks; 2 are free
  b.mode = mode;
  REQUIRE(p.prefill->submit(b).isOk());
  CHECK(HandoffHarness::state(p, "b") == KvRequestState::kQueued);
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p, "b") == KvRequestState::kQueued);
  CHECK(h.net().sent<PlaceMsg>() == 1);
  CHECK(d.decode->liveRequests() == 1);

  h.verifyArrived(d, "a");
  HandoffHarness::consumeAndRelease(d, "a");  // tells the prefill side about the room
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p, "b") == KvRequestState::kReleased);
  h.verifyArrived(d, "b");
  HandoffHarness::consumeAndRelease(d, "b");
  h.expectClean();
}

TEST_CASE("a decode agent fuller than reported refuses; the request waits", "[handoff]") {
  // Two prefill agents both see 8 free blocks and both place 6.
  HandoffHarness h;
  Side& p1 = h.addPrefill("p1", 16);
  Side& p2 = h.addPrefill("p2", 16);
  Side& d = h.addDecode("d", 8);
  h.connect("p1", "d");
  h.connect("p2", "d");
  REQUIRE(p1.prefill->submit(h.request(p1, "a", 24)).isOk());
  REQUIRE(p2.prefill->submit(h.request(p2, "b", 24)).isOk());
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p1, "a") == KvRequestState::kReleased);
  CHECK(HandoffHarness::state(p2, "b") == KvRequestState::kQueued);
  CHECK(p2.pool.allocator().freeBlocks() == 10);  // still holds its source
  h.verifyArrived(d, "a");
  HandoffHarness::consumeAndRelease(d, "a");
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p2, "b") == KvRequestState::kReleased);
  h.verifyArrived(d, "b");
  HandoffHarness::consumeAndRelease(d, "b");
  h.expectClean();
}

TEST_CASE("a full placement queue refuses with RESOURCE_EXHAUSTED", "[handoff]") {
  HandoffHarness h;
  KvAgentOptions options = HandoffHarness::defaultOptions();
  options.queueCapacity = 1;
  Side& p = h.addPrefill("p", 32, options);
  Side& d = h.addDecode("d", 8);
  h.connect("p", "d");
  REQUIRE(p.prefill->submit(h.request(p, "a", 24)).isOk());
  REQUIRE(h.settle());
  REQUIRE(p.prefill->submit(h.request(p, "b", 16)).isOk());
  CHECK(HandoffHarness::state(p, "b") == KvRequestState::kQueued);
  REQUIRE(p.prefill->submit(h.request(p, "c", 16)).isOk());
  const KvRequestStatus c = HandoffHarness::status(p, "c");
  CHECK(c.state == KvRequestState::kFailed);
  CHECK(c.status.code() == StatusCode::kResourceExhausted);
  CHECK_THAT(c.status.message(), Catch::Contains("queue full"));
  // Only b's source blocks are still taken ("a" ended here when the decode side confirmed).
  CHECK(p.pool.allocator().freeBlocks() == 32 - 4);
  CHECK(p.prefill->liveRequests() == 1);

  HandoffHarness::consumeAndRelease(d, "a");
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p, "b") == KvRequestState::kReleased);
  h.verifyArrived(d, "b");
  HandoffHarness::consumeAndRelease(d, "b");
  h.expectClean();
}

TEST_CASE("a request larger than every decode pool fails with the numbers", "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  h.addDecode("d1", 8);
  h.addDecode("d2", 6);
  h.connect("p", "d1");
  h.connect("p", "d2");
  REQUIRE(p.prefill->submit(h.request(p, "big", 40)).isOk());  // 10 blocks
  const KvRequestStatus big = HandoffHarness::status(p, "big");
  CHECK(big.state == KvRequestState::kFailed);
  CHECK(big.status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(big.status.message(),
             Catch::Contains("needs 10 blocks") && Catch::Contains("largest decode pool has 8"));

  KvRequestSpec pinned = h.request(p, "pinned", 8);
  pinned.destination = "nowhere";
  REQUIRE(p.prefill->submit(pinned).isOk());
  CHECK(HandoffHarness::status(p, "pinned").status.code() == StatusCode::kNotFound);
  CHECK(h.net().sent<PlaceMsg>() == 0);
  h.expectClean();
}

TEST_CASE("a request id is unique among live requests", "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  REQUIRE(p.prefill->submit(h.request(p, "a", 8)).isOk());
  const std::vector<std::uint64_t> firstKeys = h.keys("a");

  SECTION("on the prefill side while the request is live there") {
    KvRequestSpec again = h.request(p, "a", 8);
    const Status twice = p.prefill->submit(again);
    CHECK(twice.code() == StatusCode::kAlreadyExists);
    CHECK_THAT(twice.message(), Catch::Contains("'a' is live already"));
    h.freeSource(p, again);  // a refused submit leaves the blocks with the caller
    CHECK(p.prefill->liveRequests() == 1);
    REQUIRE(h.settle());
    CHECK(HandoffHarness::state(p, "a") == KvRequestState::kReleased);
    HandoffHarness::consumeAndRelease(d, "a");
  }

  SECTION("on the decode side while the server still holds it") {
    REQUIRE(h.settle());
    const KvArrival first = h.verifyArrived(d, "a");
    // Done on the prefill side, so the id is free there; the decode agent refuses it.
    REQUIRE(p.prefill->submit(h.request(p, "a", 12)).isOk());
    REQUIRE(h.settle());
    const KvRequestStatus second = HandoffHarness::status(p, "a");
    CHECK(second.state == KvRequestState::kFailed);
    CHECK(second.status.code() == StatusCode::kAlreadyExists);
    CHECK(HandoffHarness::state(d, "a") == KvRequestState::kComplete);
    for (std::size_t i = 0; i < first.blocks.size(); ++i) {
      CHECK(HandoffHarness::mismatches(d.pool, first.blocks[i], firstKeys[i]) == 0);
    }
    HandoffHarness::consumeAndRelease(d, "a");
    REQUIRE(p.prefill->submit(h.request(p, "a", 12)).isOk());  // free everywhere now
    REQUIRE(h.settle());
    h.verifyArrived(d, "a");
    HandoffHarness::consumeAndRelease(d, "a");
  }

  SECTION("on the decode side when another prefill agent uses it") {
    Side& p2 = h.addPrefill("p2", 32);
    h.connect("p2", "d");
    REQUIRE(h.settle());
    const KvArrival first = h.verifyArrived(d, "a");
    REQUIRE(p2.prefill->submit(h.request(p2, "a", 8)).isOk());
    REQUIRE(h.settle());
    CHECK(HandoffHarness::status(p2, "a").status.code() == StatusCode::kAlreadyExists);
    CHECK(HandoffHarness::state(d, "a") == KvRequestState::kComplete);
    for (std::size_t i = 0; i < first.blocks.size(); ++i) {
      CHECK(HandoffHarness::mismatches(d.pool, first.blocks[i], firstKeys[i]) == 0);
    }
    HandoffHarness::consumeAndRelease(d, "a");
  }
  h.expectClean();
}

// A decode agent refuses a placement that expected prefix reuse it no longer has (its
// cache keeps nothing). The prefill side forgets that locality and waits for capacity
// instead of placing the same request again at once.
TEST_CASE("a refused placement does not spin on a prefix the decode lacks", "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 8);  // prefixCacheBlocks 0: keeps no prefixes
  h.connect("p", "d");
  KvRequestSpec a = h.request(p, "a", 24);  // 6 blocks
  a.prefixHashes = {1, 2, 3};
  REQUIRE(p.prefill->submit(a).isOk());
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kComplete);

  KvRequestSpec b = h.request(p, "b", 24, h.keys("a"));  // the same prompt
  b.prefixHashes = {1, 2, 3};
  REQUIRE(p.prefill->submit(b).isOk());
  CHECK(h.settle(2000));
  CHECK(h.net().sent<PlaceMsg>() <= 3);
  CHECK(HandoffHarness::state(p, "b") == KvRequestState::kQueued);

  HandoffHarness::consumeAndRelease(d, "a");  // room: ends the ping-pong if there is one
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p, "b") == KvRequestState::kReleased);
  h.verifyArrived(d, "b");
  HandoffHarness::consumeAndRelease(d, "b");
  h.expectClean();
}

// Blocks held only by the prefix cache (unpinned) are evicted on demand, so the decode
// agent reports them as free room.
TEST_CASE("blocks held only by the prefix cache count as room", "[handoff]") {
  HandoffHarness h;
  KvAgentOptions decodeOptions = HandoffHarness::defaultOptions();
  decodeOptions.prefixCacheBlocks = 8;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 8, decodeOptions);
  h.connect("p", "d");
  KvRequestSpec a = h.request(p, "a", 32);  // 8 blocks, 4 full chunks
  a.prefixHashes = {1, 2, 3, 4};
  REQUIRE(p.prefill->submit(a).isOk());
  REQUIRE(h.settle());
  HandoffHarness::consumeAndRelease(d, "a");
  REQUIRE(h.settle());
  CHECK(d.decode->prefixCache().cachedBlocks() == 8);

  REQUIRE(p.prefill->submit(h.request(p, "b", 16)).isOk());  // another prompt
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p, "b") == KvRequestState::kReleased);
  if (HandoffHarness::state(p, "b") == KvRequestState::kQueued) {
    REQUIRE(p.prefill->cancel("b", cancelled("the test gives up")).isOk());
  } else {
    h.verifyArrived(d, "b");
    HandoffHarness::consumeAndRelease(d, "b");
  }
  h.expectClean();
}

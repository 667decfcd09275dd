// kvx-test-labels: unit serial
// Aborts that race with the end of a request: an abort crossing the confirmation, and
// acknowledgements that do not come in time.
#include <catch2/catch.hpp>
#include <thread>

#include "tests/kv/handoff/handoff_harness.h"

using namespace kvx;
using namespace kvx::test::handoff;
using kvx::kv::handoff::AbortMsg;

// An abort from the prefill side that crosses the decode side's confirmation reaches a
// request that is complete, or consumed by the server. The decode side must leave those
// blocks to the server and only acknowledge. A prefill request that was confirmed but whose
// write has not reported locally yet must not time out either.
TEST_CASE("an abort crossing the confirmation leaves consumed blocks to the server", "[handoff]") {
  HandoffHarness h;
  KvAgentOptions prefillOptions = HandoffHarness::defaultOptions();
  SECTION("the prefill side is cancelled") {}
  SECTION("the prefill side's deadline passes after the confirmation") {
    prefillOptions.requestTimeout = 30ms;
  }
  Side& p = h.addPrefill("p", 32, prefillOptions);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  h.net().holdCompletions(true);  // the prefill side's write reports late
  REQUIRE(p.prefill->submit(h.request(p, "a", 20)).isOk());
  REQUIRE(h.net().settleUntil(
      [&] { return HandoffHarness::state(d, "a") == KvRequestState::kComplete; }));
  h.verifyArrived(d, "a");
  REQUIRE(d.decode->consume("a").isOk());  // the server is using the blocks
  if (prefillOptions.requestTimeout == 30ms) {
    REQUIRE(h.settle());
    CHECK(HandoffHarness::state(p, "a") == KvRequestState::kComplete);  // confirmed
    std::this_thread::sleep_for(60ms);
    h.tick();
  } else {
    REQUIRE(p.prefill->cancel("a", cancelled("the client went away")).isOk());
  }
  h.net().holdCompletions(false);
  REQUIRE(h.settle());
  // A confirmed request is not timed out (it only waits for its write's local completion);
  // a cancel that crossed the confirmation sends one abort, which the decode side answers
  // without touching the consumed blocks.
  CHECK(h.net().sent<AbortMsg>("p") == (prefillOptions.requestTimeout == 30ms ? 0 : 1));
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kConsumed);
  CHECK(d.pool.allocator().freeBlocks() == 32 - 5);
  CHECK(d.decode->release("a").isOk());
  h.expectClean();
}

// A side that aborted a request waits for the other side's acknowledgement while that side
// still moves data into (PUSH) or out of (PULL) its blocks. When the acknowledgement does
// not come within the lease, it cuts the peer off (KvPort::disconnect) before freeing, so
// a late move cannot land in blocks handed to another request. The fake's held landings
// never drain, so a block freed under the move would show as a violation.
TEST_CASE("a missing abort acknowledgement does not free blocks under a live move", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  INFO((mode == KvMode::kPush ? "PUSH" : "PULL"));
  HandoffHarness h;
  KvAgentOptions options = HandoffHarness::defaultOptions();
  options.leaseTimeout = 30ms;
  Side& p = h.addPrefill("p", 32, options);
  h.addDecode("d", 32, options);
  h.connect("p", "d");
  h.net().holdLandings(true);
  KvRequestSpec spec = h.request(p, "a", 20);
  spec.mode = mode;
  spec.layerwise = true;
  REQUIRE(p.prefill->submit(spec).isOk());
  REQUIRE(p.prefill->layerReady("a", 0).isOk());
  REQUIRE(h.settle());
  REQUIRE(h.net().movesInFlight() == 1);
  // The side that does not move gives up and waits for the mover's acknowledgement.
  if (mode == KvMode::kPush) {
    std::this_thread::sleep_for(60ms);  // the decode side's lease expires
  } else {
    REQUIRE(p.prefill->cancel("a", cancelled("the client went away")).isOk());
  }
  h.tick();
  REQUIRE(h.settle());
  std::this_thread::sleep_for(60ms);  // past the acknowledgement deadline
  h.tick();
  REQUIRE(h.settle());
  h.expectNoViolations();
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  h.expectClean();
}

// kvx-test-labels: unit serial
// Failures during the hand-off: failed moves, expired leases and deadlines, aborts while
// data moves, and peers that disappear. Every test ends with every block free on both
// sides and no block freed while a move could still touch it.
#include <catch2/catch.hpp>
#include <thread>

#include "tests/kv/handoff/handoff_harness.h"

using namespace kvx;
using namespace kvx::test::handoff;
using kvx::kv::handoff::AbortAckMsg;
using kvx::kv::handoff::AbortMsg;
using kvx::kv::handoff::PlaceMsg;

namespace {

// Submits `id` (`tokens` tokens) on p in `mode`; layer-wise requests get `readyLayers`.
void submit(HandoffHarness& h, Side& p, const std::string& id, std::uint64_t tokens, KvMode mode,
            bool layerwise, std::uint32_t readyLayers = 0) {
  KvRequestSpec spec = h.request(p, id, tokens);
  spec.mode = mode;
  spec.layerwise = layerwise;
  REQUIRE(p.prefill->submit(spec).isOk());
  for (std::uint32_t l = 0; l < readyLayers; ++l) REQUIRE(p.prefill->layerReady(id, l).isOk());
}

void sleepPast(std::chrono::milliseconds timeout) { std::this_thread::sleep_for(timeout * 2); }

}  // namespace

TEST_CASE("a failed move fails the request on both sides and frees every block", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  INFO(modeName(mode));
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  StatusCode expected = StatusCode::kTransportError;
  SECTION("the whole request's move") {
    h.net().failNextMoves(1);
    submit(h, p, "a", 20, mode, false);
  }
  SECTION("the second layer's move, after the first one landed") {
    h.net().failNextMoves(1, 1);
    submit(h, p, "a", 20, mode, true, 4);
  }
  SECTION("move() itself refuses") {
    h.net().failNextMoveCalls(1);
    submit(h, p, "a", 20, mode, false);
  }
  REQUIRE(h.settle());
  const KvRequestStatus sent = HandoffHarness::status(p, "a");
  CHECK(sent.state == KvRequestState::kFailed);
  CHECK(sent.status.code() == expected);
  const KvRequestStatus received = HandoffHarness::status(d, "a");
  CHECK(received.state == KvRequestState::kFailed);
  CHECK(received.status.code() == expected);
  HandoffHarness::takeArrivals(d);
  CHECK(d.arrivals.empty());
  h.expectClean();
}

TEST_CASE("an expired lease frees the decode side after the abort handshake", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  INFO(modeName(mode));
  HandoffHarness h;
  KvAgentOptions prefillOptions = HandoffHarness::defaultOptions();
  prefillOptions.leaseTimeout = 30ms;  // the lease the placement asks for
  Side& p = h.addPrefill("p", 32, prefillOptions);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  submit(h, p, "a", 20, mode, true);  // no layer is ever handed over
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kPlaced);
  sleepPast(30ms);
  h.tick();
  REQUIRE(h.settle());
  const KvRequestStatus received = HandoffHarness::status(d, "a");
  CHECK(received.state == KvRequestState::kFailed);
  CHECK(received.status.code() == StatusCode::kTimedOut);
  CHECK_THAT(received.status.message(), Catch::Contains("lease"));
  const KvRequestStatus sent = HandoffHarness::status(p, "a");
  CHECK(sent.state == KvRequestState::kFailed);
  CHECK(sent.status.code() == StatusCode::kTimedOut);
  CHECK_THAT(sent.status.message(), Catch::Contains("aborted"));
  CHECK(h.net().sent<AbortMsg>("d") == 1);
  CHECK(h.net().sent<AbortAckMsg>("p") == 1);
  h.expectClean();
}

TEST_CASE("the side that moves data drains its moves before the other side frees", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  INFO(modeName(mode));
  HandoffHarness h;
  KvAgentOptions prefillOptions = HandoffHarness::defaultOptions();
  prefillOptions.leaseTimeout = 30ms;
  Side& p = h.addPrefill("p", 32, prefillOptions);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  h.net().holdLandings(true);  // the data path is slow: nothing lands
  StatusCode why = StatusCode::kCancelled;
  SECTION("the prefill side is cancelled") {
    submit(h, p, "a", 20, mode, false);
    REQUIRE(h.settle());
    REQUIRE(h.net().movesInFlight() == 1);
    REQUIRE(p.prefill->cancel("a", cancelled("the client went away")).isOk());
  }
  SECTION("the decode side's lease expires") {
    submit(h, p, "a", 20, mode, true, 1);
    REQUIRE(h.settle());
    REQUIRE(h.net().movesInFlight() == 1);
    sleepPast(30ms);
    h.tick();
    why = StatusCode::kTimedOut;
  }
  REQUIRE(h.settle());
  // Both gave up, but the move may still touch blocks on both sides: nobody frees.
  CHECK(p.prefill->liveRequests() == 1);
  CHECK(d.decode->liveRequests() == 1);
  CHECK(p.pool.allocator().freeBlocks() == 32 - 5);
  CHECK(d.pool.allocator().freeBlocks() == 32 - 5);
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  CHECK(h.net().moves().begin()->second.status.code() == StatusCode::kCancelled);
  CHECK(h.net().bytesCopied() == 0);
  CHECK(HandoffHarness::status(p, "a").status.code() == why);
  CHECK(HandoffHarness::status(d, "a").status.code() == why);
  h.expectClean();
}

// A failing PULL request ends for its caller as soon as this side's own moves have drained:
// its Status is published at once, while its source blocks stay reserved (and its id live)
// until the decode side, whose reads may still be stuck, acknowledges the abort.
TEST_CASE("a failing pull request reports at once and keeps its blocks until the ack",
          "[handoff]") {
  HandoffHarness h;
  KvAgentOptions prefillOptions = HandoffHarness::defaultOptions();
  prefillOptions.requestTimeout = 30ms;
  Side& p = h.addPrefill("p", 32, prefillOptions);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  h.net().holdLandings(true);  // the decode side's reads are stuck
  submit(h, p, "a", 20, KvMode::kPull, false);
  REQUIRE(h.settle());
  REQUIRE(h.net().movesInFlight() == 1);
  sleepPast(30ms);
  h.tick();
  REQUIRE(h.settle());
  // The caller knows now, with the reason.
  const KvRequestStatus failed = HandoffHarness::status(p, "a");
  CHECK(failed.state == KvRequestState::kFailed);
  CHECK(failed.status.code() == StatusCode::kTimedOut);
  CHECK(failed.latency.count() > 0);
  CHECK(h.net().sent<AbortMsg>("p") == 1);
  // Nothing the decode side may still read is freed, and the id is still taken.
  CHECK(p.prefill->liveRequests() == 1);
  CHECK(p.pool.allocator().freeBlocks() == 32 - 5);
  KvRequestSpec again = h.request(p, "a", 4);
  CHECK(p.prefill->submit(again).code() == StatusCode::kAlreadyExists);
  h.freeSource(p, again);
  h.expectNoViolations();
  // The stuck reads drain; the acknowledgement frees the blocks, and the published
  // failure stays as it was.
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  CHECK(h.net().sent<AbortAckMsg>("d") == 1);
  CHECK(HandoffHarness::status(p, "a").status.code() == StatusCode::kTimedOut);
  CHECK(HandoffHarness::status(p, "a").latency == failed.latency);
  CHECK(HandoffHarness::status(d, "a").state == KvRequestState::kFailed);
  h.expectClean();
}

TEST_CASE("a request past its deadline fails on both sides", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  INFO(modeName(mode));
  HandoffHarness h;
  KvAgentOptions prefillOptions = HandoffHarness::defaultOptions();
  prefillOptions.requestTimeout = 30ms;
  Side& p = h.addPrefill("p", 32, prefillOptions);
  Side& d = h.addDecode("d", 8);
  h.connect("p", "d");
  SECTION("placed, but its data never comes") {
    submit(h, p, "a", 20, mode, true);
    REQUIRE(h.settle());
    CHECK(HandoffHarness::state(d, "a") == KvRequestState::kPlaced);
    sleepPast(30ms);
    h.tick();
    REQUIRE(h.settle());
    CHECK_THAT(HandoffHarness::status(p, "a").status.message(), Catch::Contains("at its deadline"));
    CHECK(HandoffHarness::status(d, "a").status.code() == StatusCode::kTimedOut);
  }
  SECTION("still waiting for room") {
    KvRequestSpec big = h.request(p, "big", 24);
    big.timeout = 30s;
    REQUIRE(p.prefill->submit(big).isOk());
    REQUIRE(h.settle());
    submit(h, p, "a", 20, mode, false);
    CHECK(HandoffHarness::state(p, "a") == KvRequestState::kQueued);
    sleepPast(30ms);
    h.tick();
    REQUIRE(h.settle());
    CHECK_THAT(HandoffHarness::status(p, "a").status.message(), Catch::Contains("no decode agent"));
    HandoffHarness::consumeAndRelease(d, "big");
  }
  const KvRequestStatus sent = HandoffHarness::status(p, "a");
  CHECK(sent.state == KvRequestState::kFailed);
  CHECK(sent.status.code() == StatusCode::kTimedOut);
  h.expectClean();
}

// A request pinned to a decode agent that was lost (and that the agent dials again) waits
// for it, as for room, until its deadline; a name never connected still fails at once
// (handoff_backpressure_test).
TEST_CASE("a request pinned to a peer being dialed again waits for it", "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  h.net().dropLink("p", "d");
  h.tick();
  KvRequestSpec spec = h.request(p, "a", 20);
  spec.destination = "d";
  SECTION("it comes back") {
    REQUIRE(p.prefill->submit(spec).isOk());
    REQUIRE(h.settle());
    CHECK(HandoffHarness::state(p, "a") == KvRequestState::kQueued);
    h.connect("p", "d");
    REQUIRE(h.settle());
    CHECK(HandoffHarness::state(p, "a") == KvRequestState::kReleased);
    h.verifyArrived(d, "a");
    HandoffHarness::consumeAndRelease(d, "a");
  }
  SECTION("it does not, by the deadline") {
    spec.timeout = 30ms;
    REQUIRE(p.prefill->submit(spec).isOk());
    sleepPast(30ms);
    h.tick();
    REQUIRE(h.settle());
    const KvRequestStatus failed = HandoffHarness::status(p, "a");
    CHECK(failed.state == KvRequestState::kFailed);
    CHECK(failed.status.code() == StatusCode::kTimedOut);
    CHECK_THAT(failed.status.message(), Catch::Contains("being dialed again"));
  }
  h.expectClean();
}

TEST_CASE("a peer that disappears fails its requests with PEER_FAILED", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  INFO(modeName(mode));
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  submit(h, p, "done", 8, mode, false);
  REQUIRE(h.settle());
  h.net().holdLandings(true);
  submit(h, p, "a", 20, mode, false);
  submit(h, p, "b", 12, mode, true, 2);
  REQUIRE(h.settle());
  CHECK(h.net().movesInFlight() == 3);
  h.net().dropLink("p", "d");
  h.tick();
  REQUIRE(h.settle());
  // The side that does not move is done at once; the mover waits for its moves to fail.
  Side& mover = mode == KvMode::kPush ? p : d;
  Side& other = mode == KvMode::kPush ? d : p;
  CHECK(other.pool.allocator().freeBlocks() ==
        other.pool.blocks() - (mode == KvMode::kPush ? 2 : 0));
  CHECK(mover.pool.allocator().freeBlocks() ==
        mover.pool.blocks() - 8 - (mode == KvMode::kPush ? 0 : 2));
  h.net().holdLandings(false);  // the moves in flight fail now
  REQUIRE(h.settle());
  for (const char* id : {"a", "b"}) {
    INFO("request " << id);
    CHECK(HandoffHarness::state(p, id) == KvRequestState::kFailed);
    CHECK(HandoffHarness::status(p, id).status.code() == StatusCode::kPeerFailed);
    CHECK(HandoffHarness::state(d, id) == KvRequestState::kFailed);
    CHECK(HandoffHarness::status(d, id).status.code() == StatusCode::kPeerFailed);
  }
  // What arrived before stays with the server.
  CHECK(HandoffHarness::state(d, "done") == KvRequestState::kComplete);
  CHECK(h.net().bytesCopied() == 2 * p.pool.blockBytes());
  h.verifyArrived(d, "done");
  HandoffHarness::consumeAndRelease(d, "done");
  h.expectClean();
}

TEST_CASE("a request whose decode agent dies before placing it goes elsewhere", "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  h.addDecode("d1", 16);
  Side& d2 = h.addDecode("d2", 16);
  h.connect("p", "d1");
  h.connect("p", "d2");
  h.net().holdChannel("p", "d1", true);
  submit(h, p, "a", 20, KvMode::kPush, false);
  REQUIRE(h.settle());
  CHECK(h.net().sent<PlaceMsg>("p") == 1);  // to d1 (equal peers: the first name)
  h.net().dropLink("p", "d1");
  h.tick();
  REQUIRE(h.settle());
  CHECK(HandoffHarness::status(p, "a").state == KvRequestState::kReleased);
  CHECK(HandoffHarness::status(p, "a").peer == "d2");
  CHECK(h.net().sent<PlaceMsg>("p") == 2);
  h.verifyArrived(d2, "a");
  HandoffHarness::consumeAndRelease(d2, "a");
  h.expectClean();
}

TEST_CASE("a placement answered in the session before a lost link is not taken for the next",
          "[handoff]") {
  // Over shared memory, a message of the old session can still reach an agent after it saw
  // the link go: a stopped prefill agent, resumed, finds the decode side's "placed" in its
  // queue after it placed the request again. Taken for the new placement, it would make the
  // agent write into blocks the decode side gave back (late writes, seen in a loaded run of
  // initiator_loss_test).
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  h.net().holdChannel("d", "p", true);  // the first answer does not arrive in its session
  submit(h, p, "a", 20, KvMode::kPush, false);
  REQUIRE(h.settle());
  REQUIRE(h.net().sent<PlaceMsg>("p") == 1);
  h.net().dropLink("p", "d");
  h.tick();  // both sides see the loss: "a" goes back to p's queue, d frees its blocks
  REQUIRE(h.settle());
  REQUIRE(HandoffHarness::state(p, "a") == KvRequestState::kQueued);
  h.net().link("p", "d");
  h.connect("p", "d");  // "a" is placed again
  // The old session's answer, for the first placement: blocks d does not hold for it.
  kvx::kv::handoff::PlacedMsg stale{"a", {{27, 5}}, 0, 0, /*attempt=*/1};
  REQUIRE(d.context->port.send("p", stale).isOk());
  h.net().holdChannel("d", "p", false);
  REQUIRE(h.settle());
  CHECK(h.net().sent<PlaceMsg>("p") == 2);
  const KvRequestStatus sent = HandoffHarness::status(p, "a");
  CHECK(sent.state == KvRequestState::kReleased);
  CHECK(sent.status.isOk());
  h.verifyArrived(d, "a");
  HandoffHarness::consumeAndRelease(d, "a");
  h.expectClean();
}

TEST_CASE("a failed layer-wise request keeps its source for its producer until its next call",
          "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  KvRequestSpec spec = h.request(p, "a", 16);  // 4 blocks, 4 layers
  spec.mode = KvMode::kPush;
  spec.layerwise = true;
  spec.keepSourceForProducer = true;
  REQUIRE(p.prefill->submit(spec).isOk());
  REQUIRE(p.prefill->layerReady("a", 0).isOk());
  REQUIRE(h.settle());
  h.net().dropLink("p", "d");
  h.tick();
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p, "a") == KvRequestState::kFailed);
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kFailed);
  // The producer may be writing layer 1 now: its blocks are still the request's.
  CHECK(p.pool.allocator().freeBlocks() == p.pool.blocks() - 4);
  CHECK(p.prefill->liveRequests() == 1);
  SECTION("its next layerReady fails and gives them back") {
    const Status next = p.prefill->layerReady("a", 1);
    CHECK(next.code() == StatusCode::kFailedPrecondition);
    CHECK_THAT(next.message(), Catch::Contains("has failed"));
  }
  SECTION("its cancel gives them back") { CHECK(p.prefill->cancel("a", cancelled("done")).isOk()); }
  CHECK(p.pool.allocator().freeBlocks() == p.pool.blocks());
  CHECK(p.prefill->liveRequests() == 0);
  h.expectClean();
}

// kvx-test-labels: unit serial
// A prefill agent whose process copies into the decode agent's pool itself (UCX over shared
// memory) is lost mid-push. Closing its link does not stop its writes there, so the decode
// side holds the request's blocks until the agent proves it stopped: it joins again (the same
// incarnation) and answers an abort of the request, or its process ends. The fake network
// lets such a writer's moves land after the link dropped, and fails the test on any block
// freed while one may still land.
#include <catch2/catch.hpp>

#include "tests/kv/handoff/handoff_harness.h"

using namespace kvx;
using namespace kvx::test::handoff;
using kvx::kv::handoff::AbortAckMsg;
using kvx::kv::handoff::AbortMsg;

namespace {

constexpr std::uint64_t kTokens = 20;  // 5 blocks of the tiny shape

// p, connected to d, pushes request "a" to it, and its move stays in flight (landings held).
void pushAndHold(HandoffHarness& h, Side& p) {
  h.connect("p", "d");
  KvRequestSpec spec = h.request(p, "a", kTokens);
  spec.mode = KvMode::kPush;
  REQUIRE(p.prefill->submit(spec).isOk());
  h.net().holdLandings(true);
  REQUIRE(h.settle());
}

// p pushes request "a" to d, a direct writer; the link drops while its move is in flight,
// and the decode side learns of it (as the harness's tick() would tell it), the prefill side
// not yet. Returns the decode side's blocks of "a".
std::uint64_t loseWriterMidPush(HandoffHarness& h, Side& p, Side& d) {
  h.net().writeDirectly("p", "d");
  pushAndHold(h, p);
  REQUIRE(HandoffHarness::state(p, "a") == KvRequestState::kTransferring);
  REQUIRE(h.net().movesInFlight() == 1);
  const std::uint64_t reserved = d.pool.blocks() - d.pool.allocator().freeBlocks();
  REQUIRE(reserved > 0);
  h.dropLinkSeenByDecode("p", "d");
  return reserved;
}

}  // namespace

TEST_CASE("a lost direct writer's blocks stay held until it rejoins and answers the abort",
          "[handoff]") {
  HandoffHarness h;
  Side& d = h.addDecode("d", 32);
  Side& p = h.addPrefill("p", 32);
  const std::uint64_t reserved = loseWriterMidPush(h, p, d);
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kFailed);
  CHECK(d.decode->heldBlocks() == reserved);
  SECTION("the prefill side cancels its write") {
    h.tick();  // it sees the loss
    h.net().holdLandings(false);
    REQUIRE(h.settle());
  }
  SECTION("its write lands after the link dropped, into the held blocks") {
    h.net().holdLandings(false);
    REQUIRE(h.settle());
    CHECK(h.net().bytesCopied() > 0);
    h.tick();  // only then does the prefill side see the loss
    REQUIRE(h.settle());
  }
  CHECK(h.net().movesInFlight() == 0);
  CHECK(HandoffHarness::state(p, "a") == KvRequestState::kFailed);
  // The decode side cannot see that the writes are over: still held.
  h.tick();
  REQUIRE(h.settle());
  CHECK(d.decode->heldBlocks() == reserved);
  CHECK(d.pool.allocator().freeBlocks() == d.pool.blocks() - reserved);
  h.expectNoViolations();

  // Back, the same incarnation: asked to abort "a", it answers at once (nothing of it is
  // left there), and the blocks come back.
  const std::size_t abortsBefore = h.net().sent<AbortMsg>("d");
  const std::size_t acksBefore = h.net().sent<AbortAckMsg>("p");
  h.net().link("p", "d");
  h.connect("p", "d");
  REQUIRE(h.settle());
  CHECK(h.net().sent<AbortMsg>("d") == abortsBefore + 1);
  CHECK(h.net().sent<AbortAckMsg>("p") == acksBefore + 1);
  CHECK(d.decode->heldBlocks() == 0);
  h.expectClean();
}

TEST_CASE("a direct writer back before it noticed the loss answers once its moves drained",
          "[handoff]") {
  HandoffHarness h;
  Side& d = h.addDecode("d", 32);
  Side& p = h.addPrefill("p", 32);
  const std::uint64_t reserved = loseWriterMidPush(h, p, d);
  // The link comes back before the prefill side saw it go: its request is live, its move
  // still in flight, when the decode side asks it to abort.
  h.net().link("p", "d");
  h.connect("p", "d");
  REQUIRE(h.settle());                    // landings are still held
  CHECK(p.prefill->liveRequests() == 1);  // failing, its move cancelled but not drained
  CHECK(h.net().movesInFlight() == 1);
  CHECK(h.net().sent<AbortAckMsg>("p") == 0);  // not before the move drained
  CHECK(d.decode->heldBlocks() == reserved);
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p, "a") == KvRequestState::kFailed);
  CHECK(h.net().sent<AbortAckMsg>("p") == 1);
  CHECK(d.decode->heldBlocks() == 0);
  h.expectClean();
}

TEST_CASE("a lost direct writer's blocks come back once its process ends", "[handoff]") {
  HandoffHarness h;
  Side& d = h.addDecode("d", 32);
  Side& p = h.addPrefill("p", 32);
  const std::uint64_t reserved = loseWriterMidPush(h, p, d);
  h.tick();
  CHECK(d.decode->heldBlocks() == reserved);
  h.endProcess("p");
  h.tick();
  CHECK(d.decode->heldBlocks() == 0);
  CHECK(d.pool.allocator().freeBlocks() == d.pool.blocks());
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  h.expectNoViolations();
}

TEST_CASE("another incarnation of a lost direct writer is no proof that the first stopped",
          "[handoff]") {
  HandoffHarness h;
  Side& d = h.addDecode("d", 32);
  Side& p = h.addPrefill("p", 32);
  const std::uint64_t reserved = loseWriterMidPush(h, p, d);
  const std::size_t abortsBefore = h.net().sent<AbortMsg>("d");
  // A second process under the same name while the first still lives (stopped, say).
  h.restart("p");
  h.net().link("p", "d");
  h.connect("p", "d");
  REQUIRE(h.settle());
  CHECK(h.net().sent<AbortMsg>("d") == abortsBefore);  // not asked: it is not the writer
  CHECK(d.decode->heldBlocks() == reserved);
  h.expectNoViolations();
}

TEST_CASE("a lost writer whose link close stops its writes gets the short hold only", "[handoff]") {
  HandoffHarness h;
  Side& d = h.addDecode("d", 32);
  Side& p = h.addPrefill("p", 32);
  pushAndHold(h, p);  // not a direct writer: as over tcp
  h.net().dropLink("p", "d");
  h.tick();
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kFailed);
  CHECK(d.decode->heldBlocks() == 0);  // lostPushHold is 0 in the harness
  CHECK(d.pool.allocator().freeBlocks() == d.pool.blocks());
  h.net().holdLandings(false);
  h.expectClean();
}

TEST_CASE("a prefill agent answers an abort of a request it no longer has at once", "[handoff]") {
  HandoffHarness h;
  Side& d = h.addDecode("d", 32);
  Side& p = h.addPrefill("p", 32);
  h.connect("p", "d");
  REQUIRE(p.prefill->liveRequests() == 0);
  REQUIRE(d.context->port.send("p", AbortMsg{"never-seen", peerFailed("test")}).isOk());
  REQUIRE(h.settle());
  CHECK(h.net().sent<AbortAckMsg>("p") == 1);
  h.expectClean();
}

TEST_CASE("an abort of a held request crossing a new placement of its id fails neither",
          "[handoff]") {
  HandoffHarness h;
  Side& d = h.addDecode("d", 32);
  Side& p = h.addPrefill("p", 32);
  loseWriterMidPush(h, p, d);
  h.tick();  // the prefill side sees the loss: "a" fails there, its move is cancelled
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  REQUIRE(HandoffHarness::state(p, "a") == KvRequestState::kFailed);
  REQUIRE(p.prefill->liveRequests() == 0);
  // Back, the same incarnation: the decode side asks it to abort the held "a" while the
  // server, which saw "a" fail, submits it again under the same id. The abort reaches the
  // prefill side after the new "a" was placed with the decode side.
  h.net().link("p", "d");
  h.connect("p", "d");
  KvRequestSpec again = h.request(p, "a", kTokens);
  again.mode = KvMode::kPush;
  REQUIRE(p.prefill->submit(again).isOk());
  REQUIRE(h.settle());
  // The abort named the earlier "a": the new one moves and completes.
  const KvRequestStatus sent = HandoffHarness::status(p, "a");
  CHECK(sent.state == KvRequestState::kReleased);  // confirmed; its source blocks given back
  CHECK(sent.status.isOk());
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kComplete);
  CHECK(h.net().sent<AbortAckMsg>("p") == 1);  // the earlier "a" answered, at once
  CHECK(d.decode->heldBlocks() == 0);
  h.expectNoViolations();
}

TEST_CASE("the operator gives back a lost writer's held blocks; never a joined writer's",
          "[handoff]") {
  HandoffHarness h;
  Side& d = h.addDecode("d", 32);
  Side& p = h.addPrefill("p", 32);
  const std::uint64_t reserved = loseWriterMidPush(h, p, d);
  h.tick();  // the prefill side cancels its write: the operator's word will be true
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  CHECK(d.decode->heldBlocks() == reserved);
  auto given = d.decode->giveBackHeld("");  // every lost writer
  REQUIRE(given.isOk());
  CHECK(*given == reserved);
  CHECK(d.decode->heldBlocks() == 0);
  CHECK(d.pool.allocator().freeBlocks() == d.pool.blocks());
  h.expectNoViolations();
  // Joined again, a writer's blocks are not the operator's to give back.
  h.net().link("p", "d");
  h.connect("p", "d");
  REQUIRE(h.settle());
  CHECK(d.decode->giveBackHeld("p").status().code() == StatusCode::kNotFound);
}

TEST_CASE(
    "a prefill agent over maxPushBlocksPerPeer waits at placement; one request over it "
    "alone is refused",
    "[handoff]") {
  HandoffHarness h;
  KvAgentOptions options = HandoffHarness::defaultOptions();
  options.maxPushBlocksPerPeer = 5;  // one request of kTokens
  Side& d = h.addDecode("d", 32, options);
  Side& p = h.addPrefill("p", 32);
  h.net().writeDirectly("p", "d");
  pushAndHold(h, p);  // "a": 5 blocks being written
  KvRequestSpec b = h.request(p, "b", kTokens);
  b.mode = KvMode::kPush;
  REQUIRE(p.prefill->submit(b).isOk());
  REQUIRE(h.settle());
  // "b" was not placed: the decode side reserved only "a"'s blocks.
  CHECK(d.pool.blocks() - d.pool.allocator().freeBlocks() == 5);
  CHECK(HandoffHarness::state(p, "b") != KvRequestState::kTransferring);
  KvRequestSpec big = h.request(p, "big", kTokens + 4);
  big.mode = KvMode::kPush;
  REQUIRE(p.prefill->submit(big).isOk());
  REQUIRE(h.settle());
  const KvRequestStatus refused = HandoffHarness::status(p, "big");
  CHECK(refused.state == KvRequestState::kFailed);
  CHECK(refused.status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status.message(), Catch::Contains("maxPushBlocksPerPeer 5"));
  // "a" lands and is released: "b" is placed and moves.
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  h.verifyArrived(d, "a");
  HandoffHarness::consumeAndRelease(d, "a");
  REQUIRE(h.settle());
  for (int i = 0; i < 20 && HandoffHarness::state(d, "b") != KvRequestState::kComplete; ++i) {
    h.tick();
    REQUIRE(h.settle());
  }
  h.verifyArrived(d, "b");
  HandoffHarness::consumeAndRelease(d, "b");
  REQUIRE(h.settle());
  h.expectClean();
}

// kvx-test-labels: unit serial
// Tensor-parallel slicing: requests that move a head range of each segment, one source
// scattering to several destinations, several sources gathered into one destination
// request, and what happens when a part of a gather fails or does not fit, or its lost writer
// comes back early.
#include <catch2/catch.hpp>

#include "tests/kv/handoff/handoff_harness.h"

using namespace kvx;
using namespace kvx::test::handoff;
using kvx::kv::handoff::AbortAckMsg;
using kvx::kv::handoff::AbortMsg;

namespace {

// A model with 4 KV heads held `perRank` to a rank: 4 layers, 4 tokens per block, 2-byte heads.
kv::ModelShape rankShape(std::uint32_t perRank) {
  kv::ModelShape shape = tinyShape();
  shape.name = "tp-tiny";
  shape.kvHeads = perRank;
  shape.headDim = 2;
  return shape;
}

// Bytes of `block` on `dst` holding global heads [dstFirst, +count) that differ from the
// same heads of source content `key` on a rank holding global heads from `srcFirst`.
std::size_t headMismatches(FakePool& dst, std::uint64_t block, std::uint32_t dstFirstGlobal,
                           std::uint64_t key, std::uint32_t srcFirstGlobal, std::uint32_t srcHeads,
                           std::uint32_t firstGlobal, std::uint32_t count) {
  const auto& shape = dst.description().shape;
  const std::uint64_t headBytes = std::uint64_t{shape.headDim} * shape.dtypeBytes;
  const std::uint64_t srcTokenBytes = headBytes * srcHeads;
  std::size_t bad = 0;
  for (std::uint32_t l = 0; l < dst.layers(); ++l) {
    for (std::uint32_t kv = 0; kv < dst.kvCount(); ++kv) {
      auto segment = dst.segment(block, l, kv);
      for (std::uint32_t t = 0; t < shape.tokensPerBlock; ++t) {
        for (std::uint32_t g = firstGlobal; g < firstGlobal + count; ++g) {
          for (std::uint64_t x = 0; x < headBytes; ++x) {
            const std::uint64_t at = t * shape.tokenBytes() + (g - dstFirstGlobal) * headBytes + x;
            const std::uint64_t from = t * srcTokenBytes + (g - srcFirstGlobal) * headBytes + x;
            if (segment[at] != patternByte(key, l, kv, from)) ++bad;
          }
        }
      }
    }
  }
  return bad;
}

KvRequestSpec sliced(KvRequestSpec spec, const std::string& destination, KvSlice slice, KvMode mode,
                     bool layerwise) {
  spec.destination = destination;
  spec.slice = std::move(slice);
  spec.mode = mode;
  spec.layerwise = layerwise;
  return spec;
}

}  // namespace

TEST_CASE("a decode rank gathers its heads from two prefill ranks", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  const bool layerwise = GENERATE(false, true);
  INFO((mode == KvMode::kPush ? "PUSH" : "PULL") << (layerwise ? " layer-wise" : " whole"));
  HandoffHarness h;
  // Prefill TP4 ranks 2 and 3 (one head each) -> decode TP2 rank 1 (heads 2-3).
  Side& p2 = h.addPrefill("p2", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& p3 = h.addPrefill("p3", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& d = h.addDecode("d1", 16, HandoffHarness::defaultOptions(), rankShape(2));
  h.connect("p2", "d1");
  h.connect("p3", "d1");
  KvRequestSpec a =
      sliced(h.request(p2, "prompt-7@p2", 10), "d1", {0, 0, 1, "prompt-7", 2}, mode, layerwise);
  KvRequestSpec b =
      sliced(h.request(p3, "prompt-7@p3", 10), "d1", {0, 1, 1, "prompt-7", 2}, mode, layerwise);
  REQUIRE(p2.prefill->submit(a).isOk());
  REQUIRE(h.settle());
  if (layerwise) {
    for (std::uint32_t l = 0; l < 4; ++l) REQUIRE(p2.prefill->layerReady(a.id, l).isOk());
    REQUIRE(h.settle());
  }
  // The first part landed and was confirmed; the request waits for the other part.
  CHECK(HandoffHarness::state(p2, a.id) == KvRequestState::kReleased);
  CHECK(HandoffHarness::state(d, "prompt-7") == KvRequestState::kTransferring);
  CHECK_FALSE(d.board.waitLayer("prompt-7", 0, Clock::now()).isOk());
  HandoffHarness::takeArrivals(d);
  CHECK(d.arrivals.empty());

  REQUIRE(p3.prefill->submit(b).isOk());
  REQUIRE(h.settle());
  if (layerwise) {
    REQUIRE(p3.prefill->layerReady(b.id, 0).isOk());
    REQUIRE(h.settle());
    CHECK(d.board.waitLayer("prompt-7", 0, Clock::now()).isOk());
    CHECK_FALSE(d.board.waitLayer("prompt-7", 1, Clock::now()).isOk());
    for (std::uint32_t l = 1; l < 4; ++l) REQUIRE(p3.prefill->layerReady(b.id, l).isOk());
    REQUIRE(h.settle());
  }
  CHECK(HandoffHarness::state(p3, b.id) == KvRequestState::kReleased);
  HandoffHarness::takeArrivals(d);
  REQUIRE(d.arrivals.contains("prompt-7"));
  const KvArrival arrival = d.arrivals.at("prompt-7");
  CHECK(arrival.peers == std::vector<std::string>{"p2", "p3"});
  REQUIRE(arrival.blocks.size() == 3);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    bad += headMismatches(d.pool, arrival.blocks[i], 2, h.keys(a.id)[i], 2, 1, 2, 1);
    bad += headMismatches(d.pool, arrival.blocks[i], 2, h.keys(b.id)[i], 3, 1, 3, 1);
  }
  CHECK(bad == 0);
  // Each part moved one head of 3 blocks x 4 layers x K/V x 4 tokens x 2 bytes.
  CHECK(HandoffHarness::status(p2, a.id).bytes == 3 * 4 * 2 * 4 * 2);
  HandoffHarness::consumeAndRelease(d, "prompt-7");
  h.expectClean();
}

TEST_CASE("a prefill rank scatters its heads to two decode ranks", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  HandoffHarness h;
  // Prefill TP1 (4 heads) -> decode TP2 ranks 0 (heads 0-1) and 1 (heads 2-3).
  Side& p = h.addPrefill("p", 16, HandoffHarness::defaultOptions(), rankShape(4));
  Side& d0 = h.addDecode("d0", 16, HandoffHarness::defaultOptions(), rankShape(2));
  Side& d1 = h.addDecode("d1", 16, HandoffHarness::defaultOptions(), rankShape(2));
  h.connect("p", "d0");
  h.connect("p", "d1");
  KvRequestSpec whole = h.request(p, "q", 13);
  KvRequestSpec toD0 = whole, toD1 = whole;
  // Two requests from one set of source blocks: each owns a copy of the block list, so the
  // second gets blocks of its own with the same content.
  toD0 = sliced(toD0, "d0", {0, 0, 2, "q", 1}, mode, false);
  toD0.id = "q@d0";
  toD1 = sliced(h.request(p, "q@d1", 13, h.keys("q")), "d1", {2, 0, 2, "q", 1}, mode, false);
  REQUIRE(p.prefill->submit(toD0).isOk());
  REQUIRE(p.prefill->submit(toD1).isOk());
  REQUIRE(h.settle());
  std::size_t bad = 0;
  for (Side* d : {&d0, &d1}) {
    HandoffHarness::takeArrivals(*d);
    REQUIRE(d->arrivals.contains("q"));
    const KvArrival& arrival = d->arrivals.at("q");
    const std::uint32_t first = d == &d0 ? 0 : 2;
    for (std::size_t i = 0; i < arrival.blocks.size(); ++i) {
      bad += headMismatches(d->pool, arrival.blocks[i], first, h.keys("q")[i], 0, 4, first, 2);
    }
    HandoffHarness::consumeAndRelease(*d, "q");
  }
  CHECK(bad == 0);
  h.expectClean();
}

TEST_CASE("a failing part fails the whole gather and frees its blocks", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  HandoffHarness h;
  Side& p0 = h.addPrefill("p0", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& p1 = h.addPrefill("p1", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& d = h.addDecode("d", 16, HandoffHarness::defaultOptions(), rankShape(2));
  h.connect("p0", "d");
  h.connect("p1", "d");
  REQUIRE(p0.prefill->submit(sliced(h.request(p0, "a", 9), "d", {0, 0, 1, "g", 2}, mode, false))
              .isOk());
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p0, "a") == KvRequestState::kReleased);
  h.net().failNextMoves(1);
  REQUIRE(p1.prefill->submit(sliced(h.request(p1, "b", 9), "d", {0, 1, 1, "g", 2}, mode, false))
              .isOk());
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p1, "b") == KvRequestState::kFailed);
  CHECK(HandoffHarness::state(d, "g") == KvRequestState::kFailed);
  CHECK(HandoffHarness::status(d, "g").status.code() != StatusCode::kOk);
  HandoffHarness::takeArrivals(d);
  CHECK(d.arrivals.empty());
  h.expectClean();
}

TEST_CASE("a gather's lost direct writer, back before the blocks are held, is asked then",
          "[handoff]") {
  // p0 copies into d's pool itself (shared memory) and is lost mid-push; the other part's
  // write keeps the failed gather open, so its blocks are not held yet when p0 joins again
  // (the same incarnation). Once they are, p0 is asked to abort, and its answer frees them.
  HandoffHarness h;
  Side& p0 = h.addPrefill("p0", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& p1 = h.addPrefill("p1", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& d = h.addDecode("d", 16, HandoffHarness::defaultOptions(), rankShape(2));
  h.net().writeDirectly("p0", "d");
  h.connect("p0", "d");
  h.connect("p1", "d");
  h.net().holdLandings(true);
  REQUIRE(p0.prefill
              ->submit(sliced(h.request(p0, "a", 9), "d", {0, 0, 1, "g", 2}, KvMode::kPush, false))
              .isOk());
  REQUIRE(p1.prefill
              ->submit(sliced(h.request(p1, "b", 9), "d", {0, 1, 1, "g", 2}, KvMode::kPush, false))
              .isOk());
  REQUIRE(h.settle());
  REQUIRE(h.net().movesInFlight() == 2);
  const std::uint64_t reserved = d.pool.blocks() - d.pool.allocator().freeBlocks();
  REQUIRE(reserved > 0);

  h.dropLinkSeenByDecode("p0", "d");
  // The failed gather ends once p1's part has (it drains its write first): nothing held yet.
  CHECK_FALSE(isTerminal(HandoffHarness::state(d, "g").value()));
  CHECK(d.decode->heldBlocks() == 0);
  CHECK(d.pool.allocator().freeBlocks() == d.pool.blocks() - reserved);

  const std::size_t abortsBefore = h.net().sent<AbortMsg>("d");
  h.net().link("p0", "d");
  h.connect("p0", "d");
  REQUIRE(h.settle());  // landings still held: p1's part is still failing
  CHECK(d.pool.allocator().freeBlocks() == d.pool.blocks() - reserved);

  h.net().holdLandings(false);
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p1, "b") == KvRequestState::kFailed);
  CHECK(HandoffHarness::state(d, "g") == KvRequestState::kFailed);
  CHECK(h.net().sent<AbortMsg>("d") > abortsBefore);
  CHECK(h.net().sent<AbortAckMsg>("p0") >= 1);
  CHECK(d.decode->heldBlocks() == 0);
  CHECK(d.pool.allocator().freeBlocks() == d.pool.blocks());
  h.expectClean();
}

TEST_CASE("parts that overlap, disagree or do not fit are refused", "[handoff]") {
  HandoffHarness h;
  Side& p0 = h.addPrefill("p0", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& p1 = h.addPrefill("p1", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& d = h.addDecode("d", 16, HandoffHarness::defaultOptions(), rankShape(2));
  h.connect("p0", "d");
  h.connect("p1", "d");
  h.net().holdLandings(true);  // the first part stays in flight
  REQUIRE(p0.prefill
              ->submit(sliced(h.request(p0, "a", 9), "d", {0, 1, 1, "g", 2}, KvMode::kPush, false))
              .isOk());
  REQUIRE(h.settle());
  // Submits p1's part "b" with `slice` and returns why the decode agent refused it.
  const auto refusal = [&](KvSlice slice) {
    REQUIRE(
        p1.prefill->submit(sliced(h.request(p1, "b", 9), "d", slice, KvMode::kPush, false)).isOk());
    REQUIRE(h.settle());
    return HandoffHarness::status(p1, "b").status.message();
  };
  SECTION("overlapping heads") {
    CHECK_THAT(refusal({0, 1, 1, "g", 2}), Catch::Contains("overlap"));
  }
  SECTION("another part count") {
    CHECK_THAT(refusal({0, 0, 1, "g", 3}), Catch::Contains("3 parts"));
  }
  SECTION("heads outside the destination pool") {
    CHECK_THAT(refusal({0, 2, 1, "h", 1}), Catch::Contains("not within this pool's 2 KV heads"));
  }
  CHECK(HandoffHarness::state(p1, "b") == KvRequestState::kFailed);
  CHECK(HandoffHarness::state(p0, "a") == KvRequestState::kTransferring);
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  // The gather still waits for its second part; its lease ends it.
  CHECK(HandoffHarness::state(d, "g") == KvRequestState::kTransferring);
  REQUIRE(d.decode->release("g").code() == StatusCode::kFailedPrecondition);
  d.decode->failAll(cancelled("test over"));
  h.expectClean();
}

TEST_CASE("whole requests never go to a pool with other heads per block", "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 16, HandoffHarness::defaultOptions(), rankShape(2));
  h.addDecode("narrow", 16, HandoffHarness::defaultOptions(), rankShape(1));
  Side& same = h.addDecode("same", 16, HandoffHarness::defaultOptions(), rankShape(2));
  h.connect("p", "narrow");
  h.connect("p", "same");
  for (int i = 0; i < 3; ++i) {
    REQUIRE(p.prefill->submit(h.request(p, "r" + std::to_string(i), 9)).isOk());
  }
  REQUIRE(h.settle());
  for (int i = 0; i < 3; ++i) {
    const std::string id = "r" + std::to_string(i);
    CHECK(HandoffHarness::status(p, id).peer == "same");
    h.verifyArrived(same, id);
    HandoffHarness::consumeAndRelease(same, id);
  }
  KvRequestSpec pinned = h.request(p, "pinned", 9);
  pinned.destination = "narrow";
  REQUIRE(p.prefill->submit(pinned).isOk());
  REQUIRE(h.settle());
  CHECK_THAT(HandoffHarness::status(p, "pinned").status.message(),
             Catch::Contains("slice the request"));
  // A slice without a destination, or outside this pool, is refused at submit.
  KvRequestSpec loose = h.request(p, "loose", 9);
  loose.slice = KvSlice{0, 0, 1, "", 1};
  CHECK_THAT(p.prefill->submit(loose).message(), Catch::Contains("name its destination"));
  loose.destination = "narrow";
  loose.slice = KvSlice{1, 0, 2, "", 1};
  CHECK_THAT(p.prefill->submit(loose).message(), Catch::Contains("not within this pool's 2"));
  h.freeSource(p, loose);
  h.expectClean();
}

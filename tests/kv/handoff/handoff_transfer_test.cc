// kvx-test-labels: unit serial
// The request life cycle when nothing fails: PUSH and PULL, whole and layer-wise, prefix
// reuse and placement across decode agents, with every byte checked at the destination.
#include <catch2/catch.hpp>

#include "tests/kv/handoff/handoff_harness.h"

using namespace kvx;
using namespace kvx::test::handoff;

TEST_CASE("requests move every byte: PUSH and PULL, whole and layer-wise", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  const bool layerwise = GENERATE(false, true);
  const Order order = GENERATE(Order::kFifo, Order::kLifo);
  INFO(modeName(mode) << (layerwise ? " layer-wise" : " whole")
                      << (order == Order::kFifo ? ", FIFO" : ", LIFO"));
  HandoffHarness h;
  h.net().setOrder(order);
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 32);
  h.connect("p", "d");
  const std::vector<std::pair<std::string, std::uint64_t>> requests = {
      {"a", 10}, {"b", 17}, {"c", 33}};  // 3, 5 and 9 blocks
  std::uint64_t blocks = 0;
  for (const auto& [id, tokens] : requests) {
    KvRequestSpec spec = h.request(p, id, tokens);
    spec.mode = mode;
    spec.layerwise = layerwise;
    REQUIRE(p.prefill->submit(spec).isOk());
    blocks += spec.sourceBlocks.size();
  }
  REQUIRE(h.settle());

  if (layerwise) {
    for (const auto& [id, tokens] : requests) {
      CHECK(HandoffHarness::state(p, id) == KvRequestState::kPlaced);
      CHECK(HandoffHarness::state(d, id) == KvRequestState::kPlaced);
    }
    CHECK(h.net().bytesCopied() == 0);
    // Layers handed over out of order; each arrives on its own.
    const std::vector<std::uint32_t> handOver = {2, 0, 3, 1};
    for (std::size_t n = 0; n < handOver.size(); ++n) {
      for (const auto& [id, tokens] : requests) {
        REQUIRE(p.prefill->layerReady(id, handOver[n]).isOk());
      }
      REQUIRE(h.settle());
      for (const auto& [id, tokens] : requests) {
        for (std::size_t m = 0; m < handOver.size(); ++m) {
          INFO("request " << id << " layer " << handOver[m] << " after " << n + 1 << " layers");
          CHECK(d.board.waitLayer(id, handOver[m], Clock::now()).isOk() == (m <= n));
        }
      }
      if (n == 0) {
        CHECK(HandoffHarness::state(d, "a") == KvRequestState::kTransferring);
        CHECK(p.prefill->layerReady("a", handOver[0]).code() == StatusCode::kFailedPrecondition);
        CHECK(h.net().bytesCopied() == blocks * p.pool.blockBytes() / 4);
      }
    }
  }
  for (const auto& [id, move] : h.net().moves()) {
    CHECK(move.op == (mode == KvMode::kPush ? TransferOp::kWrite : TransferOp::kRead));
    CHECK(move.layerCount == (layerwise ? 1u : 4u));
  }
  for (const auto& [id, tokens] : requests) {
    INFO("request " << id);
    const KvRequestStatus sent = HandoffHarness::status(p, id);
    CHECK(sent.state == KvRequestState::kReleased);
    CHECK(sent.status.isOk());
    CHECK(sent.peer == "d");
    CHECK(sent.bytes == sent.blocks * p.pool.blockBytes());
    CHECK(HandoffHarness::state(d, id) == KvRequestState::kComplete);
    const KvArrival arrival = h.verifyArrived(d, id);
    CHECK(arrival.peer == "p");
    CHECK(arrival.prefixBlocks == 0);
  }
  CHECK(h.net().bytesCopied() == blocks * p.pool.blockBytes());
  CHECK(p.pool.allocator().freeBlocks() == 32);
  for (const auto& [id, tokens] : requests) HandoffHarness::consumeAndRelease(d, id);
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kReleased);
  h.expectClean();
}

TEST_CASE("a local completion after the destination confirmed still releases", "[handoff]") {
  HandoffHarness h;
  Side& p = h.addPrefill("p", 16);
  Side& d = h.addDecode("d", 16);
  h.connect("p", "d");
  h.net().holdCompletions(true);
  REQUIRE(p.prefill->submit(h.request(p, "a", 16)).isOk());
  REQUIRE(h.settle());
  // The data landed and the decode side confirmed; the prefill side's write has not
  // reported yet, so it keeps its source blocks.
  CHECK(HandoffHarness::state(d, "a") == KvRequestState::kComplete);
  CHECK(HandoffHarness::state(p, "a") == KvRequestState::kComplete);
  CHECK(p.pool.allocator().freeBlocks() == 12);
  h.net().holdCompletions(false);
  REQUIRE(h.settle());
  CHECK(HandoffHarness::state(p, "a") == KvRequestState::kReleased);
  h.verifyArrived(d, "a");
  HandoffHarness::consumeAndRelease(d, "a");
  h.expectClean();
}

TEST_CASE("a shared prefix is reused at the destination and not moved again", "[handoff]") {
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  const bool layerwise = GENERATE(false, true);
  INFO(modeName(mode) << (layerwise ? " layer-wise" : " whole"));
  HandoffHarness h;
  KvAgentOptions decodeOptions = HandoffHarness::defaultOptions();
  decodeOptions.prefixCacheBlocks = 16;
  Side& p = h.addPrefill("p", 32);
  Side& d = h.addDecode("d", 32, decodeOptions);
  h.connect("p", "d");
  const auto submit = [&](const std::string& id, std::uint64_t tokens,
                          std::vector<std::uint64_t> hashes, std::vector<std::uint64_t> keys) {
    KvRequestSpec spec = h.request(p, id, tokens, std::move(keys));
    spec.prefixHashes = std::move(hashes);
    spec.mode = mode;
    spec.layerwise = layerwise;
    REQUIRE(p.prefill->submit(spec).isOk());
    for (std::uint32_t l = 0; layerwise && l < 4; ++l) {
      REQUIRE(p.prefill->layerReady(id, l).isOk());
    }
    REQUIRE(h.settle());
  };
  // Chunks are 8 tokens (2 blocks). "a": 22 tokens, chunks 11 and 12 full, 13 partial.
  submit("a", 22, {11, 12, 13}, {1100, 1101, 1200, 1201, 1300, 1301});
  const KvArrival a = h.verifyArrived(d, "a");
  CHECK(a.prefixBlocks == 0);
  HandoffHarness::consumeAndRelease(d, "a");
  CHECK(d.decode->prefixCache().cachedBlocks() == 4);  // chunks 11 and 12
  const std::uint64_t before = h.net().bytesCopied();

  // "b" shares chunks 11 and 12 (same prefix, same bytes) and goes on with its own.
  submit("b", 30, {11, 12, 21, 22}, {1100, 1101, 1200, 1201, 2100, 2101, 2200, 2201});
  CHECK(HandoffHarness::status(p, "b").state == KvRequestState::kReleased);
  CHECK(HandoffHarness::status(p, "b").prefixBlocks == 4);
  CHECK(HandoffHarness::status(p, "b").bytes == 4 * p.pool.blockBytes());
  CHECK(h.net().bytesCopied() - before == 4 * p.pool.blockBytes());
  const KvArrival b = h.verifyArrived(d, "b");
  CHECK(b.prefixBlocks == 4);
  CHECK(std::vector(b.blocks.begin(), b.blocks.begin() + 4) ==
        std::vector(a.blocks.begin(), a.blocks.begin() + 4));
  for (const auto& [id, move] : h.net().moves()) {
    if (move.id > 1 + (layerwise ? 3u : 0u)) CHECK(move.local.size() == 4);
  }

  // "c" starts with another chunk: nothing to reuse.
  submit("c", 16, {31, 32}, {3100, 3101, 3200, 3201});
  CHECK(HandoffHarness::status(p, "c").prefixBlocks == 0);
  h.verifyArrived(d, "c");
  HandoffHarness::consumeAndRelease(d, "b");
  HandoffHarness::consumeAndRelease(d, "c");
  h.expectClean();
}

TEST_CASE("placement spreads requests over decode agents and follows prefixes", "[handoff]") {
  HandoffHarness h;
  KvAgentOptions decodeOptions = HandoffHarness::defaultOptions();
  decodeOptions.prefixCacheBlocks = 8;
  Side& p = h.addPrefill("p", 64);
  Side& d1 = h.addDecode("d1", 16, decodeOptions);
  Side& d2 = h.addDecode("d2", 16, decodeOptions);
  h.connect("p", "d1");
  h.connect("p", "d2");
  h.net().holdLandings(true);  // everything stays in flight
  for (const char* id : {"r0", "r1", "r2", "r3"}) {
    REQUIRE(p.prefill->submit(h.request(p, id, 16)).isOk());
  }
  REQUIRE(h.settle());
  std::map<std::string, int> perPeer;
  for (const char* id : {"r0", "r1", "r2", "r3"}) ++perPeer[HandoffHarness::status(p, id).peer];
  CHECK(perPeer["d1"] == 2);
  CHECK(perPeer["d2"] == 2);
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  for (const char* id : {"r0", "r1", "r2", "r3"}) {
    Side& d = HandoffHarness::status(p, id).peer == "d1" ? d1 : d2;
    h.verifyArrived(d, id);
    HandoffHarness::consumeAndRelease(d, id);
  }

  // "x" leaves chunks 77 and 78 in the cache of d1; "y" has the same prefix and goes there
  // although d1 is busier.
  KvRequestSpec x = h.request(p, "x", 16, {7700, 7701, 7800, 7801});
  x.prefixHashes = {77, 78};
  x.destination = "d1";
  REQUIRE(p.prefill->submit(x).isOk());
  REQUIRE(h.settle());
  h.verifyArrived(d1, "x");
  HandoffHarness::consumeAndRelease(d1, "x");
  h.net().holdLandings(true);
  KvRequestSpec busy = h.request(p, "busy", 8);
  busy.destination = "d1";
  REQUIRE(p.prefill->submit(busy).isOk());
  KvRequestSpec y = h.request(p, "y", 20, {7700, 7701, 7800, 7801, 9900});
  y.prefixHashes = {77, 78, 99};
  REQUIRE(p.prefill->submit(y).isOk());
  REQUIRE(h.settle());
  CHECK(HandoffHarness::status(p, "y").peer == "d1");
  CHECK(HandoffHarness::status(p, "y").prefixBlocks == 4);
  h.net().holdLandings(false);
  REQUIRE(h.settle());
  h.verifyArrived(d1, "y");
  h.verifyArrived(d1, "busy");
  HandoffHarness::consumeAndRelease(d1, "y");
  HandoffHarness::consumeAndRelease(d1, "busy");
  h.expectClean();
}

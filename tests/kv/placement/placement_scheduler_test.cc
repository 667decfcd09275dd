// kvx-test-labels: unit serial
#include "kv/placement/placement_scheduler.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

using namespace kvx;
using namespace kvx::kv::placement;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

PlacementQuery query(std::string id, std::uint64_t blocks, std::uint64_t bytes = kMiB,
                     std::vector<std::uint64_t> hashes = {}, std::uint64_t blocksPerChunk = 32) {
  PlacementQuery q;
  q.requestId = std::move(id);
  q.blocks = blocks;
  q.bytes = bytes;
  q.prefixHashes = std::move(hashes);
  q.blocksPerChunk = blocksPerChunk;
  return q;
}

// Decides and, when placed, records the placement as the caller would.
std::string placeAndRecord(PlacementScheduler& s, const PlacementQuery& q) {
  PlacementDecision d = s.decide(q);
  INFO(d.status.toString());
  REQUIRE(toString(d.verdict) == "place");
  REQUIRE(d.status.isOk());
  const std::uint64_t reused = d.expectedPrefixChunks * q.blocksPerChunk;
  s.recordPlaced(d.peer, q.blocks - std::min(q.blocks, reused), q.bytes, q.prefixHashes);
  return d.peer;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("equal requests spread over equal peers as in-flight bytes change", "[placement]") {
  PlacementScheduler s({});
  for (const char* name : {"d2", "d0", "d1"}) s.upsertPeer(name, 1024, 1024);
  std::vector<std::string> chosen;
  for (int i = 0; i < 6; ++i)
    chosen.push_back(placeAndRecord(s, query("r" + std::to_string(i), 100)));
  CHECK(chosen == std::vector<std::string>{"d0", "d1", "d2", "d0", "d1", "d2"});
  for (const DecodePeerView& p : s.peers()) {
    CHECK(p.freeBlocks == 824);
    CHECK(p.inFlightBytes == 2 * kMiB);
    CHECK(p.inFlightRequests == 2);
  }
}

TEST_CASE("idle peers that tie on everything share the requests by bytes placed", "[placement]") {
  // Each request finishes and its blocks return before the next: free blocks and in-flight
  // bytes tie every time. By name alone d0 took them all (83 of 126 in a trace replay).
  PlacementScheduler s({});
  for (const char* name : {"d1", "d0"}) s.upsertPeer(name, 1024, 1024);
  std::map<std::string, std::uint64_t> bytes;
  std::vector<std::string> reasons;
  for (int i = 0; i < 10; ++i) {
    const std::uint64_t size = (1 + i % 3) * kMiB;
    PlacementDecision d = s.decide(query("r" + std::to_string(i), 100, size));
    REQUIRE(d.verdict == Verdict::kPlace);
    reasons.push_back(d.reason);
    s.recordPlaced(d.peer, 100, size, {});
    s.recordFinished(d.peer, size);
    s.upsertPeer(d.peer, 1024, 1024);  // its blocks came back
    bytes[d.peer] += size;
  }
  CHECK(bytes["d0"] > 0);
  CHECK(bytes["d1"] > 0);
  const auto larger = std::max(bytes["d0"], bytes["d1"]);
  const auto smaller = std::min(bytes["d0"], bytes["d1"]);
  CHECK(larger - smaller <= 3 * kMiB);  // within one request of each other
  CHECK(reasons[0] == "tie broken by name (1024 of 1024 blocks free)");
  CHECK(contains(reasons[1], "fewest bytes placed so far (0 against 1048576)"));
}

TEST_CASE("with nothing in flight, the peer with the most free blocks wins", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d0", 1024, 1000);
  s.upsertPeer("d1", 1024, 950);
  s.upsertPeer("d2", 1024, 900);
  PlacementDecision first = s.decide(query("r0", 100));
  CHECK(first.peer == "d0");
  CHECK(first.reason == "most free blocks (1000 of 1024)");

  std::vector<std::string> chosen;
  for (int i = 0; i < 4; ++i) {
    const std::string peer = placeAndRecord(s, query("r" + std::to_string(i), 100));
    s.recordFinished(peer, kMiB);  // the transfer ends; the blocks stay used
    chosen.push_back(peer);
  }
  // 1000/950/900 -> d0 (900) -> d1 (850) -> d0 and d2 tie at 900, d2 has had fewer bytes
  // placed on it -> d2 (800) -> d0.
  CHECK(chosen == std::vector<std::string>{"d0", "d1", "d2", "d0"});
  CHECK(s.peer("d0")->freeBlocks == 800);
  CHECK(s.peer("d0")->inFlightBytes == 0);
}

TEST_CASE("fewer bytes in flight beats more free blocks", "[placement]") {
  PlacementScheduler s({.maxInFlightBytesPerPeer = 4 * kMiB});
  s.upsertPeer("d0", 1024, 1024);
  s.upsertPeer("d1", 1024, 500);
  s.recordPlaced("d0", 0, kMiB, {});
  PlacementDecision d = s.decide(query("r1", 100));
  CHECK(d.peer == "d1");
  CHECK(d.reason == "fewest bytes in flight (0, 0% of limit)");
}

TEST_CASE("prefix locality wins over free space", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d0", 1024, 1024);
  s.upsertPeer("d1", 1024, 200);
  s.recordPlaced("d1", 128, kMiB, std::vector<std::uint64_t>{1, 2, 3, 4});
  s.recordFinished("d1", kMiB);

  PlacementDecision d = s.decide(query("r1", 128, kMiB, {1, 2, 3, 9}));
  CHECK(toString(d.verdict) == "place");
  CHECK(d.peer == "d1");
  CHECK(d.expectedPrefixChunks == 3);
  CHECK(d.reason == "prefix locality: 3 of 4 chunks");

  // Only a leading run counts: without the first chunk, nothing is reusable.
  PlacementDecision noLead = s.decide(query("r2", 128, kMiB, {9, 2, 3, 4}));
  CHECK(noLead.peer == "d0");
  CHECK(noLead.expectedPrefixChunks == 0);
}

TEST_CASE("forgotten prefixes stop counting as locality", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d0", 1024, 1024);
  s.upsertPeer("d1", 1024, 200);
  s.recordPlaced("d1", 128, kMiB, std::vector<std::uint64_t>{1, 2, 3, 4});
  s.recordFinished("d1", kMiB);
  s.forgetPrefixes("d1", std::vector<std::uint64_t>{1, 2, 3, 4});
  PlacementDecision d = s.decide(query("r1", 128, kMiB, {1, 2, 3, 4}));
  CHECK(d.peer == "d0");
  CHECK(d.expectedPrefixChunks == 0);
  s.forgetPrefixes("unknown", std::vector<std::uint64_t>{1});  // no effect, no error
}

TEST_CASE("reused prefix blocks count toward room", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d1", 1024, 1024);
  s.recordPlaced("d1", 0, 0, std::vector<std::uint64_t>{1, 2, 3});
  s.upsertPeer("d1", 1024, 40);  // fresh report: little room left
  // 128 blocks, 3 chunks of 32 reusable: 32 blocks need room, 40 are free.
  PlacementDecision d = s.decide(query("r1", 128, kMiB, {1, 2, 3, 4}));
  CHECK(d.peer == "d1");
  CHECK(d.reason == "only peer with room (40 of 1024 blocks free); prefix locality: 3 of 4 chunks");
  // Without the prefix the same request must wait.
  PlacementDecision cold = s.decide(query("r2", 128, kMiB, {7, 8, 9, 10}));
  CHECK(toString(cold.verdict) == "wait");
  CHECK(cold.status.code() == StatusCode::kResourceExhausted);
  CHECK(contains(cold.status.message(), "decode peer d1: 40 of 1024 blocks free"));
  CHECK(contains(cold.status.message(), "needs 128"));
  // More reusable blocks than the request needs clamp at zero.
  CHECK(s.decide(query("r3", 40, kMiB, {1, 2, 3}, 32)).peer == "d1");
}

TEST_CASE("prefix memory is bounded per peer, leading ids kept longest", "[placement]") {
  PlacementScheduler s({.prefixMemoryPerPeer = 4});
  s.upsertPeer("d0", 1024, 1024);
  s.recordPlaced("d0", 0, 0, std::vector<std::uint64_t>{1, 2, 3, 4});
  s.recordPlaced("d0", 0, 0, std::vector<std::uint64_t>{5, 6});  // evicts 4 and 3
  CHECK(s.decide(query("a", 200, kMiB, {1, 2, 3, 4})).expectedPrefixChunks == 2);
  CHECK(s.decide(query("b", 200, kMiB, {5, 6})).expectedPrefixChunks == 2);
}

TEST_CASE("the admission limit makes requests wait until a transfer finishes", "[placement]") {
  PlacementScheduler s({.maxInFlightBytesPerPeer = 1000});
  s.upsertPeer("d0", 1024, 1024);
  placeAndRecord(s, query("r1", 10, 600));
  PlacementDecision d = s.decide(query("r2", 10, 600));
  CHECK(toString(d.verdict) == "wait");
  CHECK(d.peer.empty());
  CHECK(d.status.code() == StatusCode::kResourceExhausted);
  CHECK(contains(d.status.message(), "request r2 waits"));
  CHECK(contains(d.status.message(),
                 "600 bytes in flight there plus 600 would exceed the per-peer limit of 1000"));
  // Exactly at the limit is admitted.
  CHECK(s.decide(query("r3", 10, 400)).peer == "d0");

  s.recordFinished("d0", 600);
  CHECK(s.decide(query("r2", 10, 600)).peer == "d0");
}

TEST_CASE("an inadmissible peer is skipped even with the most room", "[placement]") {
  PlacementScheduler s({.maxInFlightBytesPerPeer = 1000});
  s.upsertPeer("d0", 1024, 1024);
  s.upsertPeer("d1", 1024, 100);
  s.recordPlaced("d0", 0, 900, {});
  CHECK(s.decide(query("r1", 50, 200)).peer == "d1");
}

TEST_CASE("a request larger than the limit proceeds on an idle peer", "[placement]") {
  PlacementScheduler s({.maxInFlightBytesPerPeer = 1000});
  s.upsertPeer("d0", 1024, 1024);
  s.upsertPeer("d1", 1024, 512);
  s.recordPlaced("d0", 0, 1, {});
  PlacementDecision d = s.decide(query("big", 10, 5000));
  CHECK(d.peer == "d1");  // d0 is busy, d1 is idle
  s.recordPlaced("d1", 10, 5000, {});
  CHECK(toString(s.decide(query("big2", 10, 5000)).verdict) == "wait");
  CHECK(toString(s.decide(query("small", 10, 1)).verdict) == "place");
}

TEST_CASE("refusals name what is wrong", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d0", 1024, 1024);
  s.upsertPeer("d1", 512, 512);

  PlacementDecision zero = s.decide(query("r0", 0));
  CHECK(toString(zero.verdict) == "refuse");
  CHECK(zero.status.code() == StatusCode::kInvalidArgument);
  CHECK(contains(zero.status.message(), "request r0 needs 0 blocks"));

  PlacementDecision big = s.decide(query("r7", 2048));
  CHECK(toString(big.verdict) == "refuse");
  CHECK(big.peer.empty());
  CHECK(big.status.code() == StatusCode::kInvalidArgument);
  CHECK(big.status.message() == "request r7 needs 2048 blocks; the largest decode pool has 1024");

  PlacementDecision noChunk = s.decide(query("r8", 64, kMiB, {1, 2}, 0));
  CHECK(noChunk.status.code() == StatusCode::kInvalidArgument);
  CHECK(contains(noChunk.status.message(), "blocksPerChunk 0"));

  PlacementQuery pinned = query("r9", 10);
  pinned.pinnedPeer = "d9";
  PlacementDecision unknown = s.decide(pinned);
  CHECK(toString(unknown.verdict) == "refuse");
  CHECK(unknown.status.code() == StatusCode::kNotFound);
  CHECK(contains(unknown.status.message(), "'d9'"));

  pinned = query("r10", 600);
  pinned.pinnedPeer = "d1";
  PlacementDecision small = s.decide(pinned);
  CHECK(toString(small.verdict) == "refuse");
  CHECK(small.status.message() == "request r10 needs 600 blocks; pinned decode peer d1 has 512");
}

TEST_CASE("a request only some pools can hold waits for one of those", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d0", 1024, 100);
  s.upsertPeer("d1", 512, 512);
  PlacementDecision d = s.decide(query("r1", 600));
  CHECK(toString(d.verdict) == "wait");
  CHECK(contains(d.status.message(), "closest is decode peer d0: 100 of 1024 blocks free"));
}

TEST_CASE("no peers at all means wait", "[placement]") {
  PlacementScheduler s({});
  PlacementDecision d = s.decide(query("r1", 10));
  CHECK(toString(d.verdict) == "wait");
  CHECK(d.status.code() == StatusCode::kResourceExhausted);
  CHECK(contains(d.status.message(), "no decode peers are known"));
}

TEST_CASE("a pinned request goes to its peer or waits for it", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d0", 1024, 1024);
  s.upsertPeer("d1", 1024, 100);
  PlacementQuery q = query("r1", 50);
  q.pinnedPeer = "d1";
  PlacementDecision d = s.decide(q);
  CHECK(d.peer == "d1");
  CHECK(d.reason == "pinned");
  q.blocks = 200;  // d1 lacks room; d0 has plenty but is not allowed
  PlacementDecision w = s.decide(q);
  CHECK(toString(w.verdict) == "wait");
  CHECK(contains(w.status.message(), "pinned decode peer d1: 100 of 1024 blocks free"));
}

TEST_CASE("removePeer forgets the peer and everything about it", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d0", 1024, 1024);
  s.upsertPeer("d1", 1024, 512);
  s.recordPlaced("d0", 24, kMiB, std::vector<std::uint64_t>{1});
  s.removePeer("d0");
  CHECK_FALSE(s.peer("d0").has_value());
  REQUIRE(s.peers().size() == 1);
  CHECK(s.peers()[0].name == "d1");
  CHECK(s.decide(query("r1", 10)).peer == "d1");
  s.recordPlaced("d0", 10, kMiB, {});  // late outcome for a removed peer: ignored
  s.recordFinished("d0", kMiB);
  CHECK_FALSE(s.peer("d0").has_value());

  s.upsertPeer("d0", 1024, 1024);  // back, with a clean slate
  CHECK(s.peer("d0")->inFlightBytes == 0);
  CHECK(s.decide(query("r2", 10, kMiB, {1})).expectedPrefixChunks == 0);
  s.removePeer("unknown");
  CHECK(s.peers().size() == 2);
}

TEST_CASE("a fresh report replaces the estimate and keeps in-flight counts", "[placement]") {
  PlacementScheduler s({});
  s.upsertPeer("d0", 1024, 1024);
  s.recordPlaced("d0", 2000, 3 * kMiB, {});
  CHECK(s.peer("d0")->freeBlocks == 0);  // clamped
  s.upsertPeer("d0", 2048, 700);
  DecodePeerView v = *s.peer("d0");
  CHECK(v.totalBlocks == 2048);
  CHECK(v.freeBlocks == 700);
  CHECK(v.inFlightBytes == 3 * kMiB);
  CHECK(v.inFlightRequests == 1);
  s.upsertPeer("d0", 100, 700);
  CHECK(s.peer("d0")->freeBlocks == 100);  // never more free than total

  s.recordFinished("d0", 5 * kMiB);
  s.recordFinished("d0", kMiB);
  CHECK(s.peer("d0")->inFlightBytes == 0);
  CHECK(s.peer("d0")->inFlightRequests == 0);
}

TEST_CASE("decisions are deterministic", "[placement]") {
  auto run = [](std::vector<std::string> order) {
    PlacementScheduler s({.maxInFlightBytesPerPeer = 8 * kMiB});
    for (const std::string& name : order) s.upsertPeer(name, 1024, 1024);
    std::vector<std::string> out;
    for (std::uint64_t i = 0; i < 20; ++i) {
      PlacementQuery q =
          query("r" + std::to_string(i), 10 + i * 7, (1 + i % 3) * kMiB, {i % 4, 100 + i % 2}, 8);
      PlacementDecision d = s.decide(q);
      CHECK(s.decide(q).reason == d.reason);  // decide() changes nothing
      out.push_back(std::string(toString(d.verdict)) + ":" + d.peer + ":" + d.reason);
      if (d.verdict == Verdict::kPlace) s.recordPlaced(d.peer, q.blocks, q.bytes, q.prefixHashes);
      if (i % 4 == 3) s.recordFinished(out.size() % 2 ? "a" : "b", 2 * kMiB);
    }
    return out;
  };
  std::vector<std::string> first = run({"a", "b", "c"});
  CHECK(first == run({"c", "a", "b"}));
  CHECK(first == run({"b", "c", "a"}));
}

TEST_CASE("a gather's part does not wait for room its request may already have", "[placement]") {
  PlacementScheduler s(SchedulerOptions{});
  s.upsertPeer("d0", 100, 0);  // full: the other part reserved the blocks
  PlacementQuery part{"g@p1", 40, 1000, {}, 0, std::string("d0"), 0, true};
  CHECK(s.decide(part).verdict == Verdict::kPlace);
  part.mayJoin = false;
  CHECK(s.decide(part).verdict == Verdict::kWait);
}

// kvx-test-labels: unit
// A KV agent learns of a lost or restarted peer from the agent's peer events: requests to
// the old incarnation end at once with PEER_FAILED, even when a new incarnation under the
// same name connects before any poll could notice the gap.
#include <catch2/catch.hpp>
#include <functional>
#include <thread>

#include "kvx/kv_agent.h"
#include "tests/kv/tiny_models.h"
#include "tests/support/eventually.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace std::chrono_literals;
using kvx::test::eventually;
using kvx::test::kTinyShape;

namespace {

std::unique_ptr<KvAgent> makeEventsAgent(const std::string& name, KvRole role,
                                         const std::string& transport) {
  KvAgentOptions options;
  options.agent = kvx::test::agentOptions(name, transport);
  options.role = role;
  options.pool.model = kTinyShape;
  options.pool.blocks = 64;
  options.requestTimeout = 30s;
  options.leaseTimeout = 30s;
  options.prefixChunkTokens = 8;
  auto agent = KvAgent::create(options);
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

// A layer-by-layer request: it stays in flight until its layers are declared ready.
KvRequestSpec pendingRequest(KvAgent& prefill, const std::string& id) {
  KvRequestSpec spec;
  spec.id = id;
  spec.tokens = 16;
  spec.sourceBlocks = prefill.allocateBlocks(prefill.pool().blocksFor(16)).value();
  spec.mode = KvMode::kPush;
  spec.layerwise = true;
  return spec;
}

}  // namespace

TEST_CASE("a peer restarted under its name ends the old incarnation's requests at once", "[kv]") {
  const std::string transport = GENERATE("inproc", "tcp");
  auto prefill = makeEventsAgent("prefill", KvRole::kPrefill, transport);
  auto decode = makeEventsAgent("decode", KvRole::kDecode, transport);
  REQUIRE(decode->connect(prefill->listenAddress(), deadlineIn(5s)).isOk());

  REQUIRE(prefill->submit(pendingRequest(*prefill, "old")).isOk());
  REQUIRE(prefill->layerReady("old", 0).isOk());
  REQUIRE(decode->waitLayer("old", 0, deadlineIn(5s)).isOk());

  // The replacement says hello while the old decode agent is still connected: the name never
  // leaves the prefill agent's peer list.
  auto restarted = makeEventsAgent("decode", KvRole::kDecode, transport);
  const auto start = Clock::now();
  REQUIRE(restarted->connect(prefill->listenAddress(), deadlineIn(5s)).isOk());
  auto old = prefill->wait("old", deadlineIn(5s));  // a failed request's wait is its Status
  REQUIRE_FALSE(old.isOk());
  CHECK(old.status().code() == StatusCode::kPeerFailed);
  CHECK_THAT(old.status().message(), Catch::Contains("restarted"));
  CHECK(Clock::now() - start < 5s);  // not the request's own 30 s deadline

  // The new incarnation serves requests, and the old one's departure later changes nothing.
  // (The old one still holds "old", which its prefill ended: a short shutdown fails it.)
  REQUIRE(decode->shutdown(deadlineIn(100ms), "replaced").isOk());
  decode.reset();
  KvRequestSpec fresh = pendingRequest(*prefill, "fresh");
  fresh.layerwise = false;
  REQUIRE(prefill->submit(fresh).isOk());
  auto arrival = restarted->nextArrival(deadlineIn(5s));
  REQUIRE(arrival.isOk());
  CHECK(arrival->id == "fresh");
  auto done = prefill->wait("fresh", deadlineIn(5s));
  REQUIRE(done.isOk());
  CHECK(done->state == KvRequestState::kReleased);
  CHECK(prefill->usage().freeBlocks == 64);  // both requests' source blocks came back
  REQUIRE(restarted->consume("fresh").isOk());
  REQUIRE(restarted->release("fresh").isOk());
}

TEST_CASE("a KV agent dials a lost peer again on its own", "[kv]") {
  const std::string transport = GENERATE("inproc", "tcp");
  auto prefill = makeEventsAgent("prefill", KvRole::kPrefill, transport);
  auto decode = makeEventsAgent("decode", KvRole::kDecode, transport);
  REQUIRE(decode->connect(prefill->listenAddress(), deadlineIn(5s)).isOk());

  // The prefill agent drops the link; the decode agent dialed it, so it dials it again.
  auto knowsDecode = [&] {
    for (const KvPeerStatus& peer : prefill->peers()) {
      if (peer.name == "decode") return true;
    }
    return false;
  };
  const auto start = Clock::now();
  REQUIRE(prefill->agent().disconnect("decode").isOk());
  // Gone first (the decode agent waits 100 ms before its first attempt), then back.
  REQUIRE(eventually([&] { return !knowsDecode(); }));
  REQUIRE(eventually(knowsDecode));
  INFO("back after "
       << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count()
       << " ms");
  CHECK(Clock::now() - start < 3s);

  KvRequestSpec again = pendingRequest(*prefill, "again");
  again.layerwise = false;
  REQUIRE(prefill->submit(again).isOk());
  auto arrival = decode->nextArrival(deadlineIn(5s));
  REQUIRE(arrival.isOk());
  CHECK(arrival->id == "again");
  auto done = prefill->wait("again", deadlineIn(5s));
  REQUIRE(done.isOk());
  CHECK(done->state == KvRequestState::kReleased);
  REQUIRE(decode->consume("again").isOk());
  REQUIRE(decode->release("again").isOk());
}

// kvx-test-labels: unit
// kvx::KvAgent in one process: a prefill and a decode agent hand requests over, PUSH and
// PULL, whole and layer by layer; every destination block is checked.
#include "kvx/kv_agent.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "examples/pair_transfer/pattern.h"
#include "tests/kv/tiny_models.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace std::chrono_literals;
using kvx::test::kTinyShape;

namespace {

std::unique_ptr<KvAgent> makeAgent(const std::string& name, KvRole role, std::uint64_t blocks,
                                   const std::string& transport, std::string layout = "nhd",
                                   std::string model = kTinyShape) {
  KvAgentOptions options;
  options.agent = kvx::test::agentOptions(name, transport);
  options.role = role;
  options.pool.model = std::move(model);
  options.pool.layout = std::move(layout);
  options.pool.blocks = blocks;
  options.requestTimeout = 10s;
  options.leaseTimeout = 10s;
  options.prefixChunkTokens = 8;
  options.prefixCacheBlocks = role == KvRole::kDecode ? 16 : 0;
  auto agent = KvAgent::create(options);
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

std::uint64_t segmentSeed(std::uint64_t blockSeed, std::uint32_t layer, std::uint32_t kv) {
  return blockSeed * 1000003 + layer * 7 + kv;
}

void fillBlock(KvAgent& agent, std::uint64_t block, std::uint64_t seed) {
  for (std::uint32_t layer = 0; layer < agent.pool().layers; ++layer) {
    for (std::uint32_t kv = 0; kv < agent.pool().kvCount; ++kv) {
      auto bytes = agent.segment(block, layer, kv).value();
      pair_transfer::fillPattern({reinterpret_cast<std::uint8_t*>(bytes.data()), bytes.size()}, 0,
                                 segmentSeed(seed, layer, kv));
    }
  }
}

bool blockHolds(KvAgent& agent, std::uint64_t block, std::uint64_t seed) {
  for (std::uint32_t layer = 0; layer < agent.pool().layers; ++layer) {
    for (std::uint32_t kv = 0; kv < agent.pool().kvCount; ++kv) {
      auto bytes = agent.segment(block, layer, kv).value();
      if (!pair_transfer::checkPattern(
               {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()}, 0,
               segmentSeed(seed, layer, kv))
               .empty()) {
        return false;
      }
    }
  }
  return true;
}

// Submits a request of `tokens` tokens whose block i holds seed base + i.
KvRequestSpec makeRequest(KvAgent& prefill, const std::string& id, std::uint64_t tokens,
                          std::uint64_t base, KvMode mode, bool layerwise) {
  const std::uint64_t blocks = prefill.pool().blocksFor(tokens);
  auto source = prefill.allocateBlocks(blocks);
  REQUIRE(source.isOk());
  for (std::uint64_t i = 0; i < blocks; ++i) fillBlock(prefill, (*source)[i], base + i);
  KvRequestSpec spec;
  spec.id = id;
  spec.tokens = tokens;
  spec.sourceBlocks = *source;
  spec.mode = mode;
  spec.layerwise = layerwise;
  return spec;
}

}  // namespace

TEST_CASE("requests move from a prefill to a decode agent, every block checked", "[kv]") {
  const std::string transport = GENERATE("inproc", "tcp");
  const std::string layout = GENERATE("nhd", "cross-layer");
  auto decode = makeAgent("decode", KvRole::kDecode, 64, transport, layout);
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 64, transport, layout);
  REQUIRE(prefill->connect(decode->listenAddress(), deadlineIn(5s)).isOk());

  int n = 0;
  for (KvMode mode : {KvMode::kPush, KvMode::kPull}) {
    for (bool layerwise : {false, true}) {
      const std::string id = "r" + std::to_string(n);
      const std::uint64_t base = 100 * (n + 1);
      KvRequestSpec spec = makeRequest(*prefill, id, 37, base, mode, layerwise);
      REQUIRE(prefill->submit(spec).isOk());
      if (layerwise) {
        for (std::uint32_t layer = 0; layer < prefill->pool().layers; ++layer) {
          REQUIRE(prefill->layerReady(id, layer).isOk());
          CHECK(decode->waitLayer(id, layer, deadlineIn(5s)).isOk());
        }
      }
      auto arrival = decode->nextArrival(deadlineIn(5s));
      REQUIRE(arrival.isOk());
      CHECK(arrival->id == id);
      REQUIRE(arrival->blocks.size() == 10);
      for (std::size_t i = 0; i < arrival->blocks.size(); ++i) {
        CHECK(blockHolds(*decode, arrival->blocks[i], base + i));
      }
      auto done = prefill->wait(id, deadlineIn(5s));
      REQUIRE(done.isOk());
      CHECK(done->state == KvRequestState::kReleased);
      CHECK(done->peer == "decode");
      CHECK(done->bytes == 10 * prefill->pool().blockBytes);
      CHECK(done->operations <= done->descriptors);
      REQUIRE(decode->consume(id).isOk());
      REQUIRE(decode->release(id).isOk());
      ++n;
    }
  }
  REQUIRE(decode->dropPrefixCache().isOk());
  CHECK(decode->usage().freeBlocks == 64);
  CHECK(prefill->usage().freeBlocks == 64);
}

TEST_CASE("after shutdown, nextArrival returns CANCELLED at once, to a caller already waiting too",
          "[kv]") {
  auto decode = makeAgent("decode", KvRole::kDecode, 16, "inproc");
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 16, "inproc");
  REQUIRE(prefill->connect(decode->listenAddress(), deadlineIn(5s)).isOk());
  KvRequestSpec spec = makeRequest(*prefill, "in", 8, 100, KvMode::kPush, false);
  REQUIRE(prefill->submit(spec).isOk());
  auto arrival = decode->nextArrival(deadlineIn(5s));
  REQUIRE(arrival.isOk());
  REQUIRE(decode->consume("in").isOk());
  REQUIRE(decode->release("in").isOk());
  // A server thread waiting for the next arrival while the agent shuts down: the shutdown
  // ends its wait, long before the wait's own deadline.
  Status waiterGot;
  std::thread server([&] { waiterGot = decode->nextArrival(deadlineIn(60s)).status(); });
  const auto started = Clock::now();
  REQUIRE(decode->shutdown(deadlineIn(5s), "test over").isOk());
  server.join();
  CHECK(waiterGot.code() == StatusCode::kCancelled);
  CHECK(Clock::now() - started < 30s);
  const auto before = Clock::now();
  CHECK(decode->nextArrival(deadlineIn(60s)).status().code() == StatusCode::kCancelled);
  CHECK(Clock::now() - before < 30s);
}

TEST_CASE("a destroyed agent does not wait for what only its application could do", "[kv]") {
  // Each agent is destroyed holding a request that only its application could take further:
  // the prefill agent's layer-wise request waits for layers never handed over, the decode
  // agent's arrival was never consumed. Neither waits out the destructor's 2 s deadline for
  // it (it used to, then 1 s more for the prefill one).
  auto decode = makeAgent("decode", KvRole::kDecode, 32, "inproc");
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 32, "inproc");
  REQUIRE(prefill->connect(decode->listenAddress(), deadlineIn(5s)).isOk());
  REQUIRE(prefill->submit(makeRequest(*prefill, "whole", 8, 1, KvMode::kPush, false)).isOk());
  REQUIRE(decode->nextArrival(deadlineIn(5s)).isOk());  // never consumed
  REQUIRE(prefill->wait("whole", deadlineIn(5s)).isOk());
  REQUIRE(prefill->submit(makeRequest(*prefill, "layered", 8, 9, KvMode::kPush, true)).isOk());
  REQUIRE(prefill->layerReady("layered", 0).isOk());  // the other layers never come

  auto started = Clock::now();
  prefill.reset();
  CHECK(Clock::now() - started < 2s);
  // The decode agent heard the layer-wise request end with the prefill agent's destruction.
  started = Clock::now();
  decode.reset();
  CHECK(Clock::now() - started < 2s);
}

TEST_CASE("bad requests get clear errors and lose nothing", "[kv]") {
  auto decode = makeAgent("decode", KvRole::kDecode, 16, "inproc");
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 64, "inproc");
  REQUIRE(prefill->connect(decode->listenAddress(), deadlineIn(5s)).isOk());

  // More blocks than any decode pool has: refused with the numbers.
  KvRequestSpec big = makeRequest(*prefill, "big", 4 * 20, 1, KvMode::kPush, false);
  REQUIRE(prefill->submit(big).isOk());
  auto failed = prefill->wait("big", deadlineIn(5s));
  REQUIRE_FALSE(failed.isOk());
  CHECK(failed.status().message().find("needs 20 blocks") != std::string::npos);

  KvRequestSpec ok = makeRequest(*prefill, "ok", 8, 1, KvMode::kPush, true);
  REQUIRE(prefill->submit(ok).isOk());
  CHECK(prefill->submit(ok).code() == StatusCode::kAlreadyExists);  // id reused while live
  KvRequestSpec mismatched = ok;
  mismatched.id = "mismatch";
  mismatched.tokens = 100;
  CHECK(prefill->submit(mismatched).code() == StatusCode::kInvalidArgument);
  CHECK(prefill->layerReady("ok", 99).code() == StatusCode::kInvalidArgument);
  CHECK(decode->submit(ok).code() == StatusCode::kFailedPrecondition);
  // The live request still completes.
  for (std::uint32_t layer = 0; layer < 4; ++layer)
    REQUIRE(prefill->layerReady("ok", layer).isOk());
  REQUIRE(decode->nextArrival(deadlineIn(5s)).isOk());
  REQUIRE(prefill->wait("ok", deadlineIn(5s)).isOk());
  REQUIRE(decode->consume("ok").isOk());
  REQUIRE(decode->release("ok").isOk());
}

TEST_CASE("an incompatible pool is refused at the handshake with both shapes", "[kv]") {
  auto decode = makeAgent("decode", KvRole::kDecode, 16, "inproc", "hnd");
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 16, "inproc", "nhd");
  auto connected = prefill->connect(decode->listenAddress(), deadlineIn(5s));
  REQUIRE_FALSE(connected.isOk());
  CHECK(connected.status().message().find("hnd") != std::string::npos);
  CHECK(connected.status().message().find("nhd") != std::string::npos);
}

TEST_CASE("a KV connect to an agent that is not a KV agent is refused at once, naming why",
          "[kv]") {
  // A plain agent completes the agent's handshake, but its metadata describes no KV pool.
  auto plain = kvx::test::makeAgent("plain", "inproc");
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 16, "inproc");
  const auto started = Clock::now();
  auto connected = prefill->connect(plain->listenAddress(), deadlineIn(5s));
  REQUIRE_FALSE(connected.isOk());
  CHECK(connected.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(connected.status().message(), Catch::Contains("'plain' is not a kvx KV agent"));
  CHECK(Clock::now() - started < 4s);  // not a wait for an answer that never comes
  // The refusal is the KV layer's; as a peer, the plain agent is in its KV peer list, refused.
  const auto peers = prefill->peers();
  REQUIRE(peers.size() == 1);
  CHECK_FALSE(peers[0].compatible);
}

TEST_CASE("a KV agent's own description is not the application's to set", "[kv]") {
  KvAgentOptions options;
  options.agent = kvx::test::agentOptions("x", "inproc");
  options.pool.model = kTinyShape;
  options.agent.applicationInfo = "mine";
  CHECK(KvAgent::create(options).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("unknown shapes and wrong tensor counts are refused at creation", "[kv]") {
  KvAgentOptions options;
  options.agent.name = "x";
  options.agent.transport = "inproc";
  options.pool.model = "no-such-model";
  options.pool.blocks = 4;
  auto unknown = KvAgent::create(options);
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.status().message().find("llama3-8b") != std::string::npos);
  options.pool.model = kTinyShape;
  std::vector<std::byte> memory(1 << 16);
  options.pool.tensors = {memory.data()};
  auto wrapped = KvAgent::create(options);
  REQUIRE_FALSE(wrapped.isOk());
  CHECK(wrapped.status().message().find("needs 4 tensors") != std::string::npos);
}

// kvx-test-labels: unit
// kvx::KvAgent in one process: a prefill and a decode agent hand requests over, PUSH and
// PULL, whole and layer by layer; every destination block is checked.
#include "kvx/kv_agent.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "examples/pair_transfer/pattern.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace std::chrono_literals;

namespace {

const char* kTinyShape =
    R"({"name":"tiny","layers":4,"kvHeads":2,"headDim":16,"dtypeBytes":2,"tokensPerBlock":4})";

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
}

TEST_CASE("an incompatible pool is refused at the handshake with both shapes", "[kv]") {
  auto decode = makeAgent("decode", KvRole::kDecode, 16, "inproc", "hnd");
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 16, "inproc", "nhd");
  auto connected = prefill->connect(decode->listenAddress(), deadlineIn(5s));
  REQUIRE_FALSE(connected.isOk());
  CHECK(connected.status().message().find("hnd") != std::string::npos);
  CHECK(connected.status().message().find("nhd") != std::string::npos);
}

TEST_CASE("a KV connect whose handshake goes unanswered drops the connection it made", "[kv]") {
  // A plain agent takes the control link and the metadata but never answers the KV hello.
  auto plain = kvx::test::makeAgent("plain", "inproc");
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 16, "inproc");
  auto connected = prefill->connect(plain->listenAddress(), deadlineIn(500ms));
  REQUIRE_FALSE(connected.isOk());
  CHECK(connected.status().code() == StatusCode::kTimedOut);
  CHECK_THAT(connected.status().message(), Catch::Contains("the connection was dropped"));
  // Nothing half-made is left: the plain agent sees the link go (its goodbye), so the next
  // connect starts from scratch.
  const Deadline deadline = deadlineIn(5s);
  while (!plain->peers().empty() && Clock::now() < deadline) std::this_thread::sleep_for(10ms);
  CHECK(plain->peers().empty());
}

TEST_CASE("a KV connect tries an unanswered hello again on a fresh connection", "[kv]") {
  auto plain = kvx::test::makeAgent("plain", "inproc");
  std::atomic<int> joined{0};
  plain->setPeerEventHandler([&](const PeerEvent& event) {
    if (event.kind == PeerEvent::Kind::kJoined) ++joined;
  });
  auto prefill = makeAgent("prefill", KvRole::kPrefill, 16, "inproc");
  // 7 s: the first hello waits half of it, the second (with less than 6 s left) the rest.
  const auto started = Clock::now();
  auto connected = prefill->connect(plain->listenAddress(), deadlineIn(7s));
  const auto took = Clock::now() - started;
  REQUIRE_FALSE(connected.isOk());
  CHECK(connected.status().code() == StatusCode::kTimedOut);
  CHECK_THAT(connected.status().message(), Catch::Contains("no reply to the hello"));
  CHECK(joined.load() == 2);  // a fresh connection for each hello
  CHECK(took >= 6900ms);      // the caller's deadline, not less
  CHECK(took < 10s);          // ends at the deadline, not later (slack for sanitizer builds)
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

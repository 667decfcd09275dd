// kvx-test-labels: unit
// KvAgentOptions::checkFreeBlocks: a decode agent that finds a write into one of its free
// blocks (a late write) logs it and counts it, when the block is placed again and in the
// sweep at shutdown; ordinary transfers, releases and reuse count nothing.
#include <catch2/catch.hpp>

#include "kvx/kv_agent.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace std::chrono_literals;

namespace {

const char* kCheckShape =
    R"({"name":"tiny","layers":2,"kvHeads":2,"headDim":8,"dtypeBytes":2,"tokensPerBlock":4})";
constexpr std::uint64_t kCheckBlocks = 16;

std::unique_ptr<KvAgent> makeCheckedAgent(const std::string& name, KvRole role,
                                          bool checkFreeBlocks) {
  KvAgentOptions options;
  options.agent = kvx::test::agentOptions(name, "inproc");
  options.role = role;
  options.pool.model = kCheckShape;
  options.pool.layout = "nhd";
  options.pool.blocks = kCheckBlocks;
  options.requestTimeout = 10s;
  options.leaseTimeout = 10s;
  options.checkFreeBlocks = checkFreeBlocks;
  auto agent = KvAgent::create(options);
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

// Moves a PUSH request of `blocks` blocks and releases it on the decode side; returns the
// decode blocks it used.
std::vector<std::uint64_t> moveAndRelease(KvAgent& prefill, KvAgent& decode, const std::string& id,
                                          std::uint64_t blocks) {
  auto source = prefill.allocateBlocks(blocks);
  REQUIRE(source.isOk());
  KvRequestSpec spec;
  spec.id = id;
  spec.tokens = blocks * prefill.pool().tokensPerBlock;
  spec.sourceBlocks = *source;
  spec.mode = KvMode::kPush;
  REQUIRE(prefill.submit(spec).isOk());
  auto arrival = decode.nextArrival(deadlineIn(5s));
  REQUIRE(arrival.isOk());
  REQUIRE(arrival->id == id);
  REQUIRE(decode.consume(id).isOk());
  REQUIRE(decode.release(id).isOk());
  REQUIRE(prefill.wait(id, deadlineIn(5s)).isOk());
  return arrival->blocks;
}

void scribble(KvAgent& agent, std::uint64_t block) {
  auto segment = agent.segment(block, 1, 1);
  REQUIRE(segment.isOk());
  (*segment)[7] ^= std::byte{0x40};
}

}  // namespace

TEST_CASE("checkFreeBlocks counts writes into free blocks, and nothing else", "[kv]") {
  auto decode = makeCheckedAgent("decode", KvRole::kDecode, true);
  auto prefill = makeCheckedAgent("prefill", KvRole::kPrefill, false);
  REQUIRE(prefill->connect(decode->listenAddress(), deadlineIn(5s)).isOk());

  // Ordinary use, blocks reused across requests: no late write.
  for (int i = 0; i < 3; ++i) (void)moveAndRelease(*prefill, *decode, "r" + std::to_string(i), 6);
  CHECK(decode->usage().lateWrites == 0);

  // A write into a free block shows when the block is placed again: a request of every
  // block must take it.
  scribble(*decode, 9);
  const auto all = moveAndRelease(*prefill, *decode, "whole", kCheckBlocks);
  CHECK(all.size() == kCheckBlocks);
  CHECK(decode->usage().lateWrites == 1);

  // One into a block never placed again shows in the sweep at shutdown.
  scribble(*decode, 4);
  CHECK(decode->usage().lateWrites == 1);
  REQUIRE(decode->shutdown(deadlineIn(5s), "test over").isOk());
  CHECK(decode->usage().lateWrites == 2);
}

TEST_CASE("without checkFreeBlocks nothing is counted", "[kv]") {
  auto decode = makeCheckedAgent("decode", KvRole::kDecode, false);
  scribble(*decode, 3);
  REQUIRE(decode->shutdown(deadlineIn(5s), "test over").isOk());
  CHECK(decode->usage().lateWrites == 0);
}

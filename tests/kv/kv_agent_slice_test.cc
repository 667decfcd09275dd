// kvx-test-labels: unit ucx
// Tensor-parallel slicing through real agents and UCX: decode ranks of another TP size
// than the prefill ranks gather and scatter head ranges, PUSH and PULL, in the NHD and HND
// layouts; every head of every destination block is checked.
#include <catch2/catch.hpp>

#include "kvx/kv_agent.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kHeadBytes = 8;  // headDim 4 x 2 bytes
constexpr std::uint32_t kTokens = 4;

std::string shape(std::uint32_t heads) {
  return R"({"name":"tp","layers":3,"kvHeads":)" + std::to_string(heads) +
         R"(,"headDim":4,"dtypeBytes":2,"tokensPerBlock":4})";
}

std::unique_ptr<KvAgent> makeSliceAgent(const std::string& name, KvRole role, std::uint32_t heads,
                                        const std::string& transport, const std::string& layout) {
  KvAgentOptions options;
  options.agent = kvx::test::agentOptions(name, transport);
  options.role = role;
  options.pool.model = shape(heads);
  options.pool.layout = layout;
  options.pool.blocks = 12;
  options.requestTimeout = 10s;
  options.leaseTimeout = 10s;
  auto agent = KvAgent::create(options);
  REQUIRE(agent.isOk());
  return std::move(agent).value();
}

// Where byte x of (token t, local head h) sits in a segment of a pool with `heads` heads.
std::size_t offset(const std::string& layout, std::uint32_t heads, std::uint32_t t, std::uint32_t h,
                   std::uint32_t x) {
  if (layout == "hnd") return (h * kTokens + t) * kHeadBytes + x;
  return (t * heads + h) * kHeadBytes + x;
}

std::byte tag(std::uint64_t prompt, std::uint32_t block, std::uint32_t layer, std::uint32_t kv,
              std::uint32_t t, std::uint32_t globalHead, std::uint32_t x) {
  return static_cast<std::byte>(1 + prompt * 11 + block * 31 + layer * 17 + kv * 13 + t * 7 +
                                globalHead * 5 + x);
}

// Visits every (block index, layer, kv, token, local head, byte) of `blocks` on `agent`.
template <typename F>
void forEachByte(KvAgent& agent, const std::vector<std::uint64_t>& blocks, F&& f) {
  const KvPoolInfo& pool = agent.pool();
  const std::uint32_t heads = static_cast<std::uint32_t>(pool.segmentBytes / kTokens / kHeadBytes);
  for (std::uint32_t i = 0; i < blocks.size(); ++i)
    for (std::uint32_t l = 0; l < pool.layers; ++l)
      for (std::uint32_t kv = 0; kv < pool.kvCount; ++kv) {
        auto segment = agent.segment(blocks[i], l, kv).value();
        for (std::uint32_t t = 0; t < kTokens; ++t)
          for (std::uint32_t h = 0; h < heads; ++h)
            for (std::uint32_t x = 0; x < kHeadBytes; ++x)
              f(i, l, kv, t, h, x, segment[offset(pool.layout, heads, t, h, x)]);
      }
}

// A prompt's source blocks on a prefill rank holding global heads from `firstGlobal`.
KvRequestSpec source(KvAgent& prefill, std::uint64_t prompt, std::uint32_t firstGlobal,
                     const std::string& id) {
  KvRequestSpec spec;
  spec.id = id;
  spec.tokens = 10;  // 3 blocks
  spec.sourceBlocks = prefill.allocateBlocks(3).value();
  forEachByte(
      prefill, spec.sourceBlocks,
      [&](std::uint32_t i, std::uint32_t l, std::uint32_t kv, std::uint32_t t, std::uint32_t h,
          std::uint32_t x, std::byte& b) { b = tag(prompt, i, l, kv, t, firstGlobal + h, x); });
  return spec;
}

// Bytes of the arrival on `decode` (holding global heads from `firstGlobal`) that are wrong.
std::size_t wrongBytes(KvAgent& decode, const KvArrival& arrival, std::uint64_t prompt,
                       std::uint32_t firstGlobal) {
  std::size_t bad = 0;
  forEachByte(decode, arrival.blocks,
              [&](std::uint32_t i, std::uint32_t l, std::uint32_t kv, std::uint32_t t,
                  std::uint32_t h, std::uint32_t x, std::byte& b) {
                if (b != tag(prompt, i, l, kv, t, firstGlobal + h, x)) ++bad;
              });
  return bad;
}

}  // namespace

TEST_CASE("decode ranks gather and scatter head ranges across TP sizes", "[kv]") {
  const std::string transport = GENERATE("shm", "tcp");
  const std::string layout = GENERATE("nhd", "hnd");
  const KvMode mode = GENERATE(KvMode::kPush, KvMode::kPull);
  INFO(transport << " " << layout << (mode == KvMode::kPush ? " PUSH" : " PULL"));
  // A model with 4 KV heads. Prefill TP4 ranks 0 and 1 (one head each) -> decode TP2
  // rank 0 (heads 0-1): a gather. Prefill TP2 rank 1 (heads 2-3) -> decode TP4 ranks 2
  // and 3 (one head each): a scatter.
  auto p0 = makeSliceAgent("p0", KvRole::kPrefill, 1, transport, layout);
  auto p1 = makeSliceAgent("p1", KvRole::kPrefill, 1, transport, layout);
  auto wide = makeSliceAgent("wide", KvRole::kPrefill, 2, transport, layout);
  auto d0 = makeSliceAgent("d0", KvRole::kDecode, 2, transport, layout);
  auto n2 = makeSliceAgent("n2", KvRole::kDecode, 1, transport, layout);
  auto n3 = makeSliceAgent("n3", KvRole::kDecode, 1, transport, layout);
  const Deadline deadline = deadlineIn(10s);
  for (KvAgent* p : {p0.get(), p1.get()}) REQUIRE(p->connect(d0->listenAddress(), deadline).isOk());
  REQUIRE(wide->connect(n2->listenAddress(), deadline).isOk());
  REQUIRE(wide->connect(n3->listenAddress(), deadline).isOk());

  KvRequestSpec a = source(*p0, 1, 0, "g@p0");
  a.destination = "d0";
  a.slice = KvSlice{0, 0, 1, "gather", 2};
  KvRequestSpec b = source(*p1, 1, 1, "g@p1");
  b.destination = "d0";
  b.slice = KvSlice{0, 1, 1, "gather", 2};
  KvRequestSpec s2 = source(*wide, 2, 2, "s@n2");
  s2.destination = "n2";
  s2.slice = KvSlice{0, 0, 1, "scatter", 1};
  KvRequestSpec s3 = source(*wide, 2, 2, "s@n3");
  s3.destination = "n3";
  s3.slice = KvSlice{1, 0, 1, "scatter", 1};
  for (KvRequestSpec* spec : {&a, &b, &s2, &s3}) spec->mode = mode;
  REQUIRE(p0->submit(a).isOk());
  REQUIRE(p1->submit(b).isOk());
  REQUIRE(wide->submit(s2).isOk());
  REQUIRE(wide->submit(s3).isOk());

  for (auto [agent, first] : {std::pair{d0.get(), 0u}, {n2.get(), 2u}, {n3.get(), 3u}}) {
    auto arrival = agent->nextArrival(deadline);
    REQUIRE(arrival.isOk());
    CHECK(arrival->id == (agent == d0.get() ? "gather" : "scatter"));
    CHECK(wrongBytes(*agent, *arrival, agent == d0.get() ? 1 : 2, first) == 0);
    REQUIRE(agent->consume(arrival->id).isOk());
    REQUIRE(agent->release(arrival->id).isOk());
  }
  for (auto [agent, id] :
       {std::pair{p0.get(), a.id}, {p1.get(), b.id}, {wide.get(), s2.id}, {wide.get(), s3.id}}) {
    auto done = agent->wait(id, deadline);
    REQUIRE(done.isOk());
    CHECK(done->state == KvRequestState::kReleased);
    CHECK(done->bytes == 3 * 3 * 2 * kTokens * kHeadBytes);  // one head of 3 blocks
  }
  for (KvAgent* agent : {d0.get(), n2.get(), n3.get(), p0.get(), p1.get(), wide.get()}) {
    CHECK(agent->usage().freeBlocks == agent->usage().totalBlocks);
  }
}

// kvx-test-labels: unit
#include "kv/pool/free_block_canary.h"

#include <catch2/catch.hpp>

#include "tests/kv/tiny_models.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace kvx::kv;
using kvx::test::kTinyModel;

namespace {

// 3 layers x 2 heads x 4 x 2 B, 4 tokens per block: 64-byte segments.
std::unique_ptr<KvPool> makePool(Agent& agent, const std::string& layout, std::uint64_t blocks) {
  KvPoolSpec spec;
  spec.model = kTinyModel;
  spec.layout = layout;
  spec.blocks = blocks;
  auto pool = KvPool::create(agent, spec);
  REQUIRE(pool.isOk());
  return std::move(pool).value();
}

void scribble(const KvPool& pool, std::uint64_t block, std::uint32_t layer, std::uint32_t kv,
              std::size_t at) {
  auto segment = pool.segment(block, layer, kv);
  REQUIRE(segment.isOk());
  REQUIRE(at < segment->size());
  (*segment)[at] ^= std::byte{0x01};
}

}  // namespace

TEST_CASE("the free-block canary finds any byte written into a free block", "[kv]") {
  auto agent = kvx::test::makeAgent("canary", "inproc");
  const std::string layout = GENERATE("nhd", "cross-layer");
  auto pool = makePool(*agent, layout, 6);
  auto created = FreeBlockCanary::create(*pool);
  REQUIRE(created.isOk());
  FreeBlockCanary& canary = **created;
  const BlockExtent all{0, 6};

  // Freshly created: every block holds its pattern.
  CHECK(canary.check(std::span(&all, 1)).empty());
  CHECK(canary.lateWrites() == 0);

  // One flipped bit in the last byte of one segment of block 3, one in the first byte of
  // block 5.
  scribble(*pool, 3, 2, 1, pool->info().segmentBytes - 1);
  scribble(*pool, 5, 0, 0, 0);
  CHECK(canary.check(std::span(&all, 1)) == std::vector<std::uint64_t>{3, 5});
  CHECK(canary.lateWrites() == 2);

  // A checked extent that leaves the written blocks out finds nothing.
  const BlockExtent firstThree{0, 3};
  CHECK(canary.check(std::span(&firstThree, 1)).empty());

  // Filled again (freed after use), the blocks are clean.
  const std::vector<BlockExtent> refill = {{3, 1}, {5, 1}};
  canary.fill(refill);
  CHECK(canary.check(std::span(&all, 1)).empty());
  CHECK(canary.lateWrites() == 2);
}

TEST_CASE("the free-block canary tells blocks apart: a block's bytes copied into another show",
          "[kv]") {
  auto agent = kvx::test::makeAgent("canary-copy", "inproc");
  auto pool = makePool(*agent, "nhd", 4);
  auto created = FreeBlockCanary::create(*pool);
  REQUIRE(created.isOk());
  // A stray copy of one free block over another (both hold a pattern, but not the same one).
  auto from = pool->segment(1, 0, 0);
  auto to = pool->segment(2, 0, 0);
  REQUIRE(from.isOk());
  REQUIRE(to.isOk());
  std::copy(from->begin(), from->end(), to->begin());
  const BlockExtent all{0, 4};
  CHECK((*created)->check(std::span(&all, 1)) == std::vector<std::uint64_t>{2});
}

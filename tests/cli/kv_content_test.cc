// kvx-test-labels: unit
#include "cli/kv_content.h"

#include <catch2/catch.hpp>
#include <cstddef>
#include <vector>

using namespace kvx;
using namespace kvx::cli;

namespace {

// A pool in plain memory: segment (block, layer, kv) at ((block * layers + layer) * kvCount +
// kv) * segmentBytes.
struct FakePool {
  FakePool(std::uint64_t blockCount, KvGeometry g, std::uint64_t segmentSize)
      : geometry(g),
        segmentBytes(segmentSize),
        bytes(blockCount * g.layers * g.kvCount * segmentSize),
        blocks(blockCount) {}

  SegmentAccessor accessor() {
    return [this](std::uint64_t block, std::uint32_t layer,
                  std::uint32_t kv) -> Result<std::span<std::byte>> {
      if (block >= blocks || layer >= geometry.layers || kv >= geometry.kvCount) {
        return invalidArgument("no segment (" + std::to_string(block) + ", " +
                               std::to_string(layer) + ", " + std::to_string(kv) + ")");
      }
      const std::uint64_t offset =
          ((block * geometry.layers + layer) * geometry.kvCount + kv) * segmentBytes;
      return std::span<std::byte>(bytes.data() + offset, segmentBytes);
    };
  }

  KvGeometry geometry;
  std::uint64_t segmentBytes;
  std::vector<std::byte> bytes;
  std::uint64_t blocks;
};

const KvGeometry kGeometry{/*layers=*/3, /*kvCount=*/2, /*tokensPerBlock=*/16,
                           /*prefixChunkTokens=*/512};

}  // namespace

TEST_CASE("fnv1a and mix are the documented functions", "[kv_content]") {
  CHECK(fnv1a("") == 0xcbf29ce484222325ULL);
  CHECK(fnv1a("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(mix(1, 2) != mix(2, 1));
  CHECK(mix(1, 2) == mix(1, 2));
  CHECK(KvContent::segmentSeed(5, 0, 1) != KvContent::segmentSeed(5, 1, 0));
}

TEST_CASE("blocks of full shared chunks are seeded by the prefix hash", "[kv_content]") {
  // 1,024 tokens = two full 512-token chunks of 32 blocks each.
  const KvContent a("req-a", 1024, {7, 9}, kGeometry);
  const KvContent b("req-b", 1024, {7, 9}, kGeometry);
  CHECK(a.blockSeed(0) == mix(7, 0));
  CHECK(a.blockSeed(31) == mix(7, 31));
  CHECK(a.blockSeed(33) == mix(9, 1));
  for (std::uint64_t i = 0; i < 64; ++i) CHECK(a.blockSeed(i) == b.blockSeed(i));
}

TEST_CASE("partial chunks and chunks without a hash are private to the request", "[kv_content]") {
  // 1,000 tokens: chunk 1 holds 488 tokens, not full, so it is never shared.
  const KvContent partial("req-a", 1000, {7, 9}, kGeometry);
  CHECK(partial.blockSeed(31) == mix(7, 31));
  CHECK(partial.blockSeed(32) == mix(fnv1a("req-a"), 32));
  CHECK(partial.blockSeed(62) == mix(fnv1a("req-a"), 62));

  const KvContent fewer("req-c", 2048, {7}, kGeometry);
  CHECK(fewer.blockSeed(0) == mix(7, 0));
  CHECK(fewer.blockSeed(32) == mix(fnv1a("req-c"), 32));
  const KvContent other("req-d", 2048, {7}, kGeometry);
  CHECK(fewer.blockSeed(40) != other.blockSeed(40));
}

TEST_CASE("a block size that does not divide a chunk shares nothing", "[kv_content]") {
  KvGeometry odd = kGeometry;
  odd.tokensPerBlock = 24;
  const KvContent content("req", 4096, {1, 2, 3}, odd);
  CHECK(content.blockSeed(0) == mix(fnv1a("req"), 0));
}

TEST_CASE("filled blocks verify, and a changed byte is found", "[kv_content]") {
  FakePool pool(8, kGeometry, 256);
  const SegmentAccessor segments = pool.accessor();
  const std::vector<std::uint64_t> blocks{5, 1, 6};  // any pool blocks, in token order
  const KvContent content("req-1", 40, {}, kGeometry);
  REQUIRE(content.fillAll(segments, blocks).isOk());
  for (std::uint64_t i = 0; i < blocks.size(); ++i) {
    auto problem = content.checkBlock(segments, i, blocks[i]);
    REQUIRE(problem.isOk());
    CHECK(problem->empty());
  }
  // Block index 1 is pool block 1; corrupt its layer 2, V segment.
  (*segments(1, 2, 1))[100] ^= std::byte{0x01};
  auto problem = content.checkBlock(segments, 1, 1);
  REQUIRE(problem.isOk());
  CHECK_THAT(*problem, Catch::StartsWith("layer 2 V: byte at offset 100"));
  // The same bytes are not another index's content.
  auto misplaced = content.checkBlock(segments, 0, blocks[2]);
  REQUIRE(misplaced.isOk());
  CHECK_FALSE(misplaced->empty());
}

TEST_CASE("fillLayer writes one layer only", "[kv_content]") {
  FakePool pool(2, kGeometry, 64);
  const SegmentAccessor segments = pool.accessor();
  const std::vector<std::uint64_t> blocks{0, 1};
  const KvContent content("req-2", 32, {}, kGeometry);
  REQUIRE(content.fillLayer(segments, blocks, 1).isOk());
  auto problem = content.checkBlock(segments, 0, 0);
  REQUIRE(problem.isOk());
  CHECK_THAT(*problem, Catch::StartsWith("layer 0 K:"));
  REQUIRE(content.fillLayer(segments, blocks, 0).isOk());
  REQUIRE(content.fillLayer(segments, blocks, 2).isOk());
  CHECK(content.checkBlock(segments, 1, 1)->empty());
}

TEST_CASE("a reused prefix block verifies for another request", "[kv_content]") {
  FakePool pool(70, kGeometry, 64);
  const SegmentAccessor segments = pool.accessor();
  std::vector<std::uint64_t> blocks(64);
  for (std::uint64_t i = 0; i < blocks.size(); ++i) blocks[i] = i;
  const KvContent first("req-first", 1024, {11, 12}, kGeometry);
  REQUIRE(first.fillAll(segments, blocks).isOk());
  // A later request shares chunk 0 only.
  const KvContent later("req-later", 1024, {11, 99}, kGeometry);
  CHECK(later.checkBlock(segments, 3, 3)->empty());
  CHECK_FALSE(later.checkBlock(segments, 40, 40)->empty());
}

TEST_CASE("accessor errors are returned", "[kv_content]") {
  FakePool pool(1, kGeometry, 64);
  const SegmentAccessor segments = pool.accessor();
  const std::vector<std::uint64_t> blocks{3};
  const KvContent content("req", 16, {}, kGeometry);
  CHECK(content.fillAll(segments, blocks).code() == StatusCode::kInvalidArgument);
  CHECK(content.checkBlock(segments, 0, 3).status().code() == StatusCode::kInvalidArgument);
}

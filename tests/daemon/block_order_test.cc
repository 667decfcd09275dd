// kvx-test-labels: unit serial
#include "daemon/block_order.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>

using namespace kvx::daemon;

TEST_CASE("block orders parse", "[block_order]") {
  CHECK(parseBlockOrder("contiguous") == BlockOrder::kContiguous);
  CHECK(parseBlockOrder("random") == BlockOrder::kRandom);
  CHECK_FALSE(parseBlockOrder("sorted"));
}

TEST_CASE("contiguous keeps the allocator's order", "[block_order]") {
  std::vector<std::uint64_t> blocks{4, 5, 6, 9};
  applyBlockOrder(BlockOrder::kContiguous, 7, blocks);
  CHECK(blocks == std::vector<std::uint64_t>{4, 5, 6, 9});
}

TEST_CASE("random is a seeded permutation in which no block follows its predecessor",
          "[block_order]") {
  for (std::size_t count : {1, 2, 3, 16, 257}) {
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
      std::vector<std::uint64_t> blocks(count);
      std::iota(blocks.begin(), blocks.end(), 100);  // one extent: the worst case
      applyBlockOrder(BlockOrder::kRandom, seed, blocks);
      for (std::size_t i = 0; i + 1 < blocks.size(); ++i) {
        INFO("count " << count << " seed " << seed << " at " << i);
        CHECK(blocks[i + 1] != blocks[i] + 1);
      }
      std::vector<std::uint64_t> sorted = blocks;
      std::sort(sorted.begin(), sorted.end());
      std::vector<std::uint64_t> expected(count);
      std::iota(expected.begin(), expected.end(), 100);
      CHECK(sorted == expected);
      std::vector<std::uint64_t> again(count);
      std::iota(again.begin(), again.end(), 100);
      applyBlockOrder(BlockOrder::kRandom, seed, again);
      CHECK(again == blocks);
    }
  }
}

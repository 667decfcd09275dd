// kvx-test-labels: unit serial
#include "kv/pool/block_extent.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/support/block_extent_printer.h"

using namespace kvx::kv;

namespace {

using Blocks = std::vector<std::uint64_t>;
using Extents = std::vector<BlockExtent>;

}  // namespace

TEST_CASE("totalBlocks sums the counts", "[kv]") {
  CHECK(totalBlocks(Extents{}) == 0);
  CHECK(totalBlocks(Extents{{3, 2}, {10, 0}, {0, 5}}) == 7);
}

TEST_CASE("expandExtents lists blocks in extent order", "[kv]") {
  CHECK(expandExtents(Extents{}).empty());
  CHECK(expandExtents(Extents{{5, 3}, {1, 0}, {0, 2}}) == Blocks{5, 6, 7, 0, 1});
}

TEST_CASE("compressBlocks merges consecutive ascending runs in the given order", "[kv]") {
  CHECK(compressBlocks(Blocks{}).empty());
  CHECK(compressBlocks(Blocks{4}) == Extents{{4, 1}});
  CHECK(compressBlocks(Blocks{0, 1, 2, 7, 8, 3}) == Extents{{0, 3}, {7, 2}, {3, 1}});
  // Descending or repeated blocks are not runs.
  CHECK(compressBlocks(Blocks{3, 2, 2}) == Extents{{3, 1}, {2, 1}, {2, 1}});
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  CHECK(compressBlocks(Blocks{top - 1, top, 0}) == Extents{{top - 1, 2}, {0, 1}});
}

TEST_CASE("compressBlocks inverts expandExtents for maximal extents", "[kv]") {
  const Extents extents{{10, 4}, {2, 3}, {20, 1}, {6, 1}};
  CHECK(compressBlocks(expandExtents(extents)) == extents);
  const Blocks blocks{9, 10, 11, 0, 5, 6};
  CHECK(expandExtents(compressBlocks(blocks)) == blocks);
}

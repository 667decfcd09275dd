// kvx-test-labels: unit serial
#include "kv/pool/segment_order.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <tuple>

#include "kv/pool/pool_layout.h"

using namespace kvx;
using namespace kvx::kv;

namespace {

constexpr KvLayout kLayoutKinds[] = {KvLayout::kNHD, KvLayout::kHND, KvLayout::kBlocksFirst,
                                     KvLayout::kCrossLayer};

struct Segment {
  std::uint64_t block;
  std::uint32_t layer;
  std::uint32_t kv;
};

// index -> (block, layer, kv), requiring index() to be a bijection onto [0, size()).
std::vector<Segment> inverse(const SegmentOrder& order, std::uint64_t blocks, std::uint32_t layers,
                             std::uint32_t kvCount) {
  REQUIRE(order.size() == blocks * layers * kvCount);
  std::vector<Segment> out(order.size(), Segment{~0ull, 0, 0});
  for (std::uint64_t b = 0; b < blocks; ++b) {
    for (std::uint32_t l = 0; l < layers; ++l) {
      for (std::uint32_t k = 0; k < kvCount; ++k) {
        const std::uint32_t i = order.index(b, l, k);
        REQUIRE(i < order.size());
        REQUIRE(out[i].block == ~0ull);  // not hit before
        out[i] = {b, l, k};
      }
    }
  }
  return out;
}

ModelShape smallShape(bool mla = false) { return ModelShape{"small", 3, 2, 4, 2, 4, mla}; }

std::string name(KvLayout layout) { return std::string(toString(layout)); }

}  // namespace

TEST_CASE("index() is a bijection onto [0, size()) for every layout", "[kv]") {
  for (KvLayout layout : kLayoutKinds) {
    for (std::uint32_t kvCount : {1u, 2u}) {
      for (std::uint64_t blocks : {1ull, 5ull}) {
        INFO(name(layout) << " kv " << kvCount << " blocks " << blocks);
        SegmentOrder order(layout, blocks, 3, kvCount);
        auto segments = inverse(order, blocks, 3, kvCount);
        CHECK(segments.size() == order.size());
      }
    }
  }
}

TEST_CASE("index() matches the documented formulas", "[kv]") {
  // 10 blocks, 32 layers, K and V.
  SegmentOrder nhd(KvLayout::kNHD, 10, 32, 2);
  SegmentOrder hnd(KvLayout::kHND, 10, 32, 2);
  SegmentOrder first(KvLayout::kBlocksFirst, 10, 32, 2);
  SegmentOrder cross(KvLayout::kCrossLayer, 10, 32, 2);
  CHECK(nhd.size() == 640);
  CHECK(nhd.index(3, 5, 1) == (5 * 2 + 1) * 10 + 3);  // 113
  CHECK(hnd.index(3, 5, 1) == 113);
  CHECK(nhd.index(0, 0, 0) == 0);
  CHECK(nhd.index(9, 31, 1) == 639);
  CHECK(nhd.index(0, 0, 1) == 10);
  CHECK(first.index(3, 5, 1) == (5 * 10 + 3) * 2 + 1);  // 107
  CHECK(first.index(9, 31, 1) == 639);
  CHECK(first.index(1, 0, 0) == 2);
  CHECK(cross.index(3, 5, 1) == (3 * 32 + 5) * 2 + 1);  // 203
  CHECK(cross.index(1, 0, 0) == 64);
  CHECK(cross.index(9, 31, 1) == 639);
  // MLA: one of K/V.
  SegmentOrder mla(KvLayout::kCrossLayer, 4, 61, 1);
  CHECK(mla.size() == 244);
  CHECK(mla.index(2, 7, 0) == 2 * 61 + 7);
  SegmentOrder mlaNhd(KvLayout::kNHD, 4, 61, 1);
  CHECK(mlaNhd.index(2, 7, 0) == 7 * 4 + 2);
}

TEST_CASE("index order is memory order (cross-check with PoolLayout)", "[kv]") {
  for (KvLayout layout : kLayoutKinds) {
    for (bool mla : {false, true}) {
      INFO(name(layout) << (mla ? " mla" : ""));
      const PoolLayout pool = PoolLayout::create(smallShape(mla), layout, 5).value();
      const ModelShape& s = pool.shape();
      SegmentOrder order(layout, pool.blocks(), s.layers, s.kvCount());
      auto segments = inverse(order, pool.blocks(), s.layers, s.kvCount());
      std::tuple<std::uint32_t, std::uint64_t> previous{0, 0};
      for (std::uint32_t i = 0; i < segments.size(); ++i) {
        std::vector<TensorRange> ranges;
        REQUIRE(pool.appendRanges(segments[i].block, segments[i].layer, segments[i].kv, {}, ranges)
                    .isOk());
        REQUIRE(ranges.size() == 1);
        const std::tuple<std::uint32_t, std::uint64_t> here{ranges[0].tensor, ranges[0].offset};
        if (i > 0) {
          INFO("index " << i);
          CHECK(previous < here);
        }
        previous = here;
      }
    }
  }
}

TEST_CASE("appendPairs walks in memory order", "[kv]") {
  const std::vector<std::uint64_t> blocks{2, 3, 4};
  const std::uint32_t firstLayer = 1;
  const std::uint32_t layerCount = 2;

  SECTION("per-layer layouts: consecutive blocks are consecutive within one (layer, kv)") {
    for (KvLayout layout : {KvLayout::kNHD, KvLayout::kHND}) {
      SegmentOrder order(layout, 8, 3, 2);
      std::vector<std::uint32_t> local, remote;
      order.appendPairs(order, blocks, blocks, firstLayer, layerCount, local, remote);
      REQUIRE(local.size() == 3 * 2 * 2);
      CHECK(local == remote);
      for (std::size_t group = 0; group < 4; ++group) {
        const std::uint32_t layer = firstLayer + static_cast<std::uint32_t>(group / 2);
        const std::uint32_t kv = group % 2;
        CHECK(local[group * 3] == order.index(2, layer, kv));
        CHECK(local[group * 3 + 1] == local[group * 3] + 1);
        CHECK(local[group * 3 + 2] == local[group * 3] + 2);
      }
    }
  }
  SECTION("blocks-first: a layer's blocks are consecutive, K then V") {
    SegmentOrder order(KvLayout::kBlocksFirst, 8, 3, 2);
    std::vector<std::uint32_t> local, remote;
    order.appendPairs(order, blocks, blocks, firstLayer, layerCount, local, remote);
    REQUIRE(local.size() == 12);
    for (std::size_t layer = 0; layer < 2; ++layer) {
      const std::uint32_t start = order.index(2, firstLayer + static_cast<std::uint32_t>(layer), 0);
      for (std::uint32_t j = 0; j < 6; ++j) CHECK(local[layer * 6 + j] == start + j);
    }
  }
  SECTION("cross-layer: a whole block is consecutive") {
    SegmentOrder order(KvLayout::kCrossLayer, 8, 3, 2);
    std::vector<std::uint32_t> local, remote;
    order.appendPairs(order, blocks, blocks, 0, 3, local, remote);
    REQUIRE(local.size() == 18);
    for (std::size_t i = 0; i < 18; ++i) {
      CHECK(local[i] == order.index(2, 0, 0) + i);
    }
  }
  SECTION("every layout: ascending blocks give ascending (tensor, offset)") {
    for (KvLayout layout : kLayoutKinds) {
      INFO(name(layout));
      const PoolLayout pool = PoolLayout::create(smallShape(), layout, 8).value();
      SegmentOrder order(layout, 8, 3, 2);
      auto segments = inverse(order, 8, 3, 2);
      std::vector<std::uint32_t> local, remote;
      order.appendPairs(order, blocks, blocks, 0, 3, local, remote);
      REQUIRE(local.size() == 18);
      std::vector<std::tuple<std::uint32_t, std::uint64_t>> where;
      for (std::uint32_t i : local) {
        std::vector<TensorRange> r;
        REQUIRE(
            pool.appendRanges(segments[i].block, segments[i].layer, segments[i].kv, {}, r).isOk());
        where.emplace_back(r[0].tensor, r[0].offset);
      }
      CHECK(std::is_sorted(where.begin(), where.end()));
      CHECK(std::adjacent_find(where.begin(), where.end()) == where.end());
    }
  }
}

TEST_CASE("appendPairs appends and handles empty inputs", "[kv]") {
  SegmentOrder order(KvLayout::kNHD, 4, 2, 2);
  std::vector<std::uint32_t> local{99}, remote{98};
  order.appendPairs(order, {}, {}, 0, 2, local, remote);
  CHECK(local == std::vector<std::uint32_t>{99});
  CHECK(remote == std::vector<std::uint32_t>{98});
  const std::vector<std::uint64_t> one{3};
  order.appendPairs(order, one, one, 1, 0, local, remote);
  CHECK(local.size() == 1);
  order.appendPairs(order, one, one, 1, 1, local, remote);
  CHECK(local == std::vector<std::uint32_t>{99, order.index(3, 1, 0), order.index(3, 1, 1)});
  CHECK(remote == std::vector<std::uint32_t>{98, order.index(3, 1, 0), order.index(3, 1, 1)});
}

TEST_CASE("pairs between different layouts name the same (block, layer, kv)", "[kv]") {
  const std::uint32_t layers = 3;
  const std::vector<std::uint64_t> localBlocks{1, 2, 7, 0};
  const std::vector<std::uint64_t> remoteBlocks{5, 0, 3, 11};
  for (std::uint32_t kvCount : {1u, 2u}) {
    for (KvLayout localLayout : kLayoutKinds) {
      for (KvLayout remoteLayout : kLayoutKinds) {
        INFO(name(localLayout) << " -> " << name(remoteLayout) << " kv " << kvCount);
        SegmentOrder local(localLayout, 8, layers, kvCount);
        SegmentOrder remote(remoteLayout, 12, layers, kvCount);
        auto localSegments = inverse(local, 8, layers, kvCount);
        auto remoteSegments = inverse(remote, 12, layers, kvCount);
        std::vector<std::uint32_t> localOut, remoteOut;
        local.appendPairs(remote, localBlocks, remoteBlocks, 1, 2, localOut, remoteOut);
        REQUIRE(localOut.size() == localBlocks.size() * 2 * kvCount);
        REQUIRE(remoteOut.size() == localOut.size());
        std::map<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>, int> seen;
        for (std::size_t i = 0; i < localOut.size(); ++i) {
          const Segment l = localSegments[localOut[i]];
          const Segment r = remoteSegments[remoteOut[i]];
          const auto at = std::find(localBlocks.begin(), localBlocks.end(), l.block);
          REQUIRE(at != localBlocks.end());
          CHECK(r.block == remoteBlocks[static_cast<std::size_t>(at - localBlocks.begin())]);
          CHECK(r.layer == l.layer);
          CHECK(r.kv == l.kv);
          CHECK(l.layer >= 1);
          CHECK(l.layer < 3);
          ++seen[{l.block, l.layer, l.kv}];
        }
        // Every requested segment exactly once.
        CHECK(seen.size() == localOut.size());
      }
    }
  }
}

// kvx-test-labels: unit serial
#include "kv/pool/slice_pairs.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

using namespace kvx;
using namespace kvx::kv;

namespace {

ModelShape shapeWithHeads(std::uint32_t heads) {
  ModelShape s;
  s.name = "tp";
  s.layers = 3;
  s.kvHeads = heads;
  s.headDim = 4;
  s.dtypeBytes = 2;
  s.tokensPerBlock = 4;
  return s;
}

// A pool's bytes, with every element naming where it belongs: (block, layer, kv, token,
// global head, dim) packed into two bytes' worth of distinct values per element.
struct HostPool {
  PoolLayout layout;
  std::vector<std::vector<std::uint8_t>> tensors;

  explicit HostPool(PoolLayout l) : layout(std::move(l)) {
    tensors.assign(layout.tensorCount(), std::vector<std::uint8_t>(layout.tensorBytes(), 0));
  }
  // Byte offset of (token, head, element byte) within one segment, per layout.
  std::uint64_t inSegment(std::uint32_t token, std::uint32_t head, std::uint32_t byte) const {
    const ModelShape& s = layout.shape();
    const std::uint64_t headBytes = std::uint64_t{s.headDim} * s.dtypeBytes;
    if (layout.layout() == KvLayout::kHND) {
      return (std::uint64_t{head} * s.tokensPerBlock + token) * headBytes + byte;
    }
    return std::uint64_t{token} * s.tokenBytes() + head * headBytes + byte;
  }
  std::uint8_t* at(std::uint64_t block, std::uint32_t layer, std::uint32_t kv, std::uint32_t token,
                   std::uint32_t head, std::uint32_t byte) {
    std::vector<TensorRange> whole;
    REQUIRE(layout.appendRanges(block, layer, kv, {}, whole).isOk());
    REQUIRE(whole.size() == 1);
    return tensors[whole[0].tensor].data() + whole[0].offset + inSegment(token, head, byte);
  }
};

std::uint8_t tag(std::uint64_t block, std::uint32_t layer, std::uint32_t kv, std::uint32_t token,
                 std::uint32_t globalHead, std::uint32_t byte) {
  return static_cast<std::uint8_t>(1 + block * 31 + layer * 17 + kv * 13 + token * 7 +
                                   globalHead * 5 + byte);
}

// Fills `pool` as a rank holding global heads [firstGlobal, firstGlobal + kvHeads).
void fill(HostPool& pool, std::uint32_t firstGlobal) {
  const ModelShape& s = pool.layout.shape();
  const std::uint32_t bytes = s.headDim * s.dtypeBytes;
  for (std::uint64_t b = 0; b < pool.layout.blocks(); ++b)
    for (std::uint32_t l = 0; l < s.layers; ++l)
      for (std::uint32_t kv = 0; kv < s.kvCount(); ++kv)
        for (std::uint32_t t = 0; t < s.tokensPerBlock; ++t)
          for (std::uint32_t h = 0; h < s.kvHeads; ++h)
            for (std::uint32_t x = 0; x < bytes; ++x)
              *pool.at(b, l, kv, t, h, x) = tag(b, l, kv, t, firstGlobal + h, x);
}

void apply(const std::vector<RangePair>& pairs, HostPool& from, HostPool& to) {
  for (const RangePair& p : pairs) {
    REQUIRE(p.local.length == p.remote.length);
    REQUIRE(p.local.offset + p.local.length <= from.layout.tensorBytes());
    REQUIRE(p.remote.offset + p.remote.length <= to.layout.tensorBytes());
    std::memcpy(to.tensors[p.remote.tensor].data() + p.remote.offset,
                from.tensors[p.local.tensor].data() + p.local.offset, p.local.length);
  }
}

}  // namespace

TEST_CASE("a head slice lands each source head in its destination head", "[kv]") {
  const KvLayout layouts[][2] = {{KvLayout::kHND, KvLayout::kHND},
                                 {KvLayout::kNHD, KvLayout::kNHD},
                                 {KvLayout::kNHD, KvLayout::kBlocksFirst},
                                 {KvLayout::kCrossLayer, KvLayout::kNHD}};
  for (const auto& pair : layouts) {
    INFO(toString(pair[0]) << " -> " << toString(pair[1]));
    // Prefill TP2 rank 1 (global heads 2-3) -> decode TP4 rank 3 (global head 3) and the
    // reverse gather direction: decode TP1 (heads 0-3) filled from the TP2 rank's 2 heads.
    HostPool source(PoolLayout::create(shapeWithHeads(2), pair[0], 6).value());
    fill(source, 2);
    HostPool narrow(PoolLayout::create(shapeWithHeads(1), pair[1], 5).value());
    HostPool wide(PoolLayout::create(shapeWithHeads(4), pair[1], 5).value());
    const std::vector<std::uint64_t> src{5, 0, 3}, dst{1, 2, 4};

    std::vector<RangePair> pairs;
    REQUIRE(
        appendSlicePairs(source.layout, narrow.layout, src, dst, 0, 3, {1, 0, 1}, pairs).isOk());
    apply(pairs, source, narrow);
    pairs.clear();
    REQUIRE(appendSlicePairs(source.layout, wide.layout, src, dst, 1, 2, {0, 2, 2}, pairs).isOk());
    apply(pairs, source, wide);

    for (std::size_t i = 0; i < src.size(); ++i)
      for (std::uint32_t l = 0; l < 3; ++l)
        for (std::uint32_t kv = 0; kv < 2; ++kv)
          for (std::uint32_t t = 0; t < 4; ++t)
            for (std::uint32_t x = 0; x < 8; ++x) {
              CHECK(*narrow.at(dst[i], l, kv, t, 0, x) == tag(src[i], l, kv, t, 3, x));
              for (std::uint32_t h = 0; h < 4; ++h) {
                // Only layers 1-2 and global heads 2-3 moved into the wide pool.
                const bool moved = l >= 1 && h >= 2;
                CHECK(*wide.at(dst[i], l, kv, t, h, x) ==
                      (moved ? tag(src[i], l, kv, t, h, x) : 0));
              }
            }
    // Nothing outside the listed blocks changed.
    for (std::uint64_t b : {0, 3}) CHECK(*wide.at(b, 1, 0, 0, 2, 0) == 0);
  }
}

TEST_CASE("HND slices are one piece per segment, token-major ones one per token", "[kv]") {
  const PoolLayout wide = PoolLayout::create(shapeWithHeads(4), KvLayout::kHND, 4).value();
  const PoolLayout narrow = PoolLayout::create(shapeWithHeads(2), KvLayout::kHND, 4).value();
  std::vector<RangePair> pairs;
  const std::vector<std::uint64_t> blocks{0, 1};
  REQUIRE(appendSlicePairs(wide, narrow, blocks, blocks, 0, 3, {2, 0, 2}, pairs).isOk());
  CHECK(pairs.size() == 2 * 3 * 2);
  CHECK(pairs[0].local.length == 2 * 4 * 8);

  const PoolLayout wideNhd = PoolLayout::create(shapeWithHeads(4), KvLayout::kNHD, 4).value();
  const PoolLayout narrowNhd = PoolLayout::create(shapeWithHeads(2), KvLayout::kNHD, 4).value();
  pairs.clear();
  REQUIRE(appendSlicePairs(wideNhd, narrowNhd, blocks, blocks, 0, 3, {2, 0, 2}, pairs).isOk());
  CHECK(pairs.size() == 2 * 3 * 2 * 4);
  CHECK(pairs[0].local.length == 2 * 8);
}

TEST_CASE("slices that do not fit or pools that do not line up are refused", "[kv]") {
  const PoolLayout two = PoolLayout::create(shapeWithHeads(2), KvLayout::kHND, 4).value();
  const PoolLayout four = PoolLayout::create(shapeWithHeads(4), KvLayout::kHND, 4).value();
  const PoolLayout nhd = PoolLayout::create(shapeWithHeads(4), KvLayout::kNHD, 4).value();
  const std::vector<std::uint64_t> one{0}, two_blocks{0, 1}, outside{9};
  std::vector<RangePair> pairs;
  CHECK(appendSlicePairs(two, four, one, one, 0, 3, {1, 2, 2}, pairs).code() ==
        StatusCode::kInvalidArgument);  // local heads [1, 3) of 2
  CHECK(appendSlicePairs(two, four, one, one, 0, 3, {0, 3, 2}, pairs).code() ==
        StatusCode::kInvalidArgument);  // remote heads [3, 5) of 4
  CHECK_THAT(appendSlicePairs(two, four, one, one, 0, 3, {}, pairs).message(),
             Catch::Contains("give a head slice"));
  CHECK_THAT(appendSlicePairs(four, nhd, one, one, 0, 3, {0, 0, 1}, pairs).message(),
             Catch::Contains("token-major vs hnd"));
  CHECK(appendSlicePairs(two, four, one, two_blocks, 0, 3, {0, 0, 1}, pairs).code() ==
        StatusCode::kInvalidArgument);
  CHECK(appendSlicePairs(two, four, one, outside, 0, 3, {0, 0, 1}, pairs).code() ==
        StatusCode::kInvalidArgument);
  CHECK(appendSlicePairs(two, four, one, one, 2, 2, {0, 0, 1}, pairs).code() ==
        StatusCode::kInvalidArgument);
}

// kvx-test-labels: unit serial
#include "kv/pool/pool_layout.h"

#include <algorithm>
#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::kv;

namespace {

PoolLayout llama8b(KvLayout layout, std::uint64_t blocks = 10) {
  return PoolLayout::create(builtinShape("llama3-8b").value(), layout, blocks).value();
}

std::vector<TensorRange> ranges(const PoolLayout& pool, std::uint64_t block, std::uint32_t layer,
                                std::uint32_t kv, HeadRange heads = {}) {
  std::vector<TensorRange> out;
  REQUIRE(pool.appendRanges(block, layer, kv, heads, out).isOk());
  return out;
}

// Every byte of every tensor belongs to exactly one segment.
void checkTiling(const PoolLayout& pool) {
  std::vector<TensorRange> all;
  const auto& s = pool.shape();
  for (std::uint64_t b = 0; b < pool.blocks(); ++b) {
    for (std::uint32_t l = 0; l < s.layers; ++l) {
      for (std::uint32_t kv = 0; kv < s.kvCount(); ++kv) {
        REQUIRE(pool.appendRanges(b, l, kv, {}, all).isOk());
      }
    }
  }
  std::sort(all.begin(), all.end(), [](const TensorRange& a, const TensorRange& b) {
    return std::tie(a.tensor, a.offset) < std::tie(b.tensor, b.offset);
  });
  std::uint32_t tensor = 0;
  std::uint64_t next = 0;
  for (const TensorRange& r : all) {
    if (r.tensor != tensor) {
      REQUIRE(next == pool.tensorBytes());
      REQUIRE(r.tensor == tensor + 1);
      tensor = r.tensor;
      next = 0;
    }
    REQUIRE(r.offset == next);
    next += r.length;
  }
  CHECK(tensor + 1 == pool.tensorCount());
  CHECK(next == pool.tensorBytes());
}

}  // namespace

TEST_CASE("segment offsets match hand-computed values", "[kv]") {
  // llama3-8b: token 2048 B (8 heads x 128 x 2), segment 32768 B, 10 blocks.
  auto nhd = ranges(llama8b(KvLayout::kNHD), 3, 5, 1);
  REQUIRE(nhd.size() == 1);
  CHECK(nhd[0].tensor == 5);
  CHECK(nhd[0].offset == (1 * 10 + 3) * 32768);
  CHECK(nhd[0].length == 32768);

  auto first = ranges(llama8b(KvLayout::kBlocksFirst), 3, 5, 1);
  CHECK(first[0].tensor == 5);
  CHECK(first[0].offset == (3 * 2 + 1) * 32768);

  auto cross = ranges(llama8b(KvLayout::kCrossLayer), 2, 5, 1);
  CHECK(cross[0].tensor == 0);
  CHECK(cross[0].offset == ((2 * 32 + 5) * 2 + 1) * 32768);
  CHECK(llama8b(KvLayout::kCrossLayer).totalBytes() == 10ull * 32 * 2 * 32768);
  CHECK(llama8b(KvLayout::kNHD).tensorBytes() == 10ull * 2 * 32768);
  CHECK(llama8b(KvLayout::kNHD).tensorCount() == 32);
}

TEST_CASE("a head range of HND is one contiguous piece", "[kv]") {
  auto hnd = ranges(llama8b(KvLayout::kHND), 3, 5, 0, {2, 3});
  REQUIRE(hnd.size() == 1);
  CHECK(hnd[0].offset == 3 * 32768 + 2 * 16 * 256);  // head 2 of 8, 16 tokens x 256 B
  CHECK(hnd[0].length == 3 * 16 * 256);
}

TEST_CASE("a head range of a token-major layout is one strided piece per token", "[kv]") {
  auto nhd = ranges(llama8b(KvLayout::kNHD), 1, 0, 0, {2, 3});
  REQUIRE(nhd.size() == 16);
  for (std::uint64_t t = 0; t < 16; ++t) {
    CHECK(nhd[t].offset == 32768 + t * 2048 + 2 * 256);
    CHECK(nhd[t].length == 3 * 256);
  }
}

TEST_CASE("every layout tiles its tensors exactly", "[kv]") {
  auto layout =
      GENERATE(KvLayout::kNHD, KvLayout::kHND, KvLayout::kBlocksFirst, KvLayout::kCrossLayer);
  INFO(toString(layout));
  auto shape = GENERATE(as<std::string>{}, "llama3-70b", "deepseek-v3");
  INFO(shape);
  checkTiling(PoolLayout::create(builtinShape(shape).value(), layout, 3).value());
}

TEST_CASE("single-head slices partition a segment", "[kv]") {
  auto layout =
      GENERATE(KvLayout::kNHD, KvLayout::kHND, KvLayout::kBlocksFirst, KvLayout::kCrossLayer);
  PoolLayout pool = llama8b(layout, 4);
  const TensorRange whole = ranges(pool, 2, 7, 1)[0];
  std::vector<TensorRange> pieces;
  for (std::uint32_t h = 0; h < 8; ++h) {
    REQUIRE(pool.appendRanges(2, 7, 1, {h, 1}, pieces).isOk());
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const auto& a, const auto& b) { return a.offset < b.offset; });
  std::uint64_t next = whole.offset;
  for (const auto& p : pieces) {
    REQUIRE(p.tensor == whole.tensor);
    REQUIRE(p.offset == next);
    next += p.length;
  }
  CHECK(next == whole.offset + whole.length);
}

TEST_CASE("out-of-shape requests and impossible pools are refused", "[kv]") {
  PoolLayout pool = llama8b(KvLayout::kNHD);
  std::vector<TensorRange> out;
  CHECK(pool.appendRanges(10, 0, 0, {}, out).code() == StatusCode::kInvalidArgument);
  CHECK(pool.appendRanges(0, 32, 0, {}, out).code() == StatusCode::kInvalidArgument);
  CHECK(pool.appendRanges(0, 0, 2, {}, out).code() == StatusCode::kInvalidArgument);
  CHECK(pool.appendRanges(0, 0, 0, {8, 1}, out).code() == StatusCode::kInvalidArgument);
  CHECK(pool.appendRanges(0, 0, 0, {6, 3}, out).code() == StatusCode::kInvalidArgument);
  CHECK(out.empty());
  auto mla = PoolLayout::create(builtinShape("deepseek-v3").value(), KvLayout::kNHD, 2).value();
  CHECK(mla.appendRanges(0, 0, 1, {}, out).code() == StatusCode::kInvalidArgument);
  CHECK(PoolLayout::create(builtinShape("llama3-8b").value(), KvLayout::kNHD, 0).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(PoolLayout::create(builtinShape("llama3-8b").value(), KvLayout::kCrossLayer, 1ull << 60)
            .status()
            .code() == StatusCode::kInvalidArgument);
  CHECK(parseLayout("blocks-first").value() == KvLayout::kBlocksFirst);
  CHECK(parseLayout("NHD").status().code() == StatusCode::kInvalidArgument);
}

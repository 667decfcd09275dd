// kvx-test-labels: unit
#include "kv/pool/kv_pool.h"

#include <catch2/catch.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "tests/kv/tiny_models.h"
#include "tests/support/test_agent.h"

using namespace kvx;
using namespace kvx::kv;
using kvx::test::kTinyModel;

namespace {

// 3 layers x 2 heads x 4 x 2 B, 4 tokens per block: 64-byte segments.
constexpr std::uint64_t kTinySegment = 64;

constexpr const char* kLayoutNames[] = {"nhd", "hnd", "blocks-first", "cross-layer"};

KvPoolSpec spec(const std::string& layout, std::uint64_t blocks,
                const std::string& model = kTinyModel) {
  KvPoolSpec out;
  out.model = model;
  out.layout = layout;
  out.blocks = blocks;
  return out;
}

// Caller-owned tensors for `spec`: one zeroed buffer per tensor of its layout.
std::vector<std::vector<std::byte>> ownTensors(KvPoolSpec& spec, std::uint32_t count,
                                               std::uint64_t bytes) {
  std::vector<std::vector<std::byte>> tensors(count, std::vector<std::byte>(bytes));
  spec.tensors.clear();
  for (auto& t : tensors) spec.tensors.push_back(t.data());
  return tensors;
}

std::uint32_t tensorCount(const std::string& layout, std::uint32_t layers) {
  return layout == "cross-layer" ? 1 : layers;
}

// Checks segment() and allSegmentRanges() of `pool` against PoolLayout, given the base
// address of each tensor.
void checkPool(Agent& agent, const KvPool& pool, const std::vector<std::byte*>& bases) {
  const PoolLayout& layout = pool.layout();
  const ModelShape& s = layout.shape();
  const PoolDescription description = pool.description();
  REQUIRE(description.tensorRegions.size() == layout.tensorCount());
  REQUIRE(bases.size() == layout.tensorCount());
  for (std::uint32_t t = 0; t < layout.tensorCount(); ++t) {
    auto info = agent.regionInfo(description.tensorRegions[t]);
    REQUIRE(info.isOk());
    CHECK(info->name == "kv.t" + std::to_string(t));
    CHECK(info->length == layout.tensorBytes());
    CHECK(info->address == reinterpret_cast<std::uintptr_t>(bases[t]));
    CHECK(info->kind == MemoryKind::kHost);
  }

  const std::vector<MemoryRange> ranges = pool.allSegmentRanges();
  REQUIRE(ranges.size() == pool.order().size());
  REQUIRE(ranges.size() == layout.blocks() * s.layers * s.kvCount());
  const std::vector<MemoryRange> fromDescription = KvPool::allSegmentRanges(description);
  REQUIRE(fromDescription.size() == ranges.size());
  for (std::uint64_t b = 0; b < layout.blocks(); ++b) {
    for (std::uint32_t l = 0; l < s.layers; ++l) {
      for (std::uint32_t kv = 0; kv < s.kvCount(); ++kv) {
        INFO("block " << b << " layer " << l << " kv " << kv);
        std::vector<TensorRange> expected;
        REQUIRE(layout.appendRanges(b, l, kv, {}, expected).isOk());
        REQUIRE(expected.size() == 1);
        const TensorRange& e = expected[0];

        auto view = pool.segment(b, l, kv);
        REQUIRE(view.isOk());
        CHECK(view->data() == bases[e.tensor] + e.offset);
        CHECK(view->size() == s.segmentBytes());

        const std::uint32_t i = pool.order().index(b, l, kv);
        const MemoryRange& r = ranges[i];
        CHECK(r.region == description.tensorRegions[e.tensor]);
        CHECK(r.offset == e.offset);
        CHECK(r.length == s.segmentBytes());
        CHECK(r.offset + r.length <= layout.tensorBytes());
        CHECK(fromDescription[i].region == r.region);
        CHECK(fromDescription[i].offset == r.offset);
        CHECK(fromDescription[i].length == r.length);
      }
    }
  }
  // Index order is memory order: (region's tensor, offset) strictly increases.
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    const bool sameRegion = ranges[i].region == ranges[i - 1].region;
    if (sameRegion) {
      CHECK(ranges[i].offset == ranges[i - 1].offset + ranges[i - 1].length);
    } else {
      CHECK(ranges[i].offset == 0);
    }
  }
}

}  // namespace

TEST_CASE("a pool the agent allocates", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-alloc", "inproc");
  for (const char* layout : kLayoutNames) {
    INFO(layout);
    auto pool = KvPool::create(*agent, spec(layout, 5));
    REQUIRE(pool.isOk());
    const KvPool& p = **pool;
    const KvPoolInfo& info = p.info();
    CHECK(info.model == "tiny");
    CHECK(info.layout == layout);
    CHECK(info.blocks == 5);
    CHECK(info.layers == 3);
    CHECK(info.kvCount == 2);
    CHECK(info.tokensPerBlock == 4);
    CHECK(info.segmentBytes == kTinySegment);
    CHECK(info.blockBytes == kTinySegment * 2 * 3);
    CHECK(info.tensors == tensorCount(layout, 3));
    CHECK(info.tensorBytes * info.tensors == info.blockBytes * 5);
    CHECK(info.memory == MemoryKind::kHost);
    CHECK(info.device == -1);
    std::vector<std::byte*> bases;
    for (RegionId id : p.description().tensorRegions) {
      bases.push_back(reinterpret_cast<std::byte*>(agent->regionInfo(id)->address));
    }
    checkPool(*agent, p, bases);
    // The views are writable memory of the pool.
    auto view = p.segment(4, 2, 1);
    REQUIRE(view.isOk());
    (*view)[0] = std::byte{0x5a};
    (*view)[view->size() - 1] = std::byte{0xa5};
  }
}

TEST_CASE("a pool wrapping caller-owned tensors", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-wrap", "inproc");
  for (const char* layout : kLayoutNames) {
    INFO(layout);
    KvPoolSpec s = spec(layout, 6);
    const std::uint32_t count = tensorCount(layout, 3);
    const std::uint64_t bytes = 6 * kTinySegment * 2 * (count == 1 ? 3 : 1);
    auto tensors = ownTensors(s, count, bytes);
    auto pool = KvPool::create(*agent, s);
    REQUIRE(pool.isOk());
    CHECK((*pool)->info().tensorBytes == bytes);
    std::vector<std::byte*> bases;
    for (auto& t : tensors) bases.push_back(t.data());
    checkPool(*agent, **pool, bases);
    // A write through a view lands in the caller's tensor at PoolLayout's offset.
    std::vector<TensorRange> where;
    REQUIRE((*pool)->layout().appendRanges(5, 1, 1, {}, where).isOk());
    (*(*pool)->segment(5, 1, 1))[3] = std::byte{0x77};
    CHECK(tensors[where[0].tensor][where[0].offset + 3] == std::byte{0x77});
  }
}

TEST_CASE("a built-in model pool", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-llama", "inproc");
  auto pool = KvPool::create(*agent, spec("nhd", 2, "llama3-8b"));
  REQUIRE(pool.isOk());
  CHECK((*pool)->info().segmentBytes == 32768);
  CHECK((*pool)->info().tensors == 32);
  CHECK((*pool)->allSegmentRanges().size() == 2 * 32 * 2);
  auto mla = KvPool::create(*agent, spec("cross-layer", 1, "deepseek-v3"));
  REQUIRE_FALSE(mla.isOk());  // "kv.t0" is taken by the first pool
  CHECK(mla.status().code() == StatusCode::kAlreadyExists);
  pool->reset();
  mla = KvPool::create(*agent, spec("cross-layer", 1, "deepseek-v3"));
  REQUIRE(mla.isOk());
  CHECK((*mla)->info().kvCount == 1);
  CHECK((*mla)->allSegmentRanges().size() == 61);
}

TEST_CASE("segment() refuses indices outside the pool", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-bounds", "inproc");
  auto pool = KvPool::create(*agent, spec("nhd", 5));
  REQUIRE(pool.isOk());
  CHECK((*pool)->segment(5, 0, 0).status().code() == StatusCode::kInvalidArgument);
  CHECK((*pool)->segment(0, 3, 0).status().code() == StatusCode::kInvalidArgument);
  CHECK((*pool)->segment(0, 0, 2).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("tensors shorter than the pool needs are refused before registration", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-short", "inproc");
  KvPoolSpec s = spec("nhd", 4);
  const std::uint64_t needed = 4 * 2 * kTinySegment;
  auto tensors = ownTensors(s, 3, needed);
  s.tensorBytes = {needed, 16, needed};
  auto pool = KvPool::create(*agent, s);
  REQUIRE_FALSE(pool.isOk());
  CHECK(pool.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(pool.status().message(),
             Catch::Contains("pool tensor 1 is 16 bytes; the pool needs 512 per tensor"));
  s.tensorBytes = {needed, needed};  // not one size per tensor
  CHECK(KvPool::create(*agent, s).status().code() == StatusCode::kInvalidArgument);
  // Large enough: taken, under region names that the refusals left free (a region they had
  // registered would make this ALREADY_EXISTS).
  s.tensorBytes = {needed, needed + 1, needed};
  REQUIRE(KvPool::create(*agent, s).isOk());
}

TEST_CASE("the wrong number of tensors is refused naming both counts", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-count", "inproc");
  KvPoolSpec s = spec("nhd", 4);
  auto tensors = ownTensors(s, 2, 4 * 2 * kTinySegment);
  auto pool = KvPool::create(*agent, s);
  REQUIRE_FALSE(pool.isOk());
  CHECK(pool.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(pool.status().message(),
             Catch::Contains("needs 3 tensors of 512 bytes") && Catch::Contains("got 2"));

  KvPoolSpec cross = spec("cross-layer", 4);
  auto crossTensors = ownTensors(cross, 3, 4 * 3 * 2 * kTinySegment);
  auto crossPool = KvPool::create(*agent, cross);
  REQUIRE_FALSE(crossPool.isOk());
  CHECK(crossPool.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(crossPool.status().message(),
             Catch::Contains("needs 1 tensors of 1536 bytes") && Catch::Contains("got 3"));
}

TEST_CASE("a null tensor address is refused and registers nothing", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-null", "inproc");
  KvPoolSpec s = spec("nhd", 4);
  auto tensors = ownTensors(s, 3, 4 * 2 * kTinySegment);
  s.tensors[2] = nullptr;
  auto pool = KvPool::create(*agent, s);
  REQUIRE_FALSE(pool.isOk());
  CHECK(pool.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(pool.status().message(), Catch::Contains("pool tensor 2 has a null address"));
  // Tensors 0 and 1 were registered before the failure and released with it: their names
  // are free again.
  s.tensors[2] = tensors[2].data();
  auto retry = KvPool::create(*agent, s);
  REQUIRE(retry.isOk());
}

TEST_CASE("the pool deregisters its regions when destroyed", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-release", "inproc");
  for (const char* layout : {"nhd", "cross-layer"}) {
    INFO(layout);
    std::vector<RegionId> regions;
    {
      auto pool = KvPool::create(*agent, spec(layout, 3));
      REQUIRE(pool.isOk());
      regions = (*pool)->description().tensorRegions;
      REQUIRE(regions.size() == tensorCount(layout, 3));
      for (RegionId id : regions) CHECK(agent->regionInfo(id).isOk());
    }
    for (RegionId id : regions) CHECK_FALSE(agent->regionInfo(id).isOk());
  }
  // Wrapped memory is deregistered too (and stays the caller's).
  KvPoolSpec s = spec("nhd", 2);
  auto tensors = ownTensors(s, 3, 2 * 2 * kTinySegment);
  std::vector<RegionId> regions;
  {
    auto pool = KvPool::create(*agent, s);
    REQUIRE(pool.isOk());
    regions = (*pool)->description().tensorRegions;
  }
  for (RegionId id : regions) CHECK_FALSE(agent->regionInfo(id).isOk());
  tensors[0][0] = std::byte{1};
}

TEST_CASE("unknown models, layouts and zero blocks are refused", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-bad", "inproc");
  auto unknown = KvPool::create(*agent, spec("nhd", 4, "gpt-17"));
  REQUIRE_FALSE(unknown.isOk());
  CHECK_THAT(unknown.status().message(), Catch::Contains("gpt-17"));
  for (const std::string& known : builtinShapeNames()) {
    CHECK_THAT(unknown.status().message(), Catch::Contains(known));
  }

  auto layout = KvPool::create(*agent, spec("nchw", 4));
  REQUIRE_FALSE(layout.isOk());
  CHECK(layout.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(layout.status().message(), Catch::Contains("'nchw'") && Catch::Contains("hnd"));

  auto empty = KvPool::create(*agent, spec("nhd", 0));
  REQUIRE_FALSE(empty.isOk());
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);

  auto badJson = KvPool::create(*agent, spec("nhd", 4, R"({"name":"x","layers":0})"));
  REQUIRE_FALSE(badJson.isOk());
  CHECK(badJson.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("an unknown model name is INVALID_ARGUMENT as kv_pool.h documents", "[kv]") {
  auto agent = kvx::test::makeAgent("pool-code", "inproc");
  auto unknown = KvPool::create(*agent, spec("nhd", 4, "gpt-17"));
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.status().code() == StatusCode::kInvalidArgument);
}

// kvx-test-labels: unit serial
#include "kv/pool/block_allocator.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tests/support/block_extent_printer.h"

using namespace kvx;
using namespace kvx::kv;

namespace {

using Extents = std::vector<BlockExtent>;

Extents allocateOk(BlockAllocator& alloc, std::uint64_t count) {
  auto result = alloc.allocate(count);
  REQUIRE(result.isOk());
  REQUIRE(totalBlocks(result.value()) == count);
  return std::move(result).value();
}

// An allocator of `blocks` blocks in which only `holes` are free.
BlockAllocator withHoles(std::uint64_t blocks, const Extents& holes) {
  BlockAllocator alloc(blocks);
  REQUIRE(alloc.reserve(Extents{{0, blocks}}).isOk());
  REQUIRE(alloc.free(holes).isOk());
  return alloc;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a fresh allocator hands out blocks from the start", "[kv]") {
  BlockAllocator alloc(16);
  CHECK(alloc.totalBlocks() == 16);
  CHECK(alloc.freeBlocks() == 16);
  CHECK(allocateOk(alloc, 4) == Extents{{0, 4}});
  CHECK(allocateOk(alloc, 3) == Extents{{4, 3}});
  CHECK(alloc.freeBlocks() == 9);
  CHECK_FALSE(alloc.isFree(6));
  CHECK(alloc.isFree(7));
  CHECK_FALSE(alloc.isFree(16));
  const AllocatorStats s = alloc.stats();
  CHECK(s.freeExtents == 1);
  CHECK(s.largestFreeExtent == 9);
  CHECK(s.fragmentation == 0.0);
  CHECK(s.allocations == 2);
  CHECK(s.allocatedExtents == 2);
  CHECK(s.contiguousAllocations == 2);
}

TEST_CASE("best fit takes the smallest hole that fits, lowest address on ties", "[kv]") {
  BlockAllocator alloc = withHoles(20, {{2, 3}, {8, 5}, {15, 3}});
  CHECK(allocateOk(alloc, 3) == Extents{{2, 3}});
  CHECK(allocateOk(alloc, 4) == Extents{{8, 4}});  // the 5-hole, not the 3-hole at 15
  CHECK(allocateOk(alloc, 2) == Extents{{15, 2}});
  CHECK(allocateOk(alloc, 1) == Extents{{12, 1}});  // the 1-hole left at 12 beats [17, 18)
  CHECK(alloc.freeBlocks() == 1);
  CHECK(alloc.isFree(17));
}

TEST_CASE("without a fitting hole the largest holes are gathered first", "[kv]") {
  BlockAllocator alloc = withHoles(20, {{0, 2}, {4, 3}, {10, 4}, {16, 2}});
  // 4 at 10, then 3 at 4, then 1 from the lower of the two 2-holes.
  CHECK(allocateOk(alloc, 8) == Extents{{0, 1}, {4, 3}, {10, 4}});
  CHECK(alloc.isFree(1));
  CHECK(alloc.isFree(16));
  CHECK(alloc.freeBlocks() == 3);
  const AllocatorStats s = alloc.stats();
  CHECK(s.allocations == 1);
  CHECK(s.allocatedExtents == 3);
  CHECK(s.contiguousAllocations == 0);
  CHECK(s.freeExtents == 2);
  CHECK(s.largestFreeExtent == 2);
  CHECK(s.fragmentation == Approx(1.0 - 2.0 / 3.0));
}

TEST_CASE("free merges with both neighbours", "[kv]") {
  BlockAllocator alloc(10);
  const Extents a = allocateOk(alloc, 3);
  const Extents b = allocateOk(alloc, 3);
  const Extents c = allocateOk(alloc, 4);
  CHECK(alloc.stats().freeExtents == 0);
  CHECK(alloc.stats().fragmentation == 0.0);
  REQUIRE(alloc.free(a).isOk());
  REQUIRE(alloc.free(c).isOk());
  CHECK(alloc.stats().freeExtents == 2);
  REQUIRE(alloc.free(b).isOk());
  CHECK(alloc.stats().freeExtents == 1);
  CHECK(alloc.stats().largestFreeExtent == 10);
  CHECK(allocateOk(alloc, 10) == Extents{{0, 10}});
}

TEST_CASE("a partial free and a free in pieces are fine", "[kv]") {
  BlockAllocator alloc(10);
  REQUIRE(allocateOk(alloc, 10) == Extents{{0, 10}});
  REQUIRE(alloc.free(Extents{{7, 1}, {3, 2}, {5, 2}}).isOk());
  CHECK(alloc.stats().freeExtents == 1);
  CHECK(alloc.stats().largestFreeExtent == 5);
  CHECK(allocateOk(alloc, 5) == Extents{{3, 5}});
}

TEST_CASE("allocate rejects zero and more than is free", "[kv]") {
  BlockAllocator alloc(10);
  CHECK(alloc.allocate(0).status().code() == StatusCode::kInvalidArgument);
  allocateOk(alloc, 4);
  const Status s = alloc.allocate(7).status();
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(contains(s.message(), "7"));
  CHECK(contains(s.message(), "6 of 10"));
  CHECK(alloc.freeBlocks() == 6);
  CHECK(alloc.stats().allocations == 1);
  BlockAllocator empty(0);
  CHECK(empty.allocate(1).status().code() == StatusCode::kResourceExhausted);
  CHECK(empty.stats().fragmentation == 0.0);
}

TEST_CASE("free validates every extent before freeing any", "[kv]") {
  BlockAllocator alloc(10);
  allocateOk(alloc, 10);
  auto expectInvalid = [&](const Extents& extents, const std::string& block) {
    const Status s = alloc.free(extents);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(contains(s.message(), "block " + block));
    CHECK(alloc.freeBlocks() == 0);
  };
  expectInvalid({{0, 2}, {9, 2}}, "10");   // out of range
  expectInvalid({{0, 2}, {12, 1}}, "12");  // out of range
  expectInvalid({{0, 2}, {5, 0}}, "5");    // empty
  expectInvalid({{0, 3}, {2, 2}}, "2");    // overlaps within the call
  REQUIRE(alloc.free(Extents{{4, 2}}).isOk());
  const Status twice = alloc.free(Extents{{0, 1}, {3, 2}});  // block 4 is free
  CHECK(twice.code() == StatusCode::kInvalidArgument);
  CHECK(contains(twice.message(), "block 4"));
  CHECK(contains(twice.message(), "double free"));
  CHECK_FALSE(alloc.isFree(0));
  CHECK(alloc.freeBlocks() == 2);
}

TEST_CASE("reserve takes chosen free blocks, all or nothing", "[kv]") {
  BlockAllocator alloc(10);
  REQUIRE(alloc.reserve(Extents{{3, 2}, {8, 1}}).isOk());
  CHECK(alloc.freeBlocks() == 7);
  CHECK(alloc.stats().freeExtents == 3);
  CHECK(alloc.stats().allocations == 0);
  CHECK(allocateOk(alloc, 3) == Extents{{0, 3}});

  const Status taken = alloc.reserve(Extents{{5, 2}, {7, 2}});
  CHECK(taken.code() == StatusCode::kFailedPrecondition);
  CHECK(contains(taken.message(), "block 8"));
  CHECK(alloc.isFree(5));
  CHECK(alloc.isFree(7));
  CHECK(alloc.reserve(Extents{{5, 2}, {6, 1}}).code() == StatusCode::kInvalidArgument);
  CHECK(alloc.reserve(Extents{{9, 2}}).code() == StatusCode::kInvalidArgument);
  CHECK(alloc.reserve(Extents{{5, 0}}).code() == StatusCode::kInvalidArgument);
  CHECK(alloc.freeBlocks() == 4);
}

namespace {

struct ChurnResult {
  AllocatorStats stats;
  double meanFragmentation = 0.0;
};

// Random allocate/free at about `load` occupancy, checked against a shadow bitmap.
ChurnResult churn(std::uint64_t seed, std::uint64_t blocks, double load, int ops) {
  std::mt19937_64 rng(seed);
  BlockAllocator alloc(blocks);
  std::vector<bool> used(blocks, false);
  std::uint64_t usedCount = 0;
  std::vector<Extents> live;
  double fragmentationSum = 0.0;

  auto size = [&]() -> std::uint64_t {
    const auto pick = rng() % 10;
    if (pick < 6) return 1 + rng() % 4;
    if (pick < 9) return 5 + rng() % 12;
    return 17 + rng() % 48;
  };
  for (int op = 0; op < ops; ++op) {
    const std::uint64_t want = size();
    const bool grow = usedCount + want <= static_cast<std::uint64_t>(load * blocks);
    if (live.empty() || (grow && rng() % 4 != 0)) {
      auto result = alloc.allocate(want);
      if (want > blocks - usedCount) {
        REQUIRE(result.status().code() == StatusCode::kResourceExhausted);
        continue;
      }
      REQUIRE(result.isOk());
      REQUIRE(totalBlocks(result.value()) == want);
      for (std::uint64_t b : expandExtents(result.value())) {
        REQUIRE_FALSE(used[b]);
        used[b] = true;
      }
      usedCount += want;
      live.push_back(std::move(result).value());
    } else {
      const std::size_t i = rng() % live.size();
      std::vector<std::uint64_t> freed = expandExtents(live[i]);
      if (rng() % 2 == 0) std::shuffle(freed.begin(), freed.end(), rng);
      REQUIRE(alloc.free(compressBlocks(freed)).isOk());
      for (std::uint64_t b : freed) used[b] = false;
      usedCount -= freed.size();
      live[i] = std::move(live.back());
      live.pop_back();
    }
    REQUIRE(alloc.freeBlocks() == blocks - usedCount);
    fragmentationSum += alloc.stats().fragmentation;
    if (op % 97 == 0) {
      for (std::uint64_t b = 0; b < blocks; ++b) REQUIRE(alloc.isFree(b) == !used[b]);
    }
  }
  ChurnResult out{alloc.stats(), fragmentationSum / ops};
  for (const Extents& extents : live) REQUIRE(alloc.free(extents).isOk());
  const AllocatorStats end = alloc.stats();
  CHECK(end.freeBlocks == blocks);
  CHECK(end.freeExtents == 1);
  CHECK(end.largestFreeExtent == blocks);
  return out;
}

void report(const char* name, const ChurnResult& r) {
  std::printf(
      "%s: %llu allocations, %.1f%% contiguous, %.3f extents/allocation, "
      "mean fragmentation %.3f\n",
      name, static_cast<unsigned long long>(r.stats.allocations),
      100.0 * static_cast<double>(r.stats.contiguousAllocations) /
          static_cast<double>(r.stats.allocations),
      static_cast<double>(r.stats.allocatedExtents) / static_cast<double>(r.stats.allocations),
      r.meanFragmentation);
}

}  // namespace

TEST_CASE("random churn at half load stays correct and mostly contiguous", "[kv]") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const ChurnResult r = churn(seed, 1024, 0.5, 20000);
    report("churn 50%", r);
    REQUIRE(r.stats.allocations > 5000);
    CHECK(r.stats.contiguousAllocations * 10 > r.stats.allocations * 9);
  }
}

TEST_CASE("random churn near full load stays correct", "[kv]") {
  for (std::uint64_t seed : {7u, 8u}) {
    const ChurnResult r = churn(seed, 512, 0.95, 20000);
    report("churn 95%", r);
    REQUIRE(r.stats.allocations > 5000);
    CHECK(r.stats.contiguousAllocations * 10 > r.stats.allocations * 6);
  }
}

TEST_CASE("blocks freed one by one in shuffled order merge back into one free extent", "[kv]") {
  BlockAllocator alloc(4096);
  const Extents taken = allocateOk(alloc, 4096);
  REQUIRE(taken.size() == 1);
  Extents singles;
  for (std::uint64_t b = 0; b < 4096; ++b) singles.push_back({b, 1});
  std::mt19937_64 random(7);
  std::shuffle(singles.begin(), singles.end(), random);
  // Half of them first: the free space is then exactly the runs they form.
  const Extents firstHalf(singles.begin(), singles.begin() + 2048);
  REQUIRE(alloc.free(firstHalf).isOk());
  CHECK(alloc.freeBlocks() == 2048);
  // One block of the first half again, among blocks still taken: refused, nothing freed.
  Extents mixed(singles.begin() + 2048, singles.begin() + 2058);
  mixed.push_back(firstHalf[5]);
  const Status twice = alloc.free(mixed);
  CHECK(twice.code() == StatusCode::kInvalidArgument);
  CHECK(contains(twice.message(), "block " + std::to_string(firstHalf[5].first)));
  CHECK(alloc.freeBlocks() == 2048);
  const Extents secondHalf(singles.begin() + 2048, singles.end());
  REQUIRE(alloc.free(secondHalf).isOk());
  const AllocatorStats stats = alloc.stats();
  CHECK(stats.freeBlocks == 4096);
  CHECK(stats.freeExtents == 1);
  CHECK(stats.largestFreeExtent == 4096);
}

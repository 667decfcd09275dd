// kvx-test-labels: unit serial
#include "kv/pool/prefix_cache.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <list>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kv/pool/block_allocator.h"
#include "tests/support/block_extent_printer.h"

using namespace kvx;
using namespace kvx::kv;

namespace {

using Extents = std::vector<BlockExtent>;
using Ids = std::vector<std::uint64_t>;

// Inserts chunk `id` holding blocks [2 * id, 2 * id + 2); returns what it evicted.
Extents put(PrefixCache& cache, std::uint64_t id, bool expectInserted = true) {
  Extents evicted;
  auto inserted = cache.insert(id, {{2 * id, 2}}, evicted);
  REQUIRE(inserted.isOk());
  REQUIRE(inserted.value() == expectInserted);
  return evicted;
}

}  // namespace

TEST_CASE("matchPrefix counts the leading cached ids", "[kv]") {
  PrefixCache cache(100);
  put(cache, 1);
  put(cache, 2);
  put(cache, 4);
  CHECK(cache.matchPrefix(Ids{}) == 0);
  CHECK(cache.matchPrefix(Ids{1, 2, 3, 4}) == 2);
  CHECK(cache.matchPrefix(Ids{3, 1}) == 0);
  CHECK(cache.matchPrefix(Ids{4, 2, 1}) == 3);
  CHECK(cache.contains(4));
  CHECK_FALSE(cache.contains(3));
  CHECK(cache.cachedChunks() == 3);
  CHECK(cache.cachedBlocks() == 6);
}

TEST_CASE("acquire pins and returns extents in order", "[kv]") {
  PrefixCache cache(100);
  put(cache, 1);
  put(cache, 5);
  auto got = cache.acquire(Ids{5, 1, 5});
  REQUIRE(got.isOk());
  CHECK(got.value() == Extents{{10, 2}, {2, 2}, {10, 2}});
  CHECK(cache.pinnedChunks() == 2);
  CHECK(cache.pinnedBlocks() == 4);
  REQUIRE(cache.release(Ids{5}).isOk());
  CHECK(cache.pinnedChunks() == 2);
  REQUIRE(cache.release(Ids{5, 1}).isOk());
  CHECK(cache.pinnedChunks() == 0);
  CHECK(cache.pinnedBlocks() == 0);
}

TEST_CASE("eviction goes least recently used first", "[kv]") {
  PrefixCache cache(6);
  put(cache, 1);
  put(cache, 2);
  put(cache, 3);
  CHECK(put(cache, 4) == Extents{{2, 2}});  // chunk 1 was the oldest
  REQUIRE(cache.acquire(Ids{2}).isOk());
  REQUIRE(cache.release(Ids{2}).isOk());              // 2 is now the most recent
  CHECK(put(cache, 5) == Extents{{6, 2}});            // so 3 goes
  CHECK(cache.evict(1) == Extents{{8, 2}});           // then 4
  CHECK(cache.evict(3) == Extents{{4, 2}, {10, 2}});  // 2, then 5 (at least 3 blocks)
  CHECK(cache.cachedChunks() == 0);
  CHECK(cache.evict(1).empty());
}

TEST_CASE("pinned chunks are never evicted", "[kv]") {
  PrefixCache cache(6);
  put(cache, 1);
  put(cache, 2);
  put(cache, 3);
  REQUIRE(cache.acquire(Ids{1}).isOk());
  CHECK(put(cache, 4) == Extents{{4, 2}});  // 1 is oldest but pinned
  CHECK(cache.evictAll() == Extents{{6, 2}, {8, 2}});
  CHECK(cache.contains(1));
  CHECK(cache.cachedBlocks() == 2);
  REQUIRE(cache.release(Ids{1}).isOk());
  CHECK(cache.evictAll() == Extents{{2, 2}});
}

TEST_CASE("insert refuses what cannot fit beside pinned chunks, evicting nothing", "[kv]") {
  PrefixCache cache(6);
  put(cache, 1);
  put(cache, 2);
  REQUIRE(cache.acquire(Ids{1}).isOk());
  Extents evicted;
  auto tooBig = cache.insert(9, {{100, 5}}, evicted);
  REQUIRE(tooBig.isOk());
  CHECK_FALSE(tooBig.value());
  CHECK(evicted.empty());
  CHECK(cache.contains(2));
  auto fits = cache.insert(9, {{100, 3}, {200, 1}}, evicted);
  REQUIRE(fits.isOk());
  CHECK(fits.value());
  CHECK(evicted == Extents{{4, 2}});
  CHECK(cache.cachedBlocks() == 6);
  auto again = cache.insert(9, {{300, 1}}, evicted);
  REQUIRE(again.isOk());
  CHECK_FALSE(again.value());  // already cached; the caller keeps block 300
  CHECK(cache.cachedBlocks() == 6);
}

TEST_CASE("capacity 0 disables caching", "[kv]") {
  PrefixCache cache(0);
  put(cache, 1, false);
  CHECK(cache.cachedChunks() == 0);
  CHECK(cache.matchPrefix(Ids{1}) == 0);
}

TEST_CASE("error cases change nothing", "[kv]") {
  PrefixCache cache(100);
  put(cache, 1);
  put(cache, 2);
  const auto missing = cache.acquire(Ids{1, 7});
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("7") != std::string::npos);
  CHECK(cache.pinnedChunks() == 0);

  CHECK(cache.release(Ids{7}).code() == StatusCode::kInvalidArgument);
  CHECK(cache.release(Ids{1}).code() == StatusCode::kInvalidArgument);  // not pinned
  REQUIRE(cache.acquire(Ids{1, 2}).isOk());
  CHECK(cache.release(Ids{2, 1, 1}).code() == StatusCode::kInvalidArgument);
  CHECK(cache.pinnedChunks() == 2);

  Extents evicted;
  CHECK(cache.insert(8, {}, evicted).status().code() == StatusCode::kInvalidArgument);
  CHECK(cache.insert(8, {{50, 0}}, evicted).status().code() == StatusCode::kInvalidArgument);
  CHECK(cache.insert(8, {{50, 3}, {52, 1}}, evicted).status().code() ==
        StatusCode::kInvalidArgument);
  const auto taken = cache.insert(8, {{50, 2}, {3, 1}}, evicted);  // block 3 belongs to 1
  CHECK(taken.status().code() == StatusCode::kInvalidArgument);
  CHECK(taken.status().message().find("block 3") != std::string::npos);
  CHECK(cache.insert(8, {{0, 3}}, evicted).status().code() == StatusCode::kInvalidArgument);
  CHECK_FALSE(cache.contains(8));
  CHECK(evicted.empty());
  CHECK(cache.cachedBlocks() == 4);
}

TEST_CASE("random use matches an LRU model and never hands a block out twice", "[kv]") {
  constexpr std::uint64_t kBlocks = 512;
  constexpr std::uint64_t kCapacity = 200;
  std::mt19937_64 rng(42);
  BlockAllocator alloc(kBlocks);
  PrefixCache cache(kCapacity);

  struct ModelChunk {
    Extents extents;
    std::uint64_t pins = 0;
  };
  std::map<std::uint64_t, ModelChunk> model;
  std::list<std::uint64_t> lru;  // unpinned, oldest first
  std::vector<Ids> live;         // acquired id lists not yet released

  auto modelEvict = [&](std::uint64_t wanted) {
    Extents out;
    std::uint64_t got = 0;
    while (got < wanted && !lru.empty()) {
      const ModelChunk& c = model.at(lru.front());
      out.insert(out.end(), c.extents.begin(), c.extents.end());
      got += totalBlocks(c.extents);
      model.erase(lru.front());
      lru.pop_front();
    }
    return out;
  };
  auto modelBlocks = [&](bool pinnedOnly) {
    std::uint64_t n = 0;
    for (const auto& [id, c] : model) n += (!pinnedOnly || c.pins > 0) ? totalBlocks(c.extents) : 0;
    return n;
  };

  for (int op = 0; op < 20000; ++op) {
    const auto kind = rng() % 10;
    if (kind < 4) {
      const std::uint64_t id = rng() % 120;
      const std::uint64_t want = 1 + rng() % 8;
      Extents blocks = alloc.allocate(want).value();
      Extents expected;
      bool expectInserted = false;
      if (!model.contains(id) && want <= kCapacity - modelBlocks(true)) {
        expectInserted = true;
        const std::uint64_t cached = modelBlocks(false);
        if (cached + want > kCapacity) expected = modelEvict(cached + want - kCapacity);
      }
      Extents evicted;
      auto inserted = cache.insert(id, blocks, evicted);
      REQUIRE(inserted.isOk());
      REQUIRE(inserted.value() == expectInserted);
      REQUIRE(evicted == expected);
      if (expectInserted) {
        model[id] = {blocks, 0};
        lru.push_back(id);
      } else {
        REQUIRE(alloc.free(blocks).isOk());
      }
      REQUIRE(alloc.free(evicted).isOk());  // fails on a block returned twice
    } else if (kind < 7) {
      Ids prompt;
      for (auto n = 1 + rng() % 4; n > 0; --n) prompt.push_back(rng() % 120);
      std::size_t expectMatch = 0;
      while (expectMatch < prompt.size() && model.contains(prompt[expectMatch])) ++expectMatch;
      REQUIRE(cache.matchPrefix(prompt) == expectMatch);
      prompt.resize(expectMatch);
      auto got = cache.acquire(prompt);
      REQUIRE(got.isOk());
      Extents expected;
      for (std::uint64_t id : prompt) {
        ModelChunk& c = model.at(id);
        if (c.pins++ == 0) lru.remove(id);
        expected.insert(expected.end(), c.extents.begin(), c.extents.end());
      }
      REQUIRE(got.value() == expected);
      live.push_back(prompt);
    } else if (kind < 9 && !live.empty()) {
      const std::size_t i = rng() % live.size();
      REQUIRE(cache.release(live[i]).isOk());
      for (std::uint64_t id : live[i]) {
        if (--model.at(id).pins == 0) lru.push_back(id);
      }
      live[i] = std::move(live.back());
      live.pop_back();
    } else {
      const std::uint64_t wanted = rng() % 16;
      const Extents evicted = cache.evict(wanted);
      REQUIRE(evicted == modelEvict(wanted));
      REQUIRE(alloc.free(evicted).isOk());
    }
    REQUIRE(cache.cachedChunks() == model.size());
    REQUIRE(cache.cachedBlocks() == modelBlocks(false));
    REQUIRE(cache.pinnedBlocks() == modelBlocks(true));
    REQUIRE(cache.cachedBlocks() <= kCapacity);
    // Every block is either cached or free in the allocator, never both.
    REQUIRE(alloc.freeBlocks() + cache.cachedBlocks() == kBlocks);
  }
  for (const Ids& ids : live) REQUIRE(cache.release(ids).isOk());
  REQUIRE(alloc.free(cache.evictAll()).isOk());
  CHECK(cache.cachedChunks() == 0);
  CHECK(alloc.stats().freeExtents == 1);
  CHECK(alloc.freeBlocks() == kBlocks);
}

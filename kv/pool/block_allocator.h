#pragma once

// BlockAllocator: hands out the blocks [0, N) of one KV-cache pool as extents and takes them
// back. Free space is kept as maximal free extents (neighbours are always merged), indexed
// by start and by size, so every operation costs O(log n) per extent touched.
//
// Placement keeps transfers coalescible and fragmentation low under churn:
//   - a request that fits in one free extent takes the best fit (the smallest free extent
//     that holds it; ties go to the lowest address) and is carved from its start;
//   - otherwise it gathers the largest free extents first (fewest pieces), carving the last
//     piece from the start of its extent.
//
// Not thread-safe: one owning thread (the agent's strand for the pool) makes every call.

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "kv/pool/block_extent.h"
#include "kvx/result.h"

namespace kvx::kv {

struct AllocatorStats {
  std::uint64_t freeBlocks = 0;
  std::uint64_t freeExtents = 0;
  std::uint64_t largestFreeExtent = 0;
  // 1 - largestFreeExtent / freeBlocks; 0 when nothing is free.
  double fragmentation = 0.0;
  // Successful allocate() calls, the extents they handed out, and how many of them were
  // satisfied by a single extent. allocatedExtents / allocations is the mean pieces per
  // request (1.0 is perfectly contiguous).
  std::uint64_t allocations = 0;
  std::uint64_t allocatedExtents = 0;
  std::uint64_t contiguousAllocations = 0;
};

class BlockAllocator {
 public:
  // All `blocks` blocks start free. Zero blocks is allowed; every allocate() then fails.
  explicit BlockAllocator(std::uint64_t blocks);

  BlockAllocator(const BlockAllocator&) = delete;
  BlockAllocator& operator=(const BlockAllocator&) = delete;
  BlockAllocator(BlockAllocator&&) = default;
  BlockAllocator& operator=(BlockAllocator&&) = default;

  // `count` blocks as extents sorted by ascending first block; the caller uses its blocks in
  // that order. INVALID_ARGUMENT for count 0; RESOURCE_EXHAUSTED (nothing allocated) when
  // fewer than `count` blocks are free.
  Result<std::vector<BlockExtent>> allocate(std::uint64_t count);

  // Returns blocks to the free space, merging with free neighbours. All-or-nothing:
  // INVALID_ARGUMENT, naming the block, when an extent is empty or out of range, overlaps
  // another extent of the same call, or holds a block that is already free.
  // The extents need not match the ones allocate() returned (a partial free is fine).
  Status free(std::span<const BlockExtent> extents);

  // Marks specific free blocks allocated, for a caller that chooses its own blocks.
  // All-or-nothing: INVALID_ARGUMENT as for free(); FAILED_PRECONDITION, naming the block,
  // when a block is not free. Does not count in stats().allocations.
  Status reserve(std::span<const BlockExtent> extents);

  std::uint64_t totalBlocks() const { return totalBlocks_; }
  std::uint64_t freeBlocks() const { return freeBlocks_; }
  // False for a block out of range.
  bool isFree(std::uint64_t block) const;
  AllocatorStats stats() const;

 private:
  using FreeMap = std::map<std::uint64_t, std::uint64_t>;  // start -> count

  // `extents` sorted by first block with adjacent ones merged; INVALID_ARGUMENT for an
  // empty, out-of-range or mutually overlapping extent.
  Result<std::vector<BlockExtent>> mergedRuns(std::span<const BlockExtent> extents,
                                              const char* op) const;
  // The first free block in `e`, or end() when none is free.
  std::uint64_t firstFreeIn(const BlockExtent& e) const;
  // The free extent containing all of `e`, or free_.end().
  FreeMap::const_iterator freeExtentHolding(const BlockExtent& e) const;

  void addFree(std::uint64_t first, std::uint64_t count);
  void eraseFree(FreeMap::const_iterator it);
  // Removes `e` from the free extent `it`, which must contain it.
  void carve(FreeMap::const_iterator it, const BlockExtent& e);

  std::uint64_t totalBlocks_;
  std::uint64_t freeBlocks_ = 0;
  FreeMap free_;
  std::set<std::pair<std::uint64_t, std::uint64_t>> bySize_;  // (count, start)
  std::uint64_t allocations_ = 0;
  std::uint64_t allocatedExtents_ = 0;
  std::uint64_t contiguousAllocations_ = 0;
};

}  // namespace kvx::kv

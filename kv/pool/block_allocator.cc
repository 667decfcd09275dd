#include "kv/pool/block_allocator.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace kvx::kv {
namespace {

std::string describe(const BlockExtent& e) {
  return "[" + std::to_string(e.first) + ", " + std::to_string(e.end()) + ")";
}

}  // namespace

BlockAllocator::BlockAllocator(std::uint64_t blocks) : totalBlocks_(blocks) {
  if (blocks > 0) addFree(0, blocks);
}

Result<std::vector<BlockExtent>> BlockAllocator::allocate(std::uint64_t count) {
  if (count == 0) return invalidArgument("cannot allocate 0 blocks");
  if (count > freeBlocks_) {
    return resourceExhausted("cannot allocate " + std::to_string(count) + " blocks: only " +
                             std::to_string(freeBlocks_) + " of " + std::to_string(totalBlocks_) +
                             " are free; free or evict blocks first");
  }
  std::vector<BlockExtent> out;
  auto fit = bySize_.lower_bound({count, 0});
  if (fit != bySize_.end()) {
    const BlockExtent e{fit->second, count};
    carve(free_.find(fit->second), e);
    out.push_back(e);
  } else {
    // No single hole is big enough, so the largest ones together need the fewest pieces;
    // among equally large holes the lowest address goes first.
    std::uint64_t remaining = count;
    while (remaining > 0) {
      const std::uint64_t largest = std::prev(bySize_.end())->first;
      const std::uint64_t start = bySize_.lower_bound({largest, 0})->second;
      const BlockExtent e{start, std::min(largest, remaining)};
      carve(free_.find(start), e);
      out.push_back(e);
      remaining -= e.count;
    }
    std::sort(out.begin(), out.end(),
              [](const BlockExtent& a, const BlockExtent& b) { return a.first < b.first; });
  }
  ++allocations_;
  allocatedExtents_ += out.size();
  if (out.size() == 1) ++contiguousAllocations_;
  return out;
}

Status BlockAllocator::free(std::span<const BlockExtent> extents) {
  KVX_ASSIGN_OR_RETURN(std::vector<BlockExtent> runs, mergedRuns(extents, "free"));
  for (const BlockExtent& e : runs) {
    const std::uint64_t block = firstFreeIn(e);
    if (block != e.end()) {
      return invalidArgument("cannot free extent " + describe(e) + ": block " +
                             std::to_string(block) + " is already free (double free)");
    }
  }
  for (const BlockExtent& e : runs) addFree(e.first, e.count);
  return Status::ok();
}

Status BlockAllocator::reserve(std::span<const BlockExtent> extents) {
  KVX_ASSIGN_OR_RETURN(std::vector<BlockExtent> runs, mergedRuns(extents, "reserve"));
  for (const BlockExtent& e : runs) {
    if (freeExtentHolding(e) != free_.end()) continue;
    // Free extents are maximal, so a fully free range lies inside one; find the culprit.
    std::uint64_t block = e.first;
    while (isFree(block)) ++block;
    return failedPrecondition("cannot reserve extent " + describe(e) + ": block " +
                              std::to_string(block) + " is not free");
  }
  // The runs are disjoint, so carving one leaves the others inside the remaining pieces.
  for (const BlockExtent& e : runs) carve(freeExtentHolding(e), e);
  return Status::ok();
}

bool BlockAllocator::isFree(std::uint64_t block) const {
  return block < totalBlocks_ && freeExtentHolding({block, 1}) != free_.end();
}

AllocatorStats BlockAllocator::stats() const {
  AllocatorStats s;
  s.freeBlocks = freeBlocks_;
  s.freeExtents = free_.size();
  s.largestFreeExtent = bySize_.empty() ? 0 : std::prev(bySize_.end())->first;
  if (freeBlocks_ > 0) {
    s.fragmentation =
        1.0 - static_cast<double>(s.largestFreeExtent) / static_cast<double>(freeBlocks_);
  }
  s.allocations = allocations_;
  s.allocatedExtents = allocatedExtents_;
  s.contiguousAllocations = contiguousAllocations_;
  return s;
}

Result<std::vector<BlockExtent>> BlockAllocator::mergedRuns(std::span<const BlockExtent> extents,
                                                            const char* op) const {
  for (const BlockExtent& e : extents) {
    if (e.count == 0) {
      return invalidArgument(std::string("cannot ") + op + " an empty extent at block " +
                             std::to_string(e.first));
    }
    if (e.first >= totalBlocks_ || e.count > totalBlocks_ - e.first) {
      const std::uint64_t bad = std::max(e.first, totalBlocks_);
      return invalidArgument(std::string("cannot ") + op + " extent " + describe(e) + ": block " +
                             std::to_string(bad) + " is out of range [0, " +
                             std::to_string(totalBlocks_) + ")");
    }
  }
  std::vector<BlockExtent> sorted(extents.begin(), extents.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const BlockExtent& a, const BlockExtent& b) { return a.first < b.first; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].first < sorted[i - 1].end()) {
      return invalidArgument(std::string("cannot ") + op + " extents " + describe(sorted[i - 1]) +
                             " and " + describe(sorted[i]) + " in one call: block " +
                             std::to_string(sorted[i].first) + " appears in both");
    }
  }
  // Blocks of a request often come back one by one in shuffled order: merged, a run of them
  // costs one tree update instead of one per block.
  std::vector<BlockExtent> runs;
  runs.reserve(sorted.size());
  for (const BlockExtent& e : sorted) {
    if (!runs.empty() && runs.back().end() == e.first) {
      runs.back().count += e.count;
    } else {
      runs.push_back(e);
    }
  }
  return runs;
}

std::uint64_t BlockAllocator::firstFreeIn(const BlockExtent& e) const {
  auto next = free_.upper_bound(e.first);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > e.first) return e.first;
  }
  if (next != free_.end() && next->first < e.end()) return next->first;
  return e.end();
}

BlockAllocator::FreeMap::const_iterator BlockAllocator::freeExtentHolding(
    const BlockExtent& e) const {
  auto next = free_.upper_bound(e.first);
  if (next == free_.begin()) return free_.end();
  auto prev = std::prev(next);
  return prev->first + prev->second >= e.end() ? prev : free_.end();
}

void BlockAllocator::addFree(std::uint64_t first, std::uint64_t count) {
  freeBlocks_ += count;
  auto next = free_.lower_bound(first);
  if (next != free_.end() && next->first == first + count) {
    count += next->second;
    next = std::next(next);
    eraseFree(std::prev(next));
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == first) {
      first = prev->first;
      count += prev->second;
      eraseFree(prev);
    }
  }
  free_.emplace(first, count);
  bySize_.emplace(count, first);
}

void BlockAllocator::eraseFree(FreeMap::const_iterator it) {
  bySize_.erase({it->second, it->first});
  free_.erase(it);
}

void BlockAllocator::carve(FreeMap::const_iterator it, const BlockExtent& e) {
  const BlockExtent hole{it->first, it->second};
  eraseFree(it);
  if (e.first > hole.first) {
    free_.emplace(hole.first, e.first - hole.first);
    bySize_.emplace(e.first - hole.first, hole.first);
  }
  if (hole.end() > e.end()) {
    free_.emplace(e.end(), hole.end() - e.end());
    bySize_.emplace(hole.end() - e.end(), e.end());
  }
  freeBlocks_ -= e.count;
}

}  // namespace kvx::kv

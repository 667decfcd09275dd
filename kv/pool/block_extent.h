#pragma once

// BlockExtent: a run of consecutive KV-cache block indices [first, first + count). Lists of
// extents are how block allocations travel between the allocator, the prefix cache and the
// transfer planner: one extent is one coalescible transfer per segment. Plain value type.

#include <cstdint>
#include <span>
#include <vector>

namespace kvx::kv {

struct BlockExtent {
  std::uint64_t first = 0;
  std::uint64_t count = 0;

  // One past the last block.
  std::uint64_t end() const { return first + count; }

  friend bool operator==(const BlockExtent&, const BlockExtent&) = default;
};

// The sum of the extents' counts.
std::uint64_t totalBlocks(std::span<const BlockExtent> extents);

// The block indices of `extents`, in order; zero-count extents contribute nothing.
std::vector<std::uint64_t> expandExtents(std::span<const BlockExtent> extents);

// The shortest extent list whose expansion is `blocks`: consecutive ascending runs
// (b, b+1, b+2, ...) in the given order become one extent; nothing is sorted.
std::vector<BlockExtent> compressBlocks(std::span<const std::uint64_t> blocks);

}  // namespace kvx::kv

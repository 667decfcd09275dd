#include "kv/pool/block_extent.h"

namespace kvx::kv {

std::uint64_t totalBlocks(std::span<const BlockExtent> extents) {
  std::uint64_t total = 0;
  for (const BlockExtent& e : extents) total += e.count;
  return total;
}

std::vector<std::uint64_t> expandExtents(std::span<const BlockExtent> extents) {
  std::vector<std::uint64_t> blocks;
  blocks.reserve(totalBlocks(extents));
  for (const BlockExtent& e : extents) {
    for (std::uint64_t b = e.first; b != e.end(); ++b) blocks.push_back(b);
  }
  return blocks;
}

std::vector<BlockExtent> compressBlocks(std::span<const std::uint64_t> blocks) {
  std::vector<BlockExtent> extents;
  for (std::uint64_t b : blocks) {
    // No run ends at block 0 except one that wrapped past UINT64_MAX.
    if (!extents.empty() && b != 0 && extents.back().end() == b) {
      ++extents.back().count;
    } else {
      extents.push_back({b, 1});
    }
  }
  return extents;
}

}  // namespace kvx::kv

#pragma once

// SegmentOrder: numbers every (block, layer, K or V) segment of a pool, in the pool's
// memory order, so that one prepared descriptor list per pool covers every segment and a
// transfer of some blocks is a list of indices. Walking blocks in memory order keeps
// adjacent segments adjacent in the index list, which lets the engine coalesce them.
//   per-layer NHD / HND:  index = ((layer * kv + k) * blocks + block)
//   blocks-first:         index = ((layer * blocks + block) * kv + k)
//   cross-layer:          index = ((block * layers + layer) * kv + k)
// Stateless after construction, thread-safe.

#include <cstdint>
#include <span>
#include <vector>

#include "kv/pool/pool_layout.h"

namespace kvx::kv {

class SegmentOrder {
 public:
  SegmentOrder(KvLayout layout, std::uint64_t blocks, std::uint32_t layers, std::uint32_t kvCount)
      : layout_(layout), blocks_(blocks), layers_(layers), kvCount_(kvCount) {}

  std::uint64_t size() const { return blocks_ * layers_ * kvCount_; }
  std::uint32_t index(std::uint64_t block, std::uint32_t layer, std::uint32_t kv) const;

  // Appends, for layers [firstLayer, firstLayer + layerCount) and every K/V, the pairs
  // (local segment of localBlocks[i], remote segment of remoteBlocks[i]), walking in the
  // local pool's memory order. REQUIRES: equal spans, indices within both pools.
  void appendPairs(const SegmentOrder& remote, std::span<const std::uint64_t> localBlocks,
                   std::span<const std::uint64_t> remoteBlocks, std::uint32_t firstLayer,
                   std::uint32_t layerCount, std::vector<std::uint32_t>& localOut,
                   std::vector<std::uint32_t>& remoteOut) const;

 private:
  KvLayout layout_;
  std::uint64_t blocks_;
  std::uint32_t layers_;
  std::uint32_t kvCount_;
};

}  // namespace kvx::kv
